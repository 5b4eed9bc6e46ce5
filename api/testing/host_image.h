// Test helper for the C API's image bindings: a 2D VkImage the "game" owns,
// with a view, filled and read back through its own command buffers on the
// device's queue (with the barriers synchronization validation asks for).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "api/testing/host_buffer.h"
#include "platform/vulkan/device.h"

namespace kiln::capi::testing {

class HostImage {
 public:
  HostImage(kiln::vk::Device& device, VkFormat format, uint32_t width, uint32_t height, uint32_t texel_bytes,
            VkImageUsageFlags usage)
      : device_(device), width_(width), height_(height), texel_bytes_(texel_bytes) {
    const VolkDeviceTable& fn = device.fn();
    VkImageCreateInfo info{VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO};
    info.imageType = VK_IMAGE_TYPE_2D;
    info.format = format;
    info.extent = {width, height, 1};
    info.mipLevels = 1;
    info.arrayLayers = 1;
    info.samples = VK_SAMPLE_COUNT_1_BIT;
    info.tiling = VK_IMAGE_TILING_OPTIMAL;
    info.usage = usage | VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT;
    info.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
    if (fn.vkCreateImage(device.handle(), &info, nullptr, &image_) != VK_SUCCESS) return;
    VkMemoryRequirements req;
    fn.vkGetImageMemoryRequirements(device.handle(), image_, &req);
    auto type = device.find_memory_type(req.memoryTypeBits, 0);
    if (!type.ok()) return;
    VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    alloc.allocationSize = req.size;
    alloc.memoryTypeIndex = *type;
    if (fn.vkAllocateMemory(device.handle(), &alloc, nullptr, &memory_) != VK_SUCCESS) return;
    if (fn.vkBindImageMemory(device.handle(), image_, memory_, 0) != VK_SUCCESS) return;
    VkImageViewCreateInfo view{VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO};
    view.image = image_;
    view.viewType = VK_IMAGE_VIEW_TYPE_2D;
    view.format = format;
    view.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
    if (fn.vkCreateImageView(device.handle(), &view, nullptr, &view_) != VK_SUCCESS) return;
    VkCommandPoolCreateInfo pool{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pool.queueFamilyIndex = device.queue_family();
    if (fn.vkCreateCommandPool(device.handle(), &pool, nullptr, &pool_) != VK_SUCCESS) return;
    VkFenceCreateInfo fence{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    if (fn.vkCreateFence(device.handle(), &fence, nullptr, &fence_) != VK_SUCCESS) return;
    ok_ = true;
  }
  ~HostImage() {
    const VolkDeviceTable& fn = device_.fn();
    if (fence_ != VK_NULL_HANDLE) fn.vkDestroyFence(device_.handle(), fence_, nullptr);
    if (pool_ != VK_NULL_HANDLE) fn.vkDestroyCommandPool(device_.handle(), pool_, nullptr);
    if (view_ != VK_NULL_HANDLE) fn.vkDestroyImageView(device_.handle(), view_, nullptr);
    if (image_ != VK_NULL_HANDLE) fn.vkDestroyImage(device_.handle(), image_, nullptr);
    if (memory_ != VK_NULL_HANDLE) fn.vkFreeMemory(device_.handle(), memory_, nullptr);
  }
  HostImage(const HostImage&) = delete;
  HostImage& operator=(const HostImage&) = delete;

  bool ok() const { return ok_; }
  VkImage handle() const { return image_; }
  VkImageView view() const { return view_; }
  VkDeviceSize bytes() const { return VkDeviceSize(width_) * height_ * texel_bytes_; }

  // Fills the image with `texels` (tightly packed rows) and leaves it in
  // `layout` for the compute shaders that read it next.
  bool upload(const std::vector<uint8_t>& texels, VkImageLayout layout) {
    HostBuffer staging(device_, bytes());
    if (!staging.ok() || texels.size() != bytes()) return false;
    staging.write_bytes(0, texels.data(), texels.size());
    return submit([&](VkCommandBuffer cmd) {
      barrier(cmd, VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
              0, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
      const VkBufferImageCopy region = this->region();
      device_.fn().vkCmdCopyBufferToImage(cmd, staging.handle(), image_, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1,
                                          &region);
      barrier(cmd, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, layout, VK_PIPELINE_STAGE_TRANSFER_BIT,
              VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
              VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT);
    });
  }

  // Puts the image in VK_IMAGE_LAYOUT_GENERAL (contents undefined), for a
  // storage image Kiln writes.
  bool make_general() {
    return submit([&](VkCommandBuffer cmd) {
      barrier(cmd, VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_GENERAL, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0,
              VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT);
    });
  }

  // The texels of an image in GENERAL that compute shaders wrote (earlier
  // on the queue); it stays in GENERAL.
  std::vector<uint8_t> download() {
    HostBuffer staging(device_, bytes());
    if (!staging.ok()) return {};
    const bool done = submit([&](VkCommandBuffer cmd) {
      barrier(cmd, VK_IMAGE_LAYOUT_GENERAL, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
              VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
      const VkBufferImageCopy region = this->region();
      device_.fn().vkCmdCopyImageToBuffer(cmd, image_, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, staging.handle(), 1,
                                          &region);
      barrier(cmd, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, VK_IMAGE_LAYOUT_GENERAL, VK_PIPELINE_STAGE_TRANSFER_BIT, 0,
              VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT);
      VkMemoryBarrier to_host{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
      to_host.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
      to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
      device_.fn().vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                                        &to_host, 0, nullptr, 0, nullptr);
    });
    if (!done) return {};
    std::vector<uint8_t> texels(bytes());
    staging.read_bytes(0, texels.data(), texels.size());
    return texels;
  }

 private:
  VkBufferImageCopy region() const {
    VkBufferImageCopy r{};
    r.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
    r.imageExtent = {width_, height_, 1};
    return r;
  }
  void barrier(VkCommandBuffer cmd, VkImageLayout from, VkImageLayout to, VkPipelineStageFlags src_stage,
               VkAccessFlags src_access, VkPipelineStageFlags dst_stage, VkAccessFlags dst_access) {
    VkImageMemoryBarrier b{VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER};
    b.oldLayout = from;
    b.newLayout = to;
    b.srcAccessMask = src_access;
    b.dstAccessMask = dst_access;
    b.srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
    b.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
    b.image = image_;
    b.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
    device_.fn().vkCmdPipelineBarrier(cmd, src_stage, dst_stage, 0, 0, nullptr, 0, nullptr, 1, &b);
  }
  // Records `body` into a fresh command buffer, submits it and waits.
  bool submit(const std::function<void(VkCommandBuffer)>& body) {
    const VolkDeviceTable& fn = device_.fn();
    VkCommandBufferAllocateInfo info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    info.commandPool = pool_;
    info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    info.commandBufferCount = 1;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    if (fn.vkAllocateCommandBuffers(device_.handle(), &info, &cmd) != VK_SUCCESS) return false;
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    bool ok = fn.vkBeginCommandBuffer(cmd, &begin) == VK_SUCCESS;
    if (ok) body(cmd);
    ok = ok && fn.vkEndCommandBuffer(cmd) == VK_SUCCESS;
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &cmd;
    ok = ok && device_.queue_submit(1, &submit, fence_).ok();
    ok = ok && fn.vkWaitForFences(device_.handle(), 1, &fence_, VK_TRUE, UINT64_MAX) == VK_SUCCESS;
    ok = ok && fn.vkResetFences(device_.handle(), 1, &fence_) == VK_SUCCESS;
    fn.vkFreeCommandBuffers(device_.handle(), pool_, 1, &cmd);
    return ok;
  }

  kiln::vk::Device& device_;
  uint32_t width_, height_, texel_bytes_;
  VkImage image_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  VkImageView view_ = VK_NULL_HANDLE;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  bool ok_ = false;
};

}  // namespace kiln::capi::testing
