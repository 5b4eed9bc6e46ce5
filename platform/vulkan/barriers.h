// Pipeline barriers filled in one place.
//
// Kiln's barriers are global memory barriers (buffers: a dispatch orders all
// memory, which costs the same as a buffer barrier on every driver we target)
// and whole-image layout transitions of single-mip, single-layer colour
// images owned by one queue family. These helpers set those constants once,
// so a call site states only what differs: stages, access masks, layouts.
#pragma once

#include <cstdint>
#include <vector>

#include <volk.h>

namespace kiln::vk {

// A global memory barrier from `src` accesses to `dst` accesses.
inline VkMemoryBarrier memory_barrier(VkAccessFlags src, VkAccessFlags dst) {
  VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  b.srcAccessMask = src;
  b.dstAccessMask = dst;
  return b;
}

// A layout transition of the whole of `image` (colour, one mip, one layer,
// no queue family transfer), ordering `src` accesses before `dst` accesses.
inline VkImageMemoryBarrier image_barrier(VkImage image, VkImageLayout from, VkImageLayout to, VkAccessFlags src,
                                          VkAccessFlags dst) {
  VkImageMemoryBarrier b{VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER};
  b.srcAccessMask = src;
  b.dstAccessMask = dst;
  b.oldLayout = from;
  b.newLayout = to;
  b.srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
  b.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
  b.image = image;
  b.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
  return b;
}

// Records one vkCmdPipelineBarrier: an optional global memory barrier and
// any image barriers, between `src_stages` and `dst_stages`. `fn` is the
// device's table (device.h); `cmd` must be recording. Not thread-safe for
// one command buffer (Vulkan's rule).
inline void cmd_barrier(const VolkDeviceTable& fn, VkCommandBuffer cmd, VkPipelineStageFlags src_stages,
                        VkPipelineStageFlags dst_stages, const VkMemoryBarrier* memory,
                        const std::vector<VkImageMemoryBarrier>& images = {}) {
  fn.vkCmdPipelineBarrier(cmd, src_stages, dst_stages, 0, memory ? 1 : 0, memory, 0, nullptr,
                          static_cast<uint32_t>(images.size()), images.empty() ? nullptr : images.data());
}

// The common case: a global memory barrier from `src` to `dst` accesses.
inline void cmd_memory_barrier(const VolkDeviceTable& fn, VkCommandBuffer cmd, VkPipelineStageFlags src_stages,
                               VkPipelineStageFlags dst_stages, VkAccessFlags src, VkAccessFlags dst) {
  const VkMemoryBarrier b = memory_barrier(src, dst);
  cmd_barrier(fn, cmd, src_stages, dst_stages, &b);
}

}  // namespace kiln::vk
