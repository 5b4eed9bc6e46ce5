// compute_overlap (overlap.h): the overlap figures `kiln bench
// --concurrent` reports, from synthetic device intervals whose answers are
// known.
#include "tools/kiln/overlap.h"

#include <gtest/gtest.h>

namespace kiln::cli {
namespace {

constexpr int64_t kMs = 1'000'000;  // ns

GpuInterval ms(double begin, double end) {
  return {static_cast<int64_t>(begin * kMs), static_cast<int64_t>(end * kMs)};
}

TEST(ComputeOverlap, NoIntervalsIsAllZero) {
  const Overlap o = compute_overlap({});
  EXPECT_EQ(o.busy_ms, 0);
  EXPECT_EQ(o.fraction, 0);
  EXPECT_EQ(o.max_in_flight, 0);
}

TEST(ComputeOverlap, RunsOneAfterAnotherDoNotOverlap) {
  // Touching ends (one run ends where the next begins) and a gap.
  const Overlap o = compute_overlap({ms(0, 2), ms(2, 3), ms(5, 6)});
  EXPECT_DOUBLE_EQ(o.busy_ms, 4);
  EXPECT_DOUBLE_EQ(o.overlapped_ms, 0);
  EXPECT_DOUBLE_EQ(o.fraction, 0);
  EXPECT_DOUBLE_EQ(o.summed_ms, 4);
  EXPECT_DOUBLE_EQ(o.mean_in_flight, 1);
  EXPECT_EQ(o.max_in_flight, 1);
}

TEST(ComputeOverlap, PartialOverlapCountsTheSharedTime) {
  // [0,4) and [2,6): busy 6 ms, two in flight during [2,4).
  const Overlap o = compute_overlap({ms(2, 6), ms(0, 4)});
  EXPECT_DOUBLE_EQ(o.busy_ms, 6);
  EXPECT_DOUBLE_EQ(o.overlapped_ms, 2);
  EXPECT_DOUBLE_EQ(o.fraction, 2.0 / 6.0);
  EXPECT_DOUBLE_EQ(o.summed_ms, 8);
  EXPECT_DOUBLE_EQ(o.mean_in_flight, 8.0 / 6.0);
  EXPECT_EQ(o.max_in_flight, 2);
}

TEST(ComputeOverlap, ThreeDeepAndNestedIntervals) {
  // [0,10) holds [1,9), which holds [2,3): three in flight for 1 ms, two
  // for 7 ms, one for 2 ms.
  const Overlap o = compute_overlap({ms(0, 10), ms(1, 9), ms(2, 3)});
  EXPECT_DOUBLE_EQ(o.busy_ms, 10);
  EXPECT_DOUBLE_EQ(o.overlapped_ms, 8);
  EXPECT_DOUBLE_EQ(o.fraction, 0.8);
  EXPECT_DOUBLE_EQ(o.summed_ms, 19);
  EXPECT_EQ(o.max_in_flight, 3);
}

TEST(ComputeOverlap, IdenticalIntervalsOverlapWholly) {
  const Overlap o = compute_overlap({ms(1, 2), ms(1, 2), ms(1, 2), ms(1, 2)});
  EXPECT_DOUBLE_EQ(o.busy_ms, 1);
  EXPECT_DOUBLE_EQ(o.fraction, 1);
  EXPECT_DOUBLE_EQ(o.mean_in_flight, 4);
  EXPECT_EQ(o.max_in_flight, 4);
}

TEST(ComputeOverlap, EmptyAndReversedIntervalsAreIgnored) {
  // Unknown intervals (0, 0) and a malformed one (end before begin) add
  // nothing; the one real interval stays alone.
  const Overlap o = compute_overlap({GpuInterval{}, ms(3, 1), ms(4, 5)});
  EXPECT_DOUBLE_EQ(o.busy_ms, 1);
  EXPECT_DOUBLE_EQ(o.overlapped_ms, 0);
  EXPECT_EQ(o.max_in_flight, 1);
}

}  // namespace
}  // namespace kiln::cli
