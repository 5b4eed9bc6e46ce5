// Host-visible mapped buffer (see host_buffer.h).
#include "platform/vulkan/host_buffer.h"

#include "platform/vulkan/fault_injection.h"

namespace kiln::vk {

StatusOr<std::unique_ptr<HostBuffer>> HostBuffer::create(Device& device, VkDeviceSize size) {
  if (size == 0) return invalid_argument("HostBuffer size must be positive");
  KILN_RETURN_IF_ERROR(device.status());
  auto b = std::unique_ptr<HostBuffer>(new HostBuffer(device));
  const VolkDeviceTable& fn = device.fn();
  VkDevice dev = device.handle();
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = size;
  info.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  KILN_RETURN_IF_ERROR(device.check(fn.vkCreateBuffer(dev, &info, nullptr, &b->buffer_), "vkCreateBuffer (host)"));
  VkMemoryRequirements req;
  fn.vkGetBufferMemoryRequirements(dev, b->buffer_, &req);
  // Cached memory makes the host's reads of outputs fast; coherent avoids
  // explicit flushes. Prefer both.
  KILN_ASSIGN_OR_RETURN(uint32_t type,
                        device.find_memory_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT,
                                                VK_MEMORY_PROPERTY_HOST_COHERENT_BIT | VK_MEMORY_PROPERTY_HOST_CACHED_BIT));
  b->coherent_ = (device.memory_properties().memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) != 0;
  VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  alloc.allocationSize = req.size;
  alloc.memoryTypeIndex = type;
  KILN_RETURN_IF_ERROR(device.check(call_unless_fault(FaultSite::kAllocation,
                                                      [&] { return fn.vkAllocateMemory(dev, &alloc, nullptr, &b->memory_); }),
                                    "vkAllocateMemory (host)"));
  KILN_RETURN_IF_ERROR(device.check(fn.vkBindBufferMemory(dev, b->buffer_, b->memory_, 0), "vkBindBufferMemory"));
  void* mapped = nullptr;
  KILN_RETURN_IF_ERROR(device.check(fn.vkMapMemory(dev, b->memory_, 0, VK_WHOLE_SIZE, 0, &mapped), "vkMapMemory"));
  b->mapped_ = static_cast<std::byte*>(mapped);
  b->size_ = size;
  return b;
}

HostBuffer::~HostBuffer() {
  const VolkDeviceTable& fn = device_.fn();
  if (buffer_ != VK_NULL_HANDLE) fn.vkDestroyBuffer(device_.handle(), buffer_, nullptr);
  if (memory_ != VK_NULL_HANDLE) {
    if (mapped_ != nullptr) fn.vkUnmapMemory(device_.handle(), memory_);
    fn.vkFreeMemory(device_.handle(), memory_, nullptr);
  }
}

Status HostBuffer::flush() {
  if (coherent_) return ok_status();
  VkMappedMemoryRange range{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE};
  range.memory = memory_;
  range.size = VK_WHOLE_SIZE;
  return device_.check(device_.fn().vkFlushMappedMemoryRanges(device_.handle(), 1, &range), "vkFlushMappedMemoryRanges");
}

Status HostBuffer::invalidate() {
  if (coherent_) return ok_status();
  VkMappedMemoryRange range{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE};
  range.memory = memory_;
  range.size = VK_WHOLE_SIZE;
  return device_.check(device_.fn().vkInvalidateMappedMemoryRanges(device_.handle(), 1, &range),
                       "vkInvalidateMappedMemoryRanges");
}

}  // namespace kiln::vk
