// Two 1x1 convolutions and the Add of their outputs as one GEMM over the
// concatenated K (see fusion_conv_sum.h).
#include "planner/fusion_conv_sum.h"

#include <cstddef>
#include <cstring>
#include <string>

#include "engine/ops/window_util.h"
#include "planner/fusion.h"
#include "planner/gemm_kernels.h"
#include "planner/lower_util.h"

namespace kiln::planner {
namespace {

std::vector<int64_t> strides_of(const ir::Node& node) {
  auto wa = ops::read_window_attrs(node, 2, false);
  return wa.ok() ? wa->strides : std::vector<int64_t>{1, 1};
}

}  // namespace

bool is_unpadded_1x1_conv(const ir::Graph& graph, const ir::Node& node) {
  if (!node.domain.empty() || node.op != "Conv" || node.inputs.size() < 2 || node.outputs.size() != 1) return false;
  const Tensor* w = node_input_constant(graph, node, 1);
  if (!w || w->rank() != 4 || w->dim(2) != 1 || w->dim(3) != 1 || node.attr_int("group", 1) != 1) return false;
  auto wa = ops::read_window_attrs(node, 2, false);
  if (!wa.ok() || (wa->auto_pad != ops::AutoPad::kNotSet && wa->auto_pad != ops::AutoPad::kValid)) return false;
  for (int64_t p : wa->pads)
    if (p != 0) return false;
  return true;
}

std::optional<size_t> conv_sum_add_index(const ir::Graph& graph, const FusionGroup& group) {
  if (group.in_subgraph || group.nodes.size() < 3) return std::nullopt;
  const ir::Node& c0 = graph.node(group.nodes[0]);
  const ir::Node& c1 = graph.node(group.nodes[1]);
  const ir::Node& add = graph.node(group.nodes[2]);
  if (!is_unpadded_1x1_conv(graph, c0) || !is_unpadded_1x1_conv(graph, c1)) return std::nullopt;
  if (!add.domain.empty() || add.op != "Add" || add.inputs.size() != 2) return std::nullopt;
  const ir::ValueId y0 = c0.outputs[0], y1 = c1.outputs[0];
  if (!((add.inputs[0] == y0 && add.inputs[1] == y1) || (add.inputs[0] == y1 && add.inputs[1] == y0)))
    return std::nullopt;
  if (node_input_constant(graph, c0, 1)->dim(0) != node_input_constant(graph, c1, 1)->dim(0)) return std::nullopt;
  // The tail reads the sum, never a conv's own output.
  for (size_t k = 3; k < group.nodes.size(); ++k)
    for (ir::ValueId in : graph.node(group.nodes[k]).inputs)
      if (in == y0 || in == y1) return std::nullopt;
  return 2;
}

StatusOr<std::vector<KernelDesc>> lower_conv_sum(PlanBuilder& builder, const ir::Graph& graph,
                                                 const FusionGroup& group) {
  const ir::Node* convs[2] = {&graph.node(group.nodes[0]), &graph.node(group.nodes[1])};
  const ir::Node& add = graph.node(group.nodes[2]);
  const auto refuse = [&](const std::string& why) {
    return unimplemented(convs[0]->describe() + " + " + convs[1]->describe() + " (a sum of 1x1 convs) " + why);
  };
  for (const ir::Node* c : convs)
    for (ir::ValueId v : {c->inputs[0], c->outputs[0]})
      if (!builder.value_ranked(v) || builder.value_shape(v).size() != 4) return refuse("has a tensor not of rank 4");
  const std::vector<ir::Dim>& y0 = builder.value_shape(convs[0]->outputs[0]);
  if (!same_shape(y0, builder.value_shape(convs[1]->outputs[0])) || !same_shape(y0, builder.value_shape(add.outputs[0])))
    return refuse("has outputs of different shapes");
  const ElemType wtype = builder.value_elem_type(convs[0]->inputs[1]);
  if (builder.value_elem_type(convs[1]->inputs[1]) != wtype) return refuse("has weights of two element types");
  for (const ir::Node* c : convs)
    if (c->inputs.size() > 2 && c->inputs[2] != ir::kNoValue)
      for (ir::NodeId nid : group.nodes)
        if (graph.node(nid).outputs[0] == c->inputs[2]) return refuse("reads a bias made by the group");

  // The GEMM is the Add's: its output (laid out as the group's by
  // lower_fused) and its kiln.kernel hint.
  LoweringContext ctx(builder, graph, add.id);
  const Tensor* w[2] = {node_input_constant(graph, *convs[0], 1), node_input_constant(graph, *convs[1], 1)};
  const int64_t co = w[0]->dim(0), k0 = w[0]->dim(1), k1 = w[1]->dim(1);
  const std::vector<ir::Dim>& sy = ctx.output_shape(0);
  GemmProblem p;
  p.name = "convsum";
  p.batch = sy[0];
  p.m = sy[2] * sy[3];
  p.n = ir::Dim(co);
  p.k = ir::Dim(k0 + k1);
  p.a_m_fastest = true;  // neighbouring output pixels read neighbouring input pixels
  p.b_tensor = "W";
  p.params = {{"CS_K0", ir::Dim(k0)}};

  // A(img, pixel, k): input k of X0, or k - K0 of X1, at the conv's stride.
  std::string h = "float gemm_a(int b, int m, int k) {\n  int o1 = m % Y_D3, o0 = m / Y_D3;\n";
  for (size_t i = 0; i < 2; ++i) {
    const std::string x = "X" + std::to_string(i);
    const std::vector<int64_t> st = strides_of(*convs[i]);
    const std::string s0 = "CS_ST" + std::to_string(i) + "0", s1 = "CS_ST" + std::to_string(i) + "1";
    p.params.push_back({s0, ir::Dim(st[0])});
    p.params.push_back({s1, ir::Dim(st[1])});
    p.tensors.push_back(ctx.bind(x, builder.tensor_of(convs[i]->inputs[0])));
    const std::string c = i == 0 ? "k" : "k - CS_K0";
    // Stride 1 over a buffer: X's [channel][pixel] plane is A's column.
    const std::string read = st[0] == 1 && st[1] == 1 && p.tensors.back().layout.storage == Storage::kBuffer
                                 ? pointwise_plane_read(x, "b", c, 2)
                                 : "  return " + x + "_at(b, " + c + ", o0 * " + s0 + ", o1 * " + s1 + ");\n";
    h += i == 0 ? "  if (k < CS_K0) {\n" + read + "  }\n" : read;
  }
  h += "}\n";

  // B: [W0 | W1] as [K0 + K1][Co]: each weight [Co][Ki] transposed
  // (transpose_pointwise_weight), the second's rows below the first's.
  KILN_ASSIGN_OR_RETURN(Tensor t0, transpose_pointwise_weight(*w[0]));
  KILN_ASSIGN_OR_RETURN(Tensor t1, transpose_pointwise_weight(*w[1]));
  if (t1.dtype() != t0.dtype()) {
    KILN_ASSIGN_OR_RETURN(t1, t1.cast(t0.dtype()));
  }
  KILN_ASSIGN_OR_RETURN(Tensor packed, Tensor::allocate(t0.dtype(), {k0 + k1, co}));
  std::memcpy(packed.raw_data(), t0.raw_data(), t0.nbytes());
  std::memcpy(static_cast<std::byte*>(packed.raw_data()) + t0.nbytes(), t1.raw_data(), t1.nbytes());
  p.tensors.push_back(ctx.bind("W", ctx.add_constant(std::move(packed), {Storage::kBuffer, wtype})));
  h += "float gemm_b(int b, int k, int n) { return W_ld(k * GEMM_N + n); }\n";
  if (co % 8 == 0)
    p.vector_helpers = "#define GEMM_B8 1\nuvec4 gemm_b8(int b, int k, int n) { return W_ld8h(k * GEMM_N + n); }\n";
  std::string bias = "acc";
  for (size_t i = 0; i < 2; ++i) {
    if (convs[i]->inputs.size() < 3 || convs[i]->inputs[2] == ir::kNoValue) continue;
    const std::string name = "B" + std::to_string(i);
    p.tensors.push_back(ctx.bind(name, builder.tensor_of(convs[i]->inputs[2])));
    bias += " + " + name + "_at(n)";
  }
  h += "float gemm_epilogue(int b, int m, int n, float acc) { return " + bias + "; }\n";
  p.helpers = std::move(h);
  KILN_RETURN_IF_ERROR(emit_nchw_gemm(ctx, p));
  std::vector<KernelDesc> kernels = builder.take_pending_kernels();
  return kernels;
}

}  // namespace kiln::planner
