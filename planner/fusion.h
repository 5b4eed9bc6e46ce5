// Fusion groups: nodes a plugin put into one group with the
// "kiln.fusion_group" annotation (plan_hints.h) run as one kernel (or, for
// an anchor lowered to several kernels, as that anchor's kernels).
//
// What every group must satisfy (fusion_blocker, judged from the graph):
// two or more nodes of the main graph, each with exactly one output of known
// rank (the head may have more, read by nothing: its lowering still computes
// them, e.g. LayerNormalization's Mean and InvStdDev); one group output (the last node's in plan order: a graph output or
// read outside the group); every other node's output has the group output's
// shape (a DWPW group, 3 below: see there) and element type, is read by a
// node of the group and by nothing outside it (no other node, sub-graph or
// graph output).
//
// These group shapes fuse here (lower_fused; attention and store views have
// their own, fusion_attention.h and fusion_store_views.h):
//  1. Elementwise chain: every node lowers to one composable map kernel
//     (Family::kMap, no KernelDesc::params, no extensions, helpers only from
//     elementwise_math.glsl: Relu, Add, Mul, Sigmoid, Clip, Erf, Div, ...).
//     One map kernel "fused_<k1>_<k2>..." computes each node's body for the
//     output element in turn, an intermediate in a local variable, and
//     writes only the output.
//  2. Anchor + elementwise tail (epilogue fusion): the first node in plan
//     order (the anchor) lowers to anything that writes its output only through the
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
//  3. Depthwise-pointwise (FCM's DWPW, fusion_dwpw.h): a depthwise Conv,
//     elementwise nodes on its output, a 1x1 stride-1 unpadded group-1 Conv
//     reading them, then an elementwise tail as in 2: one GEMM (the
//     pointwise conv's; "dwpw_<variant>+<tail>...") whose A operand
//     computes the depthwise output and its chain on the fly. Here the
//     nodes before the pointwise conv have the depthwise output's shape
//     (not the group output's) and are read by nothing after it.
//  4. Row normalization (fusion_row_norm.h): a MatMul or Gemm with its
//     elementwise tail, then a LayerNormalization of that tail's output X
//     over the last axis. The one exception to "one group output": X may
//     also be read outside (a pre-norm transformer's residual stream), by
//     nodes after the LayerNormalization. A split GEMM's reduce pass then
//     stores X and normalizes its rows in one kernel; otherwise the
//     prefix's kernels and the norm's run as without the group.
//  5. Sum of two 1x1 convs (fusion_conv_sum.h): two unpadded 1x1 group-1
//     Convs with constant weights, the Add of their outputs, then an
//     elementwise tail as in 2: one GEMM over the concatenated K ("convsum_"),
//     a ResNet block's projection shortcut and last conv in one kernel.
//  6. Depthwise conv inside a LayerNormalization (fusion_dw_norm.h): a
//     depthwise Conv, view nodes on its output (a Transpose to channels
//     last), then a LayerNormalization over the channels: one kernel
//     computes the conv for a few pixels into shared memory and normalizes
//     them, ConvNeXt's block opening in one kernel.
//  7. Squeeze-and-excitation (fusion_squeeze_excite.h): a GlobalAveragePool,
//     a 1x1 Conv with its elementwise tail, a 1x1 Conv with its tail: the
//     pool's kernel, then one workgroup per image runs both convs from
//     shared memory.
//  8. Scaled conv (fusion_scaled_conv.h): a Mul of a feature map by one
//     value per channel, read only by a 1x1 Conv, then a tail as in 2: the
//     conv's GEMM reads its A operand times the scale ("scaledconv_").
//  9. Normalized GEMM (fusion_norm_gemm.h): a LayerNormalization over the
//     last axis read only by a MatMul with a constant 2-D weight, then a
//     tail as in 2: the MatMul's GEMM computes its tile rows' statistics
//     first and reads the normalized rows ("normmatmul_").
//  Intermediates have the output's shape, so a node reads them exactly at
//  the element it computes; external inputs keep whatever indexing
//  (broadcasting) the node's lowering chose.
//
// A group that breaks a condition runs unfused, node by node as without the
// annotation, and the reason is recorded in ExecutionPlan::fusion_notes. Only
// groups of the main region fuse; a malformed id is an error (plan_hints.h).
#pragma once

#include <functional>
#include <set>
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

// Why `v`, an intermediate of a group whose kernels never store it, cannot
// stay inside: " is read outside the group" when a node `inside` rejects
// reads it (Shape and Size aside: the plan keeps dims), also from a
// sub-graph, or " is a graph output"; "" when neither. Shared by the group
// shapes with their own blockers (fusion_dw_norm.h, fusion_squeeze_excite.h).
std::string outside_reader(const ir::Graph& graph, ir::ValueId v, const std::function<bool(const ir::Node&)>& inside);

// Lowers the group's nodes with their own lowerings and composes their
// kernels (an elementwise chain, an anchor with an elementwise tail or a
// depthwise-pointwise group, see above), appended to the builder's pending
// kernels. Errors: kUnimplemented saying why when the group has none of
// these shapes (the caller undoes what the lowerings added and plans the
// nodes unfused); a lowering's other errors.
Status lower_fused(PlanBuilder& builder, const ir::Graph& graph, const FusionGroup& group,
                   const LoweringRegistry& lowerings);

// A function composed of elementwise nodes (each lowering to one composable
// map kernel), reading the tensor `anchor` as its argument:
//   S <name>(int oc0, ..., int ocR-1, int oi, S kiln_anchor)
// computes the last node's value at the element oc.. (row-major index oi) of
// `anchor`'s shape, where the anchor holds kiln_anchor; the nodes read the
// anchor, each other (at that element) and external inputs, which the
// kernel using the function must bind (their accessors named
// <input_prefix>0, <input_prefix>1, ... skipping names in `taken`).
// Shared by the store epilogue and fusion_dwpw.h's prologue.
struct ElementwiseFunction {
  std::string code;                   // the math helpers it needs, then the function
  std::vector<std::string> sections;  // the helpers' texts (fusion.cc's kMathSections)
  std::vector<KernelTensor> inputs;   // to bind (elementwise = false)
  std::string suffix;                 // "+<kernel>" per node, for kernel names
};
// Errors: kUnimplemented when a node does not lower to one composable map
// kernel or reads a group value other than at the element it computes.
StatusOr<ElementwiseFunction> compose_elementwise(PlanBuilder& builder, const ir::Graph& graph,
                                                  const std::vector<ir::NodeId>& nodes, TensorId anchor,
                                                  const std::string& name, const std::string& input_prefix,
                                                  const std::set<std::string>& taken,
                                                  const LoweringRegistry& lowerings);

// `node` lowered with its own lowering, or `group` by lower_fused: the
// kernels they emitted, taken from the builder's pending ones.
StatusOr<std::vector<KernelDesc>> lower_alone(PlanBuilder& builder, const ir::Graph& graph, const ir::Node& node,
                                              const LoweringRegistry& lowerings);
StatusOr<std::vector<KernelDesc>> lower_fused_kernels(PlanBuilder& builder, const ir::Graph& graph,
                                                      const FusionGroup& group, const LoweringRegistry& lowerings);

// Why the stores of `anchor` in `kernels` (its lowering's) cannot be sent
// elsewhere through a store epilogue, "" when they can: the anchor's output
// is no alias and not computed on the host, and every kernel binding it
// writes it once, at `shape` in `layout`, using none of its accessors but
// the stores, dims and index math (no texel math either for a
// `store_view`, which must also not write through a view already nor have
// an epilogue on another tensor). Every binding's name goes into `taken`.
// Shared by the epilogue (shape 2) and the store views
// (fusion_store_views.h).
std::string anchor_store_blocker(const PlanBuilder& builder, const std::vector<KernelDesc>& kernels, TensorId anchor,
                                 const std::vector<ir::Dim>& shape, const DeviceLayout& layout, bool store_view,
                                 std::set<std::string>& taken);

}  // namespace kiln::planner
