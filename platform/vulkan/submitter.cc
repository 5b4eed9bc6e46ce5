// One-shot command submission; see submitter.h.
#include "platform/vulkan/submitter.h"

#include <chrono>
#include <thread>

namespace kiln::vk {

namespace {
// How long a submission is polled before blocking (see submit_locked): a
// blocking wait can wake milliseconds late, more than a model takes to run.
constexpr int kSpinMicros = 50000;
}  // namespace

StatusOr<std::unique_ptr<Submitter>> Submitter::create(Device& device) {
  KILN_RETURN_IF_ERROR(device.status());
  const VolkDeviceTable& fn = device.fn();
  VkDevice dev = device.handle();
  std::unique_ptr<Submitter> s(new Submitter(device));

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
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // run() always waits, so nothing is pending unless a wait failed (device
    // lost); idle the queue so destroying the pool is safe either way.
    if (completed_ != submitted_) (void)device_.wait_idle();
  }
  if (timeline_ != VK_NULL_HANDLE) fn.vkDestroySemaphore(dev, timeline_, nullptr);
  if (fence_ != VK_NULL_HANDLE) fn.vkDestroyFence(dev, fence_, nullptr);
  if (pool_ != VK_NULL_HANDLE) fn.vkDestroyCommandPool(dev, pool_, nullptr);
}

uint64_t Submitter::completed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return completed_;
}

Status Submitter::run(const std::function<Status(VkCommandBuffer)>& record) {
  std::lock_guard<std::mutex> lock(mutex_);
  KILN_RETURN_IF_ERROR(device_.status());
  if (completed_ != submitted_) {
    return failed_precondition("an earlier submission on this Submitter never completed");
  }
  const VolkDeviceTable& fn = device_.fn();
  KILN_RETURN_IF_ERROR(device_.check(fn.vkResetCommandBuffer(cmd_, 0), "vkResetCommandBuffer"));
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  KILN_RETURN_IF_ERROR(device_.check(fn.vkBeginCommandBuffer(cmd_, &begin), "vkBeginCommandBuffer"));
  Status recorded = record(cmd_);
  VkResult end = fn.vkEndCommandBuffer(cmd_);
  KILN_RETURN_IF_ERROR(recorded);
  KILN_RETURN_IF_ERROR(device_.check(end, "vkEndCommandBuffer"));

  return submit_locked(cmd_);
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
  std::lock_guard<std::mutex> lock(mutex_);
  KILN_RETURN_IF_ERROR(device_.status());
  if (completed_ != submitted_) {
    return failed_precondition("an earlier submission on this Submitter never completed");
  }
  return submit_locked(cmd);
}

Status Submitter::submit_locked(VkCommandBuffer cmd) {
  const VolkDeviceTable& fn = device_.fn();
  VkDevice dev = device_.handle();
  const uint64_t value = submitted_ + 1;
  VkTimelineSemaphoreSubmitInfo timeline_info{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
  timeline_info.signalSemaphoreValueCount = 1;
  timeline_info.pSignalSemaphoreValues = &value;
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &cmd;
  if (timeline_ != VK_NULL_HANDLE) {
    submit.pNext = &timeline_info;
    submit.signalSemaphoreCount = 1;
    submit.pSignalSemaphores = &timeline_;
  }
  KILN_RETURN_IF_ERROR(device_.queue_submit(1, &submit, fence_));
  submitted_ = value;

  if (timeline_ != VK_NULL_HANDLE) {
    // Inference submissions are short: poll the counter for a moment before
    // a blocking wait, whose wake-up can cost more than a small model runs.
    const auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(kSpinMicros);
    uint64_t reached = 0;
    while (std::chrono::steady_clock::now() < spin_until) {
      KILN_RETURN_IF_ERROR(device_.check(fn.vkGetSemaphoreCounterValue(dev, timeline_, &reached),
                                         "vkGetSemaphoreCounterValue"));
      if (reached >= value) break;
      std::this_thread::yield();
    }
    VkSemaphoreWaitInfo wait{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO};
    wait.semaphoreCount = 1;
    wait.pSemaphores = &timeline_;
    wait.pValues = &value;
    if (reached < value)
      KILN_RETURN_IF_ERROR(device_.check(fn.vkWaitSemaphores(dev, &wait, UINT64_MAX), "vkWaitSemaphores"));
  } else {
    KILN_RETURN_IF_ERROR(device_.check(fn.vkWaitForFences(dev, 1, &fence_, VK_TRUE, UINT64_MAX), "vkWaitForFences"));
    KILN_RETURN_IF_ERROR(device_.check(fn.vkResetFences(dev, 1, &fence_), "vkResetFences"));
  }
  completed_ = value;
  return ok_status();
}

}  // namespace kiln::vk
