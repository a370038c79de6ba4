// libFuzzer target: random buffer lifetimes (with in-place, view and part relations, valid or
// not) -> plan_memory -> either lumen::Error or a plan in which no two live, unrelated buffers of
// a space overlap, every block lies inside its arena, and each arena is between the lower bound
// and the naive size.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "compile/memory_planner.h"
#include "lumen/error.h"

namespace {

// A broken property: abort, and libFuzzer saves the input.
[[noreturn]] void finding(const char *what) {
  std::fprintf(stderr, "memory plan: %s\n", what);
  std::abort();
}

size_t rounded(size_t bytes) {
  const size_t a = lumen::MemoryPlan::kAlignment;
  return (bytes + a - 1) / a * a;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FuzzedDataProvider in(data, size);
  const int count = in.ConsumeIntegralInRange<int>(0, 64);
  std::vector<lumen::BufferLifetime> buffers(static_cast<size_t>(count));
  std::vector<bool> related(static_cast<size_t>(count), false);
  for (int i = 0; i < count; ++i) {
    lumen::BufferLifetime &b = buffers[static_cast<size_t>(i)];
    b.first_step = in.ConsumeIntegralInRange<int64_t>(-1, 100);
    b.last_step = b.first_step + in.ConsumeIntegralInRange<int64_t>(-1, 60);
    b.bytes = in.ConsumeIntegralInRange<size_t>(0, size_t{1} << 20);
    b.memory_space = in.ConsumeIntegralInRange<int>(0, 2);
    // Relations, to earlier buffers mostly (any index, out of range included, now and then).
    const auto other = [&] { return in.ConsumeIntegralInRange<int>(-2, count); };
    switch (in.ConsumeIntegralInRange<int>(0, 5)) {
      case 0:
        b.in_place_of = other();
        break;
      case 1:
        b.view_of = other();
        break;
      case 2:
        b.part_of = other();
        b.part_offset = in.ConsumeIntegralInRange<size_t>(0, size_t{1} << 20);
        break;
      default:
        break;
    }
    for (int r : {b.in_place_of, b.view_of, b.part_of})
      if (r >= 0) {
        related[static_cast<size_t>(i)] = true;
        if (r < count) related[static_cast<size_t>(r)] = true;
      }
  }
  lumen::MemoryPlan plan;
  try {
    plan = lumen::plan_memory(buffers);
  } catch (const lumen::Error &) {
    return 0;  // invalid lifetimes or relations, named
  }
  if (plan.offsets.size() != buffers.size()) finding("one offset per buffer");
  for (size_t i = 0; i < buffers.size(); ++i) {
    const lumen::BufferLifetime &b = buffers[i];
    if (static_cast<size_t>(b.memory_space) >= plan.spaces.size()) finding("space planned");
    const lumen::MemorySpacePlan &space = plan.spaces[static_cast<size_t>(b.memory_space)];
    // A part lies at its byte offset inside another buffer's block; the rest are aligned.
    if (b.part_of < 0 && plan.offsets[i] % lumen::MemoryPlan::kAlignment != 0)
      finding("aligned offset");
    if (plan.offsets[i] + b.bytes > space.planned_bytes) finding("block inside its arena");
  }
  bool any_related = false;
  for (bool r : related) any_related |= r;
  for (const lumen::MemorySpacePlan &space : plan.spaces) {
    if (space.planned_bytes < space.lower_bound_bytes) finding("lower bound <= arena");
    if (!any_related && space.planned_bytes > space.naive_bytes) finding("arena <= naive");
  }
  for (size_t i = 0; i < buffers.size(); ++i)
    for (size_t j = i + 1; j < buffers.size(); ++j) {
      const lumen::BufferLifetime &a = buffers[i], &b = buffers[j];
      if (related[i] || related[j] || a.memory_space != b.memory_space || a.bytes == 0 ||
          b.bytes == 0)
        continue;
      const bool live_together = a.first_step <= b.last_step && b.first_step <= a.last_step;
      const bool overlap = plan.offsets[i] < plan.offsets[j] + rounded(b.bytes) &&
                           plan.offsets[j] < plan.offsets[i] + rounded(a.bytes);
      if (live_together && overlap) finding("two live buffers share bytes");
    }
  return 0;
}
