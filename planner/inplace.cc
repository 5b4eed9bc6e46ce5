// plan_inplace: which dispatches write their output over a dying input
// (see inplace.h for the rule).
#include "planner/inplace.h"

#include <algorithm>
#include <set>

namespace kiln::planner {

namespace {

constexpr size_t kNever = SIZE_MAX;

bool same_dims(const std::vector<ir::Dim>& a, const std::vector<ir::Dim>& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (!a[k].same_as(b[k])) return false;
  return true;
}

ir::Dim numel(const std::vector<ir::Dim>& shape) {
  ir::Dim n(1);
  for (const ir::Dim& d : shape) n = n * d;
  return n;
}

// When each data group (tensors of one data_root) is first and last touched,
// and whether it must keep its own memory whatever the kernels do.
struct Accesses {
  std::vector<size_t> first, last;
  std::vector<bool> blocked;
};

Accesses collect_accesses(const ExecutionPlan& plan, const ir::Graph& graph) {
  const size_t n = plan.tensors.size();
  Accesses a{std::vector<size_t>(n, kNever), std::vector<size_t>(n, 0), std::vector<bool>(n, false)};
  const std::vector<std::pair<size_t, size_t>> ranges = control_ranges(plan);
  auto in_control = [&](size_t s) {
    for (const auto& [head, end] : ranges)
      if (s >= head && s < end) return true;  // the head too: it reads the condition, a Loop its inputs
    return false;
  };
  auto touch = [&](TensorId t, size_t s) {
    if (t == kNoTensor) return;
    const size_t r = static_cast<size_t>(data_root(plan, t));
    a.first[r] = std::min(a.first[r], s);
    a.last[r] = std::max(a.last[r], s);
    if (in_control(s)) a.blocked[r] = true;
  };
  auto touch_value = [&](ir::ValueId v, size_t s) {
    if (v == ir::kNoValue) return;
    auto it = plan.value_tensor.find(v);
    if (it != plan.value_tensor.end()) touch(it->second, s);
  };
  std::set<ir::NodeId> stepped;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const PlanStep& step = plan.steps[s];
    stepped.insert(step.node);
    // Host steps read host values, or only the shape of a device tensor
    // (Shape, Size): never the data of a tensor a dispatch wrote.
    if (step.kind == PlanStep::Kind::kHost) continue;
    const ir::Node& node = graph.node(step.node);
    for (const KernelTensor& kt : step.kernel.tensors) touch(kt.tensor, s);
    // The node's own inputs count at every one of its steps, bound or not
    // (a shape input read back at a dynamic-shape boundary is not bound).
    for (ir::ValueId v : node.inputs) touch_value(v, s);
    if (step.kind == PlanStep::Kind::kDispatch) continue;
    for (ir::ValueId v : node.outputs) touch_value(v, s);
    for (TensorId t : {step.cond, step.trip, step.body_cond}) touch(t, s);
    if (step.kind == PlanStep::Kind::kFallback) {
      // A host fallback with sub-graphs reads what they capture, at its step.
      for (ir::ValueId v : subgraph_reads(graph, node)) touch_value(v, s);
    }
  }
  // A node without steps (a view) shares its data input's memory; any other
  // input it has (Reshape's shape) is read at a time no step tells.
  for (size_t i = 0; i < graph.num_nodes(); ++i) {
    const ir::NodeId nid = static_cast<ir::NodeId>(i);
    const ir::Node& node = graph.node(nid);
    if (node.erased || stepped.count(nid)) continue;
    std::set<TensorId> out_roots;
    for (ir::ValueId v : node.outputs) {
      auto it = v == ir::kNoValue ? plan.value_tensor.end() : plan.value_tensor.find(v);
      if (it != plan.value_tensor.end()) out_roots.insert(data_root(plan, it->second));
    }
    for (ir::ValueId v : node.inputs) {
      auto it = v == ir::kNoValue ? plan.value_tensor.end() : plan.value_tensor.find(v);
      if (it == plan.value_tensor.end()) continue;
      const TensorId r = data_root(plan, it->second);
      if (!out_roots.count(r)) a.blocked[static_cast<size_t>(r)] = true;
    }
  }
  for (const std::vector<TensorId>* io : {&plan.inputs, &plan.outputs})
    for (TensorId t : *io) a.blocked[static_cast<size_t>(data_root(plan, t))] = true;
  for (size_t t = 0; t < n; ++t) {
    const PlanTensor& pt = plan.tensors[t];
    if (pt.constant.defined() || pt.host_resident || pt.origin == PlanTensor::Origin::kState ||
        pt.layout.storage != Storage::kBuffer)
      a.blocked[static_cast<size_t>(data_root(plan, static_cast<TensorId>(t)))] = true;
  }
  return a;
}

}  // namespace

void plan_inplace(ExecutionPlan& plan, const ir::Graph& graph) {
  const Accesses acc = collect_accesses(plan, graph);
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    PlanStep& step = plan.steps[s];
    if (step.kind != PlanStep::Kind::kDispatch) continue;
    KernelDesc& k = step.kernel;
    auto written = [](const KernelTensor& t) { return t.written; };
    if (std::count_if(k.tensors.begin(), k.tensors.end(), written) != 1) continue;
    KernelTensor& out = *std::find_if(k.tensors.begin(), k.tensors.end(), written);
    const TensorId tid = out.tensor;
    const PlanTensor& t = plan.tensors[static_cast<size_t>(tid)];
    if (t.alias_of != kNoTensor || t.inplace_of != kNoTensor || acc.blocked[static_cast<size_t>(tid)] ||
        acc.first[static_cast<size_t>(tid)] != s)
      continue;
    if (!same_dims(out.shape, t.shape)) continue;
    for (const KernelTensor& in : k.tensors) {
      if (in.written || !in.elementwise || in.tensor == tid) continue;
      const TensorId uid = in.tensor;
      const PlanTensor& u = plan.tensors[static_cast<size_t>(uid)];
      const size_t r = static_cast<size_t>(data_root(plan, uid));
      if (acc.blocked[r] || acc.last[r] != s || acc.first[r] >= s) continue;
      if (plan.steps[acc.first[r]].kind != PlanStep::Kind::kDispatch) continue;  // a dispatch produced it
      if (!(u.layout == t.layout) || !same_dims(u.shape, t.shape) || !same_dims(in.shape, t.shape)) continue;
      // The block U's memory has (its memory root's) holds exactly T.
      const TensorId mem = memory_root(plan, uid);
      const PlanTensor& m = plan.tensors[static_cast<size_t>(mem)];
      if (m.layout.type != t.layout.type || !numel(m.shape).same_as(numel(t.shape))) continue;
      // Every binding of that memory in this kernel reads it elementwise.
      bool only_elementwise = true;
      for (const KernelTensor& other : k.tensors)
        if (&other != &out && memory_root(plan, other.tensor) == mem)
          only_elementwise = only_elementwise && !other.written && other.elementwise && same_dims(other.shape, t.shape);
      if (!only_elementwise) continue;
      plan.tensors[static_cast<size_t>(tid)].inplace_of = uid;
      for (KernelTensor& other : k.tensors)
        if (memory_root(plan, other.tensor) == mem) other.shares_memory = true;
      break;
    }
  }
}

}  // namespace kiln::planner
