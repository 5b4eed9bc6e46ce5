// The C API's descriptions (kiln.h "descriptions"): the compiled session and
// its last run as JSON, the optimized graph as text IR or Graphviz, the
// plugin catalogue and the Vulkan devices. These are what `kiln run --stats`,
// `kiln graph`, `kiln passes` and `kiln info` print, so the tool needs no
// engine of its own. Every document is written with the one JsonWriter.
#include "api/kiln_c_api_internal.h"
#include "engine/base/json_writer.h"
#include "engine/ir/text.h"
#include "engine/registry/default_pipeline.h"
#include "kiln/kiln_plugin.h"
#include "platform/vulkan/capabilities.h"
#include "platform/vulkan/instance.h"

#include <sstream>
#include <string>
#include <utility>
#include <vector>

using kiln::JsonWriter;
using kiln::capi::make_status;
using kiln::capi::null_arg;
using kiln::capi::return_string;
using kiln::capi::to_c;

namespace {

void pass_records(JsonWriter& w, const std::vector<kiln::registry::PassRecord>& records) {
  w.begin_array();
  for (const kiln::registry::PassRecord& r : records) {
    w.newline().begin_object();
    w.key("name").string(r.name).key("ms").number(r.milliseconds).key("committed").boolean(r.committed);
    w.key("skipped").boolean(r.skipped).key("statistics").begin_object();
    for (const auto& [key, value] : r.statistics) w.key(key).number(static_cast<int64_t>(value));
    w.end_object().end_object();
  }
  w.newline().end_array();
}

std::string session_json(const kiln_session_t& s) {
  const kiln::session::Session& engine = *s.engine;
  JsonWriter w;
  w.begin_object();
  w.newline().key("backend").string(engine.backend());
  w.newline().key("passes_ms").number(engine.pipeline_ms());
  w.newline().key("nodes").number(static_cast<uint64_t>(engine.graph().num_live_nodes()));
  if (const kiln::runtime::VulkanModel* model = s.vulkan_model()) {
    const kiln::vk::Capabilities& caps = s.vulkan_context()->device().capabilities();
    const kiln::runtime::VulkanCompileStats& c = model->compile_stats();
    const kiln::planner::ExecutionPlan& plan = model->plan();
    w.newline().key("device").string(caps.device_name);
    w.newline().key("driver").string(caps.driver_info);
    w.newline().key("storage").string(s.storage);
    w.newline().key("precision").string(s.precision);
    w.newline().key("compile").begin_object();
    w.key("plan_ms").number(c.plan_ms).key("kernels_ms").number(c.kernels_ms).key("upload_ms").number(c.upload_ms);
    w.key("shaders_ms").number(c.shaders_ms).key("pipelines_ms").number(c.pipelines_ms);
    w.key("compile_threads").number(static_cast<uint64_t>(c.compile_threads));
    if (!c.slowest_shader.empty())
      w.key("slowest_shader").string(c.slowest_shader).key("slowest_shader_ms").number(c.slowest_shader_ms);
    if (!c.slowest_pipeline.empty())
      w.key("slowest_pipeline").string(c.slowest_pipeline).key("slowest_pipeline_ms").number(c.slowest_pipeline_ms);
    w.key("pipelines").number(c.kernels).key("shader_compiles").number(c.shader_compiles);
    w.key("shader_cache_hits").number(c.shader_cache_hits).key("weight_bytes").number(c.weight_bytes);
    w.key("state_bytes").number(c.state_bytes);
    w.key("dispatches").number(static_cast<uint64_t>(plan.dispatch_count()));
    uint64_t fused = 0;  // as dispatch_count: both branches of every If
    for (const kiln::planner::PlanStep& step : plan.steps)
      if (step.kind == kiln::planner::PlanStep::Kind::kDispatch && kiln::runtime::is_fused_kernel(step.kernel.name))
        ++fused;
    w.key("fused_dispatches").number(fused);
    w.key("fallbacks").number(static_cast<uint64_t>(plan.fallback_count()));
    // Where the float activations the plan keeps on the device ended up
    // (--storage auto: the layout pass's choice within the device's limits).
    uint64_t image_tensors = 0, buffer_tensors = 0;
    for (const kiln::planner::PlanTensor& t : plan.tensors) {
      if (t.origin != kiln::planner::PlanTensor::Origin::kValue || t.host_resident ||
          !kiln::planner::is_float(t.layout.type))
        continue;
      ++(t.layout.storage == kiln::planner::Storage::kImage ? image_tensors : buffer_tensors);
    }
    w.key("image_tensors").number(image_tensors).key("buffer_tensors").number(buffer_tensors);
    w.key("fallback_reasons").begin_array();
    for (const std::string& reason : plan.fallback_reasons) w.string(reason);
    w.end_array();
    // Fusion groups a plugin asked for that run unfused, and why.
    w.key("fusion_notes").begin_array();
    for (const std::string& note : plan.fusion_notes) w.string(note);
    w.end_array();
    const kiln::vk::KernelCacheStats& k = engine.compile_cache_stats();
    w.key("kernel_cache").begin_object();
    w.key("compiles").number(k.compiles).key("disk_hits").number(k.disk_hits).key("memory_hits").number(k.memory_hits);
    w.key("pipeline_hits").number(k.pipeline_hits).key("pipelines_created").number(k.pipelines_created);
    w.key("pipeline_cache_bytes_loaded").number(k.pipeline_cache_bytes_loaded);
    w.end_object().end_object();
  } else if (engine.backend() != "reference") {
    // A plugin backend: what it says it runs (plugin ABI 1.4; else zeros).
    w.newline().key("compile").begin_object();
    w.key("dispatches").number(static_cast<uint64_t>(engine.compiled().dispatch_count()));
    w.key("fallbacks").number(static_cast<uint64_t>(engine.compiled().fallback_count()));
    if (engine.plugin_reports_cache()) {  // ABI 1.5: the plugin's kernel cache during this compile
      const kiln::vk::KernelCacheStats& k = engine.compile_cache_stats();
      w.key("kernel_cache").begin_object();
      w.key("compiles").number(k.compiles).key("disk_hits").number(k.disk_hits).key("memory_hits").number(k.memory_hits);
      w.key("corrupt_files").number(k.corrupt_files).end_object();
    }
    w.end_object();
  }
  if (!engine.fallback_reason().empty()) w.newline().key("fallback_reason").string(engine.fallback_reason());
  // Static QDQ patterns: integer kernels or the float graph, and why.
  int64_t rewritten = 0;
  for (const kiln::registry::PassRecord& r : engine.pass_records())
    if (r.name == "fuse-qdq" && r.committed)
      for (const char* key : {"qdq-convs", "qdq-matmuls", "qdq-gemms"})
        if (auto it = r.statistics.find(key); it != r.statistics.end()) rewritten += it->second;
  w.newline().key("int8_kernels").begin_object();
  w.key("integer").boolean(engine.int8_kernels().integer).key("reason").string(engine.int8_kernels().reason);
  w.key("rewritten").number(rewritten).end_object();
  w.newline().key("passes");
  pass_records(w, engine.pass_records());
  w.newline().end_object();
  return w.take();
}

std::string run_json(const kiln::runtime::RunStats& s) {
  JsonWriter w;
  w.begin_object();
  w.key("gpu_ms").number(s.gpu_ms);
  // The device interval on the host's steady clock (0: unknown) and queue.
  w.key("gpu_begin_ns").number(s.gpu_begin_ns).key("gpu_end_ns").number(s.gpu_end_ns).key("queue").number(s.queue);
  w.key("dispatches").number(s.dispatches).key("fallbacks").number(s.fallbacks);
  w.key("fused_dispatches").number(s.fused_dispatches);
  w.key("bytes_read").number(s.bytes_read).key("bytes_written").number(s.bytes_written);
  w.key("recorded").boolean(s.recorded).key("shader_compiles").number(s.shader_compiles);
  w.key("device_bytes").number(s.device_bytes).key("activation_bytes").number(s.activation_bytes);
  w.key("signatures").number(s.signatures);
  w.key("memory").begin_object();
  w.key("arena_bytes").number(s.memory.arena_bytes).key("live_lower_bound").number(s.memory.live_lower_bound);
  w.key("no_reuse_bytes").number(s.memory.no_reuse_bytes).key("best_fit_bytes").number(s.memory.best_fit_bytes);
  w.key("plan_ms").number(s.memory.plan_ms).key("image_bytes").number(s.memory.image_bytes);
  w.key("images").string(s.memory.images).key("strategy").string(s.memory.strategy);
  w.end_object();
  if (!s.branches.empty()) {  // each If run on the device and the branch it took
    w.key("branches").begin_array();
    for (const auto& b : s.branches)
      w.begin_object().key("node").string(b.node).key("taken").string(b.then_branch ? "then" : "else").end_object();
    w.end_array();
  }
  if (!s.loops.empty()) {  // each Loop run on the device and how often its body ran
    w.key("loops").begin_array();
    for (const auto& l : s.loops)
      w.begin_object().key("node").string(l.node).key("iterations").number(l.iterations).end_object();
    w.end_array();
  }
  if (!s.kernels.empty()) {
    w.key("kernels").begin_array();
    for (const auto& k : s.kernels)
      w.begin_object()
          .key("kernel").string(k.kernel).key("node").string(k.node).key("gpu_ms").number(k.gpu_ms)
          .key("bytes").number(k.bytes).key("bytes_read").number(k.bytes_read)
          .key("bytes_written").number(k.bytes_written).key("flops").number(k.flops)
          .end_object();
    w.end_array();
  }
  w.end_object();
  return w.take();
}

// ---- Graphviz --------------------------------------------------------------

std::string dot_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// Nodes are boxes (op + name); edges carry the value's dtype and shape.
// Graph inputs are ellipses; constants are folded into their consumer's label
// count to keep large models readable. Sub-graphs become clusters.
void write_region(const kiln::ir::Graph& g, kiln::ir::RegionId rid, std::ostringstream& out, int& cluster) {
  namespace ir = kiln::ir;
  const ir::Region& r = g.region(rid);
  for (ir::ValueId in : r.inputs)
    out << "  v" << in << " [shape=ellipse, label=\"" << dot_escape(g.value(in).name) << "\\n"
        << kiln::dtype_name(g.value(in).dtype) << g.value(in).shape.to_string() << "\"];\n";
  for (ir::NodeId nid : r.nodes) {
    const ir::Node& n = g.node(nid);
    int consts = 0;
    for (ir::ValueId in : n.inputs) consts += in != ir::kNoValue && g.value(in).is_constant();
    out << "  n" << nid << " [shape=box, label=\"" << dot_escape(n.op) << "\\n" << dot_escape(n.name)
        << (consts ? "\\n+" + std::to_string(consts) + " const" : "") << "\"];\n";
    for (const auto& [key, a] : n.attrs) {
      if (a.kind != ir::AttrKind::kGraph) continue;
      out << "  subgraph cluster_" << cluster++ << " {\n  label=\"" << dot_escape(n.name + "." + key) << "\";\n";
      write_region(g, a.region, out, cluster);
      out << "  }\n";
    }
  }
  for (ir::NodeId nid : r.nodes) {
    const ir::Node& n = g.node(nid);
    for (ir::ValueId in : n.inputs) {
      if (in == ir::kNoValue || g.value(in).is_constant()) continue;
      const ir::Value& v = g.value(in);
      const std::string src = v.producer != ir::kNoNode ? "n" + std::to_string(v.producer) : "v" + std::to_string(in);
      out << "  " << src << " -> n" << nid << " [label=\"" << kiln::dtype_name(v.dtype) << v.shape.to_string()
          << "\"];\n";
    }
  }
  for (ir::ValueId o : r.outputs) {
    const ir::Value& v = g.value(o);
    out << "  out" << o << " [shape=ellipse, style=dashed, label=\"" << dot_escape(v.name) << "\"];\n";
    const std::string src = v.producer != ir::kNoNode ? "n" + std::to_string(v.producer) : "v" + std::to_string(o);
    out << "  " << src << " -> out" << o << ";\n";
  }
}

std::string graph_dot(const kiln::ir::Graph& g) {
  std::ostringstream out;
  out << "digraph \"" << dot_escape(g.name) << "\" {\n  rankdir=TB;\n  node [fontname=\"Helvetica\"];\n";
  int cluster = 0;
  write_region(g, kiln::ir::kMainRegion, out, cluster);
  out << "}\n";
  return out.str();
}

// ---- plugins ---------------------------------------------------------------

void facts(JsonWriter& w, uint32_t bits) {
  static const std::pair<uint32_t, const char*> kNames[] = {
      {KILN_FACT_SHAPES, "shapes"},           {KILN_FACT_LAYOUTS, "layouts"},
      {KILN_FACT_FUSION_GROUPS, "fusion-groups"}, {KILN_FACT_KERNEL_CONFIGS, "kernel-configs"},
      {KILN_FACT_MEMORY_PLAN, "memory-plan"}};
  w.begin_array();
  for (const auto& [bit, name] : kNames)
    if (bits & bit) w.string(name);
  w.end_array();
}

}  // namespace

extern "C" {

kiln_status_t* kiln_session_describe_json(const kiln_session_t* session, char** out_text) {
  if (!session) return null_arg("session");
  if (!out_text) return null_arg("out_text");
  return return_string(session_json(*session), out_text);
}

kiln_status_t* kiln_session_last_run_json(const kiln_session_t* session, char** out_text) {
  if (!session) return null_arg("session");
  if (!out_text) return null_arg("out_text");
  std::string text;
  {
    std::lock_guard<std::mutex> lock(session->stats_mutex);
    if (!session->has_last) return make_status(KILN_FAILED_PRECONDITION, "the session has not run yet");
    // The reference executor reports nothing but wall time; Vulkan and
    // backend plugins (what they report, ABI 1.5) the run's document.
    text = session->engine->backend() != "reference" ? run_json(session->last) : "{}";
  }
  return return_string(text, out_text);
}

kiln_status_t* kiln_session_graph(const kiln_session_t* session, kiln_graph_format_t format, uint32_t flags,
                                  char** out_text) {
  if (!session) return null_arg("session");
  if (!out_text) return null_arg("out_text");
  const kiln::ir::Graph& g = session->engine->graph();
  if (format == KILN_GRAPH_DOT) return return_string(graph_dot(g), out_text);
  if (format != KILN_GRAPH_TEXT)
    return make_status(KILN_INVALID_ARGUMENT, "unknown graph format " + std::to_string(static_cast<int>(format)));
  kiln::ir::PrintOptions po;
  po.elide_constants_over = (flags & KILN_GRAPH_FULL_CONSTANTS) ? -1 : 16;
  return return_string(kiln::ir::print_graph(g, po), out_text);
}

kiln_status_t* kiln_plugins_describe_json(const kiln_session_options_t* options, char** out_text) {
  if (!out_text) return null_arg("out_text");
  kiln::registry::PipelineSetup setup;
  kiln::registry::LogFn log = [](kiln_log_level_t, const std::string&) {};
  if (options) {
    auto has = [&](size_t offset, size_t size) { return options->struct_size >= offset + size; };
#define KILN_HAS(field) has(offsetof(kiln_session_options_t, field), sizeof(options->field))
    if (!KILN_HAS(backend))
      return make_status(KILN_INVALID_ARGUMENT, "kiln_session_options_t.struct_size is too small");
    if (KILN_HAS(plugin_file_count) && options->plugin_file_count) {
      if (!options->plugin_files) return null_arg("kiln_session_options_t.plugin_files");
      for (size_t i = 0; i < options->plugin_file_count; ++i) {
        if (!options->plugin_files[i])
          return make_status(KILN_INVALID_ARGUMENT, "plugin_files[" + std::to_string(i) + "] is NULL");
        setup.plugin_files.emplace_back(options->plugin_files[i]);
      }
    }
    if (KILN_HAS(ignore_plugin_path)) setup.load_environment = options->ignore_plugin_path == 0;
    if (KILN_HAS(plugin_dir) && options->plugin_dir) setup.plugin_dir = options->plugin_dir;
    if (KILN_HAS(log_user_data) && options->log) {
      kiln_log_fn fn = options->log;
      void* user = options->log_user_data;
      log = [fn, user](kiln_log_level_t level, const std::string& message) {
        fn(user, static_cast<kiln_message_level_t>(level), message.c_str());
      };
    }
#undef KILN_HAS
  }
  kiln::registry::PluginRegistry reg;
  if (kiln::Status s = kiln::registry::load_standard_plugins(reg, setup, log); !s.ok()) return to_c(s);
  JsonWriter w;
  w.begin_object().key("plugins").begin_array();
  for (const kiln::registry::LoadedPlugin& p : reg.plugins()) {
    w.begin_object().key("name").string(p.name).key("version").string(p.version);
    w.key("abi_major").number(static_cast<uint64_t>(KILN_PLUGIN_ABI_VERSION_MAJOR(p.descriptor->abi_version)));
    w.key("abi_minor").number(static_cast<uint64_t>(KILN_PLUGIN_ABI_VERSION_MINOR(p.descriptor->abi_version)));
    w.key("origin").string(p.origin).key("passes").begin_array();
    for (size_t i = 0; i < p.descriptor->pass_count; ++i) {
      const kiln_pass_t* pass = p.descriptor->passes[i];
      w.begin_object().key("name").string(pass->name).key("requires");
      facts(w, pass->requires_facts);
      w.key("invalidates");
      facts(w, pass->invalidates_facts);
      w.key("description").string(pass->description ? pass->description : "").end_object();
    }
    w.end_array();
    if (p.backend) {
      // The devices a backend plugin sees (kiln info), where it says (ABI 1.4).
      w.key("backend").begin_object().key("name").string(p.backend->name);
      const char* devices = KILN_PLUGIN_HAS_FIELD(p.backend, kiln_backend_v1_t, describe) && p.backend->describe
                                ? p.backend->describe(p.backend->state)
                                : nullptr;
      w.key("devices");
      if (devices) w.string(devices);
      else w.null();
      w.end_object();
    }
    w.end_object();
  }
  w.end_array().key("default_pipeline").begin_array();
  for (const std::string& name : kiln::registry::default_pipeline(reg)) w.string(name);
  w.end_array().end_object();
  return return_string(w.take(), out_text);
}

kiln_status_t* kiln_vulkan_device_describe_json(const kiln_vulkan_device_t* device, char** out_text) {
  if (!device) return null_arg("device");
  if (!out_text) return null_arg("out_text");
  return return_string(device->context->device().capabilities().to_json(), out_text);
}

kiln_status_t* kiln_vulkan_devices_describe(uint32_t text, char** out_text) {
  if (!out_text) return null_arg("out_text");
  std::vector<kiln::vk::Capabilities> devices;
  std::string problem;
  auto instance = kiln::vk::Instance::create();
  if (!instance.ok()) {
    problem = instance.status().to_string();
  } else {
    auto physical = (*instance)->physical_devices();
    if (!physical.ok()) {
      problem = physical.status().to_string();
    } else {
      for (VkPhysicalDevice pd : *physical) {
        auto caps = kiln::vk::query_capabilities((*instance)->fn(), pd, (*instance)->api_version());
        if (!caps.ok()) return to_c(caps.status());
        devices.push_back(std::move(caps).value());
      }
    }
  }
  if (text) {
    std::string out;
    if (!problem.empty()) out = "no Vulkan: " + problem + "\n";
    else if (devices.empty()) out = "no Vulkan device found\n";
    for (size_t i = 0; i < devices.size(); ++i)
      out += "device " + std::to_string(i) + ":\n" + devices[i].to_text() + "\n";
    return return_string(out, out_text);
  }
  JsonWriter w;
  w.begin_object().key("vulkan_error");
  if (problem.empty()) w.null();
  else w.string(problem);
  w.key("devices").begin_array();
  for (const kiln::vk::Capabilities& caps : devices) w.raw(caps.to_json());
  w.end_array().end_object();
  return return_string(w.take(), out_text);
}

}  // extern "C"
