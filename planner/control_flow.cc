// If on the device, planner side (see control_flow.h).
#include "planner/control_flow.h"

#include <algorithm>

#include "planner/lower_util.h"

namespace kiln::planner {
namespace {

constexpr const char* kBranches[2] = {"then_branch", "else_branch"};

ir::RegionId branch_region(const ir::Node& node, int b) {
  const ir::Attribute* a = node.attr(kBranches[b]);
  return a && a->kind == ir::AttrKind::kGraph ? a->region : ir::kNoRegion;
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

std::string loop_device_blocker(const PlanBuilder& builder, const ir::Graph& graph, const ir::Node& node,
                                const std::vector<bool>& host_known) {
  const ir::Attribute* a = node.attr("body");
  if (!a || a->kind != ir::AttrKind::kGraph || a->region == ir::kNoRegion) return "it has no body";
  const ir::Region& body = graph.region(a->region);
  const size_t n = node.inputs.size() > 2 ? node.inputs.size() - 2 : 0;
  if (node.outputs.size() > n) return "it has scan outputs (their length is the iteration count)";
  if (node.outputs.size() < n || body.inputs.size() != 2 + n || body.outputs.size() != 1 + n)
    return "its body has " + std::to_string(body.inputs.size()) + " inputs and " + std::to_string(body.outputs.size()) +
           " outputs for " + std::to_string(n) + " carried values";
  for (size_t i = 0; i < 2; ++i) {
    const ir::ValueId v = node.inputs.size() > i ? node.inputs[i] : ir::kNoValue;
    if (v != ir::kNoValue && !host_known[static_cast<size_t>(v)])
      return std::string(i == 0 ? "its trip count" : "its initial condition") + " is computed on the device";
  }
  for (size_t id = 0; id < graph.num_nodes(); ++id) {
    const ir::Node& inner = graph.node(static_cast<ir::NodeId>(id));
    if (inner.erased || !graph.region_within(inner.region, body.id)) continue;
    if (inner.domain.empty() && inner.op == "Loop") return "its body holds another Loop";
    for (ir::ValueId v : inner.inputs)
      if (v != ir::kNoValue && v == body.inputs[0]) return "its body reads the iteration number";
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
  return {};
}

Status lower_loop(PlanBuilder& builder, const ir::Graph& graph, ir::NodeId nid, std::vector<bool>& host_known,
                  const LowerNodeFn& lower_node) {
  const ir::Node& node = graph.node(nid);
  ExecutionPlan& plan = builder.plan();
  const ir::Region& body = graph.region(node.attr("body")->region);
  const size_t n = node.inputs.size() > 2 ? node.inputs.size() - 2 : 0;
  // The body runs only while the condition holds: its condition input is
  // true whenever it is read.
  const ir::ValueId cond_in = body.inputs[1];
  if (cond_in != ir::kNoValue) {
    host_known[static_cast<size_t>(cond_in)] = true;
    builder.tensor(builder.tensor_of(cond_in)).host_resident = true;
  }
  std::vector<TensorId> params(n);
  for (size_t i = 0; i < n; ++i) {
    params[i] = builder.tensor_of(body.inputs[2 + i]);
    push_copy(builder, nid, builder.tensor_of(node.inputs[2 + i]), params[i], "loop_init");
  }
  const size_t loop_step = plan.steps.size();
  PlanStep head;
  head.kind = PlanStep::Kind::kLoop;
  head.node = nid;
  if (node.inputs.size() > 0 && node.inputs[0] != ir::kNoValue) head.trip = builder.tensor_of(node.inputs[0]);
  if (node.inputs.size() > 1 && node.inputs[1] != ir::kNoValue) head.cond = builder.tensor_of(node.inputs[1]);
  plan.steps.push_back(std::move(head));
  for (ir::NodeId inner : body.nodes) KILN_RETURN_IF_ERROR(lower_node(inner));
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
  plan.steps[loop_step].body_cond = builder.tensor_of(body.outputs[0]);
  plan.steps[loop_step].body_end = plan.steps.size();
  for (size_t i = 0; i < n; ++i) push_copy(builder, nid, params[i], builder.tensor_of(node.outputs[i]), "loop_output");
  return ok_status();
}

}  // namespace kiln::planner
