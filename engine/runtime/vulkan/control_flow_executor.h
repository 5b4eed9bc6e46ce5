// Runs a recorded signature: its segments in order, with control flow.
//
// Recording (recorder.h) makes one command buffer per segment; a run
// submits them one by one, and between them runs host fallbacks, decides
// each If from its condition (the untaken branch's segments are skipped: its
// kernels never run) and repeats each Loop's body while its trip count and
// condition allow. The executor owns only that walk and its bookkeeping
// (untaken ranges, loop frames, timings); reading conditions and tensors and
// running fallbacks stay with the model, given as hooks, so the walk reads
// as one small loop.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "engine/runtime/vulkan/vulkan_model_impl.h"

namespace kiln::runtime {

// The bytes dispatch kernel `k` moves (each bound tensor once, whole, at its
// device layout) and its FLOPs, at sig's shapes: a roofline count, not what
// the kernel's caches actually fetch.
Segment::Traffic kernel_traffic(const planner::KernelDesc& k, const Signature& sig);

class ControlFlowExecutor {
 public:
  struct Hooks {
    // Runs host fallback step `step` of the signature (its inputs read from,
    // its outputs written to the device).
    std::function<Status(Signature& sig, size_t step)> run_fallback;
    // Condition tensor `cond` of `node` after segment `seg` ran (null: no
    // segment copied it out; read it otherwise).
    std::function<StatusOr<bool>(Signature& sig, const Segment* seg, TensorId cond, ir::NodeId node)> read_condition;
    // A Loop's trip count or initial condition tensor.
    std::function<StatusOr<Tensor>(Signature& sig, TensorId t)> loop_input;
  };

  // `plan`, `graph` and `submitter` are borrowed for the executor's life.
  // `profile`: the segments were recorded with a timestamp per dispatch.
  ControlFlowExecutor(const planner::ExecutionPlan& plan, const ir::Graph& graph, vk::Submitter& submitter,
                      bool profile, Hooks hooks)
      : plan_(plan), graph_(graph), submitter_(submitter), profile_(profile), hooks_(std::move(hooks)) {}

  // Runs sig's segments once (one run of the model up to sig's boundary).
  // Fills gpu_ms (-1 when some segment has no timestamps), gpu_begin_ns
  // and gpu_end_ns (the first and last segment's stamps), dispatches,
  // fallbacks, kernels (when profiling), branches and loops of `out`.
  // Errors: the hooks' and the submitter's; kInvalidArgument for a trip
  // count that is not one element or a Loop that would never end. Not
  // thread-safe (the run slot's mutex serializes its runs).
  Status run(Signature& sig, VulkanRunStats& out);

 private:
  struct Frame {  // a Loop running: its step, its body's segments, iterations done, trip count
    size_t step, first, last;
    int64_t iterations, trip;
  };

  std::string node_name(size_t step) const;
  // Submits seg's command buffer and waits; adds its GPU time (and per
  // kernel times when profiling).
  Status submit(Signature& sig, Segment& seg, VulkanRunStats& out);
  // Adds the segment's bytes and fused dispatches to `out` (computed once
  // per segment, its shapes being the signature's).
  void count_traffic(const Signature& sig, Segment& seg, VulkanRunStats& out) const;
  // The If after seg: reads its condition, marks the untaken range.
  Status decide_if(Signature& sig, const Segment& seg, VulkanRunStats& out);
  // The Loop after seg: its trip count and initial condition; pushes a
  // frame, or sets *skip_body when the body runs no time.
  Status enter_loop(Signature& sig, const Segment& seg, VulkanRunStats& out, bool* skip_body);
  // At segment i, the end of running Loop bodies: the index to go on from
  // (the body's first segment - 1 for another iteration, else i).
  StatusOr<size_t> end_bodies(Signature& sig, Segment& seg, size_t i, bool skipped, VulkanRunStats& out);

  const planner::ExecutionPlan& plan_;
  const ir::Graph& graph_;
  vk::Submitter& submitter_;
  const bool profile_;
  Hooks hooks_;
  std::vector<std::pair<size_t, size_t>> untaken_;  // step ranges of branches not taken so far
  std::vector<Frame> loops_;
  bool have_gpu_time_ = true;
};

}  // namespace kiln::runtime
