// GPU timestamps on the host's clock: a run's device interval that can be
// compared with other runs' (on other queues) and with host times.
//
// Timestamps written on different queues share no defined epoch, and none
// with the host. VK_EXT_calibrated_timestamps samples the device's timestamp
// counter (VK_TIME_DOMAIN_DEVICE, the counter vkCmdWriteTimestamp writes on
// every queue) and CLOCK_MONOTONIC — std::chrono::steady_clock on Linux — at
// one instant, with a bound on how far apart the two reads were; a tick
// then converts to steady-clock nanoseconds. Without the extension (or
// without both domains) nothing is converted: an honest "unknown" instead of
// a guess from submission times.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>

#include "platform/vulkan/vk_loader.h"

namespace kiln::vk {

// One calibration: the device counter and the host clock read together.
struct ClockSample {
  uint64_t device_ticks = 0;
  int64_t host_ns = 0;        // steady_clock, ns since its epoch
  uint64_t deviation_ns = 0;  // the driver's bound on the two reads' distance
};

// Steady-clock ns of `ticks`, from `sample`: the tick difference taken
// modulo 2^valid_bits as a signed number (a counter that wrapped between
// the two still converts), times the tick period.
int64_t ticks_to_host_ns(const ClockSample& sample, uint64_t ticks, double period_ns, uint32_t valid_bits);

class DeviceClock {
 public:
  DeviceClock() = default;
  DeviceClock(const DeviceClock&) = delete;
  DeviceClock& operator=(const DeviceClock&) = delete;

  // Enables conversion on `device` (VK_EXT_calibrated_timestamps enabled
  // with both time domains; `get` is the device's vkGetCalibratedTimestampsEXT).
  // Before this, or with a null `get` or valid_bits 0, available() is false.
  void enable(VkDevice device, PFN_vkGetCalibratedTimestampsEXT get, double period_ns, uint32_t valid_bits);

  bool available() const { return get_ != nullptr; }

  // Steady-clock ns of a timestamp written on any of the device's queues,
  // or nullopt when unavailable (or the calibration call failed). Samples
  // the clocks at most once a millisecond (drift between a GPU counter and
  // the host clock is parts per million: far under a microsecond in that
  // time). Thread-safe.
  std::optional<int64_t> to_host_ns(uint64_t ticks);
  // The deviation of the current calibration (0 before the first).
  uint64_t deviation_ns() const;

 private:
  VkDevice device_ = VK_NULL_HANDLE;
  PFN_vkGetCalibratedTimestampsEXT get_ = nullptr;
  double period_ns_ = 1.0;
  uint32_t valid_bits_ = 64;
  mutable std::mutex mutex_;
  std::optional<ClockSample> sample_;  // guarded by mutex_
  std::chrono::steady_clock::time_point sampled_at_;
};

}  // namespace kiln::vk
