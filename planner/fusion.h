// Fusion groups: nodes a plugin put into one group with the
// "kiln.fusion_group" annotation (plan_hints.h) run as one kernel (or, for
// an anchor lowered to several kernels, as that anchor's kernels).
//
// What every group must satisfy (fusion_blocker, judged from the graph):
// two or more nodes of the main graph, each with exactly one output of known
// rank; one group output (the last node's in plan order: a graph output or
// read outside the group); every other node's output has the group output's
// shape and element type, is read by a node of the group and by nothing
// outside it (no other node, sub-graph or graph output).
//
// Two group shapes fuse (lower_fused):
//  1. Elementwise chain: every node lowers to one composable map kernel
//     (Family::kMap, no KernelDesc::params, no extensions, helpers only from
//     elementwise_math.glsl: Relu, Add, Mul, Sigmoid, Clip with constant
//     bounds, Erf, Div, ...). One map kernel "fused_<k1>_<k2>..." computes
//     each node's body for the output element in turn, an intermediate in a
//     local variable, and writes only the output.
//  2. Anchor + elementwise tail (epilogue fusion): the first node (the
//     anchor) lowers to anything that writes its output only through the
//     store accessors Y_st / Y_st4 (conv and matmul GEMMs of every variant:
//     tiled, split-K, GEMV, cooperative matrix, the image scratch copy;
//     depthwise conv, pooling, reductions, softmax, layer normalization,
//     ...), every other node lowers to one composable map kernel as in 1.
//     The tail nodes may read the anchor's output and each other's (a DAG:
//     SiLU's Mul reads the anchor and the Sigmoid) plus external inputs of
//     any broadcastable shape. The anchor is lowered with its own lowering,
//     its output laid out as the group's output; every kernel of it that
//     writes the anchor's output writes the group's output instead, through
//     a store epilogue (KernelDesc::store_epilogue, glsl_codegen.h) applying
//     the composed tail to each stored element; the tail's external inputs
//     are bound on those kernels. Kernel names become
//     "<anchor kernel>+<tail kernel>+..." ("conv_tile64x64+relu").
//     Refused when an anchor kernel reads its output (binds it as an input,
//     or uses Y_data, Y_img, Y_at...), writes it through a view of another
//     shape, as an alias, or on the host, or when no kernel writes it.
//  Intermediates have the output's shape, so a node reads them exactly at
//  the element it computes; external inputs keep whatever indexing
//  (broadcasting) the node's lowering chose.
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
// kernels (an elementwise chain or an anchor with an elementwise tail, see
// above), appended to the builder's pending kernels. Errors: kUnimplemented
// saying why when the group has neither shape (the caller undoes what the
// lowerings added and plans the nodes unfused); a lowering's other errors.
Status lower_fused(PlanBuilder& builder, const ir::Graph& graph, const FusionGroup& group,
                   const LoweringRegistry& lowerings);

}  // namespace kiln::planner
