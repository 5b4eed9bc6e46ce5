// A depthwise conv, its elementwise chain and a pointwise conv as one GEMM
// (see fusion_dwpw.h).
#include "planner/fusion_dwpw.h"

#include <string>

#include "engine/ops/window_util.h"
#include "planner/fusion.h"
#include "planner/gemm_kernels.h"
#include "planner/lower_util.h"

namespace kiln::planner {
namespace {

bool is_conv(const ir::Node& node) { return node.domain.empty() && node.op == "Conv"; }

bool all_equal(const std::vector<int64_t>& v, int64_t x) {
  for (int64_t e : v)
    if (e != x) return false;
  return true;
}

// pw of fusion_dwpw.h for `c` input channels.
bool is_pointwise(const ir::Graph& graph, const ir::Node& node, int64_t c) {
  if (!is_conv(node) || node.inputs.size() < 2 || node.outputs.size() != 1) return false;
  const Tensor* w = node_input_constant(graph, node, 1);
  if (!w || w->rank() != 4 || w->dim(1) != c || w->dim(2) != 1 || w->dim(3) != 1) return false;
  if (node.attr_int("group", 1) != 1) return false;
  auto wa = ops::read_window_attrs(node, 2, false);
  return wa.ok() && (wa->auto_pad == ops::AutoPad::kNotSet || wa->auto_pad == ops::AutoPad::kValid) &&
         all_equal(wa->strides, 1) && all_equal(wa->dilations, 1) && all_equal(wa->pads, 0);
}

}  // namespace

bool is_depthwise_conv(const ir::Graph& graph, const ir::Node& node) {
  if (!is_conv(node) || node.inputs.size() < 2 || node.outputs.size() != 1) return false;
  const Tensor* w = node_input_constant(graph, node, 1);
  const ir::SymShape& xs = graph.value(node.inputs[0]).shape;
  if (!w || w->rank() != 4 || !xs.has_rank || xs.dims.size() != 4) return false;
  const int64_t c = w->dim(0);
  return w->dim(1) == 1 && node.attr_int("group", 1) == c && c > 1 && xs.dims[1].is_const() && xs.dims[1].value() == c;
}

StatusOr<DepthwiseOnTheFly> depthwise_on_the_fly(PlanBuilder& builder, const ir::Graph& graph, const ir::Node& dw,
                                                 const std::string& prefix) {
  KILN_ASSIGN_OR_RETURN(const ops::WindowAttrs wa, ops::read_window_attrs(dw, 2, false));
  for (ir::ValueId v : {dw.inputs[0], dw.outputs[0]})
    if (!builder.value_ranked(v)) return unimplemented(dw.describe() + " has a tensor of unknown rank");
  LoweringContext ctx(builder, graph, dw.id);
  const Tensor& w = *ctx.input_constant(1);
  const int64_t kh = w.dim(2), kw = w.dim(3);
  // Begin pads: explicit, or SAME_* ones derived as lower_conv.cc does.
  // Windows reach outside the input (and need bounds checks) with any pad,
  // at the beginning or the end.
  std::vector<ir::Dim> pad_begin;
  bool pads = !all_equal(wa.pads, 0);
  for (size_t i = 0; i < 2; ++i) {
    ir::Dim pb(wa.pads[i]);
    if (wa.auto_pad == ops::AutoPad::kSameUpper || wa.auto_pad == ops::AutoPad::kSameLower) {
      const int64_t dk = ((i == 0 ? kh : kw) - 1) * wa.dilations[i] + 1;
      const ir::Dim total = ir::Dim::max(
          ir::Dim(0), (ctx.output_shape(0)[2 + i] - ir::Dim(1)) * ir::Dim(wa.strides[i]) + ir::Dim(dk) -
                          ctx.input_shape(0)[2 + i]);
      const ir::Dim half = ir::Dim::floor_div(total, ir::Dim(2));
      pb = wa.auto_pad == ops::AutoPad::kSameUpper ? half : total - half;
      pads = pads || !(total.is_const() && total.value() == 0);
    }
    pad_begin.push_back(pb);
  }
  DepthwiseOnTheFly out;
  out.window = kh * kw;
  out.kernel = {kh, kw};
  out.strides = {wa.strides[0], wa.strides[1]};
  out.dilations = {wa.dilations[0], wa.dilations[1]};
  const std::string P = prefix + "_", X = prefix + "X", W = prefix + "W", B = prefix + "B";
  out.params = {{P + "KS0", ir::Dim(kh)},           {P + "KS1", ir::Dim(kw)},
                {P + "ST0", ir::Dim(wa.strides[0])}, {P + "ST1", ir::Dim(wa.strides[1])},
                {P + "DL0", ir::Dim(wa.dilations[0])}, {P + "DL1", ir::Dim(wa.dilations[1])},
                {P + "PB0", pad_begin[0]},           {P + "PB1", pad_begin[1]}};
  out.tensors.push_back(ctx.bind(X, ctx.input(0)));
  // The taps as [kh * kw][C] (neighbouring channels' taps adjacent).
  KILN_ASSIGN_OR_RETURN(Tensor taps, repack_depthwise_taps(w));
  out.tensors.push_back(ctx.bind(W, ctx.add_constant(std::move(taps), {Storage::kBuffer, ctx.input_elem_type(1)})));
  const bool bias = ctx.has_input(2);
  if (bias) out.tensors.push_back(ctx.bind(B, ctx.input(2)));
  std::string h = "float " + prefix + "_conv(int n, int c, int o0, int o1) {\n";
  h += bias ? "  float acc = " + B + "_at(c);\n" : std::string("  float acc = 0.0;\n");
  h += "  for (int k0 = 0; k0 < " + P + "KS0; ++k0) {\n"
       "    int i0 = o0 * " + P + "ST0 - " + P + "PB0 + k0 * " + P + "DL0;\n";
  if (pads) h += "    if (i0 < 0 || i0 >= " + X + "_D2) continue;\n";
  h += "    for (int k1 = 0; k1 < " + P + "KS1; ++k1) {\n"
       "      int i1 = o1 * " + P + "ST1 - " + P + "PB1 + k1 * " + P + "DL1;\n";
  if (pads) h += "      if (i1 < 0 || i1 >= " + X + "_D3) continue;\n";
  h += "      acc += " + X + "_at(n, c, i0, i1) * " + W + "_at(k0 * " + P + "KS1 + k1, c);\n"
       "    }\n  }\n  return acc;\n}\n";
  out.code = std::move(h);
  return out;
}

std::optional<size_t> dwpw_pointwise_index(const ir::Graph& graph, const FusionGroup& group) {
  if (group.in_subgraph || group.nodes.size() < 2) return std::nullopt;
  const ir::Node& dw = graph.node(group.nodes[0]);
  if (!is_depthwise_conv(graph, dw)) return std::nullopt;
  const int64_t c = node_input_constant(graph, dw, 1)->dim(0);
  for (size_t p = 1; p < group.nodes.size(); ++p) {
    const ir::Node& node = graph.node(group.nodes[p]);
    if (!is_conv(node)) continue;
    const ir::Node& prev = graph.node(group.nodes[p - 1]);
    if (!is_pointwise(graph, node, c) || prev.outputs.size() != 1 || node.inputs[0] != prev.outputs[0])
      return std::nullopt;
    return p;
  }
  return std::nullopt;
}

StatusOr<std::vector<KernelDesc>> lower_dwpw(PlanBuilder& builder, const ir::Graph& graph, const FusionGroup& group,
                                             size_t pw_index, const LoweringRegistry& lowerings) {
  const ir::Node& dw = graph.node(group.nodes[0]);
  const ir::Node& pw = graph.node(group.nodes[pw_index]);
  const auto refuse = [&](const std::string& why) {
    return unimplemented(dw.describe() + " and " + pw.describe() + " (depthwise-pointwise) " + why);
  };
  if (!builder.value_ranked(pw.outputs[0])) return refuse("has a tensor of unknown rank");
  const int64_t c = node_input_constant(graph, dw, 1)->dim(0);
  const bool dw_bias = dw.inputs.size() > 2 && dw.inputs[2] != ir::kNoValue;
  for (ir::NodeId nid : group.nodes)
    if (nid != dw.id && nid != pw.id && dw_bias && graph.node(nid).outputs[0] == dw.inputs[2])
      return refuse("reads a bias made by the group");
  KILN_ASSIGN_OR_RETURN(DepthwiseOnTheFly conv, depthwise_on_the_fly(builder, graph, dw, "DW"));

  // The chain between the convs as kiln_prologue over dw's output.
  const TensorId dw_out = builder.tensor_of(dw.outputs[0]);
  const std::vector<ir::NodeId> chain(group.nodes.begin() + 1, group.nodes.begin() + static_cast<std::ptrdiff_t>(pw_index));
  ElementwiseFunction prologue;
  if (!chain.empty()) {
    KILN_ASSIGN_OR_RETURN(prologue, compose_elementwise(builder, graph, chain, dw_out, "kiln_prologue", "Pr",
                                                        {"DWX", "DWW", "DWB", "W", "Bias", "Y", "GP", "S"}, lowerings));
  }

  LoweringContext ctx(builder, graph, pw.id);
  const std::vector<ir::Dim>& sy = ctx.output_shape(0);
  GemmProblem p;
  p.name = "dwpw";
  p.batch = sy[0];
  p.m = sy[2] * sy[3];
  p.n = sy[1];
  p.k = ir::Dim(c);
  p.a_m_fastest = true;  // neighbouring output pixels read neighbouring input pixels
  p.params = conv.params;
  p.tensors = conv.tensors;
  for (const KernelTensor& t : prologue.inputs) p.tensors.push_back(t);

  // A(img, pixel, k): dw's output at channel k, through the chain.
  std::string h = prologue.code + conv.code;
  h += "float gemm_a(int b, int m, int k) {\n"
       "  int o1 = m % Y_D3, o0 = m / Y_D3;\n"
       "  float acc = DW_conv(b, k, o0, o1);\n";
  h += chain.empty() ? "  return acc;\n}\n" : "  return kiln_prologue(b, k, o0, o1, (b * GEMM_K + k) * GEMM_M + m, acc);\n}\n";

  // B: pw's weight [Co, C, 1, 1] as [C][Co].
  const Tensor* pw_w = ctx.input_constant(1);
  KILN_ASSIGN_OR_RETURN(Tensor packed, transpose_pointwise_weight(*pw_w));
  p.tensors.push_back(ctx.bind("W", ctx.add_constant(std::move(packed), {Storage::kBuffer, ctx.input_elem_type(1)})));
  h += "float gemm_b(int b, int k, int n) { return W_ld(k * GEMM_N + n); }\n";
  h += pointwise_bias_epilogue(ctx, p);
  p.helpers = std::move(h);
  KILN_RETURN_IF_ERROR(emit_nchw_gemm(ctx, p));
  std::vector<KernelDesc> kernels = builder.take_pending_kernels();
  // The depthwise window's multiply-adds, once per GEMM A element.
  for (KernelDesc& kd : kernels)
    if (!(kd.flops.is_const() && kd.flops.value() == 0))
      kd.flops = kd.flops + ir::Dim(2 * conv.window) * p.batch * p.m * p.k;
  return kernels;
}

}  // namespace kiln::planner
