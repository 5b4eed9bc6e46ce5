// In-place writes (planner/inplace.h) on the validated device (validation
// and synchronization validation on): outputs match the reference executor
// at several shape signatures and across a dynamic-shape boundary, and the
// arena shrinks where an in-place write sits at the peak.
#include <gtest/gtest.h>

#include "engine/ops/shape_inference.h"
#include "engine/runtime/reference_executor.h"
#include "engine/runtime/vulkan/vulkan_model.h"
#include "engine/runtime/vulkan/vulkan_model_test_fixture.h"

namespace kiln::runtime {
namespace {

using planner::TensorId;

class VulkanInplaceTest : public testing::VulkanModelTest {
 protected:
  StatusOr<std::unique_ptr<VulkanModel>> compile_inplace(const ir::Graph& g, bool inplace) {
    options_.plan.inplace = inplace;
    return compile(g, planner::Storage::kBuffer);
  }
};

Tensor ramp(const Shape& shape, float scale) {
  Tensor t = Tensor::allocate(DType::kFloat32, shape).value();
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = scale * static_cast<float>(i % 7 - 3);
  return t;
}

TensorId inplace_of(const VulkanModel& model, const ir::Graph& g, const char* name) {
  for (const auto& [v, t] : model.plan().value_tensor)
    if (g.value(v).name == name) return model.plan().tensors[static_cast<size_t>(t)].inplace_of;
  ADD_FAILURE() << "no tensor for " << name;
  return planner::kNoTensor;
}

TensorId tensor_named(const VulkanModel& model, const ir::Graph& g, const char* name) {
  for (const auto& [v, t] : model.plan().value_tensor)
    if (g.value(v).name == name) return t;
  return planner::kNoTensor;
}

void expect_matches(const ReferenceExecutor& reference, VulkanModel& model, const std::vector<Tensor>& in,
                    VulkanRunStats* stats = nullptr) {
  auto want = reference.run(in);
  ASSERT_TRUE(want.ok()) << want.status().to_string();
  auto got = model.run(in, stats);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  ASSERT_EQ(want->size(), got->size());
  for (size_t j = 0; j < want->size(); ++j) {
    ASSERT_EQ((*want)[j].shape(), (*got)[j].shape()) << "output " << j;
    for (int64_t i = 0; i < (*want)[j].numel(); ++i)
      ASSERT_NEAR((*want)[j].get_f64(i), (*got)[j].get_f64(i), 1e-5) << "output " << j << " element " << i;
  }
}

// x [2, n]; z = Exp(x); b = Tanh(z); r = Sigmoid(z); d = b + r; e = d * z;
// y = -e. Without in-place, z, b, r and d are live at the Add (the peak);
// with it d is written over b and e over d.
TEST_F(VulkanInplaceTest, ElementwiseChainMatchesReferenceAtEveryShapeWithASmallerArena) {
  ir::Graph g;
  const ir::SymShape s({ir::Dim(2), ir::Dim::symbol("n")});
  const ir::ValueId x = g.add_input("x", DType::kFloat32, s);
  auto value = [&](const char* name) { return g.add_value(name, DType::kFloat32, s); };
  const ir::ValueId z = value("z"), b = value("b"), r = value("r"), d = value("d"), e = value("e"), y = value("y");
  g.add_node("Exp", {x}, {z});
  g.add_node("Tanh", {z}, {b});
  g.add_node("Sigmoid", {z}, {r});
  g.add_node("Add", {b, r}, {d});
  g.add_node("Mul", {d, z}, {e});
  g.add_node("Neg", {e}, {y});
  g.add_output(y);
  ASSERT_TRUE(ops::infer_graph_shapes(g).ok());
  ReferenceExecutor reference(g);
  auto on = compile_inplace(g, true);
  ASSERT_TRUE(on.ok()) << on.status().to_string();
  auto off = compile_inplace(g, false);
  ASSERT_TRUE(off.ok()) << off.status().to_string();
  EXPECT_EQ(inplace_of(**on, g, "d"), tensor_named(**on, g, "b"));
  EXPECT_EQ(inplace_of(**on, g, "e"), tensor_named(**on, g, "d"));
  EXPECT_EQ(inplace_of(**off, g, "d"), planner::kNoTensor);
  // Two signatures, then the first again (its recorded commands reused).
  for (int64_t n : {5, 33, 5, 1000}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    const std::vector<Tensor> in = {ramp({2, n}, 0.3f)};
    VulkanRunStats with, without;
    ASSERT_NO_FATAL_FAILURE(expect_matches(reference, **on, in, &with));
    ASSERT_NO_FATAL_FAILURE(expect_matches(reference, **off, in, &without));
    // Four blocks of 2n floats at the peak without, three with.
    EXPECT_LT(with.memory.live_lower_bound, without.memory.live_lower_bound);
    EXPECT_LT(with.memory.arena_bytes, without.memory.arena_bytes);
  }
}

// a = Exp(x); nz = NonZero(a > 1.5) (a host step: a dynamic-shape boundary);
// then p = Relu(a - 2) and q = Sigmoid(p), written over a in the
// continuation while a lives in the first signature's memory; y = -q.
TEST_F(VulkanInplaceTest, InplaceAcrossADynamicShapeBoundary) {
  ir::Graph g;
  const ir::SymShape s = ir::SymShape::from_concrete({2, 12});
  const ir::ValueId x = g.add_input("x", DType::kFloat32, s);
  auto value = [&](const char* name) { return g.add_value(name, DType::kFloat32, s); };
  const ir::ValueId a = value("a"), m = value("m"), p = value("p"), q = value("q"), y = value("y");
  const ir::ValueId gt = g.add_value("gt", DType::kBool, s);
  const ir::ValueId nz = g.add_value("nz", DType::kInt64, ir::SymShape({ir::Dim(2), ir::Dim::unknown()}));
  g.add_node("Exp", {x}, {a});
  g.add_node("Greater", {a, g.add_constant("t", Tensor::scalar_f32(1.5f))}, {gt});
  g.add_node("NonZero", {gt}, {nz});
  g.add_node("Sub", {a, g.add_constant("two", Tensor::scalar_f32(2.0f))}, {m});
  g.add_node("Relu", {m}, {p});
  g.add_node("Sigmoid", {p}, {q});
  g.add_node("Neg", {q}, {y});
  g.add_output(nz);
  g.add_output(y);
  ASSERT_TRUE(ops::infer_graph_shapes(g).ok());
  ReferenceExecutor reference(g);
  auto model = compile_inplace(g, true);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  ASSERT_EQ((*model)->plan().fallback_count(), 1u);
  EXPECT_EQ(inplace_of(**model, g, "m"), tensor_named(**model, g, "a"));
  EXPECT_EQ(inplace_of(**model, g, "p"), tensor_named(**model, g, "m"));
  EXPECT_EQ(inplace_of(**model, g, "q"), tensor_named(**model, g, "p"));
  for (float scale : {0.3f, 0.05f, 0.3f, 0.6f}) {
    SCOPED_TRACE("scale " + std::to_string(scale));
    ASSERT_NO_FATAL_FAILURE(expect_matches(reference, **model, {ramp({2, 12}, scale)}));
  }
}

}  // namespace
}  // namespace kiln::runtime
