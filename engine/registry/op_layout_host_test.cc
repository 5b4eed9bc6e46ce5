// op_layout (ABI 1.4) through the host's function table: the registry's
// layout classes and reduction axes as a pass sees them, with the struct
// grown only to the caller's struct_size, and the refusals (bad node, input
// index past the node's inputs, a struct too small) answered with 0.
#include <gtest/gtest.h>

#include <cstddef>
#include <map>
#include <string>

#include "engine/ir/text.h"
#include "engine/registry/host_api.h"
#include "kiln/kiln_plugin.hpp"

namespace kiln::registry {
namespace {

struct LayoutProbe : kiln::plugin::Pass {
  std::map<std::string, kiln_op_layout_t> got;  // "<op>:<input>" -> answer
  int32_t bad_node = -1, bad_input = -1, too_small = -1, prefix_class = -1;
  uint64_t prefix_axes = 99;
  void run(kiln::plugin::GraphView& g, kiln::plugin::Rewriter&) override {
    const kiln_host_api_t* host = g.host();
    ASSERT_TRUE(KILN_PLUGIN_HAS_FIELD(host, kiln_host_api_t, op_layout));
    for (kiln_node_id_t n : g.nodes())
      for (size_t i = 0; i < g.inputs(n).size(); ++i) {
        kiln_op_layout_t out{};
        out.struct_size = sizeof(out);
        ASSERT_EQ(host->op_layout(g.raw(), n, i, &out), 1);
        got[g.node(n)->op + ":" + std::to_string(i)] = out;
      }
    const kiln_node_id_t first = g.nodes().front();
    kiln_op_layout_t out{};
    out.struct_size = sizeof(out);
    bad_node = host->op_layout(g.raw(), 12345, 0, &out);
    bad_input = host->op_layout(g.raw(), first, 7, &out);
    out.struct_size = 2;
    too_small = host->op_layout(g.raw(), first, 0, &out);
    // A reader of an older, shorter struct gets only what it has room for.
    kiln_op_layout_t prefix{};
    prefix.struct_size = static_cast<uint32_t>(offsetof(kiln_op_layout_t, reduction_axes));
    prefix.reduction_axes = 99;
    ASSERT_EQ(host->op_layout(g.raw(), first, 0, &prefix), 1);
    prefix_class = prefix.layout_class;
    prefix_axes = prefix.reduction_axes;
  }
};

TEST(HostApi, OpLayoutClassesAndReductionAxes) {
  auto g = ir::parse_graph(R"(graph @g opset 17 {
  input %a : f32[4,8]
  input %b : f32[8,3]
  %m = MatMul(%a, %b) : f32[4,3]
  %s = Softmax(%m) : f32[4,3]
  %t = Transpose(%s) {perm = [1,0]} : f32[3,4]
  %r = Relu(%t) : f32[3,4]
  return %r
}
)");
  ASSERT_TRUE(g.ok()) << g.status().message();
  LayoutProbe probe;
  const kiln_pass_t p = kiln::plugin::make_pass(probe, "test.op-layout", "");
  auto r = run_pass(p, **g, LogFn());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(probe.got["MatMul:0"].layout_class, KILN_LAYOUT_CLASS_ILD_VARIABLE);
  EXPECT_EQ(probe.got["MatMul:0"].reduction_axes, uint64_t{0b10});  // A: K is the last axis
  EXPECT_EQ(probe.got["MatMul:1"].reduction_axes, uint64_t{0b01});  // B: K is axis -2
  EXPECT_EQ(probe.got["Softmax:0"].reduction_axes, uint64_t{0b10});
  EXPECT_EQ(probe.got["Transpose:0"].layout_class, KILN_LAYOUT_CLASS_ILD_FIXED);
  EXPECT_EQ(probe.got["Transpose:0"].reduction_axes, 0u);
  EXPECT_EQ(probe.got["Relu:0"].layout_class, KILN_LAYOUT_CLASS_ILI_VARIABLE);
  EXPECT_EQ(probe.bad_node, 0);
  EXPECT_EQ(probe.bad_input, 0);
  EXPECT_EQ(probe.too_small, 0);
  EXPECT_EQ(probe.prefix_class, KILN_LAYOUT_CLASS_ILD_VARIABLE);
  EXPECT_EQ(probe.prefix_axes, 99u);  // past the reader's struct_size: untouched
}

}  // namespace
}  // namespace kiln::registry
