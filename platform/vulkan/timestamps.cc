// Timestamp queries; see timestamps.h.
#include "platform/vulkan/timestamps.h"

#include <string>

namespace kiln::vk {

StatusOr<std::unique_ptr<TimestampQueries>> TimestampQueries::create(Device& device, uint32_t capacity) {
  KILN_RETURN_IF_ERROR(device.status());
  if (capacity == 0) return invalid_argument("timestamp query pool capacity must be positive");
  if (device.timestamp_valid_bits() == 0) {
    return unimplemented("the compute queue of '" + device.capabilities().device_name + "' does not support timestamps");
  }
  std::unique_ptr<TimestampQueries> t(new TimestampQueries(device));
  t->capacity_ = capacity;
  uint32_t bits = device.timestamp_valid_bits();
  t->mask_ = bits >= 64 ? ~0ull : ((1ull << bits) - 1);
  VkQueryPoolCreateInfo info{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  info.queryType = VK_QUERY_TYPE_TIMESTAMP;
  info.queryCount = capacity;
  KILN_RETURN_IF_ERROR(
      device.check(device.fn().vkCreateQueryPool(device.handle(), &info, nullptr, &t->pool_), "vkCreateQueryPool"));
  return t;
}

TimestampQueries::~TimestampQueries() {
  if (pool_ != VK_NULL_HANDLE) device_.fn().vkDestroyQueryPool(device_.handle(), pool_, nullptr);
}

void TimestampQueries::reset(VkCommandBuffer cmd) {
  device_.fn().vkCmdResetQueryPool(cmd, pool_, 0, capacity_);
  written_ = 0;
}

StatusOr<uint32_t> TimestampQueries::write(VkCommandBuffer cmd, VkPipelineStageFlagBits stage) {
  if (written_ >= capacity_) {
    return out_of_range("all " + std::to_string(capacity_) + " timestamp queries are used; reset() first");
  }
  device_.fn().vkCmdWriteTimestamp(cmd, stage, pool_, written_);
  return written_++;
}

StatusOr<std::vector<uint64_t>> TimestampQueries::read_ticks() {
  KILN_RETURN_IF_ERROR(device_.status());
  std::vector<uint64_t> ticks(written_);
  if (written_ == 0) return ticks;
  VkResult r = device_.fn().vkGetQueryPoolResults(device_.handle(), pool_, 0, written_, ticks.size() * sizeof(uint64_t),
                                                  ticks.data(), sizeof(uint64_t),
                                                  VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
  KILN_RETURN_IF_ERROR(device_.check(r, "vkGetQueryPoolResults"));
  for (uint64_t& t : ticks) t &= mask_;
  return ticks;
}

double TimestampQueries::elapsed_ns(uint64_t begin, uint64_t end) const {
  uint64_t delta = (end - begin) & mask_;
  return static_cast<double>(delta) * device_.capabilities().timestamp_period_ns;
}

}  // namespace kiln::vk
