// TopK (opset 11+): Values and Indices of the K first elements of every row
// along `axis`, in the order of the reference kernel (engine/ops/reduction.cc):
// descending for largest=1, ascending for largest=0, ties by lower index,
// NaN above every number (first when largest, last when smallest).
//
// Two dispatches:
//   1. topk_rank (custom): one invocation per input element counts the
//      elements of its row that come before it in that order — its rank —
//      and, when the rank is below K, stores its index at position `rank` of
//      the Indices row. The order is strict and total, so the ranks of a row
//      are a permutation of 0..n-1 and positions 0..K-1 are each written by
//      exactly one invocation; `sorted` needs no extra work (an unsorted
//      result may be in any order, and this one is sorted).
//   2. topk_gather (map): Values = X at the stored indices, written by the
//      map harness, so Values may be an image or a buffer.
// Indices is int64 in the graph and therefore an int32 buffer on the device
// (integers are never images). K is the output's dim along `axis` — a
// push constant when it is a run-time value — so K's value is never read.
// Work is O(n) per element (O(n^2) per row, parallel over the whole input);
// TopK rows in the models this backend targets are short.
#include <string>
#include <vector>

#include "planner/glsl_codegen.h"
#include "planner/lower_util.h"
#include "planner/lowering.h"
#include "planner/shader_template.h"

namespace kiln::planner {
namespace {

constexpr uint32_t kLocal = 64;

// kiln_before(a, ia, b, ib): element a at row index ia comes before b at ib.
std::string before_helper(bool largest, bool integer) {
  return fill_shader("topk_order.glsl", ShaderArgs()
                                            .set("A", integer ? "int" : "float")
                                            .set("CMP", largest ? ">" : "<")
                                            .set("NAN_FIRST", largest ? "an" : "bn")
                                            .flag("FLOAT", !integer));
}

// "c0, ..., c<rank-1>" with `sub` in place of c<axis>.
std::string coords_with(size_t rank, size_t axis, const std::string& sub) {
  std::vector<std::string> args;
  for (size_t k = 0; k < rank; ++k) args.push_back(k == axis ? sub : "c" + std::to_string(k));
  return join_args(args);
}

Status lower_topk(LoweringContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_input(1)) return ctx.error("TopK needs inputs X and K");
  const std::vector<ir::Dim>& x_shape = ctx.input_shape(0);
  const size_t rank = x_shape.size();
  if (rank == 0) return ctx.error("X must have rank >= 1");
  const auto axis_opt = normalize_axis(ctx.node().attr_int("axis", -1), static_cast<int64_t>(rank));
  if (!axis_opt) return ctx.error("axis is out of range for an input of rank " + std::to_string(rank));
  const size_t axis = static_cast<size_t>(*axis_opt);
  const bool largest = ctx.node().attr_int("largest", 1) != 0;
  const bool want_values = ctx.has_output(0), want_indices = ctx.has_output(1);
  if (!want_values && !want_indices) return ok_status();
  const std::vector<ir::Dim>& out_shape = want_values ? ctx.output_shape(0) : ctx.output_shape(1);
  if (out_shape.size() != rank) return ctx.error("the outputs' rank differs from X's");

  const KernelTensor x = ctx.bind("X", ctx.input(0));
  const bool integer = !is_float(x.layout.type);
  // Indices: the graph output, or a scratch buffer when only Values is used.
  DeviceLayout i32_buffer;
  i32_buffer.type = ElemType::kI32;
  const TensorId idx = want_indices ? ctx.output(1) : ctx.add_temporary(DType::kInt64, out_shape, i32_buffer);
  const KernelTensor iw = ctx.bind("I", idx, true);
  if (iw.layout.storage != Storage::kBuffer || iw.layout.type != ElemType::kI32)
    return ctx.unsupported("the index output is not an int32 buffer");

  const std::string A = integer ? "int" : "float";
  const std::string ax = std::to_string(axis);
  KernelDesc rank_k;
  rank_k.name = "topk_rank";
  rank_k.family = KernelDesc::Family::kCustom;
  rank_k.tensors = {x, iw};
  rank_k.helpers = before_helper(largest, integer);
  rank_k.local_size = {kLocal, 1, 1};
  ir::Dim numel(1);
  for (const ir::Dim& d : x_shape) numel = numel * d;
  const ir::Dim wg = ir::Dim::ceil_div(numel, ir::Dim(static_cast<int64_t>(kLocal)));
  const ir::Dim max_x(static_cast<int64_t>(ctx.target().max_workgroup_count_x));
  rank_k.groups = {ir::Dim::min(wg, max_x), ir::Dim::ceil_div(wg, max_x), ir::Dim(1)};
  std::string coords;
  for (size_t k = rank; k-- > 1;)
    coords += "  int c" + std::to_string(k) + " = kiln_r % X_D" + std::to_string(k) + "; kiln_r /= X_D" +
              std::to_string(k) + ";\n";
  coords += "  int c0 = kiln_r;\n";
  rank_k.body = fill_shader("topk_rank.comp", ShaderArgs()
                                                  .set("LOCAL", kLocal)
                                                  .set("COORDS", coords)
                                                  .set("AXIS", ax)
                                                  .set("A", A)
                                                  .set("AT_I", coords_with(rank, axis, "i"))
                                                  .set("AT_J", coords_with(rank, axis, "j"))
                                                  .set("AT_R", coords_with(rank, axis, "r")));
  rank_k.flops = numel * x_shape[axis];
  ctx.emit(std::move(rank_k));

  if (want_values) {
    KernelTensor ird = ctx.bind("I", idx);
    KernelTensor y = ctx.bind("Y", ctx.output(0), true);
    std::vector<std::string> at;
    for (size_t k = 0; k < rank; ++k) at.push_back("oc" + std::to_string(k));
    at[axis] = "I_at(" + coord_list(rank) + ")";
    ctx.emit(map_kernel("topk_gather", {x, ird, y}, "v = X_at(" + join_args(at) + ");\n"));
  }
  return ok_status();
}

}  // namespace

void register_topk_lowerings(LoweringRegistry& r) { r.add("", "TopK", lower_topk); }

}  // namespace kiln::planner
