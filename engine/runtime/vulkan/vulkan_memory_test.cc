// VulkanModel's activation memory across input-shape signatures
// (vulkan_model_memory.cc): one memory holds the largest plan seen, not an
// arena per shape; signatures that alternate in it keep their per-signature
// state (host values kernels bind, image layouts); the signature cache is
// bounded. Every run is compared with the reference executor.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/runtime/reference_executor.h"
#include "engine/runtime/vulkan/vulkan_model.h"
#include "engine/runtime/vulkan/vulkan_model_test_fixture.h"

namespace kiln::runtime {
namespace {

using VulkanMemoryTest = testing::VulkanModelTest;

// y = Sigmoid(Relu(x) + x) ([n, 8]); picked = Gather(y, idx + 1, axis 1)
// with idx a small int64 input: idx + 1 is computed on the host (shape-like
// arithmetic) and bound by the Gather kernel, so it is written into the
// activation memory once per signature, not every run as inputs are.
ir::Graph gather_graph() {
  ir::Graph g;
  const ir::Dim n = ir::Dim::symbol("n");
  ir::ValueId x = g.add_input("x", DType::kFloat32, ir::SymShape({n, ir::Dim(8)}));
  ir::ValueId idx = g.add_input("idx", DType::kInt64, ir::SymShape::from_concrete({2}));
  ir::ValueId r = g.add_value("r", DType::kFloat32, ir::SymShape({n, ir::Dim(8)}));
  ir::ValueId s = g.add_value("s", DType::kFloat32, ir::SymShape({n, ir::Dim(8)}));
  ir::ValueId y = g.add_value("y", DType::kFloat32, ir::SymShape({n, ir::Dim(8)}));
  ir::ValueId picked = g.add_value("picked", DType::kFloat32, ir::SymShape({n, ir::Dim(2)}));
  g.add_node("Relu", {x}, {r}, {}, "relu");
  g.add_node("Add", {r, x}, {s}, {}, "add");
  g.add_node("Sigmoid", {s}, {y}, {}, "sigmoid");
  ir::ValueId idx1 = g.add_value("idx1", DType::kInt64, ir::SymShape::from_concrete({2}));
  g.add_node("Add", {idx, g.add_constant("one", Tensor::scalar_i64(1))}, {idx1}, {}, "plus_one");
  g.add_node("Gather", {y, idx1}, {picked}, {{"axis", ir::Attribute::of_int(1)}}, "gather");
  g.add_output(picked);
  return g;
}

std::vector<Tensor> inputs(int64_t n, int64_t i0, int64_t i1) {
  Tensor x = Tensor::allocate(DType::kFloat32, {n, 8}).value();
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 0.01f * static_cast<float>((i * 7) % 101) - 0.4f;
  return {x, Tensor::from_vector<int64_t>({2}, {i0, i1})};
}

// Runs `cases` in order on `model`, each compared with the reference.
std::vector<VulkanRunStats> run_all(const ir::Graph& g, VulkanModel& model,
                                    const std::vector<std::vector<Tensor>>& cases) {
  ReferenceExecutor reference(g);
  std::vector<VulkanRunStats> all;
  for (size_t r = 0; r < cases.size(); ++r) {
    const std::string what = "run " + std::to_string(r);
    VulkanRunStats stats;
    auto got = model.run(cases[r], &stats);
    EXPECT_TRUE(got.ok()) << what << ": " << got.status().to_string();
    if (!got.ok()) return all;
    const std::vector<Tensor> want = reference.run(cases[r]).value();
    EXPECT_EQ(want.size(), got->size()) << what;
    for (size_t j = 0; j < std::min(want.size(), got->size()); ++j) {
      EXPECT_EQ(want[j].shape(), (*got)[j].shape()) << what;
      if (want[j].shape() != (*got)[j].shape()) continue;
      for (int64_t i = 0; i < want[j].numel(); ++i)
        EXPECT_NEAR(want[j].get_f64(i), (*got)[j].get_f64(i), 1e-5) << what << " element " << i;
    }
    EXPECT_EQ(stats.shader_compiles, 0u) << what;
    all.push_back(stats);
  }
  return all;
}

TEST_F(VulkanMemoryTest, ShapesShareOneActivationMemory) {
  const ir::Graph g = gather_graph();
  for_each_storage(g, [&](VulkanModel& model) {
    const std::vector<VulkanRunStats> s =
        run_all(g, model, {inputs(4, 0, 6), inputs(5000, 0, 6), inputs(16, 0, 6), inputs(4, 0, 6), inputs(5000, 0, 6)});
    ASSERT_EQ(s.size(), 5u);
    // The memory grows to the largest plan (5000 rows) and then serves the
    // smaller shapes too: not one arena per shape.
    EXPECT_LT(s[0].activation_bytes, s[1].activation_bytes);
    for (size_t r = 1; r < 5; ++r) EXPECT_EQ(s[r].activation_bytes, s[1].activation_bytes) << "run " << r;
    uint64_t largest = 0;
    for (const VulkanRunStats& r : s) {
      EXPECT_GE(r.activation_bytes, r.memory.arena_bytes);
      largest = std::max(largest, r.memory.arena_bytes);
    }
    EXPECT_LE(s[4].activation_bytes, largest + largest / 8 + (64u << 10) + 256);
    EXPECT_EQ(s[4].device_bytes, s[3].device_bytes) << "a shape seen before holds nothing new";
    // Growing dropped the 4-row signature (bound to the smaller memory): it
    // records again, compiling nothing; the 5000-row one is still there.
    EXPECT_TRUE(s[3].recorded);
    EXPECT_FALSE(s[4].recorded);
    EXPECT_EQ(s[4].signatures, 3u);
  });
}

TEST_F(VulkanMemoryTest, AlternatingSignaturesKeepTheirHostValues) {
  // Same shapes, different index values: two signatures whose tensors lie
  // at the same offsets of the shared memory; each run of one overwrites
  // the other's index tensor, which must be written again before it runs.
  const ir::Graph g = gather_graph();
  for_each_storage(g, [&](VulkanModel& model) {
    const std::vector<VulkanRunStats> s = run_all(
        g, model, {inputs(32, 0, 6), inputs(32, 5, 2), inputs(32, 0, 6), inputs(32, 5, 2), inputs(32, 0, 6)});
    ASSERT_EQ(s.size(), 5u);
    for (size_t r = 2; r < 5; ++r) EXPECT_FALSE(s[r].recorded) << "run " << r;
  });
}

TEST_F(VulkanMemoryTest, NewShapesEvaluateAnEarlierPlan) {
  // Every size here grows with n: the plan made for 32 rows, evaluated at
  // 40 and 48 rows, stays at their live-set bound, so nothing is planned
  // again; every run is within 1.05x of its bound either way.
  const ir::Graph g = gather_graph();
  for_each_storage(g, [&](VulkanModel& model) {
    const std::vector<VulkanRunStats> s = run_all(g, model, {inputs(32, 0, 6), inputs(40, 0, 6), inputs(48, 0, 6)});
    ASSERT_EQ(s.size(), 3u);
    EXPECT_NE(s[0].memory.strategy, "earlier plan evaluated");
    EXPECT_EQ(s[1].memory.strategy, "earlier plan evaluated");
    EXPECT_EQ(s[2].memory.strategy, "earlier plan evaluated");
    for (const VulkanRunStats& r : s) {
      EXPECT_FALSE(r.memory.strategy.empty());
      EXPECT_LE(static_cast<double>(r.memory.arena_bytes), 1.05 * static_cast<double>(r.memory.live_lower_bound));
    }
  });
}

TEST_F(VulkanMemoryTest, LeastRecentlyRunSignatureIsDropped) {
  options_.max_signatures = 2;
  const ir::Graph g = gather_graph();
  auto model = compile(g, planner::Storage::kBuffer);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  // 6 and 5 rows fit in the memory made for 7 (no growth drops anything).
  const std::vector<VulkanRunStats> s =
      run_all(g, **model, {inputs(7, 1, 2), inputs(6, 1, 2), inputs(7, 1, 2), inputs(5, 1, 2), inputs(7, 1, 2),
                           inputs(6, 1, 2)});
  ASSERT_EQ(s.size(), 6u);
  const bool recorded[] = {true, true, false, true, false, true};
  for (size_t r = 0; r < 6; ++r) {
    EXPECT_EQ(s[r].recorded, recorded[r]) << "run " << r;
    EXPECT_LE(s[r].signatures, 2u) << "run " << r;
  }
}

}  // namespace
}  // namespace kiln::runtime
