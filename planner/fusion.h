// Fusion groups: nodes a plugin put into one group with the
// "kiln.fusion_group" annotation (plan_hints.h) run as one kernel.
//
// The planner fuses a group of elementwise map kernels: every node lowers to
// one kMap kernel, the group has one output (the last node's; a graph output
// or read outside the group), every other node's output has the output's
// shape and element type and is read only by nodes of the group. The fused
// kernel computes each node's body for the output element in turn, an
// intermediate living in a local variable instead of memory, and writes only
// the output. Because the intermediates have the output's shape, a node
// reads its intermediate inputs exactly at the element it computes; its
// external inputs keep whatever indexing (broadcasting) its lowering chose.
//
// A group that breaks a condition runs unfused, node by node as without the
// annotation, and the reason is recorded in ExecutionPlan::fusion_notes. Only
// groups of the main region fuse; a malformed id is an error (plan_hints.h).
#pragma once

#include <string>
#include <vector>

#include "engine/base/status.h"
#include "engine/ir/graph.h"
#include "planner/lowering.h"
#include "planner/plan_builder.h"

namespace kiln::planner {

struct FusionGroup {
  std::string id;
  std::vector<ir::NodeId> nodes;  // in `order`; the last one writes the output
  bool in_subgraph = false;       // of an If branch or Loop body: never fused
};

// The groups of the main-region nodes in `order` (check_plan_hints ran: ids
// are valid), in the order of their first node, then those of sub-graph
// nodes (per id, all sub-graphs together), which fusion_blocker refuses.
std::vector<FusionGroup> collect_fusion_groups(const ir::Graph& graph, const std::vector<ir::NodeId>& order);

// Why `group` cannot be one kernel, judged from the graph alone (empty when
// it may be: lower_fused has the last word).
std::string fusion_blocker(const ir::Graph& graph, const PlanBuilder& builder, const FusionGroup& group);

// Lowers the group's nodes with their own lowerings and composes their
// kernels into one kMap kernel ("fused_<op>_<op>..."), appended to the
// builder's pending kernels. Errors: kUnimplemented saying why when a node
// does not lower to one composable map kernel (the caller undoes what the
// lowerings added and plans the nodes unfused); a lowering's other errors.
Status lower_fused(PlanBuilder& builder, const ir::Graph& graph, const FusionGroup& group,
                   const LoweringRegistry& lowerings);

}  // namespace kiln::planner
