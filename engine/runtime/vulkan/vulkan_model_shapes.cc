// Per signature: the concrete shape of every value and plan tensor, the
// values of host-resident ones (shape arithmetic), and the symbol bindings
// that make the plan's dims concrete, in named phases: seed_inputs ->
// ShapeEvaluator (the graph's regions, node by node; Ifs and Loops through
// vulkan_model_control_flow.cc) -> bind_host_params -> bind_value_shapes ->
// evaluate_plan_dims. Nodes whose shapes depend on values the device
// computes wait (sig.pending; vulkan_model_dynamic_shape.cc).
#include <algorithm>
#include <functional>
#include <set>

#include "engine/runtime/vulkan/vulkan_model_impl.h"

namespace kiln::runtime {

using planner::PlanStep;
using planner::PlanTensor;

namespace {

// Host values of a host node's outputs: from inference when it knows the
// value as constants (Shape, Size), else the reference kernel.
StatusOr<std::vector<Tensor>> host_outputs(const ops::OpSchema& schema, const ir::Node& node,
                                           const std::vector<ops::ValueInfo>& in,
                                           const std::vector<ops::ValueInfo>& outs) {
  bool from_dims = true;
  for (const ops::ValueInfo& o : outs) {
    if (!o.dims_value || !o.shape.is_static()) from_dims = false;
    else
      for (const ir::Dim& d : *o.dims_value) from_dims = from_dims && d.is_const();
  }
  std::vector<Tensor> values;
  if (from_dims) {
    for (const ops::ValueInfo& o : outs) {
      std::vector<int64_t> vals;
      for (const ir::Dim& d : *o.dims_value) vals.push_back(d.value());
      Tensor t = Tensor::from_vector<int64_t>(o.shape.concrete(), vals);
      KILN_ASSIGN_OR_RETURN(Tensor cast, t.cast(o.dtype));
      values.push_back(std::move(cast));
    }
    return values;
  }
  std::vector<const Tensor*> ptrs;
  for (const ops::ValueInfo& i : in) ptrs.push_back(i.value);
  ops::KernelContext ctx(node, ptrs, outs, nullptr);
  KILN_RETURN_IF_ERROR(schema.kernel(ctx));
  return std::move(ctx.outputs());
}

// Walks the graph's regions once for one signature: infers every node's
// outputs from `info` (the inputs' and constants' facts), evaluates host
// nodes, and marks what waits for a sub-graph boundary. Both branches of a
// device If are sized (the signature's command buffers hold both); when they
// give the If's outputs different shapes, the condition decides
// (if_output_shapes). A device Loop's body is sized once: its carried
// values keep their shapes. A main-region node whose output shape depends
// on tensor values the signature does not know waits (sig.pending), and so
// does every node reading what it makes. Borrows everything for its life.
class ShapeEvaluator {
 public:
  ShapeEvaluator(const VulkanModel::Impl& impl, Signature& sig, std::vector<ops::ValueInfo>& info)
      : impl_(impl), graph_(impl.graph), sig_(sig), info_(info), waiting_(graph_.num_values(), false) {
    for (const PlanStep& s : impl.plan.steps) {
      if (s.kind == PlanStep::Kind::kHost) host_nodes_.insert(s.node);
      if (s.kind == PlanStep::Kind::kIf) device_ifs_.insert(s.node);
      if (s.kind == PlanStep::Kind::kLoop) device_loops_.insert(s.node);
    }
    recurse_ = [this](ir::RegionId region) { return infer_region(region); };
  }

  Status infer_region(ir::RegionId region) {
    for (ir::NodeId nid : graph_.region(region).nodes) {
      const ir::Node& node = graph_.node(nid);
      if (node.erased) continue;
      if (region == ir::kMainRegion &&
          std::any_of(node.inputs.begin(), node.inputs.end(),
                      [&](ir::ValueId v) { return v != ir::kNoValue && waiting_[static_cast<size_t>(v)]; })) {
        wait(nid, node);
        continue;
      }
      if (device_ifs_.count(nid)) {
        bool waits = false;
        KILN_RETURN_IF_ERROR(impl_.if_output_shapes(node, recurse_, info_, &waits));
        if (waits && region != ir::kMainRegion)
          return unimplemented(node.describe() + ": its branches give its outputs different shapes inside an If "
                                                 "branch or a Loop body; the Vulkan backend cannot size it");
        if (waits) wait(nid, node);
        continue;
      }
      if (device_loops_.count(nid)) {
        bool waits = false;
        KILN_RETURN_IF_ERROR(impl_.loop_shapes(node, recurse_, info_, sig_, &waits));
        if (waits && region != ir::kMainRegion)
          return internal_error(node.describe() + ": a device Loop inside an If branch whose trip count or "
                                                  "condition the device computes");
        if (waits) wait(nid, node);  // sized once its trip count and condition are read back
        continue;
      }
      KILN_RETURN_IF_ERROR(infer_node(region, nid, node));
    }
    return ok_status();
  }

  // Per graph value: it waits for a sub-graph boundary.
  const std::vector<bool>& waiting() const { return waiting_; }

 private:
  void wait(ir::NodeId nid, const ir::Node& node) {
    sig_.pending.insert(nid);
    for (ir::ValueId v : node.outputs)
      if (v != ir::kNoValue) waiting_[static_cast<size_t>(v)] = true;
  }

  // An op node: its schema's inference, host evaluation for host nodes,
  // and what earlier boundaries materialized.
  Status infer_node(ir::RegionId region, ir::NodeId nid, const ir::Node& node) {
    const ops::OpSchema* schema = ops::OpRegistry::builtin().find(node.domain, node.op);
    if (!schema) return unimplemented(node.describe() + ": unknown op");
    std::vector<ops::ValueInfo> in;
    for (ir::ValueId v : node.inputs) in.push_back(v == ir::kNoValue ? ops::ValueInfo{} : info_[static_cast<size_t>(v)]);
    KILN_ASSIGN_OR_RETURN(std::vector<ops::ValueInfo> outs, ops::infer_node(*schema, node, in));
    // A boundary node run on the host: its outputs have the shapes it gave.
    for (size_t i = 0; i < node.outputs.size() && i < outs.size(); ++i)
      if (auto k = sig_.known_shapes.find(node.outputs[i]); k != sig_.known_shapes.end()) {
        outs[i].dtype = k->second.first;
        outs[i].shape = ir::SymShape::from_concrete(k->second.second);
      }
    const bool host = host_nodes_.count(nid) > 0;
    std::vector<Tensor> values;
    if (host) {
      KILN_ASSIGN_OR_RETURN(values, host_outputs(*schema, node, in, outs));
    }
    for (size_t i = 0; i < node.outputs.size() && i < outs.size(); ++i) {
      const ir::ValueId v = node.outputs[i];
      if (v == ir::kNoValue) continue;
      ops::ValueInfo& o = info_[static_cast<size_t>(v)];
      o = outs[i];
      if (host) {
        auto [it, inserted] = sig_.host_values.insert_or_assign(v, std::move(values[i]));
        o.value = &it->second;
        o.shape = ir::SymShape::from_concrete(it->second.shape());
      } else if (auto k = sig_.known_values.find(v); k != sig_.known_values.end()) {
        o.value = &k->second;  // read back at an earlier boundary
        o.shape = ir::SymShape::from_concrete(k->second.shape());
      }
      if (!o.shape.is_static()) {
        if (region != ir::kMainRegion)
          return unimplemented(node.describe() + ": the shape of '" + graph_.value(v).name +
                               "' depends on tensor values inside an If branch or a Loop body; the Vulkan "
                               "backend cannot size it");
        sig_.pending.insert(nid);
        waiting_[static_cast<size_t>(v)] = true;
      }
    }
    return ok_status();
  }

  const VulkanModel::Impl& impl_;
  const ir::Graph& graph_;
  Signature& sig_;
  std::vector<ops::ValueInfo>& info_;
  std::vector<bool> waiting_;
  std::set<ir::NodeId> host_nodes_, device_ifs_, device_loops_;
  std::function<Status(ir::RegionId)> recurse_;
};

}  // namespace

Status VulkanModel::Impl::evaluate_shapes(const std::vector<InputSpec>& inputs, Signature& sig) const {
  std::vector<ops::ValueInfo> info(graph.num_values());
  seed_inputs(inputs, sig, info);
  sig.pending.clear();
  ShapeEvaluator evaluator(*this, sig, info);
  KILN_RETURN_IF_ERROR(evaluator.infer_region(ir::kMainRegion));
  KILN_RETURN_IF_ERROR(bind_host_params(sig, info));
  KILN_RETURN_IF_ERROR(bind_value_shapes(sig, info, evaluator.waiting()));
  return evaluate_plan_dims(sig);
}

// The graph inputs' dtypes and shapes (and host values: given as host
// tensors, or read back at a sub-graph boundary), and the constants.
void VulkanModel::Impl::seed_inputs(const std::vector<InputSpec>& inputs, Signature& sig,
                                    std::vector<ops::ValueInfo>& info) const {
  const ir::Region& main = graph.main();
  for (size_t i = 0; i < main.inputs.size(); ++i) {
    const ir::Value& v = graph.value(main.inputs[i]);
    info[static_cast<size_t>(v.id)].dtype = inputs[i].dtype;
    info[static_cast<size_t>(v.id)].shape = ir::SymShape::from_concrete(inputs[i].shape);
    if (plan.tensors[static_cast<size_t>(plan.inputs[i])].host_resident && inputs[i].value) {
      auto [it, inserted] = sig.host_values.insert_or_assign(v.id, *inputs[i].value);
      info[static_cast<size_t>(v.id)].value = &it->second;
    } else if (auto k = sig.known_values.find(v.id); k != sig.known_values.end()) {
      info[static_cast<size_t>(v.id)].value = &k->second;  // read back at a sub-graph boundary
    }
  }
  for (ir::ValueId id : graph.constants()) {
    const ir::Value& v = graph.value(id);
    info[static_cast<size_t>(id)].dtype = v.dtype;
    info[static_cast<size_t>(id)].shape = ir::SymShape::from_concrete(v.constant.shape());
    info[static_cast<size_t>(id)].value = &v.constant;
  }
}

// Kernel parameters the plan computes on the host from this signature.
Status VulkanModel::Impl::bind_host_params(Signature& sig, const std::vector<ops::ValueInfo>& info) const {
  for (const planner::HostParam& hp : plan.host_params) {
    if (sig.pending.count(hp.node)) continue;  // bound past the boundary
    const ir::Node& node = graph.node(hp.node);
    planner::HostParamInputs in;
    for (ir::ValueId v : node.inputs) {
      const ops::ValueInfo* o = v == ir::kNoValue ? nullptr : &info[static_cast<size_t>(v)];
      in.shapes.push_back(o && o->shape.is_static() ? o->shape.concrete() : Shape{});
      in.values.push_back(o ? o->value : nullptr);
    }
    StatusOr<int64_t> value = hp.fn(in);
    if (!value.ok()) return Status(value.status().code(), node.describe() + ": " + value.status().message());
    sig.bindings[hp.symbol] = *value;
  }
  return ok_status();
}

// Value tensors' concrete shapes, binding the plan's symbols from them (and
// checking each symbol agrees everywhere); waiting values get 1s.
Status VulkanModel::Impl::bind_value_shapes(Signature& sig, const std::vector<ops::ValueInfo>& info,
                                            const std::vector<bool>& waiting) const {
  sig.shapes.assign(plan.tensors.size(), Shape{});
  sig.sized.assign(plan.tensors.size(), true);
  for (size_t t = 0; t < plan.tensors.size(); ++t) {
    const PlanTensor& pt = plan.tensors[t];
    if (pt.origin != PlanTensor::Origin::kValue) continue;
    if (waiting[static_cast<size_t>(pt.value)]) {
      // Sized past the boundary; 1s meanwhile (placement needs some size,
      // and a host value some kernel binds a placeholder to upload).
      sig.sized[t] = false;
      sig.shapes[t].assign(pt.shape.size(), 1);
      if (pt.host_resident) {
        KILN_ASSIGN_OR_RETURN(Tensor zeros, Tensor::allocate(pt.dtype, sig.shapes[t]));
        sig.host_values.insert_or_assign(pt.value, std::move(zeros));
      }
      continue;
    }
    const ops::ValueInfo& o = info[static_cast<size_t>(pt.value)];
    if (!o.shape.has_rank) continue;
    sig.shapes[t] = o.shape.concrete();
    if (sig.shapes[t].size() != pt.shape.size())
      return internal_error("value '" + graph.value(pt.value).name + "' changed rank");
    for (size_t k = 0; k < pt.shape.size(); ++k)
      if (pt.shape[k].is_symbol()) {
        auto [it, inserted] = sig.bindings.emplace(pt.shape[k].symbol_name(), sig.shapes[t][k]);
        if (!inserted && it->second != sig.shapes[t][k])
          return invalid_argument("dimension '" + pt.shape[k].symbol_name() + "' is " + std::to_string(it->second) +
                                  " in one input and " + std::to_string(sig.shapes[t][k]) + " in another");
      }
  }
  return ok_status();
}

// Every plan dim at the bindings: temporaries get their shapes, values are
// checked against what inference gave.
Status VulkanModel::Impl::evaluate_plan_dims(Signature& sig) const {
  for (size_t t = 0; t < plan.tensors.size(); ++t) {
    const PlanTensor& pt = plan.tensors[t];
    if (pt.origin == PlanTensor::Origin::kConstant) {
      sig.shapes[t] = pt.constant.shape();
      continue;
    }
    if (!sig.sized[t]) continue;
    Shape eval;
    for (const ir::Dim& d : pt.shape) {
      auto v = d.evaluate(sig.bindings);
      if (!v && !sig.pending.empty() && pt.origin == PlanTensor::Origin::kTemporary) break;  // a waiting node's
      if (!v) return internal_error("plan dim " + d.to_string() + " of tensor %" + std::to_string(t) + " is unbound");
      eval.push_back(*v);
    }
    if (eval.size() != pt.shape.size()) {
      sig.sized[t] = false;
      sig.shapes[t].assign(pt.shape.size(), 1);
      continue;
    }
    if (pt.origin == PlanTensor::Origin::kTemporary || pt.origin == PlanTensor::Origin::kState) sig.shapes[t] = eval;
    else if (eval != sig.shapes[t])
      return internal_error("value '" + graph.value(pt.value).name + "': plan shape " + shape_to_string(eval) +
                            " disagrees with the inferred " + shape_to_string(sig.shapes[t]));
  }
  return ok_status();
}

}  // namespace kiln::runtime
