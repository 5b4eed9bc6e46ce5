// Two 1x1 convolutions whose outputs are added, as ONE GEMM: a residual
// block's projection shortcut (ResNet's and ResNeXt's downsample conv)
// summed with the block's last 1x1 conv. AGO's intensive fusion of two
// complex ops that share their output: since
//   Add(Conv(X0, W0) + B0, Conv(X1, W1) + B1)[n, co, p]
//     = sum_k [X0 | X1](n, k, p) * [W0 | W1](k, co) + B0[co] + B1[co],
// the pair is one implicit GEMM over the concatenated K = C0 + C1, whose
// A operand reads X0 for k < C0 and X1 past it (each at its own stride)
// and whose B is the two weights stacked. Neither conv's output reaches
// memory, and one kernel (or one split-K pair) replaces two.
//
// A fusion group (fusion.h) takes this shape when its nodes, in plan order,
// are
//   c0, c1  Convs with 2 spatial axes, constant weights [Co, Ci, 1, 1]
//           (the same Co, the same element type on the device), group 1,
//           pads 0 (explicit; auto_pad NOTSET or VALID), any strides and
//           dilations, optional biases no group member makes, outputs of
//           one shape;
//   add     Add reading the two outputs (either order);
//   tail    zero or more composable map nodes after it (fusion.h shape 2's
//           tail: Relu, ...), of the Add's output shape, none reading c0's
//           or c1's output.
// The kernel is emit_gemm's (every variant: tiled, split-K, GEMV,
// cooperative matrix, the image scratch copy; the Add's kiln.kernel hint
// picks tiles); the tail goes through fusion.h's store epilogue. Kernel
// names start "convsum_" ("convsum_tile64x64+relu").
#pragma once

#include <optional>
#include <vector>

#include "engine/base/status.h"
#include "engine/ir/graph.h"
#include "planner/kernel.h"
#include "planner/plan_builder.h"

namespace kiln::planner {

struct FusionGroup;

// c0 / c1 above: a 2-D 1x1 group-1 unpadded Conv with a constant weight
// [Co, Ci, 1, 1] (also what fusion_scaled_conv.h and
// fusion_squeeze_excite.h fold).
bool is_unpadded_1x1_conv(const ir::Graph& graph, const ir::Node& node);

// Whether `group` has the shape above as far as the graph alone shows: the
// index of the Add in group.nodes (2), or nullopt.
std::optional<size_t> conv_sum_add_index(const ir::Graph& graph, const FusionGroup& group);

// The kernels computing the Add's output from the two convs' inputs, not
// yet in the builder's pending list (the caller adds the tail). Errors:
// kUnimplemented saying why (the group then runs unfused); a lowering's
// other errors.
StatusOr<std::vector<KernelDesc>> lower_conv_sum(PlanBuilder& builder, const ir::Graph& graph,
                                                 const FusionGroup& group);

}  // namespace kiln::planner
