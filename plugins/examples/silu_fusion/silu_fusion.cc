// example.fuse-silu: a third-party Kiln plugin, built out of tree against an
// installed Kiln (see README.md). It rewrites
//
//   s = Sigmoid(x);  y = Mul(x, s)   (or Mul(s, x))
//
// into y = kiln::Silu(x), Kiln's own fused op, which the reference executor
// computes with exactly the same arithmetic: outputs do not change, the
// graph loses a node and an intermediate tensor per match.
//
// It uses only the public plugin headers: kiln_plugin.hpp wraps the C ABI of
// kiln_plugin.h, and the host stages every edit and commits them only when
// the pass returns normally (a thrown kiln::plugin::Error fails the pass and
// leaves the graph untouched).
#include <kiln/kiln_plugin.hpp>

#include <optional>

namespace {

using kiln::plugin::GraphView;
using kiln::plugin::NodeInfo;
using kiln::plugin::Rewriter;

// The fused op lives in Kiln's own domain ("kiln"), not ONNX's.
constexpr const char* kKilnDomain = "kiln";

bool is_onnx_op(const std::optional<NodeInfo>& node, const char* op) {
  return node && node->domain.empty() && node->op == op;
}

class FuseSilu : public kiln::plugin::Pass {
 public:
  void run(GraphView& g, Rewriter& rw) override {
    int64_t fused = 0;
    // Sub-graphs (If/Loop bodies) are regions too; fuse in all of them.
    for (kiln_region_id_t region = 0; region < static_cast<kiln_region_id_t>(g.region_count()); ++region)
      for (kiln_node_id_t mul : g.nodes(region))
        if (try_fuse(g, rw, mul)) ++fused;
    rw.add_statistic("silu-fused", fused);
  }

 private:
  // Fuses the match rooted at `mul`, if it is one; returns whether it did.
  static bool try_fuse(GraphView& g, Rewriter& rw, kiln_node_id_t mul) {
    const std::optional<NodeInfo> info = g.node(mul);  // nullopt once erased
    if (!is_onnx_op(info, "Mul") || info->input_count != 2 || info->output_count != 1) return false;
    const std::vector<kiln_value_id_t> in = g.inputs(mul);
    for (int k = 0; k < 2; ++k) {
      const kiln_value_id_t s = in[k];
      const kiln_value_id_t x = in[1 - k];
      const auto s_info = g.value(s);
      if (!s_info || s_info->producer == KILN_NO_ID) continue;
      const kiln_node_id_t sigmoid = s_info->producer;
      if (!is_onnx_op(g.node(sigmoid), "Sigmoid") || g.inputs(sigmoid).at(0) != x) continue;
      // Another reader of s (or s being a graph output) still needs the
      // Sigmoid: fusing would compute it twice instead of saving it.
      if (g.uses(s).size() != 1) continue;
      // The Silu produces the Mul's output value itself, so the value (and a
      // model output's name) survives. A value has one producer at a time:
      // erase the Mul first, then put the Silu where the Sigmoid was (x is
      // defined before it, y's readers come after the Mul).
      const kiln_value_id_t y = g.outputs(mul).at(0);
      rw.erase_node(mul);
      rw.add_node("Silu", {x}, {y}, info->name, info->region, /*insert_before=*/sigmoid, kKilnDomain);
      rw.erase_node(sigmoid);
      return true;
    }
    return false;
  }
};

FuseSilu fuse_silu;
const kiln_pass_t fuse_silu_pass = kiln::plugin::make_pass(
    fuse_silu, "example.fuse-silu", "fuses x * Sigmoid(x) into kiln::Silu(x)");
const kiln_pass_t* const passes[] = {&fuse_silu_pass};
const kiln_plugin_t plugin = kiln::plugin::make_plugin("example.silu", "1.0.0", passes, 1);

}  // namespace

KILN_PLUGIN_DEFINE_QUERY(kiln_plugin_query, plugin)
