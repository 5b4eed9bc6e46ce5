// Device timestamps on the host's clock; see device_clock.h.
#include "platform/vulkan/device_clock.h"

#include <cmath>

namespace kiln::vk {

int64_t ticks_to_host_ns(const ClockSample& sample, uint64_t ticks, double period_ns, uint32_t valid_bits) {
  const uint64_t mask = valid_bits >= 64 ? ~0ull : (1ull << valid_bits) - 1;
  uint64_t diff = (ticks - sample.device_ticks) & mask;
  int64_t signed_diff = 0;
  if (valid_bits >= 64) {
    signed_diff = static_cast<int64_t>(diff);
  } else {
    // The upper half of the counter's range is "before the sample".
    const uint64_t half = 1ull << (valid_bits - 1);
    signed_diff = diff >= half ? -static_cast<int64_t>(mask - diff + 1) : static_cast<int64_t>(diff);
  }
  return sample.host_ns + static_cast<int64_t>(std::llround(static_cast<double>(signed_diff) * period_ns));
}

void DeviceClock::enable(VkDevice device, PFN_vkGetCalibratedTimestampsEXT get, double period_ns,
                         uint32_t valid_bits) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (get == nullptr || valid_bits == 0 || period_ns <= 0) return;
  device_ = device;
  get_ = get;
  period_ns_ = period_ns;
  valid_bits_ = valid_bits;
}

std::optional<int64_t> DeviceClock::to_host_ns(uint64_t ticks) {
  if (get_ == nullptr) return std::nullopt;
  std::lock_guard<std::mutex> lock(mutex_);
  const auto now = std::chrono::steady_clock::now();
  if (!sample_ || now - sampled_at_ > std::chrono::milliseconds(1)) {
    VkCalibratedTimestampInfoEXT infos[2] = {{VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT},
                                             {VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT}};
    infos[0].timeDomain = VK_TIME_DOMAIN_DEVICE_EXT;
    infos[1].timeDomain = VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT;
    uint64_t values[2] = {0, 0};
    uint64_t deviation = 0;
    if (get_(device_, 2, infos, values, &deviation) != VK_SUCCESS) return std::nullopt;
    sample_ = ClockSample{values[0], static_cast<int64_t>(values[1]), deviation};
    sampled_at_ = now;
  }
  return ticks_to_host_ns(*sample_, ticks, period_ns_, valid_bits_);
}

uint64_t DeviceClock::deviation_ns() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return sample_ ? sample_->deviation_ns : 0;
}

}  // namespace kiln::vk
