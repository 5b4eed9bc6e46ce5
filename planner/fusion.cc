// Fusion groups into one map kernel (see fusion.h).
#include "planner/fusion.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "planner/glsl_codegen.h"
#include "planner/lower_util.h"
#include "planner/shader_template.h"

namespace kiln::planner {
namespace {

// The sections of shaders/elementwise_math.glsl, the only helpers map
// kernels of the elementwise family use: a helper two nodes need is defined
// once in the fused kernel.
constexpr const char* kMathSections[] = {"sigmoid", "tanh", "erf",  "softplus", "pow",  "ipow",
                                         "idiv",    "irem", "imod", "fmod",     "fmax", "f2i"};

// Adds the sections `text` (a node kernel's helpers) is made of to `out`,
// each once. False when `text` holds anything else.
bool merge_helpers(std::string text, std::set<std::string>& have, std::string& out) {
  for (const char* name : kMathSections) {
    const std::string section = fill_shader(std::string("elementwise_math.glsl#") + name);
    const size_t at = text.find(section);
    if (section.empty() || at == std::string::npos) continue;
    text.erase(at, section.size());
    if (have.insert(name).second) out += section;
  }
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c))) return false;
  return true;
}

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Renames the accessors of `body`: an identifier "<name>_..." becomes
// "<renamed>_..." per `names`. Returns false when an identifier starts with
// one of `forbidden` (a tensor the fused kernel does not bind).
bool rename_tensors(std::string& body, const std::map<std::string, std::string>& names,
                    const std::set<std::string>& forbidden) {
  std::string out;
  for (size_t i = 0; i < body.size();) {
    if (!ident_char(body[i]) || std::isdigit(static_cast<unsigned char>(body[i]))) {
      // A number's letters ("1e+20", "0x7fc00000u") are no identifier.
      size_t j = i + 1;
      if (std::isdigit(static_cast<unsigned char>(body[i])))
        while (j < body.size() && ident_char(body[j])) ++j;
      out.append(body, i, j - i);
      i = j;
      continue;
    }
    size_t j = i;
    while (j < body.size() && ident_char(body[j])) ++j;
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

std::string fusion_blocker(const ir::Graph& graph, const PlanBuilder& builder, const FusionGroup& group) {
  if (group.in_subgraph) return "it is in a sub-graph (only the main graph's groups fuse)";
  if (group.nodes.size() < 2) return "it has one node";
  const std::set<ir::NodeId> members(group.nodes.begin(), group.nodes.end());
  std::set<ir::ValueId> produced;
  for (ir::NodeId nid : group.nodes) {
    const ir::Node& node = graph.node(nid);
    if (has_subgraph(node)) return node.describe() + " has a sub-graph";
    if (node.outputs.size() != 1 || node.outputs[0] == ir::kNoValue)
      return node.describe() + " does not have exactly one output";
    if (!builder.value_ranked(node.outputs[0])) return node.describe() + " has an output of unknown rank";
    produced.insert(node.outputs[0]);
  }
  // Who reads the group's values: its own nodes, or anything else (nodes of
  // any region, sub-graphs capturing them, the graph's outputs).
  std::map<ir::ValueId, int> inside;
  std::set<ir::ValueId> outside;
  for (size_t i = 0; i < graph.num_nodes(); ++i) {
    const ir::Node& node = graph.node(static_cast<ir::NodeId>(i));
    if (node.erased) continue;
    for (ir::ValueId v : node.inputs) {
      if (!produced.count(v)) continue;
      if (members.count(node.id)) ++inside[v];
      else outside.insert(v);
    }
    for (ir::ValueId v : subgraph_reads(graph, node))
      if (produced.count(v)) outside.insert(v);
  }
  for (ir::ValueId v : graph.main().outputs)
    if (produced.count(v)) outside.insert(v);
  const ir::ValueId out = graph.node(group.nodes.back()).outputs[0];
  for (ir::NodeId nid : group.nodes) {
    if (nid == group.nodes.back()) break;
    const ir::Node& node = graph.node(nid);
    const ir::ValueId v = node.outputs[0];
    const std::string what = "the output '" + graph.value(v).name + "' of " + node.describe();
    if (outside.count(v)) return what + " is read outside the group (a fused group has one output)";
    if (!inside.count(v)) return what + " is not read by the group (it is not connected)";
    if (!same_shape(builder.value_shape(v), builder.value_shape(out)))
      return what + " does not have the shape of the group's output";
    if (builder.value_elem_type(v) != builder.value_elem_type(out))
      return what + " does not have the element type of the group's output";
  }
  return {};
}

Status lower_fused(PlanBuilder& builder, const ir::Graph& graph, const FusionGroup& group,
                   const LoweringRegistry& lowerings) {
  std::map<TensorId, std::string> locals;  // an intermediate's tensor -> its local variable
  std::vector<KernelTensor> bound;         // the fused kernel's inputs
  std::set<std::string> sections;
  std::string helpers, body, name = "fused";
  KernelTensor y;
  for (size_t k = 0; k < group.nodes.size(); ++k) {
    const ir::Node& node = graph.node(group.nodes[k]);
    const auto refuse = [&](const std::string& why) { return unimplemented(node.describe() + " " + why); };
    const LowerFn fn = lowerings.find(node.domain, node.op);
    if (!fn) return refuse("has no device lowering");
    for (ir::ValueId v : node.inputs)
      if (v != ir::kNoValue && !builder.value_ranked(v)) return refuse("has an input of unknown rank");
    LoweringContext ctx(builder, graph, node.id);
    KILN_RETURN_IF_ERROR(fn(ctx));
    std::vector<KernelDesc> kernels = std::move(builder.pending_kernels());
    builder.pending_kernels().clear();
    if (kernels.size() != 1 || kernels[0].family != KernelDesc::Family::kMap || !kernels[0].params.empty() ||
        !kernels[0].extensions.empty())
      return refuse("does not lower to one map kernel");
    KernelDesc& kd = kernels[0];
    if (!merge_helpers(kd.helpers, sections, helpers)) return refuse("has helpers a fused kernel cannot merge");
    name += "_" + kd.name;

    const KernelTensor* written = nullptr;
    size_t writes = 0;
    for (const KernelTensor& t : kd.tensors)
      if (t.written) written = &t, ++writes;
    // Every body must compute the element at the harness's coordinates of
    // one shape: the output's, written without a view.
    const auto out = builder.plan().value_tensor.find(node.outputs[0]);
    if (writes != 1 || out == builder.plan().value_tensor.end() || written->tensor != out->second ||
        !same_shape(written->shape, builder.value_shape(node.outputs[0])))
      return refuse("does not write its output as one map kernel of its shape");
    std::string kbody = kd.body;
    std::map<std::string, std::string> names;
    std::set<std::string> forbidden;
    for (KernelTensor& t : kd.tensors) {
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
        names[t.name] = same->name;
      } else {
        names[t.name] = "in" + std::to_string(bound.size());
        bound.push_back(t);
        bound.back().name = names[t.name];
      }
    }
    const bool last = k + 1 == group.nodes.size();
    if (last) {
      names[written->name] = "y";
      y = *written;
      y.name = "y";
    } else {
      forbidden.insert(written->name);
    }
    if (!rename_tensors(kbody, names, forbidden))
      return refuse("reads a tensor of the group other than at the element it computes");
    if (last) {
      body += kbody;
    } else {
      const std::string local = "kiln_fused" + std::to_string(k);
      const std::string s = glsl_scalar(written->layout.type);
      body += s + " " + local + ";\n{\n" + s + " v;\n" + kbody + "\n" + local + " = v;\n}\n";
      locals[written->tensor] = local;
    }
  }
  bound.push_back(std::move(y));
  builder.pending_kernels().push_back(map_kernel(name, std::move(bound), body, helpers));
  return ok_status();
}

}  // namespace kiln::planner
