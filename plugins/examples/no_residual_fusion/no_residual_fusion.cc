// example.no-residual-fusion: a third-party pass that changes how Kiln's
// fusion pass grouped the graph. It runs after `fusion` (a third party's
// passes follow the in-tree ones in the default pipeline) and takes every
// residual Add — an Add whose two inputs are both activations, not
// constants — out of its fusion group, together with everything after it in
// the group, so the residual add runs as a dispatch of its own. What is left
// of a group is shrunk until it is still a valid group (every member but
// the last read only inside it) or dissolved when fewer than two remain.
//
// Built against an installed Kiln (see CMakeLists.txt); it uses only the
// plugin ABI through kiln_plugin.hpp: the annotations it reads and the one it
// removes (rw_remove_node_annotation, ABI 1.3).
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <kiln/kiln_plugin.hpp>

namespace {

using kiln::plugin::GraphView;
using kiln::plugin::Rewriter;

class NoResidualFusion : public kiln::plugin::Pass {
 public:
  void run(GraphView& g, Rewriter& rw) override {
    if (!rw.can_remove_annotations())
      throw kiln::plugin::Error("example.no-residual-fusion needs plugin ABI 1.3", KILN_PLUGIN_UNIMPLEMENTED);
    // Groups in main-graph order (the order the fusion pass lists them in).
    std::map<std::string, std::vector<kiln_node_id_t>> groups;
    for (kiln_node_id_t n : g.nodes(0))
      if (auto id = g.node_annotation(n, KILN_ANNOTATION_FUSION_GROUP)) groups[*id].push_back(n);
    int64_t split = 0, ungrouped = 0;
    for (auto& [id, members] : groups) {
      auto first = std::find_if(members.begin(), members.end(), [&](kiln_node_id_t n) { return residual_add(g, n); });
      if (first == members.end()) continue;
      ++split;
      std::vector<kiln_node_id_t> keep(members.begin(), first);
      while (!keep.empty() && !valid(g, keep)) keep.pop_back();
      if (keep.size() < 2) keep.clear();
      for (kiln_node_id_t n : members)
        if (std::find(keep.begin(), keep.end(), n) == keep.end()) {
          rw.remove_node_annotation(n, KILN_ANNOTATION_FUSION_GROUP);
          ++ungrouped;
        }
    }
    rw.add_statistic("residual-adds-split", split);
    rw.add_statistic("nodes-ungrouped", ungrouped);
  }

 private:
  static bool residual_add(const GraphView& g, kiln_node_id_t n) {
    auto info = g.node(n);
    if (!info || info->op != "Add" || !info->domain.empty()) return false;
    const std::vector<kiln_value_id_t> in = g.inputs(n);
    return in.size() == 2 && !g.is_constant(in[0]) && !g.is_constant(in[1]);
  }

  // One value leaves the group: every member but the last is read only by
  // members (a graph output is a read from outside).
  static bool valid(const GraphView& g, const std::vector<kiln_node_id_t>& members) {
    const std::set<kiln_node_id_t> inside(members.begin(), members.end());
    for (size_t k = 0; k + 1 < members.size(); ++k)
      for (kiln_value_id_t v : g.outputs(members[k]))
        for (const kiln::plugin::Use& use : g.uses(v))
          if (use.node == KILN_NO_ID || !inside.count(use.node)) return false;
    return true;
  }
};

NoResidualFusion pass;
const kiln_pass_t kPass = kiln::plugin::make_pass(
    pass, "example.no-residual-fusion",
    "takes residual Adds (two activation inputs) and what follows them out of their fusion groups",
    KILN_FACT_SHAPES, KILN_FACT_FUSION_GROUPS, false, KILN_FACT_FUSION_GROUPS);
const kiln_pass_t* const kPasses[] = {&kPass};
const kiln_plugin_t kPlugin = kiln::plugin::make_plugin("example.no-residual", "1.0.0", kPasses, 1);

}  // namespace

KILN_PLUGIN_DEFINE_QUERY(kiln_plugin_query, kPlugin)
