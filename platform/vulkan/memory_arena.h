// One block of device memory that buffers and images are bound into.
//
// Kiln allocates device memory once per arena (one vkAllocateMemory) and
// places every tensor's buffer or image at an offset inside it, honoring each
// resource's alignment and memory-type bits and bufferImageGranularity. The
// offset allocator here is a first-fit free list; a planner that decides
// offsets ahead of time (the runtime's memplan arena) binds at its own
// offsets instead (bind_buffer/bind_image), where resources may alias.
// Images are 2D RGBA32F or RGBA16F ("texture memory": four channels per
// texel) usable as sampled and storage images.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "engine/base/status.h"
#include "platform/vulkan/device.h"

namespace kiln::vk {

enum class ImageFormat { kRGBA32F, kRGBA16F };
VkFormat vk_format(ImageFormat format);
uint32_t texel_bytes(ImageFormat format);  // 16 or 8
const char* image_format_name(ImageFormat format);

class MemoryArena;

// A VkBuffer bound into an arena. Move-only; destroying it destroys the
// VkBuffer and returns its range to the arena (which must still exist).
// Usage: storage, uniform, transfer source and destination.
class Buffer {
 public:
  Buffer() = default;
  Buffer(Buffer&& other) noexcept { *this = std::move(other); }
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { reset(); }

  bool valid() const { return buffer_ != VK_NULL_HANDLE; }
  VkBuffer handle() const { return buffer_; }
  VkDeviceSize size() const { return size_; }
  VkDeviceSize arena_offset() const { return offset_; }
  // Destroys the buffer now; no-op when empty (or borrowed).
  void reset();

  // A Buffer naming a VkBuffer someone else owns (a host application's), of
  // `size` bytes, for descriptors and transfers. It belongs to no arena and
  // destroying it destroys nothing; the VkBuffer must outlive its use.
  static Buffer borrow(VkBuffer handle, VkDeviceSize size);
  bool borrowed() const { return arena_ == nullptr && buffer_ != VK_NULL_HANDLE; }

 private:
  friend class MemoryArena;
  MemoryArena* arena_ = nullptr;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceSize offset_ = 0;
  VkDeviceSize reserved_ = 0;  // bytes taken from the arena
  VkDeviceSize size_ = 0;
};

// A 2D image (one mip level, one layer, optimal tiling) bound into an arena,
// with a view. Move-only like Buffer. layout() is the layout the image will
// be in once every command recorded so far has executed; whoever records a
// layout transition updates it with set_layout(). Usage: sampled, storage,
// transfer source and destination.
class Image {
 public:
  Image() = default;
  Image(Image&& other) noexcept { *this = std::move(other); }
  Image& operator=(Image&& other) noexcept;
  Image(const Image&) = delete;
  Image& operator=(const Image&) = delete;
  ~Image() { reset(); }

  bool valid() const { return image_ != VK_NULL_HANDLE; }
  VkImage handle() const { return image_; }
  VkImageView view() const { return view_; }
  uint32_t width() const { return width_; }
  uint32_t height() const { return height_; }
  ImageFormat format() const { return format_; }
  // Bytes of texel data (width * height * texel_bytes), as uploaded/downloaded.
  VkDeviceSize data_size() const { return VkDeviceSize(width_) * height_ * texel_bytes(format_); }
  VkDeviceSize arena_offset() const { return offset_; }
  VkImageLayout layout() const { return layout_; }
  void set_layout(VkImageLayout layout) { layout_ = layout; }
  void reset();

 private:
  friend class MemoryArena;
  MemoryArena* arena_ = nullptr;
  VkImage image_ = VK_NULL_HANDLE;
  VkImageView view_ = VK_NULL_HANDLE;
  VkDeviceSize offset_ = 0;
  VkDeviceSize reserved_ = 0;
  uint32_t width_ = 0;
  uint32_t height_ = 0;
  ImageFormat format_ = ImageFormat::kRGBA32F;
  VkImageLayout layout_ = VK_IMAGE_LAYOUT_UNDEFINED;
};

class MemoryArena {
 public:
  // Allocates `capacity` bytes of device-local memory of a type that both
  // buffers and RGBA32F/RGBA16F images can be bound to. `device` is borrowed
  // and must outlive the arena. Errors: kInvalidArgument (capacity 0),
  // kOutOfMemory (capacity above maxMemoryAllocationSize, the heap size or the
  // VK_EXT_memory_budget budget, or the allocation failed), kUnimplemented (no
  // memory type serves both buffers and images), kDeviceLost.
  static StatusOr<std::unique_ptr<MemoryArena>> create(Device& device, VkDeviceSize capacity);
  // The same, of a device-local memory type among `type_bits` (the
  // intersection of the memoryTypeBits of what will be bound). Errors as
  // above; kUnimplemented when no device-local type is among the bits.
  static StatusOr<std::unique_ptr<MemoryArena>> create(Device& device, VkDeviceSize capacity, uint32_t type_bits);

  // The memory requirements of a buffer of `size` bytes and of a width x
  // height image, made as create_buffer/create_image make them (a probe is
  // created and destroyed). Errors: kInvalidArgument (zero sizes),
  // kUnimplemented (format unsupported), kDeviceLost.
  static StatusOr<VkMemoryRequirements> buffer_requirements(Device& device, VkDeviceSize size);
  static StatusOr<VkMemoryRequirements> image_requirements(Device& device, uint32_t width, uint32_t height,
                                                           ImageFormat format);

  // Every Buffer and Image made from the arena must be destroyed first.
  ~MemoryArena();
  MemoryArena(const MemoryArena&) = delete;
  MemoryArena& operator=(const MemoryArena&) = delete;

  // A buffer of `size` bytes. Errors: kInvalidArgument (size 0),
  // kOutOfMemory (no free range large enough; the message gives the sizes),
  // kDeviceLost. Thread-safe.
  StatusOr<Buffer> create_buffer(VkDeviceSize size);

  // A width x height image. Errors: kInvalidArgument (zero or above
  // maxImageDimension2D), kUnimplemented (format not usable as a sampled +
  // storage image on this device), kOutOfMemory, kDeviceLost. Thread-safe.
  StatusOr<Image> create_image(uint32_t width, uint32_t height, ImageFormat format);

  // A buffer or image bound at `offset`, a place the caller planned: it
  // reserves nothing from the free list above (do not mix the two ways in
  // one arena), so placed resources may overlap — memory aliasing, whose
  // rules (bufferImageGranularity, UNDEFINED layout on each reuse, barriers
  // after the previous user) are the caller's. Errors: kInvalidArgument
  // (offset not aligned to the resource's requirement, or the range past the
  // capacity), as create_buffer/create_image otherwise. Thread-safe.
  StatusOr<Buffer> bind_buffer(VkDeviceSize offset, VkDeviceSize size);
  StatusOr<Image> bind_image(VkDeviceSize offset, uint32_t width, uint32_t height, ImageFormat format);

  // Whether the host can write the arena's memory directly (CPU drivers,
  // integrated and unified-memory GPUs): then a buffer can be filled in
  // place, with no staging copy.
  bool host_visible() const;
  // The host address of the arena's first byte (mapped on the first call,
  // until the arena goes). Host writes reach the device once flush()ed and
  // submitted; the caller keeps them apart from device use of the same
  // bytes. Errors: kFailedPrecondition (not host-visible), VkResult errors.
  // Thread-safe.
  StatusOr<std::byte*> map();
  // Makes host writes to [offset, offset + size) available to the device
  // (a no-op for coherent memory). Errors: VkResult errors.
  Status flush(VkDeviceSize offset, VkDeviceSize size);

  Device& device() const { return device_; }
  VkDeviceMemory memory() const { return memory_; }
  uint32_t memory_type_index() const { return memory_type_; }
  VkDeviceSize capacity() const { return capacity_; }
  // Bytes currently reserved (including alignment padding), the most ever
  // reserved, and the number of live buffers and images. Thread-safe.
  VkDeviceSize used() const;
  VkDeviceSize peak() const;
  size_t live_allocations() const;

 private:
  friend class Buffer;
  friend class Image;
  MemoryArena(Device& device) : device_(device) {}
  VkMemoryPropertyFlags memory_flags() const;  // of the arena's memory type
  // Creates the image (not yet bound) with its requirements checked
  // against the arena's type; `desc` names it in errors.
  StatusOr<Image> make_image(uint32_t width, uint32_t height, ImageFormat format, VkMemoryRequirements* req,
                             std::string* desc);
  Status finish_image(Image& image, VkDeviceSize offset);
  // Reserves an aligned range; returns its offset and the reserved size.
  StatusOr<VkDeviceSize> reserve(VkDeviceSize size, VkDeviceSize alignment, VkDeviceSize* reserved, const char* what);
  void release(VkDeviceSize offset, VkDeviceSize reserved);

  Device& device_;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  uint32_t memory_type_ = 0;
  VkDeviceSize capacity_ = 0;
  VkDeviceSize granularity_ = 1;
  std::byte* mapped_ = nullptr;  // guarded by mutex_

  mutable std::mutex mutex_;
  std::map<VkDeviceSize, VkDeviceSize> free_;  // offset -> size, non-adjacent
  VkDeviceSize used_ = 0;
  VkDeviceSize peak_ = 0;
  size_t live_ = 0;
};

}  // namespace kiln::vk
