// Store-side index views: an anchor's stores through a Reshape/Transpose
// chain into an elementwise tail (see fusion_store_views.h).
#include "planner/fusion_store_views.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <set>

#include "planner/execution_plan.h"
#include "planner/fusion_attention.h"
#include "planner/fusion_views.h"
#include "planner/glsl_codegen.h"
#include "planner/index_view.h"
#include "planner/lower_util.h"

namespace kiln::planner {
namespace {

// A view op that is a bijection: not a Slice or Expand, unless one whose
// output has its input's shape (forward_map checks a Slice's unit steps).
bool is_store_view_op(const PlanBuilder& builder, const ir::Node& node) {
  if (!is_view_op(node.domain, node.op)) return false;
  if (node.op != "Slice" && node.op != "Expand") return true;
  return builder.value_ranked(node.inputs[0]) &&
         same_shape(builder.value_shape(node.inputs[0]), builder.value_shape(node.outputs[0]));
}

bool has_subgraph(const ir::Node& node) {
  for (const auto& [key, attr] : node.attrs)
    if (attr.kind == ir::AttrKind::kGraph) return true;
  return false;
}

// Renames the function `from` (an identifier followed by '(') to `to`.
void rename_function(std::string& code, const std::string& from, const std::string& to) {
  const std::string call = from + "(";
  for (size_t at = code.find(call); at != std::string::npos; at = code.find(call, at + to.size())) {
    if (at > 0 && glsl_ident_char(code[at - 1])) {
      ++at;
      continue;
    }
    code.replace(at, from.size(), to);
  }
}

// Which anchor axis a forward map `program` (anchor coordinates -> output
// coordinates) passes unchanged to output axis `out_axis`: o[out_axis] is
// the coordinate c[a] itself and no other output coordinate reads c[a].
// -1 when there is none.
int passed_axis(const CoordProgram& program, int out_axis) {
  const CoordOp& op = program.ops[static_cast<size_t>(program.outputs[static_cast<size_t>(out_axis)])];
  if (op.kind != CoordOp::Kind::kCoord) return -1;
  const int a = op.index;
  // The coordinates each register reads.
  std::vector<std::set<int>> reads(program.ops.size());
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const CoordOp& o = program.ops[i];
    if (o.kind == CoordOp::Kind::kCoord) reads[i].insert(o.index);
    for (int r : {o.a, o.b})
      if (r >= 0) reads[i].insert(reads[static_cast<size_t>(r)].begin(), reads[static_cast<size_t>(r)].end());
  }
  for (size_t k = 0; k < program.outputs.size(); ++k)
    if (static_cast<int>(k) != out_axis && reads[static_cast<size_t>(program.outputs[k])].count(a)) return -1;
  return a;
}

}  // namespace

std::optional<StoreViewSplit> split_store_views(const ir::Graph& graph, const FusionGroup& group) {
  // An attention group may hold Reshapes between its anchors (swin's
  // shifted-window mask); it is no anchor -> views -> tail group.
  if (match_attention(graph, group)) return std::nullopt;
  std::set<ir::ValueId> produced;
  for (ir::NodeId nid : group.nodes)
    for (ir::ValueId v : graph.node(nid).outputs) produced.insert(v);
  // In plan order: the anchor part up to the first view node reading a
  // value of the group, the views each reading the one before, the tail.
  StoreViewSplit split;
  for (ir::NodeId nid : group.nodes) {
    const ir::Node& node = graph.node(nid);
    const bool view = is_view_op(node.domain, node.op) && !node.inputs.empty() && node.inputs[0] != ir::kNoValue;
    if (!split.tail.empty()) {
      split.tail.push_back(nid);
    } else if (split.views.empty()) {
      if (view && produced.count(node.inputs[0])) split.views.push_back(nid);
      else split.anchor_part.push_back(nid);
    } else if (view && node.inputs[0] == graph.node(split.views.back()).outputs[0]) {
      split.views.push_back(nid);
    } else {
      split.tail.push_back(nid);
    }
  }
  if (split.views.empty() || split.anchor_part.empty()) return std::nullopt;
  return split;
}

std::string store_view_blocker(const ir::Graph& graph, const PlanBuilder& builder, const FusionGroup& group,
                               const StoreViewSplit& split) {
  if (group.in_subgraph) return "it is in a sub-graph (only the main graph's groups fuse)";
  const std::set<ir::NodeId> members(group.nodes.begin(), group.nodes.end());
  // Who reads each value of the group: the nodes of the group, and whether
  // anything else does (another node, a sub-graph, the graph's outputs).
  std::map<ir::ValueId, std::set<ir::NodeId>> readers;
  std::set<ir::ValueId> outside;
  for (size_t i = 0; i < graph.num_nodes(); ++i) {
    const ir::Node& node = graph.node(static_cast<ir::NodeId>(i));
    if (node.erased) continue;
    for (ir::ValueId v : node.inputs) {
      if (v == ir::kNoValue) continue;
      if (members.count(node.id)) readers[v].insert(node.id);
      else outside.insert(v);
    }
    for (ir::ValueId v : subgraph_reads(graph, node)) outside.insert(v);
  }
  for (ir::ValueId v : graph.main().outputs) outside.insert(v);
  const ir::Node& last = graph.node(group.nodes.back());
  if (last.outputs.size() != 1 || last.outputs[0] == ir::kNoValue || !builder.value_ranked(last.outputs[0]))
    return last.describe() + " does not have exactly one output of known rank";
  const ir::ValueId out = last.outputs[0];
  // The anchor part: one node, or a shape-2 (or DWPW) group of its own.
  const FusionGroup anchor_group{group.id, split.anchor_part};
  if (split.anchor_part.size() > 1) {
    const std::string why = fusion_blocker(graph, builder, anchor_group);
    if (!why.empty()) return why;
  } else {
    const ir::Node& anchor = graph.node(split.anchor_part[0]);
    if (has_subgraph(anchor)) return anchor.describe() + " has a sub-graph";
    if (anchor.outputs.empty() || anchor.outputs[0] == ir::kNoValue) return anchor.describe() + " has no output";
    for (size_t k = 1; k < anchor.outputs.size(); ++k)
      if (anchor.outputs[k] != ir::kNoValue && (readers.count(anchor.outputs[k]) || outside.count(anchor.outputs[k])))
        return "the output '" + graph.value(anchor.outputs[k]).name + "' of the anchor is used (it has several)";
  }
  // The chain: each value read by the next view only (the last by the tail).
  ir::ValueId prev = graph.node(split.anchor_part.back()).outputs[0];
  const ElemType type = builder.value_elem_type(out);
  for (size_t j = 0; j <= split.views.size(); ++j) {
    const std::string what = "the value '" + graph.value(prev).name + "'";
    if (!builder.value_ranked(prev)) return what + " has an unknown rank";
    if (builder.value_elem_type(prev) != type) return what + " does not have the element type of the group's output";
    if (prev == out) break;  // a group without a tail
    if (outside.count(prev)) return what + " is read outside the group (a store view has one output)";
    const auto& r = readers[prev];
    if (j < split.views.size()) {
      const ir::Node& view = graph.node(split.views[j]);
      if (r.size() != 1 || !r.count(view.id))
        return what + " is read by more than " + view.describe() + " (a store view chain has one reader per link)";
      if (view.outputs.size() != 1 || view.outputs[0] == ir::kNoValue) return view.describe() + " does not have exactly one output";
      if (!is_store_view_op(builder, view))
        return view.describe() + " is not a bijection (a Slice or Expand that changes the shape cannot be a store view)";
      prev = view.outputs[0];
    } else {
      for (ir::NodeId reader : r)
        if (std::find(split.tail.begin(), split.tail.end(), reader) == split.tail.end())
          return what + " is read by a node of the group that is not in the tail";
      if (!same_shape(builder.value_shape(prev), builder.value_shape(out)))
        return what + " does not have the shape of the group's output (the tail reads it at the element it computes)";
    }
  }
  // The tail: nodes of the output's shape, each read only by the group.
  for (ir::NodeId nid : split.tail) {
    const ir::Node& node = graph.node(nid);
    if (has_subgraph(node)) return node.describe() + " has a sub-graph";
    if (node.outputs.size() != 1 || node.outputs[0] == ir::kNoValue || !builder.value_ranked(node.outputs[0]))
      return node.describe() + " does not have exactly one output of known rank";
    const ir::ValueId v = node.outputs[0];
    const std::string what = "the output '" + graph.value(v).name + "' of " + node.describe();
    if (!same_shape(builder.value_shape(v), builder.value_shape(out)))
      return what + " does not have the shape of the group's output";
    if (builder.value_elem_type(v) != type) return what + " does not have the element type of the group's output";
    if (v == out) continue;
    if (outside.count(v)) return what + " is read outside the group (a fused group has one output)";
    if (!readers.count(v)) return what + " is not read by the group (it is not connected)";
    for (ir::NodeId reader : readers[v])
      if (std::find(split.tail.begin(), split.tail.end(), reader) == split.tail.end())
        return what + " is read by a node of the group before the tail";
  }
  return {};
}

namespace {

// The view chain as a map from the anchor part's output coordinates to the
// group output's: the chain composed as a load view (anchor -> last view),
// then inverted step by step.
StatusOr<IndexView> forward_map(PlanBuilder& builder, const ir::Graph& graph, const StoreViewSplit& split,
                                std::string& ops) {
  const ir::ValueId anchor = graph.node(split.anchor_part.back()).outputs[0];
  IndexView chain = IndexView::identity(builder.value_shape(anchor));
  for (ir::NodeId nid : split.views) {
    LoweringContext ctx(builder, graph, nid);
    KILN_RETURN_IF_ERROR(append_view_node(chain, ctx));
    ops += (ops.empty() ? "" : "_") + lower_case(graph.node(nid).op);
  }
  IndexView forward = IndexView::identity(chain.shape);
  for (auto step = chain.steps.rbegin(); step != chain.steps.rend(); ++step) {
    switch (step->kind) {
      case ViewStep::Kind::kTranspose: {
        std::vector<int> inverse(step->perm.size());
        for (size_t k = 0; k < step->perm.size(); ++k) inverse[static_cast<size_t>(step->perm[k])] = static_cast<int>(k);
        forward.transpose(inverse);
        break;
      }
      case ViewStep::Kind::kReshape: forward.reshape(step->in_shape); break;
      case ViewStep::Kind::kSlice: {
        // Only the identity: every element in place (unit steps from 0).
        bool identity = same_shape(step->in_shape, step->out_shape);
        for (size_t k = 0; k < step->steps.size(); ++k)
          identity = identity && step->steps[k] == 1 && step->starts[k].is_const() && step->starts[k].value() == 0;
        if (identity) break;
        return unimplemented("the store view '" + chain.describe() + "' is not a bijection");
      }
      case ViewStep::Kind::kBroadcast:
        return unimplemented("the store view '" + chain.describe() + "' is not a bijection");
      case ViewStep::Kind::kRotate:  // a bijection, but the plugin never puts a roll in a store chain
        return unimplemented("the store view '" + chain.describe() + "' has a roll");
    }
  }
  if (!same_shape(forward.shape, chain.source_shape)) return internal_error("inverted store view has the wrong shape");
  return forward;
}

// The epilogue of a store view (glsl_codegen.h's signature, both places of
// an element): the anchor part's own epilogue `pre` (renamed; at the
// anchor's coordinates, may be empty) then the tail `tail` (at the
// output's; may be empty).
std::string store_view_epilogue(const std::string& pre, const std::string& tail, size_t anchor_rank,
                                size_t out_rank, const std::string& scalar) {
  std::string params;
  for (size_t k = 0; k < anchor_rank; ++k) params += "int c" + std::to_string(k) + ", ";
  params += "int ci, ";
  for (size_t k = 0; k < out_rank; ++k) params += "int o" + std::to_string(k) + ", ";
  std::string anchor_args, out_args;
  for (size_t k = 0; k < anchor_rank; ++k) anchor_args += "c" + std::to_string(k) + ", ";
  for (size_t k = 0; k < out_rank; ++k) out_args += "o" + std::to_string(k) + ", ";
  std::string value = "v";
  if (!pre.empty()) value = "kiln_epilogue_anchor(" + anchor_args + "ci, " + value + ")";
  if (!tail.empty()) value = "kiln_epilogue_tail(" + out_args + "oi, " + value + ")";
  return tail + pre + scalar + " kiln_epilogue(" + params + "int oi, " + scalar + " v) {\n  return " + value + ";\n}\n";
}

}  // namespace

Status lower_fused_store_views(PlanBuilder& builder, const ir::Graph& graph, const FusionGroup& group,
                               const StoreViewSplit& split, const LoweringRegistry& lowerings) {
  // The anchor part's last node writes the value the views read.
  const ir::Node& head = graph.node(split.anchor_part.back());
  const auto refuse = [&](const std::string& why) { return unimplemented(head.describe() + " " + why); };
  std::string ops;
  KILN_ASSIGN_OR_RETURN(IndexView forward, forward_map(builder, graph, split, ops));
  const TensorId anchor = builder.tensor_of(head.outputs[0]);
  const ir::ValueId out_value = graph.node(group.nodes.back()).outputs[0];
  const TensorId out = builder.tensor_of(out_value);
  const DeviceLayout out_layout = builder.tensor(out).layout;
  const std::vector<ir::Dim> anchor_shape = builder.value_shape(head.outputs[0]);
  // The anchor part stores as the group's output does (storage, element
  // type); an image along the anchor axis the map sends to the output's
  // packed axis.
  const CoordProgram program = compile_view(forward);
  DeviceLayout layout = out_layout;
  forward.vec_axis = -1;
  if (out_layout.storage == Storage::kImage) {
    const int a = passed_axis(program, out_layout.packed_axis);
    if (a < 0)
      return refuse("stores through '" + ops + "', which moves the packed axis of the image output '" +
                    graph.value(out_value).name + "' (a texel store needs its four lanes kept together)");
    layout.packed_axis = a;
    forward.vec_axis = a;
  }
  // 1. The anchor part, as it would run alone, its output laid out so. A
  // buffer output whose innermost axis is the anchor's innermost row axis
  // (ConvNeXt's MatMul over channels-last rows stored through a Transpose
  // to NCHW) is contiguous along a GEMM's rows: its GEMM stores m-major.
  const DeviceLayout saved = builder.tensor(anchor).layout;
  builder.tensor(anchor).layout = layout;
  builder.set_m_major_store_hint(out_layout.storage == Storage::kBuffer && anchor_shape.size() >= 2 &&
                                 !program.outputs.empty() &&
                                 passed_axis(program, static_cast<int>(program.outputs.size()) - 1) ==
                                     static_cast<int>(anchor_shape.size()) - 2);
  StatusOr<std::vector<KernelDesc>> lowered =
      split.anchor_part.size() > 1 ? lower_fused_kernels(builder, graph, FusionGroup{group.id, split.anchor_part}, lowerings)
                                   : lower_alone(builder, graph, head, lowerings);
  builder.set_m_major_store_hint(false);
  builder.tensor(anchor).layout = saved;
  KILN_ASSIGN_OR_RETURN(std::vector<KernelDesc> kernels, std::move(lowered));
  // 2. Its kernels may write its output only through the stores.
  std::set<std::string> taken;
  const std::string blocked = anchor_store_blocker(builder, kernels, anchor, anchor_shape, layout, true, taken);
  if (!blocked.empty()) return refuse(blocked);
  // 3. The tail, composed at the output's coordinates.
  const std::string scalar = glsl_scalar(out_layout.type);
  ElementwiseFunction tail;
  if (!split.tail.empty()) {
    const TensorId last_view = builder.tensor_of(graph.node(split.views.back()).outputs[0]);
    KILN_ASSIGN_OR_RETURN(tail, compose_elementwise(builder, graph, split.tail, last_view, "kiln_epilogue_tail", "Ep",
                                                    taken, lowerings));
  }
  // 4. Every store of the anchor's output goes to the group's output.
  const auto view = std::make_shared<const IndexView>(forward);
  for (KernelDesc& kd : kernels) {
    auto y = std::find_if(kd.tensors.begin(), kd.tensors.end(), [&](const KernelTensor& t) { return t.tensor == anchor; });
    if (y == kd.tensors.end()) continue;
    std::string pre;
    if (!kd.store_epilogue.empty()) {
      pre = kd.store_epilogue.code;
      rename_function(pre, "kiln_epilogue", "kiln_epilogue_anchor");
      for (const std::string& text : tail.sections) erase_all(pre, text);
    }
    y->tensor = out;
    y->layout = out_layout;
    y->view = view;
    y->shares_memory = false;
    // Elements land elsewhere than the kernel's coordinates: no input may
    // share the output's memory (an anchor part of map kernels reads its
    // inputs "elementwise" in its own coordinates only).
    for (KernelTensor& t : kd.tensors) t.elementwise = false;
    kd.store_epilogue.tensor = y->name;
    kd.store_epilogue.code = store_view_epilogue(pre, tail.code, anchor_shape.size() ? anchor_shape.size() : 1,
                                                 std::max<size_t>(1, forward.source_shape.size()), scalar);
    for (const std::string& text : tail.sections) {
      erase_all(kd.helpers, text);
      erase_all(kd.body, text);
    }
    kd.tensors.insert(kd.tensors.end(), tail.inputs.begin(), tail.inputs.end());
    kd.name += "+" + ops + tail.suffix;
  }
  for (KernelDesc& kd : kernels) builder.pending_kernels().push_back(std::move(kd));
  return ok_status();
}

std::optional<std::vector<FusionGroup>> store_view_halves(const ir::Graph& graph, const FusionGroup& group) {
  if (group.in_subgraph) return std::nullopt;
  const ViewSplit load = split_view_nodes(graph, group);
  const std::optional<StoreViewSplit> split = split_store_views(graph, load.core);
  if (!split) return std::nullopt;
  // The tail half: the store views, the tail, and (latest first) every
  // load-side view whose output a member of that half reads.
  std::set<ir::NodeId> tail(split->views.begin(), split->views.end());
  tail.insert(split->tail.begin(), split->tail.end());
  for (auto v = load.views.rbegin(); v != load.views.rend(); ++v) {
    const ir::ValueId out = graph.node(*v).outputs[0];
    for (ir::NodeId m : tail)
      if (std::find(graph.node(m).inputs.begin(), graph.node(m).inputs.end(), out) != graph.node(m).inputs.end()) {
        tail.insert(*v);
        break;
      }
  }
  std::vector<FusionGroup> halves{{group.id + ".anchor", {}}, {group.id + ".tail", {}}};
  for (ir::NodeId nid : group.nodes) halves[tail.count(nid) ? 1 : 0].nodes.push_back(nid);
  if (halves[0].nodes.empty() || halves[1].nodes.empty()) return std::nullopt;
  return halves;
}

}  // namespace kiln::planner
