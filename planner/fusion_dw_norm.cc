// A depthwise conv computed inside the LayerNormalization reading it (see
// fusion_dw_norm.h).
#include "planner/fusion_dw_norm.h"

#include <algorithm>
#include <memory>
#include <set>

#include "planner/dispatch_grid.h"
#include "planner/execution_plan.h"
#include "planner/fusion_dwpw.h"
#include "planner/index_view.h"
#include "planner/glsl_codegen.h"
#include "planner/lower_util.h"
#include "planner/shader_template.h"

namespace kiln::planner {
namespace {

bool is_layer_norm(const ir::Node& node) {
  if (!node.domain.empty() || node.op != "LayerNormalization" || node.inputs.size() < 2 || node.outputs.empty())
    return false;
  for (size_t i = 1; i < node.outputs.size(); ++i)
    if (node.outputs[i] != ir::kNoValue) return false;
  return true;
}

}  // namespace

bool is_dw_norm_group(const ir::Graph& graph, const FusionGroup& group) {
  if (group.in_subgraph || group.nodes.size() < 2) return false;
  const ir::Node& dw = graph.node(group.nodes.front());
  const ir::Node& norm = graph.node(group.nodes.back());
  if (!is_depthwise_conv(graph, dw) || !is_layer_norm(norm)) return false;
  for (size_t k = 1; k < group.nodes.size(); ++k) {
    const ir::Node& node = graph.node(group.nodes[k]);
    const ir::Node& prev = graph.node(group.nodes[k - 1]);
    const bool last = k + 1 == group.nodes.size();
    if (!last && !is_view_node(graph, node)) return false;
    if (node.inputs.empty() || prev.outputs.size() != 1 || node.inputs[0] != prev.outputs[0]) return false;
  }
  // Scale and bias (and every other input of a view) come from outside.
  std::set<ir::ValueId> made;
  for (ir::NodeId nid : group.nodes)
    for (ir::ValueId v : graph.node(nid).outputs) made.insert(v);
  for (ir::NodeId nid : group.nodes) {
    const ir::Node& node = graph.node(nid);
    for (size_t i = 1; i < node.inputs.size(); ++i)
      if (made.count(node.inputs[i])) return false;
  }
  return true;
}

std::string dw_norm_blocker(const ir::Graph& graph, const PlanBuilder& builder, const FusionGroup& group) {
  const std::set<ir::NodeId> members(group.nodes.begin(), group.nodes.end());
  for (ir::NodeId nid : group.nodes) {
    const ir::Node& node = graph.node(nid);
    if (!builder.value_ranked(node.outputs[0]) || !builder.value_ranked(node.inputs[0]))
      return node.describe() + " has a value of unknown rank";
  }
  // Each intermediate is read by the next member only (Shape and Size read
  // dims, which the plan keeps).
  for (size_t k = 0; k + 1 < group.nodes.size(); ++k) {
    const ir::Node& node = graph.node(group.nodes[k]);
    const ir::ValueId v = node.outputs[0];
    const ir::NodeId next = group.nodes[k + 1];
    const std::string why = outside_reader(graph, v, [&](const ir::Node& reader) { return reader.id == next; });
    if (!why.empty())
      return "the output '" + graph.value(v).name + "' of " + node.describe() + why +
             " (it is computed inside the norm's kernel)";
  }
  return {};
}

Status lower_dw_norm(PlanBuilder& builder, const ir::Graph& graph, const FusionGroup& group,
                     const LoweringRegistry& lowerings) {
  const ir::Node& dw = graph.node(group.nodes.front());
  const ir::Node& norm = graph.node(group.nodes.back());
  const auto refuse = [&](const std::string& why) {
    return unimplemented(dw.describe() + " inside " + norm.describe() + " " + why);
  };
  // The norm's X as a view of dw's output: a Transpose to channels last.
  IndexView view = IndexView::identity(builder.value_shape(dw.outputs[0]));
  for (size_t k = 1; k + 1 < group.nodes.size(); ++k) {
    LoweringContext ctx(builder, graph, group.nodes[k]);
    KILN_RETURN_IF_ERROR(append_view_node(view, ctx));
  }
  if (view.steps.size() != 1 || view.steps[0].kind != ViewStep::Kind::kTranspose ||
      view.steps[0].perm != std::vector<int>{0, 2, 3, 1})
    return refuse("(only a Transpose [0, 2, 3, 1] to channels last goes between them)");
  const int64_t axis = norm.attr_int("axis", -1);
  if (axis != -1 && axis != 3) return refuse("(the norm is not over the channels alone)");
  LoweringContext ctx(builder, graph, norm.id);
  const std::vector<ir::Dim>& ys = ctx.output_shape(0);
  if (ys.size() != 4 || !ys[3].is_const()) return refuse("(the channel count is not known at plan time)");
  const int64_t c = ys[3].value();
  for (size_t i = 1; i < 3; ++i)
    if (ctx.has_input(i) && !(ctx.input_shape(i).size() == 1 && ctx.input_shape(i)[0].is_const() &&
                              ctx.input_shape(i)[0].value() == c))
      return refuse("(its scale or bias is not one value per channel)");
  KernelTensor y = ctx.bind("Y", ctx.output(0), true);
  // Stores of four channels: Y's vector axis must be the channel axis.
  if ((y.layout.storage == Storage::kImage ? y.layout.packed_axis : 3) != 3)
    return refuse("(its output is not packed along the channels)");
  KILN_ASSIGN_OR_RETURN(DepthwiseOnTheFly conv, depthwise_on_the_fly(builder, graph, dw, "DW"));

  // P pixels of a row per workgroup, R per invocation. A device of many
  // compute units (a GPU: 16 or more) gets R = 1 with the pixels fastest —
  // a warp's loads are neighbouring columns of a few channels, the window's
  // overlap hits the cache, and every output is an invocation of its own;
  // a CPU device (lavapipe counts its worker threads) gets R = 8 at stride
  // 1 (else 4), each window row's input span read once into registers for
  // R outputs, as conv_depthwise_rows does (loads cost there what they save).
  // (The fusion plugin groups them only on devices of fewer than 16 compute
  // units, where it was measured to pay; a plugin may group them on any.)
  // P: as many as fit half of shared memory (up to 32), fewer while that
  // leaves too few workgroups to fill the compute units twice over.
  const TargetInfo& target = builder.target();
  const bool wide = target.compute_units >= 16;
  uint32_t nt = wide ? 256 : 128;
  while (nt > 1 && nt > target.max_workgroup_invocations) nt /= 2;
  const int64_t r = wide ? 1 : conv.strides[1] == 1 ? 8 : 4;
  const auto shared_bytes = [&](int64_t px) { return 4 * (c * (px + 1) + int64_t{nt} + 2 * px); };
  const ir::Dim rows = ys[0] * ys[1];
  const auto groups_for = [&](int64_t px) { return rows * ir::Dim::ceil_div(ys[2], ir::Dim(px)); };
  int64_t p = 32;
  while (p > r && (2 * shared_bytes(p) > static_cast<int64_t>(target.max_shared_memory) ||
                   (target.compute_units > 0 && groups_for(p).is_const() &&
                    groups_for(p).value() < 2 * int64_t{target.compute_units})))
    p /= 2;
  if (shared_bytes(p) > static_cast<int64_t>(target.max_shared_memory) || p > nt)
    return refuse("(a few pixels' channels do not fit the device's shared memory)");

  KernelDesc kd;
  kd.name = "fused_depthwise_transpose_layer_norm";
  kd.family = KernelDesc::Family::kCustom;
  kd.extensions = {"GL_EXT_control_flow_attributes"};
  kd.tensors = std::move(conv.tensors);
  kd.params = std::move(conv.params);
  kd.tensors.push_back(ctx.bind("G", ctx.input(1)));
  const bool beta = ctx.has_input(2);
  if (beta) kd.tensors.push_back(ctx.bind("B", ctx.input(2)));
  kd.tensors.push_back(std::move(y));
  const ir::Dim groups = groups_for(p);
  kd.params.push_back({"KILN_GROUPS", groups});
  kd.local_size = {nt, 1, 1};
  kd.groups = dispatch_grid_2d(groups, target.max_workgroup_count_x);
  kd.helpers = conv.code;
  kd.body = fill_shader("dw_layer_norm.comp", ShaderArgs()
                                                  .set("NT", nt)
                                                  .set("P", p)
                                                  .set("T", nt / static_cast<uint32_t>(p))
                                                  .set("C", c)
                                                  .set("R", r)
                                                  .set("KH", conv.kernel[0])
                                                  .set("KW", conv.kernel[1])
                                                  .set("SX", conv.strides[1])
                                                  .set("DX", conv.dilations[1])
                                                  .set("EPS", glsl_float(norm.attr_float("epsilon", 1e-5f)))
                                                  .flag("DW_BIAS", dw.inputs.size() > 2 && dw.inputs[2] != ir::kNoValue)
                                                  .flag("BETA", beta));
  ir::Dim elements = rows * ys[2] * ir::Dim(c);
  kd.flops = ir::Dim(2 * conv.window) * elements;
  builder.pending_kernels().push_back(std::move(kd));
  return ok_status();
}

}  // namespace kiln::planner
