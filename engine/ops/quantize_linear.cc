// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear: schemas,
// shape inference and reference kernels (see quantization.h for the rules
// they share).
//
// The arithmetic is numpy's, as ONNX's reference implementation does it,
// so that results are bit-exact with it:
//   QuantizeLinear    y = saturate(rint(x / scale) + zero_point), the
//                     quotient in float32 for float32/float16 inputs (rounded
//                     to float16 when x and the scale both are float16), in
//                     double for double and int32 inputs; NaN quantizes to
//                     the zero point.
//   DequantizeLinear  y = (float32(x) - float32(zero_point)) * scale in
//                     float32 (double for a double scale), stored in the
//                     scale's type.
//   DynamicQuantizeLinear (uint8 only)
//                     lo = min(0, min(x)), hi = max(0, max(x)) in float32,
//                     scale = (hi - lo or 1 when equal) / 255,
//                     zero_point = saturate(rint(0 - lo / scale)),
//                     y = saturate(rint(x / scale) + zero_point).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "engine/ops/linalg_internal.h"
#include "engine/ops/op_registry.h"
#include "engine/ops/quantization.h"

namespace kiln::ops {

bool is_quant_type(DType t, bool wide) {
  if (t == DType::kInt8 || t == DType::kUInt8) return true;
  return wide && (t == DType::kInt16 || t == DType::kUInt16);
}

int64_t quant_min(DType t) {
  switch (t) {
    case DType::kInt8: return -128;
    case DType::kInt16: return -32768;
    case DType::kInt32: return std::numeric_limits<int32_t>::min();
    default: return 0;
  }
}

int64_t quant_max(DType t) {
  switch (t) {
    case DType::kInt8: return 127;
    case DType::kUInt8: return 255;
    case DType::kInt16: return 32767;
    case DType::kUInt16: return 65535;
    default: return std::numeric_limits<int32_t>::max();
  }
}

StatusOr<QuantGranularity> resolve_granularity(const ir::Node& node, const ir::SymShape& x, const ir::SymShape& scale) {
  QuantGranularity g;
  const int64_t block = node.attr_int("block_size", 0);
  if (block < 0) return invalid_argument(node.describe() + ": block_size = " + std::to_string(block) + " is negative");
  const bool one_value = scale.has_rank && scale.rank() <= 1 &&
                         (scale.rank() == 0 || (scale.dims[0].is_const() && scale.dims[0].value() == 1));
  if (block == 0 && (one_value || !scale.has_rank)) return g;  // per-tensor
  if (!x.has_rank) {
    g.kind = block > 0 ? QuantGranularity::Kind::kBlocked : QuantGranularity::Kind::kPerAxis;
    g.block_size = block;
    return g;
  }
  const int64_t rank = x.rank();
  int64_t axis = node.attr_int("axis", 1);
  if (axis < -rank || axis >= rank)
    return invalid_argument(node.describe() + ": axis " + std::to_string(axis) + " is out of range for x " +
                            x.to_string());
  if (axis < 0) axis += rank;
  g.axis = axis;
  const ir::Dim& xd = x.dims[static_cast<size_t>(axis)];
  if (block == 0) {
    if (scale.rank() != 1)
      return invalid_argument(node.describe() + ": the scale " + scale.to_string() +
                              " must be a scalar or 1-D (per-axis) without block_size");
    const ir::Dim& sd = scale.dims[0];
    if (sd.is_const() && xd.is_const() && sd.value() != xd.value())
      return invalid_argument(node.describe() + ": the per-axis scale has " + sd.to_string() + " values but x " +
                              x.to_string() + " has " + xd.to_string() + " along axis " + std::to_string(axis));
    g.kind = QuantGranularity::Kind::kPerAxis;
    return g;
  }
  // Blocked (opset 21): the scale has x's rank, x's dims except along axis,
  // where it has one value per block.
  if (scale.rank() != rank)
    return invalid_argument(node.describe() + ": with block_size " + std::to_string(block) + " the scale " +
                            scale.to_string() + " must have the rank of x " + x.to_string());
  for (int64_t i = 0; i < rank; ++i) {
    const ir::Dim& sd = scale.dims[static_cast<size_t>(i)];
    const ir::Dim want = i == axis ? ir::Dim::ceil_div(xd, ir::Dim(block)) : x.dims[static_cast<size_t>(i)];
    if (sd.is_const() && want.is_const() && sd.value() != want.value())
      return invalid_argument(node.describe() + ": the blocked scale " + scale.to_string() + " does not match x " +
                              x.to_string() + " with block_size " + std::to_string(block) + " along axis " +
                              std::to_string(axis) + " (expected " + want.to_string() + " at dim " + std::to_string(i) +
                              ")");
  }
  g.kind = QuantGranularity::Kind::kBlocked;
  g.block_size = block;
  return g;
}

namespace {

std::string dt_name(DType t) { return std::string(dtype_name(t)); }

// The scale (or zero point) element that applies to element i of x.
class ParamIndex {
 public:
  ParamIndex(const QuantGranularity& g, const Shape& x, const Shape& scale) : kind_(g.kind) {
    if (kind_ == QuantGranularity::Kind::kPerTensor) return;
    const size_t axis = static_cast<size_t>(g.axis);
    axis_dim_ = x[axis];
    for (size_t i = axis + 1; i < x.size(); ++i) inner_ *= x[i];
    block_ = g.block_size;
    if (kind_ == QuantGranularity::Kind::kBlocked) scale_axis_dim_ = scale[axis];
  }
  int64_t operator()(int64_t i) const {
    if (kind_ == QuantGranularity::Kind::kPerTensor) return 0;
    const int64_t a = (i / inner_) % axis_dim_;
    if (kind_ == QuantGranularity::Kind::kPerAxis) return a;
    const int64_t outer = i / (inner_ * axis_dim_);
    return (outer * scale_axis_dim_ + a / block_) * inner_ + i % inner_;
  }

 private:
  QuantGranularity::Kind kind_;
  int64_t axis_dim_ = 1, inner_ = 1, block_ = 1, scale_axis_dim_ = 1;
};

Status check_scale(const InferContext& ctx, size_t i) {
  if (!dtype_is_float(ctx.input_dtype(i)))
    return ctx.error("the scale (input " + std::to_string(i) + ") has dtype " + dt_name(ctx.input_dtype(i)) +
                     "; expected float32, float16 or float64");
  return ok_status();
}

// The zero point, when given, must have the scale's shape.
Status check_zero_point_shape(const InferContext& ctx, size_t scale, size_t zp) {
  if (!ctx.has_input(zp)) return ok_status();
  const ir::SymShape& s = ctx.input_shape(scale);
  const ir::SymShape& z = ctx.input_shape(zp);
  if (s.has_rank && z.has_rank && s.rank() != z.rank() && !(s.rank() <= 1 && z.rank() <= 1))
    return ctx.error("the zero point " + z.to_string() + " must have the scale's shape " + s.to_string());
  if (s.has_rank && z.has_rank && s.rank() == z.rank())
    for (size_t i = 0; i < s.dims.size(); ++i)
      if (s.dims[i].is_const() && z.dims[i].is_const() && s.dims[i].value() != z.dims[i].value())
        return ctx.error("the zero point " + z.to_string() + " must have the scale's shape " + s.to_string());
  return ok_status();
}

std::vector<double> as_doubles(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.get_f64(i);
  return v;
}

// Zero points as int64 (all zeros when the input is absent).
std::vector<int64_t> zero_points(const KernelContext& ctx, size_t i, int64_t count) {
  if (!ctx.has_input(i)) return std::vector<int64_t>(static_cast<size_t>(count), 0);
  return ctx.input(i).to_i64_vector();
}

// The scale and zero point each element of x (input 0) takes, shared by the
// QuantizeLinear and DequantizeLinear kernels: inputs 1 (scale) and 2 (zero
// point) as numbers, and the index into them of element i.
struct ElementParams {
  ParamIndex index;
  std::vector<double> scale;
  std::vector<int64_t> zero_point;
};

StatusOr<ElementParams> element_params(const KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  KILN_ASSIGN_OR_RETURN(const QuantGranularity g,
                        resolve_granularity(ctx.node(), ir::SymShape::from_concrete(x.shape()),
                                            ir::SymShape::from_concrete(scale.shape())));
  return ElementParams{ParamIndex(g, x.shape(), scale.shape()), as_doubles(scale), zero_points(ctx, 2, scale.numel())};
}

// rint (round half to even in the default rounding mode) + zero point,
// saturated; NaN gives the zero point.
int64_t round_saturate(double q, int64_t zp, int64_t lo, int64_t hi) {
  const double r = std::isnan(q) ? 0.0 : std::nearbyint(q) + static_cast<double>(zp);
  if (r <= static_cast<double>(lo)) return lo;
  if (r >= static_cast<double>(hi)) return hi;
  return static_cast<int64_t>(r);
}

// --- QuantizeLinear --------------------------------------------------------

DType quantize_output_dtype(const InferContext& ctx, Status& error) {
  const int64_t attr = ctx.node().attr_int("output_dtype", 0);
  DType from_attr = DType::kUndefined;
  if (attr != 0) {
    from_attr = dtype_from_onnx(attr);
    if (!is_quant_type(from_attr, true)) {
      error = unimplemented(ctx.node().describe() + ": output_dtype " + std::to_string(attr) +
                            " is not supported (Kiln quantizes to int8, uint8, int16 and uint16)");
      return DType::kUndefined;
    }
  }
  if (!ctx.has_input(2)) return from_attr == DType::kUndefined ? DType::kUInt8 : from_attr;
  const DType zp = ctx.input_dtype(2);
  if (from_attr != DType::kUndefined && from_attr != zp) {
    error = ctx.error("output_dtype " + dt_name(from_attr) + " differs from the zero point's dtype " + dt_name(zp));
    return DType::kUndefined;
  }
  return zp;
}

Status quantize_infer(InferContext& ctx) {
  const DType xt = ctx.input_dtype(0);
  if (!dtype_is_float(xt) && xt != DType::kInt32)
    return ctx.error("x has dtype " + dt_name(xt) + "; expected float32, float16, float64 or int32");
  KILN_RETURN_IF_ERROR(check_scale(ctx, 1));
  Status error = ok_status();
  const DType yt = quantize_output_dtype(ctx, error);
  KILN_RETURN_IF_ERROR(std::move(error));
  if (!is_quant_type(yt, true))
    return unimplemented(ctx.node().describe() + ": quantizing to " + dt_name(yt) +
                         " is not supported (Kiln quantizes to int8, uint8, int16 and uint16)");
  KILN_RETURN_IF_ERROR(check_zero_point_shape(ctx, 1, 2));
  KILN_RETURN_IF_ERROR(resolve_granularity(ctx.node(), ctx.input_shape(0), ctx.input_shape(1)).status());
  ctx.set_output(0, yt, ctx.input_shape(0));
  return ok_status();
}

// x / scale with numpy's precision (see the file comment).
double quotient(double x, double s, DType xt, DType st) {
  if (xt == DType::kFloat64 || st == DType::kFloat64 || xt == DType::kInt32) return x / s;
  const float q = static_cast<float>(x) / static_cast<float>(s);
  if (xt == DType::kFloat16 && st == DType::kFloat16) return static_cast<double>(half_to_float(float_to_half(q)));
  return static_cast<double>(q);
}

Status quantize_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  KILN_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0));
  KILN_ASSIGN_OR_RETURN(const ElementParams params, element_params(ctx));
  const int64_t lo = quant_min(y->dtype()), hi = quant_max(y->dtype());
  const DType xt = x.dtype(), st = scale.dtype();
  bool ok = true;
  visit_dtype(xt, [&]<typename X>() {
    if constexpr (std::is_same_v<X, bool>) {
      ok = false;
    } else {
      const X* xd = x.data<X>();
      for (int64_t i = 0; i < x.numel(); ++i) {
        const size_t p = static_cast<size_t>(params.index(i));
        const double q = quotient(to_f64(xd[i]), params.scale[p], xt, st);
        y->set_f64(i, static_cast<double>(round_saturate(q, params.zero_point[p], lo, hi)));
      }
    }
  });
  if (!ok) return ctx.error("unsupported x dtype " + dt_name(xt));
  return ok_status();
}

// --- DequantizeLinear ------------------------------------------------------

Status dequantize_infer(InferContext& ctx) {
  const DType xt = ctx.input_dtype(0);
  if (!is_quant_type(xt, true) && xt != DType::kInt32)
    return unimplemented(ctx.node().describe() + ": dequantizing " + dt_name(xt) +
                         " is not supported (int8, uint8, int16, uint16 and int32)");
  KILN_RETURN_IF_ERROR(check_scale(ctx, 1));
  if (ctx.has_input(2) && ctx.input_dtype(2) != xt)
    return ctx.error("the zero point has dtype " + dt_name(ctx.input_dtype(2)) + " but x has " + dt_name(xt));
  if (xt == DType::kInt32 && ctx.input_value(2)) {
    for (int64_t v : ctx.input_value(2)->to_i64_vector())
      if (v != 0) return ctx.error("an int32 x must have a zero point of 0 (ONNX), got " + std::to_string(v));
  }
  KILN_RETURN_IF_ERROR(check_zero_point_shape(ctx, 1, 2));
  KILN_RETURN_IF_ERROR(resolve_granularity(ctx.node(), ctx.input_shape(0), ctx.input_shape(1)).status());
  ctx.set_output(0, ctx.input_dtype(1), ctx.input_shape(0));
  return ok_status();
}

Status dequantize_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  KILN_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0));
  KILN_ASSIGN_OR_RETURN(const ElementParams params, element_params(ctx));
  if (x.dtype() == DType::kInt32)
    for (int64_t v : params.zero_point)
      if (v != 0) return ctx.error("an int32 x must have a zero point of 0 (ONNX), got " + std::to_string(v));
  const bool f64 = scale.dtype() == DType::kFloat64;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const size_t p = static_cast<size_t>(params.index(i));
    const int64_t xv = x.get_i64(i);
    double v = 0.0;
    if (f64) {
      v = (static_cast<double>(xv) - static_cast<double>(params.zero_point[p])) * params.scale[p];
    } else {
      // float32 arithmetic; set_f64 rounds a float16 output once more.
      const float d = static_cast<float>(xv) - static_cast<float>(params.zero_point[p]);
      v = static_cast<double>(d * static_cast<float>(params.scale[p]));
    }
    y->set_f64(i, v);
  }
  return ok_status();
}

// --- DynamicQuantizeLinear -------------------------------------------------

Status dynamic_quantize_infer(InferContext& ctx) {
  if (ctx.input_dtype(0) != DType::kFloat32)
    return ctx.error("x has dtype " + dt_name(ctx.input_dtype(0)) + "; DynamicQuantizeLinear takes float32");
  ctx.set_output(0, DType::kUInt8, ctx.input_shape(0));
  if (ctx.num_outputs() > 1) ctx.set_output(1, DType::kFloat32, ir::SymShape(std::vector<ir::Dim>{}));
  if (ctx.num_outputs() > 2) ctx.set_output(2, DType::kUInt8, ir::SymShape(std::vector<ir::Dim>{}));
  return ok_status();
}

Status dynamic_quantize_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  KILN_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0));
  const float* xd = x.data<float>();
  const DynamicQuant q = dynamic_quant_params(xd, x.numel());
  for (int64_t i = 0; i < x.numel(); ++i) y->data<uint8_t>()[i] = q.quantize(xd[i]);
  if (ctx.num_outputs() > 1) {
    KILN_ASSIGN_OR_RETURN(Tensor * s, ctx.allocate_output(1));
    s->data<float>()[0] = q.scale;
  }
  if (ctx.num_outputs() > 2) {
    KILN_ASSIGN_OR_RETURN(Tensor * z, ctx.allocate_output(2));
    z->data<uint8_t>()[0] = static_cast<uint8_t>(q.zero_point);
  }
  return ok_status();
}

}  // namespace

uint8_t DynamicQuant::quantize(float x) const {
  return static_cast<uint8_t>(round_saturate(static_cast<double>(x / scale), zero_point, 0, 255));
}

DynamicQuant dynamic_quant_params(const float* x, int64_t n) {
  // numpy's min/max propagate NaN; so does this fold.
  float lo = 0.0f, hi = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    if (std::isnan(v) || std::isnan(lo)) lo = std::numeric_limits<float>::quiet_NaN();
    else lo = std::min(lo, v);
    if (std::isnan(v) || std::isnan(hi)) hi = std::numeric_limits<float>::quiet_NaN();
    else hi = std::max(hi, v);
  }
  const float range = hi == lo ? 1.0f : hi - lo;
  DynamicQuant q;
  q.scale = range / 255.0f;
  const float zp_f = 0.0f - lo / q.scale;
  q.zero_point = round_saturate(static_cast<double>(zp_f), 0, 0, 255);
  return q;
}

void register_integer_linalg_ops(OpRegistry& r);        // integer_linalg.cc
void register_contrib_quantization_ops(OpRegistry& r);  // qlinear_contrib.cc

void register_quantization_ops(OpRegistry& r) {
  auto add = [&](OpSchema s, MappingType m) {
    s.mapping = m;
    Status st = r.add(std::move(s));
    (void)st;  // duplicates are kept in r.registration_errors()
  };
  // Per-tensor and per-axis parameters broadcast to x: one-to-one on x.
  add({"QuantizeLinear", "", 2, 3, 1, 1, quantize_infer, quantize_kernel}, MappingType::kOneToOne);
  add({"DequantizeLinear", "", 2, 3, 1, 1, dequantize_infer, dequantize_kernel}, MappingType::kOneToOne);
  // The scale depends on every element of x.
  add({"DynamicQuantizeLinear", "", 1, 1, 1, 3, dynamic_quantize_infer, dynamic_quantize_kernel},
      MappingType::kManyToMany);
  // ONNX Runtime's com.microsoft forms: the ONNX semantics (opset 13).
  add({"QuantizeLinear", kMicrosoftDomain, 2, 3, 1, 1, quantize_infer, quantize_kernel}, MappingType::kOneToOne);
  add({"DequantizeLinear", kMicrosoftDomain, 2, 3, 1, 1, dequantize_infer, dequantize_kernel}, MappingType::kOneToOne);
  register_integer_linalg_ops(r);
  register_contrib_quantization_ops(r);
}

}  // namespace kiln::ops
