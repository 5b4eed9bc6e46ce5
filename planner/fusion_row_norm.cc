// A split-K reduce pass and the LayerNormalization after it as one row
// kernel (see fusion_row_norm.h).
#include "planner/fusion_row_norm.h"

#include <algorithm>
#include <map>
#include <set>

#include "planner/execution_plan.h"
#include "planner/glsl_codegen.h"
#include "planner/index_view.h"
#include "planner/lower_rows.h"
#include "planner/lower_util.h"
#include "planner/shader_template.h"

namespace kiln::planner {
namespace {

// Workgroup size of the row kernel (at most): a transformer's 768-1024 wide
// rows are 3-4 elements an invocation.
constexpr uint32_t kRowThreads = 256;

const ir::Node* row_norm_of(const ir::Graph& graph, const FusionGroup& group) {
  if (group.nodes.size() < 2) return nullptr;
  const ir::Node& ln = graph.node(group.nodes.back());
  if (!ln.domain.empty() || ln.op != "LayerNormalization" || ln.inputs.size() < 2 || ln.outputs.empty()) return nullptr;
  for (size_t i = 1; i < ln.outputs.size(); ++i)
    if (ln.outputs[i] != ir::kNoValue) return nullptr;
  const ir::Node& before = graph.node(group.nodes[group.nodes.size() - 2]);
  if (before.outputs.empty() || ln.inputs[0] != before.outputs[0]) return nullptr;
  const int64_t rank = static_cast<int64_t>(graph.value(ln.inputs[0]).shape.rank());
  const int64_t axis = ln.attr_int("axis", -1);
  if (rank < 1 || (axis != -1 && axis != rank - 1)) return nullptr;
  const ir::Node& anchor = graph.node(group.nodes.front());
  if (!anchor.domain.empty() || (anchor.op != "MatMul" && anchor.op != "Gemm")) return nullptr;
  // Scale and bias come from outside the group.
  for (ir::NodeId nid : group.nodes)
    for (ir::ValueId out : graph.node(nid).outputs)
      for (size_t i = 1; i < ln.inputs.size(); ++i)
        if (out != ir::kNoValue && ln.inputs[i] == out) return nullptr;
  return &ln;
}

// Where any node outside `group` reading `v` (its data: Shape and Size read
// dims the plan knows) stands before the group's last node in `position`,
// or a node inside another region or a sub-graph's outputs read it: why the
// group cannot run at its last node.
std::string early_reader(const ir::Graph& graph, const FusionGroup& group, ir::ValueId v,
                         const std::map<ir::NodeId, size_t>& position) {
  const std::set<ir::NodeId> members(group.nodes.begin(), group.nodes.end());
  const auto last = position.find(group.nodes.back());
  for (size_t i = 0; i < graph.num_nodes(); ++i) {
    const ir::Node& node = graph.node(static_cast<ir::NodeId>(i));
    if (node.erased || members.count(node.id) || (node.domain.empty() && (node.op == "Shape" || node.op == "Size")))
      continue;
    const std::vector<ir::ValueId> nested = subgraph_reads(graph, node);
    const bool reads = std::find(node.inputs.begin(), node.inputs.end(), v) != node.inputs.end() ||
                       std::find(nested.begin(), nested.end(), v) != nested.end();
    if (!reads) continue;
    const auto at = position.find(node.id);
    if (node.region != ir::kMainRegion || at == position.end() || last == position.end() || at->second < last->second)
      return "its input '" + graph.value(v).name + "' is read by " + node.describe() + " before it";
  }
  return {};
}

const KernelParam* find_param(const KernelDesc& kd, const std::string& name) {
  auto it = std::find_if(kd.params.begin(), kd.params.end(), [&](const KernelParam& p) { return p.name == name; });
  return it == kd.params.end() ? nullptr : &*it;
}

// The number of rows of `dims` (all but the last axis), when constant.
std::optional<int64_t> const_rows(const std::vector<ir::Dim>& dims) {
  int64_t n = 1;
  for (size_t k = 0; k + 1 < dims.size(); ++k) {
    if (!dims[k].is_const()) return std::nullopt;
    n *= dims[k].value();
  }
  return n;
}

// The reduce pass `r` (of the prefix's split-K GEMM) turned into the row
// kernel, or nullopt when `r` is no such pass or the layouts do not allow
// it (the prefix's kernels and the norm's then run as they are).
std::optional<KernelDesc> fuse_reduce_and_norm(PlanBuilder& builder, const ir::Graph& graph, const ir::Node& ln,
                                               const KernelDesc& r) {
  const KernelParam *split = find_param(r, "GEMM_SPLIT"), *bp = find_param(r, "GEMM_BATCH"),
                    *mp = find_param(r, "GEMM_M"), *np = find_param(r, "GEMM_N");
  auto gp = std::find_if(r.tensors.begin(), r.tensors.end(), [](const KernelTensor& t) { return t.name == "GP"; });
  // A split-K reduce pass (a fix-up writes GP; tensor-core partials have no
  // GEMM_SPLIT), of constant sizes.
  if (!split || !bp || !mp || !np || gp == r.tensors.end() || gp->written) return std::nullopt;
  // Partials stored column-major (an m-major output, splitk_reduce_kernel)
  // are no rows to normalize.
  if (r.helpers.find("#define REDUCE_M_MAJOR") != std::string::npos) return std::nullopt;
  if (!split->value.is_const() || !bp->value.is_const() || !mp->value.is_const() || !np->value.is_const())
    return std::nullopt;
  const TensorId x = builder.tensor_of(ln.inputs[0]);
  const TensorId z = builder.tensor_of(ln.outputs[0]);
  auto y = std::find_if(r.tensors.begin(), r.tensors.end(), [&](const KernelTensor& t) { return t.written; });
  const std::vector<ir::Dim>& xs = builder.value_shape(ln.inputs[0]);
  const int64_t rows = bp->value.value() * mp->value.value(), n = np->value.value();
  // A store view (fusion_store_views.h) made only of reshapes keeps the
  // row-major order: the GEMM's rows are X's (vit's out-projection ->
  // Reshape -> Reshape -> residual Add). X is then read back through a
  // second, plain binding.
  const bool reshaped = y != r.tensors.end() && y->view &&
                        std::all_of(y->view->steps.begin(), y->view->steps.end(),
                                    [](const ViewStep& st) { return st.kind == ViewStep::Kind::kReshape; });
  // It stores X's rows whole, in a buffer, and the norm writes a buffer.
  if (y == r.tensors.end() || y->tensor != x || (y->view && !reshaped) || y->layout.storage != Storage::kBuffer ||
      builder.tensor(z).layout.storage != Storage::kBuffer || xs.empty() || !xs.back().is_const() ||
      xs.back().value() != n || const_rows(xs) != rows)
    return std::nullopt;
  // The row in shared memory (floats) and the workgroup sums' vec4 per invocation.
  const TargetInfo& target = builder.target();
  uint32_t threads = kRowThreads;
  while (threads > 1 && threads > target.max_workgroup_invocations) threads /= 2;
  if (4 * n + 16 * int64_t{threads} > static_cast<int64_t>(target.max_shared_memory) ||
      rows > static_cast<int64_t>(target.max_workgroup_count_x))
    return std::nullopt;
  // Scale and bias: one value per column.
  const auto per_row = [&](ir::ValueId v) {
    const std::vector<ir::Dim>& s = builder.value_shape(v);
    return !s.empty() && s.back().is_const() && s.back().value() == n && const_rows(s) == 1;
  };
  const bool has_beta = ln.inputs.size() > 2 && ln.inputs[2] != ir::kNoValue;
  if (!per_row(ln.inputs[1]) || (has_beta && !per_row(ln.inputs[2]))) return std::nullopt;

  LoweringContext ctx(builder, graph, ln.id);
  KernelDesc k = r;
  k.name = r.name + "+layer_norm";
  // The row is read back after the stores: visible to the workgroup.
  for (KernelTensor& t : k.tensors)
    if (t.written) t.coherent = true;
  std::set<std::string> taken;
  for (const KernelTensor& t : k.tensors) taken.insert(t.name);
  const auto fresh = [&](std::string name) {
    while (taken.count(name)) name += "_";
    taken.insert(name);
    return name;
  };
  const std::string g = fresh("LNG"), b = fresh("LNB"), out = fresh("LNY");
  std::string xr = y->name;
  if (reshaped) {
    xr = fresh("LNX");
    k.tensors.push_back(ctx.bind(xr, x));
    k.tensors.back().coherent = true;
    // Two bindings of one buffer: neither may promise `restrict`.
    for (KernelTensor& t : k.tensors)
      if (t.tensor == x) t.shares_memory = true;
  }
  k.tensors.push_back(ctx.bind(g, builder.tensor_of(ln.inputs[1])));
  if (has_beta) k.tensors.push_back(ctx.bind(b, builder.tensor_of(ln.inputs[2])));
  k.tensors.push_back(ctx.bind(out, z, true));
  const bool subgroups = target.subgroup_arithmetic;
  if (subgroups)
    for (const std::string& e : rows::subgroup_extensions())
      if (std::find(k.extensions.begin(), k.extensions.end(), e) == k.extensions.end()) k.extensions.push_back(e);
  k.helpers += rows::workgroup_helpers({rows::Combine::kSum}, false, threads, subgroups);
  k.body = fill_shader("gemm_splitk_reduce_norm.comp", ShaderArgs()
                                                          .set("NT", threads)
                                                          .set("ROW", n)
                                                          .set("X", xr)
                                                          .set("G", g)
                                                          .set("B", b)
                                                          .set("Z", out)
                                                          .set("ZS", glsl_scalar(builder.tensor(z).layout.type))
                                                          .set("EPS", glsl_float(ln.attr_float("epsilon", 1e-5f)))
                                                          .flag("BETA", has_beta));
  k.local_size = {threads, 1, 1};
  k.groups = {ir::Dim(rows), ir::Dim(1), ir::Dim(1)};
  return k;
}

}  // namespace

bool is_row_norm_group(const ir::Graph& graph, const FusionGroup& group) {
  return !group.in_subgraph && row_norm_of(graph, group) != nullptr;
}

std::string row_norm_blocker(const ir::Graph& graph, const PlanBuilder& builder, const FusionGroup& group) {
  const FusionGroup prefix = row_norm_prefix(group);
  if (prefix.nodes.size() > 1) {
    const std::string why = fusion_blocker(graph, builder, prefix);
    if (!why.empty()) return why;
  }
  for (ir::NodeId nid : group.nodes) {
    const ir::Node& node = graph.node(nid);
    if (node.outputs.empty() || !builder.value_ranked(node.outputs[0]))
      return node.describe() + " has no output of known rank";
  }
  return {};
}

std::string row_norm_order_blocker(const ir::Graph& graph, const FusionGroup& group,
                                   const std::map<ir::NodeId, size_t>& position) {
  return early_reader(graph, group, row_norm_of(graph, group)->inputs[0], position);
}

FusionGroup row_norm_prefix(const FusionGroup& group) {
  FusionGroup prefix = group;
  prefix.nodes.pop_back();
  return prefix;
}

Status lower_row_norm(PlanBuilder& builder, const ir::Graph& graph, const FusionGroup& group,
                      const LoweringRegistry& lowerings) {
  const ir::Node& ln = *row_norm_of(graph, group);
  const FusionGroup prefix = row_norm_prefix(group);
  std::vector<KernelDesc> kernels;
  if (prefix.nodes.size() == 1) {
    KILN_ASSIGN_OR_RETURN(kernels, lower_alone(builder, graph, graph.node(prefix.nodes[0]), lowerings));
  } else {
    KILN_ASSIGN_OR_RETURN(kernels, lower_fused_kernels(builder, graph, prefix, lowerings));
  }
  std::optional<KernelDesc> fused =
      kernels.empty() ? std::nullopt : fuse_reduce_and_norm(builder, graph, ln, kernels.back());
  if (fused) {
    kernels.back() = std::move(*fused);
  } else {
    KILN_ASSIGN_OR_RETURN(std::vector<KernelDesc> norm, lower_alone(builder, graph, ln, lowerings));
    for (KernelDesc& kd : norm) kernels.push_back(std::move(kd));
  }
  for (KernelDesc& kd : kernels) builder.pending_kernels().push_back(std::move(kd));
  return ok_status();
}

}  // namespace kiln::planner
