// The default pipeline runs canonicalization to a fixed point: folding one
// level of a shape computation exposes the next. An explicit --passes list
// runs once, as written.
#include "engine/registry/default_pipeline.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "engine/ir/text.h"
#include "engine/registry/testdata/two_level_folding.h"
#include "engine/runtime/reference_executor.h"

namespace kiln::registry {
namespace {

constexpr const char* kTwoLevels = testdata::kTwoLevelFolding;

size_t count_op(const ir::Graph& g, const std::string& op) {
  size_t n = 0;
  for (size_t i = 0; i < g.num_nodes(); ++i) {
    const ir::Node& node = g.node(static_cast<ir::NodeId>(i));
    n += !node.erased && node.op == op;
  }
  return n;
}

TEST(DefaultPipeline, FoldsShapeChainsToAFixedPoint) {
  auto g = ir::parse_graph(kTwoLevels);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  Tensor x = Tensor::from_vector<float>({1, 2}, {1.0f, 2.0f});
  auto before = runtime::ReferenceExecutor(**g).run({x});
  ASSERT_TRUE(before.ok()) << before.status().to_string();

  auto records = run_default_pipeline(**g, PipelineOptions{});
  ASSERT_TRUE(records.ok()) << records.status().to_string();
  EXPECT_EQ(count_op(**g, "Shape"), 0u) << ir::print_graph(**g);
  EXPECT_EQ(count_op(**g, "ConstantOfShape"), 0u) << ir::print_graph(**g);
  EXPECT_EQ(count_op(**g, "Where"), 0u);
  EXPECT_EQ((**g).num_live_nodes(), 2u) << ir::print_graph(**g);  // Pad, Add
  EXPECT_GT(records->size(), default_pipeline().size());            // more than one round

  auto after = runtime::ReferenceExecutor(**g).run({x});
  ASSERT_TRUE(after.ok()) << after.status().to_string();
  ASSERT_EQ((*after)[0].shape(), (Shape{1, 5}));
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ((*after)[0].get_f64(i), (*before)[0].get_f64(i));
}

TEST(DefaultPipeline, ExplicitPassListRunsOnce) {
  auto g = ir::parse_graph(kTwoLevels);
  ASSERT_TRUE(g.ok());
  PipelineOptions options;
  options.passes = {"fold-shapes", "fold-constants"};
  auto records = run_default_pipeline(**g, options);
  ASSERT_TRUE(records.ok()) << records.status().to_string();
  EXPECT_EQ(records->size(), 2u);
  EXPECT_EQ(count_op(**g, "Where"), 0u);
  EXPECT_EQ(count_op(**g, "Shape"), 1u);  // needed a second round
}

// fusion runs after rdp and before memplan-order and annotates groups;
// --disable-pass fusion (or a list without it) leaves the graph as before.
TEST(DefaultPipeline, FusionPlacedAndDisablable) {
  const std::vector<std::string>& passes = default_pipeline();
  const auto at = [&](const char* name) { return std::find(passes.begin(), passes.end(), name) - passes.begin(); };
  EXPECT_LT(at("rdp"), at("fusion"));
  EXPECT_LT(at("fusion"), at("layout"));  // layout annotates the values fusion left materialized
  EXPECT_LT(at("layout"), at("memplan-order"));
  EXPECT_LT(at("memplan-order"), static_cast<std::ptrdiff_t>(passes.size()));
  constexpr const char* kChain = R"(graph @g opset 17 {
  input %x : f32[4]
  %a = Exp(%x) : f32[4]
  %b = Relu(%a) : f32[4]
  %c = Neg(%b) : f32[4]
  return %c
}
)";
  auto fused = ir::parse_graph(kChain);
  ASSERT_TRUE(fused.ok());
  auto records = run_default_pipeline(**fused, PipelineOptions{});
  ASSERT_TRUE(records.ok()) << records.status().to_string();
  EXPECT_EQ(count_op(**fused, "Neg"), 1u);
  for (ir::NodeId n : (**fused).main().nodes)
    EXPECT_EQ((**fused).node(n).annotations.at(KILN_ANNOTATION_FUSION_GROUP), "fg0");
  PipelineOptions options;
  options.disabled = {"fusion"};
  auto plain = ir::parse_graph(kChain);
  ASSERT_TRUE(plain.ok());
  records = run_default_pipeline(**plain, options);
  ASSERT_TRUE(records.ok()) << records.status().to_string();
  for (const PassRecord& r : *records) EXPECT_NE(r.name, "fusion");
  EXPECT_EQ(ir::print_graph(**plain).find("kiln.fusion_group"), std::string::npos);
}

// layout runs in the default pipeline and annotates packed axes (storage
// too, given a device); --disable-pass layout is its ablation.
TEST(DefaultPipeline, LayoutAnnotatesAndIsDisablable) {
  constexpr const char* kSoftmax = R"(graph @g opset 17 {
  input %x : f32[2,8,16]
  %a = Exp(%x) : f32[2,8,16]
  %s = Softmax(%a) {axis = 1} : f32[2,8,16]
  return %s
}
)";
  auto annotated = ir::parse_graph(kSoftmax);
  ASSERT_TRUE(annotated.ok());
  PipelineOptions options;
  options.disabled = {"fusion"};  // keep %a materialized
  auto records = run_default_pipeline(**annotated, options);
  ASSERT_TRUE(records.ok()) << records.status().to_string();
  // %a is read by the Softmax along axis 1: packed there.
  const std::string text = ir::print_graph(**annotated);
  const size_t exp = text.find("%a = Exp(%x)");
  ASSERT_NE(exp, std::string::npos) << text;
  const std::string line = text.substr(exp, text.find('\n', exp) - exp);
  EXPECT_NE(line.find("#{kiln.packed_axis = \"1\"}"), std::string::npos) << text;
  options.disabled.push_back("layout");
  auto plain = ir::parse_graph(kSoftmax);
  ASSERT_TRUE(plain.ok());
  records = run_default_pipeline(**plain, options);
  ASSERT_TRUE(records.ok()) << records.status().to_string();
  for (const PassRecord& r : *records) EXPECT_NE(r.name, "layout");
  EXPECT_EQ(ir::print_graph(**plain).find("kiln.packed_axis"), std::string::npos);
}

// integer_qdq puts fuse-qdq into the default pipeline just before
// fold-constants (which would fold the weights' DequantizeLinear away), and
// --disable-pass fuse-qdq still removes it.
TEST(DefaultPipeline, IntegerQdqPlacesFuseQdqBeforeFoldConstants) {
  PluginRegistry registry;
  ASSERT_TRUE(load_standard_plugins(registry, PipelineSetup{}, nullptr).ok());
  const std::vector<std::string> plain = default_pipeline(registry);
  EXPECT_EQ(std::find(plain.begin(), plain.end(), "fuse-qdq"), plain.end());
  const std::vector<std::string> with = default_pipeline(registry, true);
  ASSERT_EQ(with.size(), plain.size() + 1);
  const auto fuse = std::find(with.begin(), with.end(), "fuse-qdq");
  ASSERT_NE(fuse, with.end());
  ASSERT_NE(fuse + 1, with.end());
  EXPECT_EQ(*(fuse + 1), "fold-constants");

  auto g = ir::parse_graph(kTwoLevels);
  ASSERT_TRUE(g.ok());
  PipelineOptions options;
  options.integer_qdq = true;
  auto records = run_default_pipeline(**g, options);
  ASSERT_TRUE(records.ok()) << records.status().to_string();
  EXPECT_TRUE(std::any_of(records->begin(), records->end(), [](const PassRecord& r) { return r.name == "fuse-qdq"; }));
  options.disabled = {"fuse-qdq"};
  auto again = ir::parse_graph(kTwoLevels);
  ASSERT_TRUE(again.ok());
  records = run_default_pipeline(**again, options);
  ASSERT_TRUE(records.ok()) << records.status().to_string();
  for (const PassRecord& r : *records) EXPECT_NE(r.name, "fuse-qdq");
}

}  // namespace
}  // namespace kiln::registry
