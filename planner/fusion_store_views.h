// Fusion groups whose anchor writes through data-movement nodes: store-side
// index views (the mirror of fusion_views.h's load-side prologues).
//
// A group anchor -> view nodes -> elementwise tail: the anchor (any node
// epilogue fusion takes, fusion.h shape 2) is followed by a chain of
// Transpose / Reshape / Flatten / Squeeze / Unsqueeze / Identity /
// DepthToSpace / SpaceToDepth nodes (or a Slice or Expand that keeps the
// shape), each
// reading the previous one's output (the first the anchor's) as its input
// 0, each output read only by the next one (the last by the tail), then
// an elementwise tail as in shape 2 that reads the last view's value at the
// element it computes; the group's output has the last view's shape (with
// no tail: the last view's output itself). ViT's out-projection Gemm ->
// Reshape -> Reshape -> Add(residual), ConvNeXt's MatMul -> Add(bias) ->
// Mul(gamma) -> Transpose(0,3,1,2) -> Add(residual) (there the anchor
// part is a shape-2 group itself, MatMul -> Add -> Mul, whose own epilogue
// runs at the anchor's coordinates before the views), swin's window
// reverse (Reshape -> Transpose -> Reshape -> identity Slice).
//
// The anchor is lowered with its own lowering. Every kernel of it that
// writes the anchor's output writes the group's output instead, through a
// *store view* (KernelTensor::view on a written tensor, glsl_codegen.h):
// the kernel keeps addressing the anchor's shape, and each element it
// stores at anchor coordinate c goes to the group output at f(c), where f
// is the view chain's forward map. f is the chain inverted and compiled as
// a load view from the output's shape to the anchor's (index_view.h: a
// Transpose inverts to the inverse permutation, a reshape to the reshape
// back; merged steps, identity groups and strength reduction included),
// so the code generator emits it as it emits a load view. The tail runs at
// f(c) as a store epilogue reading its external inputs at the output's
// coordinates. The view nodes' values get no kernel and no memory.
//
// Stores: a buffer output stores element by element (four lanes of a
// Y_st4 each through f). An image output needs each four-lane Y_st4 of the
// anchor to land on one texel: the output's packed axis must be an anchor
// axis that f passes unchanged (o[packed] = c[a], no other output
// coordinate depending on c[a]); the anchor is then lowered with that axis
// packed, else the group is refused.
//
// Refused, each with its reason (kUnimplemented: the group runs unfused and
// ExecutionPlan::fusion_notes says why): a Slice or Expand among the views
// that is not the identity (a Slice keeping the shape with unit steps, as
// swin's crop after an unpadded window reverse, is one); a view value read outside its chain; a tail node
// reading the anchor or a view before the last; a DWPW anchor part; an
// anchor kernel that reads its output, touches its storage other than
// through Y_st / Y_st4 / Y_index (Y_data, Y_img, Y_texel, ...), aliases it
// or computes it on the host; an image output whose packed axis f moves.
// Load-side prologues compose: fusion_views.h lowers the group without
// them through lower_fused (which sends store-view groups here) and then
// rewrites the bindings of the prologue values, wherever they are bound.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/base/status.h"
#include "engine/ir/graph.h"
#include "planner/fusion.h"
#include "planner/lowering.h"
#include "planner/plan_builder.h"

namespace kiln::planner {

// A group split at its store views: the anchor part (the anchor and, as in
// shape 2, an elementwise tail of its own, before the views), the view
// chain and the tail after it (each in order).
struct StoreViewSplit {
  std::vector<ir::NodeId> anchor_part;
  std::vector<ir::NodeId> views;
  std::vector<ir::NodeId> tail;
};

// The split when `group` has a view node reading, as its input 0, the
// output of a node of the group that is not itself such a view node (a
// store view); nullopt otherwise (fusion_blocker and lower_fused go on as
// without store views).
std::optional<StoreViewSplit> split_store_views(const ir::Graph& graph, const FusionGroup& group);

// Why a group with store views cannot fuse, judged from the graph (empty
// when it may: lower_fused_store_views has the last word).
std::string store_view_blocker(const ir::Graph& graph, const PlanBuilder& builder, const FusionGroup& group,
                               const StoreViewSplit& split);

// Lowers the anchor part (one node, or a shape-2 group through
// lower_fused), then points its stores at the group's output through the
// view chain's forward map and the tail's epilogue. Kernel names:
// "<anchor kernel>+<view ops>+<tail kernel>...". Errors: kUnimplemented
// saying why (the caller plans the nodes unfused); a lowering's others.
Status lower_fused_store_views(PlanBuilder& builder, const ir::Graph& graph, const FusionGroup& group,
                               const StoreViewSplit& split, const LoweringRegistry& lowerings);

// A group with store views that cannot fuse, split into the two groups
// the fusion plugin joined (plugins/fusion: add_store_views): the anchor
// part with the load-side prologues it reads, then the store views (now a
// load-side prologue of the tail) with the tail and its own prologues;
// each in `group`'s order, ids "<id>.anchor" and "<id>.tail". So a group
// refused for an image whose packed axis the chain moves still runs as two
// fused groups, as without store views. nullopt for other groups.
std::optional<std::vector<FusionGroup>> store_view_halves(const ir::Graph& graph, const FusionGroup& group);

}  // namespace kiln::planner
