// End to end on the validated test device (validation layers on; a message
// fails the test): a graph the memplan-order pass reorders runs with the
// arena planned per signature, matches the reference executor, and reports
// memory numbers that hold together, at two shapes of one compiled model.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/ir/text.h"
#include "engine/registry/default_pipeline.h"
#include "engine/runtime/reference_executor.h"
#include "engine/runtime/vulkan/vulkan_model.h"
#include "platform/vulkan/vk_test_env.h"

namespace kiln::runtime {
namespace {

// Two branches over a dynamic length n: a wide one (Tile x8, then a
// reduction) and a narrow one kept to the join.
constexpr const char* kBranches = R"(graph @g opset 17 {
  input %x : f32[n]
  const %r8 : i64[1] = dense<[8]>
  const %r2 : i64[1] = dense<[2]>
  %a1 = Tile(%x, %r8) : f32[?]
  %b1 = Tile(%x, %r2) : f32[?]
  %a2 = ReduceSum(%a1) {keepdims = 1} : f32[1]
  %b2 = Relu(%b1) : f32[?]
  %y = Add(%a2, %b2) : f32[?]
  return %y
}
)";

class MemplanRuntimeTest : public vk::testing::VulkanTest {};

TEST_F(MemplanRuntimeTest, PlannedArenaRunsCorrectlyAndReports) {
  auto g = ir::parse_graph(kBranches);
  ASSERT_TRUE(g.ok()) << g.status().message();
  registry::PipelineSetup setup;
  setup.load_environment = false;
  auto records = registry::run_default_pipeline(**g, registry::PipelineOptions{}, setup);
  ASSERT_TRUE(records.ok()) << records.status().message();
  int64_t moved = 0;  // the last round's memplan-order: a2 runs before b1 now
  for (const registry::PassRecord& r : *records)
    if (r.name == "memplan-order") moved = r.statistics.count("nodes-moved") ? r.statistics.at("nodes-moved") : 0;
  EXPECT_GT(moved, 0);
  auto model = VulkanModel::compile(device(), *vk::testing::test_kernel_cache(), **g, VulkanModelOptions{});
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  ReferenceExecutor reference(**g);
  for (int64_t n : {1000, 37, 5000}) {
    Tensor x = Tensor::allocate(DType::kFloat32, {n}).value();
    for (int64_t i = 0; i < n; ++i) x.data<float>()[i] = static_cast<float>((i * 7) % 13 - 6) * 0.01f;
    auto want = reference.run({x});
    ASSERT_TRUE(want.ok()) << want.status().to_string();
    VulkanRunStats stats;
    auto got = (*model)->run({x}, &stats);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    ASSERT_EQ((*got)[0].shape(), (*want)[0].shape());
    for (int64_t i = 0; i < (*want)[0].numel(); ++i)
      ASSERT_NEAR((*got)[0].get_f64(i), (*want)[0].get_f64(i), 1e-3 * std::max(1.0, std::fabs((*want)[0].get_f64(i))));
    const VulkanRunStats::Memory& m = stats.memory;
    SCOPED_TRACE("n = " + std::to_string(n));
    EXPECT_GE(m.live_lower_bound, static_cast<uint64_t>(n) * 8 * 4);  // the wide Tile's output at least
    EXPECT_GE(m.arena_bytes, m.live_lower_bound);
    EXPECT_LE(static_cast<double>(m.arena_bytes), 1.05 * static_cast<double>(m.live_lower_bound));
    EXPECT_GE(m.best_fit_bytes, m.live_lower_bound);
    EXPECT_GE(m.no_reuse_bytes, m.arena_bytes);
  }
}

}  // namespace
}  // namespace kiln::runtime
