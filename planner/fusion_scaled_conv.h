// A per-channel scale folded into the 1x1 convolution that reads it:
// squeeze-and-excitation ends with Mul(X, S), X [N, C, H, W] times S
// [N, C, 1, 1] (one gate per image and channel), whose only reader is the
// block's 1x1 projection conv. Since
//   Conv(X * S, W)[n, co, p] = sum_c X[n, c, p] * S[n, c] * W[co, c],
// the conv's implicit GEMM reads A(n, p, c) = X[n, c, p] * S[n, c]: the
// scaled feature map never reaches memory and its dispatch is gone. No
// recomputation beyond one multiply per A element read.
//
// A fusion group (fusion.h) takes this shape when its nodes, in plan order,
// are
//   mul     Mul of a rank-4 X and a rank-4 S of shape [N or 1, C, 1, 1]
//           (either order), X of the Mul's output shape;
//   conv    a Conv reading mul's output: 2 spatial axes, a constant weight
//           [Co, C, 1, 1], group 1, pads 0, any strides, an optional bias
//           no group member makes;
//   tail    zero or more composable map nodes (fusion.h shape 2's tail).
// The kernel is emit_gemm's (every variant); kernel names start
// "scaledconv_" ("scaledconv_tile64x64+add").
#pragma once

#include <optional>
#include <vector>

#include "engine/base/status.h"
#include "engine/ir/graph.h"
#include "planner/kernel.h"
#include "planner/plan_builder.h"

namespace kiln::planner {

struct FusionGroup;

// The index of the conv (1) when `group` starts with the shape above as far
// as the graph shows (node kinds, links, constant weight); nullopt otherwise.
std::optional<size_t> scaled_conv_index(const ir::Graph& graph, const FusionGroup& group);

// The conv's kernels reading X * S, its output as the builder lays out the
// conv's output tensor (lower_fused lays it out as the group's output).
// Errors: kUnimplemented saying why (the group then runs unfused).
StatusOr<std::vector<KernelDesc>> lower_scaled_conv(PlanBuilder& builder, const ir::Graph& graph,
                                                    const FusionGroup& group);

}  // namespace kiln::planner
