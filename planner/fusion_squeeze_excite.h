// Squeeze-and-excitation in two kernels (fusion.h, group shape 7): the
// global average pool of a feature map, a 1x1 conv to a few hidden units
// with its activation, a 1x1 conv back to the channels with its gate —
// EfficientNet's, RegNetY's and MobileNetV3's per-channel scale. Unfused
// these are three dispatches (the pool, then two GEMVs with their tails,
// each of almost no work: on an H200 ~4.5 us apiece); fused, the pool keeps
// its own kernel, a reduction over the whole device, and one workgroup per
// image runs both convs and their tails from shared memory, so the hidden
// units and the second conv's output never reach memory. No recomputation.
// (The pool in that workgroup too — one dispatch — was measured: on an
// H200 up to 20x slower than the three, one compute unit's loads in flight
// for the whole feature map.)
//
// A fusion group takes this shape when its nodes, in plan order, are
//   pool    a GlobalAveragePool of a rank-4 X [N, C, H, W];
//   fc1     a Conv reading pool's output;
//   tail1   elementwise nodes after fc1 (its activation), possibly none;
//   fc2     a Conv reading the last value of fc1 and tail1;
//   tail2   elementwise nodes after fc2 (the gate), possibly none;
// and each value but the last is read inside the group only.
//
// The kernel (shaders/squeeze_excite.comp) needs both convs 1x1, group 1,
// unpadded, with constant weights [R, C, 1, 1] and [C, R, 1, 1] (C and R
// known at plan time), the tails composable at one element
// (compose_elementwise), subgroup arithmetic and C + R floats of shared
// memory. Otherwise the group is refused and its nodes run unfused.
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
bool is_squeeze_excite_group(const ir::Graph& graph, const FusionGroup& group);

// Why it cannot be one kernel, judged from the graph ("" when it may be):
// a value of unknown rank, or an intermediate read outside the group.
std::string squeeze_excite_blocker(const ir::Graph& graph, const PlanBuilder& builder, const FusionGroup& group);

// Lowers a squeeze-excite group: its kernel is appended to the builder's
// pending ones. Errors: kUnimplemented saying why it cannot (the caller
// runs the nodes unfused); a lowering's other errors.
Status lower_squeeze_excite(PlanBuilder& builder, const ir::Graph& graph, const FusionGroup& group,
                            const LoweringRegistry& lowerings);

}  // namespace kiln::planner
