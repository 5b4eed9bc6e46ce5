// Reference and Vulkan runners for `kiln run` (see model_runner.h).
#include "tools/kiln/model_runner.h"

#include <cstdio>

#include "engine/runtime/reference_executor.h"
#include "engine/runtime/vulkan/vulkan_model.h"
#include "platform/vulkan/device.h"
#include "platform/vulkan/instance.h"
#include "platform/vulkan/kernel_cache.h"
#include "platform/vulkan/shader_compiler.h"

namespace kiln::cli {
namespace {

std::string num(double v) { return std::to_string(v); }

class ReferenceRunner : public ModelRunner {
 public:
  explicit ReferenceRunner(const ir::Graph& g) : executor_(g) {}
  StatusOr<std::vector<Tensor>> run(const std::vector<Tensor>& inputs, std::string*) override {
    return executor_.run(inputs);
  }
  std::string name() const override { return "reference"; }
  std::string compile_json() const override { return ""; }
  std::string summary() const override { return "reference executor (CPU)"; }

 private:
  runtime::ReferenceExecutor executor_;
};

class VulkanRunner : public ModelRunner {
 public:
  static StatusOr<std::unique_ptr<VulkanRunner>> create(const Args& args, const ir::Graph& g,
                                                        std::unique_ptr<vk::Instance> instance,
                                                        std::unique_ptr<vk::Device> device) {
    auto r = std::unique_ptr<VulkanRunner>(new VulkanRunner());
    r->instance_ = std::move(instance);
    r->device_ = std::move(device);
    runtime::VulkanModelOptions options;
    const std::string storage = args.get("storage", "buffer");
    if (storage == "image") options.plan.storage = planner::Storage::kImage;
    else if (storage != "buffer") return invalid_argument("--storage must be buffer or image, got '" + storage + "'");
    const std::string precision = args.get("precision", "fp32");
    if (precision == "fp16") options.plan.precision = planner::ElemType::kF16;
    else if (precision != "fp32") return invalid_argument("--precision must be fp32 or fp16, got '" + precision + "'");
    const std::string coopmat = args.get("coopmat", "on");
    if (coopmat == "off") options.plan.cooperative_matrix = false;
    else if (coopmat != "on") return invalid_argument("--coopmat must be on or off, got '" + coopmat + "'");
    const std::string inplace = args.get("inplace", "on");
    if (inplace == "off") options.plan.inplace = false;
    else if (inplace != "on") return invalid_argument("--inplace must be on or off, got '" + inplace + "'");
    options.profile = args.has("profile");
    r->storage_ = storage;
    r->precision_ = precision;
    KILN_ASSIGN_OR_RETURN(r->compiler_, vk::ShaderCompiler::create());
    KILN_ASSIGN_OR_RETURN(r->cache_, vk::KernelCache::open(*r->device_, *r->compiler_));
    KILN_ASSIGN_OR_RETURN(r->model_, runtime::VulkanModel::compile(*r->device_, *r->cache_, g, options));
    (void)r->cache_->save_pipeline_cache();
    return r;
  }

  ~VulkanRunner() override {
    model_.reset();
    cache_.reset();
    compiler_.reset();
    device_.reset();
    if (instance_ && instance_->error_count() > 0)
      std::fprintf(stderr, "kiln: %llu Vulkan validation error(s) were reported\n",
                   static_cast<unsigned long long>(instance_->error_count()));
  }

  StatusOr<std::vector<Tensor>> run(const std::vector<Tensor>& inputs, std::string* run_json) override {
    runtime::VulkanRunStats s;
    KILN_ASSIGN_OR_RETURN(std::vector<Tensor> out, model_->run(inputs, &s));
    std::string j = ", \"gpu_ms\": " + num(s.gpu_ms) + ", \"dispatches\": " + std::to_string(s.dispatches) +
                    ", \"fallbacks\": " + std::to_string(s.fallbacks) + ", \"recorded\": " +
                    (s.recorded ? "true" : "false") + ", \"shader_compiles\": " + std::to_string(s.shader_compiles) +
                    ", \"device_bytes\": " + std::to_string(s.device_bytes) + ", \"activation_bytes\": " +
                    std::to_string(s.activation_bytes) + ", \"signatures\": " + std::to_string(s.signatures) +
                    ", \"memory\": {\"arena_bytes\": " +
                    std::to_string(s.memory.arena_bytes) + ", \"live_lower_bound\": " +
                    std::to_string(s.memory.live_lower_bound) + ", \"no_reuse_bytes\": " +
                    std::to_string(s.memory.no_reuse_bytes) + ", \"best_fit_bytes\": " +
                    std::to_string(s.memory.best_fit_bytes) + ", \"plan_ms\": " + num(s.memory.plan_ms) +
                    ", \"image_bytes\": " + std::to_string(s.memory.image_bytes) + ", \"images\": \"" +
                    s.memory.images + "\", \"strategy\": \"" + s.memory.strategy + "\"}";
    if (!s.branches.empty()) {
      // Each If run on the device and the branch it took (only that one ran).
      j += ", \"branches\": [";
      for (size_t i = 0; i < s.branches.size(); ++i)
        j += std::string(i ? ", " : "") + "{\"node\": \"" + json_escape(s.branches[i].node) + "\", \"taken\": \"" +
             (s.branches[i].then_branch ? "then" : "else") + "\"}";
      j += "]";
    }
    if (!s.loops.empty()) {
      // Each Loop run on the device and how many times its body ran.
      j += ", \"loops\": [";
      for (size_t i = 0; i < s.loops.size(); ++i)
        j += std::string(i ? ", " : "") + "{\"node\": \"" + json_escape(s.loops[i].node) + "\", \"iterations\": " +
             std::to_string(s.loops[i].iterations) + "}";
      j += "]";
    }
    if (!s.kernels.empty()) {
      j += ", \"kernels\": [";
      for (size_t i = 0; i < s.kernels.size(); ++i)
        j += std::string(i ? ", " : "") + "{\"kernel\": \"" + json_escape(s.kernels[i].kernel) + "\", \"node\": \"" +
             json_escape(s.kernels[i].node) + "\", \"gpu_ms\": " + num(s.kernels[i].gpu_ms) + ", \"bytes\": " +
             std::to_string(s.kernels[i].bytes) + ", \"flops\": " + std::to_string(s.kernels[i].flops) + "}";
      j += "]";
    }
    if (run_json) *run_json = j;
    return out;
  }

  std::string name() const override { return "vulkan"; }

  std::string compile_json() const override {
    const runtime::VulkanCompileStats& c = model_->compile_stats();
    const planner::ExecutionPlan& plan = model_->plan();
    std::string reasons;
    for (size_t i = 0; i < plan.fallback_reasons.size(); ++i)
      reasons += std::string(i ? ", " : "") + "\"" + json_escape(plan.fallback_reasons[i]) + "\"";
    return ",\n  \"device\": \"" + json_escape(device_->capabilities().device_name) + "\",\n  \"driver\": \"" +
           json_escape(device_->capabilities().driver_info) + "\",\n  \"storage\": \"" + storage_ +
           "\",\n  \"precision\": \"" + precision_ + "\",\n  \"compile\": {\"plan_ms\": " + num(c.plan_ms) +
           ", \"kernels_ms\": " + num(c.kernels_ms) + ", \"upload_ms\": " + num(c.upload_ms) +
           ", \"pipelines\": " + std::to_string(c.kernels) + ", \"shader_compiles\": " +
           std::to_string(c.shader_compiles) + ", \"shader_cache_hits\": " + std::to_string(c.shader_cache_hits) +
           ", \"weight_bytes\": " + std::to_string(c.weight_bytes) + ", \"dispatches\": " +
           std::to_string(plan.dispatch_count()) + ", \"fallbacks\": " + std::to_string(plan.fallback_count()) +
           ", \"fallback_reasons\": [" + reasons + "]}";
  }

  std::string summary() const override {
    const planner::ExecutionPlan& plan = model_->plan();
    const runtime::VulkanCompileStats& c = model_->compile_stats();
    char buf[512];
    std::snprintf(buf, sizeof(buf),
                  "vulkan on %s (%s, %s): %zu dispatches, %zu host fallbacks; compiled in %.1f ms (%llu shaders "
                  "compiled, %llu from cache)",
                  device_->capabilities().device_name.c_str(), storage_.c_str(), precision_.c_str(),
                  plan.dispatch_count(), plan.fallback_count(), c.plan_ms + c.kernels_ms + c.upload_ms,
                  static_cast<unsigned long long>(c.shader_compiles),
                  static_cast<unsigned long long>(c.shader_cache_hits));
    return buf;
  }

 private:
  VulkanRunner() = default;
  std::unique_ptr<vk::Instance> instance_;
  std::unique_ptr<vk::Device> device_;
  std::unique_ptr<vk::ShaderCompiler> compiler_;
  std::unique_ptr<vk::KernelCache> cache_;
  std::unique_ptr<runtime::VulkanModel> model_;
  std::string storage_, precision_;
};

}  // namespace

const std::vector<std::string>& runner_value_flags() {
  static const std::vector<std::string> flags = {"backend", "device", "storage", "precision", "coopmat", "inplace"};
  return flags;
}

const std::vector<std::string>& runner_bool_flags() {
  static const std::vector<std::string> flags = {"profile", "validate"};
  return flags;
}

StatusOr<std::unique_ptr<ModelRunner>> make_runner(const Args& args, const ir::Graph& graph) {
  const std::string backend = args.get("backend", "auto");
  if (backend != "auto" && backend != "vulkan" && backend != "reference")
    return invalid_argument("unknown backend '" + backend + "' (expected auto, vulkan or reference)");
  if (backend == "reference") {
    for (const char* flag : {"device", "storage", "precision", "coopmat", "inplace"})
      if (args.has(flag)) std::fprintf(stderr, "kiln: note: --%s applies to the Vulkan backend only\n", flag);
    return std::unique_ptr<ModelRunner>(new ReferenceRunner(graph));
  }
  vk::InstanceOptions io;
  io.validation = args.has("validate") ? vk::Validation::kRequired : vk::Validation::kOff;
  auto instance = vk::Instance::create(io);
  StatusOr<std::unique_ptr<vk::Device>> device = instance.ok()
      ? vk::Device::create(**instance, {.selector = args.get("device", "")})
      : StatusOr<std::unique_ptr<vk::Device>>(instance.status());
  if (!device.ok()) {
    if (backend == "vulkan") return std::move(device).status().add_context("--backend vulkan");
    std::fprintf(stderr, "kiln: no usable Vulkan device (%s); running on the reference executor\n",
                 device.status().to_string().c_str());
    return std::unique_ptr<ModelRunner>(new ReferenceRunner(graph));
  }
  KILN_ASSIGN_OR_RETURN(auto runner,
                        VulkanRunner::create(args, graph, std::move(instance).value(), std::move(device).value()));
  return std::unique_ptr<ModelRunner>(std::move(runner));
}

}  // namespace kiln::cli
