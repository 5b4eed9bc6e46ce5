// Device lowerings of MatMulInteger, QLinearMatMul, ConvInteger and
// QLinearConv, with the semantics of the reference kernels
// (engine/ops/integer_linalg.cc).
//
// Each is one map kernel: an invocation computes its output elements'
// int32 accumulators directly — a dot product over K (MatMul) or a window
// loop over the input channels of the group and the kernel (Conv, padding
// contributing zero) of zero-point-corrected int operands, wrapping as
// int32 — and the QLinear forms add the bias and requantize with
// kiln_requantize (shaders/quantize.glsl). Integer tensors are int32 on the
// device, so nothing is accumulated in floating point.
//
// This is the correctness baseline, not the fast path: no tiling, no shared
// memory, no int8 dot-product instructions (VK_KHR_shader_integer_dot_product)
// or integer cooperative matrices yet.
//
// Supported on the device: operands of rank >= 2 (MatMul), 1 to 3 spatial
// axes (Conv); zero points and scales of one value or one per row of A /
// per column of B (MatMul) or per output channel (w's, Conv); auto_pad
// SAME_* needs constant spatial sizes. Anything else runs on the host.
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

std::string oc(size_t i) { return "oc" + std::to_string(i); }

// A parameter with one value, or one per index `coord` along its only
// axis: its coordinates, or nullopt for any other shape.
std::optional<std::vector<std::string>> vector_param_coords(const LoweringContext& ctx, size_t input,
                                                            const std::string& name, const std::string& coord) {
  const std::vector<ir::Dim>& s = ctx.input_shape(input);
  if (s.empty()) return std::vector<std::string>{"0"};
  if (s.size() != 1) return std::nullopt;
  if (s[0].is_const()) return std::vector<std::string>{s[0].value() == 1 ? "0" : coord};
  return std::vector<std::string>{"(" + name + "_D0 == 1 ? 0 : " + coord + ")"};
}

struct BoundParam {
  Param param;
  std::vector<std::string> coords;
  std::string value() const { return param.at(coords); }
};

// Binds parameter `input` read per `coord` (or its one value); the
// unsupported status names what the device cannot read.
StatusOr<BoundParam> bind_vector_param(LoweringContext& ctx, size_t input, const std::string& name,
                                       const std::string& coord, const char* what, std::vector<KernelTensor>& ts) {
  BoundParam b;
  auto coords = vector_param_coords(ctx, input, name, coord);
  if (!coords) return ctx.unsupported(std::string(what) + " of shape other than one value or one per " + coord);
  b.coords = *coords;
  b.param = quant::bind_param(ctx, input, name);
  quant::add_tensor(b.param, ts);
  return b;
}

BoundParam zero_literal() {
  BoundParam b;
  b.param.literal = "0";
  return b;
}

float host_multiplier(double a_scale, double b_scale, double y_scale) {
  // As engine/ops/integer_linalg.cc: float32 product, float32 quotient.
  const float ab = static_cast<float>(a_scale) * static_cast<float>(b_scale);
  return ab / static_cast<float>(y_scale);
}

std::string helpers_requantize() {
  return fill_shader("quantize.glsl#div_rn") + fill_shader("quantize.glsl#requantize");
}

std::string out_range(DType t) {
  return glsl_int(ops::quant_min(t)) + ", " + glsl_int(ops::quant_max(t));
}

// The multiplier expression of a requantizing kernel: a literal when the
// three scales are one-value constants, else computed per element from
// the bound scales (a_scale * b_scale in float32, then the correctly
// rounded quotient by y_scale).
std::string multiplier_expr(const LoweringContext& ctx, size_t a, size_t b, size_t y, const BoundParam& as,
                            const BoundParam& bs, const BoundParam& ys) {
  const Tensor *ca = ctx.input_constant(a), *cb = ctx.input_constant(b), *cy = ctx.input_constant(y);
  if (ca && cb && cy && ca->numel() == 1 && cb->numel() == 1 && cy->numel() == 1)
    return glsl_float(host_multiplier(ca->get_f64(0), cb->get_f64(0), cy->get_f64(0)));
  return "kiln_div_rn(float(" + as.value() + ") * float(" + bs.value() + "), float(" + ys.value() + "))";
}

// --- MatMul ------------------------------------------------------------------

// The dot-product body of an integer MatMul: declares `int acc`.
StatusOr<std::string> matmul_acc(LoweringContext& ctx, size_t a_in, size_t b_in, size_t za_in, size_t zb_in,
                                 std::vector<KernelTensor>& ts, std::vector<KernelParam>& params) {
  const std::vector<ir::Dim>& as = ctx.input_shape(a_in);
  const std::vector<ir::Dim>& bs = ctx.input_shape(b_in);
  const std::vector<ir::Dim>& ys = ctx.output_shape(0);
  if (as.size() < 2 || bs.size() < 2) return ctx.unsupported("a 1-D operand");
  const size_t r = ys.size();
  ts.push_back(ctx.bind("a", ctx.input(a_in)));
  ts.push_back(ctx.bind("b", ctx.input(b_in)));
  std::vector<ir::Dim> a_in_shape = as, b_in_shape = bs;
  a_in_shape.back() = ir::Dim(1);
  b_in_shape[b_in_shape.size() - 2] = ir::Dim(1);
  std::vector<std::string> ca = broadcast_coords("a", a_in_shape, ys);
  std::vector<std::string> cb = broadcast_coords("b", b_in_shape, ys);
  ca.back() = "k";
  cb[cb.size() - 2] = "k";
  BoundParam za = zero_literal(), zb = zero_literal();
  if (ctx.has_input(za_in)) {
    KILN_ASSIGN_OR_RETURN(za, bind_vector_param(ctx, za_in, "za", oc(r - 2), "a_zero_point", ts));
  }
  if (ctx.has_input(zb_in)) {
    KILN_ASSIGN_OR_RETURN(zb, bind_vector_param(ctx, zb_in, "zb", oc(r - 1), "b_zero_point", ts));
  }
  params.push_back({"KILN_K", as.back()});
  return "int za = " + za.value() + ";\nint zb = " + zb.value() +
         ";\nint acc = 0;\nfor (int k = 0; k < KILN_K; ++k) acc += (a_at(" + join_args(ca) + ") - za) * (b_at(" +
         join_args(cb) + ") - zb);\n";
}

void emit(LoweringContext& ctx, const char* name, std::vector<KernelTensor> ts, std::vector<KernelParam> params,
          const std::string& body, std::string helpers = {}) {
  ts.push_back(ctx.bind("y", ctx.output(0), true));
  KernelDesc d = map_kernel(name, std::move(ts), body, std::move(helpers));
  d.params = std::move(params);
  ctx.emit(std::move(d));
}

Status lower_matmul_integer(LoweringContext& ctx) {
  std::vector<KernelTensor> ts;
  std::vector<KernelParam> params;
  KILN_ASSIGN_OR_RETURN(std::string body, matmul_acc(ctx, 0, 1, 2, 3, ts, params));
  emit(ctx, "matmul_integer", std::move(ts), std::move(params), body + "v = acc;");
  return ok_status();
}

enum QLinearMatMulInput : size_t { kA = 0, kAScale, kAZero, kB, kBScale, kBZero, kYScale, kYZero };

Status lower_qlinear_matmul(LoweringContext& ctx) {
  std::vector<KernelTensor> ts;
  std::vector<KernelParam> params;
  KILN_ASSIGN_OR_RETURN(std::string body, matmul_acc(ctx, kA, kB, kAZero, kBZero, ts, params));
  const size_t r = ctx.output_shape(0).size();
  KILN_ASSIGN_OR_RETURN(BoundParam as, bind_vector_param(ctx, kAScale, "sa", oc(r - 2), "a_scale", ts));
  KILN_ASSIGN_OR_RETURN(BoundParam bs, bind_vector_param(ctx, kBScale, "sb", oc(r - 1), "b_scale", ts));
  KILN_ASSIGN_OR_RETURN(BoundParam ys, bind_vector_param(ctx, kYScale, "sy", oc(r - 2), "y_scale", ts));
  KILN_ASSIGN_OR_RETURN(BoundParam yz, bind_vector_param(ctx, kYZero, "zy", oc(r - 2), "y_zero_point", ts));
  body += "v = kiln_requantize(acc, " + multiplier_expr(ctx, kAScale, kBScale, kYScale, as, bs, ys) + ", " +
          yz.value() + ", " + out_range(ctx.output_dtype(0)) + ");";
  emit(ctx, "qlinear_matmul", std::move(ts), std::move(params), body, helpers_requantize());
  return ok_status();
}

// --- Conv --------------------------------------------------------------------

struct ConvInputs {
  size_t x, w, x_zero, w_zero;
};

// The window loop of an integer Conv: declares `int acc` (starting at
// `init`) for output element (oc0 = n, oc1 = m, oc2.. spatial).
StatusOr<std::string> conv_acc(LoweringContext& ctx, const ConvInputs& in, const std::string& init,
                               std::vector<KernelTensor>& ts) {
  const std::vector<ir::Dim>& xs = ctx.input_shape(in.x);
  const std::vector<ir::Dim>& ws = ctx.input_shape(in.w);
  if (xs.size() < 3 || xs.size() > 5 || ws.size() != xs.size())
    return ctx.unsupported("a convolution of other than 1 to 3 spatial axes");
  const size_t spatial = xs.size() - 2;
  KILN_ASSIGN_OR_RETURN(const ops::WindowAttrs wa, ops::read_window_attrs(ctx.node(), spatial, false));
  std::vector<int64_t> pad_begin(spatial, 0);
  for (size_t i = 0; i < spatial; ++i) {
    if (wa.auto_pad == ops::AutoPad::kNotSet || wa.auto_pad == ops::AutoPad::kValid) {
      pad_begin[i] = wa.pads[i];
      continue;
    }
    const ir::Dim &d = xs[2 + i], &k = ws[2 + i];
    if (!d.is_const() || !k.is_const()) return ctx.unsupported("auto_pad SAME with symbolic spatial sizes");
    pad_begin[i] = ops::window_pads(wa, i, d.value(), k.value()).first;
  }
  const int64_t group = ctx.node().attr_int("group", 1);
  ts.push_back(ctx.bind("x", ctx.input(in.x)));
  ts.push_back(ctx.bind("w", ctx.input(in.w)));
  BoundParam zx = zero_literal(), zw = zero_literal();
  if (ctx.has_input(in.x_zero)) {
    if (const Tensor* c = ctx.input_constant(in.x_zero); c && c->numel() != 1)
      return ctx.unsupported("x_zero_point with more than one value");
    KILN_ASSIGN_OR_RETURN(zx, bind_vector_param(ctx, in.x_zero, "zx", "0", "x_zero_point", ts));
  }
  if (ctx.has_input(in.w_zero)) {
    KILN_ASSIGN_OR_RETURN(zw, bind_vector_param(ctx, in.w_zero, "zw", "m", "w_zero_point", ts));
  }

  std::string s = "int n = oc0, m = oc1;\nint grp = m / (w_D0 / " + std::to_string(group) + ");\n";
  s += "int zx = " + zx.value() + ";\nint zw = " + zw.value() + ";\nint acc = " + init + ";\n";
  s += "for (int ic = 0; ic < w_D1; ++ic) {\n  int c = grp * w_D1 + ic;\n";
  std::string indent = "  ";
  std::vector<std::string> xc = {"n", "c"}, wc = {"m", "ic"};
  for (size_t i = 0; i < spatial; ++i) {
    const std::string a = std::to_string(i), d = std::to_string(2 + i);
    s += indent + "for (int k" + a + " = 0; k" + a + " < w_D" + d + "; ++k" + a + ") {\n";
    indent += "  ";
    s += indent + "int i" + a + " = " + oc(2 + i) + " * " + std::to_string(wa.strides[i]) + " - " +
         std::to_string(pad_begin[i]) + " + k" + a + " * " + std::to_string(wa.dilations[i]) + ";\n";
    s += indent + "if (i" + a + " < 0 || i" + a + " >= x_D" + d + ") continue;\n";
    xc.push_back("i" + a);
    wc.push_back("k" + a);
  }
  s += indent + "acc += (x_at(" + join_args(xc) + ") - zx) * (w_at(" + join_args(wc) + ") - zw);\n";
  for (size_t i = 0; i <= spatial; ++i) {
    indent.resize(indent.size() - 2);
    s += indent + "}\n";
  }
  return s;
}

Status lower_conv_integer(LoweringContext& ctx) {
  std::vector<KernelTensor> ts;
  KILN_ASSIGN_OR_RETURN(std::string body, conv_acc(ctx, {0, 1, 2, 3}, "0", ts));
  emit(ctx, "conv_integer", std::move(ts), {}, body + "v = acc;");
  return ok_status();
}

enum QLinearConvInput : size_t { kX = 0, kXScale, kXZero, kW, kWScale, kWZero, kYScaleC, kYZeroC, kBias };

Status lower_qlinear_conv(LoweringContext& ctx) {
  std::vector<KernelTensor> ts;
  std::string init = "0";
  if (ctx.has_input(kBias)) {
    KILN_ASSIGN_OR_RETURN(BoundParam bias, bind_vector_param(ctx, kBias, "bias", "oc1", "B", ts));
    init = bias.value();
  }
  KILN_ASSIGN_OR_RETURN(std::string body, conv_acc(ctx, {kX, kW, kXZero, kWZero}, init, ts));
  KILN_ASSIGN_OR_RETURN(BoundParam xs, bind_vector_param(ctx, kXScale, "sx", "0", "x_scale", ts));
  KILN_ASSIGN_OR_RETURN(BoundParam ws, bind_vector_param(ctx, kWScale, "sw", "m", "w_scale", ts));
  KILN_ASSIGN_OR_RETURN(BoundParam ys, bind_vector_param(ctx, kYScaleC, "sy", "0", "y_scale", ts));
  KILN_ASSIGN_OR_RETURN(BoundParam yz, bind_vector_param(ctx, kYZeroC, "zy", "0", "y_zero_point", ts));
  for (const auto& [i, what] : {std::pair<size_t, const char*>{kXScale, "x_scale"}, {kYScaleC, "y_scale"},
                                {kYZeroC, "y_zero_point"}})
    if (const Tensor* c = ctx.input_constant(i); c && c->numel() != 1)
      return ctx.unsupported(std::string(what) + " with more than one value");
  body += "v = kiln_requantize(acc, " + multiplier_expr(ctx, kXScale, kWScale, kYScaleC, xs, ws, ys) + ", " +
          yz.value() + ", " + out_range(ctx.output_dtype(0)) + ");";
  emit(ctx, "qlinear_conv", std::move(ts), {}, body, helpers_requantize());
  return ok_status();
}

}  // namespace

void register_integer_linalg_lowerings(LoweringRegistry& r) {
  r.add("", "MatMulInteger", lower_matmul_integer);
  r.add("", "QLinearMatMul", lower_qlinear_matmul);
  r.add("", "ConvInteger", lower_conv_integer);
  r.add("", "QLinearConv", lower_qlinear_conv);
}

}  // namespace kiln::planner
