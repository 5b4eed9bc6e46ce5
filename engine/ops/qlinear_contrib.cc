// The `com.microsoft` quantized ops that ONNX Runtime's quantizer emits in
// its QOperator form and that have no ONNX equivalent: QLinearAdd,
// QLinearMul, QLinearSigmoid, QLinearLeakyRelu, QLinearSoftmax,
// QLinearGlobalAveragePool, QLinearAveragePool and QLinearConcat (schemas,
// shape inference, reference kernels). Their GEMM relatives (QGemm,
// MatMulIntegerToFloat, DynamicQuantizeMatMul) live with the other integer
// products in integer_linalg.cc; com.microsoft QuantizeLinear/DequantizeLinear are the
// ONNX kernels registered once more (quantize_linear.cc).
//
// ONNX Runtime defines each of these as "dequantize, run the float op,
// quantize" (its CPU kernels compute them with 256-entry lookup tables built
// that way, or, for the pools, literally so), so that is the reference
// semantics here, in float32 as ORT does:
//   dequantize  x_f = (float(x) - float(x_zero_point)) * x_scale
//   quantize    y   = saturate(rint(y_f / y_scale) + y_zero_point)
// with rint rounding half to even (quantization.h). QLinearAdd computes
// A_f + B_f, QLinearMul A_f * B_f (numpy broadcasting), QLinearSigmoid
// 1 / (1 + exp(-x_f)), QLinearLeakyRelu x_f < 0 ? alpha * x_f : x_f (alpha
// default 0.01), QLinearSoftmax Kiln's float Softmax (double sums; `opset`
// below 13: over X flattened to 2-D at `axis`), the pools run Kiln's float AveragePool/GlobalAveragePool
// kernels on the dequantized tensor (channels_last = 1 reads and writes
// NHWC), QLinearConcat requantizes each input to the output's parameters.
// ORT's MLAS paths fold the scales differently (A_scale / C_scale first), so
// ORT may differ from these results by one quantization step on rare ties —
// the tolerance its own tests use.
//
// Scales and zero points are per tensor (one value) as ORT requires; a zero
// point left out is 0 and the output takes the input's int8/uint8 type.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <string>
#include <vector>

#include "engine/ops/broadcast.h"
#include "engine/ops/op_registry.h"
#include "engine/ops/quantization.h"

namespace kiln::ops {
namespace {

std::string dt_name(DType t) { return std::string(dtype_name(t)); }

// One tensor's quantization: its scale and zero point, and the range of its type.
struct TensorQuant {
  float scale = 1.0f;
  int64_t zero_point = 0;
  DType type = DType::kUInt8;

  float dequantize(int64_t q) const { return (static_cast<float>(q) - static_cast<float>(zero_point)) * scale; }
  int64_t quantize(float v) const {
    const float q = v / scale;
    const double r = std::isnan(q) ? 0.0 : std::nearbyint(static_cast<double>(q)) + static_cast<double>(zero_point);
    const double lo = static_cast<double>(quant_min(type)), hi = static_cast<double>(quant_max(type));
    return static_cast<int64_t>(r < lo ? lo : r > hi ? hi : r);
  }
};

// --- inference checks ---------------------------------------------------------

// Optional inputs sit between required ones (a zero point after its
// scale), so the schemas' min_inputs only counts the leading required
// ones; inference checks the others.
Status require_inputs(const InferContext& ctx, std::initializer_list<size_t> required) {
  for (size_t i : required)
    if (!ctx.has_input(i)) return ctx.error("required input " + std::to_string(i) + " is missing");
  return ok_status();
}

Status check_quant_tensor(const InferContext& ctx, size_t x, size_t scale, size_t zp, const char* what) {
  const DType t = ctx.input_dtype(x);
  if (!is_quant_type(t, false))
    return unimplemented(ctx.node().describe() + ": " + what + " has dtype " + dt_name(t) +
                         "; Kiln supports int8 and uint8");
  if (ctx.input_dtype(scale) != DType::kFloat32)
    return ctx.error(std::string(what) + "'s scale has dtype " + dt_name(ctx.input_dtype(scale)) +
                     "; expected float32");
  if (ctx.has_input(zp) && ctx.input_dtype(zp) != t)
    return ctx.error(std::string(what) + "'s zero point has dtype " + dt_name(ctx.input_dtype(zp)) + " but " + what +
                     " has " + dt_name(t));
  for (size_t i : {scale, zp}) {
    if (!ctx.has_input(i)) continue;
    const ir::SymShape& s = ctx.input_shape(i);
    for (const ir::Dim& d : s.dims)
      if (d.is_const() && d.value() != 1)
        return unimplemented(ctx.node().describe() + ": " + what + "'s quantization parameter " + s.to_string() +
                             " must hold one value (ONNX Runtime's QLinear ops are per tensor)");
  }
  return ok_status();
}

// The output's parameters: a float32 scale, and a zero point of `t` when given.
Status check_output_params(const InferContext& ctx, size_t scale, size_t zp, DType t) {
  if (ctx.input_dtype(scale) != DType::kFloat32)
    return ctx.error("the output scale has dtype " + dt_name(ctx.input_dtype(scale)) + "; expected float32");
  if (ctx.has_input(zp) && ctx.input_dtype(zp) != t)
    return ctx.error("the output zero point has dtype " + dt_name(ctx.input_dtype(zp)) + " but the input has " +
                     dt_name(t));
  return ok_status();
}

// --- kernel pieces -------------------------------------------------------------

StatusOr<TensorQuant> read_quant(const KernelContext& ctx, size_t scale, size_t zp, DType type, const char* what) {
  TensorQuant q;
  q.type = type;
  const Tensor& s = ctx.input(scale);
  if (s.numel() != 1)
    return ctx.error(std::string(what) + " " + shape_to_string(s.shape()) + " must hold one value");
  q.scale = static_cast<float>(s.get_f64(0));
  if (ctx.has_input(zp)) {
    const Tensor& z = ctx.input(zp);
    if (z.numel() != 1)
      return ctx.error(std::string(what) + "'s zero point " + shape_to_string(z.shape()) + " must hold one value");
    q.zero_point = z.get_i64(0);
  }
  return q;
}

Tensor dequantize_tensor(const Tensor& x, const TensorQuant& q) {
  Tensor f = Tensor::allocate(DType::kFloat32, x.shape()).value();
  float* fd = f.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) fd[i] = q.dequantize(x.get_i64(i));
  return f;
}

Status quantize_into(KernelContext& ctx, const Tensor& f, const TensorQuant& q) {
  KILN_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, q.type, f.shape()));
  const float* fd = f.data<float>();
  for (int64_t i = 0; i < f.numel(); ++i) y->set_f64(i, static_cast<double>(q.quantize(fd[i])));
  return ok_status();
}

// NCHW <-> NHWC (to_channels_first: [N, D1.., C] -> [N, C, D1..]).
Tensor move_channels(const Tensor& t, bool to_channels_first) {
  const Shape& s = t.shape();
  const size_t r = s.size();
  Shape out = s;
  int64_t n = s[0], c = 0, spatial = 1;
  if (to_channels_first) {
    c = s[r - 1];
    for (size_t i = 1; i + 1 < r; ++i) spatial *= s[i];
    out = {n, c};
    out.insert(out.end(), s.begin() + 1, s.end() - 1);
  } else {
    c = s[1];
    for (size_t i = 2; i < r; ++i) spatial *= s[i];
    out = {n};
    out.insert(out.end(), s.begin() + 2, s.end());
    out.push_back(c);
  }
  Tensor y = Tensor::allocate(t.dtype(), out).value();
  const float* src = t.data<float>();
  float* dst = y.data<float>();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < spatial; ++p) {
        const int64_t first = (b * c + ch) * spatial + p, last = (b * spatial + p) * c + ch;
        if (to_channels_first) dst[first] = src[last];
        else dst[last] = src[first];
      }
  return y;
}

ir::SymShape channels_first_shape(const ir::SymShape& s) {
  if (!s.has_rank || s.rank() < 3) return s;
  std::vector<ir::Dim> d = {s.dims[0], s.dims.back()};
  d.insert(d.end(), s.dims.begin() + 1, s.dims.end() - 1);
  return ir::SymShape(d);
}

ir::SymShape channels_last_shape(const ir::SymShape& s) {
  if (!s.has_rank || s.rank() < 3) return s;
  std::vector<ir::Dim> d = {s.dims[0]};
  d.insert(d.end(), s.dims.begin() + 2, s.dims.end());
  d.push_back(s.dims[1]);
  return ir::SymShape(d);
}

const OpSchema& float_op(const char* op) { return *OpRegistry::builtin().find("", op); }

// Runs the float op `op` of the ONNX domain with the attributes of `node`
// (this node's by default) on float inputs; returns its first output.
StatusOr<Tensor> run_float_op(const KernelContext& ctx, const char* op, const std::vector<const Tensor*>& inputs,
                              const ir::Node* node = nullptr) {
  if (!node) node = &ctx.node();
  const OpSchema& schema = float_op(op);
  std::vector<ValueInfo> infos;
  for (const Tensor* t : inputs) {
    ValueInfo v;
    v.dtype = t->dtype();
    v.shape = ir::SymShape::from_concrete(t->shape());
    infos.push_back(std::move(v));
  }
  InferContext ic(*node, std::move(infos), 1);
  KILN_RETURN_IF_ERROR(schema.infer(ic));
  KernelContext kc(*node, inputs, ic.outputs(), nullptr);
  KILN_RETURN_IF_ERROR(schema.kernel(kc));
  return std::move(kc.outputs()[0]);
}

// --- QLinearAdd, QLinearMul ---------------------------------------------------------

enum BinaryInput : size_t { kA = 0, kAScale, kAZero, kB, kBScale, kBZero, kCScale, kCZero };

Status binary_infer(InferContext& ctx) {
  KILN_RETURN_IF_ERROR(require_inputs(ctx, {kA, kAScale, kB, kBScale, kCScale}));
  KILN_RETURN_IF_ERROR(check_quant_tensor(ctx, kA, kAScale, kAZero, "A"));
  KILN_RETURN_IF_ERROR(check_quant_tensor(ctx, kB, kBScale, kBZero, "B"));
  if (ctx.input_dtype(kB) != ctx.input_dtype(kA))
    return ctx.error("B has dtype " + dt_name(ctx.input_dtype(kB)) + " but A has " + dt_name(ctx.input_dtype(kA)));
  KILN_RETURN_IF_ERROR(check_output_params(ctx, kCScale, kCZero, ctx.input_dtype(kA)));
  auto shape = broadcast_shapes(ctx.input_shape(kA), ctx.input_shape(kB));
  if (!shape.ok())
    return ctx.error("A " + ctx.input_shape(kA).to_string() + " and B " + ctx.input_shape(kB).to_string() +
                     " do not broadcast");
  ctx.set_output(0, ctx.input_dtype(kA), std::move(shape).value());
  return ok_status();
}

template <bool kMul>
Status binary_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(kA);
  const Tensor& b = ctx.input(kB);
  KILN_ASSIGN_OR_RETURN(const TensorQuant qa, read_quant(ctx, kAScale, kAZero, a.dtype(), "A_scale"));
  KILN_ASSIGN_OR_RETURN(const TensorQuant qb, read_quant(ctx, kBScale, kBZero, b.dtype(), "B_scale"));
  KILN_ASSIGN_OR_RETURN(const TensorQuant qc, read_quant(ctx, kCScale, kCZero, a.dtype(), "C_scale"));
  KILN_ASSIGN_OR_RETURN(const Shape shape, broadcast_shapes(a.shape(), b.shape()));
  KILN_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, a.dtype(), shape));
  BroadcastIndexer ia(a.shape(), shape), ib(b.shape(), shape);
  for (int64_t i = 0; i < y->numel(); ++i, ia.next(), ib.next()) {
    const float fa = qa.dequantize(a.get_i64(ia.index())), fb = qb.dequantize(b.get_i64(ib.index()));
    y->set_f64(i, static_cast<double>(qc.quantize(kMul ? fa * fb : fa + fb)));
  }
  return ok_status();
}

// --- QLinearSigmoid, QLinearLeakyRelu, the pools: X, X_scale, X_zero_point, Y_scale, Y_zero_point

enum UnaryInput : size_t { kX = 0, kXScale, kXZero, kYScale, kYZero };

Status unary_infer(InferContext& ctx) {
  KILN_RETURN_IF_ERROR(require_inputs(ctx, {kX, kXScale, kYScale}));
  KILN_RETURN_IF_ERROR(check_quant_tensor(ctx, kX, kXScale, kXZero, "X"));
  KILN_RETURN_IF_ERROR(check_output_params(ctx, kYScale, kYZero, ctx.input_dtype(kX)));
  ctx.set_output(0, ctx.input_dtype(kX), ctx.input_shape(kX));
  return ok_status();
}

struct UnaryQuant {
  TensorQuant x, y;
};

StatusOr<UnaryQuant> unary_quant(const KernelContext& ctx) {
  UnaryQuant q;
  KILN_ASSIGN_OR_RETURN(q.x, read_quant(ctx, kXScale, kXZero, ctx.input(kX).dtype(), "X_scale"));
  KILN_ASSIGN_OR_RETURN(q.y, read_quant(ctx, kYScale, kYZero, ctx.input(kX).dtype(), "Y_scale"));
  return q;
}

template <typename Fn>
Status unary_map(KernelContext& ctx, Fn fn) {
  const Tensor& x = ctx.input(kX);
  KILN_ASSIGN_OR_RETURN(const UnaryQuant q, unary_quant(ctx));
  KILN_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0));
  for (int64_t i = 0; i < x.numel(); ++i)
    y->set_f64(i, static_cast<double>(q.y.quantize(fn(q.x.dequantize(x.get_i64(i))))));
  return ok_status();
}

Status sigmoid_kernel(KernelContext& ctx) {
  return unary_map(ctx, [](float v) { return 1.0f / (1.0f + std::exp(-v)); });
}

Status leaky_relu_kernel(KernelContext& ctx) {
  const float alpha = ctx.node().attr_float("alpha", 0.01f);
  return unary_map(ctx, [alpha](float v) { return v < 0.0f ? alpha * v : v; });
}

// The pools: the float op's inference on X as float32, through NCHW when
// channels_last = 1.
template <const char* kFloatOp>
Status pool_infer(InferContext& ctx) {
  KILN_RETURN_IF_ERROR(unary_infer(ctx));
  const bool channels_last = ctx.node().attr_int("channels_last", 0) != 0;
  ValueInfo x;
  x.dtype = DType::kFloat32;
  x.shape = channels_last ? channels_first_shape(ctx.input_shape(kX)) : ctx.input_shape(kX);
  if (channels_last && (!x.shape.has_rank || x.shape.rank() < 3))
    return ctx.error("channels_last needs X of rank 3 or more, got " + ctx.input_shape(kX).to_string());
  InferContext sub(ctx.node(), {x}, 1);
  KILN_RETURN_IF_ERROR(float_op(kFloatOp).infer(sub));
  const ir::SymShape& out = sub.outputs()[0].shape;
  ctx.set_output(0, ctx.input_dtype(kX), channels_last ? channels_last_shape(out) : out);
  return ok_status();
}

template <const char* kFloatOp>
Status pool_kernel(KernelContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const UnaryQuant q, unary_quant(ctx));
  const bool channels_last = ctx.node().attr_int("channels_last", 0) != 0;
  Tensor f = dequantize_tensor(ctx.input(kX), q.x);
  if (channels_last) f = move_channels(f, true);
  KILN_ASSIGN_OR_RETURN(Tensor pooled, run_float_op(ctx, kFloatOp, {&f}));
  if (channels_last) pooled = move_channels(pooled, false);
  return quantize_into(ctx, pooled, q.y);
}

// QLinearSoftmax: Softmax of the dequantized X along `axis` (default -1);
// `opset` (required) below 13 selects the old semantics, Softmax over X
// flattened to 2-D at `axis`.
Status softmax_infer(InferContext& ctx) {
  KILN_RETURN_IF_ERROR(unary_infer(ctx));
  if (!ctx.node().attr("opset"))
    return ctx.error("attribute 'opset' (the opset of the Softmax it replaces) is required");
  const ir::SymShape& x = ctx.input_shape(kX);
  const int64_t axis = ctx.node().attr_int("axis", -1);
  if (x.has_rank && (axis < -x.rank() || axis >= std::max<int64_t>(x.rank(), 1)))
    return ctx.error("axis " + std::to_string(axis) + " is out of range for X " + x.to_string());
  return ok_status();
}

Status softmax_kernel(KernelContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const UnaryQuant q, unary_quant(ctx));
  const Tensor f = dequantize_tensor(ctx.input(kX), q.x);
  Tensor y;
  if (ctx.node().attr_int("opset", 13) >= 13) {
    KILN_ASSIGN_OR_RETURN(y, run_float_op(ctx, "Softmax", {&f}));
  } else {
    int64_t axis = ctx.node().attr_int("axis", -1);
    if (axis < 0) axis += f.rank();
    int64_t outer = 1;
    for (int64_t i = 0; i < axis; ++i) outer *= f.dim(i);
    KILN_ASSIGN_OR_RETURN(const Tensor flat, f.reshaped({outer, outer == 0 ? 0 : f.numel() / outer}));
    ir::Node last_axis = ctx.node();
    last_axis.attrs["axis"] = ir::Attribute::of_int(-1);
    KILN_ASSIGN_OR_RETURN(const Tensor flat_y, run_float_op(ctx, "Softmax", {&flat}, &last_axis));
    KILN_ASSIGN_OR_RETURN(y, flat_y.reshaped(f.shape()));
  }
  return quantize_into(ctx, y, q.y);
}

constexpr char kAveragePool[] = "AveragePool";
constexpr char kGlobalAveragePool[] = "GlobalAveragePool";

// --- QLinearConcat: Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) per input

Status concat_check_arity(size_t n, const std::string& who) {
  if (n < 5 || (n - 2) % 3 != 0)
    return invalid_argument(who +
                            ": expects Y_scale, Y_zero_point and a (X, X_scale, X_zero_point) triple per input, got " +
                            std::to_string(n) + " inputs");
  return ok_status();
}

Status concat_infer(InferContext& ctx) {
  KILN_RETURN_IF_ERROR(concat_check_arity(ctx.num_inputs(), ctx.node().describe()));
  KILN_RETURN_IF_ERROR(require_inputs(ctx, {0, 1}));
  for (size_t i = 2; i < ctx.num_inputs(); i += 3) KILN_RETURN_IF_ERROR(require_inputs(ctx, {i, i + 1}));
  const DType t = ctx.input_dtype(1);
  if (!is_quant_type(t, false))
    return unimplemented(ctx.node().describe() + ": Y_zero_point has dtype " + dt_name(t) +
                         "; Kiln supports int8 and uint8");
  KILN_RETURN_IF_ERROR(check_output_params(ctx, 0, 1, t));
  std::vector<ValueInfo> xs;
  for (size_t i = 2; i < ctx.num_inputs(); i += 3) {
    const std::string what = "input " + std::to_string(i);
    KILN_RETURN_IF_ERROR(check_quant_tensor(ctx, i, i + 1, i + 2, what.c_str()));
    if (ctx.input_dtype(i) != t)
      return ctx.error(what + " has dtype " + dt_name(ctx.input_dtype(i)) + " but Y_zero_point has " + dt_name(t));
    ValueInfo v;
    v.dtype = DType::kFloat32;
    v.shape = ctx.input_shape(i);
    xs.push_back(std::move(v));
  }
  InferContext sub(ctx.node(), std::move(xs), 1);
  KILN_RETURN_IF_ERROR(float_op("Concat").infer(sub));
  ctx.set_output(0, t, sub.outputs()[0].shape);
  return ok_status();
}

Status concat_kernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(concat_check_arity(ctx.num_inputs(), ctx.node().describe()));
  KILN_ASSIGN_OR_RETURN(const TensorQuant qy, read_quant(ctx, 0, 1, ctx.input(1).dtype(), "Y_scale"));
  std::vector<Tensor> fs;
  for (size_t i = 2; i < ctx.num_inputs(); i += 3) {
    KILN_ASSIGN_OR_RETURN(const TensorQuant qx, read_quant(ctx, i + 1, i + 2, ctx.input(i).dtype(), "X_scale"));
    fs.push_back(dequantize_tensor(ctx.input(i), qx));
  }
  std::vector<const Tensor*> ptrs;
  for (const Tensor& f : fs) ptrs.push_back(&f);
  KILN_ASSIGN_OR_RETURN(Tensor cat, run_float_op(ctx, "Concat", ptrs));
  return quantize_into(ctx, cat, qy);
}

}  // namespace

void register_contrib_quantization_ops(OpRegistry& r) {
  auto add = [&](OpSchema s, MappingType m) {
    s.domain = kMicrosoftDomain;
    s.mapping = m;
    Status st = r.add(std::move(s));
    (void)st;  // duplicates are kept in r.registration_errors()
  };
  add({"QLinearAdd", "", 2, 8, 1, 1, binary_infer, binary_kernel<false>}, MappingType::kOneToOne);
  add({"QLinearMul", "", 2, 8, 1, 1, binary_infer, binary_kernel<true>}, MappingType::kOneToOne);
  add({"QLinearSigmoid", "", 2, 5, 1, 1, unary_infer, sigmoid_kernel}, MappingType::kOneToOne);
  add({"QLinearLeakyRelu", "", 2, 5, 1, 1, unary_infer, leaky_relu_kernel}, MappingType::kOneToOne);
  add({"QLinearSoftmax", "", 2, 5, 1, 1, softmax_infer, softmax_kernel}, MappingType::kManyToMany);
  add({"QLinearAveragePool", "", 2, 5, 1, 1, pool_infer<kAveragePool>, pool_kernel<kAveragePool>},
      MappingType::kManyToMany);
  add({"QLinearGlobalAveragePool", "", 2, 5, 1, 1, pool_infer<kGlobalAveragePool>, pool_kernel<kGlobalAveragePool>},
      MappingType::kManyToMany);
  // Requantizes as it concatenates: not a pure reorganization.
  add({"QLinearConcat", "", 2, -1, 1, 1, concat_infer, concat_kernel}, MappingType::kOther);
}

}  // namespace kiln::ops
