// Barrier placement without a device: each hazard kind, what is not one
// (reads after reads, other resources, adjacent ranges, a dispatch's own
// in-place access), and that a barrier resets what is compared.
#include "engine/runtime/vulkan/hazard_tracker.h"

#include <gtest/gtest.h>

namespace kiln::runtime {
namespace {

MemoryRange range(uint64_t begin, uint64_t end, int resource = 0) { return MemoryRange{resource, begin, end}; }

TEST(HazardTracker, ReadAfterWriteNeedsABarrier) {
  HazardTracker h;
  EXPECT_FALSE(h.access({}, {range(0, 64)}));
  EXPECT_TRUE(h.needs_barrier({range(32, 48)}, {}));
}

TEST(HazardTracker, WriteAfterReadNeedsABarrier) {
  HazardTracker h;
  EXPECT_FALSE(h.access({range(0, 64)}, {}));
  EXPECT_TRUE(h.needs_barrier({}, {range(60, 100)}));
}

TEST(HazardTracker, WriteAfterWriteNeedsABarrier) {
  HazardTracker h;
  EXPECT_FALSE(h.access({}, {range(0, 64)}));
  EXPECT_TRUE(h.needs_barrier({}, {range(0, 64)}));
}

TEST(HazardTracker, ReadsAfterReadsNeedNone) {
  HazardTracker h;
  EXPECT_FALSE(h.access({range(0, 64)}, {range(64, 128)}));
  EXPECT_FALSE(h.access({range(0, 64)}, {range(128, 192)}));
  EXPECT_FALSE(h.needs_barrier({range(0, 64)}, {}));
}

TEST(HazardTracker, OtherResourcesAndAdjacentRangesDoNotOverlap) {
  HazardTracker h;
  EXPECT_FALSE(h.access({}, {range(0, 64, /*resource=*/1)}));
  EXPECT_FALSE(h.needs_barrier({range(0, 64, 2)}, {range(0, 64, 0)}));
  EXPECT_FALSE(h.needs_barrier({range(64, 128, 1)}, {}));  // [0,64) and [64,128) share no byte
  EXPECT_TRUE(h.needs_barrier({range(63, 128, 1)}, {}));
}

TEST(HazardTracker, AnInPlaceDispatchIsNotComparedWithItself) {
  HazardTracker h;
  // Reads and writes one range (an elementwise kernel writing over its input).
  EXPECT_FALSE(h.access({range(0, 64)}, {range(0, 64)}));
  // The next read of the result waits for that write.
  EXPECT_TRUE(h.access({range(0, 64)}, {range(64, 128)}));
}

TEST(HazardTracker, ABarrierOrdersEverythingBeforeIt) {
  HazardTracker h;
  h.record({range(0, 64)}, {range(64, 128)});
  h.barrier();
  EXPECT_FALSE(h.needs_barrier({range(64, 128)}, {range(0, 64)}));
}

TEST(HazardTracker, AccessForgetsWhatItsBarrierOrdered) {
  HazardTracker h;
  EXPECT_FALSE(h.access({}, {range(0, 64)}));     // A writes x
  EXPECT_TRUE(h.access({range(0, 64)}, {range(64, 128)}));  // B reads x: barrier; writes y
  // C writes x again: after the barrier only B's read of x is pending (WAR).
  EXPECT_TRUE(h.needs_barrier({}, {range(0, 64)}));
  // D reads z, untouched since the barrier: none.
  EXPECT_FALSE(h.needs_barrier({range(128, 192)}, {}));
  // A chain of independent writes needs none.
  HazardTracker g;
  for (uint64_t i = 0; i < 8; ++i) EXPECT_FALSE(g.access({}, {range(i * 64, i * 64 + 64)}));
}

}  // namespace
}  // namespace kiln::runtime
