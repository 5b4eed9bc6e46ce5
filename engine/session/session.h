// Session: the one path from an imported graph to results — pass pipeline,
// backend choice, compile, run — that libkiln (kiln.h), `kiln run` and the
// tests share, so the same model with the same options gives the same
// outputs through every front door.
//
// A session optimizes its own copy of the graph (constants are shared, not
// copied), so one imported model can back sessions with different pipelines.
//
// Thread-safety: run() is thread-safe; everything else is set at create().
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/base/status.h"
#include "engine/base/tensor.h"
#include "engine/ir/graph.h"
#include "engine/registry/default_pipeline.h"
#include "engine/runtime/backend.h"
#include "engine/runtime/vulkan/plugin_target.h"
#include "engine/runtime/vulkan/vulkan_backend.h"
#include "platform/vulkan/kernel_cache.h"

namespace kiln::session {

enum class BackendChoice {
  kAuto,       // Vulkan when a device exists and the model compiles for it, else the reference executor
  kReference,  // the CPU reference executor
  kVulkan,     // Vulkan or an error
  kPlugin,     // the backend a loaded plugin offers under SessionOptions::backend_plugin
};

struct SessionOptions {
  BackendChoice backend = BackendChoice::kAuto;
  // kPlugin: the name of the backend (kiln_backend_v1_t::name) a loaded
  // plugin offers; the plugin files come from `plugins` as for passes.
  std::string backend_plugin;
  // The pass pipeline: false runs none (`--passes none`).
  bool run_passes = true;
  registry::PipelineOptions pipeline;  // passes, disabled passes, log
  registry::PipelineSetup plugins;     // plugin files, $KILN_PLUGIN_PATH, plugin directory
  // Vulkan: the context to run on (borrowed; must outlive the session), or
  // null to create one from `context_options`.
  runtime::VulkanContext* context = nullptr;
  runtime::VulkanContextOptions context_options;
  runtime::VulkanModelOptions vulkan;
  // true: the layout pass (plugins/layout) chooses buffer or image per
  // tensor (KILN_STORAGE_AUTO); vulkan.plan.storage is then where the
  // tensors it leaves unannotated live. false: vulkan.plan.storage is forced
  // for every activation and passes see it as such (target_info).
  bool storage_auto = false;
  // kAuto when a device exists but the model does not compile for it: true
  // runs the reference executor instead (the C API's documented default);
  // false reports the compile error (`kiln run`: a kernel bug must show).
  bool reference_if_uncompilable = true;
  // Write the device's pipeline cache to disk after compiling (the tools do;
  // libkiln leaves persistence to the host).
  bool save_pipeline_cache = false;
  // Static QDQ patterns as integer kernels or as the float graph
  // (runtime::choose_int8_kernels decides kAuto from the device).
  runtime::Int8Kernels int8_kernels = runtime::Int8Kernels::kAuto;
};

class Session {
 public:
  // Copies `model`, opens the device (kVulkan, kAuto), runs the pipeline on
  // the copy (its passes see the device through
  // kiln_host_api_t::target_info), picks the backend and compiles. Errors: a pipeline error naming the pass, kNotFound for a
  // plugin file or Kiln's own plugins, kUnavailable (kVulkan without a
  // device), compile errors naming the node.
  static StatusOr<std::unique_ptr<Session>> create(const ir::Graph& model, const SessionOptions& options);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Runs with inputs in the graph's input order. `stats` may be null.
  StatusOr<std::vector<Tensor>> run(const std::vector<Tensor>& inputs, runtime::RunStats* stats = nullptr) const;

  // The optimized graph the backend runs.
  const ir::Graph& graph() const { return *graph_; }
  // What each pass did (in order; empty when no pipeline ran).
  const std::vector<registry::PassRecord>& pass_records() const { return pass_records_; }
  double pipeline_ms() const { return pipeline_ms_; }
  // Whether static QDQ patterns run as integer kernels, and why (the
  // choice the pipeline was given; fuse-qdq's statistics say what it found).
  const runtime::Int8KernelsChoice& int8_kernels() const { return int8_kernels_; }
  const runtime::CompiledModel& compiled() const { return *compiled_; }
  std::string_view backend() const { return compiled_->backend(); }
  // What the device's kernel cache did during this session's compile
  // (Vulkan; pipeline_cache_bytes_loaded is the cache's, from its open).
  const vk::KernelCacheStats& compile_cache_stats() const { return compile_cache_; }
  // A backend plugin's kernel cache during the compile (ABI 1.5): compiles,
  // disk_hits, memory_hits and corrupt_files of compile_cache_stats() are
  // set; false when the plugin does not say (and for Vulkan and reference).
  bool plugin_reports_cache() const { return plugin_reports_cache_; }
  // Why kAuto ran on the reference executor ("" when it did not fall back).
  const std::string& fallback_reason() const { return fallback_reason_; }
  // Vulkan sessions only (null otherwise).
  runtime::VulkanModel* vulkan_model() const { return vulkan_ ? &vulkan_->model() : nullptr; }
  runtime::VulkanContext* vulkan_context() const { return context_; }

 private:
  Session() = default;
  void open_device(const SessionOptions& options);
  Status optimize(const SessionOptions& options);
  Status compile(const SessionOptions& options);

  // The loaded plugins: their passes ran, and a plugin backend's code must
  // stay loaded while the compiled model lives.
  std::unique_ptr<registry::PluginRegistry> plugins_;
  std::unique_ptr<ir::Graph> graph_;
  std::vector<registry::PassRecord> pass_records_;
  double pipeline_ms_ = 0;
  runtime::Int8KernelsChoice int8_kernels_;
  std::unique_ptr<runtime::VulkanContext> owned_context_;
  runtime::VulkanContext* context_ = nullptr;
  // Why no device could be opened for a Vulkan or automatic session (the
  // compile reports it, after the pipeline ran for no device).
  Status device_error_;
  // Destroyed before the context and the graph it borrows.
  std::unique_ptr<runtime::CompiledModel> compiled_;
  runtime::VulkanCompiledModel* vulkan_ = nullptr;  // compiled_, when it is Vulkan
  std::string fallback_reason_;
  vk::KernelCacheStats compile_cache_;
  bool plugin_reports_cache_ = false;
};

}  // namespace kiln::session
