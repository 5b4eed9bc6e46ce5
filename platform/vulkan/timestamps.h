// GPU timestamps around recorded work, for the profiler and `kiln bench`.
//
// A query pool of N timestamps: reset() and write() are recorded into a
// command buffer; after it completes, read_ticks() fetches the raw values and
// elapsed_ns() converts a pair with the device's timestampPeriod, masking to
// the queue's valid bits.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/base/status.h"
#include "platform/vulkan/device.h"

namespace kiln::vk {

class TimestampQueries {
 public:
  // A pool of `capacity` timestamps. `device` is borrowed and must outlive
  // it. Errors: kUnimplemented when the device's queue has no timestamps
  // (timestampValidBits == 0), kInvalidArgument for capacity 0, VkResult errors.
  static StatusOr<std::unique_ptr<TimestampQueries>> create(Device& device, uint32_t capacity);
  ~TimestampQueries();
  TimestampQueries(const TimestampQueries&) = delete;
  TimestampQueries& operator=(const TimestampQueries&) = delete;

  // Records a reset of every query; call before the first write() in `cmd`.
  // Not thread-safe (one recorder at a time).
  void reset(VkCommandBuffer cmd);
  // Records a timestamp after all prior work reaches `stage`; returns its
  // index. Errors: kOutOfRange when all `capacity` slots are used since the
  // last reset().
  StatusOr<uint32_t> write(VkCommandBuffer cmd, VkPipelineStageFlagBits stage = VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT);

  // The raw values of the timestamps written since reset(), waiting for them
  // if needed. Call after the command buffer was submitted. Errors:
  // kDeviceLost, VkResult errors.
  StatusOr<std::vector<uint64_t>> read_ticks();
  // Nanoseconds from tick `begin` to tick `end` (wrap-around aware).
  double elapsed_ns(uint64_t begin, uint64_t end) const;

  uint32_t capacity() const { return capacity_; }
  uint32_t written() const { return written_; }

 private:
  explicit TimestampQueries(Device& device) : device_(device) {}
  Device& device_;
  VkQueryPool pool_ = VK_NULL_HANDLE;
  uint32_t capacity_ = 0;
  uint32_t written_ = 0;
  uint64_t mask_ = ~0ull;
};

}  // namespace kiln::vk
