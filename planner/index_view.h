// Index views: a chain of data-movement ops read as a map of coordinates.
//
// A Transpose, Reshape or Slice copies every element to compute nothing; a
// kernel reading its output can instead read the op's *input* at the
// coordinates the op would have copied from (SmartMem's index comprehension,
// DNNFusion's fusion of reorganize ops into their consumers). An IndexView
// is such a chain — source value -> op -> op -> view value — kept as data:
// the source's shape, the view's shape and one ViewStep per op (adjacent
// Transposes and adjacent reshapes merged). compile_view() turns it into a
// CoordProgram, a straight-line list of integer operations from the view's
// coordinates to the source's; the GLSL code generator emits it as the
// body of the view's X_at accessor (glsl_codegen.h) and
// evaluate_coord_program() runs the very same list on the host, which is
// how the unit tests check it against actually moving the data.
//
// What the program costs per element:
//   * Transpose: nothing (coordinates renamed);
//   * Slice: start + c * step per sliced axis;
//   * Expand: a broadcast axis reads coordinate 0;
//   * a roll (torch.roll as exported: Concat(Slice(x, s..n), Slice(x, 0..s))
//     along one axis): (c + s) mod n as an add and a wrap (a mask when n is
//     a power of two);
//   * Reshape (also Flatten, Squeeze, Unsqueeze, Identity): split into the
//     smallest groups of axes whose extents have equal products (SmartMem's
//     identity, split and merge maps): an identity group passes the
//     coordinate, a merge is a multiply-add chain, a split divides, and only
//     a group that is neither re-linearizes and decomposes. Unit axes
//     vanish. Division and remainder by a constant power of two become a
//     shift and a mask.
//   * DepthToSpace, SpaceToDepth: ONNX's reshape -> transpose -> reshape,
//     composed as such (a split of the block indices off one axis and their
//     merge into another: a shift and a mask each for a power-of-two block).
// Dims stay symbolic: every extent the program needs is a parameter (a
// specialization constant when it is a plan-time constant, a push constant
// otherwise), so the GLSL text depends on the view's structure only and a
// new input shape compiles nothing.
//
// Values only; no locks. Errors are kUnimplemented with the reason (the
// caller runs the ops unfused) or kInvalidArgument for malformed nodes.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/base/status.h"
#include "engine/ir/dim.h"
#include "engine/ir/graph.h"

namespace kiln::planner {

class LoweringContext;

// One op as a map from its output's coordinates to its input's.
struct ViewStep {
  enum class Kind : uint8_t { kTranspose, kReshape, kSlice, kBroadcast, kRotate };
  Kind kind = Kind::kReshape;
  std::vector<ir::Dim> in_shape;   // the op's input (toward the source)
  std::vector<ir::Dim> out_shape;  // the op's output (toward the view)
  // kTranspose: output axis k is input axis perm[k].
  std::vector<int> perm;
  // kSlice, per input axis: input coordinate = start + output coordinate * step.
  // kRotate, per axis: input coordinate = (output coordinate + start) mod extent.
  std::vector<ir::Dim> starts;
  std::vector<int64_t> steps;
};

struct IndexView {
  std::vector<ir::Dim> source_shape;
  std::vector<ir::Dim> shape;   // the view's logical shape
  std::vector<ViewStep> steps;  // in op order: steps[0] reads the source
  // The axis X_at4 reads four elements along (X_VEC); -1: the last axis.
  int vec_axis = -1;

  // The view of `shape` that is the source itself.
  static IndexView identity(std::vector<ir::Dim> shape);
  // Appends an op reading the view's current shape. Each merges with the
  // step before it where it can (two Transposes, two reshapes).
  void transpose(const std::vector<int>& perm);
  void reshape(std::vector<ir::Dim> new_shape);
  void slice(std::vector<ir::Dim> starts, std::vector<int64_t> steps, std::vector<ir::Dim> new_shape);
  // numpy broadcasting to `new_shape`; every input dim must be the
  // constant 1 or the same as the output's (checked by append_view_node).
  void broadcast(std::vector<ir::Dim> new_shape);
  // Element c of `axis` reads element (c + shift) mod n, 0 < shift < n.
  void rotate(int axis, int64_t shift);
  // Appends the steps of `next`, a view whose source shape is this view's
  // shape: the composed view reads through this one, then `next`.
  void append(const IndexView& next);
  // The ops' names for kernel names and notes ("transpose_reshape").
  std::string describe() const;
};

// The length R of the runs the view reads contiguously: for every view
// linear index i that is a multiple of R, the elements i .. i + R - 1 are the
// source's linear indices s .. s + R - 1 with s a multiple of R. Walking from
// the view to the source, a Reshape keeps linear indices; a Transpose keeps
// runs over the trailing axes it leaves in place, a Slice, Expand or roll
// those over the axes after the last one it touches — R is the gcd of those
// blocks' constant parts (vit's attention output read through Transpose
// [1,0,2] and a Reshape to [tokens, heads * d]: R = d). At least 1.
int64_t contiguous_run(const IndexView& view);

// torch.roll along one axis as exported: Concat(Slice(x, s, n), Slice(x, 0,
// s)) along the sliced axis (steps 1, constant bounds, a static extent n,
// 0 < s < n; negative and past-the-end bounds normalized as Slice does):
// element c of the result is x[(c + shift) mod n] along `axis`.
struct Roll {
  ir::ValueId source = ir::kNoValue;
  int axis = 0;
  int64_t shift = 0;
};
std::optional<Roll> roll_of(const ir::Graph& graph, const ir::Node& concat);

// Whether `op` (default domain) is an op append_view_node understands:
// Transpose, Reshape, Flatten, Squeeze, Unsqueeze, Identity, Slice, Expand,
// Gather (only with a constant one-element index: see is_view_node),
// DepthToSpace (DCR and CRD), SpaceToDepth.
bool is_view_op(const std::string& domain, const std::string& op);

// is_view_op() plus what the node's inputs must be for its kind: a Gather
// is a view only when its indices are a constant of one element (torch's
// `qkv[0]`: a Slice of one element along the axis, squeezed when the index
// is a scalar); other gathers read their indices on the device. A Concat is
// a view when it is a roll (roll_of); the view composes from its Slices'
// source, not through append_view_node.
bool is_view_node(const ir::Graph& graph, const ir::Node& node);

// Appends the node of `ctx` (a view op reading the view's current value as
// its input 0) to `view`. Slice needs starts known at plan time (constants or
// shape values) and constant axes and steps; Expand needs every input dim to
// be 1 or the output's; Gather needs a constant one-element index inside the
// axis (a negative one needs the axis' extent at plan time). Errors:
// kUnimplemented saying why otherwise.
Status append_view_node(IndexView& view, LoweringContext& ctx);

// A straight-line integer program: op i defines register i.
struct CoordOp {
  enum class Kind : uint8_t {
    kCoord,  // the view coordinate `index`
    kConst,  // the literal `value`
    kParam,  // the dim params[index]
    kAdd, kMul, kDiv, kMod,  // a op b (non-negative operands)
    kShr, kAnd,              // a >> b, a & b (strength-reduced kDiv, kMod)
    kWrap,                   // a < b ? a : a - b (a mod b for a < 2b)
  };
  Kind kind = Kind::kConst;
  int a = -1, b = -1;
  int64_t value = 0;
  int index = 0;
};

struct CoordProgram {
  std::vector<ir::Dim> params;  // dims the program reads (kParam)
  std::vector<CoordOp> ops;
  std::vector<int> outputs;     // the registers of the source coordinates
  size_t view_rank = 1;         // coordinates it takes (a rank-0 view takes one)
};

// The program of `view`.
CoordProgram compile_view(const IndexView& view);

// Runs `program` on the host: the source coordinates of view coordinates
// `coords`, its params evaluated with `bindings`. Errors: kInvalidArgument
// for an unbound symbol or a division by zero.
StatusOr<std::vector<int64_t>> evaluate_coord_program(const CoordProgram& program, const std::vector<int64_t>& coords,
                                                      const std::map<std::string, int64_t>& bindings = {});

// GLSL statements declaring `int <prefix>r<i>` for every op and ending
// with the source coordinates in `*source_coords` (expressions over the
// view coordinates c0.. and the registers); param j is named param_names[j].
std::string coord_program_glsl(const CoordProgram& program, const std::vector<std::string>& param_names,
                               std::vector<std::string>* source_coords);

}  // namespace kiln::planner
