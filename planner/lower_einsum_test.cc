// Differential tests of the Einsum lowering (lower_einsum.cc) against the
// reference executor in every backend config (check_op): contractions,
// transposes, diagonals, full sums, implicit outputs, '...' broadcasting
// across ranks, size-1 label broadcasting, three operands, integers,
// symbolic dims; and a spirv-val check of the generated kernels.
#include <array>
#include <cstdio>
#include <fstream>
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
using testing::random_tensor;

class LowerEinsum : public vk::testing::VulkanTest {};

OpCheck einsum(const std::string& equation, const std::vector<Shape>& shapes, uint64_t seed) {
  OpCheck c;
  c.op = "Einsum";
  for (const Shape& s : shapes) c.inputs.push_back(random_tensor(s, seed++));
  c.attrs["equation"] = ir::Attribute::of_string(equation);
  c.min_dispatches = 1;
  return c;
}

TEST_F(LowerEinsum, EquationsOfEveryKind) {
  struct Case {
    std::string equation;
    std::vector<Shape> shapes;
  };
  const std::vector<Case> cases = {
      {"ij,jk->ik", {{5, 7}, {7, 3}}},                      // matmul, odd sizes
      {"bij,bjk->bik", {{3, 2, 5}, {3, 5, 6}}},             // batched matmul
      {"ij->ji", {{3, 5}}},                                 // transpose
      {"ij->", {{4, 9}}},                                   // full sum, rank-0 output
      {"i,i", {{13}, {13}}},                                // inner product, implicit output
      {"ii->i", {{6, 6}}},                                  // diagonal
      {"...ii->...i", {{3, 5, 5}}},                         // batch diagonal
      {"bii", {{2, 4, 4}}},                                 // implicit: diagonal summed -> [b]
      {"ji", {{3, 5}}},                                     // implicit output in label order: a transpose
      {"i,j->ij", {{5}, {6}}},                              // outer product
      {"...ij,...jk->...ik", {{2, 1, 3, 4}, {5, 4, 6}}},    // '...' broadcast across ranks
      {"ij,ij->ij", {{3, 1}, {3, 4}}},                      // size-1 label broadcast
      {"ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 5}}},           // three operands
      {"abcd->dcba", {{2, 3, 4, 5}}},                       // rank-4 permutation
      {"bhqd,bhkd->bhqk", {{1, 2, 3, 8}, {1, 2, 5, 8}}},   // attention scores
      {"...,...->...", {{2, 3}, {3}}},                      // '...' only: broadcasting product
  };
  uint64_t seed = 1;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.equation);
    EXPECT_TRUE(check_op(einsum(c.equation, c.shapes, seed)));
    seed += 10;
  }
}

TEST_F(LowerEinsum, ConstantOperandAndLongContraction) {
  OpCheck c = einsum("ik,jk->ij", {{3, 300}, {4, 300}}, 50);
  c.constant_inputs = {1};
  c.tol_f16 = 5e-2;  // 300-term sums of fp16 products
  EXPECT_TRUE(check_op(c));
}

TEST_F(LowerEinsum, IntegerOperands) {
  std::mt19937_64 rng(9);
  auto ints = [&](const Shape& s) {
    std::vector<int32_t> v(static_cast<size_t>(shape_numel(s)));
    for (int32_t& x : v) x = static_cast<int32_t>(rng() % 11) - 5;
    return Tensor::from_vector<int32_t>(s, v);
  };
  OpCheck c;
  c.op = "Einsum";
  // Over kHostInputMaxElements elements each: smaller integer graph inputs
  // live on the host and the node would run there.
  c.inputs = {ints({9, 10}), ints({10, 7})};
  c.min_dispatches = 1;
  c.attrs["equation"] = ir::Attribute::of_string("ij,jk->ik");
  c.tol_f32 = c.tol_f16 = 0;
  EXPECT_TRUE(check_op(c));
}

ir::Graph einsum_graph(const std::string& equation, const std::vector<ir::SymShape>& shapes) {
  ir::Graph g;
  std::vector<ir::ValueId> ins;
  for (size_t i = 0; i < shapes.size(); ++i)
    ins.push_back(g.add_input("in" + std::to_string(i), DType::kFloat32, shapes[i]));
  const ir::ValueId out = g.add_value("out", DType::kUndefined, ir::SymShape::unranked());
  const ir::NodeId n = g.add_node("Einsum", ins, {out}, {{"equation", ir::Attribute::of_string(equation)}});
  const Status finished = testing::finish_one_node_graph(g, n);
  EXPECT_TRUE(finished.ok()) << finished.to_string();
  return g;
}

// Symbolic dims (output axes, summed axes, '...' axes, a diagonal) are push
// constants: one compiled model runs two shapes.
TEST_F(LowerEinsum, SymbolicShapesOneModelTwoShapes) {
  const ir::Dim b = ir::Dim::symbol("b"), m = ir::Dim::symbol("m"), k = ir::Dim::symbol("k");
  struct Case {
    std::string name;
    ir::Graph graph;
  };
  std::vector<Case> cases;
  cases.push_back({"matmul", einsum_graph("...mk,kn->...mn", {ir::SymShape({b, m, k}), ir::SymShape({k, ir::Dim(3)})})});
  cases.push_back({"diag", einsum_graph("bkk->b", {ir::SymShape({b, k, k})})});
  for (const Case& c : cases) {
    runtime::ReferenceExecutor reference(c.graph);
    for (Storage storage : {Storage::kBuffer, Storage::kImage}) {
      runtime::VulkanModelOptions options;
      options.plan.storage = storage;
      auto model = runtime::VulkanModel::compile(device(), *vk::testing::test_kernel_cache(), c.graph, options);
      ASSERT_TRUE(model.ok()) << c.name << ": " << model.status().to_string();
      EXPECT_EQ((*model)->plan().fallback_count(), 0u) << c.name;
      for (auto [bv, mv, kv] : std::vector<std::array<int64_t, 3>>{{1, 2, 5}, {3, 7, 11}}) {
        SCOPED_TRACE(c.name + " " + storage_name(storage) + " b=" + std::to_string(bv) + " m=" + std::to_string(mv) +
                     " k=" + std::to_string(kv));
        std::vector<Tensor> inputs;
        if (c.name == "matmul") inputs = {random_tensor({bv, mv, kv}, 1), random_tensor({kv, 3}, 2)};
        else inputs = {random_tensor({bv, kv, kv}, 3)};
        auto want = reference.run(inputs);
        auto got = (*model)->run(inputs);
        ASSERT_TRUE(want.ok()) << want.status().to_string();
        ASSERT_TRUE(got.ok()) << got.status().to_string();
        ASSERT_EQ((*want)[0].shape(), (*got)[0].shape());
        for (int64_t i = 0; i < (*want)[0].numel(); ++i)
          ASSERT_NEAR((*want)[0].get_f64(i), (*got)[0].get_f64(i), 1e-4) << "element " << i;
      }
    }
  }
}


TEST(LowerEinsumSpirv, GeneratedKernelsValidate) {
  const ir::Dim b = ir::Dim::symbol("b"), k = ir::Dim::symbol("k");
  struct G {
    std::string name;
    ir::Graph graph;
  };
  std::vector<G> graphs;
  graphs.push_back({"matmul", einsum_graph("...mk,kn->...mn", {ir::SymShape({b, ir::Dim(4), k}),
                                                               ir::SymShape({k, ir::Dim(3)})})});
  graphs.push_back({"diag", einsum_graph("...ii->...i", {ir::SymShape({b, k, k})})});
  graphs.push_back({"sum", einsum_graph("ij->", {ir::SymShape({b, k})})});
  for (const G& g : graphs) expect_plan_kernels_valid(g.graph, g.name);
}

}  // namespace
}  // namespace kiln::planner
