#include "compile/memory_planner.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <numeric>

#include "lumen/error.h"

namespace lumen {
namespace {

size_t add_bytes(size_t a, size_t b, const char *what) {
  if (a > SIZE_MAX - b) fail("memory plan: ", what, " overflows");
  return a + b;
}

size_t align_up(size_t bytes) {
  const size_t a = MemoryPlan::kAlignment;
  return add_bytes(bytes, a - 1, "buffer size") / a * a;
}

// A block in the arena: one buffer, or a chain of buffers written in place over each other.
struct Block {
  int64_t first = 0, last = 0;
  size_t bytes = 0;
  int space = 0;
};

bool overlap(const Block &a, const Block &b) {
  return a.first <= b.last && b.first <= a.last;
}

// Places blocks in `order`; returns their offsets and the arena size of each space.
std::vector<size_t> place(const std::vector<Block> &blocks, const std::vector<size_t> &order,
                          std::vector<size_t> &arena) {
  std::vector<size_t> offset(blocks.size(), 0);
  std::vector<size_t> placed;
  std::vector<std::pair<size_t, size_t>> busy;  // [begin, end) of overlapping placed blocks
  for (size_t b : order) {
    const Block &block = blocks[b];
    busy.clear();
    for (size_t p : placed)
      if (blocks[p].space == block.space && overlap(blocks[p], block))
        busy.emplace_back(offset[p], offset[p] + blocks[p].bytes);
    std::sort(busy.begin(), busy.end());
    // Best fit: the smallest gap that holds the block; else after the last busy range.
    size_t best = SIZE_MAX, best_gap = SIZE_MAX, cursor = 0;
    for (const auto &[begin, end] : busy) {
      if (begin >= cursor && begin - cursor >= block.bytes && begin - cursor < best_gap) {
        best = cursor;
        best_gap = begin - cursor;
      }
      cursor = std::max(cursor, end);
    }
    offset[b] = best != SIZE_MAX ? best : cursor;
    arena[block.space] =
        std::max(arena[block.space], add_bytes(offset[b], block.bytes, "arena size"));
    placed.push_back(b);
  }
  return offset;
}

}  // namespace

MemoryPlan plan_memory(const std::vector<BufferLifetime> &buffers) {
  const size_t n = buffers.size();
  int num_spaces = 0;
  for (size_t i = 0; i < n; ++i) {
    const BufferLifetime &b = buffers[i];
    if (b.first_step < 0 || b.last_step < b.first_step || b.memory_space < 0)
      fail("memory plan: buffer ", i, " has an invalid lifetime [", b.first_step, ", ", b.last_step,
           "] in space ", b.memory_space);
    if (b.in_place_of >= static_cast<int>(n) || b.view_of >= static_cast<int>(n) ||
        b.part_of >= static_cast<int>(n))
      fail("memory plan: buffer ", i, " names a buffer out of ", n);
    num_spaces = std::max(num_spaces, b.memory_space + 1);
  }
  MemoryPlan plan;
  plan.spaces.resize(static_cast<size_t>(num_spaces));

  // Parts: each resolves to its outermost buffer (the root) and its offset there; a root's
  // lifetime grows to cover its parts'.
  std::vector<int> root(n);
  std::vector<size_t> root_offset(n, 0);
  std::vector<bool> has_parts(n, false);
  std::vector<int64_t> first(n), last(n);
  for (size_t i = 0; i < n; ++i) {
    first[i] = buffers[i].first_step;
    last[i] = buffers[i].last_step;
  }
  for (size_t i = 0; i < n; ++i) {
    int r = static_cast<int>(i);
    size_t offset = 0;
    for (size_t hops = 0; buffers[r].part_of >= 0; ++hops) {
      const BufferLifetime &part = buffers[r];
      const BufferLifetime &whole = buffers[part.part_of];
      if (hops == n || part.memory_space != whole.memory_space || part.part_offset > whole.bytes ||
          part.bytes > whole.bytes - part.part_offset)
        fail("memory plan: buffer ", r, " is not a part of buffer ", part.part_of);
      offset += part.part_offset;
      r = part.part_of;
    }
    root[i] = r;
    root_offset[i] = offset;
    if (r != static_cast<int>(i)) {
      has_parts[r] = true;
      first[r] = std::min(first[r], buffers[i].first_step);
      last[r] = std::max(last[r], buffers[i].last_step);
    }
  }
  // Links to or from buffers with parts are dropped: their bytes are not theirs alone.
  auto linkable = [&](int b) { return b >= 0 && buffers[b].part_of < 0 && !has_parts[b]; };

  // In-place chains: a buffer joins the block of the buffer it overwrites.
  std::vector<int> block_of(n, -1);
  std::vector<bool> taken_over(n, false);
  std::vector<Block> blocks;
  std::vector<size_t> index(n);
  std::iota(index.begin(), index.end(), 0);
  // Writers come before their in-place successors when sorted by first step.
  std::stable_sort(index.begin(), index.end(), [&](size_t a, size_t b) {
    return buffers[a].first_step < buffers[b].first_step;
  });
  for (size_t i : index) {
    const BufferLifetime &b = buffers[i];
    const size_t bytes = align_up(b.bytes);
    plan.spaces[b.memory_space].naive_bytes =
        add_bytes(plan.spaces[b.memory_space].naive_bytes, bytes, "naive bytes");
    if (b.part_of >= 0) {
      ++plan.parts;
      continue;  // placed with its root below
    }
    const bool own = linkable(static_cast<int>(i));
    const int base = own && linkable(b.view_of) ? b.view_of : -1;
    if (base >= 0 && block_of[base] >= 0 && buffers[base].memory_space == b.memory_space &&
        align_up(buffers[base].bytes) >= bytes) {
      block_of[i] = block_of[base];
      blocks[block_of[i]].last = std::max(blocks[block_of[i]].last, b.last_step);
      ++plan.views;
      continue;
    }
    const int src = own && linkable(b.in_place_of) ? b.in_place_of : -1;
    if (src >= 0 && !taken_over[src] && block_of[src] >= 0 &&
        buffers[src].last_step == b.first_step && buffers[src].memory_space == b.memory_space &&
        align_up(buffers[src].bytes) >= bytes && blocks[block_of[src]].last == b.first_step) {
      taken_over[src] = true;
      block_of[i] = block_of[src];
      blocks[block_of[i]].last = b.last_step;
      ++plan.in_place;
      continue;
    }
    block_of[i] = static_cast<int>(blocks.size());
    blocks.push_back({first[i], last[i], bytes, b.memory_space});
  }
  for (size_t i = 0; i < n; ++i)
    if (buffers[i].part_of >= 0) block_of[i] = block_of[root[i]];

  // Lower bound: the most bytes alive at any step, per space.
  std::vector<std::pair<int64_t, int64_t>> events;  // (step, +bytes at first / -bytes after last)
  for (int s = 0; s < num_spaces; ++s) {
    events.clear();
    for (const Block &b : blocks)
      if (b.space == s) {
        events.emplace_back(b.first, static_cast<int64_t>(b.bytes));
        events.emplace_back(b.last + 1, -static_cast<int64_t>(b.bytes));
      }
    std::sort(events.begin(), events.end());  // frees (negative) before allocations at a step
    int64_t live = 0, peak = 0;
    for (const auto &[step, delta] : events) peak = std::max(peak, live += delta);
    plan.spaces[s].lower_bound_bytes = static_cast<size_t>(peak);
  }

  // Greedy placement depends on the order; a few cheap orders, and per space the best wins.
  auto length = [&](size_t b) { return blocks[b].last - blocks[b].first + 1; };
  const std::vector<std::function<bool(size_t, size_t)>> orders = {
      [&](size_t a, size_t b) { return blocks[a].bytes > blocks[b].bytes; },
      [&](size_t a, size_t b) { return blocks[a].first < blocks[b].first; },
      [&](size_t a, size_t b) { return length(a) > length(b); },
      [&](size_t a, size_t b) {
        return static_cast<double>(blocks[a].bytes) * length(a) >
               static_cast<double>(blocks[b].bytes) * length(b);
      }};
  std::vector<size_t> best_arena(num_spaces, SIZE_MAX), block_offset(blocks.size(), 0);
  for (const auto &less : orders) {
    std::vector<size_t> order(blocks.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), less);
    std::vector<size_t> arena(num_spaces, 0);
    const std::vector<size_t> offsets = place(blocks, order, arena);
    for (int s = 0; s < num_spaces; ++s) {
      if (arena[s] >= best_arena[s]) continue;
      best_arena[s] = arena[s];
      for (size_t b = 0; b < blocks.size(); ++b)
        if (blocks[b].space == s) block_offset[b] = offsets[b];
    }
  }
  for (int s = 0; s < num_spaces; ++s) plan.spaces[s].planned_bytes = best_arena[s];
  plan.offsets.resize(n);
  for (size_t i = 0; i < n; ++i) plan.offsets[i] = block_offset[block_of[i]] + root_offset[i];
  return plan;
}

}  // namespace lumen
