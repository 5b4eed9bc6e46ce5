// ArenaPlanCache without a device: a repeat reuses the plan, new lifetimes
// plan anew, and over many random sizes every plan is valid, an evaluated
// one is within the slack of the bound, and the versions stay bounded.
#include "planner/memory/plan_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace kiln::memplan {
namespace {

// A chain with a skip connection: block i lives [i, i+1], block 0 to the end.
std::vector<Block> chain(const std::vector<uint64_t>& sizes) {
  std::vector<Block> blocks;
  for (size_t i = 0; i < sizes.size(); ++i) {
    Block b;
    b.first = static_cast<int64_t>(i);
    b.last = i == 0 ? static_cast<int64_t>(sizes.size()) : static_cast<int64_t>(i) + 1;
    b.size = sizes[i];
    b.align = 64;
    blocks.push_back(b);
  }
  return blocks;
}

TEST(ArenaPlanCache, ARepeatEvaluatesTheEarlierPlan) {
  ArenaPlanCache cache;
  const std::vector<Block> blocks = chain({256, 1024, 512, 2048, 128});
  const ArenaPlan first = cache.plan(blocks);
  EXPECT_NE(first.strategy, "earlier plan evaluated");
  EXPECT_EQ(cache.versions(blocks), 1u);
  const ArenaPlan again = cache.plan(blocks);
  EXPECT_EQ(again.strategy, "earlier plan evaluated");
  EXPECT_EQ(again.bytes, first.bytes);
  EXPECT_EQ(check_plan(blocks, again), "");
  EXPECT_EQ(cache.versions(blocks), 1u);
}

TEST(ArenaPlanCache, OtherLifetimesPlanAnew) {
  ArenaPlanCache cache;
  std::vector<Block> blocks = chain({256, 1024, 512});
  (void)cache.plan(blocks);
  blocks[1].last += 1;
  EXPECT_EQ(cache.versions(blocks), 0u);
  EXPECT_NE(cache.plan(blocks).strategy, "earlier plan evaluated");
  EXPECT_EQ(cache.versions(blocks), 1u);
}

TEST(ArenaPlanCache, RandomSizesGiveValidTightPlansAndFewVersions) {
  std::mt19937 rng(2);
  std::uniform_int_distribution<int> start(0, 10), length(0, 4), log_size(0, 20);
  std::vector<Block> lifetimes(12);
  for (Block& b : lifetimes) {
    b.first = start(rng);
    b.last = b.first + length(rng);
    b.align = 64;
  }
  ArenaPlanCache cache;
  size_t evaluated = 0, planned = 0;
  for (int round = 0; round < 100; ++round) {
    std::vector<Block> blocks = lifetimes;
    for (Block& b : blocks) b.size = uint64_t{1} << log_size(rng);
    const ArenaPlan plan = cache.plan(blocks);
    ASSERT_EQ(check_plan(blocks, plan), "") << "round " << round;
    if (plan.strategy == "earlier plan evaluated") {
      ++evaluated;
      EXPECT_LE(static_cast<double>(plan.bytes), ArenaPlanCache::kSlack * static_cast<double>(live_lower_bound(blocks)));
    } else {
      ++planned;
    }
  }
  EXPECT_GT(evaluated, 0u);
  EXPECT_GT(planned, 0u);
  // Each new plan became a version, the oldest going beyond kVersions.
  EXPECT_EQ(cache.versions(lifetimes), std::min(planned, ArenaPlanCache::kVersions));
}

}  // namespace
}  // namespace kiln::memplan
