// Row normalization after a split-K GEMM (fusion.h, group shape 4): a
// group [prefix..., LayerNormalization] whose prefix is a MatMul or Gemm
// with its elementwise tail (a group of shape 2, a store-view group, or the
// GEMM alone; load-side view prologues are stripped before) and
// whose LayerNormalization normalizes the prefix's output X over its last
// axis (a transformer's fc2 -> bias -> residual add -> next layer's norm).
// X may be read outside the group too (pre-norm's residual stream): the
// group then has two outputs, X and the normalized value.
//
// Where the prefix lowers to a split-K GEMM whose reduce pass writes X as
// rows of N contiguous elements in a buffer (directly, or through a store
// view of reshapes only, X then read back through a second binding), and
// the normalized output is a buffer too, that pass becomes one row kernel:
// a workgroup per GEMM row adds the row's partial sums and stores X through
// the GEMM's own store (its epilogue: bias, residual), reads the row back,
// and normalizes it (mean, variance, scale, bias) into the
// LayerNormalization's output —
// one dispatch instead of the reduce pass and the layer norm. Otherwise the
// prefix's kernels run, then the LayerNormalization's own kernel: the same
// dispatches as without the group.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "engine/base/status.h"
#include "engine/ir/graph.h"
#include "planner/fusion.h"
#include "planner/lowering.h"
#include "planner/plan_builder.h"

namespace kiln::planner {

// Whether `group` has this shape (judged from the graph: the last node a
// LayerNormalization over the last axis reading the node before it, whose
// scale and bias no member computes, its other outputs absent, and a MatMul
// or Gemm first).
bool is_row_norm_group(const ir::Graph& graph, const FusionGroup& group);

// Why a row-norm group cannot be one kernel, judged from the graph ("" when
// it may be): the prefix's blocker (fusion_blocker), or an output of
// unknown rank. X may be read outside the group.
std::string row_norm_blocker(const ir::Graph& graph, const PlanBuilder& builder, const FusionGroup& group);

// Why it cannot run where its last node stands in the plan's order
// (`position`: main node -> index), "" when it can: a node outside the
// group reads X's data before the LayerNormalization does, or a node of
// another region or a sub-graph reads or returns it. (The plan then runs
// the group without its norm.)
std::string row_norm_order_blocker(const ir::Graph& graph, const FusionGroup& group,
                                   const std::map<ir::NodeId, size_t>& position);

// The group without its LayerNormalization.
FusionGroup row_norm_prefix(const FusionGroup& group);

// Lowers a row-norm group (is_row_norm_group): its kernels are appended to
// the builder's pending ones. Errors as lower_fused's.
Status lower_row_norm(PlanBuilder& builder, const ir::Graph& graph, const FusionGroup& group,
                      const LoweringRegistry& lowerings);

}  // namespace kiln::planner
