// Device lowerings of ONNX Runtime's com.microsoft QLinear ops that are
// "dequantize, float op, quantize" (engine/ops/qlinear_contrib.cc): each is
// one map kernel that dequantizes what it reads, applies the float op and
// quantizes what it stores, so no float tensor is ever materialized.
//
//   QLinearAdd, QLinearMul     A_f + B_f, A_f * B_f (numpy broadcasting)
//   QLinearSigmoid             1 / (1 + exp(-x_f))
//   QLinearLeakyRelu           x_f < 0 ? alpha * x_f : x_f
//   QLinearSoftmax             each invocation walks its row (max, sum)
//   QLinearGlobalAveragePool   each invocation sums its channel's window
//   QLinearAveragePool         each invocation walks its window (explicit
//                              pads; the pools take channels_last = 0 only)
//   QLinearConcat              each output element requantizes the one
//                              input element it comes from
//
// Dequantization (float(x) - float(zp)) * scale and the float adds and
// multiplies are single correctly rounded float32 operations marked
// `precise`, and the quantizing quotient is correctly rounded (kiln_div_rn,
// shaders/quantize.glsl), so Add, Mul, LeakyRelu and Concat give the
// reference's bits; Sigmoid's and Softmax's exp and the pools' summation
// order may move a result by one quantization step, the tolerance ONNX Runtime's own tests
// allow. Scales and zero points are one value each (per tensor), literals
// when constant. channels_last pools and auto_pad SAME_* run on the host.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "engine/ops/quantization.h"
#include "engine/ops/window_util.h"
#include "planner/lower_quantization.h"
#include "planner/lower_util.h"
#include "planner/shader_template.h"

namespace kiln::planner {
namespace {

using quant::Param;

// The scale and zero point of one quantized operand (literals or bound tensors).
struct QuantOperand {
  Param scale, zero;
  // (float(x) - float(zero)) * scale for the GLSL int expression `x`.
  std::string dequantize(const std::string& x) const {
    return "(float(" + x + ") - float(" + zero.at({"0"}) + ")) * float(" + scale.at({"0"}) + ")";
  }
};

// Parameters must hold one value (the reference requires it too).
Status check_one_value(LoweringContext& ctx, size_t input, const char* what) {
  if (!ctx.has_input(input)) return ok_status();
  ir::Dim n(1);
  for (const ir::Dim& d : ctx.input_shape(input)) n = n * d;
  if (!n.is_const() || n.value() != 1)
    return ctx.unsupported(std::string(what) + " must hold one value on the device");
  return ok_status();
}

// Binds scale input `scale` and zero point `zp` (the literal 0 when absent)
// as `<prefix>s` and `<prefix>z`, their tensors appended to `ts`.
StatusOr<QuantOperand> bind_operand(LoweringContext& ctx, size_t scale, size_t zp, const std::string& prefix,
                                    std::vector<KernelTensor>& ts) {
  KILN_RETURN_IF_ERROR(check_one_value(ctx, scale, "a scale"));
  KILN_RETURN_IF_ERROR(check_one_value(ctx, zp, "a zero point"));
  QuantOperand o;
  o.scale = quant::bind_param(ctx, scale, prefix + "s");
  o.zero.literal = "0";
  if (ctx.has_input(zp)) o.zero = quant::bind_param(ctx, zp, prefix + "z");
  quant::add_tensor(o.scale, ts);
  quant::add_tensor(o.zero, ts);
  return o;
}

std::string helpers() {
  return fill_shader("quantize.glsl#two_prod") + fill_shader("quantize.glsl#div_rn") +
         fill_shader("quantize.glsl#quantize");
}

// "v = quantize(r)" for the float GLSL variable `r` into output 0.
std::string store_quantized(const LoweringContext& ctx, const QuantOperand& y, const std::string& r) {
  const DType t = ctx.output_dtype(0);
  return "v = kiln_quantize(kiln_div_rn(" + r + ", float(" + y.scale.at({"0"}) + ")), " + y.zero.at({"0"}) + ", " +
         glsl_int(ops::quant_min(t)) + ", " + glsl_int(ops::quant_max(t)) + ");";
}

// --- QLinearAdd, QLinearMul -----------------------------------------------------

template <bool kMul>
Status lower_qlinear_binary(LoweringContext& ctx) {
  std::vector<KernelTensor> ts = {ctx.bind("a", ctx.input(0)), ctx.bind("b", ctx.input(3))};
  KILN_ASSIGN_OR_RETURN(const QuantOperand qa, bind_operand(ctx, 1, 2, "a", ts));
  KILN_ASSIGN_OR_RETURN(const QuantOperand qb, bind_operand(ctx, 4, 5, "b", ts));
  KILN_ASSIGN_OR_RETURN(const QuantOperand qc, bind_operand(ctx, 6, 7, "c", ts));
  KernelTensor y = ctx.bind("y", ctx.output(0), true);
  std::string body = "precise float fa = " + qa.dequantize(broadcast_load(ts[0], y.shape)) + ";\n";
  body += "precise float fb = " + qb.dequantize(broadcast_load(ts[1], y.shape)) + ";\n";
  body += std::string("precise float r = fa ") + (kMul ? "*" : "+") + " fb;\n";
  body += store_quantized(ctx, qc, "r");
  ts.push_back(std::move(y));
  ctx.emit(map_kernel(kMul ? "qlinear_mul" : "qlinear_add", std::move(ts), body, helpers()));
  return ok_status();
}

// --- QLinearSigmoid, QLinearLeakyRelu -------------------------------------------------

// A unary map: `fn` is GLSL computing float `r` from the dequantized `f`.
Status emit_unary(LoweringContext& ctx, const char* name, const std::string& fn) {
  std::vector<KernelTensor> ts = {ctx.bind("x", ctx.input(0))};
  KILN_ASSIGN_OR_RETURN(const QuantOperand qx, bind_operand(ctx, 1, 2, "x", ts));
  KILN_ASSIGN_OR_RETURN(const QuantOperand qy, bind_operand(ctx, 3, 4, "y", ts));
  KernelTensor y = ctx.bind("y", ctx.output(0), true);
  std::string body = "precise float f = " + qx.dequantize(broadcast_load(ts[0], y.shape)) + ";\n" + fn + "\n";
  body += store_quantized(ctx, qy, "r");
  ts.push_back(std::move(y));
  ctx.emit(map_kernel(name, std::move(ts), body, helpers()));
  return ok_status();
}

Status lower_qlinear_sigmoid(LoweringContext& ctx) {
  return emit_unary(ctx, "qlinear_sigmoid", "precise float r = 1.0 / (1.0 + exp(-f));");
}

Status lower_qlinear_leaky_relu(LoweringContext& ctx) {
  const std::string alpha = glsl_float(ctx.node().attr_float("alpha", 0.01f));
  return emit_unary(ctx, "qlinear_leaky_relu", "precise float r = f < 0.0 ? " + alpha + " * f : f;");
}

// --- QLinearSoftmax -----------------------------------------------------------

// Each output element walks its row along `axis` twice (the max, then the
// sum of exp(x_f - max)): O(n) per element, for the short rows of quantized
// classifiers and attention blocks. `opset` below 13 flattens X at `axis`,
// which is the same only when `axis` is the last one; otherwise the host.
Status lower_qlinear_softmax(LoweringContext& ctx) {
  const size_t rank = ctx.input_shape(0).size();
  const std::optional<int64_t> axis = normalize_axis(ctx.node().attr_int("axis", -1), static_cast<int64_t>(rank));
  if (!axis) return ctx.error("axis is out of range");
  if (ctx.node().attr_int("opset", 13) < 13 && static_cast<size_t>(*axis) + 1 != rank)
    return ctx.unsupported("opset < 13 semantics (X flattened at axis) with axis not the last");
  std::vector<KernelTensor> ts = {ctx.bind("X", ctx.input(0))};
  KILN_ASSIGN_OR_RETURN(const QuantOperand qx, bind_operand(ctx, 1, 2, "x", ts));
  KILN_ASSIGN_OR_RETURN(const QuantOperand qy, bind_operand(ctx, 3, 4, "y", ts));
  std::vector<std::string> row;
  for (size_t i = 0; i < rank; ++i) row.push_back(i == static_cast<size_t>(*axis) ? "j" : "oc" + std::to_string(i));
  const std::string extent = "X_D" + std::to_string(*axis);
  const std::string at_j = qx.dequantize("X_at(" + join_args(row) + ")");
  std::string body = "float m = " + glsl_float(-INFINITY) + ";\n";
  body += "for (int j = 0; j < " + extent + "; ++j) m = max(m, " + at_j + ");\n";
  body += "float s = 0.0;\nfor (int j = 0; j < " + extent + "; ++j) s += exp(" + at_j + " - m);\n";
  body += "float r = exp(" + qx.dequantize("X_at(" + coord_list(rank) + ")") + " - m) / s;\n";
  body += store_quantized(ctx, qy, "r");
  ts.push_back(ctx.bind("y", ctx.output(0), true));
  ctx.emit(map_kernel("qlinear_softmax", std::move(ts), body, helpers()));
  return ok_status();
}

// --- QLinearGlobalAveragePool ----------------------------------------------------

Status lower_qlinear_global_average_pool(LoweringContext& ctx) {
  if (ctx.node().attr_int("channels_last", 0) != 0) return ctx.unsupported("channels_last = 1");
  const size_t rank = ctx.input_shape(0).size();
  if (rank < 3 || rank > 5) return ctx.unsupported("other than 1 to 3 spatial axes");
  std::vector<KernelTensor> ts = {ctx.bind("X", ctx.input(0))};
  KILN_ASSIGN_OR_RETURN(const QuantOperand qx, bind_operand(ctx, 1, 2, "x", ts));
  KILN_ASSIGN_OR_RETURN(const QuantOperand qy, bind_operand(ctx, 3, 4, "y", ts));
  // The float kernel's order: spatial positions row-major, summed in float.
  std::string body = "precise float s = 0.0;\nint count = 1;\n";
  std::vector<std::string> coords = {"oc0", "oc1"};
  std::string indent;
  for (size_t i = 2; i < rank; ++i) {
    const std::string a = std::to_string(i);
    body += "count *= X_D" + a + ";\n";
  }
  for (size_t i = 2; i < rank; ++i) {
    const std::string a = std::to_string(i);
    body += indent + "for (int p" + a + " = 0; p" + a + " < X_D" + a + "; ++p" + a + ") {\n";
    indent += "  ";
    coords.push_back("p" + a);
  }
  body += indent + "precise float f = " + qx.dequantize("X_at(" + join_args(coords) + ")") + ";\n";
  body += indent + "s += f;\n";
  for (size_t i = 2; i < rank; ++i) {
    indent.resize(indent.size() - 2);
    body += indent + "}\n";
  }
  body += "float r = kiln_div_rn(s, float(count));\n" + store_quantized(ctx, qy, "r");
  ts.push_back(ctx.bind("y", ctx.output(0), true));
  ctx.emit(map_kernel("qlinear_global_average_pool", std::move(ts), body, helpers()));
  return ok_status();
}

// --- QLinearAveragePool ---------------------------------------------------------

// Each output element walks its window as the float AveragePool's map
// kernel does (lower_pooling.cc): taps in the padding are skipped and
// counted only with count_include_pad, and then only within the explicit
// pads. Explicit pads only (auto_pad SAME_* runs on the host).
Status lower_qlinear_average_pool(LoweringContext& ctx) {
  if (ctx.node().attr_int("channels_last", 0) != 0) return ctx.unsupported("channels_last = 1");
  const std::vector<ir::Dim>& xs = ctx.input_shape(0);
  if (xs.size() < 3 || xs.size() > 5) return ctx.unsupported("other than 1 to 3 spatial axes");
  const size_t spatial = xs.size() - 2;
  KILN_ASSIGN_OR_RETURN(const ops::WindowAttrs w, ops::read_window_attrs(ctx.node(), spatial, true));
  if (w.auto_pad == ops::AutoPad::kSameUpper || w.auto_pad == ops::AutoPad::kSameLower)
    return ctx.unsupported("auto_pad SAME_*");
  const bool include_pad = ctx.node().attr_int("count_include_pad", 0) != 0;
  std::vector<KernelTensor> ts = {ctx.bind("X", ctx.input(0))};
  KILN_ASSIGN_OR_RETURN(const QuantOperand qx, bind_operand(ctx, 1, 2, "x", ts));
  KILN_ASSIGN_OR_RETURN(const QuantOperand qy, bind_operand(ctx, 3, 4, "y", ts));
  std::string body = "precise float acc = 0.0;\nint cnt = 0;\nint padded = 1;\n";
  std::string open, close, args = "oc0, oc1";
  for (size_t i = 0; i < spatial; ++i) {
    const std::string s = std::to_string(i), ax = std::to_string(i + 2);
    const std::string ks = glsl_int(w.kernel[i]), st = glsl_int(w.strides[i]), dl = glsl_int(w.dilations[i]);
    const std::string pb = glsl_int(w.pads[i]), pe = glsl_int(w.pads[i + spatial]);
    body += "int s" + s + " = oc" + ax + " * " + st + " - " + pb + ";\n";
    if (include_pad)
      body += "{\n  int n = 0;\n  for (int k = 0; k < " + ks + "; ++k) { int i = s" + s + " + k * " + dl +
              "; n += (i >= -" + pb + " && i < X_D" + ax + " + " + pe + ") ? 1 : 0; }\n  padded *= n;\n}\n";
    open += "for (int k" + s + " = 0; k" + s + " < " + ks + "; ++k" + s + ") {\n  int i" + s + " = s" + s + " + k" +
            s + " * " + dl + ";\n  if (i" + s + " < 0 || i" + s + " >= X_D" + ax + ") continue;\n";
    close += "}\n";
    args += ", i" + s;
  }
  body += open + "  precise float f = " + qx.dequantize("X_at(" + args + ")") + ";\n  acc += f;\n  ++cnt;\n" + close;
  body += std::string("int count = ") + (include_pad ? "padded" : "cnt") + ";\n";
  body += "float r = count > 0 ? kiln_div_rn(acc, float(count)) : uintBitsToFloat(0x7fc00000u);\n";
  body += store_quantized(ctx, qy, "r");
  ts.push_back(ctx.bind("y", ctx.output(0), true));
  ctx.emit(map_kernel("qlinear_average_pool", std::move(ts), body, helpers()));
  return ok_status();
}

// --- QLinearConcat -----------------------------------------------------------------

Status lower_qlinear_concat(LoweringContext& ctx) {
  const size_t n = ctx.num_inputs();
  if (n < 5 || (n - 2) % 3 != 0)
    return ctx.error("expects Y_scale, Y_zero_point and (X, X_scale, X_zero_point) triples");
  const size_t rank = ctx.output_shape(0).size();
  const std::optional<int64_t> axis = normalize_axis(ctx.node().attr_int("axis", 0), static_cast<int64_t>(rank));
  if (!axis) return ctx.error("axis is out of range");
  std::vector<KernelTensor> ts;
  KILN_ASSIGN_OR_RETURN(const QuantOperand qy, bind_operand(ctx, 0, 1, "y", ts));
  std::vector<std::string> coords;
  for (size_t i = 0; i < rank; ++i) coords.push_back(i == static_cast<size_t>(*axis) ? "a" : "oc" + std::to_string(i));
  const std::string ax = "oc" + std::to_string(*axis);
  std::string body = "int a = " + ax + ";\nprecise float r = 0.0;\n";
  std::string close;
  for (size_t i = 2, k = 0; i < n; i += 3, ++k) {
    const std::string name = "x" + std::to_string(k);
    ts.push_back(ctx.bind(name, ctx.input(i)));
    KILN_ASSIGN_OR_RETURN(const QuantOperand qx, bind_operand(ctx, i + 1, i + 2, name, ts));
    const std::string extent = name + "_D" + std::to_string(*axis);
    const std::string load = qx.dequantize(name + "_at(" + join_args(coords) + ")");
    if (i + 3 < n) {
      body += "if (a < " + extent + ") {\n  r = " + load + ";\n} else {\n  a -= " + extent + ";\n";
      close += "}\n";
    } else {
      body += "r = " + load + ";\n";
    }
  }
  body += close + store_quantized(ctx, qy, "r");
  ts.push_back(ctx.bind("y", ctx.output(0), true));
  ctx.emit(map_kernel("qlinear_concat", std::move(ts), body, helpers()));
  return ok_status();
}

}  // namespace

void register_qlinear_contrib_lowerings(LoweringRegistry& r) {
  r.add(ops::kMicrosoftDomain, "QLinearAdd", lower_qlinear_binary<false>);
  r.add(ops::kMicrosoftDomain, "QLinearMul", lower_qlinear_binary<true>);
  r.add(ops::kMicrosoftDomain, "QLinearSigmoid", lower_qlinear_sigmoid);
  r.add(ops::kMicrosoftDomain, "QLinearLeakyRelu", lower_qlinear_leaky_relu);
  r.add(ops::kMicrosoftDomain, "QLinearSoftmax", lower_qlinear_softmax);
  r.add(ops::kMicrosoftDomain, "QLinearGlobalAveragePool", lower_qlinear_global_average_pool);
  r.add(ops::kMicrosoftDomain, "QLinearAveragePool", lower_qlinear_average_pool);
  r.add(ops::kMicrosoftDomain, "QLinearConcat", lower_qlinear_concat);
}

}  // namespace kiln::planner
