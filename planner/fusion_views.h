// Fusion groups that start with data-movement nodes: load-side index views
// (the "prologue" of a fused kernel).
//
// A group may begin with view nodes — Transpose, Reshape, Flatten, Squeeze,
// Unsqueeze, Identity, Slice, Expand, Gather of a constant one-element
// index, DepthToSpace, SpaceToDepth (index_view.h) — each reading, as its
// input 0, a value from outside the group or another view node's output,
// and each output read only by nodes of the group. The rest of the group,
// its *core*, is lowered as usual: one node by its own lowering (any kernel
// family: a Transpose before a MatMul), several by lower_fused (fusion.h).
// Every binding of a view node's output in the resulting kernels is then
// replaced by a binding of the chain's SOURCE tensor read through the
// composed index view (KernelTensor::view, glsl_codegen.h), so the copies
// the view nodes would have made never run: the view values have no steps,
// no kernel binds them and they get no memory.
//
// Refused, each with its reason (kUnimplemented: the group runs unfused and
// ExecutionPlan::fusion_notes says why):
//   * a view output read outside the group (but for its dims: by Shape or
//     Size), or a group of view nodes only;
//   * a Slice whose starts are not known at plan time or whose axes or steps
//     are not constants; an Expand of a dim that may or may not be 1;
//   * a source that is a host value (constants are fine);
//   * a core lowering that aliases a view value instead of reading it
//     (a Reshape in the core), or whose kernel touches a view value's
//     storage directly (X_data, X_index, X_texel, X_tex, X_IS_BUFFER,
//     X_IS_IMAGE: what the code generator defines for a tensor but not for
//     a view, which has only X_at, X_ld, X_at4 and the dims).
// A group without view nodes goes to fusion_blocker and lower_fused
// unchanged. Only this file and two calls in execution_plan.cc know about
// views; fusion.cc does not.
#pragma once

#include <string>
#include <vector>

#include "engine/base/status.h"
#include "engine/ir/graph.h"
#include "planner/fusion.h"
#include "planner/lowering.h"
#include "planner/plan_builder.h"

namespace kiln::planner {

// A group split into its view nodes (in order; each reads, as input 0, a
// value from outside the group or another view node's output) and its core
// (the other nodes, in order; the same id).
struct ViewSplit {
  std::vector<ir::NodeId> views;
  FusionGroup core;
};
ViewSplit split_view_nodes(const ir::Graph& graph, const FusionGroup& group);

// fusion_blocker() with view nodes allowed at the start of the group: their
// outputs may have any shape but must be read only by the group, and the
// core must be one node or a group fusion_blocker accepts.
std::string fusion_blocker_with_views(const ir::Graph& graph, const PlanBuilder& builder, const FusionGroup& group);

// lower_fused() with view nodes: composes each view chain, lowers the core
// and rewrites its kernels to read the chains' sources through the views
// (see above). The kernels are named "fused_<view ops>_<core kernel>".
// Errors: kUnimplemented saying why it cannot (the caller undoes what was
// added and plans the nodes unfused); a lowering's other errors.
Status lower_fused_with_views(PlanBuilder& builder, const ir::Graph& graph, const FusionGroup& group,
                              const LoweringRegistry& lowerings);

}  // namespace kiln::planner
