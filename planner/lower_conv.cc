// Lowerings of Conv and ConvTranspose (1 to 3 spatial axes).
//
// Conv has two device paths:
//  * implicit GEMM (gemm_kernels.h) for everything with more than one input
//    channel per group: per (image, group) C[pixel, out channel] =
//    sum over (in channel, kernel offset) of im2col(X) * W, with the im2col
//    element computed while the A tile is loaded (never stored). A 1x1,
//    stride-1, unpadded conv over a buffer reads X directly (pure GEMM over
//    channels). Constant weights are uploaded once as [group][K][Cout/group]
//    buffers so a B tile is a contiguous run of output channels.
//  * depthwise (one input channel per group): a GEMM per channel would have
//    K = kernel size and N = the channel multiplier, all padding; instead one
//    map invocation per output element loops over the kernel window, or,
//    between images packed on channels, one invocation per texel of four
//    channels.
// Bias is added in the store. ConvTranspose is a gather per output element
// (each output sums the inputs whose strided window covers it), which needs
// no scratch col2im buffer and no atomics.
//
// Pads are symbolic dims: explicit pads are constants; SAME_* pads of a
// symbolic input size are expressions evaluated per run (push constants).
#include <string>
#include <vector>

#include "engine/ops/gemm_kernel.h"  // ops::parallel_for
#include "engine/ops/window_util.h"
#include "planner/gemm_kernels.h"
#include "planner/lower_util.h"
#include "planner/lowering.h"
#include "planner/shader_template.h"

namespace kiln::planner {
namespace {

using ops::AutoPad;

std::string idx(size_t i) { return std::to_string(i); }
std::string dn(const std::string& t, size_t k) { return t + "_D" + idx(k); }

// The geometry both ops share, with every size as a dim.
struct ConvGeometry {
  size_t spatial = 0;
  int64_t group = 1;
  std::vector<int64_t> kernel, strides, dilations;
  std::vector<ir::Dim> pad_begin;
  bool zero_pads = true;  // every pad, at the beginning and the end, is the constant 0
};

// Kernel sizes from W's shape (must be constants: a weight's shape always is).
Status read_kernel(const LoweringContext& ctx, ConvGeometry& g) {
  const std::vector<ir::Dim>& ws = ctx.input_shape(1);
  for (size_t i = 0; i < g.spatial; ++i) {
    const ir::Dim& d = ws[2 + i];
    if (!d.is_const()) return ctx.unsupported("kernel size " + d.to_string() + " is not known at plan time");
    g.kernel.push_back(d.value());
  }
  for (size_t i = 0; i < 2; ++i)
    if (!ws[i].is_const()) return ctx.unsupported("weight shape is not known at plan time");
  return ok_status();
}

void set_pad(ConvGeometry& g, ir::Dim pb) {
  if (!(pb.is_const() && pb.value() == 0)) g.zero_pads = false;
  g.pad_begin.push_back(std::move(pb));
}

// The spatial parameters every conv kernel declares: CV_KS<i>, CV_ST<i>,
// CV_DL<i>, CV_PB<i> (kernel, stride, dilation, begin pad).
std::vector<KernelParam> geometry_params(const ConvGeometry& g) {
  std::vector<KernelParam> p;
  for (size_t i = 0; i < g.spatial; ++i) {
    p.push_back({"CV_KS" + idx(i), ir::Dim(g.kernel[i])});
    p.push_back({"CV_ST" + idx(i), ir::Dim(g.strides[i])});
    p.push_back({"CV_DL" + idx(i), ir::Dim(g.dilations[i])});
    p.push_back({"CV_PB" + idx(i), g.pad_begin[i]});
  }
  return p;
}

int64_t kernel_size(const ConvGeometry& g) {
  int64_t kk = 1;
  for (int64_t k : g.kernel) kk *= k;
  return kk;
}

// Statements declaring int <prefix>0 .. <prefix><S-1> from the linear index
// in variable `t` (consumed) over the spatial dims of tensor `tn`.
std::string split_spatial(const std::string& prefix, const std::string& t, const std::string& tn, size_t spatial) {
  std::string s;
  for (size_t i = spatial; i-- > 1;)
    s += "  int " + prefix + idx(i) + " = " + t + " % " + dn(tn, 2 + i) + "; " + t + " /= " + dn(tn, 2 + i) + ";\n";
  return s + "  int " + prefix + "0 = " + t + ";\n";
}

// Kernel offsets k<i> from the linear kernel index in `t` (consumed); what
// remains in `t` is the channel.
std::string split_kernel(const std::string& t, size_t spatial) {
  std::string s;
  for (size_t i = spatial; i-- > 0;)
    s += "  int k" + idx(i) + " = " + t + " % CV_KS" + idx(i) + "; " + t + " /= CV_KS" + idx(i) + ";\n";
  return s;
}

std::string list(const std::string& prefix, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += (i ? ", " : "") + prefix + idx(i);
  return s;
}

// A weight tensor as a row-major float buffer of the weight input's device
// type (the activation precision, or fp32 where the precision policy keeps
// it), `host` already in the order the kernel reads.
TensorId upload_weights(LoweringContext& ctx, Tensor host) {
  return ctx.add_constant(std::move(host), {Storage::kBuffer, ctx.input_elem_type(1)});
}

// Conv W [Cout, CG, k...] -> [G][CG * kk][Cout / G], the GEMM's K ordered
// channel-major (k = c * kk + tap, ONNX's own order) or, with `tap_major`,
// k = tap * CG + c: then 8 consecutive k of a channel count that is a
// multiple of 8 share one kernel tap, and the tensor-core kernel reads
// them with one tap's index math (conv_gemm).
StatusOr<Tensor> repack_conv_weights(const Tensor& w, int64_t group, bool tap_major) {
  const int64_t cout = w.dim(0), cg = w.dim(1), kk = w.numel() / std::max<int64_t>(1, cout * cg);
  const int64_t ng = cout / group, kdim = cg * kk;
  KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(w.dtype(), {group, kdim, ng}));
  // K position of ONNX's k = c * kk + tap, looked up: a division and a
  // remainder per element by a divisor known only at run time cost more
  // than the copy itself (resnet50 has 25M weights).
  std::vector<int64_t> to_k(static_cast<size_t>(kdim));
  for (int64_t k = 0; k < kdim; ++k) to_k[static_cast<size_t>(k)] = tap_major ? (k % kk) * cg + k / kk : k;
  // Each group is an [ng x kdim] -> [kdim x ng] transpose. It walks 16
  // output channels at a time: their 16 source rows stream side by side in
  // k while each destination row takes 16 contiguous floats. Row by row
  // every write landed on another cache line (this repack was the largest
  // part of a warm-cache compile of resnet50), and square 32 x 32 tiles took
  // twice as long as this (2.0 against 1.0 ns per element on resnet50's
  // shapes, this machine's CPU).
  // Blocks of 16 channels are independent, so a large weight spreads them
  // over the CPU's threads (a warm-cache compile is mostly this repack and
  // the weights' upload); small ones are not worth starting threads for.
  constexpr int64_t kRows = 16;
  const int64_t blocks = (ng + kRows - 1) / kRows;
  const int threads = w.numel() >= (int64_t{1} << 20) ? ops::cpu_thread_count() : 1;
  auto move = [&](auto set) {
    ops::parallel_for(group * blocks, threads, [&](int64_t task, int) {
      const int64_t g = task / blocks, n0 = task % blocks * kRows, n1 = std::min(ng, n0 + kRows);
      for (int64_t k = 0; k < kdim; ++k) {
        const int64_t to = (g * kdim + to_k[static_cast<size_t>(k)]) * ng, from = g * ng * kdim + k;
        for (int64_t n = n0; n < n1; ++n) set(to + n, from + n * kdim);
      }
    });
  };
  // float32 (nearly every model) by pointer: resnet50 has 25M weights.
  if (w.dtype() == DType::kFloat32) {
    const float* src = w.data<float>();
    float* dst = t.data<float>();
    move([&](int64_t to, int64_t from) { dst[to] = src[from]; });
  } else {
    move([&](int64_t to, int64_t from) { t.set_f64(to, w.get_f64(from)); });
  }
  return t;
}

// ---------------------------------------------------------------------------
// Conv

// Depthwise with multiplier 1 between images packed on channels: one
// invocation per output texel (four channels of one pixel) reads one input
// texel per tap instead of four scalar lookups of the same texel.
Status conv_depthwise_texels(LoweringContext& ctx, const ConvGeometry& g, const Tensor& w) {
  KILN_ASSIGN_OR_RETURN(Tensor taps, repack_depthwise_taps(w));
  const size_t S = g.spatial;
  std::vector<KernelTensor> t = {ctx.bind("X", ctx.input(0)), ctx.bind("W", upload_weights(ctx, std::move(taps)))};
  std::string out_coords;
  for (size_t i = S; i-- > 0;)
    out_coords += "  int o" + idx(i) + " = q % " + dn("Y", 2 + i) + "; q /= " + dn("Y", 2 + i) + ";\n";
  const bool bias = ctx.has_input(2);
  if (bias) t.push_back(ctx.bind("Bias", ctx.input(2)));
  std::string loops;
  std::string indent = "  ";
  for (size_t i = 0; i < S; ++i) {
    const std::string I = idx(i);
    loops += indent + "for (int k" + I + " = 0; k" + I + " < CV_KS" + I + "; ++k" + I + ") {\n";
    indent += "  ";
    loops += indent + "int i" + I + " = o" + I + " * CV_ST" + I + " - CV_PB" + I + " + k" + I + " * CV_DL" + I + ";\n";
    if (!g.zero_pads) loops += indent + "if (i" + I + " < 0 || i" + I + " >= " + dn("X", 2 + i) + ") continue;\n";
  }
  std::string tap = "k0";
  for (size_t i = 1; i < S; ++i) tap = "(" + tap + ") * CV_KS" + idx(i) + " + k" + idx(i);
  loops += indent + "acc += X_at4(img, c, " + list("i", S) + ") * W_at4(" + tap + ", c);\n";
  for (size_t i = 0; i < S; ++i) {
    indent.resize(indent.size() - 2);
    loops += indent + "}\n";
  }
  std::string body = fill_shader("conv_depthwise_texel.comp", ShaderArgs()
                                                                       .set("OUT_COORDS", out_coords)
                                                                       .set("TAPS", loops)
                                                                       .set("OUT_LIST", list("o", S))
                                                                       .flag("BIAS", bias));
  t.push_back(ctx.bind("Y", ctx.output(0), true));

  const std::vector<ir::Dim>& sy = ctx.output_shape(0);
  const ir::Dim blocks = ir::Dim::ceil_div(sy[1], ir::Dim(4));
  ir::Dim texels = sy[0] * blocks;
  for (size_t i = 0; i < S; ++i) texels = texels * sy[2 + i];
  KernelDesc d;
  d.name = "conv_depthwise_texel";
  d.family = KernelDesc::Family::kCustom;
  d.tensors = std::move(t);
  d.params = geometry_params(g);
  d.params.push_back({"CV_CBLOCKS", blocks});
  d.params.push_back({"CV_TEXELS", texels});
  d.body = std::move(body);
  d.local_size = {64, 1, 1};
  const ir::Dim wg = ir::Dim::ceil_div(texels, ir::Dim(64));
  const ir::Dim max_x(static_cast<int64_t>(ctx.target().max_workgroup_count_x));
  d.groups = {ir::Dim::min(wg, max_x), ir::Dim::ceil_div(wg, max_x), ir::Dim(1)};
  d.flops = ir::Dim(2 * kernel_size(g)) * texels * ir::Dim(4);
  ctx.emit(std::move(d));
  return ok_status();
}

// 2-D depthwise convolution into a buffer (or a store view along W) with
// constant weights: shaders/conv_depthwise_rows.comp, R outputs of a row per
// invocation sharing each window row's reads. R = 8 at stride 1 (the
// 7x7 windows of convnext read 14 values per row for 8 outputs), else 4.
Status conv_depthwise_rows(LoweringContext& ctx, const ConvGeometry& g, const Tensor& w) {
  const int64_t cout = ctx.input_shape(1)[0].value();
  std::vector<KernelTensor> t = {ctx.bind("X", ctx.input(0)), ctx.bind("W", upload_weights(ctx, w))};
  const bool bias = ctx.has_input(2);
  if (bias) t.push_back(ctx.bind("Bias", ctx.input(2)));
  t.push_back(ctx.bind("Y", ctx.output(0), true));
  const int64_t r = g.strides[1] == 1 ? 8 : 4;
  std::string body = fill_shader("conv_depthwise_rows.comp", ShaderArgs()
                                                                .set("R", std::to_string(r))
                                                                .set("KH", std::to_string(g.kernel[0]))
                                                                .set("KW", std::to_string(g.kernel[1]))
                                                                .set("SX", std::to_string(g.strides[1]))
                                                                .set("DX", std::to_string(g.dilations[1]))
                                                                .flag("BIAS", bias));
  const std::vector<ir::Dim>& sy = ctx.output_shape(0);
  const ir::Dim rows = sy[0] * sy[1] * sy[2];
  const ir::Dim invocations = rows * ir::Dim::ceil_div(sy[3], ir::Dim(r));
  KernelDesc d;
  d.name = "conv_depthwise_rows";
  d.family = KernelDesc::Family::kCustom;
  d.tensors = std::move(t);
  d.params = geometry_params(g);
  d.params.push_back({"CV_MULT", ir::Dim(cout / g.group)});
  d.params.push_back({"CV_ROWS", rows});
  d.body = std::move(body);
  d.extensions = {"GL_EXT_control_flow_attributes"};
  d.local_size = {64, 1, 1};
  const ir::Dim wg = ir::Dim::ceil_div(invocations, ir::Dim(64));
  const ir::Dim max_x(static_cast<int64_t>(ctx.target().max_workgroup_count_x));
  d.groups = {ir::Dim::min(wg, max_x), ir::Dim::ceil_div(wg, max_x), ir::Dim(1)};
  ir::Dim outs(1);
  for (const ir::Dim& x : sy) outs = outs * x;
  d.flops = ir::Dim(2 * kernel_size(g)) * outs;
  ctx.emit(std::move(d));
  return ok_status();
}

Status conv_depthwise(LoweringContext& ctx, const ConvGeometry& g) {
  const int64_t cout = ctx.input_shape(1)[0].value();
  const int64_t kk = kernel_size(g);
  const Tensor* wc = ctx.input_constant(1);
  if (wc && cout == g.group && ctx.layout(ctx.input(0)).packed_axis == 1 &&
      ctx.layout(ctx.output(0)).packed_axis == 1)
    return conv_depthwise_texels(ctx, g, *wc);
  // Rows along W: Y a buffer, whose vector axis (that of Y_store4) is W.
  if (wc && g.spatial == 2 && ctx.layout(ctx.output(0)).storage == Storage::kBuffer)
    return conv_depthwise_rows(ctx, g, *wc);
  std::vector<KernelTensor> t = {ctx.bind("X", ctx.input(0))};
  std::string wload;
  std::string kidx = "k0";
  for (size_t i = 1; i < g.spatial; ++i) kidx = "(" + kidx + ") * CV_KS" + idx(i) + " + k" + idx(i);
  if (const Tensor* w = ctx.input_constant(1)) {
    // [Cout, 1, k...] is already [Cout][kk] row-major.
    t.push_back(ctx.bind("W", upload_weights(ctx, *w)));
    wload = "W_ld(oc1 * " + std::to_string(kk) + " + " + kidx + ")";
  } else {
    t.push_back(ctx.bind("W", ctx.input(1)));
    wload = "W_at(oc1, 0, " + list("k", g.spatial) + ")";
  }
  std::string body = "  int c = oc1 / CV_MULT;\n  float acc = 0.0;\n";
  if (ctx.has_input(2)) {
    t.push_back(ctx.bind("Bias", ctx.input(2)));
    body = "  int c = oc1 / CV_MULT;\n  float acc = Bias_at(oc1);\n";
  }
  std::string indent = "  ";
  std::string close;
  for (size_t i = 0; i < g.spatial; ++i) {
    const std::string I = idx(i);
    body += indent + "for (int k" + I + " = 0; k" + I + " < CV_KS" + I + "; ++k" + I + ") {\n";
    indent += "  ";
    body += indent + "int i" + I + " = oc" + idx(2 + i) + " * CV_ST" + I + " - CV_PB" + I + " + k" + I + " * CV_DL" + I +
            ";\n";
    if (!g.zero_pads) body += indent + "if (i" + I + " < 0 || i" + I + " >= " + dn("X", 2 + i) + ") continue;\n";
  }
  body += indent + "acc += X_at(oc0, c, " + list("i", g.spatial) + ") * " + wload + ";\n";
  for (size_t i = 0; i < g.spatial; ++i) {
    indent.resize(indent.size() - 2);
    body += indent + "}\n";
  }
  body += "  v = acc;";
  t.push_back(ctx.bind("Y", ctx.output(0), true));
  KernelDesc d = map_kernel("conv_depthwise", std::move(t), std::move(body));
  d.params = geometry_params(g);
  d.params.push_back({"CV_MULT", ir::Dim(cout / g.group)});
  ir::Dim outs(1);
  for (const ir::Dim& x : ctx.output_shape(0)) outs = outs * x;
  d.flops = ir::Dim(2 * kk) * outs;
  ctx.emit(std::move(d));
  return ok_status();
}

Status conv_gemm(LoweringContext& ctx, const ConvGeometry& g) {
  const std::vector<ir::Dim>& sx = ctx.input_shape(0);
  const std::vector<ir::Dim>& sy = ctx.output_shape(0);
  const int64_t cout = ctx.input_shape(1)[0].value(), cg = ctx.input_shape(1)[1].value();
  const int64_t ng = cout / g.group, kk = kernel_size(g);
  const size_t S = g.spatial;

  GemmProblem p;
  p.name = "conv";
  p.batch = sx[0] * ir::Dim(g.group);
  p.m = ir::Dim(1);
  for (size_t i = 0; i < S; ++i) p.m = p.m * sy[2 + i];
  p.n = ir::Dim(ng);
  p.k = ir::Dim(cg * kk);
  p.a_m_fastest = true;  // neighbouring output pixels read neighbouring input pixels
  p.a_tensor = "X";
  p.b_tensor = "W";
  p.params = geometry_params(g);
  p.params.push_back({"CV_G", ir::Dim(g.group)});
  p.params.push_back({"CV_CG", ir::Dim(cg)});
  p.tensors.push_back(ctx.bind("X", ctx.input(0)));

  bool pointwise = g.zero_pads;
  for (size_t i = 0; i < S; ++i) pointwise = pointwise && g.kernel[i] == 1 && g.strides[i] == 1;
  std::string h;
  // Constant weights of a kernel larger than 1x1 are packed tap-major
  // (repack_conv_weights): K = tap * CG + c.
  const Tensor* w = ctx.input_constant(1);
  const bool tap_major = w && kk > 1;
  if (kk == 1) p.conv_units = pointwise ? GemmProblem::ConvUnits::kPointwise : GemmProblem::ConvUnits::kStridedPointwise;
  if (pointwise && p.tensors.back().layout.storage == Storage::kBuffer) {
    // Output pixels are input pixels: A is X's [channel][pixel] plane.
    h += "float gemm_a(int b, int m, int k) {\n  int img = b / CV_G, g = b % CV_G;\n" +
         pointwise_plane_read("X", "img", "g * CV_CG + k", S) + "}\n";
  } else {
    // The input pixel of output pixel m at the tap in `t` (consumed),
    // `outside` run where padding reads zero.
    const auto input_pixel = [&](const std::string& outside) {
      std::string x = "  int img = b / CV_G, g = b % CV_G;\n  int t = m;\n" + split_spatial("o", "t", "Y", S);
      x += "  t = tap;\n" + split_kernel("t", S);
      for (size_t i = 0; i < S; ++i) {
        const std::string I = idx(i);
        x += "  int i" + I + " = o" + I + " * CV_ST" + I + " - CV_PB" + I + " + k" + I + " * CV_DL" + I + ";\n";
        if (!g.zero_pads) x += "  if (i" + I + " < 0 || i" + I + " >= " + dn("X", 2 + i) + ") " + outside + "\n";
      }
      return x;
    };
    // An fp16 buffer X: also the element as stored (X_ath) for the scalar kernel's
    // fp16 staging (gemm_tile.comp @A_LOAD@). Through gemm_a the conversion
    // to float sat behind the padding branch, where the compiler could not
    // fold it with the staging's conversion back.
    p.gemm_a_h = half_buffer_operand(p, p.a_tensor);
    const auto half_a = [&](const std::string& unit, const std::string& channel) {
      if (!p.gemm_a_h) return std::string();
      return "float16_t gemm_a_h(int b, int m, int k) {\n" + unit +
             input_pixel("return float16_t(0.0);") + "  return X_ath(img, g * CV_CG + " + channel + ", " +
             list("i", S) + ");\n}\n";
    };
    if (tap_major) {
      h += "float gemm_a(int b, int m, int k) {\n  int c = k % CV_CG, tap = k / CV_CG;\n" + input_pixel("return 0.0;") +
           "  return X_at(img, g * CV_CG + c, " + list("i", S) + ");\n}\n";
      h += half_a("  int c = k % CV_CG, tap = k / CV_CG;\n", "c");
      p.conv_units = cg % 8 == 0 ? GemmProblem::ConvUnits::kChannelRuns : GemmProblem::ConvUnits::kGathered;
      // 8 channels of one tap: one pixel's index math for the unit.
      if (cg % 8 == 0)
        p.vector_helpers = "#define GEMM_A8 1\nuvec4 gemm_a8(int b, int m, int k) {\n  int c = k % CV_CG, tap = k / CV_CG;\n" +
                           input_pixel("return uvec4(0);") + "  float v[8];\n  [[unroll]] for (int j = 0; j < 8; ++j) v[j] = X_at(img, g * CV_CG + c + j, " +
                           list("i", S) + ");\n"
                           "  return uvec4(packHalf2x16(vec2(v[0], v[1])), packHalf2x16(vec2(v[2], v[3])),\n"
                           "               packHalf2x16(vec2(v[4], v[5])), packHalf2x16(vec2(v[6], v[7])));\n}\n";
    } else {
      h += "float gemm_a(int b, int m, int k) {\n  int tap = k;\n" + input_pixel("return 0.0;");
      h += "  return X_at(img, g * CV_CG + t, " + list("i", S) + ");\n}\n";
      h += half_a("  int tap = k;\n", "t");
    }
  }
  if (w) {
    KILN_ASSIGN_OR_RETURN(Tensor packed, repack_conv_weights(*w, g.group, tap_major));
    p.tensors.push_back(ctx.bind("W", upload_weights(ctx, std::move(packed))));
    h += "float gemm_b(int b, int k, int n) { return W_ld(((b % CV_G) * GEMM_K + k) * GEMM_N + n); }\n";
    if (ng % 8 == 0)
      p.vector_helpers += "#define GEMM_B8 1\nuvec4 gemm_b8(int b, int k, int n) {\n"
                         "  return W_ld8h(((b % CV_G) * GEMM_K + k) * GEMM_N + n);\n}\n";
  } else {
    p.tensors.push_back(ctx.bind("W", ctx.input(1)));
    h += "float gemm_b(int b, int k, int n) {\n  int t = k;\n" + split_kernel("t", S) +
         "  return W_at((b % CV_G) * GEMM_N + n, t, " + list("k", S) + ");\n}\n";
  }
  if (ctx.has_input(2)) {
    p.tensors.push_back(ctx.bind("Bias", ctx.input(2)));
    h += "float gemm_epilogue(int b, int m, int n, float acc) { return acc + Bias_at((b % CV_G) * GEMM_N + n); }\n";
  } else {
    h += "float gemm_epilogue(int b, int m, int n, float acc) { return acc; }\n";
  }
  // An image packed on channels takes four channels of one pixel per store,
  // which must stay inside the group.
  const bool image_ok = ctx.layout(ctx.output(0)).packed_axis == 1 && (g.group == 1 || ng % 4 == 0);
  const GemmOutput out = bind_gemm_output(ctx, image_ok);
  p.tensors.push_back(out.y);
  if (out.is_buffer()) {
    p.store_m_major = true;
    h += gemm_store4_buffer("((b / CV_G) * Y_D1 + (b % CV_G) * GEMM_N + nj) * GEMM_M + m");
  } else {
    h += gemm_store4_image("  int t = m;\n" + split_spatial("o", "t", "Y", S),
                           "b / CV_G, (b % CV_G) * GEMM_N + n, " + list("o", S));
  }
  p.helpers = std::move(h);
  KILN_RETURN_IF_ERROR(emit_gemm(ctx, p));
  finish_gemm_output(ctx, out);
  return ok_status();
}

// What Conv and ConvTranspose read alike: float tensors of 1 to 3 spatial
// axes, group, kernel, strides, dilations; returns the window attributes
// (pads, auto_pad) for the caller's own padding rules.
StatusOr<ops::WindowAttrs> read_geometry(LoweringContext& ctx, ConvGeometry* g) {
  if (!dtype_is_float(ctx.input_dtype(0))) return ctx.error(ctx.node().op + " needs float tensors");
  const std::vector<ir::Dim>& sx = ctx.input_shape(0);
  if (sx.size() < 3 || sx.size() > 5) return ctx.unsupported("only 1 to 3 spatial axes");
  g->spatial = sx.size() - 2;
  KILN_ASSIGN_OR_RETURN(const ops::WindowAttrs wa, ops::read_window_attrs(ctx.node(), g->spatial, false));
  g->group = ctx.node().attr_int("group", 1);
  if (g->group < 1) return ctx.error("group must be positive");
  KILN_RETURN_IF_ERROR(read_kernel(ctx, *g));
  g->strides = wa.strides;
  g->dilations = wa.dilations;
  return wa;
}

}  // namespace

StatusOr<Tensor> transpose_pointwise_weight(const Tensor& w) {
  KILN_ASSIGN_OR_RETURN(Tensor packed, repack_conv_weights(w, 1, false));  // [1][ci][co]
  return packed.reshaped({w.dim(1), w.dim(0)});
}

std::string pointwise_bias_epilogue(LoweringContext& ctx, GemmProblem& p) {
  if (!ctx.has_input(2)) return "float gemm_epilogue(int b, int m, int n, float acc) { return acc; }\n";
  p.tensors.push_back(ctx.bind("Bias", ctx.input(2)));
  return "float gemm_epilogue(int b, int m, int n, float acc) { return acc + Bias_at(n); }\n";
}

std::string pointwise_plane_read(const std::string& x, const std::string& img, const std::string& c, size_t spatial,
                                 const std::string& scale) {
  const std::string times = scale.empty() ? "" : " * " + scale;
  const std::string pixel = join_args(row_major_coords(x, 2, spatial, "m"));
  return "#ifdef " + x + "_IS_VIEW\n  return " + x + "_at(" + img + ", " + c + ", " + pixel + ")" + times +
         ";\n#else\n  return " + x + "_ld((" + img + " * " + dn(x, 1) + " + " + c + ") * GEMM_M + m)" + times +
         ";\n#endif\n";
}

StatusOr<Tensor> repack_depthwise_taps(const Tensor& w) {
  const int64_t c = w.dim(0), kk = w.numel() / std::max<int64_t>(1, c);
  KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(w.dtype(), {kk, c}));
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t r = 0; r < kk; ++r) t.set_f64(r * c + ch, w.get_f64(ch * kk + r));
  return t;
}

Status lower_conv(LoweringContext& ctx) {
  const std::vector<ir::Dim>& sx = ctx.input_shape(0);
  const std::vector<ir::Dim>& sy = ctx.output_shape(0);
  ConvGeometry g;
  KILN_ASSIGN_OR_RETURN(const ops::WindowAttrs wa, read_geometry(ctx, &g));
  for (size_t i = 0; i < g.spatial; ++i) {
    if (wa.auto_pad == AutoPad::kSameUpper || wa.auto_pad == AutoPad::kSameLower) {
      // total = max(0, (out - 1) * stride + dilated kernel - in), the odd one
      // at the end (UPPER) or the beginning (LOWER).
      const int64_t dk = (g.kernel[i] - 1) * g.dilations[i] + 1;
      const ir::Dim total =
          ir::Dim::max(ir::Dim(0), (sy[2 + i] - ir::Dim(1)) * ir::Dim(g.strides[i]) + ir::Dim(dk) - sx[2 + i]);
      const ir::Dim half = ir::Dim::floor_div(total, ir::Dim(2));
      set_pad(g, wa.auto_pad == AutoPad::kSameUpper ? half : total - half);
      // The end pad alone (SAME_UPPER's odd one) lets the last window reach
      // past the input too.
      if (!(total.is_const() && total.value() == 0)) g.zero_pads = false;
    } else {
      set_pad(g, ir::Dim(wa.pads[i]));
      if (wa.pads[g.spatial + i] != 0) g.zero_pads = false;
    }
  }
  const int64_t cg = ctx.input_shape(1)[1].value();
  if (cg == 1) return conv_depthwise(ctx, g);
  return conv_gemm(ctx, g);
}

// ---------------------------------------------------------------------------
// ConvTranspose: X [N, C, in...], W [C, M/G, k...] -> Y [N, M, out...] with
//   Y[n, oc, o] = B[oc] + sum over c in oc's group, kernel offsets k with
//                 o = i * stride - pad + k * dilation for an input position i.

Status lower_conv_transpose(LoweringContext& ctx) {
  const std::vector<ir::Dim>& sx = ctx.input_shape(0);
  const std::vector<ir::Dim>& sy = ctx.output_shape(0);
  ConvGeometry g;
  KILN_ASSIGN_OR_RETURN(const ops::WindowAttrs wa, read_geometry(ctx, &g));
  const std::vector<int64_t> out_pad = ctx.node().attr_ints("output_padding", std::vector<int64_t>(g.spatial, 0));
  if (out_pad.size() != g.spatial) return ctx.error("output_padding needs one value per spatial axis");
  // Pads derived from the requested output size (output_shape or SAME_*),
  // as the reference computes them; else the explicit pads.
  const bool derived =
      ctx.node().attr("output_shape") != nullptr || wa.auto_pad == AutoPad::kSameUpper || wa.auto_pad == AutoPad::kSameLower;
  for (size_t i = 0; i < g.spatial; ++i) {
    if (!derived) {
      set_pad(g, ir::Dim(wa.pads[i]));
      continue;
    }
    const int64_t extra = out_pad[i] + (g.kernel[i] - 1) * g.dilations[i] + 1;
    const ir::Dim total = (sx[2 + i] - ir::Dim(1)) * ir::Dim(g.strides[i]) + ir::Dim(extra) - sy[2 + i];
    const ir::Dim half = ir::Dim::floor_div(total, ir::Dim(2));
    set_pad(g, wa.auto_pad == AutoPad::kSameUpper ? half : total - half);
  }
  const int64_t cin = ctx.input_shape(1)[0].value(), ng = ctx.input_shape(1)[1].value();
  if (cin % g.group != 0) return ctx.error("input channels not divisible by group");
  const int64_t cg = cin / g.group, kk = kernel_size(g);
  const size_t S = g.spatial;

  std::vector<KernelTensor> t = {ctx.bind("X", ctx.input(0))};
  std::string kidx = "k0";
  for (size_t i = 1; i < S; ++i) kidx = "(" + kidx + ") * CV_KS" + idx(i) + " + k" + idx(i);
  std::string wload;
  if (const Tensor* w = ctx.input_constant(1)) {
    t.push_back(ctx.bind("W", upload_weights(ctx, *w)));  // [C][M/G][kk] as is
    wload = "W_ld((c * CV_NG + ocg) * " + std::to_string(kk) + " + " + kidx + ")";
  } else {
    t.push_back(ctx.bind("W", ctx.input(1)));
    wload = "W_at(c, ocg, " + list("k", S) + ")";
  }
  std::string body = "  int grp = oc1 / CV_NG, ocg = oc1 % CV_NG;\n";
  if (ctx.has_input(2)) {
    t.push_back(ctx.bind("Bias", ctx.input(2)));
    body += "  float acc = Bias_at(oc1);\n";
  } else {
    body += "  float acc = 0.0;\n";
  }
  body += "  for (int ci = 0; ci < CV_CG; ++ci) {\n    int c = grp * CV_CG + ci;\n";
  std::string indent = "    ";
  for (size_t i = 0; i < S; ++i) {
    const std::string I = idx(i);
    body += indent + "for (int k" + I + " = 0; k" + I + " < CV_KS" + I + "; ++k" + I + ") {\n";
    indent += "  ";
    body += indent + "int t" + I + " = oc" + idx(2 + i) + " + CV_PB" + I + " - k" + I + " * CV_DL" + I + ";\n";
    body += indent + "if (t" + I + " < 0 || t" + I + " % CV_ST" + I + " != 0) continue;\n";
    body += indent + "int i" + I + " = t" + I + " / CV_ST" + I + ";\n";
    body += indent + "if (i" + I + " >= " + dn("X", 2 + i) + ") continue;\n";
  }
  body += indent + "acc += X_at(oc0, c, " + list("i", S) + ") * " + wload + ";\n";
  for (size_t i = 0; i < S; ++i) {
    indent.resize(indent.size() - 2);
    body += indent + "}\n";
  }
  body += "  }\n  v = acc;";
  t.push_back(ctx.bind("Y", ctx.output(0), true));
  KernelDesc d = map_kernel("conv_transpose", std::move(t), std::move(body));
  d.params = geometry_params(g);
  d.params.push_back({"CV_NG", ir::Dim(ng)});
  d.params.push_back({"CV_CG", ir::Dim(cg)});
  ir::Dim xs(1);
  for (const ir::Dim& x : sx) xs = xs * x;
  d.flops = ir::Dim(2 * kk * ng) * xs;
  ctx.emit(std::move(d));
  return ok_status();
}

}  // namespace kiln::planner
