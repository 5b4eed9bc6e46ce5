// Run slots of one VulkanModel (VulkanModelOptions::concurrent_runs) on a
// GEMM whose split-K fix-up keeps model state: per-tile arrival counters,
// zero between dispatches, written by every run. Each slot has counters of
// its own (a state arena beside the shared weights), so two runs in flight
// at once never count into each other's tiles. Two submissions wait on a
// host timeline semaphore, are both pending, and after the signal each
// gives the reference executor's result and, bit for bit, what a run of
// its input alone gives.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/runtime/reference_executor.h"
#include "engine/runtime/vulkan/vulkan_model.h"
#include "planner/plan_hints.h"
#include "platform/vulkan/vk_test_env.h"

namespace kiln::runtime {
namespace {

constexpr int64_t kM = 40, kK = 600, kN = 30;

// y = x[40,600] @ w[600,30], split in 4 slices of K with the fused fix-up.
ir::Graph split_k_graph() {
  ir::Graph g;
  const ir::ValueId x = g.add_input("x", DType::kFloat32, ir::SymShape::from_concrete({kM, kK}));
  Tensor w = Tensor::allocate(DType::kFloat32, {kK, kN}).value();
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = 0.01f * static_cast<float>((i * 7) % 13 - 6);
  const ir::ValueId y = g.add_value("y", DType::kFloat32, ir::SymShape::from_concrete({kM, kN}));
  const ir::NodeId mm = g.add_node("MatMul", {x, g.add_constant("w", std::move(w))}, {y}, {}, "mm");
  g.node(mm).annotations[planner::kKernelKey] = "split_k=4,splitk_reduce=fused";
  g.add_output(y);
  return g;
}

Tensor input(float shift) {
  Tensor x = Tensor::allocate(DType::kFloat32, {kM, kK}).value();
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 0.05f * static_cast<float>(i % 11 - 5) + shift;
  return x;
}

class VulkanRunSlotsTest : public vk::testing::VulkanTest {
 protected:
  void TearDown() override {
    if (gate_ != VK_NULL_HANDLE) device().fn().vkDestroySemaphore(device().handle(), gate_, nullptr);
    VulkanTest::TearDown();
  }
  VkSemaphore gate_ = VK_NULL_HANDLE;
};

TEST_F(VulkanRunSlotsTest, EachSlotHasItsOwnModelState) {
  ASSERT_TRUE(device().enabled().timeline_semaphore) << "the test device has no timeline semaphores";
  const ir::Graph g = split_k_graph();
  VulkanModelOptions one_slot, two_slots;
  two_slots.concurrent_runs = 2;
  auto single = VulkanModel::compile(device(), *vk::testing::test_kernel_cache(), g, one_slot);
  ASSERT_TRUE(single.ok()) << single.status().to_string();
  auto model = VulkanModel::compile(device(), *vk::testing::test_kernel_cache(), g, two_slots);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const auto& plan = (*model)->plan();
  ASSERT_GT((*model)->compile_stats().state_bytes, 0u) << "no split-K counters: the test would test nothing";
  bool fixup = false;
  for (const planner::PlanStep& step : plan.steps) fixup = fixup || step.kernel.name.find("splitk_fixup") != std::string::npos;
  ASSERT_TRUE(fixup);
  // The second slot's counters are memory of its own; the weights are shared.
  const DeviceMemoryUse before_one = (*single)->memory(), before_two = (*model)->memory();
  EXPECT_EQ(before_two.run_slots, 2u);
  EXPECT_GT(before_two.weights, before_one.weights);
  EXPECT_LT(before_two.weights, 2 * before_one.weights);

  const std::vector<Tensor> xs = {input(0.0f), input(0.3f)};
  std::vector<Tensor> alone, reference;
  for (const Tensor& x : xs) {
    auto y = (*single)->run({x});
    ASSERT_TRUE(y.ok()) << y.status().to_string();
    alone.push_back((*y)[0]);
    auto r = ReferenceExecutor(g).run({x});
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    reference.push_back((*r)[0]);
  }

  VkSemaphoreTypeCreateInfo type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
  type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  VkSemaphoreCreateInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
  info.pNext = &type;
  ASSERT_EQ(device().fn().vkCreateSemaphore(device().handle(), &info, nullptr, &gate_), VK_SUCCESS);
  vk::SubmitSync sync;
  sync.waits.push_back({gate_, 1, 0});
  std::vector<uint64_t> tickets;
  for (const Tensor& x : xs) {
    auto ticket = (*model)->submit({x}, {}, sync);
    ASSERT_TRUE(ticket.ok()) << ticket.status().to_string();
    tickets.push_back(*ticket);
  }
  for (uint64_t ticket : tickets) {
    auto done = (*model)->poll(ticket);
    ASSERT_TRUE(done.ok()) << done.status().to_string();
    EXPECT_FALSE(*done) << "ticket " << ticket << " ran before the gate opened";
  }
  VkSemaphoreSignalInfo signal{VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO};
  signal.semaphore = gate_;
  signal.value = 1;
  ASSERT_EQ(device().fn().vkSignalSemaphore(device().handle(), &signal), VK_SUCCESS);
  for (size_t i = 0; i < tickets.size(); ++i) {
    SCOPED_TRACE(i);
    auto y = (*model)->wait(tickets[i], UINT64_MAX);
    ASSERT_TRUE(y.ok()) << y.status().to_string();
    const Tensor& got = (*y)[0];
    ASSERT_EQ(got.shape(), alone[i].shape());
    for (int64_t e = 0; e < got.numel(); ++e) {
      ASSERT_EQ(got.get_f64(e), alone[i].get_f64(e)) << "element " << e;
      ASSERT_NEAR(got.get_f64(e), reference[i].get_f64(e), 1e-4 + 1e-4 * std::fabs(reference[i].get_f64(e)));
    }
  }
  // Both slots ran: each holds one run's activations and staging.
  const DeviceMemoryUse after = (*model)->memory();
  const uint64_t second_state = after.weights - before_one.weights;  // in per_run too: the second slot's own
  EXPECT_EQ(after.activations + after.staging, 2 * (after.per_run - second_state));
}

}  // namespace
}  // namespace kiln::runtime
