// Live intervals of a plan's memory roots (liveness.h).
#include "planner/memory/liveness.h"

#include <algorithm>
#include <utility>

namespace kiln::planner {

namespace {

// Records uses of tensors at steps, by memory root.
class Recorder {
 public:
  Recorder(const ExecutionPlan& plan, Liveness& out) : plan_(plan), out_(out), ranges_(control_ranges(plan)) {}

  void use(TensorId t, int64_t step) {
    const size_t r = static_cast<size_t>(memory_root(plan_, t));
    out_.needed[r] = true;
    out_.live[r].touch(step);
  }

  void touch(TensorId t, size_t s, bool written, bool host) {
    FirstTouch& f = out_.first[static_cast<size_t>(memory_root(plan_, t))];
    if (f.step == FirstTouch::kUntouched) f.step = s;
    if (f.step == s) (written ? f.written : f.read) = true;
    if (host || in_control(s)) f.irregular = true;
  }

  // A value's tensor used at host step `s` (read or written: both count as
  // written for the first touch, the host's order being its own).
  void use_value(ir::ValueId v, size_t s) {
    auto it = v == ir::kNoValue ? plan_.value_tensor.end() : plan_.value_tensor.find(v);
    if (it == plan_.value_tensor.end()) return;
    use(it->second, static_cast<int64_t>(s));
    touch(it->second, s, true, true);
  }

 private:
  bool in_control(size_t s) const {  // strictly inside a branch or body
    for (const auto& [head, end] : ranges_)
      if (s > head && s < end) return true;
    return false;
  }

  const ExecutionPlan& plan_;
  Liveness& out_;
  const std::vector<std::pair<size_t, size_t>> ranges_;
};

void record_step(const ExecutionPlan& plan, const ir::Graph& graph, size_t s, Recorder& rec) {
  const PlanStep& step = plan.steps[s];
  if (step.kind == PlanStep::Kind::kDispatch) {
    for (const KernelTensor& kt : step.kernel.tensors) {
      rec.use(kt.tensor, static_cast<int64_t>(s));
      rec.touch(kt.tensor, s, kt.written, false);
    }
  } else if (step.kind == PlanStep::Kind::kFallback || step.kind == PlanStep::Kind::kIf) {
    // A fallback reads and writes its values at its step; an If reads its
    // condition there (its branches' steps touch the rest).
    const ir::Node& node = graph.node(step.node);
    for (ir::ValueId v : node.inputs) rec.use_value(v, s);
    for (ir::ValueId v : node.outputs) rec.use_value(v, s);
    // A host fallback's sub-graphs read values of the enclosing graph too
    // (by id, not as inputs): they stay live up to its step.
    if (step.kind == PlanStep::Kind::kFallback)
      for (ir::ValueId v : subgraph_reads(graph, node)) rec.use_value(v, s);
    if (step.kind == PlanStep::Kind::kIf && step.cond != kNoTensor) {
      rec.use(step.cond, static_cast<int64_t>(s));
      rec.touch(step.cond, s, false, true);
    }
  } else if (step.kind == PlanStep::Kind::kLoop) {
    // A device trip count or initial condition is read (back) here.
    for (TensorId t : {step.trip, step.cond}) {
      if (t == kNoTensor || plan.tensors[static_cast<size_t>(t)].host_resident ||
          plan.tensors[static_cast<size_t>(t)].constant.defined())
        continue;
      rec.use(t, static_cast<int64_t>(s));
      rec.touch(t, s, false, true);
    }
  }
}

}  // namespace

bool Liveness::born_at_dispatch(size_t t, size_t begin, size_t end) const {
  const FirstTouch& f = first[t];
  return f.step != FirstTouch::kUntouched && f.written && !f.read && !f.irregular && f.step >= begin &&
         f.step < end && live[t].first == static_cast<int64_t>(f.step);
}

Liveness compute_liveness(const ExecutionPlan& plan, const ir::Graph& graph) {
  const size_t n = plan.tensors.size();
  Liveness out;
  out.needed.assign(n, false);
  out.live.assign(n, LiveInterval{});
  out.first.assign(n, FirstTouch{});
  Recorder rec(plan, out);
  for (size_t s = 0; s < plan.steps.size(); ++s) record_step(plan, graph, s, rec);
  for (TensorId t : plan.inputs) rec.use(t, kBeforeRun);
  for (TensorId t : plan.outputs) rec.use(t, kAfterRun);
  for (size_t t = 0; t < n; ++t)
    if (plan.tensors[t].host_resident && plan.tensors[t].device_needed) {
      rec.use(static_cast<TensorId>(t), kBeforeRun);
      rec.use(static_cast<TensorId>(t), kAfterRun);
    }
  // After the graph's inputs and outputs: a Loop's scan output that only
  // the graph outputs read is written in the body and live past it.
  extend_over_loops(plan, out.live);
  return out;
}

void extend_over_loops(const ExecutionPlan& plan, std::vector<LiveInterval>& live) {
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const PlanStep& step = plan.steps[s];
    if (step.kind != PlanStep::Kind::kLoop || step.body_end <= s + 1) continue;
    const int64_t first = static_cast<int64_t>(s), last = static_cast<int64_t>(step.body_end) - 1;
    for (LiveInterval& iv : live) {
      const bool touches = iv.first <= last && iv.last >= first;
      const bool inside = iv.first > first && iv.last <= last;
      if (touches && !inside) {
        iv.touch(first);
        iv.touch(last);
      }
    }
    if (step.body_cond != kNoTensor) live[static_cast<size_t>(memory_root(plan, step.body_cond))].touch(last);
  }
}

std::vector<bool> roots_written_in(const ExecutionPlan& plan, const ir::Graph& graph, size_t from, size_t to) {
  std::vector<bool> wrote(plan.tensors.size(), false);
  for (size_t s = from; s < to && s < plan.steps.size(); ++s) {
    const PlanStep& step = plan.steps[s];
    if (step.kind == PlanStep::Kind::kDispatch) {
      for (const KernelTensor& kt : step.kernel.tensors)
        if (kt.written) wrote[static_cast<size_t>(memory_root(plan, kt.tensor))] = true;
    } else if (step.kind == PlanStep::Kind::kFallback) {
      for (ir::ValueId v : graph.node(step.node).outputs) {
        auto it = v == ir::kNoValue ? plan.value_tensor.end() : plan.value_tensor.find(v);
        if (it != plan.value_tensor.end()) wrote[static_cast<size_t>(memory_root(plan, it->second))] = true;
      }
    }
  }
  return wrote;
}

}  // namespace kiln::planner
