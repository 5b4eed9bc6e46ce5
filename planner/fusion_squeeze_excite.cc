// Squeeze-and-excitation in one kernel (see fusion_squeeze_excite.h).
#include "planner/fusion_squeeze_excite.h"

#include <algorithm>
#include <optional>
#include <set>

#include "planner/fusion_conv_sum.h"
#include "planner/glsl_codegen.h"
#include "planner/lower_util.h"
#include "planner/shader_template.h"

namespace kiln::planner {
namespace {

bool is_op(const ir::Node& node, const char* op) { return node.domain.empty() && node.op == op; }

// The index in group.nodes of fc2: the second Conv, reading the value just
// before it (fc1's or tail1's last); nullopt when the nodes have another shape.
std::optional<size_t> fc2_index(const ir::Graph& graph, const FusionGroup& group) {
  if (group.in_subgraph || group.nodes.size() < 3) return std::nullopt;
  const ir::Node& pool = graph.node(group.nodes[0]);
  const ir::Node& fc1 = graph.node(group.nodes[1]);
  if (!is_op(pool, "GlobalAveragePool") || !is_op(fc1, "Conv") || fc1.inputs.empty() || pool.outputs.size() != 1 ||
      fc1.inputs[0] != pool.outputs[0])
    return std::nullopt;
  std::optional<size_t> fc2;
  for (size_t k = 2; k < group.nodes.size(); ++k) {
    const ir::Node& node = graph.node(group.nodes[k]);
    if (!is_op(node, "Conv")) continue;
    if (fc2) return std::nullopt;  // a third conv
    const ir::Node& prev = graph.node(group.nodes[k - 1]);
    if (node.inputs.empty() || prev.outputs.empty() || node.inputs[0] != prev.outputs[0]) return std::nullopt;
    fc2 = k;
  }
  return fc2;
}

// The constant weight [Co, Ci, 1, 1] of an unpadded 1x1 group-1 Conv over
// the `ci` channels of a [N, Ci, 1, 1] input, else why not.
StatusOr<const Tensor*> pointwise_weight(const ir::Graph& graph, const ir::Node& conv, int64_t ci) {
  if (!is_unpadded_1x1_conv(graph, conv) || node_input_constant(graph, conv, 1)->dim(1) != ci)
    return unimplemented(conv.describe() + " is no unpadded 1x1 group-1 conv with a constant weight over the " +
                         std::to_string(ci) + " channels it reads");
  return node_input_constant(graph, conv, 1);
}

}  // namespace

bool is_squeeze_excite_group(const ir::Graph& graph, const FusionGroup& group) {
  return fc2_index(graph, group).has_value();
}

std::string squeeze_excite_blocker(const ir::Graph& graph, const PlanBuilder& builder, const FusionGroup& group) {
  for (ir::NodeId nid : group.nodes) {
    const ir::Node& node = graph.node(nid);
    if (node.outputs.size() != 1 || !builder.value_ranked(node.outputs[0]))
      return node.describe() + " has no single output of known rank";
  }
  // Each value but the last is read inside the group only.
  const std::set<ir::NodeId> members(group.nodes.begin(), group.nodes.end());
  for (size_t k = 0; k + 1 < group.nodes.size(); ++k) {
    const ir::Node& node = graph.node(group.nodes[k]);
    const ir::ValueId v = node.outputs[0];
    const std::string why = outside_reader(graph, v, [&](const ir::Node& reader) { return members.count(reader.id) > 0; });
    if (!why.empty())
      return "the output '" + graph.value(v).name + "' of " + node.describe() + why +
             " (a squeeze-excite group keeps its values to itself)";
  }
  return {};
}

Status lower_squeeze_excite(PlanBuilder& builder, const ir::Graph& graph, const FusionGroup& group,
                            const LoweringRegistry& lowerings) {
  const size_t j = *fc2_index(graph, group);
  const ir::Node& pool = graph.node(group.nodes[0]);
  const ir::Node& fc1 = graph.node(group.nodes[1]);
  const ir::Node& fc2 = graph.node(group.nodes[j]);
  const auto refuse = [&](const std::string& why) {
    return unimplemented(pool.describe() + " and the convs after it (squeeze-excite) " + why);
  };
  const TargetInfo& target = builder.target();
  if (!target.subgroup_arithmetic) return refuse("need subgroup arithmetic, which the device lacks");
  LoweringContext pool_ctx(builder, graph, pool.id);
  const std::vector<ir::Dim>& xs = pool_ctx.input_shape(0);
  if (xs.size() != 4 || !xs[1].is_const()) return refuse("need a rank-4 input of known channels");
  const int64_t c = xs[1].value();
  LoweringContext ctx1(builder, graph, fc1.id), ctx2(builder, graph, fc2.id);
  KILN_ASSIGN_OR_RETURN(const Tensor* w1, pointwise_weight(graph, fc1, c));
  const int64_t r = w1->dim(0);
  KILN_ASSIGN_OR_RETURN(const Tensor* w2, pointwise_weight(graph, fc2, r));
  if (w2->dim(0) != c) return refuse("end in " + std::to_string(w2->dim(0)) + " channels, not the " + std::to_string(c) + " pooled");
  if (4 * (c + r) > static_cast<int64_t>(target.max_shared_memory))
    return refuse("need more shared memory than the device has");

  // The pool as its own lowering: a reduction over the whole device. In
  // the workgroup of its image it ran up to 20x slower on an H200 (one
  // compute unit's loads in flight for up to 400 K elements; bench/results/
  // h200-2026-11-29-session25).
  KILN_ASSIGN_OR_RETURN(std::vector<KernelDesc> pooled, lower_alone(builder, graph, pool, lowerings));
  KernelDesc kd;
  kd.name = "fused_excite";
  kd.family = KernelDesc::Family::kCustom;
  kd.extensions = {"GL_KHR_shader_subgroup_basic", "GL_KHR_shader_subgroup_arithmetic"};
  kd.tensors.push_back(pool_ctx.bind("P", pool_ctx.output(0)));
  kd.tensors.push_back(ctx1.bind("W1", ctx1.input(1)));
  const bool b1 = ctx1.has_input(2), b2 = ctx2.has_input(2);
  if (b1) kd.tensors.push_back(ctx1.bind("B1", ctx1.input(2)));
  kd.tensors.push_back(ctx2.bind("W2", ctx2.input(1)));
  if (b2) kd.tensors.push_back(ctx2.bind("B2", ctx2.input(2)));
  // The group's output, [N, C, 1, 1]: four channels a store.
  LoweringContext out_ctx(builder, graph, group.nodes.back());
  KernelTensor s = out_ctx.bind("S", out_ctx.output(0), true);
  const std::vector<ir::Dim>& ss = out_ctx.output_shape(0);
  if (ss.size() != 4 || !(ss[1].is_const() && ss[1].value() == c) || !(ss[2].is_const() && ss[2].value() == 1) ||
      !(ss[3].is_const() && ss[3].value() == 1))
    return refuse("do not end in a [N, " + std::to_string(c) + ", 1, 1] scale");
  if (s.layout.storage == Storage::kImage && s.layout.packed_axis != 1)
    return refuse("end in an image not packed along the channels");

  // The tails, each a function of its conv's output at one element.
  std::set<std::string> taken;
  for (const KernelTensor& t : kd.tensors) taken.insert(t.name);
  taken.insert("S");
  const auto tail = [&](size_t from, size_t to, const ir::Node& conv, const std::string& name,
                        const std::string& prefix) -> StatusOr<std::optional<ElementwiseFunction>> {
    const std::vector<ir::NodeId> nodes(group.nodes.begin() + static_cast<std::ptrdiff_t>(from),
                                        group.nodes.begin() + static_cast<std::ptrdiff_t>(to));
    if (nodes.empty()) return std::optional<ElementwiseFunction>();
    KILN_ASSIGN_OR_RETURN(ElementwiseFunction f, compose_elementwise(builder, graph, nodes, builder.tensor_of(conv.outputs[0]),
                                                                     name, prefix, taken, lowerings));
    for (const KernelTensor& t : f.inputs) taken.insert(t.name);
    return std::optional<ElementwiseFunction>(std::move(f));
  };
  KILN_ASSIGN_OR_RETURN(std::optional<ElementwiseFunction> t1, tail(2, j, fc1, "se_tail1", "Ea"));
  KILN_ASSIGN_OR_RETURN(std::optional<ElementwiseFunction> t2, tail(j + 1, group.nodes.size(), fc2, "se_tail2", "Eb"));
  std::string helpers;
  std::string suffix;
  if (t1) {
    helpers += t1->code;
    kd.tensors.insert(kd.tensors.end(), t1->inputs.begin(), t1->inputs.end());
    suffix += t1->suffix;
  }
  if (t2) {
    std::string code = t2->code;
    // A math helper both tails use is defined once.
    if (t1)
      for (const std::string& text : t2->sections)
        if (t1->code.find(text) != std::string::npos) erase_all(code, text);
    helpers += code;
    kd.tensors.insert(kd.tensors.end(), t2->inputs.begin(), t2->inputs.end());
    suffix += t2->suffix;
  }
  kd.tensors.push_back(std::move(s));
  kd.name += suffix;
  kd.helpers = std::move(helpers);

  // Each conv is a few rounds of independent loads: as many invocations
  // as the device allows (up to 1024) keep the rounds few.
  uint32_t nt = 1024;
  while (nt > target.subgroup_size && nt > target.max_workgroup_invocations) nt /= 2;
  kd.body = fill_shader("squeeze_excite.comp",
                        ShaderArgs()
                            .set("NT", nt)
                            .set("C", c)
                            .set("R", r)
                            .set("TAIL1", t1 ? "se_tail1(n, h, 0, 0, n * R + h, v)" : "v")
                            .set("TAIL2", t2 ? "se_tail2(n, ch, 0, 0, n * C + ch, v)" : "v")
                            .flag("B1", b1)
                            .flag("B2", b2));
  kd.local_size = {nt, 1, 1};
  kd.groups = {xs[0], ir::Dim(1), ir::Dim(1)};
  kd.flops = xs[0] * ir::Dim(4 * c * r);
  for (KernelDesc& k : pooled) builder.pending_kernels().push_back(std::move(k));
  builder.pending_kernels().push_back(std::move(kd));
  return ok_status();
}

}  // namespace kiln::planner
