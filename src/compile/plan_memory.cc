#include "compile/plan_memory.h"

#include <algorithm>
#include <string>

#include "compile/memory_planner.h"
#include "lumen/memory_budget.h"

namespace lumen {
namespace {

// A concat whose inputs each fill one contiguous range of its output (nothing but size-1 dims
// before the axis: batch 1 along channels) gets its inputs written there directly: they become
// parts of its buffer, and the concat step has nothing left to do. All inputs or none: each must
// be an intermediate of its own (no view, no in-place write, not a part already), used once here.
void place_concat_inputs(const ExecutionStep &step, const std::vector<ValueInfo> &slot_info,
                         const std::vector<int> &buffer_of,
                         std::vector<BufferLifetime> &lifetimes) {
  if (step.schema->name != "concat" || step.outputs.size() != 1) return;
  const int whole = buffer_of[step.outputs[0]];
  if (whole < 0) return;
  const Shape &shape = slot_info[step.outputs[0]].shape;
  const int64_t rank = static_cast<int64_t>(shape.rank());
  int64_t axis = step.attrs.get_int("axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return;
  for (int64_t d = 0; d < axis; ++d)
    if (shape[d] != 1) return;
  std::vector<int> parts;
  for (int in : step.inputs) {
    const int b = in >= 0 ? buffer_of[in] : -1;
    if (b < 0 || std::find(parts.begin(), parts.end(), b) != parts.end()) return;
    const BufferLifetime &life = lifetimes[b];
    if (life.view_of >= 0 || life.in_place_of >= 0 || life.part_of >= 0 ||
        life.memory_space != lifetimes[whole].memory_space ||
        slot_info[in].dtype != slot_info[step.outputs[0]].dtype)
      return;
    for (const BufferLifetime &other : lifetimes)  // nothing overwrites or views it
      if (other.view_of == b || other.in_place_of == b) return;
    parts.push_back(b);
  }
  // Every part must start on an aligned offset, like any buffer of the arena.
  for (size_t i = 0; i + 1 < parts.size(); ++i)
    if (lifetimes[parts[i]].bytes % MemoryPlan::kAlignment != 0) return;
  size_t offset = 0;
  for (int b : parts) {
    lifetimes[b].part_of = whole;
    lifetimes[b].part_offset = offset;
    offset += lifetimes[b].bytes;
  }
}

// Where a step's outputs live: its backend's memory; builtin steps' are host tensors.
Allocator &allocator_of(const ExecutionStep &step) {
  return step.backend ? step.backend->allocator() : host_allocator();
}

}  // namespace

void plan_memory(Executable::Impl &impl, const std::vector<int> &last_use,
                 const std::vector<bool> &slot_static) {
  const size_t num_slots = impl.slot_info.size();
  std::vector<bool> is_output(num_slots, false);
  for (int s : impl.output_slots) is_output[s] = true;

  for (const ExecutionStep &step : impl.steps)
    for (int out : step.outputs)
      if (!slot_static[out]) return;  // shapes known only at run time: no plan
  std::vector<int> buffer_of(num_slots, -1);
  std::vector<int> slot_of_buffer;
  std::vector<BufferLifetime> lifetimes;
  std::vector<std::string> spaces;
  std::vector<Allocator *> space_allocators;
  for (size_t s = 0; s < impl.steps.size(); ++s) {
    const ExecutionStep &step = impl.steps[s];
    for (size_t o = 0; o < step.outputs.size(); ++o) {
      const int out = step.outputs[o];
      const ValueInfo &info = impl.slot_info[out];
      // Objects (strings, containers) are made per run, like graph outputs; outputs not computed
      // take no memory.
      if (is_output[out] || impl.initial_slots[out].defined() || holds_objects(info.dtype) ||
          step.output_unused(o))
        continue;
      const std::string space = allocator_of(step).device().to_string();
      auto it = std::find(spaces.begin(), spaces.end(), space);
      if (it == spaces.end()) {
        it = spaces.insert(spaces.end(), space);
        space_allocators.push_back(&allocator_of(step));
      }
      BufferLifetime life{.first_step = static_cast<int64_t>(s),
                          .last_step = std::max<int64_t>(static_cast<int64_t>(s), last_use[out]),
                          .bytes = static_cast<size_t>(checked_mul(
                              info.shape.numel(), static_cast<int64_t>(dtype_size(info.dtype)),
                              "intermediate size")),
                          .memory_space = static_cast<int>(it - spaces.begin())};
      const int in = step.inputs.empty() ? -1 : step.inputs[0];
      const bool input_in_arena = in >= 0 && buffer_of[in] >= 0;
      const bool same_bytes = input_in_arena && lifetimes[buffer_of[in]].bytes == life.bytes &&
                              lifetimes[buffer_of[in]].memory_space == life.memory_space;
      // A reshape-like step's output is a view of its input's memory.
      if (step.schema->view && out == step.outputs[0] && same_bytes) life.view_of = buffer_of[in];
      // An element-wise step may write over its input 0 when this is that input's last use.
      if (step.schema->elementwise && out == step.outputs[0] && input_in_arena &&
          lifetimes[buffer_of[in]].memory_space == life.memory_space &&
          last_use[in] == static_cast<int>(s) && impl.slot_info[in].dtype == info.dtype &&
          impl.slot_info[in].shape == info.shape)
        life.in_place_of = buffer_of[in];
      buffer_of[out] = static_cast<int>(lifetimes.size());
      slot_of_buffer.push_back(out);
      lifetimes.push_back(life);
    }
    place_concat_inputs(step, impl.slot_info, buffer_of, lifetimes);
  }
  for (ExecutionStep &step : impl.steps)
    for (int out : step.outputs)
      step.output_types.push_back({impl.slot_info[out].dtype, impl.slot_info[out].shape});
  const MemoryPlan plan = ::lumen::plan_memory(lifetimes);
  impl.planned = true;
  impl.slot_offset.assign(num_slots, -1);
  impl.slot_arena.assign(num_slots, -1);
  for (size_t b = 0; b < lifetimes.size(); ++b) {
    impl.slot_offset[slot_of_buffer[b]] = static_cast<int64_t>(plan.offsets[b]);
    impl.slot_arena[slot_of_buffer[b]] = lifetimes[b].memory_space;
  }
  // A view whose output landed on its input's bytes has nothing left to do at run time, nor has
  // a concat whose inputs are all parts of its output.
  for (ExecutionStep &step : impl.steps) {
    const int in = step.inputs.empty() ? -1 : step.inputs[0];
    step.skip = step.schema->view && in >= 0 && impl.slot_offset[in] >= 0 &&
                impl.slot_offset[in] == impl.slot_offset[step.outputs[0]] &&
                impl.slot_arena[in] == impl.slot_arena[step.outputs[0]];
    if (step.schema->name == "concat" && !step.outputs.empty() && buffer_of[step.outputs[0]] >= 0) {
      const int whole = buffer_of[step.outputs[0]];
      step.skip = !step.inputs.empty();
      for (int s : step.inputs)
        step.skip =
            step.skip && s >= 0 && buffer_of[s] >= 0 && lifetimes[buffer_of[s]].part_of == whole;
    }
  }
  int64_t total = 0;
  for (size_t sp = 0; sp < plan.spaces.size(); ++sp) {
    impl.arenas.push_back({space_allocators[sp], plan.spaces[sp].planned_bytes});
    total = checked_add(total, static_cast<int64_t>(plan.spaces[sp].planned_bytes), "arena bytes");
  }
  // Each run takes arenas of those sizes: refused here, before any run allocates one.
  check_memory_budget(static_cast<size_t>(total),
                      "the memory plan's arenas (the intermediates of a run)");
  impl.memory.planned = true;
  for (size_t sp = 0; sp < plan.spaces.size(); ++sp) {
    MemorySpaceReport report{.space = spaces[sp],
                             .naive_bytes = plan.spaces[sp].naive_bytes,
                             .planned_bytes = plan.spaces[sp].planned_bytes,
                             .lower_bound_bytes = plan.spaces[sp].lower_bound_bytes};
    for (const BufferLifetime &life : lifetimes)
      if (life.memory_space == static_cast<int>(sp)) ++report.num_values;
    report.in_place = plan.in_place;
    report.views = plan.views;
    report.concat_parts = plan.parts;
    impl.memory.spaces.push_back(report);
  }
}

}  // namespace lumen
