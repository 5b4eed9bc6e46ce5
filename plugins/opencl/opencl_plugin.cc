// kiln.opencl: the OpenCL backend as a plugin (kiln_backend_v1_t, named
// "opencl"). The host hands the optimized graph over as Kiln's textual IR
// (kiln_host_api_t::graph_text, ABI 1.4); the plugin parses it with the
// IR's own parser, plans and compiles it (OpenClModel) and runs it. Nothing
// touches OpenCL until the first compile, so a host that loads every
// installed plugin pays nothing for this one unless a session names it.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "engine/ir/text.h"
#include "kiln/kiln_plugin.hpp"
#include "plugins/opencl/opencl_model.h"

namespace {

using kiln::opencl::OpenClModel;

kiln_plugin_status_t* to_plugin(const kiln_host_api_t* host, const kiln::Status& s) {
  if (s.ok()) return nullptr;
  kiln_plugin_code_t code = KILN_PLUGIN_INTERNAL;
  switch (s.code()) {
    case kiln::StatusCode::kInvalidArgument: code = KILN_PLUGIN_INVALID_ARGUMENT; break;
    case kiln::StatusCode::kNotFound: code = KILN_PLUGIN_NOT_FOUND; break;
    case kiln::StatusCode::kUnimplemented: code = KILN_PLUGIN_UNIMPLEMENTED; break;
    case kiln::StatusCode::kOutOfMemory: code = KILN_PLUGIN_OUT_OF_MEMORY; break;
    case kiln::StatusCode::kUnavailable: code = KILN_PLUGIN_FAILED_PRECONDITION; break;
    case kiln::StatusCode::kFailedPrecondition: code = KILN_PLUGIN_FAILED_PRECONDITION; break;
    default: break;
  }
  return host->make_status(code, s.message().c_str());
}

kiln::StatusOr<std::unique_ptr<OpenClModel>> compile_model(const kiln_host_api_t* host, const kiln_graph_t* graph,
                                                           const kiln::opencl::CompileOptions& options) {
  if (!KILN_PLUGIN_HAS_FIELD(host, kiln_host_api_t, graph_text) || !host->graph_text)
    return kiln::failed_precondition("the host is older than plugin ABI 1.4 (no graph_text)");
  // Constants past a few elements cross as bytes (ABI 1.8), the rest as text.
  constexpr int64_t kInlineElements = 64;
  const bool external = KILN_PLUGIN_HAS_FIELD(host, kiln_host_api_t, graph_text_external) && host->graph_text_external;
  size_t length = 0;
  const char* text =
      external ? host->graph_text_external(graph, kInlineElements, &length) : host->graph_text(graph, &length);
  if (!text) return kiln::out_of_memory("the host could not print the graph");
  kiln::ir::ParseOptions parse;
  parse.external_constant = [&](int64_t id, kiln::DType dtype,
                                const kiln::Shape& shape) -> kiln::StatusOr<kiln::Tensor> {
    size_t bytes = 0;
    const void* data = host->value_constant(graph, static_cast<kiln_value_id_t>(id), &bytes);
    if (!data) return kiln::not_found("the host has no constant with value id " + std::to_string(id));
    KILN_ASSIGN_OR_RETURN(kiln::Tensor t, kiln::Tensor::allocate(dtype, shape));
    if (bytes != t.nbytes())
      return kiln::internal_error("the host's constant has " + std::to_string(bytes) + " bytes, its type " +
                                  std::to_string(t.nbytes()));
    if (bytes > 0) std::memcpy(t.raw_data(), data, bytes);
    return t;
  };
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<kiln::ir::Graph> g,
                        kiln::ir::parse_graph(std::string_view(text, length), parse));
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<kiln::opencl::ClDevice> device, kiln::opencl::ClDevice::shared());
  return OpenClModel::compile(std::move(g), std::move(device), options);
}

kiln_plugin_status_t* compile_with_options(void*, const kiln_host_api_t* host, const kiln_graph_t* graph,
                                           const kiln_backend_options_t* options, void** out_model) {
  kiln::opencl::CompileOptions o;
  if (options) {
    if (KILN_PLUGIN_HAS_FIELD(options, kiln_backend_options_t, precision))
      o.fp16 = options->precision == KILN_PLUGIN_PRECISION_FP16;
    if (KILN_PLUGIN_HAS_FIELD(options, kiln_backend_options_t, storage))
      o.storage = options->storage == KILN_PLUGIN_STORAGE_IMAGE ? kiln::planner::Storage::kImage
                                                                 : kiln::planner::Storage::kBuffer;
    if (KILN_PLUGIN_HAS_FIELD(options, kiln_backend_options_t, profile)) o.profile = options->profile != 0;
  }
  // Driver debugging switches (README, "Debugging a driver").
  const char* arena = std::getenv("KILN_OPENCL_ARENA");
  o.arena = !(arena && std::strcmp(arena, "off") == 0);
  const char* check = std::getenv("KILN_OPENCL_CHECK");
  o.check_each_dispatch = check && *check && std::strcmp(check, "0") != 0;
  const char* poison = std::getenv("KILN_OPENCL_POISON");
  o.poison = poison && *poison && std::strcmp(poison, "0") != 0;
  if (const char* trace = std::getenv("KILN_OPENCL_TRACE")) o.trace = trace;
  auto model = compile_model(host, graph, o);
  if (!model.ok()) return to_plugin(host, model.status());
  const auto stats = (*model)->stats();
  const kiln::opencl::ProgramCacheStats& programs = (*model)->program_stats();
  const std::string note = "opencl: " + (*model)->device_name() + ": " + std::to_string(stats.dispatches) +
                           " dispatches, " + std::to_string(stats.fallbacks) + " host fallbacks; programs: " +
                           std::to_string(programs.builds) + " built, " + std::to_string(programs.disk_hits) +
                           " from the disk cache, " + std::to_string(programs.memory_hits) + " in memory, " +
                           std::to_string(programs.rejected_files) + " cache files rejected";
  host->log(KILN_LOG_INFO, note.c_str());
  *out_model = model->release();
  return nullptr;
}

kiln_plugin_status_t* compile(void* state, const kiln_host_api_t* host, const kiln_graph_t* graph, void** out_model) {
  return compile_with_options(state, host, graph, nullptr, out_model);
}

kiln_plugin_status_t* run_with_stats(void* opaque, const kiln_host_api_t* host,
                                     const kiln_tensor_view_t* const* inputs, size_t input_count,
                                     kiln_backend_alloc_output_fn alloc_output, void* alloc_ctx,
                                     kiln_backend_run_stats_t* stats) {
  const OpenClModel& model = *static_cast<const OpenClModel*>(opaque);
  std::vector<kiln::Tensor> in;
  for (size_t i = 0; i < input_count; ++i) {
    const kiln_tensor_view_t& v = *inputs[i];
    if (v.dtype <= KILN_PLUGIN_DTYPE_UNDEFINED || v.dtype > KILN_PLUGIN_DTYPE_UINT64 || (v.rank > 0 && !v.dims))
      return host->make_status(KILN_PLUGIN_INVALID_ARGUMENT, ("input " + std::to_string(i) + " is malformed").c_str());
    auto t = kiln::Tensor::allocate(static_cast<kiln::DType>(v.dtype), kiln::Shape(v.dims, v.dims + v.rank));
    if (!t.ok()) return to_plugin(host, t.status());
    if (t->nbytes() > 0) std::memcpy(t->raw_data(), v.data, t->nbytes());
    in.push_back(std::move(t).value());
  }
  kiln::opencl::RunReport report;
  auto outputs = model.run(in, stats ? &report : nullptr);
  if (!outputs.ok()) return to_plugin(host, outputs.status());
  if (stats) {
    if (KILN_PLUGIN_HAS_FIELD(stats, kiln_backend_run_stats_t, device_ms)) stats->device_ms = report.device_ms;
    if (KILN_PLUGIN_HAS_FIELD(stats, kiln_backend_run_stats_t, dispatches)) stats->dispatches = report.dispatches;
    if (KILN_PLUGIN_HAS_FIELD(stats, kiln_backend_run_stats_t, fallbacks)) stats->fallbacks = report.fallbacks;
    if (KILN_PLUGIN_HAS_FIELD(stats, kiln_backend_run_stats_t, bytes_written)) {
      stats->bytes_read = report.bytes_read;
      stats->bytes_written = report.bytes_written;
    }
    if (KILN_PLUGIN_HAS_FIELD(stats, kiln_backend_run_stats_t, fused_dispatches))
      stats->fused_dispatches = report.fused_dispatches;
    if (KILN_PLUGIN_HAS_FIELD(stats, kiln_backend_run_stats_t, no_reuse_bytes)) {
      stats->device_bytes = report.device_bytes;
      stats->activation_bytes = report.arena_bytes;
      stats->no_reuse_bytes = report.no_reuse_bytes;
    }
    if (KILN_PLUGIN_HAS_FIELD(stats, kiln_backend_run_stats_t, ctx) && stats->add_kernel)
      for (const kiln::opencl::KernelTime& k : report.kernels) {
        const kiln_backend_kernel_stats_t row = {sizeof(row), k.kernel.c_str(), k.node.c_str(), k.ms,
                                                 k.bytes_read, k.bytes_written, k.flops};
        stats->add_kernel(stats->ctx, &row);
      }
  }
  for (size_t i = 0; i < outputs->size(); ++i) {
    const kiln::Tensor& t = (*outputs)[i];
    void* out = alloc_output(alloc_ctx, i, static_cast<int32_t>(t.dtype()), t.shape().size(), t.shape().data());
    if (!out) return host->make_status(KILN_PLUGIN_INTERNAL, "the host refused an output");
    if (t.nbytes() > 0) std::memcpy(out, t.raw_data(), t.nbytes());
  }
  return nullptr;
}

kiln_plugin_status_t* run(void* model, const kiln_host_api_t* host, const kiln_tensor_view_t* const* inputs,
                          size_t input_count, kiln_backend_alloc_output_fn alloc_output, void* alloc_ctx) {
  return run_with_stats(model, host, inputs, input_count, alloc_output, alloc_ctx, nullptr);
}

void destroy(void* model) { delete static_cast<OpenClModel*>(model); }

// `kiln info`: every platform and device, the limits the backend plans with,
// image support and limits (image storage) and the extensions.
const char* describe(void*) {
  static thread_local std::string text;
  auto platforms = kiln::opencl::list_devices();
  if (!platforms.ok()) {
    text = "no OpenCL: " + platforms.status().message() + "\n";
    return text.c_str();
  }
  text.clear();
  for (size_t p = 0; p < platforms->size(); ++p) {
    const auto& devices = (*platforms)[p];
    text += "platform " + std::to_string(p) + ": " + (devices.empty() ? std::string("(no devices)") : devices[0].platform) +
            (devices.empty() ? "" : " (" + devices[0].platform_version + ")") + "\n";
    for (size_t d = 0; d < devices.size(); ++d) {
      const kiln::opencl::DeviceDescription& x = devices[d];
      const char* type = (x.type & CL_DEVICE_TYPE_GPU) ? "gpu" : (x.type & CL_DEVICE_TYPE_CPU) ? "cpu" : "other";
      text += "  device " + std::to_string(p) + ":" + std::to_string(d) + ": " + x.name + " (" + type + ")\n";
      text += "    version: " + x.version + ", driver " + x.driver + "\n";
      text += "    global memory: " + std::to_string(x.global_memory >> 20) + " MiB (max allocation " +
              std::to_string(x.max_alloc >> 20) + " MiB), local memory: " + std::to_string(x.local_memory >> 10) +
              " KiB, max workgroup: " + std::to_string(x.max_workgroup) + "\n";
      text += "    images: " + (x.images ? "yes, image2d up to " + std::to_string(x.image2d_width) + " x " +
                                               std::to_string(x.image2d_height)
                                         : std::string("no")) + "\n";
      text += "    fp16: " + std::string(x.extensions.find("cl_khr_fp16") != std::string::npos ? "yes" : "no") +
              "\n    extensions: " + x.extensions + "\n";
    }
  }
  return text.c_str();
}

// The device as the session's passes see it (kiln.layout's per-tensor
// storage under --storage auto): what the planner is told (ClDevice::target)
// in the ABI's terms, with Vulkan's device-type numbering.
kiln_plugin_status_t* target_info(void*, const kiln_host_api_t* host, kiln_target_info_t* out) {
  auto device = kiln::opencl::ClDevice::shared();
  if (!device.ok()) return to_plugin(host, device.status());
  const kiln::opencl::DeviceDescription& d = (*device)->description();
  const kiln::planner::TargetInfo t = (*device)->target();
  out->shared_memory_bytes = t.max_shared_memory;
  out->compute_units = t.compute_units;
  out->subgroup_size = 0;  // the translation has no subgroup operations
  out->max_workgroup_invocations = t.max_workgroup_invocations;
  out->max_image_dimension_2d = t.max_image_dimension_2d;
  out->cooperative_matrix = 0;
  out->fp16_arithmetic = 0;  // fp32 kernels only (opencl_model.cc)
  out->vendor_id = d.vendor_id;
  std::snprintf(out->device_name, sizeof out->device_name, "%s", d.name.c_str());
  if (KILN_PLUGIN_HAS_FIELD(out, kiln_target_info_t, device_type))
    out->device_type = (d.type & CL_DEVICE_TYPE_CPU) ? 4 : !(d.type & CL_DEVICE_TYPE_GPU) ? 0 : d.unified_memory ? 1 : 2;
  return nullptr;
}

void model_counts(void* model, size_t* dispatches, size_t* fallbacks) {
  const kiln::opencl::ModelStats stats = static_cast<const OpenClModel*>(model)->stats();
  if (dispatches) *dispatches = stats.dispatches;
  if (fallbacks) *fallbacks = stats.fallbacks;
}

void model_compile_stats(void* model, kiln_backend_compile_stats_t* out) {
  if (!out || !KILN_PLUGIN_HAS_FIELD(out, kiln_backend_compile_stats_t, rejected_files)) return;
  const kiln::opencl::ProgramCacheStats& s = static_cast<const OpenClModel*>(model)->program_stats();
  out->kernels_built = s.builds;
  out->disk_hits = s.disk_hits;
  out->memory_hits = s.memory_hits;
  out->rejected_files = s.rejected_files;
}

const kiln_backend_v1_t backend = {sizeof(kiln_backend_v1_t), "opencl", nullptr, compile, run, destroy, describe,
                                   model_counts, compile_with_options, run_with_stats, model_compile_stats,
                                   target_info};

const void* get_interface(const char* name) {
  return std::strcmp(name, KILN_INTERFACE_BACKEND_V1) == 0 ? &backend : nullptr;
}

kiln_plugin_t make_descriptor() {
  kiln_plugin_t p = kiln::plugin::make_plugin("kiln.opencl", "0.1.0", nullptr, 0);
  p.get_interface = get_interface;
  return p;
}

const kiln_plugin_t plugin = make_descriptor();

}  // namespace

KILN_PLUGIN_DEFINE_QUERY(kiln_plugin_query, plugin)
