// build_plan: decide per node where it runs and lower it (see execution_plan.h).
#include "planner/execution_plan.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "kiln/kiln_plugin.h"
#include "planner/control_flow.h"
#include "planner/fusion.h"
#include "planner/fusion_row_norm.h"
#include "planner/fusion_store_views.h"
#include "planner/fusion_views.h"
#include "planner/inplace.h"
#include "planner/plan_builder.h"
#include "planner/precision_policy.h"

namespace kiln::planner {

PlanBuilder::PlanBuilder(const ir::Graph& graph, const TargetInfo& target, const PlanOptions& options)
    : graph_(graph), target_(target), options_(options) {
  plan_.options = options;
  const size_t n = graph.num_values();
  shapes_.resize(n);
  ranked_.resize(n);
  dims_values_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const ir::Value& v = graph.value(static_cast<ir::ValueId>(i));
    ranked_[i] = v.shape.has_rank;
    for (size_t k = 0; k < v.shape.dims.size(); ++k) {
      const ir::Dim& d = v.shape.dims[k];
      // Unknown dims get a fresh symbol the runtime binds from the concrete
      // shape it computes, so every plan dim is an expression over symbols.
      shapes_[i].push_back(d.is_known() ? d : ir::Dim::symbol("_v" + std::to_string(i) + "_" + std::to_string(k)));
    }
  }
  float_types_ = choose_float_types(graph, shapes_, options.precision);
}

ElemType PlanBuilder::value_elem_type(ir::ValueId v) const {
  return device_elem_type(graph_.value(v).dtype, float_types_[static_cast<size_t>(v)]);
}

DeviceLayout PlanBuilder::choose_layout(DType dtype, const std::vector<ir::Dim>& shape, bool constant,
                                        ElemType float_type, const StorageHint& hint) const {
  DeviceLayout layout;
  layout.type = device_elem_type(dtype, float_type);
  const Storage wanted = hint.storage.value_or(options_.storage);
  if (constant || wanted != Storage::kImage || !is_float(layout.type) || shape.empty()) return layout;
  const int packed = hint.packed_axis && *hint.packed_axis < static_cast<int>(shape.size())
                         ? *hint.packed_axis
                         : default_packed_axis(shape.size());
  const ImageExtent e = image_extent(shape, packed);
  const int64_t limit = target_.max_image_dimension_2d;
  // Too large for an image: the tensor stays a buffer. Symbolic extents are
  // checked when a run binds the shapes.
  if ((e.width.is_const() && e.width.value() > limit) || (e.height.is_const() && e.height.value() > limit))
    return layout;
  layout.storage = Storage::kImage;
  layout.packed_axis = packed;
  return layout;
}

TensorId PlanBuilder::add_tensor(PlanTensor t) {
  plan_.tensors.push_back(std::move(t));
  return static_cast<TensorId>(plan_.tensors.size() - 1);
}

TensorId PlanBuilder::tensor_of(ir::ValueId v) {
  auto it = plan_.value_tensor.find(v);
  if (it != plan_.value_tensor.end()) return it->second;
  const ir::Value& value = graph_.value(v);
  PlanTensor t;
  t.origin = PlanTensor::Origin::kValue;
  t.value = v;
  t.dtype = value.dtype;
  t.shape = shapes_[static_cast<size_t>(v)];
  // check_plan_hints ran first: a malformed hint never reaches here.
  const StatusOr<StorageHint> hinted = storage_hint(value);
  const StorageHint hint = hinted.ok() ? *hinted : StorageHint{};
  t.layout = choose_layout(value.dtype, t.shape, value.is_constant(), float_types_[static_cast<size_t>(v)], hint);
  if (value.is_constant()) t.constant = value.constant;
  const TensorId id = add_tensor(std::move(t));
  plan_.value_tensor[v] = id;
  return id;
}

size_t ExecutionPlan::dispatch_count() const {
  return static_cast<size_t>(std::count_if(steps.begin(), steps.end(),
                                           [](const PlanStep& s) { return s.kind == PlanStep::Kind::kDispatch; }));
}

size_t ExecutionPlan::fallback_count() const {
  return static_cast<size_t>(std::count_if(steps.begin(), steps.end(),
                                           [](const PlanStep& s) { return s.kind == PlanStep::Kind::kFallback; }));
}

namespace {

bool has_subgraph(const ir::Node& node) {
  for (const auto& [key, attr] : node.attrs)
    if (attr.kind == ir::AttrKind::kGraph) return true;
  return false;
}

// Values of shape-computation chains as symbolic dims (Shape -> Gather ->
// Concat -> Reshape), the same facts shape inference derives.
// Walks `region` and, through If nodes, their branches (lowered too).
void collect_dims_values(const ir::Graph& graph, const ops::OpRegistry& registry, PlanBuilder& builder,
                         ir::RegionId region = ir::kMainRegion) {
  for (ir::NodeId nid : graph.region(region).nodes) {
    const ir::Node& node = graph.node(nid);
    const ops::OpSchema* schema = registry.find(node.domain, node.op);
    if (node.domain.empty() && node.op == "If")
      for (const char* branch : {"then_branch", "else_branch"}) {
        const ir::Attribute* a = node.attr(branch);
        if (a && a->kind == ir::AttrKind::kGraph && a->region != ir::kNoRegion)
          collect_dims_values(graph, registry, builder, a->region);
      }
    if (!schema || has_subgraph(node)) continue;
    std::vector<ops::ValueInfo> inputs;
    for (ir::ValueId id : node.inputs) {
      ops::ValueInfo info;
      if (id != ir::kNoValue) {
        const ir::Value& v = graph.value(id);
        info.dtype = v.dtype;
        info.shape = v.shape;
        if (v.shape.has_rank) info.shape.dims = builder.value_shape(id);
        if (v.is_constant()) info.value = &v.constant;
        info.dims_value = builder.dims_value(id);
      }
      inputs.push_back(std::move(info));
    }
    auto outs = ops::infer_node(*schema, node, std::move(inputs));
    if (!outs.ok()) continue;
    for (size_t i = 0; i < node.outputs.size() && i < outs->size(); ++i)
      if (node.outputs[i] != ir::kNoValue && (*outs)[i].dims_value)
        builder.set_dims_value(node.outputs[i], std::move(*(*outs)[i].dims_value));
  }
}

// Whether every node reading `v` reads it at one of its schema's
// value_inputs (and something reads it).
bool read_only_as_shape_data(const ir::Graph& graph, const ops::OpRegistry& registry, ir::ValueId v) {
  bool read = false;
  // Every region: an If's branch may read a main input by id.
  for (size_t n = 0; n < graph.num_nodes(); ++n) {
    const ir::Node& node = graph.node(static_cast<ir::NodeId>(n));
    if (node.erased) continue;
    const ops::OpSchema* schema = registry.find(node.domain, node.op);
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (node.inputs[i] != v) continue;
      if (!schema || std::find(schema->value_inputs.begin(), schema->value_inputs.end(), static_cast<int>(i)) ==
                         schema->value_inputs.end())
        return false;
      read = true;
    }
  }
  return read;
}

// A kernel binds each buffer tensor through one descriptor, so a constant
// larger than the device's storage-buffer range (vgg11's first classifier
// weight is 392 MiB; lavapipe allows 128 MiB) cannot be bound: such a node
// runs on the host instead.
Status check_buffer_ranges(PlanBuilder& builder, const ir::Node& node) {
  for (const KernelDesc& k : builder.pending_kernels())
    for (const KernelTensor& t : k.tensors) {
      const PlanTensor& pt = builder.tensor(t.tensor);
      if (!pt.constant.defined() || pt.layout.storage != Storage::kBuffer) continue;
      const uint64_t bytes = static_cast<uint64_t>(pt.constant.numel()) * elem_bytes(pt.layout.type);
      if (bytes > builder.target().max_storage_buffer_range)
        return unimplemented(node.describe() + ": a constant of " + std::to_string(bytes) +
                             " bytes exceeds the device's storage-buffer range of " +
                             std::to_string(builder.target().max_storage_buffer_range) + " bytes");
    }
  return ok_status();
}

// What lowering nodes adds to the plan, kept so that a failed lowering can
// be undone.
struct Checkpoint {
  size_t tensors = 0;
  size_t host_params = 0;
  std::vector<std::pair<ir::ValueId, TensorId>> output_aliases;  // each output's alias_of before
};

Checkpoint checkpoint(PlanBuilder& builder, const ir::Graph& graph, const std::vector<ir::NodeId>& nodes) {
  Checkpoint c;
  c.tensors = builder.plan().tensors.size();
  c.host_params = builder.plan().host_params.size();
  for (ir::NodeId nid : nodes)
    for (ir::ValueId v : graph.node(nid).outputs)
      if (v != ir::kNoValue) c.output_aliases.push_back({v, builder.tensor(builder.tensor_of(v)).alias_of});
  return c;
}

void rollback(PlanBuilder& builder, const Checkpoint& c) {
  ExecutionPlan& plan = builder.plan();
  builder.pending_kernels().clear();
  for (auto it = plan.value_tensor.begin(); it != plan.value_tensor.end();)
    it = (static_cast<size_t>(it->second) >= c.tensors) ? plan.value_tensor.erase(it) : std::next(it);
  if (plan.tensors.size() > c.tensors) plan.tensors.resize(c.tensors);
  plan.host_params.resize(c.host_params);
  for (const auto& [v, alias] : c.output_aliases) builder.tensor(builder.tensor_of(v)).alias_of = alias;
}

// Appends the pending kernels as dispatch steps of node `nid`.
void emit_pending(PlanBuilder& builder, ir::NodeId nid) {
  for (KernelDesc& k : builder.pending_kernels()) {
    PlanStep step;
    step.kind = PlanStep::Kind::kDispatch;
    step.node = nid;
    step.kernel = std::move(k);
    builder.plan().steps.push_back(std::move(step));
  }
  builder.pending_kernels().clear();
}

}  // namespace

StatusOr<ExecutionPlan> build_plan(const ir::Graph& graph, const TargetInfo& target, const PlanOptions& options,
                                   const LoweringRegistry& lowerings, const ops::OpRegistry& ops) {
  if (options.precision == ElemType::kI32) return invalid_argument("precision must be f32 or f16");
  if (options.precision == ElemType::kF16 && !target.fp16_storage)
    return unimplemented("fp16 precision needs 16-bit storage buffers, which this device lacks");
  KILN_RETURN_IF_ERROR(check_plan_hints(graph));
  PlanBuilder builder(graph, target, options);
  collect_dims_values(graph, ops, builder);
  ExecutionPlan& plan = builder.plan();

  // Values known on the host: constants, and whatever shape arithmetic
  // computes from them and from Shape/Size.
  std::vector<bool> host_known(graph.num_values(), false);
  for (size_t i = 0; i < graph.num_values(); ++i)
    host_known[i] = graph.value(static_cast<ir::ValueId>(i)).is_constant();
  for (ir::ValueId v : graph.main().inputs) {
    plan.inputs.push_back(builder.tensor_of(v));
    // A small input of static shape is shape-like when it is an integer (a
    // Reshape target, Slice bounds, axes) or only ever read as shape data
    // (Resize's scales): its value joins the shape signature and it lives on
    // the host, uploaded only when a kernel reads it.
    const ir::Value& value = graph.value(v);
    if ((!dtype_is_float(value.dtype) || read_only_as_shape_data(graph, ops, v)) && value.shape.is_static() &&
        shape_numel(value.shape.concrete()) <= kHostInputMaxElements) {
      host_known[static_cast<size_t>(v)] = true;
      builder.tensor(plan.inputs.back()).host_resident = true;
    }
  }

  // One node into the plan: a host step, device kernels, an If with its
  // branches (control_flow.h, which lowers the branches' nodes through this
  // very function), or a host fallback.
  std::function<Status(ir::NodeId)> lower_node = [&](ir::NodeId nid) -> Status {
    const ir::Node& node = graph.node(nid);
    if (node.erased) return ok_status();
    const ops::OpSchema* schema = ops.find(node.domain, node.op);
    bool inputs_host = true;
    for (ir::ValueId v : node.inputs)
      if (v != ir::kNoValue && !host_known[static_cast<size_t>(v)]) inputs_host = false;
    const bool shape_op = node.domain.empty() && (node.op == "Shape" || node.op == "Size");
    if (schema && schema->kernel && !has_subgraph(node) && (shape_op || inputs_host)) {
      PlanStep step;
      step.kind = PlanStep::Kind::kHost;
      step.node = nid;
      plan.steps.push_back(std::move(step));
      for (ir::ValueId v : node.outputs) {
        if (v == ir::kNoValue) continue;
        host_known[static_cast<size_t>(v)] = true;
        builder.tensor(builder.tensor_of(v)).host_resident = true;
      }
      return ok_status();
    }
    for (ir::ValueId v : node.outputs)
      if (v != ir::kNoValue && !builder.value_ranked(v))
        return unimplemented(node.describe() + ": output '" + graph.value(v).name +
                             "' has an unknown rank; the Vulkan backend needs ranked values");

    Status lowered = unimplemented(node.describe() + ": no device lowering for op '" +
                                   (node.domain.empty() ? node.op : node.domain + "." + node.op) + "'");
    if (node.domain.empty() && node.op == "If") {
      const std::string blocker = if_device_blocker(builder, graph, node);
      if (blocker.empty()) return lower_if(builder, graph, nid, lower_node);
      lowered = unimplemented(node.describe() + ": runs on the host: " + blocker);
    }
    if (node.domain.empty() && node.op == "Loop") {
      const std::string blocker = loop_device_blocker(builder, graph, node, host_known);
      if (blocker.empty()) return lower_loop(builder, graph, nid, host_known, lower_node);
      lowered = unimplemented(node.describe() + ": runs on the host: " + blocker);
    }
    bool ranked_inputs = true;
    for (ir::ValueId v : node.inputs)
      if (v != ir::kNoValue && !builder.value_ranked(v)) ranked_inputs = false;
    const LowerFn fn = lowerings.find(node.domain, node.op);
    const Checkpoint before = checkpoint(builder, graph, {nid});
    if (fn && ranked_inputs && !has_subgraph(node)) {
      LoweringContext ctx(builder, graph, nid);
      lowered = fn(ctx);
    }
    if (lowered.ok()) lowered = check_buffer_ranges(builder, node);
    if (lowered.ok()) {
      emit_pending(builder, nid);
      return ok_status();
    }
    if (lowered.code() != StatusCode::kUnimplemented) return lowered;
    // Undo what the failed lowering added, then run the node on the host.
    rollback(builder, before);
    if (!schema || !schema->kernel) return lowered;
    for (ir::ValueId v : node.inputs)
      if (v != ir::kNoValue) builder.tensor_of(v);
    plan.fallback_reasons.push_back(lowered.message());
    PlanStep step;
    step.kind = PlanStep::Kind::kFallback;
    step.node = nid;
    plan.steps.push_back(std::move(step));
    return ok_status();
  };
  // The memplan-order pass (plugins/memplan) may have chosen an order of lower
  // peak memory: "memplan.order" = 0, 1, ... on every live main node. It is
  // followed when complete and valid (no node before a producer of its
  // inputs); otherwise the graph's order is.
  std::vector<ir::NodeId> main_order;
  {
    std::vector<std::pair<int64_t, ir::NodeId>> keyed;
    bool complete = true;
    for (ir::NodeId nid : graph.main().nodes) {
      const ir::Node& node = graph.node(nid);
      if (node.erased) continue;
      auto it = node.annotations.find(KILN_ANNOTATION_MEMPLAN_ORDER);
      int64_t key = 0;
      complete = complete && it != node.annotations.end() && !it->second.empty() && it->second.size() < 10;
      if (!complete) break;
      for (char c : it->second) complete = complete && c >= '0' && c <= '9', key = key * 10 + (c - '0');
      keyed.push_back({key, nid});
    }
    std::vector<bool> pending(graph.num_values(), false);  // made by a main node not yet reached
    for (const auto& [key, nid] : keyed)
      for (ir::ValueId v : graph.node(nid).outputs)
        if (v != ir::kNoValue) pending[static_cast<size_t>(v)] = true;
    std::stable_sort(keyed.begin(), keyed.end());
    for (const auto& [key, nid] : keyed) {
      for (ir::ValueId v : graph.node(nid).inputs) complete = complete && (v == ir::kNoValue || !pending[static_cast<size_t>(v)]);
      for (ir::ValueId v : graph.node(nid).outputs)
        if (v != ir::kNoValue) pending[static_cast<size_t>(v)] = false;
      main_order.push_back(nid);
    }
    if (!complete) main_order = graph.main().nodes;
  }
  // Fusion groups (fusion.h): a group that may fuse is lowered as one kernel
  // where its last node stands (every input of the group is made by then,
  // and only nodes after it read its output); its other nodes wait for it.
  std::map<ir::NodeId, const FusionGroup*> deferred;
  std::vector<FusionGroup> groups = collect_fusion_groups(graph, main_order);
  const auto note = [&](const FusionGroup& g, const std::string& why) {
    plan.fusion_notes.push_back("fusion group '" + g.id + "' (" + std::to_string(g.nodes.size()) +
                                " nodes) runs unfused: " + why);
  };
  std::map<ir::NodeId, size_t> position;
  for (size_t i = 0; i < main_order.size(); ++i) position[main_order[i]] = i;
  for (FusionGroup& g : groups) {
    std::string why = fusion_blocker_with_views(graph, builder, g);  // fusion_views.h: view nodes first
    // A row-norm group's first output may be read outside it
    // (fusion_row_norm.h); read before its norm, the group runs without the
    // norm (its last node), which then runs alone.
    if (why.empty())
      if (const FusionGroup core = split_view_nodes(graph, g).core; is_row_norm_group(graph, core)) {
        const std::string early = row_norm_order_blocker(graph, core, position);
        if (!early.empty()) {
          plan.fusion_notes.push_back("fusion group '" + g.id + "' (" + std::to_string(g.nodes.size()) +
                                      " nodes) runs without its LayerNormalization: " + early);
          g.nodes.pop_back();
          if (g.nodes.size() < 2) continue;
          why = fusion_blocker_with_views(graph, builder, g);
        }
      }
    if (!why.empty()) {
      note(g, why);
      continue;
    }
    for (ir::NodeId nid : g.nodes) deferred[nid] = &g;
  }
  const auto lower_group = [&](const FusionGroup& whole) -> Status {
    // A store-view group that cannot fuse may still fuse as the two groups
    // it joined (fusion_store_views.h): its anchor part, its views and tail
    // (also a dw-norm group: its conv, then the norm reading its views).
    std::vector<FusionGroup> work{whole};
    for (size_t i = 0; i < work.size(); ++i) {
      const FusionGroup g = work[i];
      if (g.nodes.size() == 1) {
        KILN_RETURN_IF_ERROR(lower_node(g.nodes[0]));
        continue;
      }
      const ir::NodeId last = g.nodes.back();
      std::string why = i == 0 ? std::string() : fusion_blocker_with_views(graph, builder, g);
      for (ir::NodeId nid : g.nodes) {
        bool inputs_host = true;
        for (ir::ValueId v : graph.node(nid).inputs)
          if (v != ir::kNoValue && !host_known[static_cast<size_t>(v)]) inputs_host = false;
        if (inputs_host) why = graph.node(nid).describe() + " runs on the host (its inputs are host values)";
      }
      if (why.empty()) {
        const Checkpoint before = checkpoint(builder, graph, g.nodes);
        Status fused = lower_fused_with_views(builder, graph, g, lowerings);
        if (fused.ok()) fused = check_buffer_ranges(builder, graph.node(last));
        if (fused.ok()) {
          emit_pending(builder, last);
          continue;
        }
        if (fused.code() != StatusCode::kUnimplemented) return fused;
        rollback(builder, before);
        why = fused.message();
      }
      if (auto halves = store_view_halves(graph, g)) {
        plan.fusion_notes.push_back("fusion group '" + g.id + "' (" + std::to_string(g.nodes.size()) +
                                    " nodes) runs as two groups, its anchor part and its tail: " + why);
        work.insert(work.begin() + static_cast<std::ptrdiff_t>(i) + 1, halves->begin(), halves->end());
        continue;
      }
      note(g, why);
      for (ir::NodeId nid : g.nodes) KILN_RETURN_IF_ERROR(lower_node(nid));
    }
    return ok_status();
  };
  for (ir::NodeId nid : main_order) {
    auto group = deferred.find(nid);
    if (group == deferred.end()) KILN_RETURN_IF_ERROR(lower_node(nid));
    else if (nid == group->second->nodes.back()) KILN_RETURN_IF_ERROR(lower_group(*group->second));
  }
  for (ir::ValueId v : graph.main().outputs) plan.outputs.push_back(builder.tensor_of(v));
  if (options.inplace) plan_inplace(plan, graph);

  std::set<std::string> symbols;
  std::vector<std::string> names;
  for (const PlanTensor& t : plan.tensors)
    for (const ir::Dim& d : t.shape) d.collect_symbols(names);
  for (const PlanStep& s : plan.steps) {
    for (const KernelParam& p : s.kernel.params) p.value.collect_symbols(names);
    for (const ir::Dim& g : s.kernel.groups) g.collect_symbols(names);
  }
  symbols.insert(names.begin(), names.end());
  plan.symbols.assign(symbols.begin(), symbols.end());
  return std::move(plan);
}

namespace {

void collect_region_reads(const ir::Graph& graph, ir::RegionId region, std::vector<ir::ValueId>& out) {
  const ir::Region& r = graph.region(region);
  out.insert(out.end(), r.outputs.begin(), r.outputs.end());
  for (ir::NodeId nid : r.nodes) {
    const ir::Node& node = graph.node(nid);
    out.insert(out.end(), node.inputs.begin(), node.inputs.end());
    for (const auto& [key, attr] : node.attrs)
      if (attr.kind == ir::AttrKind::kGraph && attr.region != ir::kNoRegion)
        collect_region_reads(graph, attr.region, out);
  }
}

}  // namespace

std::vector<ir::ValueId> subgraph_reads(const ir::Graph& graph, const ir::Node& node) {
  std::vector<ir::ValueId> out;
  for (const auto& [key, attr] : node.attrs)
    if (attr.kind == ir::AttrKind::kGraph && attr.region != ir::kNoRegion) collect_region_reads(graph, attr.region, out);
  return out;
}

std::vector<std::pair<size_t, size_t>> control_ranges(const ExecutionPlan& plan) {
  std::vector<std::pair<size_t, size_t>> ranges;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const PlanStep& step = plan.steps[s];
    if (step.kind == PlanStep::Kind::kIf) ranges.push_back({s, step.else_end});
    if (step.kind == PlanStep::Kind::kLoop) ranges.push_back({s, step.body_end});
  }
  return ranges;
}

TensorId memory_root(const ExecutionPlan& plan, TensorId t) {
  for (;;) {
    const PlanTensor& pt = plan.tensors[static_cast<size_t>(t)];
    if (pt.alias_of != kNoTensor) t = pt.alias_of;
    else if (pt.inplace_of != kNoTensor) t = pt.inplace_of;
    else return t;
  }
}

TensorId data_root(const ExecutionPlan& plan, TensorId t) {
  while (plan.tensors[static_cast<size_t>(t)].alias_of != kNoTensor) t = plan.tensors[static_cast<size_t>(t)].alias_of;
  return t;
}

std::string describe_plan(const ExecutionPlan& plan, const ir::Graph& graph) {
  auto shape_text = [](const std::vector<ir::Dim>& s) {
    std::string out = "[";
    for (size_t k = 0; k < s.size(); ++k) out += (k ? "," : "") + s[k].to_string();
    return out + "]";
  };
  std::ostringstream o;
  o << "tensors:\n";
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    const PlanTensor& t = plan.tensors[i];
    o << "  %" << i << " ";
    if (t.origin == PlanTensor::Origin::kValue) o << "'" << graph.value(t.value).name << "'";
    else o << (t.origin == PlanTensor::Origin::kConstant ? "constant"
               : t.origin == PlanTensor::Origin::kState  ? "state"
                                                          : "temporary");
    o << " " << dtype_name(t.dtype) << shape_text(t.shape) << " " << storage_name(t.layout.storage) << "/"
      << elem_type_name(t.layout.type);
    if (t.layout.storage == Storage::kImage) o << " packed=" << t.layout.packed_axis;
    if (t.host_resident) o << " host";
    if (t.alias_of != kNoTensor) o << " alias=%" << t.alias_of;
    if (t.inplace_of != kNoTensor) o << " inplace=%" << t.inplace_of;
    o << "\n";
  }
  o << "steps:\n";
  for (const PlanStep& s : plan.steps) {
    const ir::Node& n = graph.node(s.node);
    switch (s.kind) {
      case PlanStep::Kind::kDispatch: o << "  dispatch " << s.kernel.name; break;
      case PlanStep::Kind::kHost: o << "  host"; break;
      case PlanStep::Kind::kFallback: o << "  fallback"; break;
      case PlanStep::Kind::kIf:
        o << "  if %" << s.cond << " then steps.." << s.then_end << " else steps.." << s.else_end;
        break;
      case PlanStep::Kind::kLoop: o << "  loop body steps.." << s.body_end; break;
    }
    o << "  <- " << n.describe() << "\n";
  }
  return o.str();
}

}  // namespace kiln::planner
