// VulkanContext: the Vulkan stack a compiled model runs on — the instance
// (when Kiln made one), the device, the shader compiler and the kernel cache
// — made in one place for the C API, the engine session and the tools.
//
// Sessions on one context share compiled kernels. Members are destroyed in
// reverse order (the cache's pipelines before the compiler and the device,
// the device before the instance Kiln created). A wrapped host device is
// borrowed: destroying the context destroys nothing of the host's.
//
// Thread-safety: as vk::Device and vk::KernelCache (both safe to share).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "engine/base/status.h"
#include "platform/vulkan/debug_labels.h"
#include "platform/vulkan/device.h"
#include "platform/vulkan/instance.h"
#include "platform/vulkan/kernel_cache.h"
#include "platform/vulkan/shader_compiler.h"

namespace kiln::runtime {

struct VulkanContextOptions {
  // As vk::DeviceOptions::selector ("" picks the best device).
  std::string selector;
  // Where compiled kernels are cached on disk: nullopt uses the default
  // directory (vk::KernelCacheOptions), "" keeps them in memory only.
  std::optional<std::string> kernel_cache_dir;
  // The Khronos validation layers (tests, `kiln run --validate`).
  vk::Validation validation = vk::Validation::kOff;
};

class VulkanContext {
 public:
  // Creates an instance and device of Kiln's own. Errors: kUnavailable (no
  // loader or device, device older than 1.1), kNotFound (no device matches
  // the selector; the message lists them).
  static StatusOr<std::unique_ptr<VulkanContext>> create(const VulkanContextOptions& options = {});
  // Wraps the host application's device (borrowed). Its kernels stay in
  // memory: a host that wants them on disk persists the pipeline cache
  // itself. Errors: as vk::Device::wrap.
  static StatusOr<std::unique_ptr<VulkanContext>> wrap(const vk::HostVulkanHandles& host);

  VulkanContext(const VulkanContext&) = delete;
  VulkanContext& operator=(const VulkanContext&) = delete;

  vk::Device& device() { return *device_; }
  const vk::Device& device() const { return *device_; }
  vk::KernelCache& cache() { return *cache_; }
  // Null for a wrapped device.
  const vk::Instance* instance() const { return instance_.get(); }
  // Validation errors the layers reported on Kiln's own instance (0 without).
  uint64_t validation_errors() const { return instance_ ? instance_->error_count() : 0; }
  // Per-kernel command-buffer labels, when the instance (Kiln's or the
  // host's) has VK_EXT_debug_utils enabled.
  const vk::DebugLabels& debug_labels() const { return debug_labels_; }

 private:
  VulkanContext() = default;
  Status finish(const std::optional<std::string>& kernel_cache_dir);

  // Declaration order is destruction order reversed: keep it.
  std::unique_ptr<vk::Instance> instance_;
  std::unique_ptr<vk::Device> device_;
  vk::DebugLabels debug_labels_;
  std::unique_ptr<vk::ShaderCompiler> compiler_;
  std::unique_ptr<vk::KernelCache> cache_;
};

}  // namespace kiln::runtime
