// If on the device, planner side (see control_flow.h).
#include "planner/control_flow.h"

#include <algorithm>

#include "engine/ops/op_registry.h"
#include "planner/lower_util.h"
#include "planner/shader_template.h"

namespace kiln::planner {
namespace {

constexpr const char* kBranches[2] = {"then_branch", "else_branch"};

ir::RegionId branch_region(const ir::Node& node, int b) {
  const ir::Attribute* a = node.attr(kBranches[b]);
  return a && a->kind == ir::AttrKind::kGraph ? a->region : ir::kNoRegion;
}

// A node of `region` (or of a region nested in it) whose output shape
// counts what the data holds (SoD²'s Execution Determined Output): its
// consumers can be sized only at a sub-graph boundary, which the runtime
// places between main-graph steps, never inside a branch or a body.
const ir::Node* value_sized_node_within(const ir::Graph& graph, ir::RegionId region) {
  for (size_t id = 0; id < graph.num_nodes(); ++id) {
    const ir::Node& node = graph.node(static_cast<ir::NodeId>(id));
    if (node.erased || !node.domain.empty() || !graph.region_within(node.region, region)) continue;
    if (node.op == "NonZero" || node.op == "Unique" || node.op == "Compress") return &node;
  }
  return nullptr;
}

std::string dims_text(const std::vector<ir::Dim>& dims) {
  std::string out = "[";
  for (size_t k = 0; k < dims.size(); ++k) out += (k ? "," : "") + dims[k].to_string();
  return out + "]";
}

// Copies `src` into `dst` (a branch result into the If's output, a carried
// value into a Loop's parameter): one map kernel, any layout on either side
// (the accessors convert).
KernelDesc output_copy(PlanBuilder& builder, TensorId src, TensorId dst, const char* name = "if_output") {
  PlanTensor& s = builder.tensor(src);
  if (s.host_resident) s.device_needed = true;  // a branch output computed on the host
  KernelTensor x;
  x.name = "x0";
  x.tensor = src;
  x.layout = s.layout;
  x.shape = s.shape;
  KernelTensor y;
  y.name = "y";
  y.tensor = dst;
  y.layout = builder.tensor(dst).layout;
  y.shape = builder.tensor(dst).shape;
  y.written = true;
  return map_kernel(name, {std::move(x), std::move(y)}, "v = x0_ld(oi);");
}

// Makes the steps from `first_step` on compute branch output `index` of
// `region` straight into If output tensor `out` instead of its own tensor,
// when nothing else can observe the difference: the value is computed by a
// node of this branch (not an outer value, a constant or a host value), is
// this one output only, owns its memory, and is stored exactly as `out` is.
// Saves the copy kernel. Returns whether it did.
bool compute_in_place(PlanBuilder& builder, const ir::Graph& graph, const ir::Region& region, size_t index,
                      TensorId out, size_t first_step) {
  ExecutionPlan& plan = builder.plan();
  const ir::ValueId v = region.outputs[index];
  const ir::Value& value = graph.value(v);
  if (value.producer == ir::kNoNode || value.region != region.id || value.is_constant()) return false;
  if (std::count(region.outputs.begin(), region.outputs.end(), v) != 1) return false;
  const auto it = plan.value_tensor.find(v);
  if (it == plan.value_tensor.end() || it->second == out) return false;
  const TensorId own = it->second;
  const PlanTensor& t = builder.tensor(own);
  if (t.origin != PlanTensor::Origin::kValue || t.host_resident || t.constant.defined() || t.alias_of != kNoTensor ||
      !(t.layout == builder.tensor(out).layout))
    return false;
  // `own` is local to the branch: only the branch's steps and views refer to it.
  for (size_t s = first_step; s < plan.steps.size(); ++s) {
    PlanStep& step = plan.steps[s];
    for (KernelTensor& kt : step.kernel.tensors)
      if (kt.tensor == own) kt.tensor = out;
    if (step.cond == own) step.cond = out;
  }
  for (PlanTensor& other : plan.tensors)
    if (other.alias_of == own) other.alias_of = out;
  // Fallbacks in the branch find their values here: `v`, and the values a
  // nested If already computed into `own`.
  for (auto& [value_id, tensor] : plan.value_tensor)
    if (tensor == own) tensor = out;
  return true;
}

TensorId root_of(const PlanBuilder& builder, TensorId t) {
  while (builder.tensor(t).alias_of != kNoTensor) t = builder.tensor(t).alias_of;
  return t;
}

void push_copy(PlanBuilder& builder, ir::NodeId nid, TensorId src, TensorId dst, const char* name) {
  PlanStep copy;
  copy.kind = PlanStep::Kind::kDispatch;
  copy.node = nid;
  copy.kernel = output_copy(builder, src, dst, name);
  builder.plan().steps.push_back(std::move(copy));
}

// A kernel's view of all of tensor `t`.
KernelTensor bind_whole(const PlanBuilder& builder, const char* name, TensorId t, bool written) {
  KernelTensor kt;
  kt.name = name;
  kt.tensor = t;
  kt.layout = builder.tensor(t).layout;
  kt.shape = builder.tensor(t).shape;
  kt.written = written;
  return kt;
}

// Stores one iteration's scan value `x` as row `iteration` of the Loop's
// scan output `y` ([iterations, ...x's shape], a buffer): one invocation
// per element of x, at y's linear index iteration * numel(x) + i. The row
// comes from the device counter, so the recorded kernel serves every
// iteration.
KernelDesc scan_write(PlanBuilder& builder, TensorId counter, TensorId x, TensorId y) {
  PlanTensor& xs = builder.tensor(x);
  if (xs.host_resident) xs.device_needed = true;  // computed on the host, once
  KernelDesc d;
  d.name = "loop_scan";
  d.family = KernelDesc::Family::kCustom;
  d.tensors = {bind_whole(builder, "iter", counter, false), bind_whole(builder, "x", x, false),
               bind_whole(builder, "y", y, true)};
  d.body = fill_shader("loop_scan.comp");
  ir::Dim numel(1);
  for (const ir::Dim& dim : xs.shape) numel = numel * dim;
  const ir::Dim groups = ir::Dim::ceil_div(numel, ir::Dim(64));
  const ir::Dim max_x(static_cast<int64_t>(builder.target().max_workgroup_count_x));
  d.local_size = {64, 1, 1};
  d.groups = {ir::Dim::min(groups, max_x), ir::Dim::ceil_div(groups, max_x), ir::Dim(1)};
  return d;
}

void push_kernel(PlanBuilder& builder, ir::NodeId nid, KernelDesc kernel) {
  PlanStep step;
  step.kind = PlanStep::Kind::kDispatch;
  step.node = nid;
  step.kernel = std::move(kernel);
  builder.plan().steps.push_back(std::move(step));
}

}  // namespace

std::string if_device_blocker(const PlanBuilder& builder, const ir::Graph& graph, const ir::Node& node) {
  if (node.inputs.empty() || node.inputs[0] == ir::kNoValue) return "it has no condition input";
  const ir::RegionId regions[2] = {branch_region(node, 0), branch_region(node, 1)};
  for (int b = 0; b < 2; ++b) {
    if (regions[b] == ir::kNoRegion) return std::string("it has no ") + kBranches[b];
    const ir::Region& r = graph.region(regions[b]);
    if (!r.inputs.empty()) return std::string(kBranches[b]) + " declares inputs";
    if (r.outputs.size() != node.outputs.size())
      return std::string(kBranches[b]) + " has " + std::to_string(r.outputs.size()) + " outputs, the node " +
             std::to_string(node.outputs.size());
    for (ir::NodeId nid : r.nodes) {
      const ir::Node& inner = graph.node(nid);
      if (inner.erased) continue;
      for (ir::ValueId v : inner.outputs)
        if (v != ir::kNoValue && !builder.value_ranked(v))
          return std::string(kBranches[b]) + " computes '" + graph.value(v).name + "' of unknown rank";
    }
    if (const ir::Node* counted = value_sized_node_within(graph, regions[b]))
      return std::string(kBranches[b]) + " holds " + counted->describe() +
             ", whose output shape depends on tensor values (sized only between main-graph steps)";
  }
  const ir::Region& then_r = graph.region(regions[0]);
  const ir::Region& else_r = graph.region(regions[1]);
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    if (node.outputs[i] == ir::kNoValue) continue;
    const ir::ValueId a = then_r.outputs[i], b = else_r.outputs[i];
    const std::string what = "output " + std::to_string(i) + " ('" + graph.value(node.outputs[i]).name + "')";
    if (a == ir::kNoValue || b == ir::kNoValue) return what + " is missing in a branch";
    if (graph.value(a).dtype != graph.value(b).dtype || graph.value(a).dtype == DType::kUndefined)
      return what + " has another dtype in each branch";
    if (!builder.value_ranked(a) || !builder.value_ranked(b)) return what + " has an unknown rank in a branch";
    // Dims may differ (a branch-dependent shape): the runtime then sizes
    // the If's outputs from the taken branch once the condition is known
    // (a sub-graph boundary when the device computes it). Ranks may not.
    if (builder.value_shape(a).size() != builder.value_shape(b).size())
      return what + " is " + dims_text(builder.value_shape(a)) + " in then_branch but " +
             dims_text(builder.value_shape(b)) + " in else_branch (a branch-dependent rank)";
  }
  return {};
}

Status lower_if(PlanBuilder& builder, const ir::Graph& graph, ir::NodeId nid, const LowerNodeFn& lower_node) {
  const ir::Node& node = graph.node(nid);
  ExecutionPlan& plan = builder.plan();
  // The runtime reads the condition back after the segment that ends at
  // this step: the arena keeps it live up to here (place_tensors' lifetime
  // of a kIf step's `cond`).
  const TensorId cond = builder.tensor_of(node.inputs[0]);
  const size_t if_step = plan.steps.size();
  PlanStep head;
  head.kind = PlanStep::Kind::kIf;
  head.node = nid;
  head.cond = cond;
  plan.steps.push_back(std::move(head));
  size_t ends[2] = {0, 0};
  for (int b = 0; b < 2; ++b) {
    const ir::Region& region = graph.region(branch_region(node, b));
    const size_t first_step = plan.steps.size();
    for (ir::NodeId inner : region.nodes) KILN_RETURN_IF_ERROR(lower_node(inner));
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      if (node.outputs[i] == ir::kNoValue) continue;
      const TensorId out = builder.tensor_of(node.outputs[i]);
      if (compute_in_place(builder, graph, region, i, out, first_step)) continue;
      PlanStep copy;
      copy.kind = PlanStep::Kind::kDispatch;
      copy.node = nid;
      copy.kernel = output_copy(builder, builder.tensor_of(region.outputs[i]), out);
      plan.steps.push_back(std::move(copy));
    }
    ends[b] = plan.steps.size();
  }
  plan.steps[if_step].then_end = ends[0];
  plan.steps[if_step].else_end = ends[1];
  return ok_status();
}

namespace {

ir::RegionId body_region(const ir::Node& node) {
  const ir::Attribute* a = node.attr("body");
  return a && a->kind == ir::AttrKind::kGraph ? a->region : ir::kNoRegion;
}

bool has_subgraph(const ir::Node& node) {
  return std::any_of(node.attrs.begin(), node.attrs.end(),
                     [](const auto& a) { return a.second.kind == ir::AttrKind::kGraph; });
}

// Whether the body computes `v` on the host (once per signature, the same
// every iteration), as build_plan will: a constant, the condition input
// (the host value true), an outer host value, or what a host step makes of
// such values (any node with a kernel whose inputs all are; Shape and Size
// of anything). The iteration number and the carried values are device
// values.
bool body_host_value(const ir::Graph& graph, const ir::Region& body, const std::vector<bool>& host_known,
                     ir::ValueId v, int depth = 0) {
  if (v == ir::kNoValue || depth > 64) return false;
  const ir::Value& value = graph.value(v);
  if (value.is_constant() || v == body.inputs[1]) return true;
  if (!graph.region_within(value.region, body.id)) return host_known[static_cast<size_t>(v)];
  if (value.producer == ir::kNoNode) return false;  // the iteration number, a carried value
  const ir::Node& node = graph.node(value.producer);
  if (node.domain.empty() && (node.op == "Shape" || node.op == "Size")) return true;
  const ops::OpSchema* schema = ops::OpRegistry::builtin().find(node.domain, node.op);
  if (!schema || !schema->kernel || has_subgraph(node)) return false;
  return std::all_of(node.inputs.begin(), node.inputs.end(), [&](ir::ValueId in) {
    return in == ir::kNoValue || body_host_value(graph, body, host_known, in, depth + 1);
  });
}

// The body's nodes (nested regions included) that read the iteration
// number, directly or through what they compute from it; "" when none
// reads it as shape data (a Slice's starts, a Reshape's shape), else why.
// Its value changes every iteration while the body is sized once.
std::string iteration_read_as_shape(const ir::Graph& graph, const ir::Region& body, bool* reads) {
  std::vector<bool> derived(graph.num_values(), false);
  derived[static_cast<size_t>(body.inputs[0])] = true;
  *reads = std::find(body.outputs.begin(), body.outputs.end(), body.inputs[0]) != body.outputs.end();
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t id = 0; id < graph.num_nodes(); ++id) {
      const ir::Node& node = graph.node(static_cast<ir::NodeId>(id));
      if (node.erased || !graph.region_within(node.region, body.id)) continue;
      const ops::OpSchema* schema = ops::OpRegistry::builtin().find(node.domain, node.op);
      bool any = false;
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        if (node.inputs[i] == ir::kNoValue || !derived[static_cast<size_t>(node.inputs[i])]) continue;
        any = true;
        *reads = *reads || node.inputs[i] == body.inputs[0];
        if (schema && std::count(schema->value_inputs.begin(), schema->value_inputs.end(), static_cast<int>(i)))
          return node.describe() + " reads '" + graph.value(node.inputs[i]).name +
                 "', computed from the iteration number, as shape data (the body is sized once for all iterations)";
      }
      if (!any) continue;
      for (ir::ValueId v : node.outputs)
        if (v != ir::kNoValue && !derived[static_cast<size_t>(v)]) derived[static_cast<size_t>(v)] = changed = true;
    }
  }
  return {};
}

}  // namespace

std::string loop_device_blocker(const PlanBuilder& builder, const ir::Graph& graph, const ir::Node& node,
                                const std::vector<bool>& host_known) {
  if (body_region(node) == ir::kNoRegion) return "it has no body";
  const ir::Region& body = graph.region(body_region(node));
  const size_t n = node.inputs.size() > 2 ? node.inputs.size() - 2 : 0;
  if (node.outputs.size() < n || body.inputs.size() != 2 + n || body.outputs.size() != node.outputs.size() + 1 ||
      body.inputs[0] == ir::kNoValue || body.inputs[1] == ir::kNoValue)
    return "its body has " + std::to_string(body.inputs.size()) + " inputs and " + std::to_string(body.outputs.size()) +
           " outputs for " + std::to_string(n) + " carried values and " + std::to_string(node.outputs.size() - n) +
           " scan outputs";
  if (const ir::Node* counted = value_sized_node_within(graph, body.id))
    return "its body holds " + counted->describe() +
           ", whose output shape depends on tensor values (sized only between main-graph steps)";
  for (size_t i = 0; i < 2; ++i) {
    const ir::ValueId v = node.inputs.size() > i ? node.inputs[i] : ir::kNoValue;
    // One the device computes is read back at a sub-graph boundary before
    // the loop (the runtime sizes the scan outputs from it), which only the
    // main graph's steps have.
    if (v != ir::kNoValue && !host_known[static_cast<size_t>(v)] && node.region != ir::kMainRegion)
      return std::string(i == 0 ? "its trip count" : "its initial condition") +
             " is computed on the device inside an If branch";
  }
  for (size_t id = 0; id < graph.num_nodes(); ++id) {
    const ir::Node& inner = graph.node(static_cast<ir::NodeId>(id));
    if (inner.erased || !graph.region_within(inner.region, body.id)) continue;
    if (inner.domain.empty() && inner.op == "Loop") return "its body holds another Loop";
    for (ir::ValueId v : inner.outputs)
      if (v != ir::kNoValue && !builder.value_ranked(v))
        return "its body computes '" + graph.value(v).name + "' of unknown rank";
  }
  if (body.outputs[0] == ir::kNoValue || !builder.value_ranked(body.outputs[0]))
    return "its body's condition output has an unknown rank";
  for (size_t i = 0; i < n; ++i) {
    const std::string what = "carried value " + std::to_string(i);
    const ir::ValueId vals[4] = {node.inputs[2 + i], body.inputs[2 + i], body.outputs[1 + i], node.outputs[i]};
    for (ir::ValueId v : vals)
      if (v == ir::kNoValue || !builder.value_ranked(v)) return what + " is missing or of unknown rank";
    const ir::Value& initial = graph.value(vals[0]);
    for (ir::ValueId v : vals) {
      const ir::Value& other = graph.value(v);
      if (other.dtype != initial.dtype || !other.shape.same_as(initial.shape))
        return what + " is " + dims_text(builder.value_shape(vals[0])) + " initially but '" + other.name + "' is " +
               dims_text(builder.value_shape(v)) + " (the device Loop keeps one dtype and shape)";
    }
  }
  bool reads_iteration = false;
  const std::string iteration = iteration_read_as_shape(graph, body, &reads_iteration);
  if (!iteration.empty()) return "its body reads the iteration number as shape data: " + iteration;
  for (size_t k = n; k < node.outputs.size(); ++k) {
    const std::string what = "scan output " + std::to_string(k - n);
    const ir::ValueId per_iteration = body.outputs[1 + k];
    if (per_iteration == ir::kNoValue || !builder.value_ranked(per_iteration))
      return what + "'s per-iteration value is missing or of unknown rank";
    if (node.outputs[k] != ir::kNoValue &&
        (!builder.value_ranked(node.outputs[k]) ||
         builder.value_shape(node.outputs[k]).size() != builder.value_shape(per_iteration).size() + 1))
      return what + " is not one rank above its per-iteration value";
    // Its length is the iteration count, which sizes it before the run only
    // when no condition the device computes can end the loop early.
    if (!body_host_value(graph, body, host_known, body.outputs[0]))
      return "it has scan outputs and its body computes its condition on the device (an early exit: the scan "
             "length is known only after the run)";
  }
  return {};
}

Status lower_loop(PlanBuilder& builder, const ir::Graph& graph, ir::NodeId nid, std::vector<bool>& host_known,
                  const LowerNodeFn& lower_node) {
  const ir::Node& node = graph.node(nid);
  ExecutionPlan& plan = builder.plan();
  const ir::Region& body = graph.region(body_region(node));
  const size_t n = node.inputs.size() > 2 ? node.inputs.size() - 2 : 0;
  const size_t scans = node.outputs.size() - n;
  // The body runs only while the condition holds: its condition input is
  // true whenever it is read.
  const ir::ValueId cond_in = body.inputs[1];
  if (cond_in != ir::kNoValue) {
    host_known[static_cast<size_t>(cond_in)] = true;
    builder.tensor(builder.tensor_of(cond_in)).host_resident = true;
  }
  // The iteration number, when the body reads it or scan outputs need
  // their row: a device tensor set to 0 before the loop and incremented by
  // the body's last kernels, so the body is recorded once and its kernels
  // read the number like any tensor (no host write or extra submission per
  // iteration).
  bool reads_iteration = false;
  (void)iteration_read_as_shape(graph, body, &reads_iteration);
  const TensorId counter =
      (reads_iteration || scans > 0) && body.inputs[0] != ir::kNoValue ? builder.tensor_of(body.inputs[0]) : kNoTensor;
  std::vector<TensorId> params(n);
  for (size_t i = 0; i < n; ++i) {
    params[i] = builder.tensor_of(body.inputs[2 + i]);
    push_copy(builder, nid, builder.tensor_of(node.inputs[2 + i]), params[i], "loop_init");
  }
  if (counter != kNoTensor)
    push_kernel(builder, nid, map_kernel("loop_iteration_init", {bind_whole(builder, "y", counter, true)}, "v = 0;"));
  // Scan outputs are buffers: row i of [iterations, ...] is then the linear
  // range i * numel(slice) + [0, numel(slice)) whatever the rank.
  std::vector<TensorId> scan_out(scans, kNoTensor);
  for (size_t k = 0; k < scans; ++k) {
    if (node.outputs[n + k] == ir::kNoValue) continue;
    scan_out[k] = builder.tensor_of(node.outputs[n + k]);
    DeviceLayout& layout = builder.tensor(scan_out[k]).layout;
    layout.storage = Storage::kBuffer;
    layout.packed_axis = -1;
  }
  const size_t loop_step = plan.steps.size();
  PlanStep head;
  head.kind = PlanStep::Kind::kLoop;
  head.node = nid;
  if (node.inputs.size() > 0 && node.inputs[0] != ir::kNoValue) head.trip = builder.tensor_of(node.inputs[0]);
  if (node.inputs.size() > 1 && node.inputs[1] != ir::kNoValue) head.cond = builder.tensor_of(node.inputs[1]);
  plan.steps.push_back(std::move(head));
  for (ir::NodeId inner : body.nodes) KILN_RETURN_IF_ERROR(lower_node(inner));
  // This iteration's scan rows, before the carried copies below overwrite
  // the parameters a scan value may be (or view).
  for (size_t k = 0; k < scans; ++k)
    if (scan_out[k] != kNoTensor)
      push_kernel(builder, nid, scan_write(builder, counter, builder.tensor_of(body.outputs[1 + n + k]), scan_out[k]));
  // The carried results become the next iteration's parameters. A result
  // that shares memory with another parameter (a swap) goes through a
  // temporary, so that no copy reads what an earlier one overwrote.
  std::vector<TensorId> results(n);
  bool clash = false;
  for (size_t i = 0; i < n; ++i) {
    results[i] = builder.tensor_of(body.outputs[1 + i]);
    for (size_t j = 0; j < n; ++j)
      clash = clash || (j != i && root_of(builder, results[i]) == root_of(builder, params[j]));
  }
  for (size_t i = 0; i < n; ++i) {
    if (!clash && root_of(builder, results[i]) == root_of(builder, params[i])) continue;  // passed on unchanged
    if (clash) {
      PlanTensor t;
      t.origin = PlanTensor::Origin::kTemporary;
      t.dtype = builder.tensor(params[i]).dtype;
      t.shape = builder.tensor(params[i]).shape;
      t.layout = builder.tensor(params[i]).layout;
      const TensorId temp = builder.add_tensor(std::move(t));
      push_copy(builder, nid, results[i], temp, "loop_carry");
      results[i] = temp;
    }
  }
  for (size_t i = 0; i < n; ++i)
    if (root_of(builder, results[i]) != root_of(builder, params[i]))
      push_copy(builder, nid, results[i], params[i], "loop_carry");
  // The next iteration number, last (a carried copy may read this one):
  // through a temporary, so that no kernel reads and writes one tensor.
  if (counter != kNoTensor) {
    PlanTensor t;
    t.origin = PlanTensor::Origin::kTemporary;
    t.dtype = builder.tensor(counter).dtype;
    t.shape = builder.tensor(counter).shape;
    t.layout = builder.tensor(counter).layout;
    const TensorId next = builder.add_tensor(std::move(t));
    push_kernel(builder, nid,
                map_kernel("loop_iteration_next",
                           {bind_whole(builder, "x0", counter, false), bind_whole(builder, "y", next, true)},
                           "v = x0_ld(oi) + 1;"));
    push_copy(builder, nid, next, counter, "loop_iteration_carry");
  }
  plan.steps[loop_step].body_cond = builder.tensor_of(body.outputs[0]);
  plan.steps[loop_step].body_end = plan.steps.size();
  for (size_t i = 0; i < n; ++i) push_copy(builder, nid, params[i], builder.tensor_of(node.outputs[i]), "loop_output");
  return ok_status();
}

}  // namespace kiln::planner
