// Compute pipelines built from reflected SPIR-V, descriptor sets for them,
// and a dispatch helper.
//
// The descriptor set layouts and the push-constant range come from the
// shader's reflection, so a kernel's GLSL is the single source of truth for
// its interface; binding a resource of the wrong kind, leaving a binding
// unbound, or pushing the wrong number of bytes is reported with the binding
// and kernel named. Variants differ by specialization constants (ncnn's
// approach), which the pipeline cache keeps cheap.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "engine/base/status.h"
#include "platform/vulkan/memory_arena.h"
#include "platform/vulkan/shader_compiler.h"
#include "platform/vulkan/submitter.h"

namespace kiln::vk {

// One specialization constant value (4 bytes: int, uint, float or bool).
struct SpecializationValue {
  uint32_t constant_id = 0;
  uint32_t bits = 0;

  static SpecializationValue u32(uint32_t id, uint32_t v) { return {id, v}; }
  static SpecializationValue i32(uint32_t id, int32_t v) { return {id, static_cast<uint32_t>(v)}; }
  static SpecializationValue f32(uint32_t id, float v) {
    uint32_t b;
    std::memcpy(&b, &v, 4);
    return {id, b};
  }
  static SpecializationValue boolean(uint32_t id, bool v) { return {id, v ? 1u : 0u}; }
};

class ComputePipeline {
 public:
  // Builds set layouts, the pipeline layout and the pipeline. `device` is
  // borrowed and must outlive the pipeline; `cache` (may be null) is used
  // only during the call. `name` labels errors.
  // Errors: kInvalidArgument (a specialization id the shader does not
  // declare, push constants or workgroup size beyond the device's limits),
  // kDeviceLost, VkResult errors.
  static StatusOr<std::unique_ptr<ComputePipeline>> create(Device& device, std::span<const uint32_t> spirv,
                                                           ShaderReflection reflection,
                                                           std::span<const SpecializationValue> specialization = {},
                                                           VkPipelineCache cache = VK_NULL_HANDLE,
                                                           std::string name = "kernel");
  ~ComputePipeline();
  ComputePipeline(const ComputePipeline&) = delete;
  ComputePipeline& operator=(const ComputePipeline&) = delete;

  VkPipeline handle() const { return pipeline_; }
  VkPipelineLayout layout() const { return layout_; }
  const std::vector<VkDescriptorSetLayout>& set_layouts() const { return set_layouts_; }
  const ShaderReflection& reflection() const { return reflection_; }
  // The workgroup size after specialization.
  const std::array<uint32_t, 3>& local_size() const { return local_size_; }
  const std::string& name() const { return name_; }
  Device& device() const { return device_; }

 private:
  explicit ComputePipeline(Device& device) : device_(device) {}
  Device& device_;
  std::string name_;
  ShaderReflection reflection_;
  std::array<uint32_t, 3> local_size_{1, 1, 1};
  std::vector<VkDescriptorSetLayout> set_layouts_;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
};

// Descriptor sets from a growing list of pools. Thread-safe.
class DescriptorAllocator {
 public:
  static StatusOr<std::unique_ptr<DescriptorAllocator>> create(Device& device, uint32_t sets_per_pool = 128);
  ~DescriptorAllocator();
  DescriptorAllocator(const DescriptorAllocator&) = delete;
  DescriptorAllocator& operator=(const DescriptorAllocator&) = delete;

  // One set per layout of `pipeline`. Errors: kOutOfMemory, kDeviceLost.
  StatusOr<std::vector<VkDescriptorSet>> allocate(const ComputePipeline& pipeline);
  // Returns sets to their pools; they must no longer be in use by the GPU.
  void free(std::span<const VkDescriptorSet> sets);
  // Frees every set of every pool.
  Status reset();

 private:
  explicit DescriptorAllocator(Device& device) : device_(device) {}
  Status add_pool();
  Device& device_;
  uint32_t sets_per_pool_ = 128;
  std::mutex mutex_;
  std::vector<VkDescriptorPool> pools_;
  std::vector<std::pair<VkDescriptorSet, VkDescriptorPool>> owners_;
};

// What one binding of a pipeline is bound to: a buffer range or an image.
struct DescriptorResource {
  uint32_t set = 0;
  uint32_t binding = 0;
  uint32_t array_element = 0;
  const Buffer* buffer = nullptr;
  VkDeviceSize offset = 0;
  VkDeviceSize range = VK_WHOLE_SIZE;
  Image* image = nullptr;

  static DescriptorResource of(uint32_t binding, const Buffer& b) {
    DescriptorResource r;
    r.binding = binding;
    r.buffer = &b;
    return r;
  }
  static DescriptorResource of(uint32_t binding, Image& i) {
    DescriptorResource r;
    r.binding = binding;
    r.image = &i;
    return r;
  }
};

// Writes `resources` into `sets` (from DescriptorAllocator::allocate for this
// pipeline). Every binding element the shader declares must be given exactly
// once, with a resource of the matching kind; images are bound in
// VK_IMAGE_LAYOUT_GENERAL, sampled ones with the device's nearest sampler.
// Errors: kInvalidArgument naming the kernel, set and binding;
// kUnimplemented for texel-buffer bindings.
Status write_descriptors(const ComputePipeline& pipeline, std::span<const VkDescriptorSet> sets,
                         std::span<const DescriptorResource> resources);

// Records bind + push constants + dispatch (no barriers). `push` must be
// exactly the shader's push-constant size. Errors: kInvalidArgument for a
// push size mismatch or a group count of zero or above the device limit.
Status record_dispatch(VkCommandBuffer cmd, const ComputePipeline& pipeline, std::span<const VkDescriptorSet> sets,
                       std::span<const std::byte> push, std::array<uint32_t, 3> groups);

// Binds `resources`, runs one dispatch and waits: images not yet in GENERAL
// are transitioned to it, and barriers order the dispatch after earlier
// transfers/dispatches and before later ones. For tests, the CLI and
// one-off kernels; the runtime records whole plans instead.
Status dispatch_sync(Submitter& submitter, DescriptorAllocator& descriptors, const ComputePipeline& pipeline,
                     std::span<const DescriptorResource> resources, std::span<const std::byte> push,
                     std::array<uint32_t, 3> groups);

// The push-constant bytes of a trivially copyable struct.
template <typename T>
std::span<const std::byte> push_bytes(const T& value) {
  return std::as_bytes(std::span<const T>(&value, 1));
}

}  // namespace kiln::vk
