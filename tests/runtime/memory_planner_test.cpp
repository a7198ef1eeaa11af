#include <gtest/gtest.h>

#include <random>

#include "session/memory_planner.h"

namespace onyx::runtime {
namespace {

// No two buffers with overlapping lifetimes may overlap in the arena.
void expect_valid(std::span<const PlanRequest> r, const MemoryPlan& plan, size_t alignment) {
  for (size_t a = 0; a < r.size(); ++a) {
    EXPECT_EQ(plan.offsets[a] % alignment, 0u);
    EXPECT_LE(plan.offsets[a] + r[a].bytes, plan.arena_bytes);
    for (size_t b = a + 1; b < r.size(); ++b) {
      bool live_together = r[a].first_step <= r[b].last_step && r[b].first_step <= r[a].last_step;
      bool bytes_overlap = plan.offsets[a] < plan.offsets[b] + r[b].bytes &&
                           plan.offsets[b] < plan.offsets[a] + r[a].bytes;
      EXPECT_FALSE(live_together && bytes_overlap && r[a].bytes && r[b].bytes)
          << "requests " << a << " and " << b;
    }
  }
}

TEST(MemoryPlanner, ChainReusesMemory) {
  // a -> b -> c -> d, each consumed by the next step only.
  std::vector<PlanRequest> r = {{1024, 0, 1}, {1024, 1, 2}, {1024, 2, 3}, {1024, 3, 4}};
  MemoryPlan plan = plan_memory(r, 64);
  expect_valid(r, plan, 64);
  EXPECT_EQ(plan.lower_bound, 2048u);
  EXPECT_EQ(plan.arena_bytes, 2048u);
}

TEST(MemoryPlanner, LowerBoundIsTheLargestLiveSet) {
  std::vector<PlanRequest> r = {{100, 0, 5}, {200, 1, 2}, {300, 2, 3}, {50, 4, 5}};
  MemoryPlan plan = plan_memory(r, 64);
  expect_valid(r, plan, 64);
  // Aligned sizes 128, 256, 320, 64; step 2 holds 128 + 256 + 320.
  EXPECT_EQ(plan.lower_bound, 704u);
  EXPECT_GE(plan.arena_bytes, plan.lower_bound);
}

TEST(MemoryPlanner, RandomGraphsAreValidAndNearTheBound) {
  std::mt19937 rng(7);
  double worst = 1;
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<PlanRequest> r;
    int steps = 30;
    for (int k = 0; k < 40; ++k) {
      int first = int(rng() % steps);
      int last = first + int(rng() % 6);
      r.push_back({size_t(64 + rng() % 100000), first, last});
    }
    MemoryPlan plan = plan_memory(r, 64);
    expect_valid(r, plan, 64);
    ASSERT_GE(plan.arena_bytes, plan.lower_bound);
    worst = std::max(worst, double(plan.arena_bytes) / double(plan.lower_bound));
  }
  // Random interval graphs are harder than networks; greedy-by-size stays
  // within 1.5x of the bound here (networks land within a few percent).
  EXPECT_LT(worst, 1.5);
}

TEST(MemoryPlanner, EmptyAndZeroSized) {
  MemoryPlan empty = plan_memory({}, 64);
  EXPECT_EQ(empty.arena_bytes, 0u);
  std::vector<PlanRequest> r = {{0, 0, 1}, {10, 0, 1}};
  MemoryPlan plan = plan_memory(r, 64);
  EXPECT_EQ(plan.arena_bytes, 64u);
}

}  // namespace
}  // namespace onyx::runtime
