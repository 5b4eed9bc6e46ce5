// Live intervals of an ExecutionPlan's tensors: at which steps each memory
// root must hold its bytes.
//
// A runtime places tensors in one arena (arena.h) by their lifetimes; this
// is where those lifetimes come from. It depends on the plan and its graph
// only (no device), so it is unit-tested on hand-built plans
// (liveness_test.cc), and the Vulkan runtime's placement
// (engine/runtime/vulkan/vulkan_model_place.cc) turns it into arena blocks.
//
// Memory follows views and in-place writes (planner::memory_root): every use
// of a tensor counts for its root, and only roots' entries are filled.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/ir/graph.h"
#include "planner/execution_plan.h"

namespace kiln::planner {

// Lifetime positions besides the plan's step indices: before the first step
// (graph inputs, host values uploaded ahead) and after the last (outputs).
inline constexpr int64_t kBeforeRun = -1;
inline constexpr int64_t kAfterRun = INT64_MAX;

// The steps [first, last] a root is live, inclusive; empty until touched.
struct LiveInterval {
  int64_t first = kAfterRun;
  int64_t last = kBeforeRun;
  void touch(int64_t step) {
    if (step < first) first = step;
    if (step > last) last = step;
  }
  bool empty() const { return first > last; }
  bool operator==(const LiveInterval&) const = default;
};

// How a root is touched first, which decides whether its memory may hold
// something else before that (an image whose contents a runtime discards).
struct FirstTouch {
  static constexpr size_t kUntouched = SIZE_MAX;
  size_t step = kUntouched;  // the first plan step reading or writing it
  bool written = false;      // that step writes it
  bool read = false;         // that step reads it
  // Some step on the host (a fallback, an If's condition, a Loop's trip
  // count) or inside an If branch or Loop body touches it: its accesses do
  // not follow the step order of one pass over the plan.
  bool irregular = false;
};

struct Liveness {
  // Per plan tensor (non-roots stay default): whether it needs memory on
  // the device, its live interval, and how it is first touched.
  std::vector<bool> needed;
  std::vector<LiveInterval> live;
  std::vector<FirstTouch> first;

  // Whether root `t` is born at a plain dispatch in [begin, end): the
  // dispatch that first touches it writes it without reading it, outside
  // every If branch and Loop body, with no host step touching it, and its
  // lifetime starts there. Only then may its memory hold another tensor's
  // bytes before that step in every run (its contents are discarded there).
  bool born_at_dispatch(size_t t, size_t begin, size_t end) const;
};

// Lifetimes of every root of `plan`:
//   * a dispatch uses each tensor it binds at its step;
//   * a host fallback uses its node's inputs and outputs, and every value
//     its sub-graphs read (subgraph_reads), at its step; an If uses its
//     condition there; a Loop its device trip count and initial condition;
//   * graph inputs are live from kBeforeRun, outputs to kAfterRun, and host
//     values some kernel binds (device_needed) over the whole run;
//   * then extend_over_loops.
// Both are borrowed for the call only. Pure; thread-safe on const inputs.
Liveness compute_liveness(const ExecutionPlan& plan, const ir::Graph& graph);

// A Loop's body runs again and again: a lifetime that crosses the body's
// range [loop step, body_end - 1] without lying strictly inside it (a value
// read from outside, a carried parameter, a scan output) is widened to the
// whole range, and the body's condition (read after the body's last step)
// lives to its end. `live` is per plan tensor, indexed like plan.tensors.
void extend_over_loops(const ExecutionPlan& plan, std::vector<LiveInterval>& live);

// Per root tensor, whether a plan step in [from, to) writes it (a kernel
// binding it as written, a host fallback making it). Pure.
std::vector<bool> roots_written_in(const ExecutionPlan& plan, const ir::Graph& graph, size_t from, size_t to);

}  // namespace kiln::planner
