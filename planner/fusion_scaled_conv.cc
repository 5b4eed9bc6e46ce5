// A per-channel scale folded into the 1x1 conv reading it (see
// fusion_scaled_conv.h).
#include "planner/fusion_scaled_conv.h"

#include <string>

#include "engine/ops/window_util.h"
#include "planner/fusion.h"
#include "planner/fusion_conv_sum.h"
#include "planner/gemm_kernels.h"
#include "planner/lower_util.h"

namespace kiln::planner {
namespace {

// Whether `s` is [N or 1, C, 1, 1] for `x` [N, C, H, W].
bool per_channel(const std::vector<ir::Dim>& x, const std::vector<ir::Dim>& s) {
  if (x.size() != 4 || s.size() != 4) return false;
  const auto is = [](const ir::Dim& d, int64_t v) { return d.is_const() && d.value() == v; };
  return (is(s[0], 1) || s[0].same_as(x[0])) && s[1].same_as(x[1]) && is(s[2], 1) && is(s[3], 1);
}

}  // namespace

std::optional<size_t> scaled_conv_index(const ir::Graph& graph, const FusionGroup& group) {
  if (group.in_subgraph || group.nodes.size() < 2) return std::nullopt;
  const ir::Node& mul = graph.node(group.nodes[0]);
  const ir::Node& conv = graph.node(group.nodes[1]);
  if (!mul.domain.empty() || mul.op != "Mul" || mul.inputs.size() != 2 || mul.outputs.size() != 1) return std::nullopt;
  if (!is_unpadded_1x1_conv(graph, conv) || conv.inputs[0] != mul.outputs[0]) return std::nullopt;
  // The tail reads the conv's output, never the scaled map.
  for (size_t k = 2; k < group.nodes.size(); ++k)
    for (ir::ValueId in : graph.node(group.nodes[k]).inputs)
      if (in == mul.outputs[0]) return std::nullopt;
  return 1;
}

StatusOr<std::vector<KernelDesc>> lower_scaled_conv(PlanBuilder& builder, const ir::Graph& graph,
                                                    const FusionGroup& group) {
  const ir::Node& mul = graph.node(group.nodes[0]);
  const ir::Node& conv = graph.node(group.nodes[1]);
  const auto refuse = [&](const std::string& why) {
    return unimplemented(conv.describe() + " reading " + mul.describe() + " (a per-channel scale) " + why);
  };
  for (ir::ValueId v : {mul.inputs[0], mul.inputs[1], mul.outputs[0], conv.outputs[0]})
    if (!builder.value_ranked(v) || builder.value_shape(v).size() != 4) return refuse("has a tensor not of rank 4");
  const std::vector<ir::Dim>& scaled = builder.value_shape(mul.outputs[0]);
  int xi = -1;
  for (int i = 0; i < 2; ++i)
    if (same_shape(builder.value_shape(mul.inputs[static_cast<size_t>(i)]), scaled) &&
        per_channel(scaled, builder.value_shape(mul.inputs[static_cast<size_t>(1 - i)])))
      xi = i;
  if (xi < 0) return refuse("does not scale a feature map by one value per channel");
  if (conv.inputs.size() > 2 && conv.inputs[2] != ir::kNoValue && conv.inputs[2] == mul.outputs[0])
    return refuse("reads a bias made by the group");

  // The GEMM is the conv's: its output (laid out as the group's by
  // lower_fused) and its kiln.kernel hint.
  LoweringContext ctx(builder, graph, conv.id);
  const Tensor* w = ctx.input_constant(1);
  const int64_t co = w->dim(0), ci = w->dim(1);
  if (!scaled[1].is_const() || scaled[1].value() != ci) return refuse("has a weight not over the scaled channels");
  auto wa = ops::read_window_attrs(conv, 2, false);
  if (!wa.ok()) return wa.status();
  const std::vector<ir::Dim>& sy = ctx.output_shape(0);
  GemmProblem p;
  p.name = "scaledconv";
  p.batch = sy[0];
  p.m = sy[2] * sy[3];
  p.n = ir::Dim(co);
  p.k = ir::Dim(ci);
  p.a_m_fastest = true;  // neighbouring output pixels read neighbouring input pixels
  p.a_tensor = "X";
  p.b_tensor = "W";
  const bool unit_stride = wa->strides[0] == 1 && wa->strides[1] == 1;
  p.conv_units = unit_stride ? GemmProblem::ConvUnits::kPointwise : GemmProblem::ConvUnits::kStridedPointwise;
  p.params = {{"SC_ST0", ir::Dim(wa->strides[0])}, {"SC_ST1", ir::Dim(wa->strides[1])}};
  p.tensors.push_back(ctx.bind("X", builder.tensor_of(mul.inputs[static_cast<size_t>(xi)])));
  p.tensors.push_back(ctx.bind("S", builder.tensor_of(mul.inputs[static_cast<size_t>(1 - xi)])));
  // A(img, pixel, k): X's channel k at the conv's stride, times S's gate.
  std::string h = "float gemm_a(int b, int m, int k) {\n  float s = S_ld((S_D0 == 1 ? 0 : b) * S_D1 + k);\n";
  if (unit_stride && p.tensors[0].layout.storage == Storage::kBuffer) {
    // X's [channel][pixel] plane is A's column.
    h += pointwise_plane_read("X", "b", "k", 2, "s") + "}\n";
  } else {
    h += "  int o1 = m % Y_D3, o0 = m / Y_D3;\n  return X_at(b, k, o0 * SC_ST0, o1 * SC_ST1) * s;\n}\n";
  }

  // B: W [Co][Ci] as [Ci][Co].
  KILN_ASSIGN_OR_RETURN(Tensor packed, transpose_pointwise_weight(*w));
  p.tensors.push_back(ctx.bind("W", ctx.add_constant(std::move(packed), {Storage::kBuffer, ctx.input_elem_type(1)})));
  h += "float gemm_b(int b, int k, int n) { return W_ld(k * GEMM_N + n); }\n";
  if (co % 8 == 0)
    p.vector_helpers = "#define GEMM_B8 1\nuvec4 gemm_b8(int b, int k, int n) { return W_ld8h(k * GEMM_N + n); }\n";
  h += pointwise_bias_epilogue(ctx, p);
  p.helpers = std::move(h);
  KILN_RETURN_IF_ERROR(emit_nchw_gemm(ctx, p));
  std::vector<KernelDesc> kernels = builder.take_pending_kernels();
  return kernels;
}

}  // namespace kiln::planner
