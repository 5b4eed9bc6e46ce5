// Host <-> device copies for arena buffers and images, through a staging
// buffer in host-visible memory.
//
// Arena memory is device-local and, on discrete GPUs, not mappable, so every
// upload and download goes through a staging buffer: host memcpy, then
// vkCmdCopyBuffer / vkCmdCopyBufferToImage (or the reverse) with the barriers
// and image layout transitions the copy needs. Large copies are split into
// chunks of at most the staging size. Each call is synchronous.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>

#include "engine/base/status.h"
#include "platform/vulkan/memory_arena.h"
#include "platform/vulkan/submitter.h"

namespace kiln::vk {

class Transfer {
 public:
  static constexpr VkDeviceSize kDefaultStagingBytes = 64ull << 20;

  // `device` is borrowed and must outlive the Transfer. `staging_bytes`
  // bounds the host-visible staging memory (and so the chunk size).
  // Errors: VkResult errors, kNotFound when no host-visible memory exists.
  // `queue_index`: the device queue its submissions go to (Submitter::create).
  static StatusOr<std::unique_ptr<Transfer>> create(Device& device, VkDeviceSize staging_bytes = kDefaultStagingBytes,
                                                    uint32_t queue_index = 0);
  ~Transfer();
  Transfer(const Transfer&) = delete;
  Transfer& operator=(const Transfer&) = delete;

  // Copies `size` bytes from `data` into `buffer` at `offset`. Commands that
  // ran before on the queue are finished with the range first; later
  // compute or transfer commands see the new bytes. Errors: kOutOfRange when
  // the range exceeds the buffer, kDeviceLost, VkResult errors. Thread-safe.
  Status upload(const Buffer& buffer, const void* data, size_t size, VkDeviceSize offset = 0);
  // One region of an upload batch: `size` bytes at `offset` in `buffer`,
  // which `fill` writes straight into host-visible staging memory (so the
  // bytes need no host copy of their own first).
  struct Region {
    const Buffer* buffer = nullptr;
    VkDeviceSize offset = 0;
    size_t size = 0;
    std::function<void(std::byte* dst)> fill;
  };
  // Uploads every region, as upload() does each, in as few submissions as
  // the staging size allows: regions are packed into the staging buffer in
  // order and each full staging buffer is one submission of copies (a
  // model's hundreds of constants took one synchronous submission each).
  // The fills of one staging buffer run on up to `threads` threads (they
  // must not throw). A region larger than the staging buffer is filled into
  // host memory and copied in chunks. Errors as upload(); kInvalidArgument
  // for a region without a buffer or fill. Thread-safe.
  Status upload_batch(std::span<const Region> regions, unsigned threads = 1);
  // Copies `size` bytes of `buffer` from `offset` into `out`.
  Status download(const Buffer& buffer, void* out, size_t size, VkDeviceSize offset = 0);

  // Writes every texel of `image` from `data`: rows top to bottom, tightly
  // packed, four channels per texel in the image's format (float32 for
  // RGBA32F, IEEE half for RGBA16F); `size` must equal image.data_size().
  // Leaves the image in VK_IMAGE_LAYOUT_GENERAL (sampled and storage use).
  // Errors: kInvalidArgument for a size mismatch, kDeviceLost, VkResult errors.
  Status upload(Image& image, const void* data, size_t size);
  // Reads every texel of `image` into `out` (layout as above). The image
  // must have been written before (kFailedPrecondition otherwise).
  Status download(Image& image, void* out, size_t size);

  Submitter& submitter() { return *submitter_; }
  // Number of staging chunks copied so far (observable chunking for tests).
  uint64_t chunks() const;

 private:
  explicit Transfer(Device& device) : device_(device) {}
  // Makes the staging buffer at least `size` bytes (may exceed the cap for a
  // single image row). Caller holds mutex_.
  Status ensure_staging(VkDeviceSize size);
  void release_staging();
  Status flush_staging(VkDeviceSize size);
  // upload() with mutex_ held.
  Status upload_locked(const Buffer& buffer, const std::byte* data, size_t size, VkDeviceSize offset);
  // One copy out of the staging buffer into `buffer`.
  struct StagedCopy {
    VkBuffer buffer;
    VkBufferCopy region;
  };
  // Flushes the first `staged_bytes` of the staging buffer and submits
  // `copies` between the barriers every upload needs (earlier users of the
  // ranges first; later compute and transfers see the bytes), then waits.
  // Caller holds mutex_.
  Status submit_staged(std::span<const StagedCopy> copies, VkDeviceSize staged_bytes);
  Status invalidate_staging(VkDeviceSize size);

  Device& device_;
  std::unique_ptr<Submitter> submitter_;
  VkDeviceSize staging_cap_ = kDefaultStagingBytes;
  mutable std::mutex mutex_;
  VkBuffer staging_ = VK_NULL_HANDLE;
  VkDeviceMemory staging_memory_ = VK_NULL_HANDLE;
  VkDeviceSize staging_size_ = 0;
  bool staging_coherent_ = true;
  std::byte* mapped_ = nullptr;
  uint64_t chunks_ = 0;
};

}  // namespace kiln::vk
