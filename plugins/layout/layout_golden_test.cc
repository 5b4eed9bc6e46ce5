// Golden tests for kiln.layout (testdata/*.kir through the shared harness,
// with // TARGET: device facts), the shared-library build, and the
// statistics `kiln run --stats` shows (the per-tensor storage mix).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "engine/ir/text.h"
#include "engine/registry/pass_manager.h"
#include "plugins/fusion/fusion.h"
#include "plugins/layout/layout.h"
#include "plugins/rdp/rdp.h"
#include "plugins/testing/golden_harness.h"
#include "plugins/testing/plugin_file.h"

namespace kiln::registry {
namespace {

using plugin_testing::GoldenCase;

std::vector<GoldenCase> load_cases() { return plugin_testing::load_golden_cases(KILN_LAYOUT_TESTDATA); }

class LayoutGolden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(LayoutGolden, Matches) {
  plugin_testing::run_golden_case(GetParam(), [](PluginRegistry& reg) {
    KILN_RETURN_IF_ERROR(reg.load_static(kiln_rdp_plugin_query, "static:kiln.rdp"));
    KILN_RETURN_IF_ERROR(reg.load_static(kiln_fusion_plugin_query, "static:kiln.fusion"));
    return reg.load_static(kiln_layout_plugin_query, "static:kiln.layout");
  });
}

INSTANTIATE_TEST_SUITE_P(Testdata, LayoutGolden, ::testing::ValuesIn(load_cases()), plugin_testing::golden_case_name);

TEST(LayoutGoldenFiles, CoverTheCases) {
  std::set<std::string> files;
  for (const GoldenCase& c : load_cases()) files.insert(c.file);
  for (const char* f : {"reduction_dims.kir", "conflicts.kir", "forced.kir", "devices.kir"})
    EXPECT_TRUE(files.count(f)) << f;
}

constexpr const char* kCnn = R"(graph @g opset 17 {
  input %x : f32[1,4,8,8]
  input %w : f32[4,4,3,3]
  input %q : f32[8,8]
  %c = Conv(%x, %w) {pads = [1,1,1,1]} : f32[1,4,8,8]
  %r = Relu(%c) : f32[1,4,8,8]
  %p = Conv(%r, %w) {pads = [1,1,1,1]} : f32[1,4,8,8]
  const %shape : i64[2] = dense<[32,8]>
  %f = Reshape(%p, %shape) : f32[32,8]
  %m = MatMul(%f, %q) : f32[32,8]
  %s = Softmax(%m) : f32[32,8]
  return %s
}
)";

kiln_target_info_t lavapipe_like(int32_t storage_mode) {
  kiln_target_info_t t{};
  t.struct_size = sizeof(t);
  t.max_image_dimension_2d = 16384;
  t.device_type = 4;  // VK_PHYSICAL_DEVICE_TYPE_CPU
  t.storage_mode = storage_mode;
  return t;
}

// The loadable build runs; on a CPU device in auto mode the conv feature
// maps become channel-packed images, the rank-2 tensors stay buffers, and
// the statistics count the mix.
TEST(LayoutShared, CountsTheStorageMix) {
  PluginRegistry reg;
  ASSERT_TRUE(plugin_testing::load_plugin_file(reg, KILN_LAYOUT_SO, "layout"));
  auto g = ir::parse_graph(kCnn);
  ASSERT_TRUE(g.ok()) << g.status().message();
  PassManager pm(reg);
  PipelineOptions options;
  options.passes = {"layout"};
  options.target = lavapipe_like(KILN_STORAGE_MODE_AUTO);
  ASSERT_TRUE(pm.run(**g, options).ok());
  const auto& stats = pm.records()[0].statistics;
  EXPECT_EQ(stats.at("tensors-image"), 3);   // %c, %r, %p
  EXPECT_EQ(stats.at("tensors-buffer"), 6);  // the inputs, %f, %m and the output %s
  EXPECT_EQ(stats.at("graph-io-buffers"), 4);
  EXPECT_EQ(stats.at("packed-by-reduction"), 1);  // %r feeds a Conv along C
  EXPECT_EQ(stats.at("packed-by-producer"), 2);   // %c and %p: a Conv's channels
  EXPECT_EQ(stats.count("packed-default"), 0u);
  const std::string out = ir::print_graph(**g);
  EXPECT_NE(out.find("%r = Relu(%c) : f32[1,4,8,8] #{kiln.packed_axis = \"1\", kiln.storage = \"image\"}"),
            std::string::npos)
      << out;
}

// Forced buffer storage: the pass decides nothing.
TEST(LayoutShared, ForcedBufferAnnotatesNothing) {
  PluginRegistry reg;
  ASSERT_TRUE(reg.load_static(kiln_layout_plugin_query, "static:kiln.layout").ok());
  auto g = ir::parse_graph(kCnn);
  ASSERT_TRUE(g.ok()) << g.status().message();
  PassManager pm(reg);
  PipelineOptions options;
  options.passes = {"layout"};
  options.target = lavapipe_like(KILN_STORAGE_MODE_BUFFER);
  ASSERT_TRUE(pm.run(**g, options).ok());
  EXPECT_EQ(pm.records()[0].statistics.at("storage-forced-buffer"), 1);
  const std::string out = ir::print_graph(**g);
  EXPECT_EQ(out.find("kiln.storage"), std::string::npos) << out;
  EXPECT_EQ(out.find("kiln.packed_axis"), std::string::npos) << out;
}

}  // namespace
}  // namespace kiln::registry
