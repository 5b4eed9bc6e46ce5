// Arena placement: valid (no two live-overlapping blocks share a byte,
// alignment kept) for random lifetimes and sizes, within 1.05x of the
// live-set lower bound on model-like lifetimes, and the baseline numbers.
#include "planner/memory/arena.h"

#include <gtest/gtest.h>

#include <random>

namespace kiln::memplan {
namespace {

Block block(int64_t first, int64_t last, uint64_t size, uint64_t align = 1) {
  Block b;
  b.first = first;
  b.last = last;
  b.size = size;
  b.align = align;
  return b;
}

TEST(Arena, LowerBoundAndNoReuse) {
  // Steps 0..2: a [0,1] 100, b [1,2] 50, c [2,2] 30: step 1 holds 150.
  const std::vector<Block> blocks = {block(0, 1, 100), block(1, 2, 50), block(2, 2, 30)};
  EXPECT_EQ(live_lower_bound(blocks), 150u);
  EXPECT_EQ(no_reuse_total(blocks), 180u);
  const ArenaPlan plan = plan_arena(blocks);
  EXPECT_EQ(check_plan(blocks, plan), "");
  EXPECT_EQ(plan.bytes, 150u);  // c re-uses a's bytes
}

TEST(Arena, BlocksLiveForTheWholeRunPlaceWithoutOverflow) {
  // Images and placeholders that keep their memory for the whole run span
  // kBeforeRun (-1) to kAfterRun (INT64_MAX): lifetimes and distances from
  // the peak must not be computed in int64 (UBSan: signed overflow).
  constexpr int64_t kBefore = -1, kAfter = INT64_MAX;
  const std::vector<Block> blocks = {block(kBefore, kAfter, 256, 64), block(kBefore, kAfter, 256, 64),
                                     block(0, 3, 512, 64), block(2, 5, 512, 64), block(kBefore, kAfter, 128, 64)};
  const ArenaPlan plan = plan_arena(blocks);
  EXPECT_EQ(check_plan(blocks, plan), "");
  EXPECT_EQ(plan.bytes, live_lower_bound(blocks));
  EXPECT_EQ(check_plan(blocks, evaluate_stacking(blocks, stacking_of(blocks, plan))), "");
}

TEST(Arena, CheckPlanFindsOverlapsAndMisalignment) {
  const std::vector<Block> blocks = {block(0, 1, 64, 64), block(1, 2, 64, 64)};
  ArenaPlan plan;
  plan.offsets = {0, 32};
  plan.bytes = 96;
  EXPECT_NE(check_plan(blocks, plan).find("not aligned"), std::string::npos);
  plan.offsets = {0, 0};
  plan.bytes = 64;
  EXPECT_NE(check_plan(blocks, plan).find("overlap"), std::string::npos);
  plan.offsets = {0, 64};
  EXPECT_NE(check_plan(blocks, plan).find("past the arena"), std::string::npos);
  plan.bytes = 128;
  EXPECT_EQ(check_plan(blocks, plan), "");
}

// The greedy best-fit baseline is fooled by an early small block that
// outlives a large one: the large block's hole is then too small for the
// next large block, which goes on top. The peak-first plan places the blocks
// of the peak step first and needs only the lower bound.
TEST(Arena, PeakFirstBeatsGreedyBestFit) {
  const std::vector<Block> blocks = {
      block(0, 1, 100),  // A
      block(0, 3, 10),   // s, long-lived
      block(2, 3, 110),  // B: needs A's bytes plus 10 more
  };
  const ArenaPlan greedy = plan_greedy_best_fit(blocks);
  const ArenaPlan ours = plan_arena(blocks);
  EXPECT_EQ(check_plan(blocks, greedy), "");
  EXPECT_EQ(check_plan(blocks, ours), "");
  EXPECT_EQ(live_lower_bound(blocks), 120u);
  EXPECT_EQ(ours.bytes, 120u);
  EXPECT_EQ(greedy.bytes, 220u);  // A [0,100) s [100,110), B on top
}

// Random lifetimes, sizes and alignments: every strategy gives a valid
// placement, and no placement beats the lower bound.
TEST(Arena, RandomLifetimesGiveValidPlacements) {
  std::mt19937_64 rng(42);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<Block> blocks;
    const size_t n = 1 + rng() % 60;
    const int64_t steps = 1 + static_cast<int64_t>(rng() % 40);
    for (size_t i = 0; i < n; ++i) {
      const int64_t first = static_cast<int64_t>(rng() % static_cast<uint64_t>(steps)) - (rng() % 8 == 0 ? 1 : 0);
      const int64_t last = rng() % 10 == 0 ? INT64_MAX : first + static_cast<int64_t>(rng() % 12);
      const uint64_t align = uint64_t{1} << (rng() % 8);
      blocks.push_back(block(first, last, rng() % 3 == 0 ? rng() % 17 : rng() % 100000, align));
    }
    const uint64_t bound = live_lower_bound(blocks);
    for (const ArenaPlan& p : {plan_arena(blocks), plan_peak_first(blocks), plan_greedy_best_fit(blocks)}) {
      ASSERT_EQ(check_plan(blocks, p), "") << p.strategy << " trial " << trial;
      EXPECT_GE(p.bytes, bound) << p.strategy << " trial " << trial;
      uint64_t stacked = 0;  // every block on top of the others, whatever the order
      for (const Block& b : blocks) stacked += align_up(b.size, b.align) + b.align;
      EXPECT_LE(p.bytes, stacked) << p.strategy << " trial " << trial;
    }
  }
}

// Lifetimes shaped like a network: a chain of activations (each live from
// its producer to its consumer one or two steps later), residual branches
// that stay live over several steps, sizes that shrink and grow by stages,
// 64-byte alignment. The plan stays within 1.05x of the lower bound.
TEST(Arena, WithinFivePercentOfTheLowerBoundOnNetworkLikeLifetimes) {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 100; ++trial) {
    std::vector<Block> blocks;
    const int64_t steps = 20 + static_cast<int64_t>(rng() % 200);
    uint64_t stage = 1 << (10 + rng() % 10);
    for (int64_t s = 0; s < steps; ++s) {
      if (rng() % 16 == 0) stage = rng() % 2 ? stage * 2 : std::max<uint64_t>(stage / 2, 256);
      const uint64_t size = stage * (1 + rng() % 4);
      blocks.push_back(block(s, s + 1 + static_cast<int64_t>(rng() % 2), size, 64));
      if (rng() % 5 == 0) blocks.push_back(block(s, s + 2 + static_cast<int64_t>(rng() % 6), stage, 64));
      if (rng() % 7 == 0) blocks.push_back(block(s, s, size * 2, 64));  // a kernel's scratch
    }
    const ArenaPlan plan = plan_arena(blocks);
    ASSERT_EQ(check_plan(blocks, plan), "");
    const uint64_t bound = live_lower_bound(blocks);
    EXPECT_LE(static_cast<double>(plan.bytes), 1.05 * static_cast<double>(bound))
        << "trial " << trial << ": " << plan.bytes << " vs bound " << bound << " (" << plan.strategy << ")";
  }
}

TEST(Arena, ReportCollectsTheNumbers) {
  const std::vector<Block> blocks = {block(0, 1, 100, 64), block(1, 2, 50, 64), block(2, 2, 30, 64)};
  const ArenaReport r = report(blocks, plan_arena(blocks));
  EXPECT_EQ(r.live_lower_bound, 128u + 64u);  // slots are aligned: 128 + 64 at step 1
  EXPECT_EQ(r.no_reuse_bytes, 128u + 64u + 64u);
  EXPECT_EQ(r.arena_bytes, 192u);
  EXPECT_EQ(r.best_fit_bytes, 192u);
  EXPECT_EQ(r.tensors, 3u);
}

}  // namespace
}  // namespace kiln::memplan
