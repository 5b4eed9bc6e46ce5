// PluginBackend (see plugin_backend.h).
#include "engine/registry/plugin_backend.h"

#include <chrono>
#include <new>
#include <utility>

namespace kiln::registry {
namespace {

class PluginModel : public runtime::CompiledModel {
 public:
  PluginModel(const kiln_backend_v1_t& backend, void* model, size_t outputs)
      : backend_(backend), model_(model), outputs_(outputs) {}
  ~PluginModel() override { backend_.destroy(model_); }
  std::string_view backend() const override { return backend_.name; }
  size_t dispatch_count() const override { return counts().first; }
  size_t fallback_count() const override { return counts().second; }

  StatusOr<std::vector<Tensor>> run(const std::vector<Tensor>& inputs, runtime::RunStats* stats) const override {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<kiln_tensor_view_t> views(inputs.size());
    std::vector<const kiln_tensor_view_t*> pointers(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Tensor& t = inputs[i];
      if (!t.defined()) return invalid_argument("input " + std::to_string(i) + " is missing");
      views[i] = {sizeof(kiln_tensor_view_t), static_cast<int32_t>(t.dtype()), t.shape().size(), t.shape().data(),
                  const_cast<void*>(static_cast<const void*>(t.raw_data()))};
      pointers[i] = &views[i];
    }
    Outputs out{std::vector<Tensor>(outputs_), {}};
    const std::string what = "backend '" + std::string(backend_.name) + "'";
    runtime::RunStats reported;
    if (KILN_PLUGIN_HAS_FIELD(&backend_, kiln_backend_v1_t, run_with_stats) && backend_.run_with_stats) {
      kiln_backend_run_stats_t s{};
      s.struct_size = sizeof(s);
      s.device_ms = -1;
      s.add_kernel = &add_kernel;
      s.ctx = &reported;
      KILN_RETURN_IF_ERROR(take_plugin_status(
          backend_.run_with_stats(model_, host_api(), pointers.data(), pointers.size(), &Outputs::alloc, &out, &s),
          what));
      reported.gpu_ms = s.device_ms;
      reported.dispatches = s.dispatches;
      reported.fallbacks = s.fallbacks;
      reported.bytes_read = s.bytes_read;
      reported.bytes_written = s.bytes_written;
      reported.fused_dispatches = s.fused_dispatches;
      // ABI 1.7 (zero from an older plugin, which leaves them as the host set them).
      reported.device_bytes = s.device_bytes;
      reported.activation_bytes = s.activation_bytes;
      reported.memory.arena_bytes = s.activation_bytes;
      reported.memory.no_reuse_bytes = s.no_reuse_bytes;
    } else {
      KILN_RETURN_IF_ERROR(take_plugin_status(
          backend_.run(model_, host_api(), pointers.data(), pointers.size(), &Outputs::alloc, &out), what));
    }
    if (!out.error.empty()) return internal_error(what + ": " + out.error);
    for (size_t i = 0; i < out.tensors.size(); ++i)
      if (!out.tensors[i].defined()) return internal_error(what + " did not produce output " + std::to_string(i));
    if (stats) {
      *stats = std::move(reported);
      stats->wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }
    return std::move(out.tensors);
  }

 private:
  static void add_kernel(void* ctx, const kiln_backend_kernel_stats_t* kernel) {
    if (!kernel) return;
    runtime::KernelTiming k;
    k.kernel = kernel->kernel ? kernel->kernel : "";
    k.node = kernel->node ? kernel->node : "";
    k.gpu_ms = kernel->device_ms;
    if (KILN_PLUGIN_HAS_FIELD(kernel, kiln_backend_kernel_stats_t, flops)) {
      k.bytes_read = kernel->bytes_read;
      k.bytes_written = kernel->bytes_written;
      k.bytes = k.bytes_read + k.bytes_written;
      k.flops = kernel->flops;
    }
    static_cast<runtime::RunStats*>(ctx)->kernels.push_back(std::move(k));
  }

  // (dispatches, fallbacks) where the plugin says (ABI 1.4), else (0, 0).
  std::pair<size_t, size_t> counts() const {
    size_t dispatches = 0, fallbacks = 0;
    if (KILN_PLUGIN_HAS_FIELD(&backend_, kiln_backend_v1_t, model_counts) && backend_.model_counts)
      backend_.model_counts(model_, &dispatches, &fallbacks);
    return {dispatches, fallbacks};
  }

  struct Outputs {
    std::vector<Tensor> tensors;
    std::string error;  // the first refused allocation

    static void* alloc(void* ctx, size_t index, int32_t dtype, size_t rank, const int64_t* dims) {
      auto& self = *static_cast<Outputs*>(ctx);
      if (index >= self.tensors.size()) {
        if (self.error.empty()) self.error = "output " + std::to_string(index) + " does not exist";
        return nullptr;
      }
      if (dtype <= KILN_PLUGIN_DTYPE_UNDEFINED || dtype > KILN_PLUGIN_DTYPE_UINT64 || (rank > 0 && !dims)) {
        if (self.error.empty()) self.error = "output " + std::to_string(index) + " asked for a bad dtype or shape";
        return nullptr;
      }
      auto t = Tensor::allocate(static_cast<DType>(dtype), Shape(dims, dims + rank));
      if (!t.ok()) {
        if (self.error.empty()) self.error = "output " + std::to_string(index) + ": " + t.status().message();
        return nullptr;
      }
      self.tensors[index] = std::move(t).value();
      return self.tensors[index].raw_data();
    }
  };

  const kiln_backend_v1_t& backend_;
  void* model_;
  size_t outputs_;
};

}  // namespace

StatusOr<std::unique_ptr<runtime::CompiledModel>> PluginBackend::compile(const ir::Graph& graph) {
  void* model = nullptr;
  const std::string what = "backend '" + std::string(backend_.name) + "' cannot compile the model";
  const bool takes_options =
      KILN_PLUGIN_HAS_FIELD(&backend_, kiln_backend_v1_t, compile_with_options) && backend_.compile_with_options;
  if (!takes_options && (options_.precision != KILN_PLUGIN_PRECISION_FP32 ||
                         options_.storage == KILN_PLUGIN_STORAGE_IMAGE || options_.profile))
    return unimplemented("backend '" + std::string(backend_.name) +
                         "' takes no fp16, image-storage or profiling option (a plugin older than ABI 1.5)");
  KILN_RETURN_IF_ERROR(with_graph_view(graph, log_, what, [&](const kiln_host_api_t* host, const kiln_graph_t* g) {
    return takes_options ? backend_.compile_with_options(backend_.state, host, g, &options_, &model)
                         : backend_.compile(backend_.state, host, g, &model);
  }));
  if (!model) return internal_error("backend '" + std::string(backend_.name) + "' compiled no model");
  compile_stats_.reset();
  if (KILN_PLUGIN_HAS_FIELD(&backend_, kiln_backend_v1_t, model_compile_stats) && backend_.model_compile_stats) {
    kiln_backend_compile_stats_t stats{};
    stats.struct_size = sizeof(stats);
    backend_.model_compile_stats(model, &stats);
    compile_stats_ = stats;
  }
  auto compiled = std::unique_ptr<runtime::CompiledModel>(
      new (std::nothrow) PluginModel(backend_, model, graph.main().outputs.size()));
  if (!compiled) {
    backend_.destroy(model);
    return out_of_memory("out of memory");
  }
  return compiled;
}

StatusOr<std::optional<kiln_target_info_t>> PluginBackend::target_info(const kiln_backend_v1_t& backend) {
  if (!KILN_PLUGIN_HAS_FIELD(&backend, kiln_backend_v1_t, target_info) || !backend.target_info) return std::nullopt;
  kiln_target_info_t info{};
  info.struct_size = sizeof(info);
  KILN_RETURN_IF_ERROR(take_plugin_status(backend.target_info(backend.state, host_api(), &info),
                                          "backend '" + std::string(backend.name) + "' has no target"));
  info.struct_size = sizeof(info);
  info.device_name[sizeof(info.device_name) - 1] = '\0';
  info.storage_mode = KILN_STORAGE_MODE_AUTO;
  return std::optional<kiln_target_info_t>(info);
}

}  // namespace kiln::registry
