// ControlFlowExecutor (control_flow_executor.h): the walk over a recorded
// signature's segments, in phases: submit -> run a fallback -> decide_if ->
// enter_loop, then end_bodies at the end of each Loop body.
#include "engine/runtime/vulkan/control_flow_executor.h"

#include <algorithm>
#include <limits>

#include "engine/base/limits.h"
#include "planner/index_view.h"

namespace kiln::runtime {

using planner::PlanStep;
using planner::PlanTensor;
using planner::Storage;

// The bytes a dispatch moves (each bound tensor once, whole, at its device
// layout: the ones it only reads, the ones it writes) and its FLOPs, with the
// signature's symbol values: a roofline estimate, not a count of what the
// kernel's caches actually fetch.
Segment::Traffic kernel_traffic(const planner::KernelDesc& k, const Signature& sig) {
  Segment::Traffic traffic;
  for (const planner::KernelTensor& t : k.tensors) {
    // A tensor read through an index view binds its source: the source's
    // shape is what the binding holds and what its layout describes.
    const std::vector<ir::Dim>& shape = t.view ? t.view->source_shape : t.shape;
    uint64_t elements = 1;
    bool known = true;
    if (t.layout.storage == Storage::kImage) {
      const planner::ImageExtent e = planner::image_extent(shape, t.layout.packed_axis);
      auto w = e.width.evaluate(sig.bindings), h = e.height.evaluate(sig.bindings);
      known = w && h;
      if (known) elements = static_cast<uint64_t>(std::max<int64_t>(*w, 0) * std::max<int64_t>(*h, 0)) * 4;
    } else {
      for (const ir::Dim& d : shape) {
        auto v = d.evaluate(sig.bindings);
        if (!v) {
          known = false;
          break;
        }
        elements *= static_cast<uint64_t>(std::max<int64_t>(*v, 0));
      }
    }
    // A dim the bindings cannot evaluate: the plan tensor's concrete shape.
    if (!known && t.tensor != planner::kNoTensor && static_cast<size_t>(t.tensor) < sig.shapes.size()) {
      elements = 1;
      for (int64_t d : sig.shapes[static_cast<size_t>(t.tensor)])
        elements *= static_cast<uint64_t>(std::max<int64_t>(d, 0));
      known = true;
    }
    if (!known) continue;
    (t.written ? traffic.written : traffic.read) += elements * planner::elem_bytes(t.layout.type);
  }
  const auto flops = k.flops.evaluate(sig.bindings);
  traffic.flops = flops && *flops > 0 ? static_cast<uint64_t>(*flops) : 0;
  return traffic;
}

std::string ControlFlowExecutor::node_name(size_t step) const {
  const ir::Node& node = graph_.node(plan_.steps[step].node);
  return node.name.empty() ? node.op : node.name;
}

Status ControlFlowExecutor::run(Signature& sig, VulkanRunStats& out) {
  out.gpu_ms = 0;
  out.gpu_begin_ns = out.gpu_end_ns = 0;
  have_gpu_time_ = true;
  untaken_.clear();
  loops_.clear();
  for (size_t i = 0; i < sig.segments.size(); ++i) {
    Segment& seg = sig.segments[i];
    const bool skipped = std::any_of(untaken_.begin(), untaken_.end(), [&](const auto& r) {
      return seg.first_step >= r.first && seg.first_step < r.second;
    });
    if (!skipped) {
      for (const auto& [if_step, then_taken] : seg.decided_ifs) out.branches.push_back({node_name(if_step), then_taken});
      out.dispatches += static_cast<uint32_t>(seg.dispatches.size());
      if (!seg.dispatches.empty()) {
        count_traffic(sig, seg, out);
        KILN_RETURN_IF_ERROR(submit(sig, seg, out));
      }
      if (seg.fallback_step != SIZE_MAX) {
        KILN_RETURN_IF_ERROR(hooks_.run_fallback(sig, seg.fallback_step));
        ++out.fallbacks;
      }
      if (seg.if_step != SIZE_MAX) KILN_RETURN_IF_ERROR(decide_if(sig, seg, out));
      if (seg.loop_step != SIZE_MAX) {
        bool skip_body = false;
        KILN_RETURN_IF_ERROR(enter_loop(sig, seg, out, &skip_body));
        if (skip_body) {
          i = sig.loop_bodies.at(seg.loop_step).second;  // zero iterations: the body is skipped
          continue;
        }
      }
    }
    KILN_ASSIGN_OR_RETURN(i, end_bodies(sig, seg, i, skipped, out));
  }
  if (!have_gpu_time_) out.gpu_ms = -1;
  return ok_status();
}

void ControlFlowExecutor::count_traffic(const Signature& sig, Segment& seg, VulkanRunStats& out) const {
  if (seg.traffic.size() != seg.dispatches.size()) {
    seg.traffic.clear();
    seg.fused_dispatches = 0;
    for (const RecordedDispatch& d : seg.dispatches) {
      const planner::KernelDesc& kernel = plan_.steps[d.step].kernel;
      seg.traffic.push_back(kernel_traffic(kernel, sig));
      seg.fused_dispatches += is_fused_kernel(kernel.name) ? 1 : 0;
    }
  }
  for (const Segment::Traffic& t : seg.traffic) {
    out.bytes_read += t.read;
    out.bytes_written += t.written;
  }
  out.fused_dispatches += seg.fused_dispatches;
}

Status ControlFlowExecutor::submit(Signature& sig, Segment& seg, VulkanRunStats& out) {
  KILN_RETURN_IF_ERROR(submitter_.submit(seg.cmd));
  if (!seg.timestamps) {
    have_gpu_time_ = false;
    return ok_status();
  }
  KILN_ASSIGN_OR_RETURN(std::vector<uint64_t> ticks, seg.timestamps->read_ticks());
  const size_t n = seg.dispatches.size();
  if (ticks.size() < (profile_ ? n + 1 : 2)) {
    have_gpu_time_ = false;
    return ok_status();
  }
  const size_t end = profile_ ? n : 1;
  out.gpu_ms += seg.timestamps->elapsed_ns(ticks[0], ticks[end]) / 1e6;
  // The run's interval on the host's clock: its first segment's start,
  // its last segment's end (0 without a calibrated clock).
  vk::DeviceClock& clock = submitter_.device().clock();
  if (out.gpu_begin_ns == 0) out.gpu_begin_ns = clock.to_host_ns(ticks[0]).value_or(0);
  out.gpu_end_ns = out.gpu_begin_ns != 0 ? clock.to_host_ns(ticks[end]).value_or(0) : 0;
  if (!profile_) return ok_status();
  seg.measured_ms.assign(n, 0.0);  // kept for sliced recordings' budgets (record_slice)
  for (size_t d = 0; d < n; ++d) {
    seg.measured_ms[d] = seg.timestamps->elapsed_ns(ticks[d], ticks[d + 1]) / 1e6;
    const PlanStep& step = plan_.steps[seg.dispatches[d].step];
    const Segment::Traffic& t = seg.traffic[d];
    out.kernels.push_back({step.kernel.name, node_name(seg.dispatches[d].step), seg.measured_ms[d],
                           t.read + t.written, t.flops, t.read, t.written});
  }
  return ok_status();
}

Status ControlFlowExecutor::decide_if(Signature& sig, const Segment& seg, VulkanRunStats& out) {
  const PlanStep& step = plan_.steps[seg.if_step];
  KILN_ASSIGN_OR_RETURN(const bool taken, hooks_.read_condition(sig, &seg, step.cond, step.node));
  untaken_.push_back(taken ? std::make_pair(step.then_end, step.else_end)
                           : std::make_pair(seg.if_step + 1, step.then_end));
  out.branches.push_back({node_name(seg.if_step), taken});
  return ok_status();
}

Status ControlFlowExecutor::enter_loop(Signature& sig, const Segment& seg, VulkanRunStats& out, bool* skip_body) {
  const PlanStep& step = plan_.steps[seg.loop_step];
  const ir::Node& node = graph_.node(step.node);
  int64_t trip = std::numeric_limits<int64_t>::max();
  if (step.trip != planner::kNoTensor) {
    KILN_ASSIGN_OR_RETURN(Tensor m, hooks_.loop_input(sig, step.trip));
    if (m.numel() != 1)
      return invalid_argument(node.describe() + ": the trip count must have one element, got shape " +
                              shape_to_string(m.shape()));
    trip = m.get_i64(0);
  }
  bool go = true;
  if (step.cond != planner::kNoTensor) {
    KILN_ASSIGN_OR_RETURN(go, hooks_.read_condition(sig, nullptr, step.cond, step.node));
  }
  const PlanTensor& body_cond = plan_.tensors[static_cast<size_t>(step.body_cond)];
  if (step.trip == planner::kNoTensor && (body_cond.host_resident || body_cond.constant.defined())) {
    KILN_ASSIGN_OR_RETURN(const bool again, hooks_.read_condition(sig, nullptr, step.body_cond, step.node));
    if (again && go)
      return invalid_argument(node.describe() + ": it has no trip count and its body's condition is always "
                                                "true: it would never end");
  }
  auto body = sig.loop_bodies.find(seg.loop_step);
  if (body == sig.loop_bodies.end()) {
    out.loops.push_back({node_name(seg.loop_step), 0});  // nothing recorded in the body
  } else if (go && trip > 0) {
    loops_.push_back({seg.loop_step, body->second.first, body->second.second, 0, trip});
  } else {
    out.loops.push_back({node_name(seg.loop_step), 0});
    *skip_body = true;
  }
  return ok_status();
}

StatusOr<size_t> ControlFlowExecutor::end_bodies(Signature& sig, Segment& seg, size_t i, bool skipped,
                                                 VulkanRunStats& out) {
  while (!loops_.empty() && i == loops_.back().last) {
    Frame& f = loops_.back();
    const PlanStep& step = plan_.steps[f.step];
    bool again = ++f.iterations < f.trip;
    if (again) {
      KILN_ASSIGN_OR_RETURN(again, hooks_.read_condition(sig, skipped ? nullptr : &seg, step.body_cond, step.node));
    }
    if (again) {
      // The same limit as the reference executor's: a Loop whose condition
      // never turns false must not hang the caller.
      KILN_ASSIGN_OR_RETURN(const int64_t max_iterations, max_loop_iterations());
      if (f.iterations >= max_iterations) {
        const int64_t trip = f.trip;
        loops_.clear();
        return invalid_argument(graph_.node(step.node).describe() + ": did not end within " +
                                std::to_string(max_iterations) + " iterations (the limit, " +
                                std::string(kMaxLoopIterationsEnv) + "); trip count " +
                                (step.trip != planner::kNoTensor ? std::to_string(trip) : std::string("none")));
      }
    }
    if (again) {
      // The body's Ifs decide afresh in the next iteration.
      untaken_.erase(std::remove_if(untaken_.begin(), untaken_.end(),
                                    [&](const auto& r) { return r.first > f.step && r.first < step.body_end; }),
                     untaken_.end());
      return f.first - 1;
    }
    out.loops.push_back({node_name(f.step), f.iterations});
    loops_.pop_back();
  }
  return i;
}

}  // namespace kiln::runtime
