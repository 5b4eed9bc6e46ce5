// Differential tests of the TopK lowering (lower_topk.cc) against the
// reference executor in every backend config (check_op): axes, largest and
// smallest, ties, NaN, K from an initializer and from a graph input (a
// run-time value), K = 0 and K = n, integer inputs, symbolic dims; and a
// spirv-val check of every kernel variant.
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "engine/runtime/reference_executor.h"
#include "engine/runtime/vulkan/vulkan_model.h"
#include "planner/execution_plan.h"
#include "planner/glsl_codegen.h"
#include "planner/testing/op_check.h"
#include "platform/vulkan/shader_compiler.h"
#include "platform/vulkan/vk_test_env.h"

namespace kiln::planner {
namespace {

using testing::check_op;
using testing::expect_plan_kernels_valid;
using testing::OpCheck;

class LowerTopK : public vk::testing::VulkanTest {};

ir::Attribute i_attr(int64_t v) { return ir::Attribute::of_int(v); }

// Small integers as floats: exact in fp16 and full of ties, so the
// lower-index-first rule decides many positions on every config.
Tensor small_ints(const Shape& shape, uint64_t seed, int lo = -6, int hi = 6) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (float& x : v) x = static_cast<float>(dist(rng));
  return Tensor::from_vector<float>(shape, v);
}

// Distinct values k/8 in shuffled order (exact in fp16): no ties at all.
Tensor distinct(const Shape& shape, uint64_t seed) {
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = (static_cast<float>(i) - static_cast<float>(v.size()) / 2) / 8.0f;
  std::mt19937_64 rng(seed);
  std::shuffle(v.begin(), v.end(), rng);
  return Tensor::from_vector<float>(shape, v);
}

OpCheck topk(Tensor x, int64_t k, int64_t axis, int64_t largest, bool k_constant) {
  OpCheck c;
  c.op = "TopK";
  c.inputs = {std::move(x), Tensor::from_vector<int64_t>({1}, {k})};
  if (k_constant) c.constant_inputs = {1};
  c.attrs = {{"axis", i_attr(axis)}, {"largest", i_attr(largest)}, {"sorted", i_attr(1)}};
  c.num_outputs = 2;
  c.tol_f32 = c.tol_f16 = 0;  // values are selected, never computed
  c.min_dispatches = 2;       // rank + gather on the device
  return c;
}

TEST_F(LowerTopK, AxesLargestSmallestWithTies) {
  struct Case {
    Shape shape;
    int64_t k, axis;
  };
  const Case cases[] = {
      {{3, 7}, 3, -1}, {{2, 9, 3}, 4, 1}, {{13}, 13, 0}, {{2, 3, 5, 6}, 2, -3}, {{1, 70}, 17, 1},
  };
  uint64_t seed = 1;
  for (const Case& c : cases)
    for (int64_t largest : {1, 0}) {
      // K from an initializer with largest, from a graph input (a run-time value) with smallest.
      const bool k_constant = largest == 1;
      SCOPED_TRACE("rank " + std::to_string(c.shape.size()) + " k " + std::to_string(c.k) + " axis " +
                   std::to_string(c.axis) + " largest " + std::to_string(largest));
      EXPECT_TRUE(check_op(topk(small_ints(c.shape, seed++), c.k, c.axis, largest, k_constant)));
    }
}

TEST_F(LowerTopK, DistinctValuesAndKZero) {
  EXPECT_TRUE(check_op(topk(distinct({4, 33}, 7), 10, 1, 1, true)));
  EXPECT_TRUE(check_op(topk(distinct({4, 33}, 8), 3, 0, 0, false)));
  EXPECT_TRUE(check_op(topk(distinct({3, 4}, 9), 0, 1, 1, true)));
}

TEST_F(LowerTopK, NaNFirstWhenLargestLastWhenSmallest) {
  Tensor x = small_ints({3, 8}, 21);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t i : {1, 5, 9, 10, 23}) x.data<float>()[i] = nan;
  x.data<float>()[14] = std::numeric_limits<float>::infinity();
  x.data<float>()[15] = -std::numeric_limits<float>::infinity();
  for (int64_t largest : {1, 0}) {
    SCOPED_TRACE("largest " + std::to_string(largest));
    EXPECT_TRUE(check_op(topk(x, 4, 1, largest, true)));
  }
}

// Integer graph inputs of up to kHostInputMaxElements elements live on the
// host (shape-like values) and the node would run there: 100 elements.
TEST_F(LowerTopK, IntegerInput) {
  std::vector<int32_t> v(100);
  std::mt19937_64 rng(5);
  for (int32_t& x : v) x = static_cast<int32_t>(rng() % 9) - 4;
  for (int64_t largest : {1, 0}) {
    OpCheck c = topk(Tensor::from_vector<int32_t>({5, 20}, v), 5, -1, largest, true);
    c.min_dispatches = 2;
    EXPECT_TRUE(check_op(c)) << "largest " << largest;
  }
}

// A one-node TopK graph; X's shape may be symbolic, K is a graph input.
ir::Graph topk_graph(const ir::SymShape& x_shape, int64_t axis, int64_t largest) {
  ir::Graph g;
  const ir::ValueId x = g.add_input("x", DType::kFloat32, x_shape);
  const ir::ValueId k = g.add_input("k", DType::kInt64, ir::SymShape::from_concrete({1}));
  const ir::ValueId values = g.add_value("values", DType::kUndefined, ir::SymShape::unranked());
  const ir::ValueId indices = g.add_value("indices", DType::kUndefined, ir::SymShape::unranked());
  const ir::NodeId n = g.add_node("TopK", {x, k}, {values, indices}, {{"axis", i_attr(axis)}, {"largest", i_attr(largest)}});
  const Status finished = testing::finish_one_node_graph(g, n);
  EXPECT_TRUE(finished.ok()) << finished.to_string();
  return g;
}

// TopK of X [9] with K = 3 from an initializer whose Values output is
// omitted: the indices still need the rank kernel, the gather is skipped.
ir::Graph topk_indices_only_graph() {
  ir::Graph g;
  const ir::ValueId x = g.add_input("x", DType::kFloat32, ir::SymShape::from_concrete({9}));
  const ir::ValueId k = g.add_constant("k", Tensor::from_vector<int64_t>({1}, {3}));
  const ir::ValueId indices = g.add_value("indices", DType::kInt64, ir::SymShape::from_concrete({3}));
  g.add_node("TopK", {x, k}, {ir::kNoValue, indices}, {{"axis", i_attr(0)}});
  g.add_output(indices);
  return g;
}

// Symbolic dims and a run-time K reach the kernels as push constants: one
// compiled model runs several shapes and K values.
TEST_F(LowerTopK, SymbolicShapesAndRuntimeKOneModel) {
  const ir::Dim n = ir::Dim::symbol("n"), m = ir::Dim::symbol("m");
  const ir::Graph g = topk_graph(ir::SymShape({n, ir::Dim(3), m}), -1, 1);
  runtime::ReferenceExecutor reference(g);
  for (Storage storage : {Storage::kBuffer, Storage::kImage}) {
    runtime::VulkanModelOptions options;
    options.plan.storage = storage;
    auto model = runtime::VulkanModel::compile(device(), *vk::testing::test_kernel_cache(), g, options);
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    EXPECT_EQ((*model)->plan().fallback_count(), 0u);
    for (auto [nv, mv, kv] : std::vector<std::array<int64_t, 3>>{{1, 5, 2}, {2, 19, 19}, {3, 40, 7}}) {
      SCOPED_TRACE(std::string(storage_name(storage)) + " n=" + std::to_string(nv) + " m=" + std::to_string(mv) +
                   " k=" + std::to_string(kv));
      const std::vector<Tensor> inputs = {small_ints({nv, 3, mv}, static_cast<uint64_t>(mv)),
                                          Tensor::from_vector<int64_t>({1}, {kv})};
      auto want = reference.run(inputs);
      auto got = (*model)->run(inputs);
      ASSERT_TRUE(want.ok()) << want.status().to_string();
      ASSERT_TRUE(got.ok()) << got.status().to_string();
      ASSERT_EQ(want->size(), got->size());
      for (size_t o = 0; o < want->size(); ++o) {
        ASSERT_EQ((*want)[o].shape(), (*got)[o].shape()) << "output " << o;
        for (int64_t i = 0; i < (*want)[o].numel(); ++i)
          ASSERT_EQ((*want)[o].get_f64(i), (*got)[o].get_f64(i)) << "output " << o << " element " << i;
      }
    }
  }
}

TEST_F(LowerTopK, OmittedValuesOutput) {
  const ir::Graph g = topk_indices_only_graph();
  runtime::ReferenceExecutor reference(g);
  for (Storage storage : {Storage::kBuffer, Storage::kImage}) {
    runtime::VulkanModelOptions options;
    options.plan.storage = storage;
    auto model = runtime::VulkanModel::compile(device(), *vk::testing::test_kernel_cache(), g, options);
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    EXPECT_EQ((*model)->plan().fallback_count(), 0u);
    const std::vector<Tensor> inputs = {small_ints({9}, 3)};
    auto want = reference.run(inputs);
    auto got = (*model)->run(inputs);
    ASSERT_TRUE(want.ok()) << want.status().to_string();
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    ASSERT_EQ((*want)[0].shape(), (*got)[0].shape());
    for (int64_t i = 0; i < (*want)[0].numel(); ++i) EXPECT_EQ((*want)[0].get_i64(i), (*got)[0].get_i64(i)) << i;
  }
}


TEST(LowerTopKSpirv, EveryVariantValidates) {
  const ir::Dim n = ir::Dim::symbol("n");
  struct G {
    std::string name;
    ir::Graph graph;
  };
  std::vector<G> graphs;
  graphs.push_back({"largest", topk_graph(ir::SymShape({n, ir::Dim(6), ir::Dim(5), ir::Dim(7)}), 1, 1)});
  graphs.push_back({"smallest", topk_graph(ir::SymShape({ir::Dim(4), n}), -1, 0)});
  graphs.push_back({"indices", topk_indices_only_graph()});
  for (const G& g : graphs)
    for (size_t dispatches : expect_plan_kernels_valid(g.graph, g.name))
      EXPECT_EQ(dispatches, g.name == "indices" ? 1u : 2u) << g.name;
}

}  // namespace
}  // namespace kiln::planner
