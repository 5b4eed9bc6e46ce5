// Golden tests for kiln.fusion (testdata/*.kir through the shared harness in
// plugins/testing/golden_harness.h: // RUN:, // CHECK:, // CHECK-NOT:, and a
// reference-executor comparison before and after the pass), plus the
// shared-library build and the pass statistics.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <set>
#include <string>

#include "engine/ir/text.h"
#include "engine/registry/pass_manager.h"
#include "plugins/fusion/fusion.h"
#include "plugins/rdp/rdp.h"
#include "plugins/testing/golden_harness.h"
#include "plugins/testing/plugin_file.h"

namespace kiln::registry {
namespace {

using plugin_testing::GoldenCase;

std::vector<GoldenCase> load_cases() { return plugin_testing::load_golden_cases(KILN_FUSION_TESTDATA); }

// Runs the fusion pass alone over `text` with the environment variable
// `env` (when not null) set to `value` (left unset when null) and, when `compute_units` is
// not 0, a device of that many compute units; its statistics, and in
// `annotated` (when given) the graph it left.
std::map<std::string, int64_t> run_fusion(const std::string& text, const char* env, const char* value,
                                          uint32_t compute_units = 0, std::string* annotated = nullptr) {
  if (env && value) setenv(env, value, 1);
  PluginRegistry reg;
  EXPECT_TRUE(reg.load_static(kiln_fusion_plugin_query, "static:kiln.fusion").ok());
  auto g = ir::parse_graph(text);
  EXPECT_TRUE(g.ok()) << g.status().message();
  PassManager pm(reg);
  PipelineOptions options;
  options.passes = {"fusion"};
  if (compute_units > 0) {
    kiln_target_info_t t{};
    t.struct_size = sizeof(t);
    t.compute_units = compute_units;
    options.target = t;
  }
  EXPECT_TRUE(pm.run(**g, options).ok());
  if (env) unsetenv(env);
  if (annotated) *annotated = ir::print_graph(**g);
  return pm.records()[0].statistics;
}

class FusionGolden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(FusionGolden, Matches) {
  plugin_testing::run_golden_case(GetParam(), [](PluginRegistry& reg) {
    KILN_RETURN_IF_ERROR(reg.load_static(kiln_rdp_plugin_query, "static:kiln.rdp"));
    return reg.load_static(kiln_fusion_plugin_query, "static:kiln.fusion");
  });
}

INSTANTIATE_TEST_SUITE_P(Testdata, FusionGolden, ::testing::ValuesIn(load_cases()), plugin_testing::golden_case_name);

TEST(FusionGoldenFiles, CoverTheCases) {
  std::set<std::string> files;
  for (const GoldenCase& c : load_cases()) files.insert(c.file);
  for (const char* f : {"chains.kir", "residual.kir", "multi_consumer.kir", "cycles.kir", "control_flow.kir",
                        "dynamic.kir", "dwpw.kir", "shape_chain.kir", "attention.kir", "views.kir",
                        "views_shared.kir", "store_views.kir", "depth_space.kir", "layout_chains.kir", "conv_sum.kir",
                        "dw_norm.kir", "squeeze_excite.kir", "scaled_conv.kir", "norm_gemm.kir"})
    EXPECT_TRUE(files.count(f)) << f;
}

constexpr const char* kResidual = R"(graph @g opset 17 {
  input %x : f32[1,4,6,6]
  const %w : f32[4,4,1,1] = dense<[1,0,0,0, 0,1,0,0, 0,0,1,0, 0,0,0,1]>
  %c = Conv(%x, %w) : f32[1,4,6,6]
  %r = Relu(%c) : f32[1,4,6,6]
  %a = Add(%r, %x) : f32[1,4,6,6]
  %s = Sigmoid(%a) : f32[1,4,6,6]
  %t = Tanh(%s) : f32[1,4,6,6]
  return %t
}
)";

// The loadable build runs and reports its statistics; a second run replaces
// the first run's groups instead of adding to them.
TEST(FusionShared, LoadsRunsAndCounts) {
  PluginRegistry reg;
  ASSERT_TRUE(plugin_testing::load_plugin_file(reg, KILN_FUSION_SO, "fusion"));
  auto g = ir::parse_graph(kResidual);
  ASSERT_TRUE(g.ok()) << g.status().message();
  PassManager pm(reg);
  PipelineOptions options;
  options.passes = {"fusion", "fusion"};
  ASSERT_TRUE(pm.run(**g, options).ok());
  for (const PassRecord& r : pm.records()) {
    EXPECT_EQ(r.statistics.at("groups"), 1);
    EXPECT_EQ(r.statistics.at("grouped-nodes"), 5);
    EXPECT_EQ(r.statistics.at("groups-anchor"), 1);
    EXPECT_EQ(r.statistics.at("complex-ops-per-group-max"), 1);
    EXPECT_EQ(r.statistics.at("groups-dwpw"), 0);
    EXPECT_GT(r.statistics.at("weight-balance-jain-x1000"), 0);
  }
  EXPECT_EQ(pm.records()[1].statistics.at("old-groups-cleared"), 5);
  const std::string out = ir::print_graph(**g);
  size_t n = 0;
  for (size_t at = out.find("kiln.fusion_group = \"fg0\""); at != std::string::npos;
       at = out.find("kiln.fusion_group = \"fg0\"", at + 1))
    ++n;
  EXPECT_EQ(n, 5u) << out;
}

constexpr const char* kAttention = R"(graph @g opset 17 {
  input %q : f32[2,5,4]
  input %kt : f32[2,4,5]
  input %v : f32[2,5,4]
  const %d : f32[] = dense<[2.0]>
  %qd = Div(%q, %d) : f32[2,5,4]
  %s = MatMul(%qd, %kt) : f32[2,5,5]
  %p = Softmax(%s) {axis = -1} : f32[2,5,5]
  %y = MatMul(%p, %v) : f32[2,5,4]
  %r = Relu(%y) : f32[2,5,4]
  return %r
}
)";

// An attention group is counted as such, with its three anchors; the Relu
// after it is a group of its own (clustering never sees attention nodes).
TEST(FusionStatistics, CountsAttentionGroups) {
  const std::map<std::string, int64_t> stats = run_fusion(kAttention, nullptr, nullptr);
  EXPECT_EQ(stats.at("attention-groups"), 1);
  EXPECT_EQ(stats.at("groups"), 1);
  EXPECT_EQ(stats.at("grouped-nodes"), 4);
  EXPECT_EQ(stats.at("complex-ops-per-group-max"), 3);
}

// Norm-GEMM groups (shape (k)) only on request: a channels-last Transpose
// -> LayerNorm -> MatMul -> bias -> Relu becomes one group of five with
// KILN_FUSION_NORM_GEMM=on, and two groups otherwise; a norm read by two
// MatMuls, or over another axis than the last, never joins one.
TEST(FusionStatistics, NormGemmsOnRequest) {
  const std::string w = "dense<[1,0.5,-0.5,1,0.25,1,1,-0.25,0.5,-1,0.25,0.75,-0.5,0.5,1,0]>";
  const std::string one = "graph @g opset 17 {\n  input %x : f32[1,4,2,3]\n  const %g : f32[4] = dense<[1,0.5,2,1]>\n"
                          "  const %w : f32[4,4] = " + w + "\n  const %c : f32[4] = dense<[0,1,0,-1]>\n"
                          "  %t = Transpose(%x) {perm = [0,2,3,1]} : f32[1,2,3,4]\n"
                          "  %n = LayerNormalization(%t, %g) {axis = -1} : f32[1,2,3,4]\n"
                          "  %m = MatMul(%n, %w) : f32[1,2,3,4]\n  %a = Add(%m, %c) : f32[1,2,3,4]\n"
                          "  %r = Relu(%a) : f32[1,2,3,4]\n  return %r\n}\n";
  const std::string two = "graph @g opset 17 {\n  input %x : f32[2,3,4]\n  const %g : f32[4] = dense<[1,0.5,2,1]>\n"
                          "  const %w : f32[4,4] = " + w + "\n"
                          "  %n = LayerNormalization(%x, %g) {axis = -1} : f32[2,3,4]\n"
                          "  %p = MatMul(%n, %w) : f32[2,3,4]\n  %q = MatMul(%n, %w) : f32[2,3,4]\n"
                          "  %s = Add(%p, %q) : f32[2,3,4]\n  return %s\n}\n";
  const auto run = [](const std::string& text, const char* value, std::string* annotated) {
    return run_fusion(text, "KILN_FUSION_NORM_GEMM", value, 0, annotated);
  };
  std::string text;
  const auto on = run(one, "on", &text);
  EXPECT_EQ(on.at("groups-norm-gemm"), 1);
  EXPECT_EQ(on.at("groups"), 1);
  EXPECT_EQ(on.at("grouped-nodes"), 5);
  EXPECT_EQ(on.count("norm-gemms-off"), 0u);
  EXPECT_NE(text.find("%m = MatMul(%n, %w) #{kiln.fusion_group = \"fg0\"}"), std::string::npos) << text;
  const auto off = run(one, nullptr, nullptr);
  EXPECT_EQ(off.count("groups-norm-gemm"), 0u);
  EXPECT_EQ(off.at("groups"), 2);
  EXPECT_EQ(off.at("norm-gemms-off"), 1);
  EXPECT_EQ(run(two, "on", nullptr).count("groups-norm-gemm"), 0u);
}

// Squeeze-excite groups (shape (i)): a block whose two 1x1 convs hold more
// than 20480 weights (here 128 channels x 81 hidden units, twice) is left
// unfused on a device of many compute units, where its one workgroup would
// read them alone, and grouped on one of few (a CPU device) or when
// KILN_FUSION_SQUEEZE_EXCITE=on asks.
TEST(FusionStatistics, SqueezeExciteWeightsBoundOnManyComputeUnits) {
  const auto dense = [](int n) {
    std::string v;
    for (int i = 0; i < n; ++i) v += (i ? "," : "") + std::to_string(i % 5 - 2);
    return "dense<[" + v + "]>";
  };
  const std::string text = "graph @g opset 17 {\n  input %x : f32[1,128,4,4]\n  const %w1 : f32[81,128,1,1] = " +
                           dense(81 * 128) + "\n  const %w2 : f32[128,81,1,1] = " + dense(81 * 128) +
                           "\n  %p = GlobalAveragePool(%x) : f32[1,128,1,1]\n  %h = Conv(%p, %w1) : f32[1,81,1,1]\n"
                           "  %r = Relu(%h) : f32[1,81,1,1]\n  %e = Conv(%r, %w2) : f32[1,128,1,1]\n"
                           "  %g = Sigmoid(%e) : f32[1,128,1,1]\n  return %g\n}\n";
  const auto run = [&](uint32_t compute_units, const char* value) {
    return run_fusion(text, "KILN_FUSION_SQUEEZE_EXCITE", value, compute_units);
  };
  const auto gpu = run(132, nullptr);
  EXPECT_EQ(gpu.count("groups-squeeze-excite"), 0u);
  EXPECT_EQ(gpu.at("squeeze-excites-refused"), 1);
  EXPECT_EQ(run(2, nullptr).at("groups-squeeze-excite"), 1);
  EXPECT_EQ(run(132, "on").at("groups-squeeze-excite"), 1);
  const auto off = run(2, "off");
  EXPECT_EQ(off.count("groups-squeeze-excite"), 0u);
  EXPECT_EQ(off.at("squeeze-excites-off"), 1);
}

// A view read by three groups gets two clones (statistic views-cloned); a
// second run finds each copy read by one group and clones nothing more.
TEST(FusionShared, ClonesASharedViewPerExtraGroupOnce) {
  PluginRegistry reg;
  ASSERT_TRUE(plugin_testing::load_plugin_file(reg, KILN_FUSION_SO, "fusion"));
  auto g = ir::parse_graph(R"(graph @g opset 17 {
  input %x : f32[3,4]
  %t = Transpose(%x) {perm = [1,0]} : f32[4,3]
  %a = Relu(%t) : f32[4,3]
  %b = Neg(%t) : f32[4,3]
  %c = Exp(%t) : f32[4,3]
  return %a, %b, %c
}
)");
  ASSERT_TRUE(g.ok()) << g.status().message();
  PassManager pm(reg);
  PipelineOptions options;
  options.passes = {"fusion", "fusion"};
  ASSERT_TRUE(pm.run(**g, options).ok());
  EXPECT_EQ(pm.records()[0].statistics.at("views-cloned"), 2);
  EXPECT_EQ(pm.records()[0].statistics.at("view-prologue-nodes"), 1);
  EXPECT_EQ(pm.records()[1].statistics.count("views-cloned"), 0u);
  EXPECT_EQ(pm.records()[1].statistics.at("view-prologue-nodes"), 3);
  const std::string out = ir::print_graph(**g);
  size_t transposes = 0;
  for (size_t at = out.find("Transpose(%x)"); at != std::string::npos; at = out.find("Transpose(%x)", at + 1)) ++transposes;
  EXPECT_EQ(transposes, 3u) << out;
}

// KILN_FUSION_DWPW=split keeps a pair FusePlanner would fuse apart, and
// =fuse fuses one it is not asked about (a symbolic batch); unset, the
// model decides again. Each decision the variable made is counted.
TEST(FusionShared, DwPwOverrideForcesEitherWay) {
  const auto run = [](const char* graph_text, const char* override) {
    return run_fusion(graph_text, "KILN_FUSION_DWPW", override);
  };
  const std::string pair = R"(graph @g opset 17 {
  input %x : f32[BATCH,4,6,6]
  const %wd : f32[4,1,3,3] = dense<[1.0,0.0,0.0,0.0,1.0,0.0,0.0,0.0,1.0,1.0,0.0,0.0,0.0,1.0,0.0,0.0,0.0,1.0,1.0,0.0,0.0,0.0,1.0,0.0,0.0,0.0,1.0,1.0,0.0,0.0,0.0,1.0,0.0,0.0,0.0,1.0]>
  const %wp : f32[8,4,1,1] = dense<[1.0,0.0,0.0,0.0,0.0,1.0,0.0,0.0,0.0,0.0,1.0,0.0,0.0,0.0,0.0,1.0,1.0,0.0,0.0,0.0,0.0,1.0,0.0,0.0,0.0,0.0,1.0,0.0,0.0,0.0,0.0,1.0]>
  %d = Conv(%x, %wd) {group = 4, pads = [1,1,1,1]} : f32[BATCH,4,6,6]
  %r = Relu(%d) : f32[BATCH,4,6,6]
  %p = Conv(%r, %wp) : f32[BATCH,8,6,6]
  return %p
}
)";
  const auto with_batch = [&](const std::string& batch) {
    std::string s = pair;
    for (size_t at = s.find("BATCH"); at != std::string::npos; at = s.find("BATCH", at)) s.replace(at, 5, batch);
    return s;
  };
  auto stats = run(with_batch("1").c_str(), nullptr);
  EXPECT_EQ(stats.at("groups-dwpw"), 1);
  EXPECT_EQ(stats.count("dwpw-forced"), 0u);
  stats = run(with_batch("1").c_str(), "split");
  EXPECT_EQ(stats.at("groups-dwpw"), 0);
  EXPECT_EQ(stats.at("dwpw-forced"), 1);
  stats = run(with_batch("n").c_str(), nullptr);
  EXPECT_EQ(stats.at("groups-dwpw"), 0);
  stats = run(with_batch("n").c_str(), "fuse");
  EXPECT_EQ(stats.at("groups-dwpw"), 1);
  EXPECT_EQ(stats.at("dwpw-forced"), 1);
}

}  // namespace
}  // namespace kiln::registry
