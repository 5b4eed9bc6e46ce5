// Command submission: record a command buffer, submit it, wait for it, or
// submit without waiting and wait (or poll) later.
//
// Uploads, downloads, tests and the CLI need "run these commands and wait"
// without building an execution plan; asynchronous model runs need "submit
// these commands after these semaphores, tell me when they are done".
// Completion is tracked with a timeline semaphore when the device has them
// (Vulkan 1.2 core; one semaphore, one increasing value per submission) and
// with a fence otherwise (blocking submissions only). The streaming runtime
// records its own command buffers; it only borrows the device.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/base/status.h"
#include "platform/vulkan/device.h"

namespace kiln::vk {

// A semaphore a submission waits on or signals. `value` is the timeline
// value (ignored for a binary semaphore); `stage` (waits only) is the
// stages that wait, 0 meaning all commands.
struct SemaphoreUse {
  VkSemaphore semaphore = VK_NULL_HANDLE;
  uint64_t value = 0;
  VkPipelineStageFlags stage = 0;
};

// Other semaphores of a submission: the host's, borrowed.
struct SubmitSync {
  std::vector<SemaphoreUse> waits;
  std::vector<SemaphoreUse> signals;
};

class Submitter {
 public:
  // `device` is borrowed and must outlive the Submitter. Submissions go to
  // the device's queue `queue_index` (taken modulo Device::queue_count()).
  // Errors: VkResult errors creating the pool, command buffer or semaphore.
  static StatusOr<std::unique_ptr<Submitter>> create(Device& device, uint32_t queue_index = 0);
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
  // pending. Thread-safe; VK_NULL_HANDLE is ignored.
  void release(VkCommandBuffer cmd);
  // Submits a recorded command buffer and waits for it, completing like
  // run(). Thread-safe. Errors: as run().
  Status submit(VkCommandBuffer cmd);

  // Submits `cmds` in one batch after `sync.waits` and after every earlier
  // submission of this Submitter (a wait on its own timeline: the memory
  // Kiln's submissions share is then ordered), signals the next timeline
  // value and `sync.signals`, and returns that value at once: no CPU wait.
  // Thread-safe. Errors: kFailedPrecondition without timeline semaphores,
  // the device's sticky loss, VkResult errors.
  StatusOr<uint64_t> submit_async(const std::vector<VkCommandBuffer>& cmds, const SubmitSync& sync = {});
  // Waits until submission `value` (from submit_async) completed: polls for
  // at most the spin bound, then blocks for at most `timeout_ns` in all.
  // Thread-safe; does not hold the Submitter's lock while it waits.
  // Errors: kUnavailable when the timeout passed first (the submission stays
  // pending), kInvalidArgument for a value never submitted, the device's
  // loss (recorded on the device).
  Status wait(uint64_t value, uint64_t timeout_ns = UINT64_MAX);
  // Whether submission `value` completed (no waiting; without a timeline,
  // every submission was waited for). Errors: as wait().
  StatusOr<bool> reached(uint64_t value);
  // Waits for every submission made so far.
  Status wait_all() { return wait(submitted()); }

  // Makes the next submission (of any kind) also wait for `use` on the GPU:
  // work of another queue whose memory writes this queue's commands read
  // (on one queue, submission order and barriers suffice; across queues
  // only a semaphore orders them). Ignored without timeline semaphores
  // (then the device has one queue). Thread-safe.
  void wait_before_next(const SemaphoreUse& use);
  // The device queue this Submitter submits to.
  uint32_t queue_index() const { return queue_index_; }

  // How long wait() (and so run() and submit()) polls before blocking:
  // kAutoSpin (the default) follows the submissions' durations; see
  // wait_spin.h.
  void set_spin(std::chrono::microseconds spin) { spin_us_.store(spin.count(), std::memory_order_relaxed); }

  // Whether completion uses a timeline semaphore (else a fence).
  bool uses_timeline() const { return timeline_ != VK_NULL_HANDLE; }
  // The timeline semaphore submission values are signalled on (null
  // without timeline semaphores): others may wait on it on the GPU.
  VkSemaphore timeline() const { return timeline_; }
  // The value of the last submission (0 before the first).
  uint64_t submitted() const { return submitted_.load(std::memory_order_acquire); }

  Device& device() const { return device_; }

 private:
  Submitter(Device& device, uint32_t queue_index) : device_(device), queue_index_(queue_index) {}
  // Submits `cmds` with `sync`, signals the next timeline value (or the
  // fence) and returns it. Caller holds mutex_.
  StatusOr<uint64_t> submit_locked(const std::vector<VkCommandBuffer>& cmds, const SubmitSync& sync);
  // Waits for what submit_locked returned (the fence when there is no
  // timeline: then the caller holds mutex_).
  Status wait_submitted(uint64_t value);

  Device& device_;
  const uint32_t queue_index_;
  std::vector<SemaphoreUse> next_waits_;  // guarded by mutex_; see wait_before_next()
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;
  VkSemaphore timeline_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  std::atomic<bool> fence_pending_{false};  // a fence wait failed: the fence's state is unknown
  mutable std::mutex mutex_;
  // Written under mutex_, read anywhere (wait() runs under run()'s lock).
  std::atomic<uint64_t> submitted_{0};
  std::atomic<int64_t> spin_us_{-1};  // kAutoSpin
  // For the automatic spin: when the last submission was made (steady
  // clock, ns), its value, and how long the last timed one took until a
  // wait saw it complete (0: none yet).
  std::atomic<int64_t> last_submit_ns_{0};
  std::atomic<uint64_t> last_submit_value_{0};
  std::atomic<int64_t> last_duration_ns_{0};
};

}  // namespace kiln::vk
