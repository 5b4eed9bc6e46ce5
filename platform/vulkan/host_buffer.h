// A buffer in host-visible memory, mapped for the object's lifetime.
//
// The runtime stages a run's inputs and outputs through one of these and
// records the copies to and from device memory into the run's own command
// buffer, so a run is one submission instead of upload + compute + download.
#pragma once

#include <cstddef>
#include <memory>

#include "engine/base/status.h"
#include "platform/vulkan/device.h"

namespace kiln::vk {

class HostBuffer {
 public:
  // `size` bytes usable as transfer source and destination. `device` is
  // borrowed and must outlive the buffer. Errors: kInvalidArgument (size 0),
  // kNotFound (no host-visible memory), VkResult errors.
  static StatusOr<std::unique_ptr<HostBuffer>> create(Device& device, VkDeviceSize size);
  ~HostBuffer();
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  VkBuffer handle() const { return buffer_; }
  VkDeviceSize size() const { return size_; }
  std::byte* data() const { return mapped_; }
  // Makes host writes visible to the device / device writes visible to the
  // host; no-ops on coherent memory.
  Status flush();
  Status invalidate();

 private:
  explicit HostBuffer(Device& device) : device_(device) {}
  Device& device_;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  VkDeviceSize size_ = 0;
  bool coherent_ = true;
  std::byte* mapped_ = nullptr;
};

}  // namespace kiln::vk
