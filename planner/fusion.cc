// Fusion groups into one map kernel (see fusion.h).
#include "planner/fusion.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>

#include "planner/fusion_attention.h"
#include "planner/fusion_conv_sum.h"
#include "planner/fusion_dw_norm.h"
#include "planner/fusion_norm_gemm.h"
#include "planner/fusion_scaled_conv.h"
#include "planner/fusion_squeeze_excite.h"
#include "planner/fusion_dwpw.h"
#include "planner/fusion_row_norm.h"
#include "planner/fusion_store_views.h"
#include "planner/glsl_codegen.h"
#include "planner/lower_util.h"
#include "planner/shader_template.h"

namespace kiln::planner {
namespace {

// The helper sections map kernels use (shaders/elementwise_math.glsl, and
// quantize.glsl's for the quantized elementwise ops, e.g. QLinearAdd), the
// only helpers a composable node may have: a helper two nodes need is
// defined once in the fused kernel. quantize.glsl's in its order (each may
// call those before it).
constexpr const char* kMathSections[] = {
    "elementwise_math.glsl#sigmoid", "elementwise_math.glsl#tanh",     "elementwise_math.glsl#erf",
    "elementwise_math.glsl#softplus", "elementwise_math.glsl#pow",     "elementwise_math.glsl#ipow",
    "elementwise_math.glsl#idiv",     "elementwise_math.glsl#irem",    "elementwise_math.glsl#imod",
    "elementwise_math.glsl#fmod",     "elementwise_math.glsl#fmax",    "elementwise_math.glsl#f2i",
    "quantize.glsl#two_prod",         "quantize.glsl#div_rn",          "quantize.glsl#quantize",
    "quantize.glsl#requantize"};

// Adds the sections `text` (a node kernel's helpers) is made of to `out`,
// each once. False when `text` holds anything else.
bool merge_helpers(std::string text, std::set<std::string>& have, std::string& out) {
  for (const char* name : kMathSections) {
    const std::string section = fill_shader(name);
    const size_t at = text.find(section);
    if (section.empty() || at == std::string::npos) continue;
    text.erase(at, section.size());
    if (have.insert(name).second) out += section;
  }
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c))) return false;
  return true;
}


// Renames the accessors of `body`: an identifier "<name>_..." becomes
// "<renamed>_..." per `names`. Returns false when an identifier starts with
// one of `forbidden` (a tensor the fused kernel does not bind).
bool rename_tensors(std::string& body, const std::map<std::string, std::string>& names,
                    const std::set<std::string>& forbidden) {
  std::string out;
  for (size_t i = 0; i < body.size();) {
    if (!glsl_ident_char(body[i]) || std::isdigit(static_cast<unsigned char>(body[i]))) {
      // A number's letters ("1e+20", "0x7fc00000u") are no identifier.
      size_t j = i + 1;
      if (std::isdigit(static_cast<unsigned char>(body[i])))
        while (j < body.size() && glsl_ident_char(body[j])) ++j;
      out.append(body, i, j - i);
      i = j;
      continue;
    }
    size_t j = i;
    while (j < body.size() && glsl_ident_char(body[j])) ++j;
    const std::string token = body.substr(i, j - i);
    const size_t us = token.find('_');
    const std::string prefix = us == std::string::npos ? std::string() : token.substr(0, us);
    if (!prefix.empty() && forbidden.count(prefix)) return false;
    auto it = prefix.empty() ? names.end() : names.find(prefix);
    out += it == names.end() ? token : it->second + token.substr(us);
    i = j;
  }
  body = std::move(out);
  return true;
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

bool has_subgraph(const ir::Node& node) {
  for (const auto& [key, attr] : node.attrs)
    if (attr.kind == ir::AttrKind::kGraph) return true;
  return false;
}

}  // namespace

std::vector<FusionGroup> collect_fusion_groups(const ir::Graph& graph, const std::vector<ir::NodeId>& order) {
  std::vector<FusionGroup> groups;
  std::map<std::string, size_t> index;
  for (ir::NodeId nid : order) {
    const ir::Node& node = graph.node(nid);
    auto it = node.annotations.find(kFusionGroupKey);
    if (node.erased || it == node.annotations.end()) continue;
    auto [at, added] = index.emplace(it->second, groups.size());
    if (added) groups.push_back(FusionGroup{it->second, {}});
    groups[at->second].nodes.push_back(nid);
  }
  // Groups in sub-graphs are kept only to be reported unfused.
  std::map<std::string, size_t> nested;
  for (size_t i = 0; i < graph.num_nodes(); ++i) {
    const ir::Node& node = graph.node(static_cast<ir::NodeId>(i));
    auto it = node.annotations.find(kFusionGroupKey);
    if (node.erased || node.region == ir::kMainRegion || it == node.annotations.end()) continue;
    auto [at, added] = nested.emplace(it->second, groups.size());
    if (added) groups.push_back(FusionGroup{it->second, {}, true});
    groups[at->second].nodes.push_back(node.id);
  }
  return groups;
}

std::string outside_reader(const ir::Graph& graph, ir::ValueId v, const std::function<bool(const ir::Node&)>& inside) {
  for (size_t i = 0; i < graph.num_nodes(); ++i) {
    const ir::Node& reader = graph.node(static_cast<ir::NodeId>(i));
    if (reader.erased || inside(reader) || (reader.domain.empty() && (reader.op == "Shape" || reader.op == "Size")))
      continue;
    const std::vector<ir::ValueId> nested = subgraph_reads(graph, reader);
    if (std::find(reader.inputs.begin(), reader.inputs.end(), v) != reader.inputs.end() ||
        std::find(nested.begin(), nested.end(), v) != nested.end())
      return " is read outside the group";
  }
  for (ir::ValueId out : graph.main().outputs)
    if (out == v) return " is a graph output";
  return {};
}

namespace {

// The index of the GEMM whose A operand computes the nodes before it (a
// DWPW group's pointwise conv, a scaled conv, a norm-GEMM's MatMul), else 0.
size_t prologue_gemm_index(const ir::Graph& graph, const FusionGroup& group) {
  return dwpw_pointwise_index(graph, group)
      .value_or(scaled_conv_index(graph, group).value_or(norm_gemm_index(graph, group).value_or(0)));
}

}  // namespace

std::string fusion_blocker(const ir::Graph& graph, const PlanBuilder& builder, const FusionGroup& group) {
  if (group.in_subgraph) return "it is in a sub-graph (only the main graph's groups fuse)";
  if (group.nodes.size() < 2) return "it has one node";
  // GEMM (+ tail) -> LayerNormalization (fusion_row_norm.h).
  if (is_row_norm_group(graph, group)) return row_norm_blocker(graph, builder, group);
  // Depthwise conv -> views -> LayerNormalization (fusion_dw_norm.h).
  if (is_dw_norm_group(graph, group)) return dw_norm_blocker(graph, builder, group);
  // GlobalAveragePool -> 1x1 Conv -> tail -> 1x1 Conv -> tail (fusion_squeeze_excite.h).
  if (is_squeeze_excite_group(graph, group)) return squeeze_excite_blocker(graph, builder, group);
  // Anchor -> Reshape/Transpose chain -> tail (fusion_store_views.h).
  if (auto split = split_store_views(graph, group)) return store_view_blocker(graph, builder, group, *split);
  const std::set<ir::NodeId> members(group.nodes.begin(), group.nodes.end());
  std::set<ir::ValueId> produced;
  std::set<ir::ValueId> unused;  // the head's optional outputs, which nothing may read
  for (ir::NodeId nid : group.nodes) {
    const ir::Node& node = graph.node(nid);
    if (has_subgraph(node)) return node.describe() + " has a sub-graph";
    const bool head = nid == group.nodes.front();
    if (node.outputs.empty() || node.outputs[0] == ir::kNoValue || (node.outputs.size() > 1 && !head))
      return node.describe() + " does not have exactly one output";
    if (!builder.value_ranked(node.outputs[0])) return node.describe() + " has an output of unknown rank";
    produced.insert(node.outputs[0]);
    for (size_t j = 1; j < node.outputs.size(); ++j)
      if (node.outputs[j] != ir::kNoValue) unused.insert(node.outputs[j]);
  }
  for (ir::ValueId v : graph.main().outputs)
    if (unused.count(v)) return "the output '" + graph.value(v).name + "' of the head is used (it has several)";
  // Who reads the group's values: its own nodes, or anything else (nodes of
  // any region, sub-graphs capturing them, the graph's outputs).
  std::map<ir::ValueId, int> inside;
  std::set<ir::ValueId> outside;
  for (size_t i = 0; i < graph.num_nodes(); ++i) {
    const ir::Node& node = graph.node(static_cast<ir::NodeId>(i));
    if (node.erased) continue;
    for (ir::ValueId v : node.inputs) {
      if (unused.count(v)) return "the output '" + graph.value(v).name + "' of the head is used (it has several)";
      if (!produced.count(v)) continue;
      if (members.count(node.id)) ++inside[v];
      else outside.insert(v);
    }
    for (ir::ValueId v : subgraph_reads(graph, node)) {
      if (unused.count(v)) return "the output '" + graph.value(v).name + "' of the head is used (it has several)";
      if (produced.count(v)) outside.insert(v);
    }
  }
  for (ir::ValueId v : graph.main().outputs)
    if (produced.count(v)) outside.insert(v);
  const ir::ValueId out = graph.node(group.nodes.back()).outputs[0];
  // A DWPW group (fusion_dwpw.h): the nodes before the pointwise conv have
  // the depthwise conv's output shape and are read only up to that conv.
  // A scaled-conv group (fusion_scaled_conv.h) likewise: the Mul before
  // the conv has the feature map's shape; and a norm-GEMM group
  // (fusion_norm_gemm.h): the LayerNormalization before the MatMul.
  const size_t pw = prologue_gemm_index(graph, group);
  // An attention group's intermediates (scores, probabilities, scaled
  // operands) have their own shapes (fusion_attention.h).
  const bool attention = match_attention(graph, group).has_value();
  std::set<ir::NodeId> after_pw(group.nodes.begin() + static_cast<std::ptrdiff_t>(pw) + 1, group.nodes.end());
  for (size_t k = 0; k + 1 < group.nodes.size(); ++k) {
    const ir::Node& node = graph.node(group.nodes[k]);
    const ir::ValueId v = node.outputs[0];
    const std::string what = "the output '" + graph.value(v).name + "' of " + node.describe();
    if (outside.count(v)) return what + " is read outside the group (a fused group has one output)";
    if (!inside.count(v)) return what + " is not read by the group (it is not connected)";
    if (k < pw) {
      for (ir::NodeId reader : after_pw)
        for (ir::ValueId in : graph.node(reader).inputs)
          if (in == v) return what + " is read after the pointwise conv of a depthwise-pointwise group";
      if (!same_shape(builder.value_shape(v), builder.value_shape(graph.node(group.nodes[0]).outputs[0])))
        return what + " does not have the shape of the depthwise conv's output";
    } else if (!attention && !same_shape(builder.value_shape(v), builder.value_shape(out))) {
      return what + " does not have the shape of the group's output";
    }
    if (builder.value_elem_type(v) != builder.value_elem_type(out))
      return what + " does not have the element type of the group's output";
  }
  return {};
}

namespace {


// The one map kernel a composable node lowers to (no parameters, no
// extensions, helpers only of elementwise_math.glsl, writing its output
// without a view); null otherwise.
const KernelDesc* composable_map(PlanBuilder& builder, const ir::Node& node, const std::vector<KernelDesc>& kernels) {
  if (kernels.size() != 1 || kernels[0].family != KernelDesc::Family::kMap || !kernels[0].params.empty() ||
      !kernels[0].extensions.empty() || !kernels[0].store_epilogue.empty())
    return nullptr;
  std::set<std::string> have;
  std::string merged;
  if (!merge_helpers(kernels[0].helpers, have, merged)) return nullptr;
  const KernelTensor* written = nullptr;
  size_t writes = 0;
  for (const KernelTensor& t : kernels[0].tensors)
    if (t.written) written = &t, ++writes;
  const auto out = builder.plan().value_tensor.find(node.outputs[0]);
  if (writes != 1 || out == builder.plan().value_tensor.end() || written->tensor != out->second ||
      !same_shape(written->shape, builder.value_shape(node.outputs[0])))
    return nullptr;
  return &kernels[0];
}

// Composes the map kernels of a group's nodes, one node at a time, into one
// body computing the last node's value `v` at the element oc0.., oi: an
// intermediate lives in a local variable, each external input is bound
// once. Tensors in `locals` at the start (the anchor's output of an
// epilogue) are read through the expression given.
struct Composer {
  std::map<TensorId, std::string> locals;
  std::vector<KernelTensor> bound;  // the external inputs, renamed
  std::string input_prefix = "in";  // they are named <prefix>0, <prefix>1, ...
  std::set<std::string> taken;      // names they must not take
  bool brace_last = false;          // the last body in braces (for a function)
  std::set<std::string> sections;
  std::string helpers, body;
  std::vector<std::string> names;   // the nodes' kernel names
  KernelTensor y;                   // the last node's written tensor

  Status add(PlanBuilder& builder, const ir::Node& node, const std::vector<KernelDesc>& kernels, size_t k,
             bool last) {
    const auto refuse = [&](const std::string& why) { return unimplemented(node.describe() + " " + why); };
    const KernelDesc* map = composable_map(builder, node, kernels);
    if (!map) return refuse("does not lower to one map kernel");
    const KernelDesc& kd = *map;
    merge_helpers(kd.helpers, sections, helpers);
    names.push_back(kd.name);
    const KernelTensor* written = nullptr;
    for (const KernelTensor& t : kd.tensors)
      if (t.written) written = &t;
    std::string kbody = kd.body;
    std::map<std::string, std::string> rename;
    std::set<std::string> forbidden;
    for (const KernelTensor& t : kd.tensors) {
      if (t.written) continue;
      if (auto it = locals.find(t.tensor); it != locals.end()) {
        // An intermediate, read at the element this node computes: its local.
        replace_all(kbody, broadcast_load(t, written->shape), it->second);
        forbidden.insert(t.name);
        continue;
      }
      auto same = std::find_if(bound.begin(), bound.end(), [&](const KernelTensor& b) {
        return b.tensor == t.tensor && b.layout == t.layout && same_shape(b.shape, t.shape);
      });
      if (same != bound.end()) {
        same->elementwise = same->elementwise && t.elementwise;
        rename[t.name] = same->name;
      } else {
        const auto used = [&](const std::string& n) {
          return taken.count(n) ||
                 std::any_of(bound.begin(), bound.end(), [&](const KernelTensor& b) { return b.name == n; });
        };
        std::string name;
        for (size_t n = bound.size(); name.empty() || used(name); ++n) name = input_prefix + std::to_string(n);
        rename[t.name] = name;
        bound.push_back(t);
        bound.back().name = name;
      }
    }
    if (last) {
      rename[written->name] = "y";
      y = *written;
      y.name = "y";
    } else {
      forbidden.insert(written->name);
    }
    if (!rename_tensors(kbody, rename, forbidden))
      return refuse("reads a tensor of the group other than at the element it computes");
    if (last) {
      body += brace_last ? "{\n" + kbody + "\n}\n" : kbody;
    } else {
      const std::string local = "kiln_fused" + std::to_string(k);
      const std::string s = glsl_scalar(written->layout.type);
      body += s + " " + local + ";\n{\n" + s + " v;\n" + kbody + "\n" + local + " = v;\n}\n";
      locals[written->tensor] = local;
    }
    return ok_status();
  }
};

}  // namespace

namespace {

// The first identifier of `text` naming an accessor of tensor `name` other
// than those a redirected store keeps meaning (stores, dims, index math,
// storage tests; a store view has no texel math), "" when none.
std::string foreign_store_access(const std::string& text, const std::string& name, bool store_view) {
  static const std::set<std::string> kAllowed = {"st", "st4", "store4", "VEC", "NUMEL", "IS_BUFFER", "IS_IMAGE", "index"};
  return find_tensor_identifier(text, name, [store_view](const std::string& rest) {
    const bool dim = rest.size() > 1 && rest[0] == 'D' &&
                     std::all_of(rest.begin() + 1, rest.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    return !dim && !kAllowed.count(rest) && (store_view || rest != "texel");
  });
}

}  // namespace

StatusOr<std::vector<KernelDesc>> lower_alone(PlanBuilder& builder, const ir::Graph& graph, const ir::Node& node,
                                              const LoweringRegistry& lowerings) {
  const LowerFn fn = lowerings.find(node.domain, node.op);
  if (!fn) return unimplemented(node.describe() + " has no device lowering");
  for (ir::ValueId v : node.inputs)
    if (v != ir::kNoValue && !builder.value_ranked(v)) return unimplemented(node.describe() + " has an input of unknown rank");
  LoweringContext ctx(builder, graph, node.id);
  KILN_RETURN_IF_ERROR(fn(ctx));
  std::vector<KernelDesc> kernels = builder.take_pending_kernels();
  return kernels;
}

StatusOr<std::vector<KernelDesc>> lower_fused_kernels(PlanBuilder& builder, const ir::Graph& graph,
                                                      const FusionGroup& group, const LoweringRegistry& lowerings) {
  KILN_RETURN_IF_ERROR(lower_fused(builder, graph, group, lowerings));
  std::vector<KernelDesc> kernels = builder.take_pending_kernels();
  return kernels;
}

std::string anchor_store_blocker(const PlanBuilder& builder, const std::vector<KernelDesc>& kernels, TensorId anchor,
                                 const std::vector<ir::Dim>& shape, const DeviceLayout& layout, bool store_view,
                                 std::set<std::string>& taken) {
  const PlanTensor& at = builder.tensor(anchor);
  if (at.alias_of != kNoTensor) return "makes its output an alias of another tensor";
  if (at.host_resident) return "computes its output on the host";
  size_t writers = 0;
  for (const KernelDesc& kd : kernels) {
    size_t bindings = 0;
    for (const KernelTensor& t : kd.tensors) {
      taken.insert(t.name);
      if (t.tensor != anchor) continue;
      const std::string where = " in kernel '" + kd.name + "'";
      if (!t.written) return "reads its output" + where;
      if (store_view && t.view) return "writes its output through a view already" + where;
      if (!same_shape(t.shape, shape)) return "writes its output through a view of another shape" + where;
      if (!(t.layout == layout)) return "writes its output in another layout" + where;
      if (++bindings > 1) return "binds its output twice" + where;
      const std::string bad = foreign_store_access(kd.helpers + "\n" + kd.body, t.name, store_view);
      if (!bad.empty()) return "uses '" + bad + "'" + where + (store_view ? ", which a store view does not have" : "");
      if (store_view && !kd.store_epilogue.empty() && kd.store_epilogue.tensor != t.name)
        return "has a store epilogue on another tensor" + where;
    }
    if (bindings) ++writers;
  }
  if (!writers) return "has no kernel writing its output";
  return {};
}

StatusOr<ElementwiseFunction> compose_elementwise(PlanBuilder& builder, const ir::Graph& graph,
                                                  const std::vector<ir::NodeId>& nodes, TensorId anchor,
                                                  const std::string& name, const std::string& input_prefix,
                                                  const std::set<std::string>& taken,
                                                  const LoweringRegistry& lowerings) {
  Composer c;
  c.input_prefix = input_prefix;
  c.taken = taken;
  c.brace_last = true;
  c.locals[anchor] = "kiln_anchor";
  for (size_t k = 0; k < nodes.size(); ++k) {
    const ir::Node& node = graph.node(nodes[k]);
    KILN_ASSIGN_OR_RETURN(std::vector<KernelDesc> kernels, lower_alone(builder, graph, node, lowerings));
    KILN_RETURN_IF_ERROR(c.add(builder, node, kernels, k, k + 1 == nodes.size()));
  }
  const PlanTensor& at = builder.tensor(anchor);
  const std::string s = glsl_scalar(at.layout.type);
  std::string params;
  for (size_t k = 0; k < std::max<size_t>(1, at.shape.size()); ++k) params += "int oc" + std::to_string(k) + ", ";
  ElementwiseFunction f;
  f.code = c.helpers + s + " " + name + "(" + params + "int oi, " + s + " kiln_anchor) {\n  " + s + " v = " + s +
           "(0);\n" + c.body + "  return v;\n}\n";
  for (const std::string& section : c.sections) f.sections.push_back(fill_shader(section));
  for (KernelTensor& t : c.bound) {
    t.elementwise = false;  // read at other elements than those written, in general
    f.inputs.push_back(std::move(t));
  }
  for (const std::string& n : c.names) f.suffix += "+" + n;
  return f;
}

namespace {

// Epilogue fusion (fusion.h, shape 2): the anchor's kernels (group.nodes[
// anchor_index] lowered, its output laid out as the group's output) store
// the group's output through the composed tail (the nodes after it).
Status lower_epilogue(PlanBuilder& builder, const ir::Graph& graph, const FusionGroup& group, size_t anchor_index,
                      std::vector<KernelDesc> kernels, const LoweringRegistry& lowerings) {
  const ir::Node& head = graph.node(group.nodes[anchor_index]);
  const auto refuse = [&](const std::string& why) {
    return unimplemented(head.describe() + " " + why + " (an anchor's output must be written only through its stores)");
  };
  const TensorId anchor = builder.tensor_of(head.outputs[0]);
  const TensorId out = builder.tensor_of(graph.node(group.nodes.back()).outputs[0]);
  const std::vector<ir::NodeId> tail(group.nodes.begin() + static_cast<std::ptrdiff_t>(anchor_index) + 1,
                                     group.nodes.end());
  if (tail.empty()) {
    for (KernelDesc& kd : kernels) builder.pending_kernels().push_back(std::move(kd));
    return ok_status();
  }
  std::set<std::string> taken;
  const std::string blocked = anchor_store_blocker(builder, kernels, anchor, builder.value_shape(head.outputs[0]),
                                                   builder.tensor(out).layout, false, taken);
  if (!blocked.empty()) return refuse(blocked);

  KILN_ASSIGN_OR_RETURN(const ElementwiseFunction f,
                        compose_elementwise(builder, graph, tail, anchor, "kiln_epilogue", "Ep", taken, lowerings));
  for (KernelDesc& kd : kernels) {
    auto y = std::find_if(kd.tensors.begin(), kd.tensors.end(), [&](const KernelTensor& t) { return t.tensor == anchor; });
    if (y == kd.tensors.end()) continue;
    y->tensor = out;
    kd.store_epilogue.tensor = y->name;
    // A math helper both define is defined once, before the epilogue.
    for (const std::string& text : f.sections) {
      erase_all(kd.helpers, text);
      erase_all(kd.body, text);
    }
    kd.store_epilogue.code = f.code;
    kd.tensors.insert(kd.tensors.end(), f.inputs.begin(), f.inputs.end());
    kd.name += f.suffix;
  }
  for (KernelDesc& kd : kernels) builder.pending_kernels().push_back(std::move(kd));
  return ok_status();
}

// `conv_sum`: the group is a sum of 1x1 convs (its anchor the Add), else a
// DWPW group when anchor_index > 0.
Status lower_fused_impl(PlanBuilder& builder, const ir::Graph& graph, const FusionGroup& group, size_t anchor_index,
                        bool conv_sum, const LoweringRegistry& lowerings) {
  if (anchor_index > 0) {
    // Two 1x1 convs and their sum, or a depthwise conv, its chain and a
    // pointwise conv, as one GEMM; then the tail.
    std::vector<KernelDesc> kernels;
    if (conv_sum) {
      KILN_ASSIGN_OR_RETURN(kernels, lower_conv_sum(builder, graph, group));
    } else if (scaled_conv_index(graph, group)) {
      KILN_ASSIGN_OR_RETURN(kernels, lower_scaled_conv(builder, graph, group));
    } else if (norm_gemm_index(graph, group)) {
      KILN_ASSIGN_OR_RETURN(kernels, lower_norm_gemm(builder, graph, group));
    } else {
      KILN_ASSIGN_OR_RETURN(kernels, lower_dwpw(builder, graph, group, anchor_index, lowerings));
    }
    return lower_epilogue(builder, graph, group, anchor_index, std::move(kernels), lowerings);
  }
  const ir::Node& head = graph.node(group.nodes.front());
  KILN_ASSIGN_OR_RETURN(std::vector<KernelDesc> first, lower_alone(builder, graph, head, lowerings));
  if (!composable_map(builder, head, first)) return lower_epilogue(builder, graph, group, 0, std::move(first), lowerings);
  // Every node a map kernel: one map kernel.
  Composer c;
  for (size_t k = 0; k < group.nodes.size(); ++k) {
    const ir::Node& node = graph.node(group.nodes[k]);
    std::vector<KernelDesc> kernels;
    if (k == 0) {
      kernels = std::move(first);
    } else {
      KILN_ASSIGN_OR_RETURN(kernels, lower_alone(builder, graph, node, lowerings));
    }
    KILN_RETURN_IF_ERROR(c.add(builder, node, kernels, k, k + 1 == group.nodes.size()));
  }
  std::string name = "fused";
  for (const std::string& n : c.names) name += "_" + n;
  c.bound.push_back(std::move(c.y));
  builder.pending_kernels().push_back(map_kernel(name, std::move(c.bound), c.body, c.helpers));
  return ok_status();
}

}  // namespace

Status lower_fused(PlanBuilder& builder, const ir::Graph& graph, const FusionGroup& group,
                   const LoweringRegistry& lowerings) {
  if (auto attention = match_attention(graph, group)) return lower_attention(builder, graph, group, *attention);
  if (is_row_norm_group(graph, group)) return lower_row_norm(builder, graph, group, lowerings);
  if (is_dw_norm_group(graph, group)) return lower_dw_norm(builder, graph, group, lowerings);
  if (is_squeeze_excite_group(graph, group)) return lower_squeeze_excite(builder, graph, group, lowerings);
  if (auto split = split_store_views(graph, group))
    return lower_fused_store_views(builder, graph, group, *split, lowerings);
  // The anchor's output (the head's, or a DWPW group's pointwise conv's)
  // never reaches memory: while the group is lowered it is laid out as the
  // group's output, so that the anchor's kernels store the group's output as
  // they would have stored the anchor's (image or buffer, packed axis).
  // Afterwards no kernel binds it; its own layout comes back (also for a
  // group that does not fuse, whose nodes are lowered again).
  const std::optional<size_t> sum_index = conv_sum_add_index(graph, group);
  const size_t anchor_index = sum_index.value_or(prologue_gemm_index(graph, group));
  const TensorId anchor = builder.tensor_of(graph.node(group.nodes[anchor_index]).outputs[0]);
  const TensorId out = builder.tensor_of(graph.node(group.nodes.back()).outputs[0]);
  const DeviceLayout saved = builder.tensor(anchor).layout;
  builder.tensor(anchor).layout = builder.tensor(out).layout;
  Status st = lower_fused_impl(builder, graph, group, anchor_index, sum_index.has_value(), lowerings);
  builder.tensor(anchor).layout = saved;
  return st;
}

}  // namespace kiln::planner
