// Workgroup-per-row kernels shared by the reduction, normalization and
// global-pooling lowerings (lower_reduction.cc, lower_normalization.cc,
// lower_pooling.cc).
//
// These ops all reduce a tensor X over a set of "region" axes — the reduced
// axes of ReduceSum, the softmax axis, the normalized axes of LayerNorm — and
// either store one value per row (reductions) or rewrite every element of
// the row from its statistics (softmax, normalizations). A RowSpace splits
// X's axes into *groups* (one workgroup each) and *items* (the elements of a
// row, strided over the workgroup's threads). Each item is a vec4 of four
// lanes adjacent along one "lane axis" of X, chosen so that the output is
// written with whole-texel Y_st4 stores on either storage:
//   * lanes outside the region: a group is four neighbouring rows and every
//     lane has its own statistics (softmax over W of an NCHW image packed
//     on C: four channels per workgroup, vec4 arithmetic);
//   * lanes inside the region: a group is one row, an item is four
//     consecutive elements of it, and the lanes are folded into one value at
//     the end (LayerNorm over the packed/last axis);
//   * no lane axis (-1): one row per group, lane 0 only.
// Threads accumulate in float (int for integer tensors) and combine through
// shared memory, or subgroup arithmetic where the target has it.
//
// Internal to the planner; stateless helpers, thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/ir/dim.h"
#include "planner/kernel.h"
#include "planner/lowering.h"
#include "planner/target.h"

namespace kiln::planner::rows {

// Axis k of `t` that its accessors treat as the vector axis (glsl_codegen.h).
int vec_axis(const KernelTensor& t);

struct RowSpace {
  std::vector<ir::Dim> shape;  // X's shape (rank >= 1)
  std::vector<bool> region;    // per axis: reduced / normalized over
  int lane_axis = -1;          // axis of X the four lanes run along, or -1

  bool lanes_in_row() const { return lane_axis >= 0 && region[static_cast<size_t>(lane_axis)]; }
  bool blocked(size_t k) const { return static_cast<int>(k) == lane_axis; }
  // Workgroups: product of the non-region extents (the lane axis in blocks of 4 when outside the region).
  ir::Dim groups() const;
  // Items per group: product of the region extents (the lane axis in blocks of 4 when inside).
  ir::Dim items() const;
  // Elements per row: product of the region extents.
  ir::Dim row_size() const;
};

// GLSL statements declaring `int g<k>` for every non-region axis from
// `kiln_group`; `t` names the tensor whose dims (t_D<k>) are X's shape.
std::string group_coords(const RowSpace& s, const std::string& t);
// GLSL statements declaring `int c<k>` for every axis: non-region axes from
// g<k>, region axes decomposed from the int expression `item`.
std::string item_coords(const RowSpace& s, const std::string& t, const std::string& item);
// "c0, c1, ..." for `rank` axes (at least one).
std::string coords(size_t rank, const std::string& prefix = "c");

// A helper `V kiln_<fn>(int c0..)` loading the four lanes of tensor `x` at
// c (c[lane_axis] a multiple of 4) with lanes past the end reading 0; with
// no lane axis only lane 0 is read. Lanes along x's vector axis are read
// with x_load4 (one vector load where x's memory allows, map_vector.h).
std::string load4_helper(const KernelTensor& x, int lane_axis, const std::string& fn = "x4");
// Lanes of the current item inside the tensor: a bvec4 expression (all true
// unless the lanes run inside the row).
std::string lane_ok(const RowSpace& s, const std::string& t);

enum class Combine { kSum, kProd, kMax, kMin };
// GLSL helpers combining a per-thread vec4 (ivec4 when `integer`) across the
// workgroup: kiln_wg_sum / _prod / _max / _min for the requested combines,
// every invocation gets the result. Max/min propagate NaN. They use the
// shared array kiln_red (declared here) and must be called in uniform
// control flow. `local` is the workgroup size (a power of two).
std::string workgroup_helpers(const std::vector<Combine>& combines, bool integer, uint32_t local, bool subgroups);
// NaN-propagating componentwise max/min of two vec4 (kiln_max4, kiln_min4)
// and their scalar forms (kiln_max1, kiln_min1); ints use max/min.
std::string minmax_helpers(bool integer);
// Statements combining each invocation's best (value, index) per lane, `V
// bv` and `ivec4 bi`, across the workgroup by `kiln_better(v, i, b, bi)`
// (helpers the caller defines, with `shared V kiln_rv[local]` and `shared
// ivec4 kiln_ri[local]`): afterwards kiln_rv[0] and kiln_ri[0] hold the
// winners. V is ivec4 when `integer`. Uniform control flow.
std::string arg_reduce(bool integer, uint32_t local);
// The extensions workgroup_helpers needs when `subgroups`.
std::vector<std::string> subgroup_extensions();

// A power-of-two workgroup size for rows of `items` items.
uint32_t choose_local_size(const ir::Dim& items, const TargetInfo& target);

// Starts a kCustom kernel over `groups` workgroups of `local` threads: a 2D
// grid that respects the device's group-count limit and the params
// KILN_GROUPS, KILN_ITEMS and KILN_ROW (elements per row). Its body is
// row_main().
KernelDesc row_kernel(std::string name, const RowSpace& s, uint32_t local, const TargetInfo& target);
// The kernel's main(): `int kiln_group`, the early return of surplus
// groups, `int kiln_tid`, the group coordinates (group_coords over tensor
// `t`), then the statements `body` (shaders/rows_main.comp).
std::string row_main(const RowSpace& s, const std::string& t, const std::string& body);
// "for (int kiln_j = kiln_tid; kiln_j < KILN_ITEMS; kiln_j += <local>) {" + item coordinates.
std::string item_loop(const RowSpace& s, const std::string& t, uint32_t local);

// How many items each of `local` invocations holds when a kernel keeps its
// items in registers between passes (a row read from memory once): the
// most any invocation gets, when the item count is a plan-time constant and
// that is at most kMaxCachedItems; else 0 (the passes read X each time).
constexpr int kMaxCachedItems = 8;
int cached_items(const RowSpace& s, uint32_t local);
// The loop head over the invocation's items for a kernel caching `cached`
// of them: a constant-trip loop over `int kiln_k` (the register index, so
// that kiln_xs[kiln_k] stays in registers once unrolled) that stops at the
// row's end, then the item coordinates like item_loop's.
std::string cached_item_loop(const RowSpace& s, const std::string& t, uint32_t local, int cached);

}  // namespace kiln::planner::rows

namespace kiln::planner::rows {

// What a reduction computes per row (ONNX Reduce* and the global pools).
enum class ReduceKind { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSumExp, kSumSquare, kLp };

// Lowers output 0 = reduction of input 0 over the axes in `mask` (one flag
// per input axis; all false is not allowed), keeping reduced axes as 1 when
// `keepdims`. `p` is the exponent of kLp. Defined in lower_reduction.cc;
// used by the global pools. Errors: ctx.unsupported for integer tensors
// with kinds that need float arithmetic.
Status lower_reduce(LoweringContext& ctx, ReduceKind kind, const std::vector<bool>& mask, bool keepdims,
                    double p = 2.0);

}  // namespace kiln::planner::rows
