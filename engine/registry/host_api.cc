// kiln_host_api_t implementation: graph view, staging rewriter, commit.
#include "engine/registry/host_api.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <limits>
#include <set>
#include <utility>
#include <vector>

#include "engine/ir/text.h"
#include "engine/ir/verifier.h"
#include "engine/ops/op_layout.h"
#include "engine/ops/op_registry.h"
#include "engine/ops/shape_inference.h"
#include "engine/runtime/reference_executor.h"

struct kiln_plugin_status_t {
  kiln_plugin_code_t code;
  std::string message;
};

namespace kiln::registry {
struct PassRun;
}

struct kiln_graph_t {
  kiln::registry::PassRun* run;
};
struct kiln_rewriter_t {
  kiln::registry::PassRun* run;
};

namespace kiln::registry {

// One pass execution: the working copy and everything handed out during it.
struct PassRun {
  explicit PassRun(const ir::Graph& original) : work(original) {
    view.run = this;
    rw.run = this;
  }
  ir::Graph work;
  kiln_graph_t view{};
  kiln_rewriter_t rw{};
  std::string pass_name;
  const LogFn* log = nullptr;
  const kiln_target_info_t* target = nullptr;  // the device compiled for; null: none
  std::deque<std::string> strings;  // strings returned to the plugin; stable addresses
  std::deque<std::vector<const char*>> dim_lists;  // infer_node_dims' out_dims arrays
  std::string first_error;          // first failed rewriter call
  std::map<std::string, int64_t> statistics;
  // Uses per value, rebuilt lazily after an edit.
  bool uses_valid = false;
  std::vector<std::vector<std::pair<ir::NodeId, size_t>>> uses;
  std::set<std::string> names;
  bool names_valid = false;
  // Suffixed name -> the name that was wanted (taken at the time, usually by
  // the value being replaced); reclaimed at commit if it became free.
  std::map<std::string, std::string> pending_names;

  const char* keep(std::string s) {
    strings.push_back(std::move(s));
    return strings.back().c_str();
  }
  void emit_log(kiln_log_level_t level, const std::string& message) const {
    if (log && *log) (*log)(level, pass_name + ": " + message);
  }
  int32_t fail(const std::string& message) {
    if (first_error.empty()) first_error = message;
    emit_log(KILN_LOG_DEBUG, "rewriter: " + message);
    return 0;
  }
  void edited() { uses_valid = false; }

  bool node_ok(kiln_node_id_t id) const {
    return id >= 0 && static_cast<size_t>(id) < work.num_nodes() && !work.node(id).erased;
  }
  bool value_ok(kiln_value_id_t id) const { return id >= 0 && static_cast<size_t>(id) < work.num_values(); }
  bool region_ok(kiln_region_id_t id) const { return id >= 0 && static_cast<size_t>(id) < work.num_regions(); }

  void build_uses() {
    if (uses_valid) return;
    uses.assign(work.num_values(), {});
    for (size_t r = 0; r < work.num_regions(); ++r) {
      const ir::Region& region = work.region(static_cast<ir::RegionId>(r));
      for (ir::NodeId nid : region.nodes) {
        const ir::Node& n = work.node(nid);
        for (size_t i = 0; i < n.inputs.size(); ++i)
          if (n.inputs[i] != ir::kNoValue) uses[static_cast<size_t>(n.inputs[i])].emplace_back(nid, i);
      }
      for (size_t i = 0; i < region.outputs.size(); ++i)
        if (region.outputs[i] != ir::kNoValue) uses[static_cast<size_t>(region.outputs[i])].emplace_back(ir::kNoNode, i);
    }
    uses_valid = true;
  }

  std::string unique_name(const char* wanted) {
    if (!names_valid) {
      names.clear();
      for (size_t v = 0; v < work.num_values(); ++v) names.insert(work.value(static_cast<ir::ValueId>(v)).name);
      names_valid = true;
    }
    std::string base = wanted && *wanted ? wanted : "v";
    std::string name = base;
    for (int k = 1; names.count(name); ++k) name = base + "_" + std::to_string(k);
    names.insert(name);
    if (name != base) pending_names[name] = base;
    return name;
  }
};

namespace {

thread_local PassRun* current_run = nullptr;

PassRun& run_of(const kiln_graph_t* g) { return *g->run; }
PassRun& run_of(kiln_rewriter_t* rw) { return *rw->run; }

kiln_plugin_status_t* h_make_status(kiln_plugin_code_t code, const char* message) {
  // An out-of-range code (or OK, which is not an error) becomes INTERNAL.
  const int c = static_cast<int>(code);
  const kiln_plugin_code_t checked =
      c <= 0 || c > static_cast<int>(StatusCode::kDataLoss) ? KILN_PLUGIN_INTERNAL : code;
  return new kiln_plugin_status_t{checked, message ? message : ""};
}

void h_log(kiln_log_level_t level, const char* message) {
  if (current_run) current_run->emit_log(level, message ? message : "");
}

size_t h_region_count(const kiln_graph_t* g) { return run_of(g).work.num_regions(); }
size_t h_region_node_count(const kiln_graph_t* g, kiln_region_id_t r) {
  return run_of(g).region_ok(r) ? run_of(g).work.region(r).nodes.size() : 0;
}
kiln_node_id_t h_region_node_at(const kiln_graph_t* g, kiln_region_id_t r, size_t i) {
  if (!run_of(g).region_ok(r)) return KILN_NO_ID;
  const auto& nodes = run_of(g).work.region(r).nodes;
  return i < nodes.size() ? nodes[i] : KILN_NO_ID;
}
size_t h_region_input_count(const kiln_graph_t* g, kiln_region_id_t r) {
  return run_of(g).region_ok(r) ? run_of(g).work.region(r).inputs.size() : 0;
}
kiln_value_id_t h_region_input_at(const kiln_graph_t* g, kiln_region_id_t r, size_t i) {
  if (!run_of(g).region_ok(r)) return KILN_NO_ID;
  const auto& v = run_of(g).work.region(r).inputs;
  return i < v.size() ? v[i] : KILN_NO_ID;
}
size_t h_region_output_count(const kiln_graph_t* g, kiln_region_id_t r) {
  return run_of(g).region_ok(r) ? run_of(g).work.region(r).outputs.size() : 0;
}
kiln_value_id_t h_region_output_at(const kiln_graph_t* g, kiln_region_id_t r, size_t i) {
  if (!run_of(g).region_ok(r)) return KILN_NO_ID;
  const auto& v = run_of(g).work.region(r).outputs;
  return i < v.size() ? v[i] : KILN_NO_ID;
}

int32_t h_node_info(const kiln_graph_t* g, kiln_node_id_t id, kiln_node_info_t* out) {
  PassRun& run = run_of(g);
  if (!run.node_ok(id) || !out || out->struct_size < sizeof(uint32_t)) return 0;
  const ir::Node& n = run.work.node(id);
  kiln_node_info_t info{};
  info.struct_size = out->struct_size < sizeof(info) ? out->struct_size : static_cast<uint32_t>(sizeof(info));
  info.op = run.keep(n.op);
  info.domain = run.keep(n.domain);
  info.name = run.keep(n.name);
  info.input_count = n.inputs.size();
  info.output_count = n.outputs.size();
  info.region = n.region;
  std::memcpy(out, &info, info.struct_size);
  return 1;
}
kiln_value_id_t h_node_input(const kiln_graph_t* g, kiln_node_id_t id, size_t i) {
  if (!run_of(g).node_ok(id)) return KILN_NO_ID;
  const auto& v = run_of(g).work.node(id).inputs;
  return i < v.size() ? v[i] : KILN_NO_ID;
}
kiln_value_id_t h_node_output(const kiln_graph_t* g, kiln_node_id_t id, size_t i) {
  if (!run_of(g).node_ok(id)) return KILN_NO_ID;
  const auto& v = run_of(g).work.node(id).outputs;
  return i < v.size() ? v[i] : KILN_NO_ID;
}

const ir::Attribute* find_attr(const kiln_graph_t* g, kiln_node_id_t id, const char* key) {
  if (!run_of(g).node_ok(id) || !key) return nullptr;
  return run_of(g).work.node(id).attr(key);
}
kiln_attr_kind_t h_attr_kind(const kiln_graph_t* g, kiln_node_id_t id, const char* key) {
  const ir::Attribute* a = find_attr(g, id, key);
  return a ? static_cast<kiln_attr_kind_t>(static_cast<int>(a->kind)) : KILN_ATTR_NONE;
}
int64_t h_attr_int(const kiln_graph_t* g, kiln_node_id_t id, const char* key, int64_t fallback) {
  const ir::Attribute* a = find_attr(g, id, key);
  return a && a->kind == ir::AttrKind::kInt ? a->i : fallback;
}
float h_attr_float(const kiln_graph_t* g, kiln_node_id_t id, const char* key, float fallback) {
  const ir::Attribute* a = find_attr(g, id, key);
  return a && a->kind == ir::AttrKind::kFloat ? a->f : fallback;
}
const char* h_attr_string(const kiln_graph_t* g, kiln_node_id_t id, const char* key) {
  const ir::Attribute* a = find_attr(g, id, key);
  return a && a->kind == ir::AttrKind::kString ? run_of(g).keep(a->s) : nullptr;
}
size_t h_attr_ints(const kiln_graph_t* g, kiln_node_id_t id, const char* key, int64_t* out, size_t capacity) {
  const ir::Attribute* a = find_attr(g, id, key);
  if (!a || a->kind != ir::AttrKind::kInts) return 0;
  for (size_t i = 0; i < a->ints.size() && i < capacity && out; ++i) out[i] = a->ints[i];
  return a->ints.size();
}
size_t h_attr_floats(const kiln_graph_t* g, kiln_node_id_t id, const char* key, float* out, size_t capacity) {
  const ir::Attribute* a = find_attr(g, id, key);
  if (!a || a->kind != ir::AttrKind::kFloats) return 0;
  for (size_t i = 0; i < a->floats.size() && i < capacity && out; ++i) out[i] = a->floats[i];
  return a->floats.size();
}
kiln_region_id_t h_attr_graph(const kiln_graph_t* g, kiln_node_id_t id, const char* key) {
  const ir::Attribute* a = find_attr(g, id, key);
  return a && a->kind == ir::AttrKind::kGraph ? a->region : KILN_NO_ID;
}

int32_t h_value_info(const kiln_graph_t* g, kiln_value_id_t id, kiln_value_info_t* out) {
  PassRun& run = run_of(g);
  if (!run.value_ok(id) || !out || out->struct_size < sizeof(uint32_t)) return 0;
  const ir::Value& v = run.work.value(id);
  kiln_value_info_t info{};
  info.struct_size = out->struct_size < sizeof(info) ? out->struct_size : static_cast<uint32_t>(sizeof(info));
  info.name = run.keep(v.name);
  info.dtype = static_cast<int32_t>(v.dtype);
  info.rank = v.shape.has_rank ? static_cast<int32_t>(v.shape.rank()) : -1;
  info.producer = v.producer;
  info.producer_output = v.producer_output;
  info.is_constant = v.is_constant() ? 1 : 0;
  info.region = v.region;
  std::memcpy(out, &info, info.struct_size);
  return 1;
}
int32_t h_value_dim(const kiln_graph_t* g, kiln_value_id_t id, size_t axis, kiln_dim_t* out) {
  PassRun& run = run_of(g);
  if (!run.value_ok(id) || !out || out->struct_size < sizeof(uint32_t)) return 0;
  const ir::SymShape& shape = run.work.value(id).shape;
  if (!shape.has_rank || axis >= shape.dims.size()) return 0;
  const ir::Dim& d = shape.dims[axis];
  kiln_dim_t dim{};
  dim.struct_size = out->struct_size < sizeof(dim) ? out->struct_size : static_cast<uint32_t>(sizeof(dim));
  dim.is_const = d.is_const() ? 1 : 0;
  dim.is_unknown = d.is_unknown() ? 1 : 0;
  dim.value = d.is_const() ? d.value() : 0;
  dim.expr = run.keep(d.to_string());
  std::memcpy(out, &dim, dim.struct_size);
  return 1;
}
const void* h_value_constant(const kiln_graph_t* g, kiln_value_id_t id, size_t* out_bytes) {
  PassRun& run = run_of(g);
  if (out_bytes) *out_bytes = 0;
  if (!run.value_ok(id) || !run.work.value(id).is_constant()) return nullptr;
  const Tensor& t = run.work.value(id).constant;
  if (out_bytes) *out_bytes = t.nbytes();
  return t.raw_data();
}
size_t h_value_use_count(const kiln_graph_t* g, kiln_value_id_t id) {
  PassRun& run = run_of(g);
  if (!run.value_ok(id)) return 0;
  run.build_uses();
  return run.uses[static_cast<size_t>(id)].size();
}
int32_t h_value_use_at(const kiln_graph_t* g, kiln_value_id_t id, size_t index, kiln_node_id_t* out_node,
                       size_t* out_input_index) {
  PassRun& run = run_of(g);
  if (!run.value_ok(id)) return 0;
  run.build_uses();
  const auto& u = run.uses[static_cast<size_t>(id)];
  if (index >= u.size()) return 0;
  if (out_node) *out_node = u[index].first;
  if (out_input_index) *out_input_index = u[index].second;
  return 1;
}
const char* h_node_annotation(const kiln_graph_t* g, kiln_node_id_t id, const char* key) {
  if (!run_of(g).node_ok(id) || !key) return nullptr;
  const auto& a = run_of(g).work.node(id).annotations;
  auto it = a.find(key);
  return it == a.end() ? nullptr : run_of(g).keep(it->second);
}
const char* h_value_annotation(const kiln_graph_t* g, kiln_value_id_t id, const char* key) {
  if (!run_of(g).value_ok(id) || !key) return nullptr;
  const auto& a = run_of(g).work.value(id).annotations;
  auto it = a.find(key);
  return it == a.end() ? nullptr : run_of(g).keep(it->second);
}

// ---- rewriter --------------------------------------------------------------

// The ABI's dtype numbers are DType's.
static_assert(KILN_PLUGIN_DTYPE_FLOAT32 == static_cast<int>(DType::kFloat32) &&
              KILN_PLUGIN_DTYPE_FLOAT16 == static_cast<int>(DType::kFloat16) &&
              KILN_PLUGIN_DTYPE_INT64 == static_cast<int>(DType::kInt64) &&
              KILN_PLUGIN_DTYPE_BOOL == static_cast<int>(DType::kBool) &&
              KILN_PLUGIN_DTYPE_UINT64 == static_cast<int>(DType::kUInt64));

bool dtype_ok(int32_t dtype) {
  return dtype >= static_cast<int32_t>(DType::kFloat32) && dtype <= static_cast<int32_t>(DType::kUInt64);
}

kiln_value_id_t h_rw_add_value(kiln_rewriter_t* rw, const char* name, int32_t dtype, kiln_region_id_t region) {
  PassRun& run = run_of(rw);
  if (!run.region_ok(region)) return run.fail("add_value: no region " + std::to_string(region)), KILN_NO_ID;
  if (dtype != 0 && !dtype_ok(dtype)) return run.fail("add_value: bad dtype " + std::to_string(dtype)), KILN_NO_ID;
  run.edited();
  return run.work.add_value(run.unique_name(name), static_cast<DType>(dtype), ir::SymShape::unranked(), region);
}

kiln_value_id_t h_rw_add_constant(kiln_rewriter_t* rw, const char* name, int32_t dtype, const int64_t* shape,
                                  size_t rank, const void* data, size_t bytes, kiln_region_id_t region) {
  PassRun& run = run_of(rw);
  if (!run.region_ok(region)) return run.fail("add_constant: no region " + std::to_string(region)), KILN_NO_ID;
  if (!dtype_ok(dtype)) return run.fail("add_constant: bad dtype " + std::to_string(dtype)), KILN_NO_ID;
  Shape dims;
  for (size_t i = 0; i < rank; ++i) {
    if (!shape || shape[i] < 0) return run.fail("add_constant: bad shape"), KILN_NO_ID;
    dims.push_back(shape[i]);
  }
  // The data must fill the shape exactly. Checked before allocating, so a
  // huge shape with a few bytes of data is refused without trying to
  // allocate it (overflow makes `needed` differ from any real byte count).
  size_t needed = dtype_size(static_cast<DType>(dtype));
  bool overflow = false;
  for (int64_t d : dims) overflow = overflow || __builtin_mul_overflow(needed, static_cast<size_t>(d), &needed);
  if (overflow || needed != bytes || (bytes && !data))
    return run.fail("add_constant '" + std::string(name ? name : "") + "': " + std::to_string(bytes) +
                    " bytes given, shape needs " + (overflow ? std::string("more than 2^64") : std::to_string(needed))),
           KILN_NO_ID;
  auto t = Tensor::allocate(static_cast<DType>(dtype), dims);
  if (!t.ok()) return run.fail("add_constant: " + t.status().message()), KILN_NO_ID;
  if (bytes) std::memcpy(t->raw_data(), data, bytes);
  run.edited();
  return run.work.add_constant(run.unique_name(name), std::move(*t), region);
}

kiln_node_id_t h_rw_add_node(kiln_rewriter_t* rw, const char* op, const char* domain, const char* name,
                             const kiln_value_id_t* inputs, size_t input_count, const kiln_value_id_t* outputs,
                             size_t output_count, kiln_region_id_t region, kiln_node_id_t insert_before) {
  PassRun& run = run_of(rw);
  if (!op || !*op) return run.fail("add_node: empty op"), KILN_NO_ID;
  if (!run.region_ok(region)) return run.fail("add_node " + std::string(op) + ": no region"), KILN_NO_ID;
  std::vector<ir::ValueId> ins, outs;
  for (size_t i = 0; i < input_count; ++i) {
    if (inputs[i] != KILN_NO_ID && !run.value_ok(inputs[i]))
      return run.fail("add_node " + std::string(op) + ": input " + std::to_string(i) + " is not a value"), KILN_NO_ID;
    ins.push_back(inputs[i]);
  }
  for (size_t i = 0; i < output_count; ++i) {
    if (!run.value_ok(outputs[i]))
      return run.fail("add_node " + std::string(op) + ": output " + std::to_string(i) + " is not a value"), KILN_NO_ID;
    const ir::Value& v = run.work.value(outputs[i]);
    if (v.producer != ir::kNoNode || v.is_constant() || v.region != region)
      return run.fail("add_node " + std::string(op) + ": output '" + v.name +
                      "' already has a producer, is a constant or lives in another region"),
             KILN_NO_ID;
    outs.push_back(outputs[i]);
  }
  if (insert_before != KILN_NO_ID && (!run.node_ok(insert_before) || run.work.node(insert_before).region != region))
    return run.fail("add_node " + std::string(op) + ": insert_before is not a live node of the region"), KILN_NO_ID;
  ir::NodeId nid = run.work.add_node(op, ins, outs, {}, name ? name : "", region);
  run.work.node(nid).domain = domain ? domain : "";
  if (insert_before != KILN_NO_ID) {
    auto& order = run.work.region(region).nodes;
    order.pop_back();
    order.insert(std::find(order.begin(), order.end(), insert_before), nid);
  }
  run.edited();
  return nid;
}

int32_t h_rw_erase_node(kiln_rewriter_t* rw, kiln_node_id_t id) {
  PassRun& run = run_of(rw);
  if (!run.node_ok(id)) return run.fail("erase_node: " + std::to_string(id) + " is not a live node");
  run.work.erase_node(id);
  run.edited();
  return 1;
}

int32_t h_rw_replace_uses(kiln_rewriter_t* rw, kiln_value_id_t from, kiln_value_id_t to) {
  PassRun& run = run_of(rw);
  if (!run.value_ok(from) || !run.value_ok(to)) return run.fail("replace_uses: bad value id");
  for (size_t r = 0; r < run.work.num_regions(); ++r) {
    ir::Region& region = run.work.region(static_cast<ir::RegionId>(r));
    for (ir::NodeId nid : region.nodes)
      for (ir::ValueId& in : run.work.node(nid).inputs)
        if (in == from) in = to;
    for (ir::ValueId& out : region.outputs)
      if (out == from) out = to;
  }
  run.edited();
  return 1;
}

int32_t h_rw_set_input(kiln_rewriter_t* rw, kiln_node_id_t id, size_t index, kiln_value_id_t value) {
  PassRun& run = run_of(rw);
  if (!run.node_ok(id)) return run.fail("set_input: not a live node");
  ir::Node& n = run.work.node(id);
  if (index >= n.inputs.size()) return run.fail("set_input: " + n.describe() + " has no input " + std::to_string(index));
  if (value != KILN_NO_ID && !run.value_ok(value)) return run.fail("set_input: bad value id");
  n.inputs[index] = value;
  run.edited();
  return 1;
}

ir::Node* attr_target(PassRun& run, kiln_node_id_t id, const char* key, const char* what) {
  if (!run.node_ok(id) || !key || !*key) {
    run.fail(std::string(what) + ": not a live node or empty key");
    return nullptr;
  }
  return &run.work.node(id);
}
int32_t h_rw_set_attr_int(kiln_rewriter_t* rw, kiln_node_id_t id, const char* key, int64_t value) {
  ir::Node* n = attr_target(run_of(rw), id, key, "set_attr_int");
  if (!n) return 0;
  n->attrs[key] = ir::Attribute::of_int(value);
  return 1;
}
int32_t h_rw_set_attr_float(kiln_rewriter_t* rw, kiln_node_id_t id, const char* key, float value) {
  ir::Node* n = attr_target(run_of(rw), id, key, "set_attr_float");
  if (!n) return 0;
  n->attrs[key] = ir::Attribute::of_float(value);
  return 1;
}
int32_t h_rw_set_attr_string(kiln_rewriter_t* rw, kiln_node_id_t id, const char* key, const char* value) {
  ir::Node* n = attr_target(run_of(rw), id, key, "set_attr_string");
  if (!n) return 0;
  n->attrs[key] = ir::Attribute::of_string(value ? value : "");
  return 1;
}
int32_t h_rw_set_attr_ints(kiln_rewriter_t* rw, kiln_node_id_t id, const char* key, const int64_t* values,
                           size_t count) {
  ir::Node* n = attr_target(run_of(rw), id, key, "set_attr_ints");
  if (!n) return 0;
  n->attrs[key] = ir::Attribute::of_ints(std::vector<int64_t>(values, values + (values ? count : 0)));
  return 1;
}
int32_t h_rw_set_attr_floats(kiln_rewriter_t* rw, kiln_node_id_t id, const char* key, const float* values,
                             size_t count) {
  ir::Node* n = attr_target(run_of(rw), id, key, "set_attr_floats");
  if (!n) return 0;
  n->attrs[key] = ir::Attribute::of_floats(std::vector<float>(values, values + (values ? count : 0)));
  return 1;
}
int32_t h_rw_remove_attr(kiln_rewriter_t* rw, kiln_node_id_t id, const char* key) {
  ir::Node* n = attr_target(run_of(rw), id, key, "remove_attr");
  if (!n) return 0;
  n->attrs.erase(key);
  return 1;
}
int32_t h_rw_annotate_node(kiln_rewriter_t* rw, kiln_node_id_t id, const char* key, const char* value) {
  ir::Node* n = attr_target(run_of(rw), id, key, "annotate_node");
  if (!n) return 0;
  n->annotations[key] = value ? value : "";
  return 1;
}
int32_t h_rw_annotate_value(kiln_rewriter_t* rw, kiln_value_id_t id, const char* key, const char* value) {
  PassRun& run = run_of(rw);
  if (!run.value_ok(id) || !key || !*key) return run.fail("annotate_value: bad value id or empty key");
  run.work.value(id).annotations[key] = value ? value : "";
  return 1;
}
int32_t h_rw_remove_node_annotation(kiln_rewriter_t* rw, kiln_node_id_t id, const char* key) {
  ir::Node* n = attr_target(run_of(rw), id, key, "remove_node_annotation");
  if (!n) return 0;
  n->annotations.erase(key);
  return 1;
}
int32_t h_rw_remove_value_annotation(kiln_rewriter_t* rw, kiln_value_id_t id, const char* key) {
  PassRun& run = run_of(rw);
  if (!run.value_ok(id) || !key || !*key) return run.fail("remove_value_annotation: bad value id or empty key");
  run.work.value(id).annotations.erase(key);
  return 1;
}
// The registry's numbering is kiln_mapping_t's (op_registry.h).
int32_t h_op_mapping(const char* domain, const char* op) {
  if (!op) return KILN_MAPPING_UNKNOWN;
  const ops::OpSchema* schema = ops::OpRegistry::builtin().find(domain ? domain : "", op);
  return schema ? static_cast<int32_t>(schema->mapping) : KILN_MAPPING_UNKNOWN;
}
void h_rw_add_statistic(kiln_rewriter_t* rw, const char* key, int64_t delta) {
  if (!key || !*key) return;
  // Saturates: a plugin's counts are its own business, not the host's UB.
  int64_t& total = run_of(rw).statistics[key];
  if (__builtin_add_overflow(total, delta, &total))
    total = delta > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

int32_t h_evaluate_node(kiln_rewriter_t* rw, kiln_node_id_t id, kiln_value_id_t* out_values, size_t capacity) {
  PassRun& run = run_of(rw);
  if (!run.node_ok(id)) return run.fail("evaluate_node: " + std::to_string(id) + " is not a live node");
  const ir::Node& node = run.work.node(id);
  auto refuse = [&](const std::string& why) {
    run.emit_log(KILN_LOG_DEBUG, "evaluate_node: " + node.describe() + ": " + why);
    return 0;
  };
  if (capacity < node.outputs.size() || !out_values) return refuse("out_values too small");
  for (const auto& [key, attr] : node.attrs)
    if (attr.kind == ir::AttrKind::kGraph) return refuse("has a sub-graph");
  ir::Graph mini;
  std::vector<ir::ValueId> ins, outs;
  for (ir::ValueId in : node.inputs) {
    if (in == ir::kNoValue) {
      ins.push_back(ir::kNoValue);
      continue;
    }
    const ir::Value& v = run.work.value(in);
    if (!v.is_constant()) return refuse("input '" + v.name + "' is not constant");
    ins.push_back(mini.add_constant("in" + std::to_string(ins.size()), v.constant));
  }
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    if (node.outputs[i] == ir::kNoValue) {
      outs.push_back(ir::kNoValue);
      continue;
    }
    const ir::Value& v = run.work.value(node.outputs[i]);
    outs.push_back(mini.add_value("out" + std::to_string(i), v.dtype, v.shape));
    mini.add_output(outs.back());
  }
  ir::NodeId mid = mini.add_node(node.op, ins, outs, node.attrs, node.name);
  mini.node(mid).domain = node.domain;
  runtime::ReferenceExecutor exec(mini);
  auto result = exec.run({});
  if (!result.ok()) return refuse(result.status().message());
  size_t k = 0;
  std::vector<kiln_value_id_t> made;
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    if (node.outputs[i] == ir::kNoValue) {
      made.push_back(KILN_NO_ID);
      continue;
    }
    const std::string base = run.work.value(node.outputs[i]).name;
    made.push_back(run.work.add_constant(run.unique_name(base.c_str()), (*result)[k++]));
  }
  // Constants live in the node's region so they are visible to its users.
  for (size_t i = 0; i < made.size(); ++i) {
    if (made[i] != KILN_NO_ID) run.work.value(made[i]).region = node.region;
    out_values[i] = made[i];
  }
  run.edited();
  return 1;
}

const char* h_attr_name_at(const kiln_graph_t* g, kiln_node_id_t id, size_t index) {
  if (!run_of(g).node_ok(id)) return nullptr;
  const auto& attrs = run_of(g).work.node(id).attrs;
  if (index >= attrs.size()) return nullptr;
  auto it = attrs.begin();
  std::advance(it, static_cast<std::ptrdiff_t>(index));
  return run_of(g).keep(it->first);
}

int32_t h_rw_set_value_dims(kiln_rewriter_t* rw, kiln_value_id_t id, const char* const* dim_exprs, size_t rank) {
  PassRun& run = run_of(rw);
  if (!run.value_ok(id)) return run.fail("set_value_dims: bad value id " + std::to_string(id));
  ir::Value& v = run.work.value(id);
  auto bad = [&](const std::string& why) { return run.fail("set_value_dims '" + v.name + "': " + why); };
  if (v.is_constant()) return bad("a constant's shape is its data's");
  if (rank && !dim_exprs) return bad("no dims given for rank " + std::to_string(rank));
  std::vector<ir::Dim> dims;
  for (size_t k = 0; k < rank; ++k) {
    const std::string axis = "dim " + std::to_string(k);
    if (!dim_exprs[k]) return bad(axis + " is NULL");
    auto d = ir::Dim::parse(dim_exprs[k]);
    if (!d.ok()) return bad(axis + ": " + d.status().message());
    if (d->is_const() && d->value() < 0) return bad(axis + " is negative (" + dim_exprs[k] + ")");
    dims.push_back(std::move(*d));
  }
  v.shape = ir::SymShape(std::move(dims));
  return 1;
}

// The op registry's inference for one staged node on shapes the plugin
// supplies (see kiln_host_api_t::infer_node_dims): the one shape inference,
// so a plugin need not re-implement ops. Constant inputs are the graph's own
// (shape and data); every other input takes the given rank, dims and, for
// shape data, element values.
int32_t h_infer_node_dims(const kiln_graph_t* g, kiln_node_id_t id, const int32_t* input_ranks,
                          const char* const* const* input_dims, const char* const* const* input_values,
                          int32_t* out_ranks, const char* const** out_dims, size_t output_capacity) {
  PassRun& run = run_of(g);
  if (!run.node_ok(id)) return 0;
  const ir::Node& node = run.work.node(id);
  auto refuse = [&](const std::string& why) {
    run.emit_log(KILN_LOG_DEBUG, "infer_node_dims: " + node.describe() + ": " + why);
    return 0;
  };
  const ops::OpSchema* schema = ops::OpRegistry::builtin().find(node.domain, node.op);
  if (!schema || !schema->infer) return refuse("no shape inference for this op");
  for (const auto& [key, attr] : node.attrs)
    if (attr.kind == ir::AttrKind::kGraph) return refuse("has a sub-graph");
  if (!node.inputs.empty() && (!input_ranks || !input_dims)) return refuse("no input shapes given");
  auto parse_list = [&](const char* const* texts, size_t count, const std::string& what,
                        std::vector<ir::Dim>& out) -> bool {
    if (count && !texts) return refuse(what + " missing"), false;
    for (size_t k = 0; k < count; ++k) {
      if (!texts[k]) return refuse(what + " " + std::to_string(k) + " is NULL"), false;
      auto d = ir::Dim::parse(texts[k]);
      if (!d.ok()) return refuse(what + " " + std::to_string(k) + ": " + d.status().message()), false;
      out.push_back(std::move(*d));
    }
    return true;
  };
  std::vector<ops::ValueInfo> inputs;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    ops::ValueInfo info;
    const ir::ValueId vid = node.inputs[i];
    if (vid != ir::kNoValue) {
      const ir::Value& v = run.work.value(vid);
      const std::string what = "input " + std::to_string(i);
      if (v.dtype == DType::kUndefined) return refuse(what + " has no dtype");
      info.dtype = v.dtype;
      if (v.is_constant()) {
        info.shape = v.shape;
        info.value = &v.constant;
      } else if (input_ranks[i] >= 0) {
        std::vector<ir::Dim> dims;
        if (!parse_list(input_dims[i], static_cast<size_t>(input_ranks[i]), what + " dim", dims)) return 0;
        info.shape = ir::SymShape(std::move(dims));
        if (input_values && input_values[i] && dtype_is_integer(v.dtype) && input_ranks[i] <= 1) {
          const ir::Dim count = input_ranks[i] == 0 ? ir::Dim(1) : info.shape.dims[0];
          if (!count.is_const() || count.value() < 0) return refuse(what + ": values of an unknown count");
          std::vector<ir::Dim> values;
          if (!parse_list(input_values[i], static_cast<size_t>(count.value()), what + " value", values)) return 0;
          info.dims_value = std::move(values);
        }
      }
    }
    inputs.push_back(std::move(info));
  }
  auto outs = ops::infer_node(*schema, node, std::move(inputs));
  if (!outs.ok()) return refuse(outs.status().message());
  for (size_t k = 0; k < output_capacity && k < node.outputs.size(); ++k) {
    const ir::SymShape& shape = k < outs->size() ? (*outs)[k].shape : ir::SymShape();
    if (out_ranks) out_ranks[k] = shape.has_rank ? static_cast<int32_t>(shape.rank()) : -1;
    if (!out_dims) continue;
    run.dim_lists.emplace_back();
    for (const ir::Dim& d : shape.dims) run.dim_lists.back().push_back(run.keep(d.to_string()));
    run.dim_lists.back().push_back(nullptr);  // never an empty array: a scalar's list is {NULL}
    out_dims[k] = run.dim_lists.back().data();
  }
  return 1;
}

int32_t h_target_info(const kiln_graph_t* g, kiln_target_info_t* out) {
  const PassRun& run = run_of(g);
  if (!run.target || !out || out->struct_size < sizeof(uint32_t)) return 0;
  // Copy what both sides know; the caller's struct_size stays its own.
  const uint32_t size = out->struct_size;
  const size_t n = std::min<size_t>(size, run.target->struct_size);
  std::memcpy(out, run.target, n);
  out->struct_size = size;
  return 1;
}

// SmartMem's class of the node's op and its input's reduction axes (op_layout.h).
int32_t h_op_layout(const kiln_graph_t* g, kiln_node_id_t id, size_t input, kiln_op_layout_t* out) {
  PassRun& run = run_of(g);
  if (!run.node_ok(id) || !out || out->struct_size < sizeof(uint32_t)) return 0;
  const ir::Node& n = run.work.node(id);
  if (input >= n.inputs.size()) return 0;
  kiln_op_layout_t info{};
  info.struct_size = std::min<uint32_t>(out->struct_size, static_cast<uint32_t>(sizeof(info)));
  const ops::OpSchema* schema = ops::OpRegistry::builtin().find(n.domain, n.op);
  info.layout_class = schema ? static_cast<int32_t>(ops::layout_class(*schema)) : KILN_LAYOUT_CLASS_UNKNOWN;
  for (int axis : ops::reduction_axes(run.work, n, input))
    if (axis < 64) info.reduction_axes |= uint64_t{1} << axis;
  std::memcpy(out, &info, info.struct_size);
  return 1;
}

const char* h_graph_text_external(const kiln_graph_t* g, int64_t inline_elements, size_t* out_length) {
  PassRun& run = run_of(g);
  ir::PrintOptions options;
  options.external_constants_over = inline_elements < 0 ? -1 : inline_elements;
  const char* text = run.keep(ir::print_graph(run.work, options));
  if (out_length) *out_length = run.strings.back().size();
  return text;
}

const char* h_graph_text(const kiln_graph_t* g, size_t* out_length) { return h_graph_text_external(g, -1, out_length); }

// Constants the pass's edits left without a use are released (their tensor
// dropped), so folded-away weights do not linger in the graph. Constants
// that were already unused before the pass are the model's business.
void release_orphaned_constants(PassRun& run, const ir::Graph& original) {
  run.uses_valid = false;
  run.build_uses();
  std::vector<bool> used_before(original.num_values(), false);
  for (size_t r = 0; r < original.num_regions(); ++r) {
    const ir::Region& region = original.region(static_cast<ir::RegionId>(r));
    for (ir::NodeId nid : region.nodes)
      for (ir::ValueId in : original.node(nid).inputs)
        if (in != ir::kNoValue) used_before[static_cast<size_t>(in)] = true;
    for (ir::ValueId out : region.outputs)
      if (out != ir::kNoValue) used_before[static_cast<size_t>(out)] = true;
  }
  for (size_t v = 0; v < run.work.num_values(); ++v) {
    ir::Value& value = run.work.value(static_cast<ir::ValueId>(v));
    if (!value.is_constant() || !run.uses[v].empty()) continue;
    if (v >= used_before.size() || used_before[v]) value.constant = Tensor();
  }
}

// A value created under a suffixed name ("shape_1", because "shape" was
// the value it replaces) takes the wanted name back when that value died in
// the same pass, so rewrites keep the model's value names. Dead values (no
// producer, no constant, no use, not a region input) lose their names.
void reclaim_names(PassRun& run) {
  if (run.pending_names.empty()) return;
  run.uses_valid = false;
  run.build_uses();
  std::vector<bool> region_input(run.work.num_values(), false);
  for (size_t r = 0; r < run.work.num_regions(); ++r)
    for (ir::ValueId in : run.work.region(static_cast<ir::RegionId>(r)).inputs)
      if (in != ir::kNoValue) region_input[static_cast<size_t>(in)] = true;
  std::map<std::string, ir::ValueId> live;
  std::vector<ir::ValueId> dead;
  for (size_t v = 0; v < run.work.num_values(); ++v) {
    const ir::Value& value = run.work.value(static_cast<ir::ValueId>(v));
    const bool is_live = value.is_constant() || value.producer != ir::kNoNode || region_input[v] || !run.uses[v].empty();
    if (is_live) live.emplace(value.name, static_cast<ir::ValueId>(v));
    else dead.push_back(static_cast<ir::ValueId>(v));
  }
  for (ir::ValueId v : dead) run.work.value(v).name.clear();
  for (const auto& [suffixed, wanted] : run.pending_names) {
    auto it = live.find(suffixed);
    if (it == live.end() || live.count(wanted)) continue;
    run.work.value(it->second).name = wanted;
    live.emplace(wanted, it->second);
    live.erase(it);
  }
}

const kiln_host_api_t kHostApi = {
    sizeof(kiln_host_api_t),
    KILN_PLUGIN_ABI_VERSION,
    h_make_status,
    h_log,
    h_region_count,
    h_region_node_count,
    h_region_node_at,
    h_region_input_count,
    h_region_input_at,
    h_region_output_count,
    h_region_output_at,
    h_node_info,
    h_node_input,
    h_node_output,
    h_attr_kind,
    h_attr_int,
    h_attr_float,
    h_attr_string,
    h_attr_ints,
    h_attr_floats,
    h_attr_graph,
    h_value_info,
    h_value_dim,
    h_value_constant,
    h_value_use_count,
    h_value_use_at,
    h_node_annotation,
    h_value_annotation,
    h_rw_add_value,
    h_rw_add_constant,
    h_rw_add_node,
    h_rw_erase_node,
    h_rw_replace_uses,
    h_rw_set_input,
    h_rw_set_attr_int,
    h_rw_set_attr_float,
    h_rw_set_attr_string,
    h_rw_set_attr_ints,
    h_rw_set_attr_floats,
    h_rw_remove_attr,
    h_rw_annotate_node,
    h_rw_annotate_value,
    h_rw_add_statistic,
    h_evaluate_node,
    h_attr_name_at,
    h_rw_set_value_dims,
    h_infer_node_dims,
    h_op_mapping,
    h_rw_remove_node_annotation,
    h_rw_remove_value_annotation,
    h_target_info,
    h_op_layout,
    h_graph_text,
    h_graph_text_external,
};
static_assert(static_cast<int>(ops::LayoutClass::kUnknown) == KILN_LAYOUT_CLASS_UNKNOWN &&
                  static_cast<int>(ops::LayoutClass::kIldVariable) == KILN_LAYOUT_CLASS_ILD_VARIABLE &&
                  static_cast<int>(ops::LayoutClass::kIliVariable) == KILN_LAYOUT_CLASS_ILI_VARIABLE &&
                  static_cast<int>(ops::LayoutClass::kIldFixed) == KILN_LAYOUT_CLASS_ILD_FIXED &&
                  static_cast<int>(ops::LayoutClass::kIliFixed) == KILN_LAYOUT_CLASS_ILI_FIXED,
              "the layout classes are kiln_layout_class_t's numbers");
static_assert(static_cast<int>(ops::MappingType::kUnset) == KILN_MAPPING_UNKNOWN &&
                  static_cast<int>(ops::MappingType::kOneToOne) == KILN_MAPPING_ONE_TO_ONE &&
                  static_cast<int>(ops::MappingType::kOneToMany) == KILN_MAPPING_ONE_TO_MANY &&
                  static_cast<int>(ops::MappingType::kManyToMany) == KILN_MAPPING_MANY_TO_MANY &&
                  static_cast<int>(ops::MappingType::kReorganize) == KILN_MAPPING_REORGANIZE &&
                  static_cast<int>(ops::MappingType::kShuffle) == KILN_MAPPING_SHUFFLE &&
                  static_cast<int>(ops::MappingType::kOther) == KILN_MAPPING_OTHER,
              "ops::MappingType and kiln_mapping_t share their numbering");

// Restores the thread's current run when a pass returns (passes may nest:
// a pass manager inside a plugin is not forbidden).
class CurrentRunScope {
 public:
  explicit CurrentRunScope(PassRun* run) : saved_(current_run) { current_run = run; }
  ~CurrentRunScope() { current_run = saved_; }
  CurrentRunScope(const CurrentRunScope&) = delete;
  CurrentRunScope& operator=(const CurrentRunScope&) = delete;

 private:
  PassRun* saved_;
};

}  // namespace

const kiln_host_api_t* host_api() { return &kHostApi; }

StatusOr<PassRunResult> run_pass(const kiln_pass_t& pass, ir::Graph& graph, const LogFn& log,
                                 const kiln_target_info_t* target) {
  const std::string name = pass.name ? pass.name : "<unnamed>";
  if (!pass.run) return invalid_argument("pass '" + name + "' has no run function");
  PassRun run(graph);
  run.pass_name = name;
  run.log = &log;
  run.target = target;
  kiln_plugin_status_t* status = nullptr;
  {
    CurrentRunScope scope(&run);
    status = pass.run(pass.pass_state, &kHostApi, &run.view, &run.rw);
  }
  if (status) return take_plugin_status(status, "pass '" + name + "' failed");
  if (!run.first_error.empty())
    return internal_error("pass '" + name + "' made an invalid edit, nothing was applied: " + run.first_error);
  PassRunResult result;
  result.statistics = std::move(run.statistics);
  release_orphaned_constants(run, graph);
  reclaim_names(run);
  Status verified = ir::verify_graph(run.work);
  if (!verified.ok())
    return internal_error("pass '" + name + "' produced an invalid graph, its edits were discarded: " +
                          verified.message());
  Status inferred = ops::infer_graph_shapes(run.work);
  if (!inferred.ok())
    return internal_error("pass '" + name + "' produced a graph whose shapes do not infer, its edits were discarded: " +
                          inferred.message());
  graph = std::move(run.work);
  result.committed = true;
  return result;
}

Status take_plugin_status(kiln_plugin_status_t* status, const std::string& what) {
  if (!status) return ok_status();
  const std::string message = status->message;
  const StatusCode code = static_cast<StatusCode>(static_cast<int>(status->code));
  delete status;
  return Status(code, what + ": " + message);
}

Status with_graph_view(const ir::Graph& graph, const LogFn& log, const std::string& what, const GraphViewFn& fn) {
  PassRun run(graph);
  run.pass_name = what;
  run.log = &log;
  kiln_plugin_status_t* status = nullptr;
  {
    CurrentRunScope scope(&run);
    status = fn(&kHostApi, &run.view);
  }
  return take_plugin_status(status, what);
}

}  // namespace kiln::registry
