// Attention groups (GroupKind::kAttention): the nodes of
//
//   [Mul/Div by a scalar constant]* on A, on B
//   S = MatMul(A, B)
//   [Mul/Div by a scalar constant | Add of another tensor | Reshape]*
//                                       (scale, bias, mask; swin's shifted
//                                        windows add a mask in a reshaped view)
//   P = Softmax(S', axis = last)
//   Y = MatMul(P, V)
//
// as ONE group, which the planner runs as one flash-attention kernel
// (planner/fusion_attention.h): the [.., M, N] scores never reach memory.
// This is DNNFusion's "intensive" many-to-many fusion that AGO's clustering
// with one anchor per group cannot make (three anchors), so the pass finds
// these first and keeps their nodes out of the clustering.
//
// Conditions (each also checked by the planner, which otherwise runs the
// group node by node): every intermediate (the scaled A and B, S and the
// chain, P) is read exactly once, by the next node of the pattern, and is
// no graph output; an Add's other operand and V come from outside; the
// chain keeps S's dims up to Reshapes (an Add does not broadcast S to a
// larger shape; a Reshape keeps the last two dims and the static number of
// batch elements, renaming only the batch coordinates);
// the Softmax has an explicit axis that is the last (without one the
// default depends on the opset: only rank 2 is certain); A, B and V have
// rank >= 2, float dtypes; the head dims (A's and V's last) are constants
// of at most 128. Nodes whose outputs the planner computes on the host
// (`host_values`) never match.
#pragma once

#include <set>
#include <vector>

#include "kiln/kiln_plugin.hpp"

namespace kiln::fusion {

// The largest head dim the planner's attention kernel takes.
constexpr int64_t kMaxAttentionHeadDim = 128;

// Every attention pattern of the main graph, each as its nodes (in no
// particular order); no node is in two.
std::vector<std::vector<kiln_node_id_t>> find_attention_groups(const kiln::plugin::GraphView& g,
                                                               const std::set<kiln_value_id_t>& host_values);

}  // namespace kiln::fusion
