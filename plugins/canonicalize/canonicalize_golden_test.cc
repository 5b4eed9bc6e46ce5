// Golden tests for kiln.canonicalize: testdata/*.kir cases run through the
// shared harness (plugins/testing/golden_harness.h: // RUN:, // CHECK:,
// // CHECK-NOT:, // ERROR:, and a reference-executor comparison before and
// after the passes).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/ir/text.h"
#include "engine/registry/default_pipeline.h"
#include "engine/registry/pass_manager.h"
#include "plugins/canonicalize/canonicalize.h"
#include "plugins/testing/golden_harness.h"

namespace kiln::registry {
namespace {

using plugin_testing::GoldenCase;

std::vector<GoldenCase> load_cases() { return plugin_testing::load_golden_cases(KILN_CANONICALIZE_TESTDATA); }

class CanonicalizeGolden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(CanonicalizeGolden, Matches) {
  plugin_testing::run_golden_case(GetParam(), [](PluginRegistry& reg) {
    return reg.load_static(kiln_canonicalize_plugin_query, "static:kiln.canonicalize");
  });
}

INSTANTIATE_TEST_SUITE_P(Testdata, CanonicalizeGolden, ::testing::ValuesIn(load_cases()),
                         plugin_testing::golden_case_name);

TEST(CanonicalizeGoldenFiles, Found) { EXPECT_GE(load_cases().size(), 10u); }

// The same plugin built as a shared library loads through dlopen; loading
// both the static and the shared copy is refused by name.
TEST(CanonicalizeShared, LoadsAndRuns) {
  PluginRegistry reg;
  Status s = reg.load_file(KILN_CANONICALIZE_SO);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(reg.plugins().size(), 1u);
  EXPECT_EQ(reg.plugins()[0].name, "kiln.canonicalize");
  EXPECT_NE(reg.find_pass("fold-constants"), nullptr);
  Status dup = reg.load_static(kiln_canonicalize_plugin_query, "static:kiln.canonicalize");
  EXPECT_FALSE(dup.ok());

  auto g = ir::parse_graph(R"(graph @g opset 17 {
  input %x : f32[2]
  %i = Identity(%x) : f32[2]
  %y = Relu(%i) : f32[2]
  return %y
}
)");
  ASSERT_TRUE(g.ok());
  PassManager pm(reg);
  PipelineOptions options;
  options.passes = {"remove-noops"};
  ASSERT_TRUE(pm.run(**g, options).ok());
  EXPECT_EQ(ir::print_graph(**g).find("Identity"), std::string::npos);
  EXPECT_EQ(pm.records()[0].statistics.at("noops-removed"), 1);
}

constexpr const char* kSmallModel = R"(graph @g opset 17 {
  input %x : f32[2]
  %i = Identity(%x) : f32[2]
  %dead = Exp(%i) : f32[2]
  %y = Relu(%i) : f32[2]
  return %y
}
)";

TEST(DefaultPipeline, RunsEveryPassInOrder) {
  auto g = ir::parse_graph(kSmallModel);
  ASSERT_TRUE(g.ok());
  PipelineOptions options;
  PipelineSetup setup;
  setup.load_environment = false;
  auto records = run_default_pipeline(**g, options, setup);
  ASSERT_TRUE(records.ok()) << records.status().message();
  // Canonicalization (the passes before "fusion") repeats until the graph
  // stops shrinking, whole rounds in the default order: here one that
  // removes the Identity and the dead Exp and one that finds nothing. Then
  // the annotating passes ("fusion" on) run once, in order.
  const std::vector<std::string>& all = default_pipeline();
  const size_t c = static_cast<size_t>(std::find(all.begin(), all.end(), "fusion") - all.begin());
  ASSERT_LT(c, all.size());
  ASSERT_EQ(records->size(), 2 * c + (all.size() - c));
  for (size_t i = 0; i < records->size(); ++i) {
    EXPECT_EQ((*records)[i].name, i < 2 * c ? all[i % c] : all[c + (i - 2 * c)]) << i;
    EXPECT_TRUE((*records)[i].committed);
  }
  const std::string out = ir::print_graph(**g);
  EXPECT_EQ(out.find("Identity"), std::string::npos) << out;
  EXPECT_EQ(out.find("Exp"), std::string::npos) << out;
}

TEST(DefaultPipeline, DisableAndSelect) {
  auto g = ir::parse_graph(kSmallModel);
  ASSERT_TRUE(g.ok());
  PipelineOptions options;
  options.disabled = {"remove-noops", "dce"};
  PipelineSetup setup;
  setup.load_environment = false;
  auto records = run_default_pipeline(**g, options, setup);
  ASSERT_TRUE(records.ok()) << records.status().message();
  EXPECT_EQ(records->size(), default_pipeline().size() - 2);
  const std::string out = ir::print_graph(**g);
  EXPECT_NE(out.find("Identity"), std::string::npos) << out;
  EXPECT_NE(out.find("Exp"), std::string::npos) << out;

  options.disabled.clear();
  options.passes = {"dce"};
  records = run_default_pipeline(**g, options, setup);
  ASSERT_TRUE(records.ok());
  EXPECT_EQ(ir::print_graph(**g).find("Exp"), std::string::npos);
}

TEST(DefaultPipeline, BadPluginFileIsAnError) {
  auto g = ir::parse_graph(kSmallModel);
  ASSERT_TRUE(g.ok());
  PipelineSetup setup;
  setup.load_environment = false;
  setup.plugin_files = {"/nonexistent/libacme.so"};
  auto records = run_default_pipeline(**g, PipelineOptions(), setup);
  ASSERT_FALSE(records.ok());
  EXPECT_NE(records.status().message().find("/nonexistent/libacme.so"), std::string::npos);
}

}  // namespace
}  // namespace kiln::registry
