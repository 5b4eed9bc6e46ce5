// Golden tests for kiln.rdp (testdata/*.kir through the shared harness in
// plugins/testing/golden_harness.h), plus the shared-library build and the
// pass statistics that the zoo table (README.md) is made of.
#include <gtest/gtest.h>

#include "engine/ir/text.h"
#include "engine/registry/pass_manager.h"
#include "plugins/rdp/rdp.h"
#include "plugins/testing/golden_harness.h"
#include "plugins/testing/plugin_file.h"

namespace kiln::registry {
namespace {

using plugin_testing::GoldenCase;

std::vector<GoldenCase> load_cases() { return plugin_testing::load_golden_cases(KILN_RDP_TESTDATA); }

class RdpGolden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(RdpGolden, Matches) {
  plugin_testing::run_golden_case(
      GetParam(), [](PluginRegistry& reg) { return reg.load_static(kiln_rdp_plugin_query, "static:kiln.rdp"); });
}

INSTANTIATE_TEST_SUITE_P(Testdata, RdpGolden, ::testing::ValuesIn(load_cases()), plugin_testing::golden_case_name);

TEST(RdpGoldenFiles, CoverTheIssue) {
  // forward, backward, broadcasting, Reshape -1/0, shape tensors, If merge.
  std::set<std::string> files;
  for (const GoldenCase& c : load_cases()) files.insert(c.file);
  for (const char* f : {"forward.kir", "backward.kir", "broadcast.kir", "reshape.kir", "shape_tensors.kir",
                        "if_merge.kir"})
    EXPECT_TRUE(files.count(f)) << f;
}

constexpr const char* kDynamic = R"(graph @g opset 17 {
  input %x : f32[?,2]
  const %w : f32[2,4] = dense<[0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5]>
  %y = MatMul(%x, %w) : f32[?,4]
  %s = Shape(%y) : i64[2]
  return %y, %s
}
)";

// The loadable build of the same plugin runs and reports Fig. 8's counts.
TEST(RdpShared, LoadsRunsAndCounts) {
  PluginRegistry reg;
  ASSERT_TRUE(plugin_testing::load_plugin_file(reg, KILN_RDP_SO, "rdp"));
  auto g = ir::parse_graph(kDynamic);
  ASSERT_TRUE(g.ok()) << g.status().message();
  PassManager pm(reg);
  PipelineOptions options;
  options.passes = {"rdp"};
  ASSERT_TRUE(pm.run(**g, options).ok());
  const auto& stats = pm.records()[0].statistics;
  EXPECT_EQ(stats.at("values"), 3);  // %x, %y, %s
  EXPECT_EQ(stats.at("values-nac-before"), 2);
  EXPECT_EQ(stats.at("values-nac"), 0);
  EXPECT_EQ(stats.at("values-symbolic"), 2);
  EXPECT_EQ(stats.at("values-static"), 1);
  EXPECT_EQ(stats.at("nodes-ISDO"), 1);
  EXPECT_EQ(stats.at("nodes-ISDOS"), 1);
  // From the inputs alone RDP derives the same shapes as the host.
  EXPECT_EQ(stats.at("rdp-alone-nac"), 0);
  EXPECT_EQ(stats.at("rdp-alone-mismatches"), 0);
  const std::string out = ir::print_graph(**g);
  EXPECT_NE(out.find("input %x : f32[x_0,2]"), std::string::npos) << out;
  EXPECT_NE(out.find("rdp.value = \"[x_0,4]\""), std::string::npos) << out;
}

// Shape re-inference after the commit keeps what RDP found where inference
// knows less: the broadcast of ? with 5 stays 5 through a second pass.
TEST(RdpCommit, ReinferenceKeepsRefinedDims) {
  PluginRegistry reg;
  ASSERT_TRUE(reg.load_static(kiln_rdp_plugin_query, "static:kiln.rdp").ok());
  auto g = ir::parse_graph(R"(graph @g opset 17 {
  input %a : f32[?]
  input %b : f32[5]
  %c = Add(%a, %b) : f32[?]
  %d = Relu(%c) : f32[?]
  return %d
}
)");
  ASSERT_TRUE(g.ok());
  PassManager pm(reg);
  PipelineOptions options;
  options.passes = {"rdp", "rdp"};
  ASSERT_TRUE(pm.run(**g, options).ok());
  const ir::Graph& graph = **g;
  for (ir::NodeId n : graph.main().nodes) {
    const ir::Value& v = graph.value(graph.node(n).outputs[0]);
    EXPECT_EQ(v.shape.to_string(), "[5]") << v.name;
  }
  EXPECT_EQ(pm.records()[1].statistics.at("dims-refined"), 0);  // nothing left to do
}

// Forward transfer is the host's own inference (infer_node_dims): an op RDP
// has no function for (Einsum) is derived from the inputs alone, and the
// dims flow on through an op that keeps its input's shape.
TEST(RdpForward, UsesTheHostsInference) {
  PluginRegistry reg;
  ASSERT_TRUE(reg.load_static(kiln_rdp_plugin_query, "static:kiln.rdp").ok());
  auto g = ir::parse_graph(R"(graph @g opset 17 {
  input %a : f32[n,k]
  input %b : f32[k,m]
  %e = Einsum(%a, %b) {equation = "ij,jk->ik"} : f32[?,?]
  %t = Trilu(%e) : f32[?,?]
  return %t
}
)");
  ASSERT_TRUE(g.ok()) << g.status().message();
  PassManager pm(reg);
  PipelineOptions options;
  options.passes = {"rdp"};
  ASSERT_TRUE(pm.run(**g, options).ok());
  const auto& stats = pm.records()[0].statistics;
  EXPECT_EQ(stats.at("rdp-alone-nac"), 0);
  EXPECT_EQ(stats.at("rdp-alone-mismatches"), 0);
  EXPECT_EQ(stats.at("values-nac"), 0);
  const std::string out = ir::print_graph(**g);
  EXPECT_NE(out.find(": f32[n,m]\n  %t = Trilu(%e)"), std::string::npos) << out;
  EXPECT_NE(out.find("%t = Trilu(%e) #{rdp.class = \"ISDOS\"} : f32[n,m]"), std::string::npos) << out;
}

}  // namespace
}  // namespace kiln::registry
