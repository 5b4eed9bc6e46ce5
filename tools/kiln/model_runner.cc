// `kiln run`'s model over the engine session (see model_runner.h).
#include "tools/kiln/model_runner.h"

#include <cstdio>

#include "tools/kiln/pipeline_flags.h"

namespace kiln::cli {
namespace {

std::string num(double v) { return std::to_string(v); }

// --storage, --precision, --coopmat, --inplace, --profile -> the Vulkan options.
Status vulkan_options(const Args& args, runtime::VulkanModelOptions& options) {
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
  return ok_status();
}

}  // namespace

StatusOr<std::unique_ptr<ModelRunner>> ModelRunner::create(const Args& args, const ir::Graph& model) {
  const std::string backend = args.get("backend", "auto");
  session::SessionOptions o;
  if (backend == "reference") {
    o.backend = session::BackendChoice::kReference;
    for (const char* flag : {"device", "storage", "precision", "coopmat", "inplace"})
      if (args.has(flag)) std::fprintf(stderr, "kiln: note: --%s applies to the Vulkan backend only\n", flag);
  } else if (backend == "vulkan") {
    o.backend = session::BackendChoice::kVulkan;
  } else if (backend != "auto") {
    return invalid_argument("unknown backend '" + backend + "' (expected auto, vulkan or reference)");
  }
  KILN_RETURN_IF_ERROR(configure_pipeline(args, o));
  if (o.backend != session::BackendChoice::kReference) KILN_RETURN_IF_ERROR(vulkan_options(args, o.vulkan));
  o.context_options.selector = args.get("device", "");
  o.context_options.validation = args.has("validate") ? vk::Validation::kRequired : vk::Validation::kOff;
  o.reference_if_uncompilable = false;  // a model that does not compile is an error, not a silent fallback
  o.save_pipeline_cache = true;
  auto r = std::unique_ptr<ModelRunner>(new ModelRunner());
  r->storage_ = args.get("storage", "buffer");
  r->precision_ = args.get("precision", "fp32");
  auto created = session::Session::create(model, o);
  if (!created.ok()) {
    Status status = std::move(created).status();
    return backend == "vulkan" ? std::move(status).add_context("--backend vulkan") : std::move(status);
  }
  r->session_ = std::move(created).value();
  if (!r->session_->fallback_reason().empty())
    std::fprintf(stderr, "kiln: no usable Vulkan device (%s); running on the reference executor\n",
                 r->session_->fallback_reason().c_str());
  return r;
}

ModelRunner::~ModelRunner() {
  const runtime::VulkanContext* context = session_ ? session_->vulkan_context() : nullptr;
  const uint64_t errors = context ? context->validation_errors() : 0;
  session_.reset();
  if (errors > 0)
    std::fprintf(stderr, "kiln: %llu Vulkan validation error(s) were reported\n",
                 static_cast<unsigned long long>(errors));
}

StatusOr<std::vector<Tensor>> ModelRunner::run(const std::vector<Tensor>& inputs, std::string* run_json) {
  if (!session_->vulkan_model()) return session_->run(inputs);
  runtime::RunStats s;
  KILN_ASSIGN_OR_RETURN(std::vector<Tensor> out, session_->run(inputs, &s));
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

std::string ModelRunner::compile_json() const {
  const runtime::VulkanModel* model = session_->vulkan_model();
  if (!model) return "";
  const vk::Device& device = session_->vulkan_context()->device();
  const runtime::VulkanCompileStats& c = model->compile_stats();
  const planner::ExecutionPlan& plan = model->plan();
  std::string reasons;
  for (size_t i = 0; i < plan.fallback_reasons.size(); ++i)
    reasons += std::string(i ? ", " : "") + "\"" + json_escape(plan.fallback_reasons[i]) + "\"";
  return ",\n  \"device\": \"" + json_escape(device.capabilities().device_name) + "\",\n  \"driver\": \"" +
         json_escape(device.capabilities().driver_info) + "\",\n  \"storage\": \"" + storage_ +
         "\",\n  \"precision\": \"" + precision_ + "\",\n  \"compile\": {\"plan_ms\": " + num(c.plan_ms) +
         ", \"kernels_ms\": " + num(c.kernels_ms) + ", \"upload_ms\": " + num(c.upload_ms) +
         ", \"pipelines\": " + std::to_string(c.kernels) + ", \"shader_compiles\": " +
         std::to_string(c.shader_compiles) + ", \"shader_cache_hits\": " + std::to_string(c.shader_cache_hits) +
         ", \"weight_bytes\": " + std::to_string(c.weight_bytes) + ", \"dispatches\": " +
         std::to_string(plan.dispatch_count()) + ", \"fallbacks\": " + std::to_string(plan.fallback_count()) +
         ", \"fallback_reasons\": [" + reasons + "]}";
}

std::string ModelRunner::summary() const {
  const runtime::VulkanModel* model = session_->vulkan_model();
  if (!model) return "reference executor (CPU)";
  const vk::Device& device = session_->vulkan_context()->device();
  const planner::ExecutionPlan& plan = model->plan();
  const runtime::VulkanCompileStats& c = model->compile_stats();
  char buf[512];
  std::snprintf(buf, sizeof(buf),
                "vulkan on %s (%s, %s): %zu dispatches, %zu host fallbacks; compiled in %.1f ms (%llu shaders "
                "compiled, %llu from cache)",
                device.capabilities().device_name.c_str(), storage_.c_str(), precision_.c_str(),
                plan.dispatch_count(), plan.fallback_count(), c.plan_ms + c.kernels_ms + c.upload_ms,
                static_cast<unsigned long long>(c.shader_compiles),
                static_cast<unsigned long long>(c.shader_cache_hits));
  return buf;
}

const std::vector<std::string>& runner_value_flags() {
  static const std::vector<std::string> flags = {"backend", "device", "storage", "precision", "coopmat", "inplace"};
  return flags;
}

const std::vector<std::string>& runner_bool_flags() {
  static const std::vector<std::string> flags = {"profile", "validate"};
  return flags;
}

}  // namespace kiln::cli
