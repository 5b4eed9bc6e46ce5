// A depthwise conv and the LayerNormalization over its channels as one
// kernel (fusion.h, group shape 6): ConvNeXt's block opens with a 7x7
// depthwise conv, a Transpose to channels-last and a LayerNorm over the
// channels. One kernel computes the conv's output for a few neighbouring
// pixels into shared memory and normalizes each pixel from there, so the
// conv's output never reaches memory and its dispatch is gone. No
// recomputation: each output element is computed once, and nothing else
// reads the conv's output.
//
// A fusion group takes this shape when its nodes, in plan order, are
//   dw      a depthwise Conv (is_depthwise_conv, fusion_dwpw.h);
//   views   view nodes (index_view.h), each reading the one before (dw's
//           output first) as its data;
//   norm    a LayerNormalization reading the last of them, with neither of
//           its optional outputs, scale and bias from outside the group.
// dw's and the views' outputs are read by the next member only.
//
// The kernel (shaders/dw_layer_norm.comp, "fused_depthwise_transpose_
// layer_norm") needs the views to compose to the Transpose [0, 2, 3, 1]
// (channels last), the norm to be over the channels alone with a scale and
// bias of one value per channel, a constant channel count, and the output
// stored four channels at a time (a buffer, or an image packed on them).
// Otherwise the group is refused; it then runs as the conv alone and the
// norm reading its views, as without the group (the shape is also an
// anchor with store views and a tail, which store_view_halves splits so).
#pragma once

#include <string>

#include "engine/base/status.h"
#include "engine/ir/graph.h"
#include "planner/fusion.h"
#include "planner/lowering.h"
#include "planner/plan_builder.h"

namespace kiln::planner {

// Whether `group` has the shape above as far as the node kinds and their
// links show.
bool is_dw_norm_group(const ir::Graph& graph, const FusionGroup& group);

// Why it cannot be one kernel, judged from the graph ("" when it may be):
// a value of unknown rank, or an intermediate read outside the group.
std::string dw_norm_blocker(const ir::Graph& graph, const PlanBuilder& builder, const FusionGroup& group);

// Lowers a dw-norm group: its kernel is appended to the builder's pending
// ones. Errors: kUnimplemented saying why it cannot (the caller runs the
// nodes unfused); a lowering's other errors.
Status lower_dw_norm(PlanBuilder& builder, const ir::Graph& graph, const FusionGroup& group,
                     const LoweringRegistry& lowerings);

}  // namespace kiln::planner
