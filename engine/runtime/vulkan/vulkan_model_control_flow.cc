// VulkanModel's side of If and Loop on the device (planner/control_flow.h):
// their output shapes per signature, and the conditions read back between
// the segment that computes one and the segments it selects (the taken
// branch; another iteration of a Loop's body).
//
// The one host round trip an If costs is the wait for the segment that
// computes the condition, which every segment boundary has anyway: that
// segment's command buffer ends by copying the 1-element condition into a
// small mapped buffer, so reading it is a map read, not another submission.
#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <set>

#include "planner/device_data.h"
#include "engine/runtime/vulkan/vulkan_model_impl.h"

namespace kiln::runtime {

using planner::PlanStep;
using planner::PlanTensor;

namespace {

const ir::Region* branch(const ir::Graph& graph, const ir::Node& node, const char* name) {
  const ir::Attribute* a = node.attr(name);
  if (!a || a->kind != ir::AttrKind::kGraph || a->region == ir::kNoRegion) return nullptr;
  return &graph.region(a->region);
}

std::string shape_text(const ir::SymShape& s) { return s.has_rank ? s.to_string() : "unranked"; }

}  // namespace

Status VulkanModel::Impl::if_output_shapes(const ir::Node& node,
                                           const std::function<Status(ir::RegionId)>& infer_region,
                                           std::vector<ops::ValueInfo>& info, bool* waits) const {
  *waits = false;
  const ir::Region* then_r = branch(graph, node, "then_branch");
  const ir::Region* else_r = branch(graph, node, "else_branch");
  if (!then_r || !else_r) return internal_error(node.describe() + ": a device If without both branches");
  KILN_RETURN_IF_ERROR(infer_region(then_r->id));
  KILN_RETURN_IF_ERROR(infer_region(else_r->id));
  // The condition, when the signature knows it (a host value, a constant,
  // or read back at a sub-graph boundary).
  const Tensor* cond = info[static_cast<size_t>(node.inputs[0])].value;
  std::optional<bool> taken;
  if (cond && cond->numel() == 1) taken = cond->get_f64(0) != 0.0;
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    if (node.outputs[i] == ir::kNoValue) continue;
    const ops::ValueInfo& a = info[static_cast<size_t>(then_r->outputs[i])];
    const ops::ValueInfo& b = info[static_cast<size_t>(else_r->outputs[i])];
    if (!a.shape.is_static() || !b.shape.is_static())
      return unimplemented(node.describe() + ": output '" + graph.value(node.outputs[i]).name + "' is " +
                           shape_text(a.shape) + " in then_branch and " + shape_text(b.shape) +
                           " in else_branch for these input shapes; the device If needs static shapes");
    if (a.shape.concrete() != b.shape.concrete() && !taken) {
      // A branch-dependent shape: sized once the condition is read back.
      *waits = true;
      return ok_status();
    }
    ops::ValueInfo& out = info[static_cast<size_t>(node.outputs[i])];
    out = ops::ValueInfo{};
    out.dtype = a.dtype;
    out.shape = taken && !*taken ? b.shape : a.shape;
  }
  return ok_status();
}

Status VulkanModel::Impl::loop_shapes(const ir::Node& node, const std::function<Status(ir::RegionId)>& infer_region,
                                      std::vector<ops::ValueInfo>& info, Signature& sig, bool* waits) const {
  *waits = false;
  const ir::Attribute* a = node.attr("body");
  if (!a || a->kind != ir::AttrKind::kGraph || a->region == ir::kNoRegion)
    return internal_error(node.describe() + ": a device Loop without a body");
  const ir::Region& body = graph.region(a->region);
  const size_t n = node.inputs.size() > 2 ? node.inputs.size() - 2 : 0;
  if (body.inputs[0] != ir::kNoValue) {
    // The iteration number: a device scalar (the body's kernels read it).
    ops::ValueInfo& o = info[static_cast<size_t>(body.inputs[0])];
    o = ops::ValueInfo{};
    o.dtype = DType::kInt64;
    o.shape = ir::SymShape::from_concrete({});
  }
  if (body.inputs[1] != ir::kNoValue) {
    // The body runs only while the condition holds: its condition input is true.
    const ir::Value& cond_in = graph.value(body.inputs[1]);
    const Shape shape = cond_in.shape.is_static() ? cond_in.shape.concrete() : Shape{};
    std::vector<bool> ones(static_cast<size_t>(shape_numel(shape)), true);
    auto [it, inserted] = sig.host_values.insert_or_assign(cond_in.id, Tensor::from_vector<bool>(shape, ones));
    ops::ValueInfo& o = info[static_cast<size_t>(cond_in.id)];
    o = ops::ValueInfo{};
    o.dtype = DType::kBool;
    o.shape = ir::SymShape::from_concrete(shape);
    o.value = &it->second;
  }
  for (size_t i = 0; i < n; ++i) {
    ops::ValueInfo& param = info[static_cast<size_t>(body.inputs[2 + i])];
    const ops::ValueInfo& initial = info[static_cast<size_t>(node.inputs[2 + i])];
    param = ops::ValueInfo{};
    param.dtype = initial.dtype;
    param.shape = initial.shape;
  }
  KILN_RETURN_IF_ERROR(infer_region(body.id));
  for (size_t i = 0; i < n; ++i) {
    const ops::ValueInfo& param = info[static_cast<size_t>(body.inputs[2 + i])];
    const ops::ValueInfo& result = info[static_cast<size_t>(body.outputs[1 + i])];
    if (!result.shape.is_static() || result.shape.concrete() != param.shape.concrete())
      return unimplemented(node.describe() + ": carried value " + std::to_string(i) + " enters the body as " +
                           shape_text(param.shape) + " and leaves it as " + shape_text(result.shape) +
                           " for these input shapes; the device Loop needs one shape");
    ops::ValueInfo& out = info[static_cast<size_t>(node.outputs[i])];
    out = ops::ValueInfo{};
    out.dtype = param.dtype;
    out.shape = param.shape;
  }
  // A trip count or initial condition the device computes is read back
  // at a sub-graph boundary before the loop: it sizes the scan outputs
  // (and the run reads it from there, not from memory the arena may have
  // re-used by the kLoop step).
  auto host_value = [&](size_t input) -> const Tensor* {
    return input < node.inputs.size() && node.inputs[input] != ir::kNoValue
               ? info[static_cast<size_t>(node.inputs[input])].value
               : nullptr;
  };
  const bool has_trip = node.inputs.size() > 0 && node.inputs[0] != ir::kNoValue;
  const bool has_cond = node.inputs.size() > 1 && node.inputs[1] != ir::kNoValue;
  const Tensor* trip = host_value(0);
  const Tensor* cond = host_value(1);
  if ((has_trip && !trip) || (has_cond && !cond)) {
    *waits = true;
    return ok_status();
  }
  if (node.outputs.size() == n) return ok_status();
  // Scan outputs: [iterations, ...the per-iteration value]. The planner
  // runs a Loop with scan outputs on the device only when the iteration
  // count is known here: a known trip count and initial condition, and a
  // body condition the host computes (the same every iteration).
  const Tensor* again = info[static_cast<size_t>(body.outputs[0])].value;
  if (!again)
    return internal_error(node.describe() + ": a device Loop with scan outputs whose iteration count the host "
                                            "does not know");
  for (const Tensor* t : {trip, cond, again})
    if (t && t->numel() != 1)
      return invalid_argument(node.describe() + ": its trip count and conditions must have one element, got shape " +
                              shape_to_string(t->shape()));
  int64_t iterations = 0;
  if (!cond || cond->get_f64(0) != 0.0) {
    const int64_t limit = trip ? std::max<int64_t>(trip->get_i64(0), 0) : std::numeric_limits<int64_t>::max();
    if (again->get_f64(0) != 0.0) {
      if (!trip)
        return invalid_argument(node.describe() + ": it has no trip count and its body's condition is always true: "
                                                  "it would never end");
      iterations = limit;
    } else {
      iterations = std::min<int64_t>(limit, 1);
    }
  }
  for (size_t i = n; i < node.outputs.size(); ++i) {
    if (node.outputs[i] == ir::kNoValue) continue;
    const ops::ValueInfo& slice = info[static_cast<size_t>(body.outputs[1 + i])];
    if (!slice.shape.is_static())
      return unimplemented(node.describe() + ": scan output " + std::to_string(i - n) + "'s per-iteration value is " +
                           shape_text(slice.shape) + " for these input shapes; the device Loop needs a static shape");
    Shape shape = slice.shape.concrete();
    shape.insert(shape.begin(), iterations);
    ops::ValueInfo& out = info[static_cast<size_t>(node.outputs[i])];
    out = ops::ValueInfo{};
    out.dtype = slice.dtype;
    out.shape = ir::SymShape::from_concrete(shape);
  }
  return ok_status();
}

namespace {

Status check_condition_shape(const ir::Node& node, const Shape& shape) {
  if (shape_numel(shape) == 1) return ok_status();
  return invalid_argument(node.describe() + ": the condition must have one element, got shape " +
                          shape_to_string(shape));
}

}  // namespace

StatusOr<std::optional<bool>> VulkanModel::Impl::host_condition(const Signature& sig, size_t step_index) const {
  const PlanStep& step = plan.steps[step_index];
  const PlanTensor& t = plan.tensors[static_cast<size_t>(step.cond)];
  const Tensor* value = nullptr;
  if (t.constant.defined()) {
    value = &t.constant;
  } else if (t.host_resident && t.origin == PlanTensor::Origin::kValue) {
    auto it = sig.host_values.find(t.value);
    if (it != sig.host_values.end()) value = &it->second;
  } else if (t.origin == PlanTensor::Origin::kValue) {
    // Read back at a sub-graph boundary (an If with a branch-dependent shape).
    auto it = sig.known_values.find(t.value);
    if (it != sig.known_values.end()) value = &it->second;
  }
  if (!value) return std::optional<bool>();
  KILN_RETURN_IF_ERROR(check_condition_shape(graph.node(step.node), value->shape()));
  return std::optional<bool>(value->get_f64(0) != 0.0);
}

StatusOr<bool> VulkanModel::Impl::read_condition(Signature& sig, const Segment* seg, TensorId cond,
                                                 ir::NodeId node) {
  const PlanTensor& t = plan.tensors[static_cast<size_t>(cond)];
  const Shape& shape = sig.shapes[static_cast<size_t>(cond)];
  KILN_RETURN_IF_ERROR(check_condition_shape(graph.node(node), shape));
  Tensor value;
  if (seg && seg->condition_copied && seg->condition == cond) {
    KILN_RETURN_IF_ERROR(sig.conditions->invalidate());
    KILN_ASSIGN_OR_RETURN(value, from_device(sig.conditions->data() + seg->condition_offset,
                                             device_bytes(t.layout, shape), t.layout, t.dtype, shape));
  } else {
    KILN_ASSIGN_OR_RETURN(value, loop_input(sig, cond));
  }
  return value.get_f64(0) != 0.0;
}

StatusOr<Tensor> VulkanModel::Impl::loop_input(Signature& sig, TensorId t) {
  const PlanTensor& pt = plan.tensors[static_cast<size_t>(t)];
  if (pt.origin == PlanTensor::Origin::kValue)
    if (auto it = sig.known_values.find(pt.value); it != sig.known_values.end()) return it->second;
  return read_tensor(sig, t);
}

Status VulkanModel::Impl::host_region_env(Signature& sig, size_t step, std::map<ir::ValueId, Tensor>& env) {
  const ir::Node& node = graph.node(plan.steps[step].node);
  // Values the sub-graphs read that they do not define.
  std::set<ir::ValueId> defined, used;
  std::function<void(ir::RegionId)> walk = [&](ir::RegionId r) {
    const ir::Region& region = graph.region(r);
    defined.insert(region.inputs.begin(), region.inputs.end());
    for (ir::NodeId nid : region.nodes) {
      const ir::Node& inner = graph.node(nid);
      if (inner.erased) continue;
      used.insert(inner.inputs.begin(), inner.inputs.end());
      defined.insert(inner.outputs.begin(), inner.outputs.end());
      for (const auto& [name, a] : inner.attrs)
        if (a.kind == ir::AttrKind::kGraph && a.region != ir::kNoRegion) walk(a.region);
    }
    used.insert(region.outputs.begin(), region.outputs.end());
  };
  for (const auto& [name, a] : node.attrs)
    if (a.kind == ir::AttrKind::kGraph && a.region != ir::kNoRegion) walk(a.region);
  for (ir::ValueId v : used) {
    if (v == ir::kNoValue || defined.count(v) || graph.value(v).is_constant()) continue;
    if (auto hv = sig.host_values.find(v); hv != sig.host_values.end()) {
      env.insert_or_assign(v, hv->second);
      continue;
    }
    auto it = plan.value_tensor.find(v);
    const std::string what =
        node.describe() + ": its sub-graph reads '" + graph.value(v).name + "' of the enclosing graph";
    if (it == plan.value_tensor.end()) return internal_error(what + ", which the plan does not hold");
    if (!still_holds(sig, it->second, step))
      return unimplemented(what + ", whose device memory is re-used before this host step runs");
    KILN_ASSIGN_OR_RETURN(Tensor t, read_tensor(sig, it->second));
    env.insert_or_assign(v, std::move(t));
  }
  return ok_status();
}

bool VulkanModel::Impl::still_holds(const Signature& sig, TensorId t, size_t at) const {
  auto root = [&](TensorId x) {
    while (plan.tensors[static_cast<size_t>(x)].alias_of != planner::kNoTensor)
      x = plan.tensors[static_cast<size_t>(x)].alias_of;
    return x;
  };
  const TensorId r = root(t);
  const Placement& p = sig.place[static_cast<size_t>(r)];
  if (!p.present) return shape_numel(sig.shapes[static_cast<size_t>(t)]) == 0;
  if (p.resource < 0) return true;  // a constant
  // Every step up to `at` that writes a tensor placed over it, other than
  // itself, must come before its own last write.
  size_t last_write = 0;
  bool written = false;
  std::vector<std::pair<size_t, TensorId>> writes;  // (step, tensor) of every write before `at`
  for (size_t s = 0; s < at && s < plan.steps.size(); ++s) {
    const PlanStep& step = plan.steps[s];
    if (step.kind == PlanStep::Kind::kDispatch) {
      for (const planner::KernelTensor& kt : step.kernel.tensors)
        if (kt.written) writes.push_back({s, kt.tensor});
    } else if (step.kind == PlanStep::Kind::kFallback) {
      for (ir::ValueId v : graph.node(step.node).outputs) {
        auto it = v == ir::kNoValue ? plan.value_tensor.end() : plan.value_tensor.find(v);
        if (it != plan.value_tensor.end()) writes.push_back({s, it->second});
      }
    }
  }
  for (const auto& [s, w] : writes)
    if (root(w) == r) last_write = s, written = true;
  for (const auto& [s, w] : writes) {
    if (root(w) == r || (written && s <= last_write)) continue;
    const Placement& q = sig.place[static_cast<size_t>(w)];
    if (q.present && q.resource == p.resource && q.offset < p.offset + p.size && p.offset < q.offset + q.size)
      return false;
  }
  return true;
}

}  // namespace kiln::runtime
