// Fusion groups that start with data-movement nodes (see fusion_views.h).
#include "planner/fusion_views.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <set>

#include "planner/index_view.h"
#include "planner/lower_util.h"

namespace kiln::planner {
namespace {

bool has_subgraph(const ir::Node& node) {
  for (const auto& [key, attr] : node.attrs)
    if (attr.kind == ir::AttrKind::kGraph) return true;
  return false;
}


// The first identifier of `text` that names an accessor of tensor `name`
// that a view does not define (glsl_codegen.h): raw storage (name_data,
// name_index, name_texel, name_tex, name_img), the storage tests
// (name_IS_BUFFER, name_IS_IMAGE) and the stores. Empty when there is none.
// (A list of what a view lacks, not of what it has: a template's own
// identifiers may share the tensor's prefix, as A_LD in gemm_tile.comp.)
std::string storage_access(const std::string& text, const std::string& name) {
  static const std::set<std::string> kMissing = {"data", "index", "texel", "tex", "img", "IS_BUFFER", "IS_IMAGE", "st", "st4"};
  return find_tensor_identifier(text, name, [](const std::string& suffix) { return kMissing.count(suffix) > 0; });
}

// In a map kernel's text, `name_ld(oi)` becomes `name_at(oc0, ...)`: the
// same element when the tensor has the output's shape, without decomposing
// oi again inside the view's X_ld.
void load_by_coords(std::string& text, const std::string& name, size_t rank) {
  const std::string from = name + "_ld(oi)", to = name + "_at(" + coord_list(rank) + ")";
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at)) {
    if (at > 0 && glsl_ident_char(text[at - 1])) {
      at += from.size();
      continue;
    }
    text.replace(at, from.size(), to);
    at += to.size();
  }
}

// Shape and Size are host steps that read their input's dims, which a view
// value keeps (only its data is never made).
bool reads_only_the_shape(const ir::Node& node) {
  return node.domain.empty() && (node.op == "Shape" || node.op == "Size");
}

}  // namespace

ViewSplit split_view_nodes(const ir::Graph& graph, const FusionGroup& group) {
  ViewSplit split;
  split.core.id = group.id;
  split.core.in_subgraph = group.in_subgraph;
  std::set<ir::ValueId> produced, viewed;
  for (ir::NodeId nid : group.nodes)
    for (ir::ValueId v : graph.node(nid).outputs) produced.insert(v);
  for (ir::NodeId nid : group.nodes) {
    const ir::Node& node = graph.node(nid);
    const bool view = is_view_node(graph, node) && !node.inputs.empty() && node.inputs[0] != ir::kNoValue &&
                      (!produced.count(node.inputs[0]) || viewed.count(node.inputs[0]));
    if (view) {
      split.views.push_back(nid);
      for (ir::ValueId v : node.outputs) viewed.insert(v);
    } else {
      split.core.nodes.push_back(nid);
    }
  }
  // A roll that ends the group is its core: the concat kernel reads both
  // Slices through their views.
  if (split.core.nodes.empty() && !split.views.empty() && roll_of(graph, graph.node(split.views.back()))) {
    split.core.nodes.push_back(split.views.back());
    split.views.pop_back();
  }
  return split;
}

std::string fusion_blocker_with_views(const ir::Graph& graph, const PlanBuilder& builder, const FusionGroup& group) {
  if (group.in_subgraph) return fusion_blocker(graph, builder, group);
  const ViewSplit split = split_view_nodes(graph, group);
  if (split.views.empty()) return fusion_blocker(graph, builder, group);
  if (split.core.nodes.empty())
    return "it has only data-movement nodes (an index view needs a node of the group reading through it)";
  const std::set<ir::NodeId> members(group.nodes.begin(), group.nodes.end());
  const std::set<ir::NodeId> view_nodes(split.views.begin(), split.views.end());
  std::set<ir::ValueId> view_values;
  for (ir::NodeId nid : split.views) {
    const ir::Node& node = graph.node(nid);
    if (node.outputs.size() != 1 || node.outputs[0] == ir::kNoValue)
      return node.describe() + " does not have exactly one output";
    if (!builder.value_ranked(node.outputs[0]) || !builder.value_ranked(node.inputs[0]))
      return node.describe() + " has a value of unknown rank";
    view_values.insert(node.outputs[0]);
  }
  // Who reads the view values: the group (a view node only as its input 0,
  // the data it views), or anything else.
  std::map<ir::ValueId, int> inside;
  std::set<ir::ValueId> outside;
  for (size_t i = 0; i < graph.num_nodes(); ++i) {
    const ir::Node& node = graph.node(static_cast<ir::NodeId>(i));
    if (node.erased || reads_only_the_shape(node)) continue;
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const ir::ValueId v = node.inputs[k];
      if (!view_values.count(v)) continue;
      // A roll reads both its Slices as data.
      const bool data = k == 0 || (k == 1 && roll_of(graph, node));
      if (members.count(node.id) && (!view_nodes.count(node.id) || data)) ++inside[v];
      else outside.insert(v);
    }
    for (ir::ValueId v : subgraph_reads(graph, node))
      if (view_values.count(v)) outside.insert(v);
  }
  for (ir::ValueId v : graph.main().outputs)
    if (view_values.count(v)) outside.insert(v);
  for (ir::NodeId nid : split.views) {
    const ir::Node& node = graph.node(nid);
    const ir::ValueId v = node.outputs[0];
    const std::string what = "the output '" + graph.value(v).name + "' of " + node.describe();
    if (outside.count(v)) return what + " is read outside the group (an index view exists only inside the fused kernel)";
    if (!inside.count(v)) return what + " is not read by the group (it is not connected)";
  }
  if (split.core.nodes.size() > 1) return fusion_blocker(graph, builder, split.core);
  const ir::Node& node = graph.node(split.core.nodes[0]);
  if (has_subgraph(node)) return node.describe() + " has a sub-graph";
  if (node.outputs.empty()) return node.describe() + " has no output";
  for (ir::ValueId v : node.outputs)
    if (v != ir::kNoValue && !builder.value_ranked(v)) return node.describe() + " has an output of unknown rank";
  return {};
}

Status lower_fused_with_views(PlanBuilder& builder, const ir::Graph& graph, const FusionGroup& group,
                              const LoweringRegistry& lowerings) {
  const ViewSplit split = split_view_nodes(graph, group);
  if (split.views.empty()) return lower_fused(builder, graph, group, lowerings);
  // 1. Each view value as its chain's source and the composed index view.
  struct Chain {
    ir::ValueId source = ir::kNoValue;
    IndexView view;
  };
  std::map<ir::ValueId, Chain> chains;
  std::string ops;
  const auto chain_of = [&](ir::ValueId v) {
    if (auto it = chains.find(v); it != chains.end()) return it->second;
    Chain c;
    c.source = v;
    c.view = IndexView::identity(builder.value_shape(v));
    return c;
  };
  for (ir::NodeId nid : split.views) {
    const ir::Node& node = graph.node(nid);
    if (const std::optional<Roll> roll = roll_of(graph, node)) {
      // The rotation of the Slices' input: its chain, not theirs.
      if (!chains.count(node.inputs[0]) || !chains.count(node.inputs[1]))
        return unimplemented(node.describe() + " is a roll whose Slices are not views of the group");
      Chain c = chain_of(roll->source);
      if (!same_shape(c.view.shape, builder.value_shape(node.outputs[0])))
        return unimplemented(node.describe() + ": the roll's shape is not its source's");
      c.view.rotate(roll->axis, roll->shift);
      chains[node.outputs[0]] = std::move(c);
      ops += "_roll";
      continue;
    }
    Chain c = chain_of(node.inputs[0]);
    LoweringContext ctx(builder, graph, nid);
    KILN_RETURN_IF_ERROR(append_view_node(c.view, ctx));
    chains[node.outputs[0]] = std::move(c);
    ops += "_" + lower_case(node.op);
  }
  // 2. The tensors the core's lowerings bind for the view values (with the
  // layout the planner gives them, which those lowerings rely on) and the
  // sources the kernels will bind instead.
  std::set<ir::ValueId> core_reads;
  for (ir::NodeId nid : split.core.nodes)
    for (ir::ValueId v : graph.node(nid).inputs) core_reads.insert(v);
  std::map<TensorId, ir::ValueId> view_of_tensor;
  for (const auto& [v, chain] : chains) {
    if (!core_reads.count(v)) continue;
    const TensorId source = builder.tensor_of(chain.source);
    if (builder.tensor(source).host_resident && !builder.tensor(source).constant.defined())
      return unimplemented("the source '" + graph.value(chain.source).name + "' of the index view '" +
                           graph.value(v).name + "' is a host value");
    view_of_tensor[builder.tensor_of(v)] = v;
  }
  // 3. The core, as without the views.
  if (split.core.nodes.size() > 1) {
    KILN_RETURN_IF_ERROR(lower_fused(builder, graph, split.core, lowerings));
  } else {
    KILN_ASSIGN_OR_RETURN(std::vector<KernelDesc> kernels,
                          lower_alone(builder, graph, graph.node(split.core.nodes[0]), lowerings));
    for (KernelDesc& k : kernels) builder.pending_kernels().push_back(std::move(k));
  }
  for (const PlanTensor& t : builder.plan().tensors)
    if (auto it = view_of_tensor.find(t.alias_of); it != view_of_tensor.end())
      return unimplemented("the core aliases the index view '" + graph.value(it->second).name +
                           "' instead of reading it (a view of a view outside the prologue)");
  // 4. Every binding of a view value reads its source through the view.
  for (KernelDesc& k : builder.pending_kernels()) {
    bool viewed = false;
    for (KernelTensor& kt : k.tensors) {
      auto it = view_of_tensor.find(kt.tensor);
      if (it == view_of_tensor.end()) continue;
      const std::string value = "'" + graph.value(it->second).name + "'";
      if (kt.written) return unimplemented("kernel '" + k.name + "' writes the index view " + value);
      const std::string bad = storage_access(k.helpers + "\n" + k.body, kt.name);
      if (!bad.empty())
        return unimplemented("kernel '" + k.name + "' reads " + value + " through '" + bad +
                             "', which an index view does not have (it has _at, _ld, _at4, _load4 and the dims)");
      const Chain& chain = chains.at(it->second);
      IndexView view = chain.view;
      if (kt.view) {
        // The lowering reads the view value through a view of its own
        // (attention's keys with their last two axes swapped back).
        view.append(*kt.view);
      } else if (!same_shape(kt.shape, view.shape)) {
        // Bound with another logical shape (bind_as): one more reshape.
        view.reshape(kt.shape);
      }
      // X_at4 keeps reading along the axis the lowering expected of the
      // view value's own layout: an image's packed axis, a buffer's last.
      view.vec_axis = kt.layout.storage == Storage::kImage ? kt.layout.packed_axis : -1;
      const TensorId source = builder.tensor_of(chain.source);
      const PlanTensor& sp = builder.tensor(source);
      if (is_float(sp.layout.type) != is_float(kt.layout.type))
        return unimplemented("the index view " + value + " and its source differ in element kind");
      if (sp.host_resident) builder.tensor(source).device_needed = true;
      kt.tensor = source;
      kt.layout = sp.layout;
      kt.elementwise = false;  // read at other elements than it writes: never in place
      kt.shares_memory = false;
      kt.view = std::make_shared<const IndexView>(std::move(view));
      viewed = true;
      if (k.family == KernelDesc::Family::kMap) {
        auto w = std::find_if(k.tensors.begin(), k.tensors.end(), [](const KernelTensor& t) { return t.written; });
        if (w != k.tensors.end() && same_shape(w->shape, kt.shape)) load_by_coords(k.body, kt.name, kt.shape.size());
      }
    }
    if (viewed) k.name = "fused" + ops + "_" + (k.name.rfind("fused_", 0) == 0 ? k.name.substr(6) : k.name);
  }
  return ok_status();
}

}  // namespace kiln::planner
