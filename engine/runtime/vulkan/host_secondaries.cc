// HostSecondaries (host_secondaries.h): pools per queue family, and the
// secondary command buffers recorded from them.
#include "engine/runtime/vulkan/host_secondaries.h"

#include <string>
#include <vector>

namespace kiln::runtime {

HostSecondaries::~HostSecondaries() {
  for (const auto& [family, pool] : pools_) device_.fn().vkDestroyCommandPool(device_.handle(), pool, nullptr);
}

StatusOr<VkCommandPool> HostSecondaries::pool(uint32_t family) {
  auto it = pools_.find(family);
  if (it != pools_.end()) return it->second;
  uint32_t count = 0;
  device_.instance_fn().vkGetPhysicalDeviceQueueFamilyProperties(device_.physical_device(), &count, nullptr);
  std::vector<VkQueueFamilyProperties> families(count);
  device_.instance_fn().vkGetPhysicalDeviceQueueFamilyProperties(device_.physical_device(), &count, families.data());
  if (family >= count)
    return invalid_argument("queue family " + std::to_string(family) + " is not one of the device's " +
                            std::to_string(count) + " queue families");
  if (!(families[family].queueFlags & VK_QUEUE_COMPUTE_BIT))
    return invalid_argument("queue family " + std::to_string(family) +
                            " cannot run compute work; the model's commands need a family with VK_QUEUE_COMPUTE_BIT");
  VkCommandPoolCreateInfo info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  info.queueFamilyIndex = family;
  VkCommandPool pool = VK_NULL_HANDLE;
  KILN_RETURN_IF_ERROR(
      device_.check(device_.fn().vkCreateCommandPool(device_.handle(), &info, nullptr, &pool), "vkCreateCommandPool"));
  pools_.emplace(family, pool);
  return pool;
}

StatusOr<VkCommandBuffer> HostSecondaries::record(uint32_t family,
                                                  const std::function<Status(VkCommandBuffer)>& fill) {
  KILN_ASSIGN_OR_RETURN(VkCommandPool pool, this->pool(family));
  const VolkDeviceTable& fn = device_.fn();
  VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  alloc.commandPool = pool;
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
    fn.vkFreeCommandBuffers(device_.handle(), pool, 1, &cmd);
    return status;
  }
  return cmd;
}

void HostSecondaries::free(uint32_t family, VkCommandBuffer cmd) {
  auto it = pools_.find(family);
  if (cmd == VK_NULL_HANDLE || it == pools_.end()) return;
  device_.fn().vkFreeCommandBuffers(device_.handle(), it->second, 1, &cmd);
}

}  // namespace kiln::runtime
