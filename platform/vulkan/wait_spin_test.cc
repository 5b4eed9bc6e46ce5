// The poll bound of a submission wait (wait_spin.h), without a GPU.
#include "platform/vulkan/wait_spin.h"

#include <gtest/gtest.h>

namespace kiln::vk {
namespace {

using std::chrono::microseconds;
using std::chrono::nanoseconds;

TEST(WaitSpinTest, ForeverPollsTheWholeSpin) {
  // UINT64_MAX once converted to -1 ns: a blocking wait that never polled.
  EXPECT_EQ(wait_spin_bound(microseconds(200), UINT64_MAX), nanoseconds(200000));
  EXPECT_EQ(wait_spin_bound(microseconds(50000), UINT64_MAX), nanoseconds(50000000));
}

TEST(WaitSpinTest, AShorterTimeoutCutsTheSpin) {
  EXPECT_EQ(wait_spin_bound(microseconds(200), 1000), nanoseconds(1000));
  EXPECT_EQ(wait_spin_bound(microseconds(200), 0), nanoseconds(0));
  EXPECT_EQ(wait_spin_bound(microseconds(200), 200000), nanoseconds(200000));
}

TEST(WaitSpinTest, NoSpinMeansBlockAtOnce) {
  EXPECT_EQ(wait_spin_bound(microseconds(0), UINT64_MAX), nanoseconds(0));
  EXPECT_EQ(wait_spin_bound(microseconds(-5), UINT64_MAX), nanoseconds(0));
}

TEST(WaitSpinTest, AutomaticSpinFollowsTheRuns) {
  EXPECT_EQ(auto_spin(nanoseconds(0)), kFirstAutoSpin);
  EXPECT_EQ(auto_spin(microseconds(1200)), microseconds(1800));  // a resnet50 run: never blocks
  EXPECT_EQ(auto_spin(microseconds(10)), kMinAutoSpin);
  EXPECT_EQ(auto_spin(microseconds(40000)), kMaxAutoSpin);        // a long run burns at most this
}

}  // namespace
}  // namespace kiln::vk
