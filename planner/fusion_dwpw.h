// FCM's DWPW module (papers: "fused convolution modules"): a depthwise conv,
// the elementwise nodes on its output and the 1x1 pointwise conv reading
// them, run as ONE GEMM kernel — the depthwise output never goes to memory.
//
// A fusion group (fusion.h) takes this shape when its nodes, in plan order,
// are
//   dw      Conv with 2 spatial axes, a constant weight [C, 1, kh, kw],
//           group == C == its input's channels (any kernel, stride,
//           dilation, pads: explicit or auto_pad), optional bias;
//   chain   zero or more nodes each lowering to one composable map kernel
//           (fusion.h shape 1: Relu, Clip, Mul by a per-channel scale, ...),
//           reading dw's output and each other (at the element they
//           compute) plus external inputs, all of dw's output shape;
//   pw      Conv reading the last chain node's output (dw's with no chain)
//           as X: constant weight [Co, C, 1, 1], group 1, strides 1,
//           dilations 1, pads 0, optional bias not made by the group;
//   tail    zero or more composable map nodes after pw (fusion.h shape 2's
//           tail: residual Add, Relu, Clip, ...), of pw's output shape.
// No value before pw may be read after it (or outside the group).
//
// The kernel is pw's implicit GEMM (gemm_kernels.h, every variant incl.
// split-K and the image scratch copy; pw's kiln.kernel hint picks tiles)
// with C[img, pixel, out channel] = sum over k < C of A * W where
// gemm_a(img, pixel, k) computes dw's output at (img, k, pixel) on the fly
// (its window loop and bias) and applies the chain as a composed function
// (kiln_prologue); the tail goes through fusion.h's store epilogue. Kernel
// names start "dwpw_" ("dwpw_tile64x64+relu").
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "engine/base/status.h"
#include "engine/ir/graph.h"
#include "planner/kernel.h"
#include "planner/lowering.h"
#include "planner/plan_builder.h"

namespace kiln::planner {

struct FusionGroup;

// A 2D depthwise Conv with a constant weight [C, 1, kh, kw] and group == C
// == its input's channels (any kernel, stride, dilation, pads: explicit or
// auto_pad; optional bias): dw of the DWPW shape above and of the
// depthwise-norm group (fusion_dw_norm.h).
bool is_depthwise_conv(const ir::Graph& graph, const ir::Node& node);

// A depthwise conv computed on the fly by a kernel that reads its output
// instead of the conv writing it: GLSL
//   float <prefix>_conv(int n, int c, int o0, int o1)
// evaluates the conv's output at (n, c, o0, o1) (its window loop and bias)
// from the bindings `tensors` — the conv's input <prefix>X, its weight as
// [kh * kw][C] <prefix>W and bias <prefix>B — and the window parameters
// `params` (<prefix>_KS0, _ST0, _DL0, _PB0, ... ; begin pads of SAME_* are
// expressions of a symbolic input size, evaluated per run).
struct DepthwiseOnTheFly {
  std::vector<KernelTensor> tensors;
  std::vector<KernelParam> params;
  std::string code;
  int64_t window = 1;  // kh * kw: the multiply-adds per output element
  std::array<int64_t, 2> kernel{1, 1}, strides{1, 1}, dilations{1, 1};
};
// `dw` is_depthwise_conv. Errors: kUnimplemented for a tensor of unknown
// rank; malformed window attributes.
StatusOr<DepthwiseOnTheFly> depthwise_on_the_fly(PlanBuilder& builder, const ir::Graph& graph, const ir::Node& dw,
                                                 const std::string& prefix);

// The index of pw in `group.nodes` when the group has the DWPW shape above
// as far as the graph alone shows (ops, attributes, weight shapes, which
// value pw reads); nullopt otherwise. Lowering may still refuse (a chain
// node that is no composable map kernel).
std::optional<size_t> dwpw_pointwise_index(const ir::Graph& graph, const FusionGroup& group);

// The kernels computing pw's output from dw's input (group.nodes[0..pw]),
// not yet in the builder's pending list: the caller adds the tail.
// Errors: kUnimplemented saying why (the group then runs unfused); a
// lowering's other errors.
StatusOr<std::vector<KernelDesc>> lower_dwpw(PlanBuilder& builder, const ir::Graph& graph, const FusionGroup& group,
                                             size_t pw, const LoweringRegistry& lowerings);

}  // namespace kiln::planner
