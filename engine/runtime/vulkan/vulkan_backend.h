// The Vulkan runtime behind the backend interface (../backend.h): compiles a
// graph into a VulkanModel on a VulkanContext. The compiled model also gives
// the VulkanModel itself, for what only Vulkan can do (zero-copy bindings of
// host buffers, device layouts of inputs and outputs).
#pragma once

#include "engine/runtime/backend.h"
#include "engine/runtime/vulkan/vulkan_context.h"
#include "engine/runtime/vulkan/vulkan_model.h"

namespace kiln::runtime {

class VulkanCompiledModel : public CompiledModel {
 public:
  explicit VulkanCompiledModel(std::unique_ptr<VulkanModel> model) : model_(std::move(model)) {}
  std::string_view backend() const override { return "vulkan"; }
  StatusOr<std::vector<Tensor>> run(const std::vector<Tensor>& inputs, RunStats* stats) const override {
    return model_->run(inputs, stats);
  }
  size_t dispatch_count() const override { return model_->plan().dispatch_count(); }
  size_t fallback_count() const override { return model_->plan().fallback_count(); }
  VulkanModel& model() const { return *model_; }

 private:
  std::unique_ptr<VulkanModel> model_;
};

class VulkanBackend : public Backend {
 public:
  // `context` is borrowed and must outlive the backend and what it compiles.
  VulkanBackend(VulkanContext& context, VulkanModelOptions options) : context_(context), options_(std::move(options)) {}
  std::string_view name() const override { return "vulkan"; }
  StatusOr<std::unique_ptr<CompiledModel>> compile(const ir::Graph& graph) override;
  // compile() with the concrete type.
  StatusOr<std::unique_ptr<VulkanCompiledModel>> compile_vulkan(const ir::Graph& graph);

 private:
  VulkanContext& context_;
  VulkanModelOptions options_;
};

}  // namespace kiln::runtime
