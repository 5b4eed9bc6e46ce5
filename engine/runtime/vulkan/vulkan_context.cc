// The Vulkan stack in one object (see vulkan_context.h).
#include "engine/runtime/vulkan/vulkan_context.h"

#include <new>

namespace kiln::runtime {

StatusOr<std::unique_ptr<VulkanContext>> VulkanContext::create(const VulkanContextOptions& options) {
  auto ctx = std::unique_ptr<VulkanContext>(new (std::nothrow) VulkanContext);
  if (!ctx) return out_of_memory("out of memory");
  vk::InstanceOptions io;
  io.application_name = "kiln";
  io.validation = options.validation;
  KILN_ASSIGN_OR_RETURN(ctx->instance_, vk::Instance::create(io));
  KILN_ASSIGN_OR_RETURN(ctx->device_, vk::Device::create(*ctx->instance_, {.selector = options.selector}));
  ctx->debug_labels_ = vk::DebugLabels::load(ctx->instance_->fn().vkGetInstanceProcAddr, ctx->instance_->handle());
  KILN_RETURN_IF_ERROR(ctx->finish(options.kernel_cache_dir));
  return ctx;
}

StatusOr<std::unique_ptr<VulkanContext>> VulkanContext::wrap(const vk::HostVulkanHandles& host) {
  auto ctx = std::unique_ptr<VulkanContext>(new (std::nothrow) VulkanContext);
  if (!ctx) return out_of_memory("out of memory");
  KILN_ASSIGN_OR_RETURN(ctx->device_, vk::Device::wrap(host));
  ctx->debug_labels_ = vk::DebugLabels::load(host.get_instance_proc_addr, host.instance);
  KILN_RETURN_IF_ERROR(ctx->finish(std::string()));
  return ctx;
}

Status VulkanContext::finish(const std::optional<std::string>& kernel_cache_dir) {
  KILN_ASSIGN_OR_RETURN(compiler_, vk::ShaderCompiler::create());
  vk::KernelCacheOptions co;
  if (kernel_cache_dir) {
    co.directory = *kernel_cache_dir;
    co.use_disk = !kernel_cache_dir->empty();
  }
  KILN_ASSIGN_OR_RETURN(cache_, vk::KernelCache::open(*device_, *compiler_, co));
  return ok_status();
}

}  // namespace kiln::runtime
