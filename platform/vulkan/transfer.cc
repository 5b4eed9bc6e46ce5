// Staged host <-> device copies; see transfer.h.
#include "platform/vulkan/transfer.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "platform/vulkan/barriers.h"
#include "platform/vulkan/fault_injection.h"
#include "platform/vulkan/parallel_jobs.h"

namespace kiln::vk {
namespace {

// Stages and accesses of whatever may have touched a resource before, or may
// touch it after, a transfer: compute shaders and other transfers.
constexpr VkPipelineStageFlags kUseStages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
constexpr VkAccessFlags kUseWrites = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
constexpr VkAccessFlags kUseAccess =
    VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;

Status check_range(const Buffer& buffer, size_t size, VkDeviceSize offset, const char* what) {
  if (!buffer.valid()) return invalid_argument(std::string(what) + ": the buffer is empty");
  if (offset > buffer.size() || size > buffer.size() - offset) {
    return out_of_range(std::string(what) + " of " + std::to_string(size) + " bytes at offset " +
                        std::to_string(offset) + " exceeds the buffer's " + std::to_string(buffer.size()) + " bytes");
  }
  return ok_status();
}

}  // namespace

StatusOr<std::unique_ptr<Transfer>> Transfer::create(Device& device, VkDeviceSize staging_bytes, uint32_t queue_index) {
  KILN_RETURN_IF_ERROR(device.status());
  if (staging_bytes == 0) return invalid_argument("Transfer staging size must be positive");
  std::unique_ptr<Transfer> t(new Transfer(device));
  t->staging_cap_ = staging_bytes;
  KILN_ASSIGN_OR_RETURN(t->submitter_, Submitter::create(device, queue_index));
  return t;
}

Transfer::~Transfer() {
  std::lock_guard<std::mutex> lock(mutex_);
  release_staging();
}

uint64_t Transfer::chunks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return chunks_;
}

void Transfer::release_staging() {
  const VolkDeviceTable& fn = device_.fn();
  if (staging_ != VK_NULL_HANDLE) fn.vkDestroyBuffer(device_.handle(), staging_, nullptr);
  if (staging_memory_ != VK_NULL_HANDLE) {
    if (mapped_ != nullptr) fn.vkUnmapMemory(device_.handle(), staging_memory_);
    fn.vkFreeMemory(device_.handle(), staging_memory_, nullptr);
  }
  staging_ = VK_NULL_HANDLE;
  staging_memory_ = VK_NULL_HANDLE;
  mapped_ = nullptr;
  staging_size_ = 0;
}

Status Transfer::ensure_staging(VkDeviceSize size) {
  if (staging_size_ >= size) return ok_status();
  release_staging();
  const VolkDeviceTable& fn = device_.fn();
  VkDevice dev = device_.handle();
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = size;
  info.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  KILN_RETURN_IF_ERROR(device_.check(fn.vkCreateBuffer(dev, &info, nullptr, &staging_), "vkCreateBuffer (staging)"));
  VkMemoryRequirements req{};
  fn.vkGetBufferMemoryRequirements(dev, staging_, &req);
  // Cached memory makes downloads fast; coherent memory saves flushes.
  KILN_ASSIGN_OR_RETURN(uint32_t type,
                        device_.find_memory_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT,
                                                 VK_MEMORY_PROPERTY_HOST_CACHED_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT));
  staging_coherent_ =
      (device_.memory_properties().memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) != 0;
  VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  alloc.allocationSize = req.size;
  alloc.memoryTypeIndex = type;
  KILN_RETURN_IF_ERROR(
      device_.check(call_unless_fault(FaultSite::kAllocation,
                                      [&] { return fn.vkAllocateMemory(dev, &alloc, nullptr, &staging_memory_); }),
                    "vkAllocateMemory (staging)"));
  KILN_RETURN_IF_ERROR(device_.check(fn.vkBindBufferMemory(dev, staging_, staging_memory_, 0), "vkBindBufferMemory"));
  void* mapped = nullptr;
  KILN_RETURN_IF_ERROR(device_.check(fn.vkMapMemory(dev, staging_memory_, 0, VK_WHOLE_SIZE, 0, &mapped), "vkMapMemory"));
  mapped_ = static_cast<std::byte*>(mapped);
  staging_size_ = size;
  return ok_status();
}

Status Transfer::flush_staging(VkDeviceSize /*size*/) {
  if (staging_coherent_) return ok_status();
  VkMappedMemoryRange range{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE};
  range.memory = staging_memory_;
  range.size = VK_WHOLE_SIZE;  // whole-size keeps nonCoherentAtomSize rules trivially satisfied
  return device_.check(device_.fn().vkFlushMappedMemoryRanges(device_.handle(), 1, &range), "vkFlushMappedMemoryRanges");
}

Status Transfer::invalidate_staging(VkDeviceSize /*size*/) {
  if (staging_coherent_) return ok_status();
  VkMappedMemoryRange range{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE};
  range.memory = staging_memory_;
  range.size = VK_WHOLE_SIZE;
  return device_.check(device_.fn().vkInvalidateMappedMemoryRanges(device_.handle(), 1, &range),
                       "vkInvalidateMappedMemoryRanges");
}

Status Transfer::upload(const Buffer& buffer, const void* data, size_t size, VkDeviceSize offset) {
  KILN_RETURN_IF_ERROR(device_.status());
  KILN_RETURN_IF_ERROR(check_range(buffer, size, offset, "upload"));
  if (size == 0) return ok_status();
  std::lock_guard<std::mutex> lock(mutex_);
  return upload_locked(buffer, static_cast<const std::byte*>(data), size, offset);
}

Status Transfer::upload_locked(const Buffer& buffer, const std::byte* src, size_t size, VkDeviceSize offset) {
  KILN_RETURN_IF_ERROR(ensure_staging(std::min<VkDeviceSize>(size, staging_cap_)));
  for (size_t done = 0; done < size;) {
    VkDeviceSize n = std::min<VkDeviceSize>(size - done, staging_size_);
    std::memcpy(mapped_, src + done, n);
    const StagedCopy copy{buffer.handle(), {0, offset + done, n}};
    KILN_RETURN_IF_ERROR(submit_staged({&copy, 1}, n));
    done += n;
  }
  return ok_status();
}

Status Transfer::submit_staged(std::span<const StagedCopy> copies, VkDeviceSize staged_bytes) {
  KILN_RETURN_IF_ERROR(flush_staging(staged_bytes));
  const VolkDeviceTable& fn = device_.fn();
  KILN_RETURN_IF_ERROR(submitter_->run([&](VkCommandBuffer cmd) {
    // Earlier reads/writes of the ranges (and of the staging buffer) finish first.
    VkMemoryBarrier before = memory_barrier(kUseWrites, VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
    fn.vkCmdPipelineBarrier(cmd, kUseStages, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &before, 0, nullptr, 0, nullptr);
    for (const StagedCopy& c : copies) fn.vkCmdCopyBuffer(cmd, staging_, c.buffer, 1, &c.region);
    VkMemoryBarrier after = memory_barrier(VK_ACCESS_TRANSFER_WRITE_BIT, kUseAccess);
    fn.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, kUseStages, 0, 1, &after, 0, nullptr, 0, nullptr);
    return ok_status();
  }));
  ++chunks_;
  return ok_status();
}

Status Transfer::upload_batch(std::span<const Region> regions, unsigned threads) {
  KILN_RETURN_IF_ERROR(device_.status());
  // Regions start 64 bytes apart in the staging buffer: every fill writes
  // whole cache lines of its own (no two threads share one).
  constexpr VkDeviceSize kAlign = 64;
  VkDeviceSize staged = 0;
  for (const Region& r : regions) {
    if (r.buffer == nullptr || !r.fill) return invalid_argument("upload batch: a region without a buffer or a fill");
    KILN_RETURN_IF_ERROR(check_range(*r.buffer, r.size, r.offset, "upload"));
    if (r.size <= staging_cap_) staged += (r.size + kAlign - 1) / kAlign * kAlign;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (staged > 0) KILN_RETURN_IF_ERROR(ensure_staging(std::min(staged, staging_cap_)));
  std::vector<size_t> batch;        // the regions of one staging fill
  std::vector<StagedCopy> copies;   // and their copies out of the staging buffer
  for (size_t i = 0; i < regions.size();) {
    const Region& first = regions[i];
    if (first.size == 0) {
      ++i;
      continue;
    }
    if (first.size > staging_size_) {
      std::vector<std::byte> bytes(first.size);
      first.fill(bytes.data());
      KILN_RETURN_IF_ERROR(upload_locked(*first.buffer, bytes.data(), bytes.size(), first.offset));
      ++i;
      continue;
    }
    batch.clear();
    copies.clear();
    VkDeviceSize used = 0;
    for (; i < regions.size(); ++i) {
      const Region& r = regions[i];
      if (r.size == 0) continue;
      const VkDeviceSize place = (used + kAlign - 1) / kAlign * kAlign;
      if (r.size > staging_size_ || place + r.size > staging_size_) break;
      batch.push_back(i);
      copies.push_back({r.buffer->handle(), {place, r.offset, r.size}});
      used = place + r.size;
    }
    parallel_jobs(batch.size(), threads, [&](size_t j) { regions[batch[j]].fill(mapped_ + copies[j].region.srcOffset); });
    KILN_RETURN_IF_ERROR(submit_staged(copies, used));
  }
  return ok_status();
}

Status Transfer::download(const Buffer& buffer, void* out, size_t size, VkDeviceSize offset) {
  KILN_RETURN_IF_ERROR(device_.status());
  KILN_RETURN_IF_ERROR(check_range(buffer, size, offset, "download"));
  if (size == 0) return ok_status();
  std::lock_guard<std::mutex> lock(mutex_);
  KILN_RETURN_IF_ERROR(ensure_staging(std::min<VkDeviceSize>(size, staging_cap_)));
  const VolkDeviceTable& fn = device_.fn();
  auto* dst = static_cast<std::byte*>(out);
  for (size_t done = 0; done < size;) {
    VkDeviceSize n = std::min<VkDeviceSize>(size - done, staging_size_);
    KILN_RETURN_IF_ERROR(submitter_->run([&](VkCommandBuffer cmd) {
      VkMemoryBarrier before = memory_barrier(kUseWrites, VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
      fn.vkCmdPipelineBarrier(cmd, kUseStages, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &before, 0, nullptr, 0, nullptr);
      VkBufferCopy copy{offset + done, 0, n};
      fn.vkCmdCopyBuffer(cmd, buffer.handle(), staging_, 1, &copy);
      VkMemoryBarrier to_host = memory_barrier(VK_ACCESS_TRANSFER_WRITE_BIT, VK_ACCESS_HOST_READ_BIT);
      fn.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host, 0,
                              nullptr, 0, nullptr);
      return ok_status();
    }));
    KILN_RETURN_IF_ERROR(invalidate_staging(n));
    std::memcpy(dst + done, mapped_, n);
    ++chunks_;
    done += n;
  }
  return ok_status();
}

Status Transfer::upload(Image& image, const void* data, size_t size) {
  KILN_RETURN_IF_ERROR(device_.status());
  if (!image.valid()) return invalid_argument("image upload: the image is empty");
  if (size != image.data_size()) {
    return invalid_argument("image upload: " + std::to_string(size) + " bytes given, the " +
                            image_format_name(image.format()) + " image " + std::to_string(image.width()) + "x" +
                            std::to_string(image.height()) + " holds " + std::to_string(image.data_size()));
  }
  const VkDeviceSize row_bytes = VkDeviceSize(image.width()) * texel_bytes(image.format());
  std::lock_guard<std::mutex> lock(mutex_);
  KILN_RETURN_IF_ERROR(ensure_staging(std::max(row_bytes, std::min<VkDeviceSize>(size, staging_cap_))));
  const uint32_t rows_per_chunk = static_cast<uint32_t>(std::max<VkDeviceSize>(1, staging_size_ / row_bytes));
  const VolkDeviceTable& fn = device_.fn();
  const auto* src = static_cast<const std::byte*>(data);
  for (uint32_t row = 0; row < image.height();) {
    uint32_t rows = std::min(rows_per_chunk, image.height() - row);
    std::memcpy(mapped_, src + row * row_bytes, rows * row_bytes);
    KILN_RETURN_IF_ERROR(flush_staging(rows * row_bytes));
    // The first write of a never-written image may discard its contents; a
    // partial (chunked) write after that must keep the other rows.
    VkImageLayout from = image.layout();
    KILN_RETURN_IF_ERROR(submitter_->run([&](VkCommandBuffer cmd) {
      VkMemoryBarrier staging = memory_barrier(kUseWrites, VK_ACCESS_TRANSFER_READ_BIT);
      VkImageMemoryBarrier to_dst = image_barrier(image.handle(), from, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, kUseWrites,
                                                  VK_ACCESS_TRANSFER_WRITE_BIT);
      fn.vkCmdPipelineBarrier(cmd, kUseStages, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &staging, 0, nullptr, 1, &to_dst);
      VkBufferImageCopy copy{};
      copy.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
      copy.imageOffset = {0, static_cast<int32_t>(row), 0};
      copy.imageExtent = {image.width(), rows, 1};
      fn.vkCmdCopyBufferToImage(cmd, staging_, image.handle(), VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1, &copy);
      VkImageMemoryBarrier to_general = image_barrier(image.handle(), VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
                                                      VK_IMAGE_LAYOUT_GENERAL, VK_ACCESS_TRANSFER_WRITE_BIT, kUseAccess);
      fn.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, kUseStages, 0, 0, nullptr, 0, nullptr, 1, &to_general);
      return ok_status();
    }));
    image.set_layout(VK_IMAGE_LAYOUT_GENERAL);
    ++chunks_;
    row += rows;
  }
  return ok_status();
}

Status Transfer::download(Image& image, void* out, size_t size) {
  KILN_RETURN_IF_ERROR(device_.status());
  if (!image.valid()) return invalid_argument("image download: the image is empty");
  if (size != image.data_size()) {
    return invalid_argument("image download: " + std::to_string(size) + " bytes of room given, the " +
                            image_format_name(image.format()) + " image " + std::to_string(image.width()) + "x" +
                            std::to_string(image.height()) + " holds " + std::to_string(image.data_size()));
  }
  if (image.layout() == VK_IMAGE_LAYOUT_UNDEFINED) {
    return failed_precondition("image download: the image was never written");
  }
  const VkDeviceSize row_bytes = VkDeviceSize(image.width()) * texel_bytes(image.format());
  std::lock_guard<std::mutex> lock(mutex_);
  KILN_RETURN_IF_ERROR(ensure_staging(std::max(row_bytes, std::min<VkDeviceSize>(size, staging_cap_))));
  const uint32_t rows_per_chunk = static_cast<uint32_t>(std::max<VkDeviceSize>(1, staging_size_ / row_bytes));
  const VolkDeviceTable& fn = device_.fn();
  auto* dst = static_cast<std::byte*>(out);
  for (uint32_t row = 0; row < image.height();) {
    uint32_t rows = std::min(rows_per_chunk, image.height() - row);
    VkImageLayout from = image.layout();
    KILN_RETURN_IF_ERROR(submitter_->run([&](VkCommandBuffer cmd) {
      VkMemoryBarrier staging = memory_barrier(kUseWrites, VK_ACCESS_TRANSFER_WRITE_BIT);
      VkImageMemoryBarrier to_src = image_barrier(image.handle(), from, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, kUseWrites,
                                                  VK_ACCESS_TRANSFER_READ_BIT);
      fn.vkCmdPipelineBarrier(cmd, kUseStages, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &staging, 0, nullptr, 1, &to_src);
      VkBufferImageCopy copy{};
      copy.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
      copy.imageOffset = {0, static_cast<int32_t>(row), 0};
      copy.imageExtent = {image.width(), rows, 1};
      fn.vkCmdCopyImageToBuffer(cmd, image.handle(), VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, staging_, 1, &copy);
      VkMemoryBarrier to_host = memory_barrier(VK_ACCESS_TRANSFER_WRITE_BIT, VK_ACCESS_HOST_READ_BIT);
      fn.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host, 0,
                              nullptr, 0, nullptr);
      // Back to GENERAL for the kernels; only the copy's read must finish first.
      VkImageMemoryBarrier to_general = image_barrier(image.handle(), VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
                                                      VK_IMAGE_LAYOUT_GENERAL, 0, kUseAccess);
      fn.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, kUseStages, 0, 0, nullptr, 0, nullptr, 1, &to_general);
      return ok_status();
    }));
    image.set_layout(VK_IMAGE_LAYOUT_GENERAL);
    KILN_RETURN_IF_ERROR(invalidate_staging(rows * row_bytes));
    std::memcpy(dst + row * row_bytes, mapped_, rows * row_bytes);
    ++chunks_;
    row += rows;
  }
  return ok_status();
}

}  // namespace kiln::vk
