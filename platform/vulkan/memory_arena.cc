// The device-memory arena and the Buffer/Image resources bound into it; see
// memory_arena.h.
#include "platform/vulkan/memory_arena.h"

#include <algorithm>
#include <cassert>
#include <string>
#include <vector>

#include "platform/vulkan/fault_injection.h"

namespace kiln::vk {
namespace {

constexpr VkBufferUsageFlags kBufferUsage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT |
                                            VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
constexpr VkImageUsageFlags kImageUsage = VK_IMAGE_USAGE_SAMPLED_BIT | VK_IMAGE_USAGE_STORAGE_BIT |
                                          VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT;

VkDeviceSize align_up(VkDeviceSize v, VkDeviceSize a) { return (v + a - 1) / a * a; }

VkBufferCreateInfo buffer_info(VkDeviceSize size) {
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = size;
  info.usage = kBufferUsage;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  return info;
}

// A VkBuffer of `size` with the arena's usage, not yet bound, and what it
// needs of memory; the caller owns (and on failure destroys) the handle.
StatusOr<std::pair<VkBuffer, VkMemoryRequirements>> new_buffer(Device& device, VkDeviceSize size) {
  KILN_RETURN_IF_ERROR(device.status());
  if (size == 0) return invalid_argument("buffer size must be positive");
  VkBufferCreateInfo info = buffer_info(size);
  VkBuffer handle = VK_NULL_HANDLE;
  // check() returns a device loss another thread recorded even when this
  // call succeeded: what was created is destroyed before the error returns.
  if (Status s = device.check(device.fn().vkCreateBuffer(device.handle(), &info, nullptr, &handle), "vkCreateBuffer");
      !s.ok()) {
    if (handle != VK_NULL_HANDLE) device.fn().vkDestroyBuffer(device.handle(), handle, nullptr);
    return s;
  }
  VkMemoryRequirements req{};
  device.fn().vkGetBufferMemoryRequirements(device.handle(), handle, &req);
  return std::make_pair(handle, req);
}

VkImageCreateInfo image_info(uint32_t width, uint32_t height, ImageFormat format) {
  VkImageCreateInfo info{VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO};
  info.imageType = VK_IMAGE_TYPE_2D;
  info.format = vk_format(format);
  info.extent = {width, height, 1};
  info.mipLevels = 1;
  info.arrayLayers = 1;
  info.samples = VK_SAMPLE_COUNT_1_BIT;
  info.tiling = VK_IMAGE_TILING_OPTIMAL;
  info.usage = kImageUsage;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  info.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
  return info;
}

std::string bytes_string(VkDeviceSize v) { return std::to_string(v) + " bytes"; }

}  // namespace

VkFormat vk_format(ImageFormat format) {
  return format == ImageFormat::kRGBA32F ? VK_FORMAT_R32G32B32A32_SFLOAT : VK_FORMAT_R16G16B16A16_SFLOAT;
}

uint32_t texel_bytes(ImageFormat format) { return format == ImageFormat::kRGBA32F ? 16 : 8; }

const char* image_format_name(ImageFormat format) { return format == ImageFormat::kRGBA32F ? "rgba32f" : "rgba16f"; }

// ---------------------------------------------------------------------------
// Buffer / Image.

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    reset();
    arena_ = std::exchange(other.arena_, nullptr);
    buffer_ = std::exchange(other.buffer_, VK_NULL_HANDLE);
    offset_ = std::exchange(other.offset_, 0);
    reserved_ = std::exchange(other.reserved_, 0);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

Buffer Buffer::borrow(VkBuffer handle, VkDeviceSize size) {
  Buffer b;
  b.buffer_ = handle;
  b.size_ = size;
  return b;
}

void Buffer::reset() {
  if (arena_ == nullptr) {  // empty or borrowed: nothing of ours to destroy
    buffer_ = VK_NULL_HANDLE;
    size_ = 0;
    return;
  }
  const Device& device = arena_->device();
  if (buffer_ != VK_NULL_HANDLE) device.fn().vkDestroyBuffer(device.handle(), buffer_, nullptr);
  arena_->release(offset_, reserved_);
  arena_ = nullptr;
  buffer_ = VK_NULL_HANDLE;
  offset_ = reserved_ = size_ = 0;
}

Image& Image::operator=(Image&& other) noexcept {
  if (this != &other) {
    reset();
    arena_ = std::exchange(other.arena_, nullptr);
    image_ = std::exchange(other.image_, VK_NULL_HANDLE);
    view_ = std::exchange(other.view_, VK_NULL_HANDLE);
    offset_ = std::exchange(other.offset_, 0);
    reserved_ = std::exchange(other.reserved_, 0);
    width_ = std::exchange(other.width_, 0);
    height_ = std::exchange(other.height_, 0);
    format_ = other.format_;
    layout_ = std::exchange(other.layout_, VK_IMAGE_LAYOUT_UNDEFINED);
  }
  return *this;
}

void Image::reset() {
  if (arena_ == nullptr) return;
  const Device& device = arena_->device();
  if (view_ != VK_NULL_HANDLE) device.fn().vkDestroyImageView(device.handle(), view_, nullptr);
  if (image_ != VK_NULL_HANDLE) device.fn().vkDestroyImage(device.handle(), image_, nullptr);
  arena_->release(offset_, reserved_);
  arena_ = nullptr;
  image_ = VK_NULL_HANDLE;
  view_ = VK_NULL_HANDLE;
  offset_ = reserved_ = 0;
  width_ = height_ = 0;
  layout_ = VK_IMAGE_LAYOUT_UNDEFINED;
}

// ---------------------------------------------------------------------------
// MemoryArena.

StatusOr<std::unique_ptr<MemoryArena>> MemoryArena::create(Device& device, VkDeviceSize capacity) {
  KILN_RETURN_IF_ERROR(device.status());
  const Capabilities& caps = device.capabilities();
  // Probe the memory types a buffer and each supported image format accept;
  // the arena's type must serve all of them.
  KILN_ASSIGN_OR_RETURN(VkMemoryRequirements buffer, buffer_requirements(device, 256));
  uint32_t type_bits = buffer.memoryTypeBits;
  for (ImageFormat format : {ImageFormat::kRGBA32F, ImageFormat::kRGBA16F}) {
    bool supported = format == ImageFormat::kRGBA32F ? caps.rgba32f_image : caps.rgba16f_image;
    if (!supported) continue;
    KILN_ASSIGN_OR_RETURN(VkMemoryRequirements image, image_requirements(device, 16, 16, format));
    type_bits &= image.memoryTypeBits;
  }
  if (!device.find_memory_type(type_bits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT).ok())
    return unimplemented("no device-local memory type accepts both buffers and RGBA images on '" + caps.device_name +
                         "'");
  return create(device, capacity, type_bits);
}

StatusOr<VkMemoryRequirements> MemoryArena::buffer_requirements(Device& device, VkDeviceSize size) {
  KILN_RETURN_IF_ERROR(device.status());
  if (size == 0) return invalid_argument("buffer size must be positive");
  VkBufferCreateInfo info = buffer_info(size);
  VkBuffer probe = VK_NULL_HANDLE;
  if (Status s = device.check(device.fn().vkCreateBuffer(device.handle(), &info, nullptr, &probe), "vkCreateBuffer (probe)");
      !s.ok()) {
    if (probe != VK_NULL_HANDLE) device.fn().vkDestroyBuffer(device.handle(), probe, nullptr);  // as in new_buffer
    return s;
  }
  VkMemoryRequirements req{};
  device.fn().vkGetBufferMemoryRequirements(device.handle(), probe, &req);
  device.fn().vkDestroyBuffer(device.handle(), probe, nullptr);
  return req;
}

StatusOr<VkMemoryRequirements> MemoryArena::image_requirements(Device& device, uint32_t width, uint32_t height,
                                                               ImageFormat format) {
  KILN_RETURN_IF_ERROR(device.status());
  const Capabilities& caps = device.capabilities();
  if (width == 0 || height == 0) return invalid_argument("image width and height must be positive");
  if (!(format == ImageFormat::kRGBA32F ? caps.rgba32f_image : caps.rgba16f_image))
    return unimplemented(std::string(image_format_name(format)) + " images are not usable on '" + caps.device_name + "'");
  VkImageCreateInfo info = image_info(width, height, format);
  VkImage probe = VK_NULL_HANDLE;
  if (Status s = device.check(device.fn().vkCreateImage(device.handle(), &info, nullptr, &probe), "vkCreateImage (probe)");
      !s.ok()) {
    if (probe != VK_NULL_HANDLE) device.fn().vkDestroyImage(device.handle(), probe, nullptr);  // as in new_buffer
    return s;
  }
  VkMemoryRequirements req{};
  device.fn().vkGetImageMemoryRequirements(device.handle(), probe, &req);
  device.fn().vkDestroyImage(device.handle(), probe, nullptr);
  return req;
}

StatusOr<std::unique_ptr<MemoryArena>> MemoryArena::create(Device& device, VkDeviceSize capacity, uint32_t type_bits) {
  KILN_RETURN_IF_ERROR(device.status());
  if (capacity == 0) return invalid_argument("memory arena capacity must be positive");
  const Capabilities& caps = device.capabilities();
  if (caps.max_memory_allocation_size != 0 && capacity > caps.max_memory_allocation_size) {
    return out_of_memory("memory arena of " + bytes_string(capacity) + " exceeds maxMemoryAllocationSize (" +
                         bytes_string(caps.max_memory_allocation_size) + ")");
  }
  const VolkDeviceTable& fn = device.fn();
  VkDevice dev = device.handle();
  StatusOr<uint32_t> type = device.find_memory_type(type_bits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  if (!type.ok()) {
    return unimplemented("no device-local memory type among the bits " + std::to_string(type_bits) + " on '" +
                         caps.device_name + "': " + type.status().message());
  }
  const VkPhysicalDeviceMemoryProperties& mem = device.memory_properties();
  uint32_t heap_index = mem.memoryTypes[*type].heapIndex;
  std::vector<MemoryHeapInfo> heaps = device.memory_heaps();
  if (heap_index < heaps.size()) {
    const MemoryHeapInfo& heap = heaps[heap_index];
    if (capacity > heap.size) {
      return out_of_memory("memory arena of " + bytes_string(capacity) + " exceeds device-local heap " +
                           std::to_string(heap_index) + " (" + bytes_string(heap.size) + ")");
    }
    if (device.enabled().memory_budget && heap.budget != 0) {
      VkDeviceSize available = heap.budget > heap.usage ? heap.budget - heap.usage : 0;
      if (capacity > available) {
        return out_of_memory("memory arena of " + bytes_string(capacity) + " exceeds the memory budget of heap " +
                             std::to_string(heap_index) + " (" + bytes_string(available) + " of " +
                             bytes_string(heap.budget) + " left)");
      }
    }
  }

  std::unique_ptr<MemoryArena> arena(new MemoryArena(device));
  VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  alloc.allocationSize = capacity;
  alloc.memoryTypeIndex = *type;
  KILN_RETURN_IF_ERROR(device.check(call_unless_fault(FaultSite::kAllocation,
                                                      [&] { return fn.vkAllocateMemory(dev, &alloc, nullptr, &arena->memory_); }),
                                    "vkAllocateMemory (" + bytes_string(capacity) + " arena)"));
  arena->memory_type_ = *type;
  arena->capacity_ = capacity;
  arena->granularity_ = std::max<VkDeviceSize>(1, caps.buffer_image_granularity);
  arena->free_[0] = capacity;
  return arena;
}

MemoryArena::~MemoryArena() {
  assert(live_ == 0 && "every Buffer and Image must be destroyed before their MemoryArena");
  if (mapped_ != nullptr) device_.fn().vkUnmapMemory(device_.handle(), memory_);
  if (memory_ != VK_NULL_HANDLE) device_.fn().vkFreeMemory(device_.handle(), memory_, nullptr);
}

VkMemoryPropertyFlags MemoryArena::memory_flags() const {
  return device_.memory_properties().memoryTypes[memory_type_].propertyFlags;
}

bool MemoryArena::host_visible() const { return (memory_flags() & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) != 0; }

StatusOr<std::byte*> MemoryArena::map() {
  if (!host_visible()) return failed_precondition("the arena's memory is not host-visible");
  std::lock_guard<std::mutex> lock(mutex_);
  if (mapped_ == nullptr) {
    void* p = nullptr;
    KILN_RETURN_IF_ERROR(
        device_.check(device_.fn().vkMapMemory(device_.handle(), memory_, 0, VK_WHOLE_SIZE, 0, &p), "vkMapMemory"));
    mapped_ = static_cast<std::byte*>(p);
  }
  return mapped_;
}

Status MemoryArena::flush(VkDeviceSize offset, VkDeviceSize size) {
  if ((memory_flags() & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) != 0) return ok_status();
  // The range widened to nonCoherentAtomSize (or the allocation's end), as
  // vkFlushMappedMemoryRanges requires.
  const VkDeviceSize atom = std::max<VkDeviceSize>(1, device_.capabilities().non_coherent_atom_size);
  VkMappedMemoryRange range{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE};
  range.memory = memory_;
  range.offset = offset / atom * atom;
  const VkDeviceSize end = align_up(offset + size, atom);
  range.size = end >= capacity_ ? VK_WHOLE_SIZE : end - range.offset;
  return device_.check(device_.fn().vkFlushMappedMemoryRanges(device_.handle(), 1, &range), "vkFlushMappedMemoryRanges");
}

StatusOr<VkDeviceSize> MemoryArena::reserve(VkDeviceSize size, VkDeviceSize alignment, VkDeviceSize* reserved,
                                            const char* what) {
  // Every range starts and ends on bufferImageGranularity, so a linear buffer
  // and an optimal-tiling image never share a granularity page, whatever the
  // order they are placed in.
  alignment = std::max(alignment, granularity_);
  VkDeviceSize need = align_up(size, granularity_);
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    VkDeviceSize start = align_up(it->first, alignment);
    VkDeviceSize end = it->first + it->second;
    if (start + need > end) continue;
    VkDeviceSize block = it->first;
    free_.erase(it);
    if (start > block) free_[block] = start - block;
    if (start + need < end) free_[start + need] = end - (start + need);
    used_ += need;
    peak_ = std::max(peak_, used_);
    ++live_;
    *reserved = need;
    return start;
  }
  VkDeviceSize largest = 0;
  for (const auto& [offset, free_size] : free_) largest = std::max(largest, free_size);
  return out_of_memory(std::string("memory arena cannot fit ") + what + " of " + bytes_string(size) + " (alignment " +
                       std::to_string(alignment) + "): " + bytes_string(capacity_ - used_) + " free of " +
                       bytes_string(capacity_) + ", largest free range " + bytes_string(largest));
}

void MemoryArena::release(VkDeviceSize offset, VkDeviceSize reserved) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (reserved == 0) {  // bound at a planned offset (bind_*): nothing was reserved
    --live_;
    return;
  }
  auto [it, inserted] = free_.emplace(offset, reserved);
  assert(inserted);
  (void)inserted;
  auto next = std::next(it);
  if (next != free_.end() && it->first + it->second == next->first) {
    it->second += next->second;
    free_.erase(next);
  }
  if (it != free_.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second == it->first) {
      prev->second += it->second;
      free_.erase(it);
    }
  }
  used_ -= reserved;
  --live_;
}

StatusOr<Buffer> MemoryArena::create_buffer(VkDeviceSize size) {
  KILN_RETURN_IF_ERROR(device_.status());
  if (size > capacity_) {
    return out_of_memory("buffer of " + bytes_string(size) + " exceeds the memory arena's capacity (" +
                         bytes_string(capacity_) + ")");
  }
  const VolkDeviceTable& fn = device_.fn();
  Buffer buffer;
  KILN_ASSIGN_OR_RETURN(auto made, new_buffer(device_, size));
  buffer.buffer_ = made.first;
  const VkMemoryRequirements req = made.second;
  if ((req.memoryTypeBits & (1u << memory_type_)) == 0) {
    fn.vkDestroyBuffer(device_.handle(), buffer.buffer_, nullptr);
    return internal_error("a buffer of " + bytes_string(size) + " cannot live in the arena's memory type " +
                          std::to_string(memory_type_));
  }
  StatusOr<VkDeviceSize> offset = reserve(req.size, req.alignment, &buffer.reserved_, "a buffer");
  if (!offset.ok()) {
    fn.vkDestroyBuffer(device_.handle(), buffer.buffer_, nullptr);
    return std::move(offset).status();
  }
  // From here on the Buffer owns its range and handle: early returns clean up.
  buffer.arena_ = this;
  buffer.offset_ = *offset;
  buffer.size_ = size;
  KILN_RETURN_IF_ERROR(
      device_.check(fn.vkBindBufferMemory(device_.handle(), buffer.buffer_, memory_, buffer.offset_), "vkBindBufferMemory"));
  return buffer;
}

StatusOr<Image> MemoryArena::make_image(uint32_t width, uint32_t height, ImageFormat format,
                                        VkMemoryRequirements* req, std::string* desc) {
  KILN_RETURN_IF_ERROR(device_.status());
  const Capabilities& caps = device_.capabilities();
  *desc = std::string(image_format_name(format)) + " image " + std::to_string(width) + "x" + std::to_string(height);
  if (width == 0 || height == 0) return invalid_argument(*desc + ": width and height must be positive");
  if (width > caps.max_image_dimension_2d || height > caps.max_image_dimension_2d) {
    return invalid_argument(*desc + " exceeds maxImageDimension2D (" + std::to_string(caps.max_image_dimension_2d) + ")");
  }
  bool supported = format == ImageFormat::kRGBA32F ? caps.rgba32f_image : caps.rgba16f_image;
  if (!supported) {
    return unimplemented(*desc + ": '" + caps.device_name +
                         "' cannot use this format as a sampled + storage image with optimal tiling");
  }
  const VolkDeviceTable& fn = device_.fn();
  VkDevice dev = device_.handle();
  VkImageCreateInfo info = image_info(width, height, format);
  Image image;
  KILN_RETURN_IF_ERROR(device_.check(fn.vkCreateImage(dev, &info, nullptr, &image.image_), "vkCreateImage"));
  fn.vkGetImageMemoryRequirements(dev, image.image_, req);
  if ((req->memoryTypeBits & (1u << memory_type_)) == 0) {
    fn.vkDestroyImage(dev, image.image_, nullptr);
    return internal_error(*desc + " cannot live in the arena's memory type " + std::to_string(memory_type_));
  }
  image.width_ = width;
  image.height_ = height;
  image.format_ = format;
  return image;
}

// Binds a made image at `offset` (its arena_/reserved_ already set) and
// makes its view.
Status MemoryArena::finish_image(Image& image, VkDeviceSize offset) {
  const VolkDeviceTable& fn = device_.fn();
  VkDevice dev = device_.handle();
  image.offset_ = offset;
  KILN_RETURN_IF_ERROR(device_.check(fn.vkBindImageMemory(dev, image.image_, memory_, offset), "vkBindImageMemory"));
  VkImageViewCreateInfo view{VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO};
  view.image = image.image_;
  view.viewType = VK_IMAGE_VIEW_TYPE_2D;
  view.format = vk_format(image.format_);
  view.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
  return device_.check(fn.vkCreateImageView(dev, &view, nullptr, &image.view_), "vkCreateImageView");
}

StatusOr<Image> MemoryArena::create_image(uint32_t width, uint32_t height, ImageFormat format) {
  VkMemoryRequirements req{};
  std::string desc;
  KILN_ASSIGN_OR_RETURN(Image image, make_image(width, height, format, &req, &desc));
  StatusOr<VkDeviceSize> offset = reserve(req.size, req.alignment, &image.reserved_, "an image");
  if (!offset.ok()) {
    device_.fn().vkDestroyImage(device_.handle(), image.image_, nullptr);
    image.image_ = VK_NULL_HANDLE;
    return std::move(offset).status().add_context(desc);
  }
  // From here on the Image owns its range and handle: early returns clean up.
  image.arena_ = this;
  KILN_RETURN_IF_ERROR(finish_image(image, *offset));
  return image;
}

StatusOr<Image> MemoryArena::bind_image(VkDeviceSize offset, uint32_t width, uint32_t height, ImageFormat format) {
  VkMemoryRequirements req{};
  std::string desc;
  KILN_ASSIGN_OR_RETURN(Image image, make_image(width, height, format, &req, &desc));
  if (offset % std::max<VkDeviceSize>(req.alignment, 1) != 0 || offset + req.size > capacity_) {
    device_.fn().vkDestroyImage(device_.handle(), image.image_, nullptr);
    image.image_ = VK_NULL_HANDLE;
    return invalid_argument(desc + " at offset " + std::to_string(offset) + " (needs " + bytes_string(req.size) +
                            ", alignment " + std::to_string(req.alignment) + ") does not fit the arena's " +
                            bytes_string(capacity_));
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++live_;
  }
  image.arena_ = this;  // reserved_ 0: releases nothing
  KILN_RETURN_IF_ERROR(finish_image(image, offset));
  return image;
}

StatusOr<Buffer> MemoryArena::bind_buffer(VkDeviceSize offset, VkDeviceSize size) {
  const VolkDeviceTable& fn = device_.fn();
  Buffer buffer;
  KILN_ASSIGN_OR_RETURN(auto made, new_buffer(device_, size));
  buffer.buffer_ = made.first;
  const VkMemoryRequirements req = made.second;
  if ((req.memoryTypeBits & (1u << memory_type_)) == 0 || offset % std::max<VkDeviceSize>(req.alignment, 1) != 0 ||
      offset + req.size > capacity_) {
    fn.vkDestroyBuffer(device_.handle(), buffer.buffer_, nullptr);
    return invalid_argument("a buffer of " + bytes_string(size) + " (needs " + bytes_string(req.size) + ", alignment " +
                            std::to_string(req.alignment) + ") cannot be bound at offset " + std::to_string(offset) +
                            " of the arena's " + bytes_string(capacity_) + " of memory type " +
                            std::to_string(memory_type_));
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++live_;
  }
  buffer.arena_ = this;  // reserved_ 0: releases nothing
  buffer.offset_ = offset;
  buffer.size_ = size;
  KILN_RETURN_IF_ERROR(
      device_.check(fn.vkBindBufferMemory(device_.handle(), buffer.buffer_, memory_, offset), "vkBindBufferMemory"));
  return buffer;
}

VkDeviceSize MemoryArena::used() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return used_;
}

VkDeviceSize MemoryArena::peak() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return peak_;
}

size_t MemoryArena::live_allocations() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return live_;
}

}  // namespace kiln::vk
