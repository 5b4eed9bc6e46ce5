// VulkanBackend (see vulkan_backend.h).
#include "engine/runtime/vulkan/vulkan_backend.h"

#include <new>

namespace kiln::runtime {

StatusOr<std::unique_ptr<VulkanCompiledModel>> VulkanBackend::compile_vulkan(const ir::Graph& graph) {
  VulkanModelOptions options = options_;
  options.debug_labels = context_.debug_labels();
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<VulkanModel> model,
                        VulkanModel::compile(context_.device(), context_.cache(), graph, options));
  auto compiled = std::unique_ptr<VulkanCompiledModel>(new (std::nothrow) VulkanCompiledModel(std::move(model)));
  if (!compiled) return out_of_memory("out of memory");
  return compiled;
}

StatusOr<std::unique_ptr<CompiledModel>> VulkanBackend::compile(const ir::Graph& graph) {
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<VulkanCompiledModel> compiled, compile_vulkan(graph));
  return std::unique_ptr<CompiledModel>(std::move(compiled));
}

}  // namespace kiln::runtime
