// A LayerNormalization folded into the MatMul that alone reads it: a
// pre-norm block's norm -> first Linear (ConvNeXt's LayerNorm -> pwconv1,
// a transformer's norm -> MLP). The norm's output
//   A[m, k] = (X[m, k] - mean_m) * inv_m * gamma[k] + beta[k]
// (mean_m, inv_m = 1 / sqrt(var_m + epsilon) over row m's K elements) is
// exactly what the GEMM reads as its A operand, so its rows are normalized
// where they are staged: each workgroup first computes the statistics of
// its tile's rows (GemmProblem::row_prologue, in shared memory), then runs
// the GEMM with gemm_a normalizing each element it reads. The normalized
// tensor never reaches memory and the norm's dispatch is gone; the price
// is the statistics pass over the tile's rows, once per column tile of the
// GEMM (AGO's intensive fusion of a reduction into the complex op that
// reads it).
//
// A fusion group (fusion.h) takes this shape when its nodes, in plan order,
// are
//   norm    a LayerNormalization over its input's last axis (rank >= 2),
//           one output, its scale (and bias) of that axis's K elements and
//           made by no member;
//   matmul  a MatMul reading norm's output as A and a constant 2-D B [K, N];
//   tail    zero or more composable map nodes (fusion.h shape 2's tail),
//           none reading norm's output.
// The kernel is emit_gemm's (tiled or tensor-core, split-K or not; never a
// GEMV: every row needs its statistics); kernel names start "normmatmul_"
// ("normmatmul_coopmat32x64+add+div+erf+add+mul+mul"). The group may start
// with view nodes (fusion_views.h): ConvNeXt's norm reads its input
// through a channels-last Transpose, which the kernel then reads through
// the view by coordinates.
#pragma once

#include <optional>
#include <vector>

#include "engine/base/status.h"
#include "engine/ir/graph.h"
#include "planner/kernel.h"
#include "planner/plan_builder.h"

namespace kiln::planner {

struct FusionGroup;

// The index of the MatMul (1) when `group` starts with the shape above as
// far as the graph shows (node kinds, links, a constant 2-D B, the tail not
// reading the norm); nullopt otherwise.
std::optional<size_t> norm_gemm_index(const ir::Graph& graph, const FusionGroup& group);

// The MatMul's kernels reading the normalized rows, its output as the
// builder lays out the MatMul's output tensor (lower_fused lays it out as
// the group's output).
// Errors: kUnimplemented saying why (the group then runs unfused).
StatusOr<std::vector<KernelDesc>> lower_norm_gemm(PlanBuilder& builder, const ir::Graph& graph,
                                                  const FusionGroup& group);

}  // namespace kiln::planner
