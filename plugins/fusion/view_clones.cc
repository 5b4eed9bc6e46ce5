// Index views shared by several fusion groups (see view_clones.h).
#include "plugins/fusion/view_clones.h"

#include <map>
#include <set>
#include <utility>

namespace kiln_fusion {

using kiln::plugin::GraphView;
using kiln::plugin::Rewriter;

bool can_clone(const GraphView& g, kiln_node_id_t n) {
  auto names = g.attr_names(n);
  if (!names) return false;
  for (const std::string& key : *names) {
    const kiln_attr_kind_t kind = g.attr_kind(n, key.c_str());
    if (kind != KILN_ATTR_INT && kind != KILN_ATTR_FLOAT && kind != KILN_ATTR_STRING && kind != KILN_ATTR_INTS &&
        kind != KILN_ATTR_FLOATS)
      return false;
  }
  return true;
}

int64_t clone_shared_views(const GraphView& g, Rewriter& rw, const std::vector<kiln_node_id_t>& nodes,
                           const std::vector<std::vector<int>>& groups, const std::vector<std::string>& group_names) {
  std::map<int, std::vector<int>> groups_of;  // member -> its groups, ascending
  for (size_t k = 0; k < groups.size(); ++k)
    for (int m : groups[k]) groups_of[m].push_back(static_cast<int>(k));
  std::map<kiln_node_id_t, int> index;
  for (size_t i = 0; i < nodes.size(); ++i) index[nodes[i]] = static_cast<int>(i);
  // The value a shared node's copy in group k produces.
  std::map<std::pair<int, int>, kiln_value_id_t> copy;
  const auto shared_producer = [&](kiln_value_id_t v) -> int {
    auto info = g.value(v);
    if (!info || info->producer == KILN_NO_ID || !index.count(info->producer)) return -1;
    const int p = index.at(info->producer);
    auto it = groups_of.find(p);
    return it != groups_of.end() && it->second.size() > 1 ? p : -1;
  };
  int64_t clones = 0;
  // Ascending node order is topological: a shared producer's copies exist
  // before its shared consumer is cloned.
  for (const auto& [m, member_of] : groups_of) {
    if (member_of.size() < 2) continue;
    const kiln_node_id_t n = nodes[static_cast<size_t>(m)];
    const auto info = g.node(n);
    const kiln_value_id_t out = g.outputs(n)[0];
    const auto out_info = g.value(out);
    rw.annotate_node(n, KILN_ANNOTATION_FUSION_GROUP, group_names[static_cast<size_t>(member_of[0])]);
    copy[{m, member_of[0]}] = out;
    for (size_t j = 1; j < member_of.size(); ++j) {
      const int k = member_of[j];
      // Every input a shared view makes (a roll reads two) from its copy in group k.
      std::vector<kiln_value_id_t> inputs = g.inputs(n);
      for (kiln_value_id_t& in : inputs)
        if (const int p = in == KILN_NO_ID ? -1 : shared_producer(in); p >= 0) in = copy.at({p, k});
      const std::string suffix = "_" + group_names[static_cast<size_t>(k)];
      const kiln_value_id_t v = rw.add_value(out_info->name + suffix, out_info->dtype);
      // Before the original, hence after its input's copy and before every reader.
      const kiln_node_id_t c = rw.add_node(info->op, inputs, {v}, info->name + suffix, info->region, n, info->domain);
      if (!kiln::plugin::copy_node_attrs(g, rw, n, c))
        throw kiln::plugin::Error("cannot copy the attributes of shared view node '" + info->name + "'");
      rw.annotate_node(c, KILN_ANNOTATION_FUSION_GROUP, group_names[static_cast<size_t>(k)]);
      copy[{m, k}] = v;
      ++clones;
    }
  }
  // Every reader in group k reads group k's copy (the clones already do).
  for (const auto& [m, member_of] : groups_of) {
    const kiln_node_id_t n = nodes[static_cast<size_t>(m)];
    const std::vector<kiln_value_id_t> inputs = g.inputs(n);
    for (size_t i = 0; i < inputs.size(); ++i) {
      const int p = inputs[i] == KILN_NO_ID ? -1 : shared_producer(inputs[i]);
      if (p < 0) continue;
      auto it = copy.find({p, member_of[0]});
      if (it == copy.end()) throw kiln::plugin::Error("a reader of a shared view is in none of its groups");
      if (it->second != inputs[i]) rw.set_input(n, i, it->second);
    }
  }
  return clones;
}

}  // namespace kiln_fusion
