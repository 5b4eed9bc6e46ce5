// The C API (include/kiln/kiln.h) over the C++ engine: tensors, models,
// sessions (kiln_c_api_vulkan.cc has Vulkan devices and buffer bindings).
// A session is the engine session (engine/session/session.h): the same pass
// pipeline, plugins and backends `kiln run` uses.
//
// Handles are thin structs around the C++ objects (kiln_c_api_internal.h).
// Nothing here throws (the engine builds with -fno-exceptions; the importer
// contains protobuf's exceptions itself), so no exception can cross the API.
#include <cstddef>
#include <cstdio>
#include <iterator>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "api/kiln_c_api_internal.h"
#include "frontends/onnx/onnx_importer.h"

using kiln::capi::make_status;
using kiln::capi::null_arg;
using kiln::capi::to_c;

namespace {

// Splits "a,b,c" into names (empty items dropped); NULL gives none.
std::vector<std::string> name_list(const char* list) {
  return list ? kiln::registry::split_pass_list(list) : std::vector<std::string>{};
}

// kiln_session_options_t -> the engine session's options. Fields past an
// older caller's struct_size keep their defaults.
kiln_status_t* session_options(const kiln_session_options_t* options, kiln::session::SessionOptions& out,
                               kiln_vulkan_device_t** out_device) {
  out.vulkan.max_signatures = 32;
  out.storage_auto = true;  // KILN_STORAGE_AUTO, the default
  out.context_options.kernel_cache_dir = std::nullopt;
  *out_device = nullptr;
  if (!options) return nullptr;
  auto has = [&](size_t offset, size_t size) { return options->struct_size >= offset + size; };
#define KILN_HAS(field) has(offsetof(kiln_session_options_t, field), sizeof(options->field))
  if (!KILN_HAS(backend)) return make_status(KILN_INVALID_ARGUMENT, "kiln_session_options_t.struct_size is too small");
  kiln_backend_t backend = options->backend;
  if (backend != KILN_BACKEND_DEFAULT && backend != KILN_BACKEND_REFERENCE && backend != KILN_BACKEND_VULKAN &&
      backend != KILN_BACKEND_PLUGIN)
    return make_status(KILN_INVALID_ARGUMENT, "unknown backend " + std::to_string(static_cast<int>(backend)));
  kiln_vulkan_device_t* device = KILN_HAS(vulkan_device) ? options->vulkan_device : nullptr;
  if ((backend == KILN_BACKEND_REFERENCE || backend == KILN_BACKEND_PLUGIN) && device)
    return make_status(KILN_INVALID_ARGUMENT, std::string("a vulkan_device was given for the ") +
                                                  (backend == KILN_BACKEND_PLUGIN ? "plugin" : "reference") +
                                                  " backend");
  if (backend == KILN_BACKEND_PLUGIN) {
    if (!KILN_HAS(backend_plugin) || !options->backend_plugin || !*options->backend_plugin)
      return make_status(KILN_INVALID_ARGUMENT, "KILN_BACKEND_PLUGIN needs kiln_session_options_t.backend_plugin");
    out.backend_plugin = options->backend_plugin;
  }
  // A device given means Vulkan was asked for.
  if (backend == KILN_BACKEND_DEFAULT && device) backend = KILN_BACKEND_VULKAN;
  out.backend = backend == KILN_BACKEND_REFERENCE ? kiln::session::BackendChoice::kReference
              : backend == KILN_BACKEND_VULKAN    ? kiln::session::BackendChoice::kVulkan
              : backend == KILN_BACKEND_PLUGIN    ? kiln::session::BackendChoice::kPlugin
                                                  : kiln::session::BackendChoice::kAuto;
  *out_device = device;
  if (KILN_HAS(device_selector) && options->device_selector) out.context_options.selector = options->device_selector;
  if (KILN_HAS(storage)) {
    if (options->storage != KILN_STORAGE_AUTO && options->storage != KILN_STORAGE_BUFFER &&
        options->storage != KILN_STORAGE_IMAGE)
      return make_status(KILN_INVALID_ARGUMENT, "unknown storage " + std::to_string(static_cast<int>(options->storage)));
    if (options->storage == KILN_STORAGE_IMAGE) out.vulkan.plan.storage = kiln::planner::Storage::kImage;
    out.storage_auto = options->storage == KILN_STORAGE_AUTO;
  }
  if (KILN_HAS(precision)) {
    if (options->precision != KILN_PRECISION_FP32 && options->precision != KILN_PRECISION_FP16)
      return make_status(KILN_INVALID_ARGUMENT,
                         "unknown precision " + std::to_string(static_cast<int>(options->precision)));
    if (options->precision == KILN_PRECISION_FP16) out.vulkan.plan.precision = kiln::planner::ElemType::kF16;
  }
  if (KILN_HAS(profile)) out.vulkan.profile = options->profile != 0;
  if (KILN_HAS(max_signatures) && options->max_signatures) out.vulkan.max_signatures = options->max_signatures;
  if (KILN_HAS(passes) && options->passes) {
    const std::string passes = options->passes;
    if (passes == "none") out.run_passes = false;
    else if (!passes.empty() && passes != "default") {
      out.pipeline.passes = name_list(options->passes);
      if (out.pipeline.passes.empty())
        return make_status(KILN_INVALID_ARGUMENT, "kiln_session_options_t.passes names no pass: '" + passes + "'");
    }
  }
  if (KILN_HAS(disabled_passes)) out.pipeline.disabled = name_list(options->disabled_passes);
  if (KILN_HAS(plugin_file_count) && options->plugin_file_count) {
    if (!options->plugin_files) return null_arg("kiln_session_options_t.plugin_files");
    for (size_t i = 0; i < options->plugin_file_count; ++i) {
      if (!options->plugin_files[i])
        return make_status(KILN_INVALID_ARGUMENT, "plugin_files[" + std::to_string(i) + "] is NULL");
      out.plugins.plugin_files.emplace_back(options->plugin_files[i]);
    }
  }
  if (KILN_HAS(ignore_plugin_path)) out.plugins.load_environment = options->ignore_plugin_path == 0;
  if (KILN_HAS(plugin_dir) && options->plugin_dir) out.plugins.plugin_dir = options->plugin_dir;
  if (KILN_HAS(disable_cooperative_matrix) && options->disable_cooperative_matrix)
    out.vulkan.plan.cooperative_matrix = false;
  if (KILN_HAS(disable_inplace) && options->disable_inplace) out.vulkan.plan.inplace = false;
  if (KILN_HAS(disable_integer_dot_product) && options->disable_integer_dot_product) {
    out.vulkan.plan.integer_dot_product = false;
    out.int8_kernels = kiln::runtime::Int8Kernels::kOff;  // unless int8_kernels says ON
  }
  if (KILN_HAS(int8_kernels) && options->int8_kernels != KILN_INT8_KERNELS_AUTO) {
    if (options->int8_kernels != KILN_INT8_KERNELS_ON && options->int8_kernels != KILN_INT8_KERNELS_OFF)
      return make_status(KILN_INVALID_ARGUMENT, "kiln_session_options_t.int8_kernels is " +
                                                    std::to_string(options->int8_kernels) +
                                                    "; KILN_INT8_KERNELS_AUTO (0), _ON (1) or _OFF (2)");
    out.int8_kernels = options->int8_kernels == KILN_INT8_KERNELS_ON ? kiln::runtime::Int8Kernels::kOn
                                                                      : kiln::runtime::Int8Kernels::kOff;
  }
  if (KILN_HAS(save_pipeline_cache)) out.save_pipeline_cache = options->save_pipeline_cache != 0;
  if (KILN_HAS(validation) && options->validation) out.context_options.validation = kiln::vk::Validation::kRequired;
  if (KILN_HAS(device_memory_limit)) out.vulkan.device_memory_limit = options->device_memory_limit;
  if (KILN_HAS(max_concurrent_runs) && options->max_concurrent_runs) {
    if (options->max_concurrent_runs > kiln::runtime::kMaxConcurrentRuns)
      return make_status(KILN_INVALID_ARGUMENT, "kiln_session_options_t.max_concurrent_runs is " +
                                                    std::to_string(options->max_concurrent_runs) + "; at most " +
                                                    std::to_string(kiln::runtime::kMaxConcurrentRuns));
    out.vulkan.concurrent_runs = options->max_concurrent_runs;
  }
  if (KILN_HAS(log_user_data) && options->log) {
    kiln_log_fn fn = options->log;
    void* user = options->log_user_data;
    out.pipeline.log = [fn, user](kiln_log_level_t level, const std::string& message) {
      fn(user, static_cast<kiln_message_level_t>(level), message.c_str());
    };
  }
#undef KILN_HAS
  return nullptr;
}

}  // namespace

namespace kiln::capi {

kiln_status_t* copy_outputs(std::vector<kiln::Tensor>& out, kiln_tensor_t** out_outputs) {
  std::vector<kiln_tensor_t*> handles;
  auto fail = [&](kiln_status_t* status) {
    for (auto* p : handles) delete p;
    return status;
  };
  for (kiln::Tensor& t : out) {
    if (!t.defined()) {  // bound to a device buffer: the host reads it there
      handles.push_back(nullptr);
      continue;
    }
    // Outputs may share storage with inputs or model constants (Identity,
    // Reshape); the caller owns what it gets, so hand out a private copy.
    auto copy = t.clone();
    if (!copy.ok()) return fail(to_c(copy.status()));
    auto* h = new (std::nothrow) kiln_tensor_t{std::move(copy).value()};
    if (!h) return fail(make_status(KILN_OUT_OF_MEMORY, "out of memory"));
    handles.push_back(h);
  }
  for (size_t i = 0; i < handles.size(); ++i) out_outputs[i] = handles[i];
  return nullptr;
}

}  // namespace kiln::capi

extern "C" {

kiln_status_code_t kiln_status_code(const kiln_status_t* status) { return status ? status->code : KILN_OK; }
const char* kiln_status_message(const kiln_status_t* status) { return status ? status->message.c_str() : ""; }
void kiln_status_free(kiln_status_t* status) { delete status; }

const char* kiln_version_string(void) { return "0.2.0"; }

kiln_status_t* kiln_tensor_create(kiln_dtype_t dtype, const int64_t* shape, size_t rank, kiln_tensor_t** out_tensor) {
  if (!out_tensor) return null_arg("out_tensor");
  if (rank > 0 && !shape) return null_arg("shape");
  if (dtype <= KILN_DTYPE_UNDEFINED || dtype > KILN_DTYPE_UINT64)
    return make_status(KILN_INVALID_ARGUMENT, "unknown dtype " + std::to_string(static_cast<int>(dtype)));
  kiln::Shape s(shape, shape + rank);
  auto t = kiln::Tensor::allocate(static_cast<kiln::DType>(dtype), s);
  if (!t.ok()) return to_c(t.status());
  auto* handle = new (std::nothrow) kiln_tensor_t{std::move(t).value()};
  if (!handle) return make_status(KILN_OUT_OF_MEMORY, "out of memory");
  *out_tensor = handle;
  return nullptr;
}

void kiln_tensor_destroy(kiln_tensor_t* tensor) { delete tensor; }
kiln_dtype_t kiln_tensor_dtype(const kiln_tensor_t* t) {
  return t ? static_cast<kiln_dtype_t>(t->tensor.dtype()) : KILN_DTYPE_UNDEFINED;
}
size_t kiln_tensor_rank(const kiln_tensor_t* t) { return t ? static_cast<size_t>(t->tensor.rank()) : 0; }
int64_t kiln_tensor_dim(const kiln_tensor_t* t, size_t axis) {
  if (!t || axis >= static_cast<size_t>(t->tensor.rank())) return -1;
  return t->tensor.dim(static_cast<int64_t>(axis));
}
size_t kiln_tensor_byte_size(const kiln_tensor_t* t) { return t ? t->tensor.nbytes() : 0; }
void* kiln_tensor_data(kiln_tensor_t* t) { return t ? t->tensor.raw_data() : nullptr; }

static kiln_status_t* wrap_model(kiln::StatusOr<std::unique_ptr<kiln::ir::Graph>> g, kiln_model_t** out_model) {
  if (!g.ok()) return to_c(g.status());
  auto* m = new (std::nothrow) kiln_model_t;
  if (!m) return make_status(KILN_OUT_OF_MEMORY, "out of memory");
  m->graph = std::move(g).value();
  for (kiln::ir::ValueId id : m->graph->main().inputs) {
    const kiln::ir::SymShape& shape = m->graph->value(id).shape;
    m->input_shape_text.push_back(shape.to_string());
    std::vector<std::string> dims;
    for (const kiln::ir::Dim& d : shape.dims) dims.push_back(d.is_symbol() || d.is_expr() ? d.to_string() : "");
    m->input_dim_text.push_back(std::move(dims));
  }
  *out_model = m;
  return nullptr;
}

kiln_status_t* kiln_model_load(const char* path, kiln_model_t** out_model) {
  if (!path) return null_arg("path");
  if (!out_model) return null_arg("out_model");
  return wrap_model(kiln::onnx::import_model_file(path), out_model);
}

kiln_status_t* kiln_model_load_from_memory(const void* data, size_t size, kiln_model_t** out_model) {
  if (!data && size) return null_arg("data");
  if (!out_model) return null_arg("out_model");
  return wrap_model(kiln::onnx::import_model_bytes(data, size, ""), out_model);
}

void kiln_model_retain(kiln_model_t* model) {
  if (model) model->refs.fetch_add(1, std::memory_order_relaxed);
}

void kiln_model_release(kiln_model_t* model) {
  if (model && model->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete model;
}

size_t kiln_model_input_count(const kiln_model_t* m) { return m ? m->graph->main().inputs.size() : 0; }
size_t kiln_model_output_count(const kiln_model_t* m) { return m ? m->graph->main().outputs.size() : 0; }
const char* kiln_model_input_name(const kiln_model_t* m, size_t i) {
  if (!m || i >= m->graph->main().inputs.size()) return nullptr;
  return m->graph->value(m->graph->main().inputs[i]).name.c_str();
}
const char* kiln_model_output_name(const kiln_model_t* m, size_t i) {
  if (!m || i >= m->graph->main().outputs.size()) return nullptr;
  return m->graph->value(m->graph->main().outputs[i]).name.c_str();
}

kiln_status_t* kiln_session_create(kiln_model_t* model, const kiln_session_options_t* options,
                                   kiln_session_t** out_session) {
  if (!model) return null_arg("model");
  if (!out_session) return null_arg("out_session");
  kiln::session::SessionOptions so;
  kiln_vulkan_device_t* device = nullptr;
  if (kiln_status_t* bad = session_options(options, so, &device)) return bad;
  so.context = device ? device->context.get() : nullptr;
  auto engine = kiln::session::Session::create(*model->graph, so);
  if (!engine.ok()) {
    kiln::Status status = std::move(engine).status();
    return to_c(so.backend == kiln::session::BackendChoice::kVulkan ? status.add_context("the Vulkan backend")
                                                                     : status);
  }
  auto* s = new (std::nothrow) kiln_session_t;
  if (!s) return make_status(KILN_OUT_OF_MEMORY, "out of memory");
  kiln_model_retain(model);
  s->model = model;
  if (device && (*engine)->vulkan_model()) {
    kiln_vulkan_device_retain(device);
    s->vulkan = device;
  }
  s->engine = std::move(engine).value();
  if (so.vulkan.plan.storage == kiln::planner::Storage::kImage) s->storage = "image";
  if (so.storage_auto) s->storage = "auto";
  if (so.vulkan.plan.precision == kiln::planner::ElemType::kF16) s->precision = "fp16";
  *out_session = s;
  return nullptr;
}

void kiln_session_destroy(kiln_session_t* session) {
  if (!session) return;
  // The engine session borrows the device's context and the model's graph.
  session->engine.reset();
  kiln_vulkan_device_release(session->vulkan);
  kiln_model_release(session->model);
  delete session;
}

kiln_backend_t kiln_session_backend(const kiln_session_t* session) {
  if (!session) return KILN_BACKEND_DEFAULT;
  if (session->vulkan_model()) return KILN_BACKEND_VULKAN;
  return session->engine->backend() == "reference" ? KILN_BACKEND_REFERENCE : KILN_BACKEND_PLUGIN;
}

namespace {

// kiln_run_stats_t from `s`, each field only when the caller's struct_size
// holds it (the size was checked to cover kernel_timings).
void fill_c_run_stats(const kiln_session_t& session, const kiln::runtime::RunStats& s, kiln_run_stats_t* out_stats) {
  out_stats->wall_ms = s.wall_ms;
  // Vulkan, and a backend plugin's device time (profiled runs; ABI 1.5).
  const bool device = session.engine->backend() != "reference";
  out_stats->gpu_ms = device ? s.gpu_ms : -1;
  out_stats->dispatches = s.dispatches;
  out_stats->fallbacks = s.fallbacks;
  out_stats->recorded = s.recorded ? 1 : 0;
  out_stats->kernel_timings = static_cast<uint32_t>(s.kernels.size());
  // Fields past an older caller's struct_size are left alone.
  if (out_stats->struct_size >= offsetof(kiln_run_stats_t, activation_bytes) + sizeof(out_stats->activation_bytes)) {
    out_stats->device_bytes = s.device_bytes;
    out_stats->activation_bytes = s.activation_bytes;
  }
  if (out_stats->struct_size >= offsetof(kiln_run_stats_t, fused_dispatches) + sizeof(out_stats->fused_dispatches)) {
    out_stats->bytes_read = s.bytes_read;
    out_stats->bytes_written = s.bytes_written;
    out_stats->fused_dispatches = s.fused_dispatches;
  }
  if (out_stats->struct_size >= offsetof(kiln_run_stats_t, queue) + sizeof(out_stats->queue)) {
    out_stats->gpu_begin_ns = device ? s.gpu_begin_ns : 0;
    out_stats->gpu_end_ns = device ? s.gpu_end_ns : 0;
    out_stats->queue = s.queue;
  }
}

bool run_stats_size_ok(const kiln_run_stats_t* out_stats) {
  return out_stats->struct_size >= offsetof(kiln_run_stats_t, kernel_timings) + sizeof(out_stats->kernel_timings);
}

}  // namespace

kiln_status_t* kiln_session_run(kiln_session_t* session, const kiln_tensor_t* const* inputs, size_t input_count,
                                kiln_tensor_t** out_outputs, size_t output_count) {
  return kiln_session_run_with_stats(session, inputs, input_count, out_outputs, output_count, nullptr);
}

kiln_status_t* kiln_session_run_with_stats(kiln_session_t* session, const kiln_tensor_t* const* inputs,
                                           size_t input_count, kiln_tensor_t** out_outputs, size_t output_count,
                                           kiln_run_stats_t* out_stats) {
  if (!session) return null_arg("session");
  if (out_stats && !run_stats_size_ok(out_stats))
    return make_status(KILN_INVALID_ARGUMENT, "kiln_run_stats_t.struct_size is too small");
  kiln::runtime::VulkanModel* vulkan = session->vulkan_model();
  if (input_count && !inputs && !vulkan) return null_arg("inputs");
  if (!out_outputs) return null_arg("out_outputs");
  const size_t expected_out = session->engine->graph().main().outputs.size();
  if (output_count != expected_out)
    return make_status(KILN_INVALID_ARGUMENT, "the model has " + std::to_string(expected_out) +
                                                  " outputs, output_count is " + std::to_string(output_count));
  std::vector<kiln::Tensor> in;
  for (size_t i = 0; i < input_count; ++i) {
    if (inputs && inputs[i]) {
      in.push_back(inputs[i]->tensor);
    } else if (vulkan) {
      in.emplace_back();  // bound to a buffer, or reported missing by the run
    } else {
      return make_status(KILN_INVALID_ARGUMENT, "input " + std::to_string(i) + " is NULL");
    }
  }
  kiln::runtime::RunStats stats;
  kiln::StatusOr<std::vector<kiln::Tensor>> out = std::vector<kiln::Tensor>{};
  if (vulkan) {
    kiln::runtime::DeviceBindings bindings;
    {
      std::lock_guard<std::mutex> lock(session->bindings_mutex);
      bindings = session->bindings;
    }
    out = vulkan->run(in, bindings, &stats);
  } else {
    out = session->engine->run(in, &stats);
  }
  if (!out.ok()) return to_c(out.status());
  if (out_stats) fill_c_run_stats(*session, stats, out_stats);
  {
    std::lock_guard<std::mutex> lock(session->stats_mutex);
    session->last = std::move(stats);
    session->has_last = true;
  }
  return kiln::capi::copy_outputs(*out, out_outputs);
}

size_t kiln_session_pass_count(const kiln_session_t* session) {
  return session ? session->engine->pass_records().size() : 0;
}

kiln_status_t* kiln_session_pass_record(const kiln_session_t* session, size_t index, kiln_pass_record_t* out_record) {
  if (!session) return null_arg("session");
  if (!out_record) return null_arg("out_record");
  if (out_record->struct_size < offsetof(kiln_pass_record_t, statistic_count) + sizeof(out_record->statistic_count))
    return make_status(KILN_INVALID_ARGUMENT, "kiln_pass_record_t.struct_size is too small");
  const auto& records = session->engine->pass_records();
  if (index >= records.size())
    return make_status(KILN_OUT_OF_RANGE,
                       "pass " + std::to_string(index) + " of " + std::to_string(records.size()) + " passes");
  const kiln::registry::PassRecord& r = records[index];
  std::snprintf(out_record->name, sizeof(out_record->name), "%s", r.name.c_str());
  out_record->ms = r.milliseconds;
  out_record->committed = r.committed ? 1 : 0;
  out_record->skipped = r.skipped ? 1 : 0;
  out_record->statistic_count = static_cast<uint32_t>(r.statistics.size());
  return nullptr;
}

kiln_status_t* kiln_session_pass_statistic(const kiln_session_t* session, size_t pass_index, size_t statistic_index,
                                           const char** out_name, int64_t* out_value) {
  if (!session) return null_arg("session");
  if (!out_name) return null_arg("out_name");
  if (!out_value) return null_arg("out_value");
  const auto& records = session->engine->pass_records();
  if (pass_index >= records.size())
    return make_status(KILN_OUT_OF_RANGE,
                       "pass " + std::to_string(pass_index) + " of " + std::to_string(records.size()) + " passes");
  const auto& stats = records[pass_index].statistics;
  if (statistic_index >= stats.size())
    return make_status(KILN_OUT_OF_RANGE, "statistic " + std::to_string(statistic_index) + " of " +
                                              std::to_string(stats.size()) + " of pass '" +
                                              records[pass_index].name + "'");
  auto it = std::next(stats.begin(), static_cast<std::ptrdiff_t>(statistic_index));
  *out_name = it->first.c_str();
  *out_value = it->second;
  return nullptr;
}

size_t kiln_session_node_count(const kiln_session_t* session) {
  return session ? session->engine->graph().num_live_nodes() : 0;
}

kiln_status_t* kiln_session_last_run_stats(const kiln_session_t* session, kiln_run_stats_t* out_stats) {
  if (!session) return null_arg("session");
  if (!out_stats) return null_arg("out_stats");
  if (!run_stats_size_ok(out_stats)) return make_status(KILN_INVALID_ARGUMENT, "kiln_run_stats_t.struct_size is too small");
  std::lock_guard<std::mutex> lock(session->stats_mutex);
  if (!session->has_last) return make_status(KILN_FAILED_PRECONDITION, "the session has not run yet");
  fill_c_run_stats(*session, session->last, out_stats);
  return nullptr;
}

kiln_status_t* kiln_session_kernel_timing(const kiln_session_t* session, size_t index,
                                          kiln_kernel_timing_t* out_timing) {
  if (!session) return null_arg("session");
  if (!out_timing) return null_arg("out_timing");
  if (out_timing->struct_size < offsetof(kiln_kernel_timing_t, gpu_ms) + sizeof(out_timing->gpu_ms))
    return make_status(KILN_INVALID_ARGUMENT, "kiln_kernel_timing_t.struct_size is too small");
  std::lock_guard<std::mutex> lock(session->stats_mutex);
  const size_t n = session->has_last ? session->last.kernels.size() : 0;
  if (index >= n)
    return make_status(KILN_OUT_OF_RANGE, "kernel timing " + std::to_string(index) + " of " + std::to_string(n) +
                                              (session->has_last ? "" : " (the session has not run yet)"));
  const kiln::runtime::KernelTiming& k = session->last.kernels[index];
  std::snprintf(out_timing->kernel, sizeof(out_timing->kernel), "%s", k.kernel.c_str());
  std::snprintf(out_timing->node, sizeof(out_timing->node), "%s", k.node.c_str());
  out_timing->gpu_ms = k.gpu_ms;
  if (out_timing->struct_size >= offsetof(kiln_kernel_timing_t, bytes_written) + sizeof(out_timing->bytes_written)) {
    out_timing->bytes_read = k.bytes_read;
    out_timing->bytes_written = k.bytes_written;
  }
  return nullptr;
}

}  // extern "C"
