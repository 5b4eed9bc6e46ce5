// Device lowerings of MatMulInteger, QLinearMatMul, ConvInteger and
// QLinearConv, with the semantics of the reference kernels
// (engine/ops/integer_linalg.cc).
//
// Each is one tiled integer GEMM (gemm_int.h): MatMul over Y's broadcast
// batch, Conv as an implicit GEMM per (image, group) whose A operand is the
// im2col matrix computed while the tile is loaded (padding contributes
// zero) — except depthwise convolutions (at most two output channels per
// group), where a tile would be nearly all padding: one map kernel whose
// invocations loop over their windows. The operands have their zero points subtracted as they are loaded
// and are multiplied and summed in int32 (wrapping as ONNX's int32
// arithmetic does; integer tensors are int32 on the device); the QLinear
// forms add the int32 bias and requantize each accumulator in the store
// with kiln_requantize (shaders/quantize.glsl). Nothing is accumulated in
// floating point.
//
// With a constant B (the weights) whose values minus their zero point fit
// int8, and an int8/uint8 A, the GEMM runs on packed int8 dot products
// where the device has them (gemm_int.h's dot-product path; B packed here
// at plan time, int8_dot_operand); else, or with the kiln.kernel hint
// int8_dot=off, on the scalar int32 kernel. Both give the same bits.
//
// ONNX Runtime's QGemm (2-D, transA/transB, int32 C, quantized or float
// output) and MatMulIntegerToFloat (the float store: float32(acc) *
// (a_scale * b_scale) + bias) are the same GEMMs with other stores, and
// DynamicQuantizeMatMul is DynamicQuantizeLinear's range pass, then the
// GEMM quantizing its float A as it loads it.
//
// Supported on the device: operands of rank >= 2 (MatMul), 1 to 3 spatial
// axes (Conv); zero points and scales of one value or one per row of A /
// per column of B (MatMul) or per output channel (w's, Conv); auto_pad
// SAME_* needs constant spatial sizes. Anything else runs on the host.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/ops/quantization.h"
#include "engine/ops/window_util.h"
#include "planner/gemm_int.h"
#include "planner/gemm_int8_pack.h"
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
  if (!coords)
    return ctx.unsupported(std::string(what) + " " + ir::SymShape(ctx.input_shape(input)).to_string() +
                           ": the device reads one value or one per row, column or channel (1-D)");
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

// The zero point `input` of a constant operand as a function of its index
// along the operand's channel axis (0 when absent); nullopt when it is not
// a constant of one value or `channels` values.
std::optional<std::function<int64_t(int64_t)>> constant_zero_point(const LoweringContext& ctx, size_t input,
                                                                   int64_t channels) {
  if (!ctx.has_input(input)) return [](int64_t) { return int64_t{0}; };
  const Tensor* z = ctx.input_constant(input);
  if (!z || z->rank() > 1 || (z->numel() != 1 && z->numel() != channels)) return std::nullopt;
  const bool one = z->numel() == 1;
  return [z, one](int64_t c) { return z->get_i64(one ? 0 : c); };
}

// B of the dot-product path (gemm_int.h) packed at plan time from
// value(g, k, n), B minus its zero point; nullopt (the scalar kernel) when
// the device lacks the dot products, A is not 8-bit, or B does not fit int8
// after its zero point. The caller binds it (bind_packed) once every check
// that could still send the node to the host has passed.
std::optional<PackedInt8Operand> int8_dot_operand(const LoweringContext& ctx, size_t a_in, int64_t groups,
                                                  const GemmProblem& p,
                                                  const std::function<int64_t(int64_t, int64_t, int64_t)>& value) {
  const DType a = ctx.input_dtype(a_in);
  if (!int8_dot_available(ctx) || (a != DType::kInt8 && a != DType::kUInt8)) return std::nullopt;
  if (!p.k.is_const() || !p.n.is_const()) return std::nullopt;
  return pack_int8_operand(groups, p.k.value(), p.n.value(), value);
}

// Uploads the packed B and binds it as BP (words) and BS (column sums).
void bind_packed(LoweringContext& ctx, std::optional<PackedInt8Operand>& packed, std::vector<KernelTensor>& ts) {
  if (!packed) return;
  const DeviceLayout i32{Storage::kBuffer, ElemType::kI32};
  ts.push_back(ctx.bind("BP", ctx.add_constant(std::move(packed->words), i32)));
  ts.push_back(ctx.bind("BS", ctx.add_constant(std::move(packed->colsum), i32)));
}

// The dot path's B helpers over BP and BS for group index `group` (GLSL).
std::string packed_b_helpers(const std::string& group) {
  return "int gemm_b_packed(int b, int kw, int n) {\n  return BP_at(" + group +
         ", kw, n);\n}\nint gemm_b_colsum(int b, int n) {\n  return BS_at(" + group + ", n);\n}\n";
}

float host_multiplier(double a_scale, double b_scale, double y_scale) {
  // As engine/ops/integer_linalg.cc: float32 product, float32 quotient.
  const float ab = static_cast<float>(a_scale) * static_cast<float>(b_scale);
  return ab / static_cast<float>(y_scale);
}

std::string helpers_requantize() {
  return fill_shader("quantize.glsl#two_prod") + fill_shader("quantize.glsl#div_rn") +
         fill_shader("quantize.glsl#requantize");
}

std::string out_range(DType t) { return glsl_int(ops::quant_min(t)) + ", " + glsl_int(ops::quant_max(t)); }

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

// Declares oc0 .. oc<r-3>, Y's batch coordinates, from the GEMM batch index b.
std::string batch_coords(size_t r) {
  std::string s = "  int t = b;\n";
  for (size_t j = r - 2; j-- > 0;) {
    const std::string d = "Y_D" + std::to_string(j);
    s += "  int " + oc(j) + " = t % " + d + "; t /= " + d + ";\n";
  }
  return s;
}

// An integer MatMul as a GEMM over Y's batch: A and B read with numpy
// broadcasting and their zero points subtracted. `store` is the GLSL value
// stored for accumulator `acc` of element (oc0.., oc<r-2> = m, oc<r-1>).
// `a_load`, when set, is a GLSL function (in `helpers`) that turns A's
// element into the int operand (DynamicQuantizeMatMul's float A).
Status emit_matmul(LoweringContext& ctx, const char* name, size_t a_in, size_t b_in, size_t za_in, size_t zb_in,
                   std::vector<KernelTensor> params_ts, const std::string& store, std::string helpers,
                   const std::string& a_load = "") {
  const std::vector<ir::Dim>& as = ctx.input_shape(a_in);
  const std::vector<ir::Dim>& bs = ctx.input_shape(b_in);
  const std::vector<ir::Dim>& ys = ctx.output_shape(0);
  if (as.size() < 2 || bs.size() < 2) return ctx.unsupported("a 1-D operand");
  const size_t r = ys.size();
  GemmProblem p;
  p.name = name;
  p.batch = ir::Dim(1);
  for (size_t j = 0; j + 2 < r; ++j) p.batch = p.batch * ys[j];
  p.m = ys[r - 2];
  p.n = ys[r - 1];
  p.k = as.back();
  // The dot-product path for a constant 2-D B (every batch element's B).
  std::optional<PackedInt8Operand> packed;
  if (const Tensor* b = ctx.input_constant(b_in); b && a_load.empty() && bs.size() == 2 && p.n.is_const()) {
    const int64_t n = p.n.value();
    if (auto zb = constant_zero_point(ctx, zb_in, n))
      packed = int8_dot_operand(ctx, a_in, 1, p,
                                [&](int64_t, int64_t k, int64_t j) { return b->get_i64(k * n + j) - (*zb)(j); });
  }
  const bool dot = packed.has_value();
  p.tensors.push_back(ctx.bind("A", ctx.input(a_in)));
  if (!dot) p.tensors.push_back(ctx.bind("B", ctx.input(b_in)));
  std::vector<ir::Dim> a_in_shape = as, b_in_shape = bs;
  a_in_shape.back() = ir::Dim(1);
  b_in_shape[b_in_shape.size() - 2] = ir::Dim(1);
  std::vector<std::string> ca = broadcast_coords("A", a_in_shape, ys);
  std::vector<std::string> cb = broadcast_coords("B", b_in_shape, ys);
  ca.back() = "k";
  cb[cb.size() - 2] = "k";
  BoundParam za = zero_literal(), zb = zero_literal();
  if (ctx.has_input(za_in)) {
    KILN_ASSIGN_OR_RETURN(za, bind_vector_param(ctx, za_in, "za", oc(r - 2), "a_zero_point", p.tensors));
  }
  if (ctx.has_input(zb_in) && !dot) {
    KILN_ASSIGN_OR_RETURN(zb, bind_vector_param(ctx, zb_in, "zb", oc(r - 1), "b_zero_point", p.tensors));
  }
  for (KernelTensor& t : params_ts) p.tensors.push_back(std::move(t));
  bind_packed(ctx, packed, p.tensors);
  const GemmOutput out = bind_gemm_output(ctx, false);
  p.tensors.push_back(out.y);
  const std::string row = "  int " + oc(r - 2) + " = m;\n";
  std::string h = std::move(helpers);
  const std::string a_value = "A_at(" + join_args(ca) + ")";
  const std::string a_raw = a_load.empty() ? a_value : a_load + "(" + a_value + ")";
  if (dot) {
    h += "int gemm_a_raw(int b, int m, int k) {\n" + batch_coords(r) + row + "  return " + a_raw + ";\n}\n";
    h += "int gemm_a_zero(int b, int m) {\n" + batch_coords(r) + row + "  return " + za.value() + ";\n}\n";
    h += packed_b_helpers("0");
  } else {
    h += "int gemm_a(int b, int m, int k) {\n" + batch_coords(r) + row + "  return " + a_raw + " - " + za.value() +
         ";\n}\n";
    h += "int gemm_b(int b, int k, int n) {\n" + batch_coords(r) + "  int " + oc(r - 1) + " = n;\n  return B_at(" +
         join_args(cb) + ") - " + zb.value() + ";\n}\n";
  }
  h += "void gemm_store4(int b, int m, int n, ivec4 v) {\n" + batch_coords(r) + row +
       "  for (int j = 0; j < 4; ++j) {\n    int " + oc(r - 1) + " = n + j;\n    if (" + oc(r - 1) +
       " >= GEMM_N) break;\n    int acc = v[j];\n    Y_st((b * GEMM_M + m) * GEMM_N + " + oc(r - 1) + ", " + store +
       ");\n  }\n}\n";
  p.helpers = std::move(h);
  if (dot) {
    KILN_RETURN_IF_ERROR(emit_int8_dot_gemm(ctx, p, ctx.input_dtype(a_in) == DType::kUInt8));
  } else {
    KILN_RETURN_IF_ERROR(emit_int_gemm(ctx, p));
  }
  finish_gemm_output(ctx, out);
  return ok_status();
}

Status lower_matmul_integer(LoweringContext& ctx) {
  return emit_matmul(ctx, "matmul_integer", 0, 1, 2, 3, {}, "acc", "");
}

enum QLinearMatMulInput : size_t { kA = 0, kAScale, kAZero, kB, kBScale, kBZero, kYScale, kYZero };

Status lower_qlinear_matmul(LoweringContext& ctx) {
  const size_t r = ctx.output_shape(0).size();
  if (r < 2) return ctx.unsupported("a 1-D operand");
  std::vector<KernelTensor> ts;
  KILN_ASSIGN_OR_RETURN(BoundParam as, bind_vector_param(ctx, kAScale, "sa", oc(r - 2), "a_scale", ts));
  KILN_ASSIGN_OR_RETURN(BoundParam bs, bind_vector_param(ctx, kBScale, "sb", oc(r - 1), "b_scale", ts));
  KILN_ASSIGN_OR_RETURN(BoundParam ys, bind_vector_param(ctx, kYScale, "sy", oc(r - 2), "y_scale", ts));
  KILN_ASSIGN_OR_RETURN(BoundParam yz, bind_vector_param(ctx, kYZero, "zy", oc(r - 2), "y_zero_point", ts));
  const std::string store = "kiln_requantize(acc, " + multiplier_expr(ctx, kAScale, kBScale, kYScale, as, bs, ys) +
                            ", " + yz.value() + ", " + out_range(ctx.output_dtype(0)) + ")";
  return emit_matmul(ctx, "qlinear_matmul", kA, kB, kAZero, kBZero, std::move(ts), store, helpers_requantize());
}

// --- Conv --------------------------------------------------------------------

struct ConvInputs {
  size_t x, w, x_zero, w_zero;
};

constexpr int64_t kDirectMaxChannelsPerGroup = 2;

// An integer Conv as one map kernel: each output element loops over its
// window (the input channels of its group, the kernel offsets), for
// depthwise convolutions. `store` as for emit_conv.
Status emit_direct_conv(LoweringContext& ctx, std::string name, std::vector<KernelTensor> ts,
                        const std::vector<int64_t>& strides, const std::vector<int64_t>& pad_begin,
                        const std::vector<int64_t>& dilations, int64_t group, const std::string& zx,
                        const std::string& zw, const std::string& store, std::string helpers) {
  const size_t spatial = strides.size();
  std::string s = "int n = oc0, oc = oc1;\nint g = oc / (W_D0 / " + std::to_string(group) + ");\n";
  s += "int acc = 0;\nfor (int ic = 0; ic < W_D1; ++ic) {\n";
  std::string indent = "  ";
  std::vector<std::string> xc = {"n", "g * W_D1 + ic"}, wc = {"oc", "ic"};
  for (size_t i = 0; i < spatial; ++i) {
    const std::string a = std::to_string(i), d = std::to_string(2 + i);
    s += indent + "for (int k" + a + " = 0; k" + a + " < W_D" + d + "; ++k" + a + ") {\n";
    indent += "  ";
    s += indent + "int i" + a + " = " + oc(2 + i) + " * " + std::to_string(strides[i]) + " - " +
         std::to_string(pad_begin[i]) + " + k" + a + " * " + std::to_string(dilations[i]) + ";\n";
    s += indent + "if (i" + a + " < 0 || i" + a + " >= X_D" + d + ") continue;\n";
    xc.push_back("i" + a);
    wc.push_back("k" + a);
  }
  s += indent + "acc += (X_at(" + join_args(xc) + ") - " + zx + ") * (W_at(" + join_args(wc) + ") - " + zw + ");\n";
  for (size_t i = 0; i <= spatial; ++i) {
    indent.resize(indent.size() - 2);
    s += indent + "}\n";
  }
  s += "v = " + store + ";";
  ts.push_back(ctx.bind("Y", ctx.output(0), true));
  ctx.emit(map_kernel(std::move(name), std::move(ts), s, std::move(helpers)));
  return ok_status();
}

// An integer Conv as an implicit GEMM per (image, group), as the float
// Conv's (lower_conv.cc): C[pixel, out channel] = sum over (in channel,
// kernel offset) of (X - x_zero_point) * (W - w_zero_point), padding
// contributing zero. `store` is the GLSL value stored for accumulator `acc`
// of output channel `oc`; `params_ts` are the tensors it reads.
Status emit_conv(LoweringContext& ctx, const char* name, const ConvInputs& in, std::vector<KernelTensor> params_ts,
                 const std::string& store, std::string helpers) {
  const std::vector<ir::Dim>& xs = ctx.input_shape(in.x);
  const std::vector<ir::Dim>& ws = ctx.input_shape(in.w);
  const std::vector<ir::Dim>& ys = ctx.output_shape(0);
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
  GemmProblem p;
  p.name = name;
  p.batch = xs[0] * ir::Dim(group);
  p.m = ir::Dim(1);
  p.k = ws[1];
  for (size_t i = 0; i < spatial; ++i) {
    p.m = p.m * ys[2 + i];
    p.k = p.k * ws[2 + i];
  }
  p.n = ir::Dim::floor_div(ws[0], ir::Dim(group));
  // Depthwise (at most kDirectMaxChannelsPerGroup output channels per
  // group): a GEMM tile would be almost all padding along N.
  const ir::Dim& out_channels = ws[0];
  const bool direct =
      group > 1 && out_channels.is_const() && out_channels.value() / group <= kDirectMaxChannelsPerGroup;
  // The dot-product path for a constant W: W's rows [C/group, k0, ...] are
  // the GEMM's K, per output channel g * N + n.
  std::optional<PackedInt8Operand> packed;
  const Tensor* w = ctx.input_constant(in.w);
  // On the dot-product path with whole units of 16 channels per group, K
  // is packed tap-major (k = tap * CG + c, not ONNX's c * taps + tap): the
  // 16 values of a unit are then 16 channels of one input pixel, whose
  // index math and padding test gemm_a16 does once (the tensor-core
  // kernel's GEMM_A16; gemm_int.h), as the float Conv's gemm_a8 does.
  const int64_t cg = w ? w->dim(1) : 0, taps = w && cg > 0 ? w->numel() / std::max<int64_t>(1, w->dim(0) * cg) : 0;
  const bool units16 = w && cg > 0 && cg % 16 == 0;
  if (w && !direct && p.n.is_const() && p.k.is_const()) {
    const int64_t n = p.n.value(), k = p.k.value();
    if (auto zw = constant_zero_point(ctx, in.w_zero, w->dim(0)))
      packed = int8_dot_operand(ctx, in.x, group, p, [&](int64_t g, int64_t kk, int64_t j) {
        const int64_t onnx_k = units16 ? (kk % cg) * taps + kk / cg : kk;
        return w->get_i64((g * n + j) * k + onnx_k) - (*zw)(g * n + j);
      });
  }
  const bool dot = packed.has_value();
  const bool tap_major = dot && units16;
  p.tensors.push_back(ctx.bind("X", ctx.input(in.x)));
  if (!dot) p.tensors.push_back(ctx.bind("W", ctx.input(in.w)));
  BoundParam zx = zero_literal(), zw = zero_literal();
  if (ctx.has_input(in.x_zero)) {
    if (const Tensor* c = ctx.input_constant(in.x_zero); c && c->numel() != 1)
      return ctx.unsupported("x_zero_point with more than one value");
    KILN_ASSIGN_OR_RETURN(zx, bind_vector_param(ctx, in.x_zero, "zx", "0", "x_zero_point", p.tensors));
  }
  if (ctx.has_input(in.w_zero) && !dot) {
    KILN_ASSIGN_OR_RETURN(zw, bind_vector_param(ctx, in.w_zero, "zw", "oc", "w_zero_point", p.tensors));
  }
  for (KernelTensor& t : params_ts) p.tensors.push_back(std::move(t));
  bind_packed(ctx, packed, p.tensors);
  if (direct)
    return emit_direct_conv(ctx, std::string(name) + "_direct", std::move(p.tensors), wa.strides, pad_begin,
                            wa.dilations, group, zx.value(), zw.value(), store, std::move(helpers));
  const GemmOutput out = bind_gemm_output(ctx, false);
  p.tensors.push_back(out.y);
  p.a_m_fastest = true;  // neighbouring output pixels read neighbouring input pixels
  p.params.push_back({"CV_G", ir::Dim(group)});

  // W's dims: literals on the dot path, where W itself is not bound.
  auto w_dim = [&](size_t i) {
    return dot ? std::to_string(w->dim(static_cast<int64_t>(i))) : "W_D" + std::to_string(i);
  };
  // k = (ic, kernel offsets) row-major over W's [C/group, k0, k1, ...],
  // or tap-major (kernel offsets, ic).
  std::string split_k = tap_major ? "  int ic = k % " + std::to_string(cg) + ", t = k / " + std::to_string(cg) + ";\n"
                                  : "  int t = k;\n";
  for (size_t i = spatial; i-- > 0;) {
    const std::string a = std::to_string(i), d = w_dim(2 + i);
    split_k += "  int k" + a + " = t % " + d + "; t /= " + d + ";\n";
  }
  if (!tap_major) split_k += "  int ic = t;\n";
  std::vector<std::string> xc = {"img", "g * " + w_dim(1) + " + ic"}, wc = {"oc", "ic"};
  // A = X - x_zero_point, padding 0; on the dot path X raw, padding x_zero_point.
  const std::string pad_value = dot ? zx.value() : "0";
  // The input pixel of output pixel m at the kernel offsets k0.. (after
  // split_k), `outside` run where it lies in the padding.
  const auto input_pixel = [&](const std::string& outside) {
    std::string x = "  int img = b / CV_G, g = b % CV_G;\n" + split_k + "  t = m;\n";
    for (size_t i = spatial; i-- > 0;) {
      const std::string a = std::to_string(i), d = "Y_D" + std::to_string(2 + i);
      x += "  int o" + a + " = t % " + d + "; t /= " + d + ";\n";
    }
    for (size_t i = 0; i < spatial; ++i) {
      const std::string a = std::to_string(i);
      x += "  int i" + a + " = o" + a + " * " + std::to_string(wa.strides[i]) + " - " + std::to_string(pad_begin[i]) +
           " + k" + a + " * " + std::to_string(wa.dilations[i]) + ";\n";
      x += "  if (i" + a + " < 0 || i" + a + " >= X_D" + std::to_string(2 + i) + ") " + outside + "\n";
    }
    return x;
  };
  for (size_t i = 0; i < spatial; ++i) {
    xc.push_back("i" + std::to_string(i));
    wc.push_back("k" + std::to_string(i));
  }
  std::string h = std::move(helpers);
  h += std::string(dot ? "int gemm_a_raw" : "int gemm_a") + "(int b, int m, int k) {\n" +
       input_pixel("return " + pad_value + ";");
  if (dot) {
    h += "  return X_at(" + join_args(xc) + ");\n}\n";
    if (tap_major) {
      // 16 channels of one pixel, raw bytes packed four to a word (padding: zx).
      std::vector<std::string> xj = xc;
      xj[1] = "g * " + std::to_string(cg) + " + ic + 4 * q + j";
      p.vector_helpers = "#define GEMM_A16 1\nuvec4 gemm_a16(int b, int m, int k) {\n" +
           input_pixel("return uvec4((uint(" + zx.value() + ") & 255u) * 0x01010101u);") +
           "  uvec4 u;\n  [[unroll]] for (int q = 0; q < 4; ++q) {\n    uint w = 0u;\n"
           "    [[unroll]] for (int j = 0; j < 4; ++j) w |= uint(X_at(" + join_args(xj) + ") & 255) << (8 * j);\n"
           "    u[q] = w;\n  }\n  return u;\n}\n";
    }
    h += "int gemm_a_zero(int b, int m) {\n  return " + zx.value() + ";\n}\n";
    h += packed_b_helpers("b % CV_G");
  } else {
    h += "  return X_at(" + join_args(xc) + ") - " + zx.value() + ";\n}\n";
    h += "int gemm_b(int b, int k, int n) {\n  int oc = (b % CV_G) * GEMM_N + n;\n" + split_k + "  return W_at(" +
         join_args(wc) + ") - " + zw.value() + ";\n}\n";
  }
  h += "void gemm_store4(int b, int m, int n, ivec4 v) {\n  int img = b / CV_G, g = b % CV_G;\n"
       "  for (int j = 0; j < 4; ++j) {\n    if (n + j >= GEMM_N) break;\n    int oc = g * GEMM_N + n + j;\n"
       "    int acc = v[j];\n    Y_st((img * Y_D1 + oc) * GEMM_M + m, " +
       store + ");\n  }\n}\n";
  p.helpers = std::move(h);
  if (dot) {
    KILN_RETURN_IF_ERROR(emit_int8_dot_gemm(ctx, p, ctx.input_dtype(in.x) == DType::kUInt8));
  } else {
    KILN_RETURN_IF_ERROR(emit_int_gemm(ctx, p));
  }
  finish_gemm_output(ctx, out);
  return ok_status();
}

Status lower_conv_integer(LoweringContext& ctx) { return emit_conv(ctx, "conv_integer", {0, 1, 2, 3}, {}, "acc", ""); }

enum QLinearConvInput : size_t { kX = 0, kXScale, kXZero, kW, kWScale, kWZero, kYScaleC, kYZeroC, kBias };

Status lower_qlinear_conv(LoweringContext& ctx) {
  for (const auto& [i, what] :
       {std::pair<size_t, const char*>{kXScale, "x_scale"}, {kYScaleC, "y_scale"}, {kYZeroC, "y_zero_point"}})
    if (const Tensor* c = ctx.input_constant(i); c && c->numel() != 1)
      return ctx.unsupported(std::string(what) + " with more than one value");
  std::vector<KernelTensor> ts;
  std::string acc = "acc";
  if (ctx.has_input(kBias)) {
    KILN_ASSIGN_OR_RETURN(BoundParam bias, bind_vector_param(ctx, kBias, "bias", "oc", "B", ts));
    acc = "(acc + " + bias.value() + ")";
  }
  KILN_ASSIGN_OR_RETURN(BoundParam xs, bind_vector_param(ctx, kXScale, "sx", "0", "x_scale", ts));
  KILN_ASSIGN_OR_RETURN(BoundParam ws, bind_vector_param(ctx, kWScale, "sw", "oc", "w_scale", ts));
  KILN_ASSIGN_OR_RETURN(BoundParam ys, bind_vector_param(ctx, kYScaleC, "sy", "0", "y_scale", ts));
  KILN_ASSIGN_OR_RETURN(BoundParam yz, bind_vector_param(ctx, kYZeroC, "zy", "0", "y_zero_point", ts));
  const std::string store = "kiln_requantize(" + acc + ", " +
                            multiplier_expr(ctx, kXScale, kWScale, kYScaleC, xs, ws, ys) + ", " + yz.value() + ", " +
                            out_range(ctx.output_dtype(0)) + ")";
  return emit_conv(ctx, "qlinear_conv", {kX, kW, kXZero, kWZero}, std::move(ts), store, helpers_requantize());
}

// --- ONNX Runtime's com.microsoft GEMMs ----------------------------------------------

enum MatMulToFloatInput : size_t { kFA = 0, kFB, kFAScale, kFBScale, kFAZero, kFBZero, kFBias };

// MatMulIntegerToFloat: MatMulInteger's GEMM, stored as float32(acc) *
// (a_scale * b_scale) + bias.
Status lower_matmul_integer_to_float(LoweringContext& ctx) {
  const size_t r = ctx.output_shape(0).size();
  if (r < 2) return ctx.unsupported("a 1-D operand");
  if (const Tensor* c = ctx.input_constant(kFAScale); !c || c->numel() != 1)
    return ctx.unsupported("a_scale that is not a one-value constant");
  std::vector<KernelTensor> ts;
  KILN_ASSIGN_OR_RETURN(BoundParam as, bind_vector_param(ctx, kFAScale, "sa", "0", "a_scale", ts));
  KILN_ASSIGN_OR_RETURN(BoundParam bs, bind_vector_param(ctx, kFBScale, "sb", oc(r - 1), "b_scale", ts));
  std::string store = "float(acc) * (float(" + as.value() + ") * float(" + bs.value() + "))";
  if (ctx.has_input(kFBias)) {
    KILN_ASSIGN_OR_RETURN(BoundParam bias, bind_vector_param(ctx, kFBias, "bias", oc(r - 1), "bias", ts));
    store = "(" + store + " + float(" + bias.value() + "))";
  }
  return emit_matmul(ctx, "matmul_integer_to_float", kFA, kFB, kFAZero, kFBZero, std::move(ts), store, "");
}

enum QGemmInput : size_t { kGA = 0, kGAScale, kGAZero, kGB, kGBScale, kGBZero, kGC, kGYScale, kGYZero };

// QGemm: a 2-D GEMM with transA/transB, the int32 C added to the
// accumulator, requantized with float32(float32(alpha * a_scale) * b_scale)
// / y_scale, or scaled to float32 without y_scale.
Status lower_qgemm(LoweringContext& ctx) {
  const std::vector<ir::Dim>& as_shape = ctx.input_shape(kGA);
  const std::vector<ir::Dim>& ys = ctx.output_shape(0);
  if (as_shape.size() != 2 || ctx.input_shape(kGB).size() != 2) return ctx.error("A and B must be 2-D");
  const bool ta = ctx.node().attr_int("transA", 0) != 0, tb = ctx.node().attr_int("transB", 0) != 0;
  const float alpha = ctx.node().attr_float("alpha", 1.0f);
  GemmProblem p;
  p.name = "qgemm";
  p.batch = ir::Dim(1);
  p.m = ys[0];
  p.n = ys[1];
  p.k = as_shape[ta ? 0 : 1];
  // The dot-product path for a constant B ([K, N], or [N, K] with transB).
  std::optional<PackedInt8Operand> packed;
  if (const Tensor* b = ctx.input_constant(kGB); b && p.n.is_const() && p.k.is_const()) {
    const int64_t n = p.n.value(), k = p.k.value();
    if (auto zb = constant_zero_point(ctx, kGBZero, n))
      packed = int8_dot_operand(ctx, kGA, 1, p, [&](int64_t, int64_t kk, int64_t j) {
        return b->get_i64(tb ? j * k + kk : kk * n + j) - (*zb)(j);
      });
  }
  const bool dot = packed.has_value();
  p.tensors.push_back(ctx.bind("A", ctx.input(kGA)));
  if (!dot) p.tensors.push_back(ctx.bind("B", ctx.input(kGB)));
  BoundParam za = zero_literal(), zb = zero_literal();
  if (ctx.has_input(kGAZero)) {
    KILN_ASSIGN_OR_RETURN(za, bind_vector_param(ctx, kGAZero, "za", "0", "a_zero_point", p.tensors));
    if (za.coords != std::vector<std::string>{"0"}) return ctx.unsupported("a_zero_point with more than one value");
  }
  if (ctx.has_input(kGBZero) && !dot) {
    KILN_ASSIGN_OR_RETURN(zb, bind_vector_param(ctx, kGBZero, "zb", "n", "b_zero_point", p.tensors));
  }
  KILN_ASSIGN_OR_RETURN(BoundParam sa, bind_vector_param(ctx, kGAScale, "sa", "0", "a_scale", p.tensors));
  KILN_ASSIGN_OR_RETURN(BoundParam sb, bind_vector_param(ctx, kGBScale, "sb", "oc1", "b_scale", p.tensors));
  std::string acc = "acc";
  if (ctx.has_input(kGC)) {
    Param c = quant::bind_param(ctx, kGC, "C");
    quant::add_tensor(c, p.tensors);
    acc = "(acc + " + c.at(broadcast_coords("C", ctx.input_shape(kGC), ys)) + ")";
  }
  const std::string scale =
      "(float(" + glsl_float(alpha) + " * float(" + sa.value() + ")) * float(" + sb.value() + "))";
  std::string store = "float(" + acc + ") * " + scale;
  std::string helpers;
  if (ctx.has_input(kGYScale)) {
    KILN_ASSIGN_OR_RETURN(BoundParam sy, bind_vector_param(ctx, kGYScale, "sy", "0", "y_scale", p.tensors));
    BoundParam zy = zero_literal();
    if (ctx.has_input(kGYZero)) {
      KILN_ASSIGN_OR_RETURN(zy, bind_vector_param(ctx, kGYZero, "zy", "0", "y_zero_point", p.tensors));
    }
    store = "kiln_requantize(" + acc + ", kiln_div_rn(" + scale + ", float(" + sy.value() + ")), " + zy.value() +
            ", " + out_range(ctx.output_dtype(0)) + ")";
    helpers = helpers_requantize();
  }
  bind_packed(ctx, packed, p.tensors);
  const GemmOutput out = bind_gemm_output(ctx, false);
  p.tensors.push_back(out.y);
  const std::string a_value = ta ? "A_at(k, m)" : "A_at(m, k)";
  if (dot) {
    helpers += "int gemm_a_raw(int b, int m, int k) {\n  return " + a_value + ";\n}\n";
    helpers += "int gemm_a_zero(int b, int m) {\n  return " + za.value() + ";\n}\n" + packed_b_helpers("0");
  } else {
    helpers += "int gemm_a(int b, int m, int k) {\n  return " + a_value + " - " + za.value() + ";\n}\n";
    helpers += "int gemm_b(int b, int k, int n) {\n  return " + std::string(tb ? "B_at(n, k)" : "B_at(k, n)") +
               " - " + zb.value() + ";\n}\n";
  }
  helpers += "void gemm_store4(int b, int m, int n, ivec4 v) {\n  int oc0 = m;\n  for (int j = 0; j < 4; ++j) {\n"
             "    int oc1 = n + j;\n    if (oc1 >= GEMM_N) break;\n    int acc = v[j];\n    Y_st(m * GEMM_N + oc1, " +
             store + ");\n  }\n}\n";
  p.helpers = std::move(helpers);
  if (dot) {
    KILN_RETURN_IF_ERROR(emit_int8_dot_gemm(ctx, p, ctx.input_dtype(kGA) == DType::kUInt8));
  } else {
    KILN_RETURN_IF_ERROR(emit_int_gemm(ctx, p));
  }
  finish_gemm_output(ctx, out);
  return ok_status();
}

enum DynamicMatMulInput : size_t { kDA = 0, kDB, kDBScale, kDBZero, kDBias };

// DynamicQuantizeMatMul: DynamicQuantizeLinear's range pass over A writes
// A's scale and zero point to a scratch buffer P; the GEMM quantizes A as it
// loads it and stores float32(acc) * (P[0] * b_scale) + bias.
Status lower_dynamic_quantize_matmul(LoweringContext& ctx) {
  const size_t r = ctx.output_shape(0).size();
  if (r < 2 || ctx.input_shape(kDB).size() < 2) return ctx.unsupported("a 1-D operand");
  KILN_ASSIGN_OR_RETURN(const TensorId params, quant::emit_dynamic_quant_params(ctx, kDA, false, false));
  std::vector<KernelTensor> ts = {ctx.bind("P", params)};
  KILN_ASSIGN_OR_RETURN(BoundParam bs, bind_vector_param(ctx, kDBScale, "sb", oc(r - 1), "b_scale", ts));
  std::string store = "float(acc) * (P_ld(0) * float(" + bs.value() + "))";
  if (ctx.has_input(kDBias)) {
    KILN_ASSIGN_OR_RETURN(BoundParam bias, bind_vector_param(ctx, kDBias, "bias", oc(r - 1), "bias", ts));
    store = "(" + store + " + float(" + bias.value() + "))";
  }
  const std::string helpers = fill_shader("quantize.glsl#two_prod") + fill_shader("quantize.glsl#div_rn") +
                              fill_shader("quantize.glsl#quantize") +
                              "int kiln_dynamic_a(float a) {\n  int z = int(P_ld(1));\n"
                              "  return kiln_quantize(kiln_div_rn(a, P_ld(0)), z, 0, 255) - z;\n}\n";
  return emit_matmul(ctx, "dynamic_quantize_matmul", kDA, kDB, SIZE_MAX, kDBZero, std::move(ts), store, helpers,
                     "kiln_dynamic_a");
}

}  // namespace

void register_integer_linalg_lowerings(LoweringRegistry& r) {
  r.add("", "MatMulInteger", lower_matmul_integer);
  r.add("", "QLinearMatMul", lower_qlinear_matmul);
  r.add("", "ConvInteger", lower_conv_integer);
  r.add("", "QLinearConv", lower_qlinear_conv);
  r.add(ops::kMicrosoftDomain, "QGemm", lower_qgemm);
  r.add(ops::kMicrosoftDomain, "MatMulIntegerToFloat", lower_matmul_integer_to_float);
  r.add(ops::kMicrosoftDomain, "DynamicQuantizeMatMul", lower_dynamic_quantize_matmul);
}

}  // namespace kiln::planner
