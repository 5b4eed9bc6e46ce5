// The engine session (see session.h).
#include "engine/session/session.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <new>

#include "engine/registry/in_tree_plugins.h"
#include "engine/registry/plugin_backend.h"
#include "engine/runtime/reference_backend.h"
#include "engine/runtime/vulkan/plugin_target.h"

namespace kiln::session {
namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// The device as the plugin ABI shows it to passes, with this session's
// options.
kiln_target_info_t plugin_target_info(const vk::Device& device, const SessionOptions& session) {
  const runtime::VulkanModelOptions& options = session.vulkan;
  return runtime::plugin_target_info(device, options.plan.cooperative_matrix,
                                     session.storage_auto                                  ? KILN_STORAGE_MODE_AUTO
                                     : options.plan.storage == planner::Storage::kImage ? KILN_STORAGE_MODE_IMAGE
                                                                                          : KILN_STORAGE_MODE_BUFFER);
}

// Why a backend Kiln ships as a plugin (opencl) is not loaded: not built,
// or present but refused by the loader.
std::string missing_builtin_backend(const std::string& name, const std::string& plugin_dir) {
  if (name != "opencl") return "";
  const std::string dir = registry::in_tree_plugin_dir(plugin_dir);
  const std::string file = "libkiln_opencl_backend.so";
  struct stat st;
  if (dir.empty() || stat((dir + "/" + file).c_str(), &st) != 0)
    return ": the OpenCL backend plugin is not available: " + file + " is not in " +
           (dir.empty() ? std::string("the plugin directory") : dir) +
           " (Kiln was built without it: no OpenCL headers or ICD loader were found, or KILN_WITH_OPENCL=OFF)";
  return ": the OpenCL backend plugin " + dir + "/" + file +
         " failed to load (see the warning above; is the OpenCL ICD loader libOpenCL.so.1 installed?)";
}

}  // namespace

Session::~Session() {
  // The compiled model borrows the context, the graph and a plugin backend's code.
  compiled_.reset();
  owned_context_.reset();
  plugins_.reset();
}

StatusOr<std::unique_ptr<Session>> Session::create(const ir::Graph& model, const SessionOptions& options) {
  auto s = std::unique_ptr<Session>(new (std::nothrow) Session);
  if (!s) return out_of_memory("out of memory");
  s->graph_ = std::unique_ptr<ir::Graph>(new (std::nothrow) ir::Graph(model));
  if (!s->graph_) return out_of_memory("out of memory");
  s->open_device(options);
  KILN_RETURN_IF_ERROR(s->optimize(options));
  KILN_RETURN_IF_ERROR(s->compile(options));
  return s;
}

// Before the pipeline, so that its passes see the device they compile for.
// Not finding one is the compile's business (kAuto falls back, kVulkan
// fails), after the pipeline.
void Session::open_device(const SessionOptions& options) {
  if (options.backend != BackendChoice::kAuto && options.backend != BackendChoice::kVulkan) return;
  context_ = options.context;
  if (context_) return;
  auto created = runtime::VulkanContext::create(options.context_options);
  if (!created.ok()) {
    device_error_ = std::move(created).status();
    return;
  }
  owned_context_ = std::move(*created);
  context_ = owned_context_.get();
}

Status Session::optimize(const SessionOptions& options) {
  int8_kernels_ = {false, "no pass pipeline: the graph as written"};
  if (!options.run_passes && options.backend != BackendChoice::kPlugin) return ok_status();
  const auto t0 = std::chrono::steady_clock::now();
  plugins_ = std::make_unique<registry::PluginRegistry>();
  KILN_RETURN_IF_ERROR(registry::load_standard_plugins(*plugins_, options.plugins, options.pipeline.log));
  if (options.run_passes) {
    registry::PipelineOptions pipeline = options.pipeline;
    if (context_) pipeline.target = plugin_target_info(context_->device(), options);
    int8_kernels_ = runtime::choose_int8_kernels(options.int8_kernels, context_ ? &context_->device() : nullptr,
                                                 options.vulkan.plan.integer_dot_product,
                                                 options.vulkan.plan.cooperative_matrix);
    pipeline.integer_qdq = int8_kernels_.integer;
    // What the pipeline will actually do, for --stats: an explicit pass
    // list, or --disable-pass fuse-qdq, has the last word.
    auto names = [](const std::vector<std::string>& list) {
      return std::find(list.begin(), list.end(), "fuse-qdq") != list.end();
    };
    if (!pipeline.passes.empty())
      int8_kernels_ = names(pipeline.passes) ? runtime::Int8KernelsChoice{true, "the pass list names fuse-qdq"}
                                             : runtime::Int8KernelsChoice{false, "the pass list leaves out fuse-qdq"};
    else if (int8_kernels_.integer && names(pipeline.disabled))
      int8_kernels_ = {false, "fuse-qdq disabled: the float graph"};
    // A plugin backend's passes see its device (ABI 1.6 target_info), so
    // that kiln.layout's per-tensor storage (--storage auto) fits it; a
    // backend without a device compiles and fails with the reason.
    if (options.backend == BackendChoice::kPlugin)
      if (const kiln_backend_v1_t* backend = plugins_->find_backend(options.backend_plugin)) {
        auto target = registry::PluginBackend::target_info(*backend);
        if (target.ok() && *target) {
          pipeline.target = **target;
          pipeline.target->storage_mode = options.storage_auto ? KILN_STORAGE_MODE_AUTO
                                          : options.vulkan.plan.storage == planner::Storage::kImage
                                              ? KILN_STORAGE_MODE_IMAGE
                                              : KILN_STORAGE_MODE_BUFFER;
        }
      }
    KILN_ASSIGN_OR_RETURN(pass_records_, registry::run_pipeline(*plugins_, *graph_, pipeline));
  }
  pipeline_ms_ = ms_since(t0);
  return ok_status();
}

Status Session::compile(const SessionOptions& options) {
  if (options.backend == BackendChoice::kPlugin) {
    const kiln_backend_v1_t* backend = plugins_->find_backend(options.backend_plugin);
    if (!backend) {
      std::string offered;
      for (const registry::LoadedPlugin& p : plugins_->plugins())
        if (p.backend) offered += (offered.empty() ? "" : ", ") + std::string(p.backend->name);
      return not_found("no loaded plugin offers a backend named '" + options.backend_plugin + "' (loaded: " +
                       (offered.empty() ? std::string("none") : offered) + ")" +
                       missing_builtin_backend(options.backend_plugin, options.plugins.plugin_dir));
    }
    // The Vulkan options that mean the same on any backend.
    kiln_backend_options_t backend_options = registry::PluginBackend::default_options();
    backend_options.precision = options.vulkan.plan.precision == planner::ElemType::kF16 ? KILN_PLUGIN_PRECISION_FP16
                                                                                       : KILN_PLUGIN_PRECISION_FP32;
    backend_options.storage = options.storage_auto ? KILN_PLUGIN_STORAGE_AUTO
                              : options.vulkan.plan.storage == planner::Storage::kImage ? KILN_PLUGIN_STORAGE_IMAGE
                                                                                        : KILN_PLUGIN_STORAGE_BUFFER;
    backend_options.profile = options.vulkan.profile ? 1 : 0;
    registry::PluginBackend plugin(*backend, options.pipeline.log, backend_options);
    KILN_ASSIGN_OR_RETURN(compiled_, plugin.compile(*graph_));
    if (const auto& c = plugin.compile_stats()) {
      plugin_reports_cache_ = true;
      compile_cache_.compiles = c->kernels_built;
      compile_cache_.disk_hits = c->disk_hits;
      compile_cache_.memory_hits = c->memory_hits;
      compile_cache_.corrupt_files = c->rejected_files;
    }
    return ok_status();
  }
  if (options.backend != BackendChoice::kReference) {
    bool have_device = false;
    Status vulkan = [&]() -> Status {
      if (!context_) return device_error_.ok() ? unavailable("no Vulkan device") : device_error_;  // open_device found none
      have_device = true;
      const vk::KernelCacheStats before = context_->cache().stats();
      runtime::VulkanBackend backend(*context_, options.vulkan);
      KILN_ASSIGN_OR_RETURN(std::unique_ptr<runtime::VulkanCompiledModel> compiled, backend.compile_vulkan(*graph_));
      compile_cache_ = context_->cache().stats();
      compile_cache_.memory_hits -= before.memory_hits;
      compile_cache_.disk_hits -= before.disk_hits;
      compile_cache_.compiles -= before.compiles;
      compile_cache_.pipeline_hits -= before.pipeline_hits;
      compile_cache_.pipelines_created -= before.pipelines_created;
      compile_cache_.corrupt_files -= before.corrupt_files;
      compile_cache_.write_failures -= before.write_failures;
      vulkan_ = compiled.get();
      compiled_ = std::move(compiled);
      if (options.save_pipeline_cache) (void)context_->cache().save_pipeline_cache();
      return ok_status();
    }();
    if (vulkan.ok()) return ok_status();
    if (options.backend == BackendChoice::kVulkan) return vulkan;
    if (have_device && !options.reference_if_uncompilable) return vulkan;
    // kAuto: no usable device, or the model does not compile for it; the
    // reference executor runs everything.
    fallback_reason_ = vulkan.to_string();
    owned_context_.reset();
    context_ = nullptr;
  }
  runtime::ReferenceBackend reference;
  KILN_ASSIGN_OR_RETURN(compiled_, reference.compile(*graph_));
  return ok_status();
}

StatusOr<std::vector<Tensor>> Session::run(const std::vector<Tensor>& inputs, runtime::RunStats* stats) const {
  return compiled_->run(inputs, stats);
}

}  // namespace kiln::session
