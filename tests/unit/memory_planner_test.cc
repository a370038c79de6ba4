// The memory planner alone: lifetimes in, offsets out. The property test checks on random
// lifetimes that no two buffers alive at the same step overlap in memory, and that
// lower bound <= planned <= naive.
#include <gtest/gtest.h>

#include <random>

#include "compile/memory_planner.h"
#include "lumen/error.h"

namespace lumen {
namespace {

void expect_valid(const std::vector<BufferLifetime> &buffers, const MemoryPlan &plan) {
  ASSERT_EQ(plan.offsets.size(), buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    const auto &a = buffers[i];
    EXPECT_EQ(plan.offsets[i] % MemoryPlan::kAlignment, 0u);
    EXPECT_LE(plan.offsets[i] + a.bytes, plan.spaces[a.memory_space].planned_bytes);
    for (size_t j = i + 1; j < buffers.size(); ++j) {
      const auto &b = buffers[j];
      if (a.memory_space != b.memory_space) continue;
      if (a.first_step > b.last_step || b.first_step > a.last_step) continue;  // never both alive
      const bool in_place = (b.in_place_of == static_cast<int>(i) && a.last_step == b.first_step) ||
                            (a.in_place_of == static_cast<int>(j) && b.last_step == a.first_step);
      if (in_place && plan.offsets[i] == plan.offsets[j]) continue;
      const bool disjoint = plan.offsets[i] + a.bytes <= plan.offsets[j] ||
                            plan.offsets[j] + b.bytes <= plan.offsets[i];
      EXPECT_TRUE(disjoint) << "buffers " << i << " and " << j << " overlap";
    }
  }
  for (const auto &s : plan.spaces) {
    EXPECT_LE(s.lower_bound_bytes, s.planned_bytes);
    EXPECT_LE(s.planned_bytes, s.naive_bytes);
  }
}

TEST(MemoryPlanner, ChainReusesMemory) {
  // a -> b -> c -> d, each read only by the next step: two blocks suffice.
  std::vector<BufferLifetime> buffers;
  for (int s = 0; s < 4; ++s)
    buffers.push_back({.first_step = s, .last_step = s + 1, .bytes = 1024});
  const MemoryPlan plan = plan_memory(buffers);
  expect_valid(buffers, plan);
  EXPECT_EQ(plan.spaces[0].naive_bytes, 4096u);
  EXPECT_EQ(plan.spaces[0].planned_bytes, 2048u);
  EXPECT_EQ(plan.spaces[0].lower_bound_bytes, 2048u);
}

TEST(MemoryPlanner, AllAliveNeedsTheSum) {
  std::vector<BufferLifetime> buffers{{0, 5, 100}, {1, 5, 200}, {2, 5, 300}};
  const MemoryPlan plan = plan_memory(buffers);
  expect_valid(buffers, plan);
  EXPECT_EQ(plan.spaces[0].planned_bytes, 128u + 256u + 320u);  // 64-byte aligned sizes
  EXPECT_EQ(plan.spaces[0].lower_bound_bytes, plan.spaces[0].planned_bytes);
}

TEST(MemoryPlanner, InPlaceChainSharesOneBlock) {
  // conv -> relu -> sigmoid, each element-wise step writing over its dying input.
  std::vector<BufferLifetime> buffers{
      {.first_step = 0, .last_step = 1, .bytes = 4096},
      {.first_step = 1, .last_step = 2, .bytes = 4096, .in_place_of = 0},
      {.first_step = 2, .last_step = 3, .bytes = 4096, .in_place_of = 1}};
  const MemoryPlan plan = plan_memory(buffers);
  expect_valid(buffers, plan);
  EXPECT_EQ(plan.in_place, 2u);
  EXPECT_EQ(plan.offsets[0], plan.offsets[1]);
  EXPECT_EQ(plan.offsets[1], plan.offsets[2]);
  EXPECT_EQ(plan.spaces[0].planned_bytes, 4096u);
}

TEST(MemoryPlanner, InPlaceRefusedWhileTheInputIsStillRead) {
  // Buffer 0 is read again at step 3, so step 1 must not overwrite it.
  std::vector<BufferLifetime> buffers{
      {.first_step = 0, .last_step = 3, .bytes = 4096},
      {.first_step = 1, .last_step = 2, .bytes = 4096, .in_place_of = 0},
      // A second taker of the same input is refused too.
      {.first_step = 3, .last_step = 4, .bytes = 4096, .in_place_of = 0},
      {.first_step = 3, .last_step = 4, .bytes = 4096, .in_place_of = 0}};
  const MemoryPlan plan = plan_memory(buffers);
  expect_valid(buffers, plan);
  EXPECT_EQ(plan.in_place, 1u);
  EXPECT_NE(plan.offsets[0], plan.offsets[1]);
  EXPECT_NE(plan.offsets[2], plan.offsets[3]);
}

TEST(MemoryPlanner, SpacesArePlannedSeparately) {
  std::vector<BufferLifetime> buffers{{0, 1, 64, 0}, {0, 1, 64, 1}};
  const MemoryPlan plan = plan_memory(buffers);
  ASSERT_EQ(plan.spaces.size(), 2u);
  EXPECT_EQ(plan.offsets[0], 0u);
  EXPECT_EQ(plan.offsets[1], 0u);
  EXPECT_EQ(plan.spaces[1].planned_bytes, 64u);
}

TEST(MemoryPlanner, RandomLifetimesNeverOverlapAndStayNearTheBound) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<BufferLifetime> buffers;
    const int steps = 40;
    for (int s = 0; s < steps; ++s) {
      const int64_t last = s + 1 + static_cast<int64_t>(rng() % 6);
      const size_t bytes = 64 * (1 + rng() % 64);
      const int in_place = s > 0 && rng() % 3 == 0 ? s - 1 : -1;
      buffers.push_back({s, last, bytes, static_cast<int>(rng() % 2), in_place});
    }
    const MemoryPlan plan = plan_memory(buffers);
    expect_valid(buffers, plan);
    for (const auto &space : plan.spaces)
      EXPECT_LE(space.planned_bytes, space.lower_bound_bytes * 3 / 2) << "trial " << trial;
  }
}

TEST(MemoryPlanner, RejectsInvalidLifetimes) {
  EXPECT_THROW(plan_memory({{3, 2, 64}}), Error);
  EXPECT_THROW(plan_memory({{-1, 2, 64}}), Error);
  EXPECT_THROW(plan_memory({{0, 2, 64, 0, 5}}), Error);
  EXPECT_EQ(plan_memory({}).spaces.size(), 0u);
}

TEST(MemoryPlanner, PartsSitInsideTheirRootWhichLivesAsLongAsThey) {
  // a and b are written at steps 0 and 1 straight into c (a concat at step 2), c into e (another
  // concat at step 4, after d); a is still read at step 5. f, alive at steps 0-5, and g, which
  // would overwrite c in place at its last read, must stay out of e's block.
  std::vector<BufferLifetime> buffers{
      {.first_step = 0, .last_step = 5, .bytes = 256, .part_of = 2, .part_offset = 0},    // a
      {.first_step = 1, .last_step = 2, .bytes = 256, .part_of = 2, .part_offset = 256},  // b
      {.first_step = 2, .last_step = 4, .bytes = 512, .part_of = 4, .part_offset = 0},    // c
      {.first_step = 3, .last_step = 4, .bytes = 128, .part_of = 4, .part_offset = 512},  // d
      {.first_step = 4, .last_step = 6, .bytes = 640},                                    // e
      {.first_step = 0, .last_step = 5, .bytes = 640},                                    // f
      {.first_step = 6, .last_step = 7, .bytes = 640, .in_place_of = 4}};                 // g
  const MemoryPlan plan = plan_memory(buffers);
  EXPECT_EQ(plan.parts, 4u);
  EXPECT_EQ(plan.in_place, 0u);
  const size_t e = plan.offsets[4];
  EXPECT_EQ(plan.offsets[0], e);
  EXPECT_EQ(plan.offsets[1], e + 256);
  EXPECT_EQ(plan.offsets[2], e);
  EXPECT_EQ(plan.offsets[3], e + 512);
  // e's block is busy from step 0 (a's write) to 6: f overlaps it in time, so not in memory; g
  // cannot take it over.
  EXPECT_TRUE(plan.offsets[5] + 640 <= e || e + 640 <= plan.offsets[5]);
  EXPECT_TRUE(plan.offsets[6] + 640 <= e || e + 640 <= plan.offsets[6]);
  EXPECT_EQ(plan.spaces[0].lower_bound_bytes, 2u * 640);
}

TEST(MemoryPlanner, RejectsPartsThatDoNotFit) {
  std::vector<BufferLifetime> buffers{
      {.first_step = 0, .last_step = 1, .bytes = 256, .part_of = 1, .part_offset = 128},
      {.first_step = 1, .last_step = 2, .bytes = 256}};
  EXPECT_THROW(plan_memory(buffers), Error);
  buffers[0].part_offset = 0;
  buffers[1].part_of = 0;  // a cycle
  EXPECT_THROW(plan_memory(buffers), Error);
}

}  // namespace
}  // namespace lumen

namespace lumen {
namespace {

TEST(MemoryPlanner, ViewsShareTheBlockAndExtendItsLife) {
  // b is a reshape of a, read until step 4; c may not take a's block in place at step 2 because
  // the view keeps it alive.
  std::vector<BufferLifetime> buffers{
      {.first_step = 0, .last_step = 2, .bytes = 1024},
      {.first_step = 1, .last_step = 4, .bytes = 1024, .view_of = 0},
      {.first_step = 2, .last_step = 3, .bytes = 1024, .in_place_of = 0},
      {.first_step = 3, .last_step = 4, .bytes = 1024}};
  const MemoryPlan plan = plan_memory(buffers);
  EXPECT_EQ(plan.views, 1u);
  EXPECT_EQ(plan.in_place, 0u);
  EXPECT_EQ(plan.offsets[0], plan.offsets[1]);
  EXPECT_NE(plan.offsets[2], plan.offsets[0]);
  EXPECT_NE(plan.offsets[3], plan.offsets[0]);
}

}  // namespace
}  // namespace lumen
