// MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv, and ONNX
// Runtime's com.microsoft QGemm, MatMulIntegerToFloat and
// DynamicQuantizeMatMul: schemas, shape inference and reference kernels
// (see quantization.h and the section below for the com.microsoft ones).
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

// --- ONNX Runtime's com.microsoft GEMMs ------------------------------------------------
//
// QGemm (A, a_scale, a_zero_point, B, b_scale, b_zero_point, C, y_scale,
// y_zero_point; 2-D, transA/transB, alpha): acc = (A - a_zp)(B - b_zp) + C
// in int32, C an int32 bias broadcasting to [M, N]; with y_scale,
// y = saturate(rint(double(acc) * double(float32(float32(alpha * a_scale) *
// b_scale) / y_scale) + y_zero_point)), as QLinearMatMul requantizes; without
// it y = float32(acc) * float32(float32(alpha * a_scale) * b_scale) in float32.
// MatMulIntegerToFloat (A, B, a_scale, b_scale, a_zero_point, b_zero_point,
// bias): MatMulInteger's product, then float32(acc) * float32(a_scale *
// b_scale) + bias. DynamicQuantizeMatMul (A float, B, b_scale,
// b_zero_point, bias): A quantized as DynamicQuantizeLinear does (uint8),
// then MatMulIntegerToFloat with A's scale and zero point. a_scale and the
// A zero point of QGemm hold one value; b_scale and b_zero_point one value
// or one per column of the product ([N]); bias is [N].

enum QGemmInput : size_t { kGA = 0, kGAScale, kGAZero, kGB, kGBScale, kGBZero, kGC, kGYScale, kGYZero };

StatusOr<ir::SymShape> gemm_2d_shape(const InferContext& ctx, size_t a, size_t b) {
  const ir::SymShape &as = ctx.input_shape(a), &bs = ctx.input_shape(b);
  if (!as.has_rank || !bs.has_rank) return ir::SymShape::unranked();
  if (as.rank() != 2 || bs.rank() != 2)
    return ctx.error("A " + as.to_string() + " and B " + bs.to_string() + " must be 2-D");
  const bool ta = ctx.node().attr_int("transA", 0) != 0, tb = ctx.node().attr_int("transB", 0) != 0;
  const ir::Dim &m = as.dims[ta ? 1 : 0], &ka = as.dims[ta ? 0 : 1];
  const ir::Dim &kb = bs.dims[tb ? 1 : 0], &n = bs.dims[tb ? 0 : 1];
  if (ka.is_const() && kb.is_const() && ka.value() != kb.value())
    return ctx.error("A " + as.to_string() + " and B " + bs.to_string() + " do not share K (transA " +
                     std::to_string(ta) + ", transB " + std::to_string(tb) + ")");
  return ir::SymShape(std::vector<ir::Dim>{m, n});
}

// A per-column parameter (b_scale, b_zero_point, bias) of a product whose
// output is `out`: one value, or (`per_column_only`: exactly) one per
// column, 1-D; checked where the dims are known.
Status check_column_param(const InferContext& ctx, size_t i, const ir::SymShape& out, const char* what,
                          bool per_column_only = false) {
  if (!ctx.has_input(i) || !out.has_rank || out.rank() == 0) return ok_status();
  const ir::SymShape& p = ctx.input_shape(i);
  if (!p.has_rank) return ok_status();
  const ir::Dim& n = out.dims.back();
  const bool one = p.rank() == 0 || (p.rank() == 1 && p.dims[0].is_const() && p.dims[0].value() == 1);
  const bool per_column = p.rank() == 1 && (!p.dims[0].is_const() || !n.is_const() || p.dims[0].value() == n.value());
  if ((one && !per_column_only) || per_column) return ok_status();
  return ctx.error(std::string(what) + " " + p.to_string() + " must hold " +
                   (per_column_only ? "one value per column" : "one value, or one per column,") + " of " +
                   out.to_string());
}

Status qgemm_infer(InferContext& ctx) {
  // a_zero_point and b_zero_point are optional between required inputs.
  for (size_t i : {kGB, kGBScale})
    if (!ctx.has_input(i)) return ctx.error("required input " + std::to_string(i) + " is missing");
  KILN_RETURN_IF_ERROR(check_quant_input(ctx, kGA, "A"));
  KILN_RETURN_IF_ERROR(check_quant_input(ctx, kGB, "B"));
  KILN_RETURN_IF_ERROR(check_zero_point(ctx, kGAZero, kGA, "a_zero_point"));
  KILN_RETURN_IF_ERROR(check_zero_point(ctx, kGBZero, kGB, "b_zero_point"));
  std::vector<size_t> scales = {kGAScale, kGBScale};
  if (ctx.has_input(kGYScale)) scales.push_back(kGYScale);
  KILN_RETURN_IF_ERROR(check_float_scales(ctx, scales));
  if (ctx.has_input(kGC) && ctx.input_dtype(kGC) != DType::kInt32)
    return ctx.error("C has dtype " + dt_name(ctx.input_dtype(kGC)) + "; expected int32");
  KILN_ASSIGN_OR_RETURN(ir::SymShape out, gemm_2d_shape(ctx, kGA, kGB));
  if (ctx.has_input(kGC) && out.has_rank) {
    // C broadcasts to [M, N] without enlarging it (unidirectionally).
    const ir::SymShape& c = ctx.input_shape(kGC);
    auto b = broadcast_shapes(c, out);
    bool fits = b.ok() && (!c.has_rank || c.rank() <= 2);
    for (size_t i = 0; fits && b->has_rank && i < b->dims.size(); ++i)
      if (b->dims[i].is_const() && out.dims[i].is_const() && b->dims[i].value() != out.dims[i].value()) fits = false;
    if (!fits) return ctx.error("C " + c.to_string() + " does not broadcast to " + out.to_string());
  }
  KILN_RETURN_IF_ERROR(check_column_param(ctx, kGBScale, out, "b_scale"));
  KILN_RETURN_IF_ERROR(check_column_param(ctx, kGBZero, out, "b_zero_point"));
  DType yt = DType::kFloat32;
  if (ctx.has_input(kGYScale)) {
    yt = ctx.has_input(kGYZero) ? ctx.input_dtype(kGYZero) : ctx.input_dtype(kGA);
    if (!is_quant_type(yt, false))
      return unimplemented(ctx.node().describe() + ": y_zero_point has dtype " + dt_name(yt) +
                           "; Kiln supports int8 and uint8");
  } else if (ctx.has_input(kGYZero)) {
    return ctx.error("y_zero_point is given without y_scale");
  }
  ctx.set_output(0, yt, std::move(out));
  return ok_status();
}

// Rows x cols of a 2-D int32 matrix, transposed when `trans`.
std::vector<int32_t> maybe_transpose(std::vector<int32_t> v, const Shape& s, bool trans) {
  if (!trans) return v;
  std::vector<int32_t> t(v.size());
  for (int64_t i = 0; i < s[0]; ++i)
    for (int64_t j = 0; j < s[1]; ++j) t[static_cast<size_t>(j * s[0] + i)] = v[static_cast<size_t>(i * s[1] + j)];
  return t;
}

// A per-column parameter of the [M, N] product: one value or N values.
StatusOr<std::vector<double>> column_param(const KernelContext& ctx, size_t i, int64_t n, const char* what) {
  const Tensor& t = ctx.input(i);
  if (t.numel() != 1 && t.numel() != n)
    return ctx.error(std::string(what) + " " + shape_to_string(t.shape()) + " must hold one value or one per column (" +
                     std::to_string(n) + ")");
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) v[static_cast<size_t>(j)] = t.get_f64(t.numel() == 1 ? 0 : j);
  return v;
}

Status qgemm_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(kGA);
  const Tensor& b = ctx.input(kGB);
  KILN_RETURN_IF_ERROR(check_one_value(ctx, kGAZero, "a_zero_point"));
  KILN_RETURN_IF_ERROR(check_one_value(ctx, kGAScale, "a_scale"));
  const bool ta = ctx.node().attr_int("transA", 0) != 0, tb = ctx.node().attr_int("transB", 0) != 0;
  const int64_t m = ta ? a.dim(1) : a.dim(0), k = ta ? a.dim(0) : a.dim(1), n = tb ? b.dim(0) : b.dim(1);
  KILN_ASSIGN_OR_RETURN(std::vector<int32_t> a32, subtract_zero_point(ctx, a, kGAZero, {}, "a_zero_point"));
  std::vector<int32_t> b32(static_cast<size_t>(b.numel()));
  for (size_t i = 0; i < b32.size(); ++i) b32[i] = static_cast<int32_t>(b.get_i64(static_cast<int64_t>(i)));
  a32 = maybe_transpose(std::move(a32), a.shape(), ta);
  b32 = maybe_transpose(std::move(b32), b.shape(), tb);
  if (ctx.has_input(kGBZero)) {
    KILN_ASSIGN_OR_RETURN(std::vector<double> zb, column_param(ctx, kGBZero, n, "b_zero_point"));
    for (size_t i = 0; i < b32.size(); ++i) b32[i] -= static_cast<int32_t>(zb[i % static_cast<size_t>(n)]);
  }
  std::vector<int32_t> acc;
  KILN_RETURN_IF_ERROR(matmul_int32(ctx, a32, {m, k}, b32, {k, n}, acc));
  if (ctx.has_input(kGC)) {
    const Tensor& c_in = ctx.input(kGC);
    KILN_ASSIGN_OR_RETURN(std::vector<double> c, broadcast_param(ctx, c_in, c_in.shape(), {m, n}, "C"));
    for (size_t i = 0; i < acc.size(); ++i) acc[i] = wrap_add(acc[i], static_cast<int32_t>(c[i]));
  }
  KILN_ASSIGN_OR_RETURN(std::vector<double> bs, column_param(ctx, kGBScale, n, "b_scale"));
  const float alpha_a = ctx.node().attr_float("alpha", 1.0f) * static_cast<float>(ctx.input(kGAScale).get_f64(0));
  KILN_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0));
  const bool quantized = ctx.has_input(kGYScale);
  double yzp = 0.0;
  float yscale = 1.0f;
  if (quantized) {
    KILN_RETURN_IF_ERROR(check_one_value(ctx, kGYScale, "y_scale"));
    KILN_RETURN_IF_ERROR(check_one_value(ctx, kGYZero, "y_zero_point"));
    yscale = static_cast<float>(ctx.input(kGYScale).get_f64(0));
    if (ctx.has_input(kGYZero)) yzp = ctx.input(kGYZero).get_f64(0);
  }
  const double lo = static_cast<double>(quant_min(y->dtype())), hi = static_cast<double>(quant_max(y->dtype()));
  for (int64_t i = 0; i < y->numel(); ++i) {
    const float scale = alpha_a * static_cast<float>(bs[static_cast<size_t>(i % n)]);
    const int32_t v = acc[static_cast<size_t>(i)];
    if (quantized) y->set_f64(i, requantize(v, scale / yscale, yzp, lo, hi));
    else y->data<float>()[i] = static_cast<float>(v) * scale;
  }
  return ok_status();
}

// float32(acc) * float32(a_scale * b_scale[column]) + bias[column] into
// the float output (MatMulIntegerToFloat, DynamicQuantizeMatMul).
Status store_scaled(KernelContext& ctx, const std::vector<int32_t>& acc, float a_scale, size_t b_scale, size_t bias) {
  KILN_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0));
  const int64_t n = y->rank() == 0 ? 1 : y->dim(y->rank() - 1);
  if (y->numel() == 0) return ok_status();
  KILN_ASSIGN_OR_RETURN(std::vector<double> bs, column_param(ctx, b_scale, n, "b_scale"));
  std::vector<double> bias_v(static_cast<size_t>(n), 0.0);
  if (ctx.has_input(bias)) {
    if (ctx.input(bias).numel() != n)
      return ctx.error("bias " + shape_to_string(ctx.input(bias).shape()) + " must hold one value per column (" +
                       std::to_string(n) + ")");
    for (int64_t j = 0; j < n; ++j) bias_v[static_cast<size_t>(j)] = ctx.input(bias).get_f64(j);
  }
  float* yd = y->data<float>();
  for (int64_t i = 0; i < y->numel(); ++i) {
    const size_t j = static_cast<size_t>(i % n);
    yd[i] = static_cast<float>(acc[static_cast<size_t>(i)]) * (a_scale * static_cast<float>(bs[j])) +
            static_cast<float>(bias_v[j]);
  }
  return ok_status();
}

Status check_bias(const InferContext& ctx, size_t bias) {
  if (ctx.has_input(bias) && ctx.input_dtype(bias) != DType::kFloat32)
    return ctx.error("bias has dtype " + dt_name(ctx.input_dtype(bias)) + "; expected float32");
  return ok_status();
}

enum MatMulToFloatInput : size_t { kFA = 0, kFB, kFAScale, kFBScale, kFAZero, kFBZero, kFBias };

Status matmul_integer_to_float_infer(InferContext& ctx) {
  KILN_RETURN_IF_ERROR(check_quant_input(ctx, kFA, "A"));
  KILN_RETURN_IF_ERROR(check_quant_input(ctx, kFB, "B"));
  KILN_RETURN_IF_ERROR(check_zero_point(ctx, kFAZero, kFA, "a_zero_point"));
  KILN_RETURN_IF_ERROR(check_zero_point(ctx, kFBZero, kFB, "b_zero_point"));
  KILN_RETURN_IF_ERROR(check_float_scales(ctx, {kFAScale, kFBScale}));
  KILN_RETURN_IF_ERROR(check_bias(ctx, kFBias));
  KILN_ASSIGN_OR_RETURN(ir::SymShape out, shape_as_float_op(ctx, {kFA, kFB}, infer_matmul));
  KILN_RETURN_IF_ERROR(check_column_param(ctx, kFBScale, out, "b_scale"));
  KILN_RETURN_IF_ERROR(check_column_param(ctx, kFBias, out, "bias", true));
  ctx.set_output(0, DType::kFloat32, std::move(out));
  return ok_status();
}

Status matmul_integer_to_float_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(kFA);
  const Tensor& b = ctx.input(kFB);
  KILN_RETURN_IF_ERROR(check_one_value(ctx, kFAScale, "a_scale"));
  const Shape a_zp = ctx.has_input(kFAZero) ? row_param_shape(ctx.input(kFAZero).shape()) : Shape{};
  const Shape b_zp = ctx.has_input(kFBZero) ? ctx.input(kFBZero).shape() : Shape{};
  KILN_ASSIGN_OR_RETURN(std::vector<int32_t> a32, subtract_zero_point(ctx, a, kFAZero, a_zp, "a_zero_point"));
  KILN_ASSIGN_OR_RETURN(std::vector<int32_t> b32, subtract_zero_point(ctx, b, kFBZero, b_zp, "b_zero_point"));
  std::vector<int32_t> acc;
  KILN_RETURN_IF_ERROR(matmul_int32(ctx, a32, a.shape(), b32, b.shape(), acc));
  return store_scaled(ctx, acc, static_cast<float>(ctx.input(kFAScale).get_f64(0)), kFBScale, kFBias);
}

enum DynamicMatMulInput : size_t { kDA = 0, kDB, kDBScale, kDBZero, kDBias };

Status dynamic_quantize_matmul_infer(InferContext& ctx) {
  if (ctx.input_dtype(kDA) != DType::kFloat32)
    return ctx.error("A has dtype " + dt_name(ctx.input_dtype(kDA)) + "; expected float32");
  KILN_RETURN_IF_ERROR(check_quant_input(ctx, kDB, "B"));
  KILN_RETURN_IF_ERROR(check_zero_point(ctx, kDBZero, kDB, "b_zero_point"));
  KILN_RETURN_IF_ERROR(check_float_scales(ctx, {kDBScale}));
  KILN_RETURN_IF_ERROR(check_bias(ctx, kDBias));
  KILN_ASSIGN_OR_RETURN(ir::SymShape out, shape_as_float_op(ctx, {kDA, kDB}, infer_matmul));
  KILN_RETURN_IF_ERROR(check_column_param(ctx, kDBScale, out, "b_scale"));
  KILN_RETURN_IF_ERROR(check_column_param(ctx, kDBZero, out, "b_zero_point"));
  KILN_RETURN_IF_ERROR(check_column_param(ctx, kDBias, out, "bias", true));
  ctx.set_output(0, DType::kFloat32, std::move(out));
  return ok_status();
}

Status dynamic_quantize_matmul_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(kDA);
  const Tensor& b = ctx.input(kDB);
  const DynamicQuant q = dynamic_quant_params(a.data<float>(), a.numel());
  std::vector<int32_t> a32(static_cast<size_t>(a.numel()));
  for (size_t i = 0; i < a32.size(); ++i)
    a32[i] = static_cast<int32_t>(q.quantize(a.data<float>()[i])) - static_cast<int32_t>(q.zero_point);
  const Shape b_zp = ctx.has_input(kDBZero) ? ctx.input(kDBZero).shape() : Shape{};
  KILN_ASSIGN_OR_RETURN(std::vector<int32_t> b32, subtract_zero_point(ctx, b, kDBZero, b_zp, "b_zero_point"));
  std::vector<int32_t> acc;
  KILN_RETURN_IF_ERROR(matmul_int32(ctx, a32, a.shape(), b32, b.shape(), acc));
  return store_scaled(ctx, acc, q.scale, kDBScale, kDBias);
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
  add({"QGemm", kMicrosoftDomain, 2, 9, 1, 1, qgemm_infer, qgemm_kernel});
  add({"MatMulIntegerToFloat", kMicrosoftDomain, 4, 7, 1, 1, matmul_integer_to_float_infer,
       matmul_integer_to_float_kernel});
  add({"DynamicQuantizeMatMul", kMicrosoftDomain, 3, 5, 1, 1, dynamic_quantize_matmul_infer,
       dynamic_quantize_matmul_kernel});
}

}  // namespace kiln::ops
