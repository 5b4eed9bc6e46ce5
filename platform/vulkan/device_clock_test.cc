// DeviceClock's conversion of timestamps to the host's steady clock: the
// arithmetic alone (ticks_to_host_ns), including counters narrower than 64
// bits that wrapped between the calibration and the stamp, and the clock of
// the test device (lavapipe offers VK_EXT_calibrated_timestamps).
#include "platform/vulkan/device_clock.h"

#include <gtest/gtest.h>

#include <chrono>

#include "platform/vulkan/vk_test_env.h"

namespace kiln::vk {
namespace {

TEST(TicksToHostNs, ScalesByThePeriodFromTheSample) {
  const ClockSample s{1000, 5'000'000, 0};
  EXPECT_EQ(ticks_to_host_ns(s, 1000, 1.0, 64), 5'000'000);
  EXPECT_EQ(ticks_to_host_ns(s, 1100, 1.0, 64), 5'000'100);
  EXPECT_EQ(ticks_to_host_ns(s, 1100, 2.5, 64), 5'000'250);
  // A stamp before the sample converts to an earlier time.
  EXPECT_EQ(ticks_to_host_ns(s, 900, 2.0, 64), 4'999'800);
}

TEST(TicksToHostNs, NarrowCountersWrapAroundTheSample) {
  // 32 valid bits: the sample just before the counter wraps, the stamp
  // just after it (and the other way round).
  const ClockSample before_wrap{0xFFFFFFF0ull, 1'000'000, 0};
  EXPECT_EQ(ticks_to_host_ns(before_wrap, 0x10, 1.0, 32), 1'000'000 + 0x20);
  const ClockSample after_wrap{0x10, 1'000'000, 0};
  EXPECT_EQ(ticks_to_host_ns(after_wrap, 0xFFFFFFF0ull, 1.0, 32), 1'000'000 - 0x20);
  // Bits above the valid ones are ignored.
  EXPECT_EQ(ticks_to_host_ns(after_wrap, 0xAB00000020ull, 1.0, 32), 1'000'000 + 0x10);
}

class DeviceClockTest : public testing::VulkanTest {};

TEST_F(DeviceClockTest, TestDeviceConvertsItsTimestampsToTheSteadyClock) {
  ASSERT_TRUE(device().enabled().calibrated_timestamps)
      << "the CI device (lavapipe) offers VK_EXT_calibrated_timestamps with the device and monotonic clocks";
  ASSERT_TRUE(device().clock().available());
  EXPECT_GE(device().queue_count(), 1u);
  EXPECT_LE(device().queue_count(), Device::kMaxQueues);
  // The device counter now, converted, is the host's now (within the
  // calibration's deviation and the calls' time).
  VkCalibratedTimestampInfoEXT info{VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT};
  info.timeDomain = VK_TIME_DOMAIN_DEVICE_EXT;
  uint64_t ticks = 0, deviation = 0;
  const auto before = std::chrono::steady_clock::now();
  ASSERT_EQ(device().fn().vkGetCalibratedTimestampsEXT(device().handle(), 1, &info, &ticks, &deviation), VK_SUCCESS);
  const auto after = std::chrono::steady_clock::now();
  const auto host = device().clock().to_host_ns(ticks);
  ASSERT_TRUE(host.has_value());
  const auto ns = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  };
  const int64_t slack = static_cast<int64_t>(device().clock().deviation_ns()) + 1000;
  EXPECT_GE(*host, ns(before) - slack);
  EXPECT_LE(*host, ns(after) + slack);
}

}  // namespace
}  // namespace kiln::vk
