// Differential tests of the LSTM/GRU/RNN lowering (lower_recurrent.cc)
// against the reference executor in every backend config, with the dispatch
// count that shows the recurrence is unrolled on the device (projection,
// init, one step kernel per time step — two for GRU without
// linear_before_reset — and one kernel per output), and the host fallback of
// a sequence length unknown at plan time. The full attribute matrix is
// covered by tests/built_models.
#include <random>
#include <string>
#include <vector>

#include "planner/execution_plan.h"
#include "planner/testing/op_check.h"
#include "platform/vulkan/vk_test_env.h"

namespace kiln::planner {
namespace {

using testing::check_op;
using testing::OpCheck;

class LowerRecurrent : public vk::testing::VulkanTest {};

Tensor random(const Shape& shape, uint64_t seed, float scale = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (float& x : v) x = dist(rng);
  return Tensor::from_vector<float>(shape, v);
}

TEST_F(LowerRecurrent, LstmBidirectionalWithEverything) {
  const int64_t T = 4, B = 3, I = 5, H = 4, D = 2;
  OpCheck c;
  c.op = "LSTM";
  c.inputs = {random({T, B, I}, 1),
              random({D, 4 * H, I}, 2, 0.5f),
              random({D, 4 * H, H}, 3, 0.5f),
              random({D, 8 * H}, 4, 0.3f),
              Tensor::from_vector<int32_t>({B}, {4, 2, 1}),
              random({D, B, H}, 5),
              random({D, B, H}, 6),
              random({D, 3 * H}, 7, 0.5f)};
  c.constant_inputs = {1, 2, 3, 7};
  c.attrs = {{"hidden_size", ir::Attribute::of_int(H)},
             {"direction", ir::Attribute::of_string("bidirectional")},
             {"clip", ir::Attribute::of_float(0.8f)}};
  c.num_outputs = 3;
  c.runs = 2;
  c.min_dispatches = c.max_dispatches = 2 + T + 3;
  c.expect_kernel = "lstm_step";
  EXPECT_TRUE(check_op(c));
}

TEST_F(LowerRecurrent, GruResetBeforeLinearLayout1) {
  const int64_t T = 3, B = 2, I = 3, H = 5;
  OpCheck c;
  c.op = "GRU";
  c.inputs = {random({B, T, I}, 11), random({1, 3 * H, I}, 12, 0.5f), random({1, 3 * H, H}, 13, 0.5f),
              random({1, 6 * H}, 14, 0.3f)};
  c.constant_inputs = {1, 2, 3};
  c.attrs = {{"hidden_size", ir::Attribute::of_int(H)},
             {"layout", ir::Attribute::of_int(1)},
             {"direction", ir::Attribute::of_string("reverse")}};
  c.num_outputs = 2;
  c.min_dispatches = c.max_dispatches = 2 + 2 * T + 2;
  c.expect_kernel = "gru_reset";
  EXPECT_TRUE(check_op(c));
}

TEST_F(LowerRecurrent, RnnRelu) {
  const int64_t T = 6, B = 1, I = 2, H = 3;
  OpCheck c;
  c.op = "RNN";
  c.inputs = {random({T, B, I}, 21), random({1, H, I}, 22, 0.5f), random({1, H, H}, 23, 0.5f)};
  c.constant_inputs = {1, 2};
  c.attrs = {{"activations", ir::Attribute::of_strings({"Relu"})}};
  c.num_outputs = 2;
  EXPECT_TRUE(check_op(c));
}

// The recurrence is unrolled when the plan is built: a symbolic sequence
// length runs on the host, and the plan says why.
TEST(LowerRecurrentPlan, SymbolicSequenceLengthFallsBackNamingIt) {
  const int64_t H = 2;
  ir::Graph g = testing::one_node_graph("RNN", ir::SymShape({ir::Dim::symbol("seq"), ir::Dim(1), ir::Dim(2)}),
                                        {random({1, H, 2}, 31), random({1, H, H}, 32)},
                                        {{"hidden_size", ir::Attribute::of_int(H)}});
  auto plan = build_plan(g, TargetInfo{}, PlanOptions{});
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  ASSERT_EQ(plan->fallback_count(), 1u);
  EXPECT_NE(plan->fallback_reasons[0].find("sequence length is not known when the plan is built"), std::string::npos)
      << plan->fallback_reasons[0];
}

}  // namespace
}  // namespace kiln::planner
