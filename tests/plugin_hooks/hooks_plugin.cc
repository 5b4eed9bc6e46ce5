// test.force-hooks: a plugin that makes every planner hook's choice, for
// tests/plugin_hooks/hooks_test.cc. It sets
//   * kiln.kernel = "tile=16x16,split_k=2" on every MatMul (a tile and a K
//     split the planner would not choose for these sizes);
//   * kiln.storage = "image" and kiln.packed_axis = "0" on every MatMul
//     output (the plan's storage is buffers);
//   * kiln.fusion_group = "test.chain" on every Sigmoid, Mul, Add and Tanh
//     (the elementwise chain of the test's second model);
// and counts what it set in its statistics.
#include "kiln/kiln_plugin.hpp"

namespace {

using kiln::plugin::GraphView;
using kiln::plugin::Rewriter;

class ForceHooks : public kiln::plugin::Pass {
 public:
  void run(GraphView& g, Rewriter& rw) override {
    for (kiln_node_id_t n : g.nodes()) {
      const auto info = g.node(n);
      if (info && info->domain.empty() &&
          (info->op == "Sigmoid" || info->op == "Mul" || info->op == "Add" || info->op == "Tanh")) {
        rw.annotate_node(n, KILN_ANNOTATION_FUSION_GROUP, "test.chain");
        rw.add_statistic("fusion-group-nodes", 1);
      }
      if (!info || !info->domain.empty() || info->op != "MatMul") continue;
      rw.annotate_node(n, KILN_ANNOTATION_KERNEL, "tile=16x16,split_k=2");
      rw.add_statistic("kernel-configs", 1);
      const kiln_value_id_t y = g.outputs(n).at(0);
      rw.annotate_value(y, KILN_ANNOTATION_STORAGE, "image");
      rw.annotate_value(y, KILN_ANNOTATION_PACKED_AXIS, "0");
      rw.add_statistic("storages", 1);
    }
  }
};

ForceHooks force_hooks;
const kiln_pass_t force_hooks_pass =
    kiln::plugin::make_pass(force_hooks, "test.force-hooks", "sets every planner hook",
                            KILN_FACT_SHAPES,
                            KILN_FACT_LAYOUTS | KILN_FACT_KERNEL_CONFIGS | KILN_FACT_FUSION_GROUPS);
const kiln_pass_t* const passes[] = {&force_hooks_pass};
const kiln_plugin_t plugin = kiln::plugin::make_plugin("test.hooks", "1.0.0", passes, 1);

}  // namespace

KILN_PLUGIN_DEFINE_QUERY(kiln_plugin_query, plugin)
