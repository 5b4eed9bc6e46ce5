// HostSecondaries (host_secondaries.h): one pool of the device's queue
// family, and the secondary command buffers recorded from it.
#include "engine/runtime/vulkan/host_secondaries.h"

namespace kiln::runtime {

HostSecondaries::~HostSecondaries() {
  if (pool_ != VK_NULL_HANDLE) device_.fn().vkDestroyCommandPool(device_.handle(), pool_, nullptr);
}

StatusOr<VkCommandBuffer> HostSecondaries::record(const std::function<Status(VkCommandBuffer)>& fill) {
  const VolkDeviceTable& fn = device_.fn();
  if (pool_ == VK_NULL_HANDLE) {
    VkCommandPoolCreateInfo info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    info.queueFamilyIndex = device_.queue_family();
    KILN_RETURN_IF_ERROR(
        device_.check(fn.vkCreateCommandPool(device_.handle(), &info, nullptr, &pool_), "vkCreateCommandPool"));
  }
  VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  alloc.commandPool = pool_;
  alloc.level = VK_COMMAND_BUFFER_LEVEL_SECONDARY;
  alloc.commandBufferCount = 1;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  KILN_RETURN_IF_ERROR(device_.check(fn.vkAllocateCommandBuffers(device_.handle(), &alloc, &cmd),
                                     "vkAllocateCommandBuffers"));
  // Outside any render pass: no render pass or framebuffer to inherit.
  VkCommandBufferInheritanceInfo inheritance{VK_STRUCTURE_TYPE_COMMAND_BUFFER_INHERITANCE_INFO};
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT;
  begin.pInheritanceInfo = &inheritance;
  Status status = device_.check(fn.vkBeginCommandBuffer(cmd, &begin), "vkBeginCommandBuffer");
  if (status.ok()) {
    status = fill(cmd);
    const VkResult end = fn.vkEndCommandBuffer(cmd);
    if (status.ok()) status = device_.check(end, "vkEndCommandBuffer");
  }
  if (!status.ok()) {
    fn.vkFreeCommandBuffers(device_.handle(), pool_, 1, &cmd);
    return status;
  }
  return cmd;
}

void HostSecondaries::free(VkCommandBuffer cmd) {
  if (cmd != VK_NULL_HANDLE && pool_ != VK_NULL_HANDLE)
    device_.fn().vkFreeCommandBuffers(device_.handle(), pool_, 1, &cmd);
}

}  // namespace kiln::runtime
