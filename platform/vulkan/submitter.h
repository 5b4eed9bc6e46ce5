// One-shot command submission: record a command buffer, submit it, wait.
//
// Uploads, downloads, tests and the CLI need "run these commands and wait"
// without building an execution plan. Completion is tracked with a timeline
// semaphore when the device has them (Vulkan 1.2 core; one semaphore, one
// increasing value per submission) and with a fence otherwise. The streaming
// runtime records its own command buffers; it only borrows the device.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

#include "engine/base/status.h"
#include "platform/vulkan/device.h"

namespace kiln::vk {

class Submitter {
 public:
  // `device` is borrowed and must outlive the Submitter.
  // Errors: VkResult errors creating the pool, command buffer or semaphore.
  static StatusOr<std::unique_ptr<Submitter>> create(Device& device);
  ~Submitter();
  Submitter(const Submitter&) = delete;
  Submitter& operator=(const Submitter&) = delete;

  // Begins a command buffer, lets `record` fill it (an error from `record`
  // abandons the submission and is returned), submits it on the device's
  // queue and waits for it to finish. Thread-safe (submissions from several
  // threads are serialized). Errors: the device's sticky loss, VkResult
  // errors (a loss during the wait is recorded on the device).
  Status run(const std::function<Status(VkCommandBuffer)>& record);

  // A command buffer from the Submitter's pool that the caller records once
  // and submits many times with submit(); freed with the Submitter. Record
  // it only while no run() of this Submitter is in flight (the pool is
  // shared). Errors: VkResult errors.
  StatusOr<VkCommandBuffer> allocate();
  // Returns a command buffer from allocate() to the pool; it must not be
  // pending (every submit() waits, so it is not once submit returned).
  // Thread-safe; VK_NULL_HANDLE is ignored.
  void release(VkCommandBuffer cmd);
  // Submits a recorded command buffer and waits for it, completing like
  // run(). Thread-safe. Errors: as run().
  Status submit(VkCommandBuffer cmd);

  // Whether completion uses a timeline semaphore (else a fence).
  bool uses_timeline() const { return timeline_ != VK_NULL_HANDLE; }
  // The number of submissions that have completed.
  uint64_t completed() const;

  Device& device() const { return device_; }

 private:
  explicit Submitter(Device& device) : device_(device) {}
  // Submits `cmd`, signals the next timeline value (or the fence), waits.
  // Caller holds mutex_.
  Status submit_locked(VkCommandBuffer cmd);

  Device& device_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;
  VkSemaphore timeline_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  mutable std::mutex mutex_;
  uint64_t submitted_ = 0;
  uint64_t completed_ = 0;
};

}  // namespace kiln::vk
