// Attention as ONE kernel: a fusion group (fusion.h) of the shape
//
//   [Mul/Div by a scalar constant]* on A, on B   (the q and k scalings of
//                                                 newer torch exports)
//   S  = MatMul(A, B)                            A [.., M, D], B [.., D, N]
//   [Mul/Div of S by a scalar constant | Add of a tensor broadcast to S |
//    Reshape keeping the last two dims and the number of batch elements]*
//   P  = Softmax(S', axis = last)
//   Y  = MatMul(P, V)                            V [.., N, Dv], Y [.., M, Dv]
//
// runs as `attention_d<D>x<Dv>`: flash attention's online softmax, so the
// [M, N] scores never reach memory. One workgroup per block of query rows
// of one batch element (Y's leading dims, which must be S's), 2 to 16
// invocations per query row (choose_tiling in the .cc); it walks the keys in blocks held in shared
// memory (K and V tiles in fp32), keeping per row the running maximum, the
// running sum and the output accumulator. Every scalar scaling before the
// first Add (on A, on B or on S; a Div is its reciprocal) folds into one
// constant multiplying the dot product; the chain after it runs per score
// in order (bias and mask Adds read with their broadcasting, in the dims of
// the value they add to: after a Reshape, swin's [1, windows, heads, m, n]
// for its shifted-window mask, the batch coordinates are those of the
// reshaped dims). fp32 math for every storage and precision — except in
// fp16 plans on a device with NV cooperative matrices and at least 160
// constant query rows, where `attention_d<D>x<Dv>_coopmat`
// (shaders/attention_coopmat.comp) multiplies Q K^T and P V on the tensor
// cores (fp16 operands and probabilities, fp32 accumulators, the softmax in
// fp32); fusion_attention.cc says when each kernel wins.
//
// The kernel reads A (before its scalings), B, V and the biases only through
// their X_at accessors, so fusion_views.h can read each through an index
// view (vit's Slice -> Reshape -> Transpose chains), and writes Y only
// through Y_st (buffers) / Y_st4 (an image packed on the last axis; any
// other image goes through a row-major scratch buffer and a copy, as the
// GEMMs do). Sequence lengths (M, N) may be symbolic: they are
// specialization or push constants like every dim. D and Dv must be plan-time
// constants of at most kMaxAttentionHeadDim (they size the tiles).
//
// The group's intermediates (S, the chain, P, the scaled A and B) have other
// shapes than the output; fusion_blocker accepts them for this shape only.
#pragma once

#include <optional>
#include <vector>

#include "engine/base/status.h"
#include "engine/ir/graph.h"
#include "planner/lowering.h"
#include "planner/plan_builder.h"

namespace kiln::planner {

struct FusionGroup;

constexpr int64_t kMaxAttentionHeadDim = 128;

// The group's nodes read as the attention shape above.
struct AttentionPattern {
  ir::ValueId a = ir::kNoValue;  // A before its scalings (the query)
  ir::ValueId b = ir::kNoValue;  // B before its scalings (the transposed keys)
  ir::ValueId v = ir::kNoValue;  // the values
  // The product of the scalings before the first Add.
  double scale = 1.0;
  // What follows, in order, per score: a scalar factor or an added tensor.
  struct Step {
    ir::ValueId add = ir::kNoValue;  // kNoValue: multiply by `factor`
    double factor = 1.0;
    // An Add's other operand (`add`) is read in the dims of the scores
    // value it adds to (`frame`: S, or a Reshape of it) and makes `result`.
    ir::ValueId frame = ir::kNoValue;
    ir::ValueId result = ir::kNoValue;
  };
  std::vector<Step> steps;
  ir::NodeId scores = ir::kNoNode;  // MatMul(A, B)
  ir::NodeId softmax = ir::kNoNode;
};

// The pattern when `group`'s nodes (no view nodes: the core of
// fusion_views.h) are exactly this shape as far as the graph shows (ops,
// constants, which operand is which, the softmax axis, ranks); nullopt
// otherwise. Lowering may still refuse (head dims).
std::optional<AttentionPattern> match_attention(const ir::Graph& graph, const FusionGroup& group);

// The attention kernel(s) of a matched group, appended to the builder's
// pending kernels. Errors: kUnimplemented saying why (a head dim that is
// symbolic or larger than kMaxAttentionHeadDim, batch dims of S that are
// not Y's, a grid too large); a lowering's other errors.
Status lower_attention(PlanBuilder& builder, const ir::Graph& graph, const FusionGroup& group,
                       const AttentionPattern& pattern);

}  // namespace kiln::planner
