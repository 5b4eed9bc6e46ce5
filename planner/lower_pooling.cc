// Device lowerings of the pooling family: MaxPool, AveragePool, LpPool
// (1 to 3 spatial axes; kernel_shape, strides, dilations, pads, auto_pad,
// ceil_mode, count_include_pad) and GlobalAveragePool / GlobalMaxPool /
// GlobalLpPool.
//
// The global pools are reductions over the spatial axes and share the
// workgroup-per-row kernel of the Reduce* ops (lower_rows.h). Windowed pools
// are map kernels: each output element walks its window, skipping taps in
// the padding, as the reference does (engine/ops/pooling.cc): padding never
// takes part in a max or an Lp norm, AveragePool counts it only with
// count_include_pad and then only the explicit padding, not the overhang
// that ceil_mode adds. Pads are plan dims (SAME_* pads are expressions of a
// symbolic input size), so one kernel serves every input shape.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/ops/window_util.h"
#include "planner/lower_rows.h"
#include "planner/lower_util.h"
#include "planner/lowering.h"
#include "planner/shader_template.h"

namespace kiln::planner {
namespace {

enum class Pool { kMax, kAverage, kLp };

// Begin and end pads of one spatial axis as dims (window_pads of
// window_util.h, written over dims so a symbolic input size works).
std::pair<ir::Dim, ir::Dim> pads_of(const ops::WindowAttrs& w, size_t axis, const ir::Dim& in) {
  const size_t n = w.strides.size();
  if (w.auto_pad == ops::AutoPad::kSameUpper || w.auto_pad == ops::AutoPad::kSameLower) {
    const int64_t stride = w.strides[axis];
    const int64_t eff = (w.kernel[axis] - 1) * w.dilations[axis] + 1;
    const ir::Dim out = ir::Dim::ceil_div(in, ir::Dim(stride));
    const ir::Dim total = ir::Dim::max(ir::Dim(0), (out - ir::Dim(1)) * ir::Dim(stride) + ir::Dim(eff) - in);
    const ir::Dim half = ir::Dim::floor_div(total, ir::Dim(2));
    if (w.auto_pad == ops::AutoPad::kSameUpper) return {half, total - half};
    return {total - half, half};
  }
  if (w.auto_pad == ops::AutoPad::kValid) return {ir::Dim(0), ir::Dim(0)};
  return {ir::Dim(w.pads[axis]), ir::Dim(w.pads[axis + n])};
}

// The vec4 form of a pool whose X and Y keep channels (axis 1) four to a
// texel: the window walk `open`/`close` and setup `setup` as the scalar form
// builds them, with the accumulator and the loads widened to vec4.
Status emit_vec4(LoweringContext& ctx, KernelDesc d, const std::string& setup, const std::string& open,
                 const std::string& close, const std::string& args, Pool pool, int64_t p, const std::string& padded) {
  const KernelTensor& y = d.tensors[1];
  const size_t rank = y.shape.size();
  std::string step;
  switch (pool) {
    case Pool::kMax: step = "acc = kiln_max4(acc, x);"; break;
    case Pool::kAverage: step = "acc += x;"; break;
    case Pool::kLp:
      step = p == 1 ? "acc += abs(x);" : p == 2 ? "acc += x * x;" : "acc += pow(abs(x), vec4(" + glsl_float(p) + "));";
      break;
  }
  std::string result;
  switch (pool) {
    case Pool::kMax: result = "acc"; break;
    case Pool::kAverage:
      result = "(" + (padded.empty() ? std::string("cnt") : padded) +
               " > 0 ? acc / float(" + (padded.empty() ? std::string("cnt") : padded) +
               ") : vec4(uintBitsToFloat(0x7fc00000u)))";
      break;
    case Pool::kLp:
      result = p == 1 ? "acc" : p == 2 ? "sqrt(acc)" : "pow(acc, vec4(" + glsl_float(1.0 / double(p)) + "))";
      break;
  }
  std::string coords;
  for (size_t k = rank; k-- > 0;) {
    const std::string e = k == 1 ? "((Y_D1 + 3) >> 2)" : "Y_D" + std::to_string(k);
    coords += "  int oc" + std::to_string(k) + " = kiln_r % " + e + "; kiln_r /= " + e + ";\n";
  }
  std::string b = fill_shader("pool_vec4.comp", ShaderArgs()
                                                    .set("COORDS", coords)
                                                    .set("SETUP", setup)
                                                    .set("INIT", pool == Pool::kMax ? glsl_float(-INFINITY) : "0.0")
                                                    .set("OPEN", open)
                                                    .set("ARGS", args)
                                                    .set("STEP", step)
                                                    .set("CLOSE", close)
                                                    .set("Y_COORDS", coord_list(rank))
                                                    .set("RESULT", result));
  ir::Dim texels = ir::Dim::ceil_div(y.shape[1], ir::Dim(4));
  for (size_t k = 0; k < rank; ++k)
    if (k != 1) texels = texels * y.shape[k];
  d.family = KernelDesc::Family::kCustom;
  d.name = "pool_vec4";
  d.body = std::move(b);
  d.local_size = {64, 1, 1};
  const ir::Dim groups = ir::Dim::ceil_div(texels, ir::Dim(64));
  const ir::Dim max_x(static_cast<int64_t>(ctx.target().max_workgroup_count_x));
  d.groups = {ir::Dim::min(groups, max_x), ir::Dim::ceil_div(groups, max_x), ir::Dim(1)};
  d.params.push_back({"KILN_TEXELS", texels});
  ctx.emit(std::move(d));
  return ok_status();
}

// MaxPool with its Indices output (flat indices into X, row-major or, with
// storage_order=1, column-major over the spatial axes; -1 for a window
// wholly in the padding): one invocation per texel of Y, one window per
// lane, values stored with Y_st4 and indices (an int buffer) one by one.
Status emit_with_indices(LoweringContext& ctx, KernelDesc d, const std::string& setup, const std::string& open,
                         const std::string& close, const std::string& args, const std::string& init,
                         bool column_major) {
  KernelTensor i = ctx.bind("I", ctx.output(1), true);
  if (i.layout.storage != Storage::kBuffer || i.layout.type != ElemType::kI32)
    return ctx.unsupported("the Indices output is not an int32 buffer");
  const KernelTensor& y = d.tensors[1];
  const size_t rank = y.shape.size();
  const int a = rows::vec_axis(y);
  std::string out_index = "oc0";  // row-major over Y's (and I's) dims
  for (size_t k = 1; k < rank; ++k) out_index = "(" + out_index + ") * Y_D" + std::to_string(k) + " + oc" + std::to_string(k);
  // The flat index of the tap (oc0, oc1, i0, i1, ...) in X.
  std::string index;
  if (!column_major) {
    index = "oc0 * X_D1 + oc1";
    for (size_t k = 2; k < rank; ++k) index = "(" + index + ") * X_D" + std::to_string(k) + " + i" + std::to_string(k - 2);
  } else {
    std::string plane = "1", col = "0";
    for (size_t k = 2; k < rank; ++k) {
      col += " + i" + std::to_string(k - 2) + " * " + plane;
      plane += " * X_D" + std::to_string(k);
    }
    index = "(oc0 * X_D1 + oc1) * (" + plane + ") + " + col;
  }
  std::string coords;
  for (size_t k = rank; k-- > 0;) {
    const std::string e = static_cast<int>(k) == a ? "((Y_D" + std::to_string(k) + " + 3) >> 2)" : "Y_D" + std::to_string(k);
    coords += "  int b" + std::to_string(k) + " = kiln_r % " + e + "; kiln_r /= " + e + ";\n";
  }
  std::string lane_coords;
  for (size_t k = 0; k < rank; ++k)
    lane_coords += "    int oc" + std::to_string(k) + " = b" + std::to_string(k) +
                   (static_cast<int>(k) == a ? " + lane" : "") + ";\n";
  std::string b = fill_shader("pool_max_indices.comp", ShaderArgs()
                                                           .set("COORDS", coords)
                                                           .set("VEC_AXIS", a)
                                                           .set("LANE_COORDS", lane_coords)
                                                           .set("INIT", init)
                                                           .set("SETUP", setup)
                                                           .set("OPEN", open)
                                                           .set("ARGS", args)
                                                           .set("INDEX", index)
                                                           .set("CLOSE", close)
                                                           .set("OUT_INDEX", out_index)
                                                           .set("B_COORDS", coord_list(rank, "b")));
  ir::Dim texels = ir::Dim::ceil_div(y.shape[static_cast<size_t>(a)], ir::Dim(4));
  for (size_t k = 0; k < rank; ++k)
    if (static_cast<int>(k) != a) texels = texels * y.shape[k];
  d.tensors.push_back(std::move(i));
  d.family = KernelDesc::Family::kCustom;
  d.name = "maxpool_indices";
  d.body = std::move(b);
  d.local_size = {64, 1, 1};
  const ir::Dim groups = ir::Dim::ceil_div(texels, ir::Dim(64));
  const ir::Dim max_x(static_cast<int64_t>(ctx.target().max_workgroup_count_x));
  d.groups = {ir::Dim::min(groups, max_x), ir::Dim::ceil_div(groups, max_x), ir::Dim(1)};
  d.params.push_back({"KILN_TEXELS", texels});
  ctx.emit(std::move(d));
  return ok_status();
}

template <Pool P>
Status lower_pool(LoweringContext& ctx) {
  const std::vector<ir::Dim>& xs = ctx.input_shape(0);
  if (xs.size() < 3 || xs.size() > 5) return ctx.unsupported("pooling over other than 1 to 3 spatial axes");
  const size_t spatial = xs.size() - 2;
  KILN_ASSIGN_OR_RETURN(const ops::WindowAttrs w, ops::read_window_attrs(ctx.node(), spatial, true));
  const bool include_pad = ctx.node().attr_int("count_include_pad", 0) != 0;
  const int64_t p = ctx.node().attr_int("p", 2);
  if (P == Pool::kLp && p < 1) return ctx.error("p must be >= 1");

  KernelTensor x = ctx.bind("X", ctx.input(0));
  KernelTensor y = ctx.bind("Y", ctx.output(0), true);
  const bool integer = !is_float(x.layout.type);
  if (integer && P != Pool::kMax) return ctx.error("integer input to a float-only pool");
  // Channels packed four to a texel in both X and Y (images): one invocation
  // pools four channels at once with vec4 loads; else the map harness, one
  // output element per lane.
  const bool vec4 = rows::vec_axis(y) == 1 && rows::vec_axis(x) == 1 && !integer;
  KernelDesc d = map_kernel("pool", {x, y}, "", rows::minmax_helpers(integer));

  std::string init = "0.0";
  if (P == Pool::kMax) {
    // The max of a window wholly in the padding (possible with dilation):
    // -inf for floats, the dtype's lowest for integers, as the reference.
    const DType dt = ctx.input_dtype(0);
    init = !integer ? glsl_float(-INFINITY) : dt == DType::kUInt8 ? "0" : dt == DType::kInt8 ? "(-128)" : glsl_int(INT32_MIN);
  }
  const std::string A = integer ? "int" : "float";
  std::string b = "int cnt = 0;\n";
  std::string open, close, args = "oc0, oc1";
  std::string padded_count = "1";
  for (size_t i = 0; i < spatial; ++i) {
    const std::string s = std::to_string(i), ax = std::to_string(i + 2);
    const auto [pb, pe] = pads_of(w, i, xs[i + 2]);
    d.params.push_back({"KS" + s, ir::Dim(w.kernel[i])});
    d.params.push_back({"ST" + s, ir::Dim(w.strides[i])});
    d.params.push_back({"DL" + s, ir::Dim(w.dilations[i])});
    d.params.push_back({"PB" + s, pb});
    d.params.push_back({"PE" + s, pe});
    b += "int s" + s + " = oc" + ax + " * ST" + s + " - PB" + s + ";\n";
    open += "for (int k" + s + " = 0; k" + s + " < KS" + s + "; ++k" + s + ") {\n  int i" + s + " = s" + s + " + k" + s +
            " * DL" + s + ";\n  if (i" + s + " < 0 || i" + s + " >= X_D" + ax + ") continue;\n";
    close += "}\n";
    args += ", i" + s;
    if (P == Pool::kAverage && include_pad) {
      // Taps inside the explicitly padded extent [-PB, in + PE).
      b += "int n" + s + " = 0;\nfor (int k = 0; k < KS" + s + "; ++k) { int i = s" + s + " + k * DL" + s +
           "; n" + s + " += (i >= -PB" + s + " && i < X_D" + ax + " + PE" + s + ") ? 1 : 0; }\n";
      padded_count += " * n" + s;
    }
  }
  if (P == Pool::kMax && ctx.has_output(1)) {
    if (integer) return ctx.unsupported("Indices of an integer MaxPool");
    return emit_with_indices(ctx, std::move(d), b, open, close, args, init,
                             ctx.node().attr_int("storage_order", 0) != 0);
  }
  if (vec4) return emit_vec4(ctx, std::move(d), b, open, close, args, P, p, include_pad ? padded_count : "");
  b = A + " acc = " + init + ";\n" + b;
  std::string step;
  switch (P) {
    case Pool::kMax: step = "acc = kiln_max1(acc, x);"; break;
    case Pool::kAverage: step = "acc += x;"; break;
    case Pool::kLp:
      step = p == 1 ? "acc += abs(x);" : p == 2 ? "acc += x * x;" : "acc += pow(abs(x), " + glsl_float(p) + ");";
      break;
  }
  b += open + "  " + A + " x = X_at(" + args + ");\n  " + step + "\n  ++cnt;\n" + close;
  switch (P) {
    case Pool::kMax: b += "v = acc;"; break;
    case Pool::kAverage: {
      const std::string count = include_pad ? padded_count : "cnt";
      b += "int count = " + count + ";\nv = count > 0 ? acc / float(count) : uintBitsToFloat(0x7fc00000u);";
      break;
    }
    case Pool::kLp:
      b += p == 1 ? "v = acc;" : p == 2 ? "v = sqrt(acc);" : "v = pow(acc, " + glsl_float(1.0 / double(p)) + ");";
      break;
  }
  d.body = "{\n" + b + "\n}";
  ctx.emit(std::move(d));
  return ok_status();
}

template <rows::ReduceKind K>
Status lower_global_pool(LoweringContext& ctx) {
  const size_t rank = ctx.input_shape(0).size();
  if (rank < 2) return ctx.error("global pooling needs an input of shape [N, C, ...]");
  if (rank == 2) {
    // No spatial axes: every window is one element.
    KernelTensor x = ctx.bind("X", ctx.input(0));
    KernelTensor y = ctx.bind("Y", ctx.output(0), true);
    std::string v = "X_at(oc0, oc1)";
    if (K == rows::ReduceKind::kLp) v = "abs(" + v + ")";
    ctx.emit(map_kernel("global_pool_copy", {x, y}, "v = " + v + ";"));
    return ok_status();
  }
  std::vector<bool> mask(rank, true);
  mask[0] = mask[1] = false;
  const int64_t p = ctx.node().attr_int("p", 2);
  if (K == rows::ReduceKind::kLp && p < 1) return ctx.error("p must be >= 1");
  return rows::lower_reduce(ctx, K, mask, true, static_cast<double>(p));
}

}  // namespace

void register_pooling_lowerings(LoweringRegistry& r) {
  r.add("", "MaxPool", lower_pool<Pool::kMax>);
  r.add("", "AveragePool", lower_pool<Pool::kAverage>);
  r.add("", "LpPool", lower_pool<Pool::kLp>);
  r.add("", "GlobalAveragePool", lower_global_pool<rows::ReduceKind::kMean>);
  r.add("", "GlobalMaxPool", lower_global_pool<rows::ReduceKind::kMax>);
  r.add("", "GlobalLpPool", lower_global_pool<rows::ReduceKind::kLp>);
}

}  // namespace kiln::planner
