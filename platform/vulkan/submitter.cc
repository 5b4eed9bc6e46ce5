// Command submission; see submitter.h.
#include "platform/vulkan/submitter.h"

#include <algorithm>
#include <string>
#include <thread>

#include "platform/vulkan/wait_spin.h"

namespace kiln::vk {
namespace {

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

StatusOr<std::unique_ptr<Submitter>> Submitter::create(Device& device, uint32_t queue_index) {
  KILN_RETURN_IF_ERROR(device.status());
  const VolkDeviceTable& fn = device.fn();
  VkDevice dev = device.handle();
  std::unique_ptr<Submitter> s(new Submitter(device, queue_index % std::max(device.queue_count(), 1u)));

  VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT | VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
  pool_info.queueFamilyIndex = device.queue_family();
  KILN_RETURN_IF_ERROR(device.check(fn.vkCreateCommandPool(dev, &pool_info, nullptr, &s->pool_), "vkCreateCommandPool"));
  VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  alloc.commandPool = s->pool_;
  alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  alloc.commandBufferCount = 1;
  KILN_RETURN_IF_ERROR(device.check(fn.vkAllocateCommandBuffers(dev, &alloc, &s->cmd_), "vkAllocateCommandBuffers"));

  if (device.enabled().timeline_semaphore && fn.vkWaitSemaphores != nullptr) {
    VkSemaphoreTypeCreateInfo type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
    type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
    type.initialValue = 0;
    VkSemaphoreCreateInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
    info.pNext = &type;
    KILN_RETURN_IF_ERROR(device.check(fn.vkCreateSemaphore(dev, &info, nullptr, &s->timeline_), "vkCreateSemaphore"));
  } else {
    VkFenceCreateInfo info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    KILN_RETURN_IF_ERROR(device.check(fn.vkCreateFence(dev, &info, nullptr, &s->fence_), "vkCreateFence"));
  }
  return s;
}

Submitter::~Submitter() {
  const VolkDeviceTable& fn = device_.fn();
  VkDevice dev = device_.handle();
  // Submissions may be pending (submit_async, or a failed wait): idle the
  // queue so destroying the pool and semaphore is safe either way.
  bool pending = fence_pending_;
  if (timeline_ != VK_NULL_HANDLE) {
    auto done = reached(submitted());
    pending = !done.ok() || !*done;
  }
  if (pending) (void)device_.wait_idle();
  if (timeline_ != VK_NULL_HANDLE) fn.vkDestroySemaphore(dev, timeline_, nullptr);
  if (fence_ != VK_NULL_HANDLE) fn.vkDestroyFence(dev, fence_, nullptr);
  if (pool_ != VK_NULL_HANDLE) fn.vkDestroyCommandPool(dev, pool_, nullptr);
}

Status Submitter::run(const std::function<Status(VkCommandBuffer)>& record) {
  std::lock_guard<std::mutex> lock(mutex_);
  KILN_RETURN_IF_ERROR(device_.status());
  const VolkDeviceTable& fn = device_.fn();
  // cmd_ is not pending: every run() waited for it under this lock.
  KILN_RETURN_IF_ERROR(device_.check(fn.vkResetCommandBuffer(cmd_, 0), "vkResetCommandBuffer"));
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  KILN_RETURN_IF_ERROR(device_.check(fn.vkBeginCommandBuffer(cmd_, &begin), "vkBeginCommandBuffer"));
  Status recorded = record(cmd_);
  VkResult end = fn.vkEndCommandBuffer(cmd_);
  KILN_RETURN_IF_ERROR(recorded);
  KILN_RETURN_IF_ERROR(device_.check(end, "vkEndCommandBuffer"));
  KILN_ASSIGN_OR_RETURN(const uint64_t value, submit_locked({cmd_}, {}));
  return wait_submitted(value);
}

StatusOr<VkCommandBuffer> Submitter::allocate() {
  std::lock_guard<std::mutex> lock(mutex_);
  KILN_RETURN_IF_ERROR(device_.status());
  VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  alloc.commandPool = pool_;
  alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  alloc.commandBufferCount = 1;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  KILN_RETURN_IF_ERROR(device_.check(device_.fn().vkAllocateCommandBuffers(device_.handle(), &alloc, &cmd),
                                     "vkAllocateCommandBuffers"));
  return cmd;
}

void Submitter::release(VkCommandBuffer cmd) {
  if (cmd == VK_NULL_HANDLE) return;
  std::lock_guard<std::mutex> lock(mutex_);
  device_.fn().vkFreeCommandBuffers(device_.handle(), pool_, 1, &cmd);
}

Status Submitter::submit(VkCommandBuffer cmd) {
  if (timeline_ == VK_NULL_HANDLE) {
    std::lock_guard<std::mutex> lock(mutex_);  // the fence is waited for under the lock
    KILN_RETURN_IF_ERROR(device_.status());
    KILN_ASSIGN_OR_RETURN(const uint64_t value, submit_locked({cmd}, {}));
    return wait_submitted(value);
  }
  KILN_ASSIGN_OR_RETURN(const uint64_t value, submit_async({cmd}));
  return wait(value);
}

StatusOr<uint64_t> Submitter::submit_async(const std::vector<VkCommandBuffer>& cmds, const SubmitSync& sync) {
  if (timeline_ == VK_NULL_HANDLE)
    return failed_precondition("asynchronous submission needs timeline semaphores, which the device does not have "
                               "enabled (Vulkan 1.2 timelineSemaphore)");
  std::lock_guard<std::mutex> lock(mutex_);
  KILN_RETURN_IF_ERROR(device_.status());
  return submit_locked(cmds, sync);
}

StatusOr<uint64_t> Submitter::submit_locked(const std::vector<VkCommandBuffer>& cmds, const SubmitSync& sync) {
  if (fence_pending_) return failed_precondition("an earlier submission on this Submitter never completed");
  const uint64_t previous = submitted_.load(std::memory_order_relaxed);
  const uint64_t value = previous + 1;
  std::vector<VkSemaphore> wait_semaphores, signal_semaphores;
  std::vector<uint64_t> wait_values, signal_values;
  std::vector<VkPipelineStageFlags> wait_stages;
  for (const SemaphoreUse& w : sync.waits) {
    wait_semaphores.push_back(w.semaphore);
    wait_values.push_back(w.value);
    wait_stages.push_back(w.stage != 0 ? w.stage : VkPipelineStageFlags{VK_PIPELINE_STAGE_ALL_COMMANDS_BIT});
  }
  for (const SemaphoreUse& s : sync.signals) {
    signal_semaphores.push_back(s.semaphore);
    signal_values.push_back(s.value);
  }
  if (timeline_ != VK_NULL_HANDLE) {
    for (const SemaphoreUse& w : next_waits_) {
      wait_semaphores.push_back(w.semaphore);
      wait_values.push_back(w.value);
      wait_stages.push_back(w.stage != 0 ? w.stage : VkPipelineStageFlags{VK_PIPELINE_STAGE_ALL_COMMANDS_BIT});
    }
    // After the previous submission: its signal covers every command before
    // it on the queue, and the wait makes their memory writes visible.
    if (previous > 0) {
      wait_semaphores.push_back(timeline_);
      wait_values.push_back(previous);
      wait_stages.push_back(VK_PIPELINE_STAGE_ALL_COMMANDS_BIT);
    }
    signal_semaphores.push_back(timeline_);
    signal_values.push_back(value);
  }
  VkTimelineSemaphoreSubmitInfo timeline_info{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
  timeline_info.waitSemaphoreValueCount = static_cast<uint32_t>(wait_values.size());
  timeline_info.pWaitSemaphoreValues = wait_values.data();
  timeline_info.signalSemaphoreValueCount = static_cast<uint32_t>(signal_values.size());
  timeline_info.pSignalSemaphoreValues = signal_values.data();
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  if (timeline_ != VK_NULL_HANDLE) submit.pNext = &timeline_info;
  submit.waitSemaphoreCount = static_cast<uint32_t>(wait_semaphores.size());
  submit.pWaitSemaphores = wait_semaphores.data();
  submit.pWaitDstStageMask = wait_stages.data();
  submit.commandBufferCount = static_cast<uint32_t>(cmds.size());
  submit.pCommandBuffers = cmds.data();
  submit.signalSemaphoreCount = static_cast<uint32_t>(signal_semaphores.size());
  submit.pSignalSemaphores = signal_semaphores.data();
  KILN_RETURN_IF_ERROR(device_.queue_submit(1, &submit, fence_, queue_index_));
  next_waits_.clear();
  submitted_.store(value, std::memory_order_release);
  last_submit_ns_.store(steady_ns(), std::memory_order_relaxed);
  last_submit_value_.store(value, std::memory_order_relaxed);
  if (fence_ != VK_NULL_HANDLE) fence_pending_ = true;
  return value;
}

Status Submitter::wait_submitted(uint64_t value) {
  if (timeline_ != VK_NULL_HANDLE) return wait(value);
  const VolkDeviceTable& fn = device_.fn();
  KILN_RETURN_IF_ERROR(
      device_.check(fn.vkWaitForFences(device_.handle(), 1, &fence_, VK_TRUE, UINT64_MAX), "vkWaitForFences"));
  KILN_RETURN_IF_ERROR(device_.check(fn.vkResetFences(device_.handle(), 1, &fence_), "vkResetFences"));
  fence_pending_ = false;
  return ok_status();
}

void Submitter::wait_before_next(const SemaphoreUse& use) {
  if (use.semaphore == VK_NULL_HANDLE || timeline_ == VK_NULL_HANDLE) return;
  std::lock_guard<std::mutex> lock(mutex_);
  next_waits_.push_back(use);
}

StatusOr<bool> Submitter::reached(uint64_t value) {
  if (value > submitted())
    return invalid_argument("submission " + std::to_string(value) + " was never made (the last is " +
                            std::to_string(submitted()) + ")");
  // With a fence every submission was waited for, unless that wait failed.
  if (timeline_ == VK_NULL_HANDLE) return !(fence_pending_.load() && value == submitted());
  uint64_t counter = 0;
  KILN_RETURN_IF_ERROR(device_.check(device_.fn().vkGetSemaphoreCounterValue(device_.handle(), timeline_, &counter),
                                     "vkGetSemaphoreCounterValue"));
  return counter >= value;
}

Status Submitter::wait(uint64_t value, uint64_t timeout_ns) {
  KILN_ASSIGN_OR_RETURN(bool done, reached(value));
  if (done) return ok_status();
  if (timeline_ == VK_NULL_HANDLE) return failed_precondition("an earlier submission on this Submitter never completed");
  const auto start = std::chrono::steady_clock::now();
  const int64_t fixed = spin_us_.load(std::memory_order_relaxed);
  const std::chrono::nanoseconds spin =
      fixed >= 0 ? std::chrono::nanoseconds(std::chrono::microseconds(fixed))
                 : auto_spin(std::chrono::nanoseconds(last_duration_ns_.load(std::memory_order_relaxed)));
  const auto spin_until = start + wait_spin_bound(spin, timeout_ns);
  while (!done && std::chrono::steady_clock::now() < spin_until) {
    std::this_thread::yield();
    KILN_ASSIGN_OR_RETURN(done, reached(value));
  }
  // How long the newest submission took, for the next automatic spin.
  const auto note_duration = [&] {
    if (value != last_submit_value_.load(std::memory_order_relaxed)) return;
    last_duration_ns_.store(steady_ns() - last_submit_ns_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  };
  if (done) {
    note_duration();
    return ok_status();
  }
  const uint64_t spent = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
  const uint64_t left = timeout_ns == UINT64_MAX ? UINT64_MAX : (timeout_ns > spent ? timeout_ns - spent : 0);
  VkSemaphoreWaitInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO};
  info.semaphoreCount = 1;
  info.pSemaphores = &timeline_;
  info.pValues = &value;
  const VkResult r = device_.fn().vkWaitSemaphores(device_.handle(), &info, left);
  if (r == VK_SUCCESS) note_duration();
  if (r == VK_TIMEOUT)
    return unavailable("submission " + std::to_string(value) + " did not complete within " +
                       std::to_string(timeout_ns) + " ns; it is still pending");
  return device_.check(r, "vkWaitSemaphores");
}

}  // namespace kiln::vk
