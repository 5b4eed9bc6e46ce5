// Test helper for the C API's Vulkan tests: a VkBuffer the "game" owns.
#pragma once

#include <cstddef>
#include <cstring>
#include <vector>

#include "platform/vulkan/device.h"

namespace kiln::capi::testing {

// A host-visible, coherent VkBuffer the "game" owns, created on its device
// with plain Vulkan calls.
class HostBuffer {
 public:
  HostBuffer(kiln::vk::Device& device, VkDeviceSize size) : device_(device), size_(size) {
    const VolkDeviceTable& fn = device.fn();
    VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    info.size = size;
    info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                 VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    if (fn.vkCreateBuffer(device.handle(), &info, nullptr, &buffer_) != VK_SUCCESS) return;
    VkMemoryRequirements req;
    fn.vkGetBufferMemoryRequirements(device.handle(), buffer_, &req);
    auto type = device.find_memory_type(req.memoryTypeBits,
                                        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    if (!type.ok()) return;
    VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    alloc.allocationSize = req.size;
    alloc.memoryTypeIndex = *type;
    if (fn.vkAllocateMemory(device.handle(), &alloc, nullptr, &memory_) != VK_SUCCESS) return;
    if (fn.vkBindBufferMemory(device.handle(), buffer_, memory_, 0) != VK_SUCCESS) return;
    void* p = nullptr;
    if (fn.vkMapMemory(device.handle(), memory_, 0, VK_WHOLE_SIZE, 0, &p) != VK_SUCCESS) return;
    mapped_ = static_cast<std::byte*>(p);
  }
  ~HostBuffer() {
    const VolkDeviceTable& fn = device_.fn();
    if (mapped_) fn.vkUnmapMemory(device_.handle(), memory_);
    if (buffer_ != VK_NULL_HANDLE) fn.vkDestroyBuffer(device_.handle(), buffer_, nullptr);
    if (memory_ != VK_NULL_HANDLE) fn.vkFreeMemory(device_.handle(), memory_, nullptr);
  }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  bool ok() const { return mapped_ != nullptr; }
  VkBuffer handle() const { return buffer_; }
  VkDeviceSize size() const { return size_; }
  void write(VkDeviceSize offset, const std::vector<float>& v) {
    std::memcpy(mapped_ + offset, v.data(), v.size() * sizeof(float));
  }
  void write_bytes(VkDeviceSize offset, const void* data, size_t bytes) { std::memcpy(mapped_ + offset, data, bytes); }
  void read_bytes(VkDeviceSize offset, void* data, size_t bytes) const { std::memcpy(data, mapped_ + offset, bytes); }
  std::vector<float> read(VkDeviceSize offset, size_t count) const {
    std::vector<float> v(count);
    std::memcpy(v.data(), mapped_ + offset, count * sizeof(float));
    return v;
  }

 private:
  kiln::vk::Device& device_;
  VkDeviceSize size_ = 0;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  std::byte* mapped_ = nullptr;
};

}  // namespace kiln::capi::testing
