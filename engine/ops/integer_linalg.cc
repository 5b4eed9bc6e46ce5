// MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv: schemas, shape
// inference and reference kernels (see quantization.h).
//
// Every one subtracts the zero points from its int8/uint8 operands, forms
// the products in int32 (wrapping modulo 2^32 as numpy's int32 arithmetic
// does; convolution padding contributes zero, i.e. pads with the zero
// point), and for the QLinear forms adds the int32 bias and requantizes
// each accumulator `acc` exactly as ONNX's reference does in numpy:
//   multiplier = float32(float32(a_scale * b_scale) / y_scale)
//   y = saturate(rint(double(acc) * double(multiplier) + y_zero_point))
// with the scales per tensor, per row of A / per column of B (QLinearMatMul)
// or per output channel (QLinearConv's w_scale).
//
// Where a zero point or scale applies:
//   A side (MatMulInteger a_zero_point, QLinearMatMul a_scale/a_zero_point/
//   y_scale/y_zero_point): one value, or one per row of A ([M], read as
//   [M, 1]), or an N-D tensor that broadcasts to A ([D1, D2, M, 1]);
//   B side (b_*): one value, one per column ([N]) or N-D broadcasting to B;
//   ConvInteger/QLinearConv: x_zero_point one value, w_zero_point/w_scale one
//   value or one per output channel.
// Shapes reuse MatMul's and Conv's inference (attributes included). The
// integer products run in parallel over output rows / channel planes.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <vector>

#include "engine/ops/broadcast.h"
#include "engine/ops/conv_direct.h"
#include "engine/ops/gemm_kernel.h"
#include "engine/ops/linalg_internal.h"
#include "engine/ops/op_registry.h"
#include "engine/ops/quantization.h"

namespace kiln::ops {
namespace {

std::string dt_name(DType t) { return std::string(dtype_name(t)); }

// Output shape from a float op's inference (MatMul, Conv) run on the given
// inputs of this node, as if they were float32.
StatusOr<ir::SymShape> shape_as_float_op(const InferContext& ctx, const std::vector<size_t>& inputs, InferFn fn) {
  std::vector<ValueInfo> infos;
  for (size_t i : inputs) {
    ValueInfo v;
    if (ctx.has_input(i)) {
      v.dtype = DType::kFloat32;
      v.shape = ctx.input_shape(i);
    }
    infos.push_back(std::move(v));
  }
  InferContext sub(ctx.node(), std::move(infos), 1);
  KILN_RETURN_IF_ERROR(fn(sub));
  return sub.outputs()[0].shape;
}

Status check_quant_input(const InferContext& ctx, size_t i, const char* what) {
  const DType t = ctx.input_dtype(i);
  if (!is_quant_type(t, false))
    return unimplemented(ctx.node().describe() + ": " + what + " has dtype " + dt_name(t) +
                         "; Kiln supports int8 and uint8");
  return ok_status();
}

Status check_zero_point(const InferContext& ctx, size_t zp, size_t of, const char* what) {
  if (ctx.has_input(zp) && ctx.input_dtype(zp) != ctx.input_dtype(of))
    return ctx.error(std::string(what) + " has dtype " + dt_name(ctx.input_dtype(zp)) + " but its operand has " +
                     dt_name(ctx.input_dtype(of)));
  return ok_status();
}

Status check_float_scales(const InferContext& ctx, const std::vector<size_t>& scales) {
  for (size_t i : scales)
    if (ctx.input_dtype(i) != DType::kFloat32)
      return ctx.error("scale input " + std::to_string(i) + " has dtype " + dt_name(ctx.input_dtype(i)) +
                       "; expected float32");
  return ok_status();
}

// --- shared shape inference -------------------------------------------------------

// The inputs of QLinearMatMul, and of QLinearConv with its x and w in the
// places of a and b and its int32 bias B last.
enum QLinearInput : size_t { kA = 0, kAScale, kAZero, kB, kBScale, kBZero, kYScale, kYZero, kBias };

// "a_zero_point" for operand "A" or "a".
std::string zero_point_name(const char* operand) {
  return std::string(1, static_cast<char>(std::tolower(static_cast<unsigned char>(operand[0])))) + (operand + 1) +
         "_zero_point";
}

// MatMulInteger and ConvInteger: int8/uint8 operands 0 and 1 (named `a` and
// `b` in errors) with optional zero points 2 and 3 of the same dtypes; the
// shape is the float op's (`float_infer`), the output int32.
Status integer_op_infer(InferContext& ctx, const char* a, const char* b, InferFn float_infer) {
  KILN_RETURN_IF_ERROR(check_quant_input(ctx, 0, a));
  KILN_RETURN_IF_ERROR(check_quant_input(ctx, 1, b));
  KILN_RETURN_IF_ERROR(check_zero_point(ctx, 2, 0, zero_point_name(a).c_str()));
  KILN_RETURN_IF_ERROR(check_zero_point(ctx, 3, 1, zero_point_name(b).c_str()));
  KILN_ASSIGN_OR_RETURN(ir::SymShape out, shape_as_float_op(ctx, {0, 1}, float_infer));
  ctx.set_output(0, DType::kInt32, std::move(out));
  return ok_status();
}

// QLinearMatMul and QLinearConv (inputs as QLinearInput; `with_bias` for
// QLinearConv's B): the operands, the output zero point and the zero points
// int8/uint8, float32 scales; the shape is the float op's, the output of the
// output zero point's dtype.
Status qlinear_op_infer(InferContext& ctx, const char* a, const char* b, InferFn float_infer, bool with_bias) {
  KILN_RETURN_IF_ERROR(check_quant_input(ctx, kA, a));
  KILN_RETURN_IF_ERROR(check_quant_input(ctx, kB, b));
  KILN_RETURN_IF_ERROR(check_quant_input(ctx, kYZero, "y_zero_point"));
  KILN_RETURN_IF_ERROR(check_zero_point(ctx, kAZero, kA, zero_point_name(a).c_str()));
  KILN_RETURN_IF_ERROR(check_zero_point(ctx, kBZero, kB, zero_point_name(b).c_str()));
  KILN_RETURN_IF_ERROR(check_float_scales(ctx, {kAScale, kBScale, kYScale}));
  if (with_bias && ctx.has_input(kBias) && ctx.input_dtype(kBias) != DType::kInt32)
    return ctx.error("B has dtype " + dt_name(ctx.input_dtype(kBias)) + "; expected int32");
  const std::vector<size_t> shape_inputs = with_bias ? std::vector<size_t>{kA, kB, kBias} : std::vector<size_t>{kA, kB};
  KILN_ASSIGN_OR_RETURN(ir::SymShape out, shape_as_float_op(ctx, shape_inputs, float_infer));
  ctx.set_output(0, ctx.input_dtype(kYZero), std::move(out));
  return ok_status();
}

Status matmul_integer_infer(InferContext& ctx) { return integer_op_infer(ctx, "A", "B", infer_matmul); }
Status conv_integer_infer(InferContext& ctx) { return integer_op_infer(ctx, "x", "w", infer_conv); }
Status qlinear_matmul_infer(InferContext& ctx) { return qlinear_op_infer(ctx, "a", "b", infer_matmul, false); }
Status qlinear_conv_infer(InferContext& ctx) { return qlinear_op_infer(ctx, "x", "w", infer_conv, true); }

// --- shared kernel pieces ----------------------------------------------------

// The shape a per-row (A-side) parameter broadcasts with: [M] means [M, 1].
Shape row_param_shape(const Shape& s) {
  if (s.size() == 1 && s[0] != 1) return {s[0], 1};
  return s;
}

// A per-output-channel conv parameter [M] as [M, 1, ...] against W's rank.
Shape channel_param_shape(const Shape& s, size_t w_rank) {
  if (s.size() == 1 && s[0] != 1) {
    Shape r(w_rank, 1);
    r[0] = s[0];
    return r;
  }
  return s;
}

// `param` (shape `as`) broadcast to `shape` as doubles; an error when it
// does not broadcast into `shape` without enlarging it.
StatusOr<std::vector<double>> broadcast_param(const KernelContext& ctx, const Tensor& param, const Shape& as,
                                              const Shape& shape, const char* what) {
  if (param.numel() == 1) return std::vector<double>(static_cast<size_t>(shape_numel(shape)), param.get_f64(0));
  if (shape_numel(as) != param.numel())
    return ctx.error(std::string(what) + " " + shape_to_string(param.shape()) + " does not fit " +
                     shape_to_string(shape));
  auto b = broadcast_shapes(as, shape);
  if (!b.ok() || *b != shape)
    return ctx.error(std::string(what) + " " + shape_to_string(param.shape()) + " does not broadcast to " +
                     shape_to_string(shape));
  std::vector<double> out(static_cast<size_t>(shape_numel(shape)));
  BroadcastIndexer idx(as, shape);
  for (size_t i = 0; i < out.size(); ++i, idx.next()) out[i] = param.get_f64(idx.index());
  return out;
}

// x - zero point (broadcast as `zp_as`) as int32.
StatusOr<std::vector<int32_t>> subtract_zero_point(const KernelContext& ctx, const Tensor& x, size_t zp_input,
                                                   const Shape& zp_as, const char* what) {
  std::vector<int32_t> out(static_cast<size_t>(x.numel()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<int32_t>(x.get_i64(static_cast<int64_t>(i)));
  if (!ctx.has_input(zp_input)) return out;
  KILN_ASSIGN_OR_RETURN(std::vector<double> zp, broadcast_param(ctx, ctx.input(zp_input), zp_as, x.shape(), what));
  for (size_t i = 0; i < out.size(); ++i) out[i] -= static_cast<int32_t>(zp[i]);
  return out;
}

int32_t wrap_add(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
}
int32_t wrap_mul(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) * static_cast<uint32_t>(b));
}

// numpy matmul of int32 operands (1-D promotion, broadcast batch dims) into
// `y` (already allocated with the inferred shape).
Status matmul_int32(const KernelContext& ctx, const std::vector<int32_t>& a, const Shape& a_shape,
                    const std::vector<int32_t>& b, const Shape& b_shape, std::vector<int32_t>& y) {
  Shape as = a_shape, bs = b_shape;
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  const int64_t m = as[as.size() - 2], k = as[as.size() - 1], n = bs[bs.size() - 1];
  const Shape a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
  auto batch = broadcast_shapes(a_batch, b_batch);
  if (!batch.ok()) return ctx.error("batch dimensions do not broadcast");
  const int64_t batches = shape_numel(*batch);
  y.assign(static_cast<size_t>(batches * m * n), 0);
  std::vector<int64_t> a_off(static_cast<size_t>(batches)), b_off(static_cast<size_t>(batches));
  BroadcastIndexer ia(a_batch, *batch), ib(b_batch, *batch);
  for (int64_t t = 0; t < batches; ++t, ia.next(), ib.next()) {
    a_off[static_cast<size_t>(t)] = ia.index() * m * k;
    b_off[static_cast<size_t>(t)] = ib.index() * k * n;
  }
  // One task per output row.
  parallel_for(batches * m, cpu_thread_count(), [&](int64_t row, int) {
    const int64_t t = row / m, i = row % m;
    const int32_t* ap = a.data() + a_off[static_cast<size_t>(t)] + i * k;
    const int32_t* bp = b.data() + b_off[static_cast<size_t>(t)];
    int32_t* yp = y.data() + row * n;
    for (int64_t p = 0; p < k; ++p) {
      const int32_t av = ap[p];
      for (int64_t j = 0; j < n; ++j) yp[j] = wrap_add(yp[j], wrap_mul(av, bp[p * n + j]));
    }
  });
  return ok_status();
}

// Direct int32 convolution (zero padding) of zero-point-corrected operands,
// plus an optional int32 bias per output channel.
StatusOr<std::vector<int32_t>> conv_int32(const KernelContext& ctx, const std::vector<int32_t>& x, const Shape& xs,
                                          const std::vector<int32_t>& w, const Shape& ws, const Tensor* bias,
                                          const Shape& ys) {
  KILN_ASSIGN_OR_RETURN(const Geometry3 g, conv_geometry(ctx.node(), xs, ws, ys));
  const int64_t group = ctx.node().attr_int("group", 1);
  const int64_t batch = xs[0], c = xs[1], m = ws[0];
  const int64_t cg = c / group, mg = m / group, kk = g.kernel_size(), in_sz = g.in_size(), out_sz = g.out_size();
  std::vector<int32_t> y(static_cast<size_t>(batch * m * out_sz));
  auto mul_add = [](int32_t acc, int32_t xv, int32_t wv) { return wrap_add(acc, wrap_mul(xv, wv)); };
  auto as_is = [](int32_t acc) { return acc; };
  // One task per (image, output channel) plane.
  parallel_for(batch * m, cpu_thread_count(), [&](int64_t task, int) {
    const int64_t img = task / m, oc = task % m;
    const int64_t gi = oc / mg;
    const int32_t b0 = bias ? static_cast<int32_t>(bias->get_i64(oc)) : 0;
    conv_direct_plane(g, x.data() + (img * c + gi * cg) * in_sz, w.data() + oc * cg * kk, cg, b0,
                      y.data() + task * out_sz, mul_add, as_is);
  });
  return y;
}

// ONNX's requantization of one accumulator (see the file comment).
double requantize(int32_t acc, float multiplier, double zero_point, double lo, double hi) {
  double d = static_cast<double>(acc) * static_cast<double>(multiplier);
  d += zero_point;
  d = std::nearbyint(d);
  return d < lo ? lo : d > hi ? hi : d;
}

float multiplier(double a_scale, double b_scale, double y_scale) {
  const float ab = static_cast<float>(a_scale) * static_cast<float>(b_scale);
  return ab / static_cast<float>(y_scale);
}

Status store_int32(KernelContext& ctx, const std::vector<int32_t>& v) {
  KILN_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0));
  if (static_cast<int64_t>(v.size()) != y->numel()) return ctx.error("internal: output size mismatch");
  std::copy(v.begin(), v.end(), y->data<int32_t>());
  return ok_status();
}

// --- MatMulInteger -------------------------------------------------------------

Status matmul_integer_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  const Shape a_zp = ctx.has_input(2) ? row_param_shape(ctx.input(2).shape()) : Shape{};
  const Shape b_zp = ctx.has_input(3) ? ctx.input(3).shape() : Shape{};
  KILN_ASSIGN_OR_RETURN(std::vector<int32_t> a32, subtract_zero_point(ctx, a, 2, a_zp, "a_zero_point"));
  KILN_ASSIGN_OR_RETURN(std::vector<int32_t> b32, subtract_zero_point(ctx, b, 3, b_zp, "b_zero_point"));
  std::vector<int32_t> y;
  KILN_RETURN_IF_ERROR(matmul_int32(ctx, a32, a.shape(), b32, b.shape(), y));
  return store_int32(ctx, y);
}

// --- QLinearMatMul -------------------------------------------------------------

Status qlinear_matmul_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(kA);
  const Tensor& b = ctx.input(kB);
  KILN_ASSIGN_OR_RETURN(
      std::vector<int32_t> a32,
      subtract_zero_point(ctx, a, kAZero, row_param_shape(ctx.input(kAZero).shape()), "a_zero_point"));
  KILN_ASSIGN_OR_RETURN(std::vector<int32_t> b32,
                        subtract_zero_point(ctx, b, kBZero, ctx.input(kBZero).shape(), "b_zero_point"));
  std::vector<int32_t> acc;
  KILN_RETURN_IF_ERROR(matmul_int32(ctx, a32, a.shape(), b32, b.shape(), acc));
  KILN_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0));
  // Scales and the output zero point broadcast to the output: the A side
  // per row ([M] read as [M, 1]), the B side per column.
  const Shape& ys = y->shape();
  auto row_param = [&](size_t i, const char* what) {
    return broadcast_param(ctx, ctx.input(i), row_param_shape(ctx.input(i).shape()), ys, what);
  };
  auto col_param = [&](size_t i, const char* what) {
    return broadcast_param(ctx, ctx.input(i), ctx.input(i).shape(), ys, what);
  };
  KILN_ASSIGN_OR_RETURN(std::vector<double> as, row_param(kAScale, "a_scale"));
  KILN_ASSIGN_OR_RETURN(std::vector<double> bs, col_param(kBScale, "b_scale"));
  KILN_ASSIGN_OR_RETURN(std::vector<double> yscale, row_param(kYScale, "y_scale"));
  KILN_ASSIGN_OR_RETURN(std::vector<double> yzp, row_param(kYZero, "y_zero_point"));
  const double lo = static_cast<double>(quant_min(y->dtype())), hi = static_cast<double>(quant_max(y->dtype()));
  for (int64_t i = 0; i < y->numel(); ++i) {
    const size_t u = static_cast<size_t>(i);
    y->set_f64(i, requantize(acc[u], multiplier(as[u], bs[u], yscale[u]), yzp[u], lo, hi));
  }
  return ok_status();
}

// --- ConvInteger and QLinearConv ---------------------------------------------------

Status check_one_value(const KernelContext& ctx, size_t i, const char* what) {
  if (ctx.has_input(i) && ctx.input(i).numel() != 1)
    return unimplemented(ctx.node().describe() + ": " + what + " " + shape_to_string(ctx.input(i).shape()) +
                         " must hold one value (per-tensor quantization of the input)");
  return ok_status();
}

Status conv_integer_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  KILN_RETURN_IF_ERROR(check_one_value(ctx, 2, "x_zero_point"));
  const Shape x_zp = {};
  const Shape w_zp = ctx.has_input(3) ? channel_param_shape(ctx.input(3).shape(), w.shape().size()) : Shape{};
  KILN_ASSIGN_OR_RETURN(std::vector<int32_t> x32, subtract_zero_point(ctx, x, 2, x_zp, "x_zero_point"));
  KILN_ASSIGN_OR_RETURN(std::vector<int32_t> w32, subtract_zero_point(ctx, w, 3, w_zp, "w_zero_point"));
  const Shape& ys = ctx.inferred_output(0).shape.concrete();
  KILN_ASSIGN_OR_RETURN(std::vector<int32_t> y, conv_int32(ctx, x32, x.shape(), w32, w.shape(), nullptr, ys));
  return store_int32(ctx, y);
}

Status qlinear_conv_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(kA);
  const Tensor& w = ctx.input(kB);
  for (auto [i, what] : {std::pair<size_t, const char*>{kAScale, "x_scale"},
                         {kAZero, "x_zero_point"},
                         {kYScale, "y_scale"},
                         {kYZero, "y_zero_point"}})
    KILN_RETURN_IF_ERROR(check_one_value(ctx, i, what));
  const Shape w_zp = channel_param_shape(ctx.input(kBZero).shape(), w.shape().size());
  KILN_ASSIGN_OR_RETURN(std::vector<int32_t> x32, subtract_zero_point(ctx, x, kAZero, {}, "x_zero_point"));
  KILN_ASSIGN_OR_RETURN(std::vector<int32_t> w32, subtract_zero_point(ctx, w, kBZero, w_zp, "w_zero_point"));
  KILN_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0));
  const Tensor* bias = ctx.has_input(kBias) ? &ctx.input(kBias) : nullptr;
  const int64_t m = w.dim(0);
  if (bias && bias->numel() != m)
    return ctx.error("B has " + std::to_string(bias->numel()) + " values for " + std::to_string(m) +
                     " output channels");
  KILN_ASSIGN_OR_RETURN(std::vector<int32_t> acc, conv_int32(ctx, x32, x.shape(), w32, w.shape(), bias, y->shape()));
  const Tensor& ws = ctx.input(kBScale);
  if (ws.numel() != 1 && ws.numel() != m)
    return ctx.error("w_scale " + shape_to_string(ws.shape()) + " must hold one value or one per output channel (" +
                     std::to_string(m) + ")");
  std::vector<float> mult(static_cast<size_t>(m));
  const double xs = ctx.input(kAScale).get_f64(0), yscale = ctx.input(kYScale).get_f64(0);
  for (int64_t c = 0; c < m; ++c)
    mult[static_cast<size_t>(c)] = multiplier(xs, ws.get_f64(ws.numel() == 1 ? 0 : c), yscale);
  if (y->numel() == 0) return ok_status();
  const double zp = ctx.input(kYZero).get_f64(0);
  const double lo = static_cast<double>(quant_min(y->dtype())), hi = static_cast<double>(quant_max(y->dtype()));
  const int64_t plane = m == 0 ? 0 : y->numel() / (y->dim(0) * m);
  for (int64_t i = 0; i < y->numel(); ++i)
    y->set_f64(i, requantize(acc[static_cast<size_t>(i)], mult[static_cast<size_t>((i / plane) % m)], zp, lo, hi));
  return ok_status();
}

}  // namespace

void register_integer_linalg_ops(OpRegistry& r) {
  auto add = [&](OpSchema s) {
    s.mapping = MappingType::kManyToMany;
    Status st = r.add(std::move(s));
    (void)st;  // duplicates are kept in r.registration_errors()
  };
  add({"MatMulInteger", "", 2, 4, 1, 1, matmul_integer_infer, matmul_integer_kernel});
  add({"QLinearMatMul", "", 8, 8, 1, 1, qlinear_matmul_infer, qlinear_matmul_kernel});
  add({"ConvInteger", "", 2, 4, 1, 1, conv_integer_infer, conv_integer_kernel});
  add({"QLinearConv", "", 8, 9, 1, 1, qlinear_conv_infer, qlinear_conv_kernel});
}

}  // namespace kiln::ops
