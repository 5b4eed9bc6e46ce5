// LSTM/GRU/RNN reference kernels: small cases computed by hand, and the
// errors a malformed node gets. The full semantics are checked against torch
// and a numpy implementation by tests/built_models (and the ONNX node tests).
#include <gtest/gtest.h>

#include <cmath>

#include "engine/ops/op_test_util.h"
#include "engine/ops/recurrent.h"

namespace kiln::ops {
namespace {

using testing::expect_near;
using testing::run_op;

Tensor f32(Shape s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), v); }

std::string error_of(const StatusOr<std::vector<Tensor>>& r) { return r.ok() ? "" : r.status().to_string(); }

// RNN, hidden 1, W = 1, R = 0.5, identity activation (Affine 1, 0):
// h_t = x_t + 0.5 h_{t-1}; the reverse direction walks only each row's
// sequence_lens prefix, and Y is zero past it.
TEST(Recurrent, RnnReverseWithSequenceLens) {
  const Tensor x = f32({3, 2, 1}, {1, 10, 2, 20, 4, 40});  // [T=3, B=2, I=1]
  const Tensor w = f32({1, 1, 1}, {1});
  const Tensor r = f32({1, 1, 1}, {0.5f});
  const Tensor lens = Tensor::from_vector<int32_t>({2}, {3, 2});
  std::map<std::string, ir::Attribute> attrs = {{"hidden_size", ir::Attribute::of_int(1)},
                                                {"direction", ir::Attribute::of_string("reverse")},
                                                {"activations", ir::Attribute::of_strings({"Affine"})},
                                                {"activation_alpha", ir::Attribute::of_floats({1.0f})},
                                                {"activation_beta", ir::Attribute::of_floats({0.0f})}};
  auto out = run_op("RNN", {x, w, r, Tensor(), lens}, attrs, 2);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  // Row 0 (len 3): t=2: 4; t=1: 2 + 2 = 4; t=0: 1 + 2 = 3. Row 1 (len 2):
  // t=1: 20; t=0: 10 + 10 = 20; t=2 is padding.
  expect_near((*out)[0], f32({3, 1, 2, 1}, {3, 20, 4, 20, 4, 0}));
  expect_near((*out)[1], f32({1, 2, 1}, {3, 20}));
}

// LSTM, hidden 1, all weights 0 except the biases: the gates are constants,
// c_t = f c_{t-1} + i g, h_t = o tanh(c_t).
TEST(Recurrent, LstmGatesFromBias) {
  const Tensor x = f32({2, 1, 1}, {0, 0});
  const Tensor w = f32({1, 4, 1}, {0, 0, 0, 0});
  const Tensor r = f32({1, 4, 1}, {0, 0, 0, 0});
  const Tensor b = f32({1, 8}, {1, 2, 3, 0.5f, 0, 0, 0, 0});  // Wb i o f c, Rb
  auto out = run_op("LSTM", {x, w, r, b}, {{"hidden_size", ir::Attribute::of_int(1)}}, 3);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  auto sig = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  const double i = sig(1), o = sig(2), f = sig(3), g = std::tanh(0.5);
  const double c1 = i * g, c2 = f * c1 + i * g;
  expect_near((*out)[2], f32({1, 1, 1}, {static_cast<float>(c2)}));
  expect_near((*out)[1], f32({1, 1, 1}, {static_cast<float>(o * std::tanh(c2))}));
}

TEST(Recurrent, ErrorsNameTheAttributeOrInput) {
  const Tensor x = f32({2, 1, 1}, {0, 0});
  const Tensor w = f32({1, 1, 1}, {1});
  const Tensor r = f32({1, 1, 1}, {1});
  auto bad_fn = run_op("RNN", {x, w, r}, {{"activations", ir::Attribute::of_strings({"Swish"})}}, 1);
  EXPECT_NE(error_of(bad_fn).find("attribute 'activations': function 'Swish' is not supported"), std::string::npos)
      << error_of(bad_fn);
  auto bad_dir = run_op("RNN", {x, w, r}, {{"direction", ir::Attribute::of_string("sideways")}}, 1);
  EXPECT_NE(error_of(bad_dir).find("attribute 'direction' is 'sideways'"), std::string::npos) << error_of(bad_dir);
  auto too_long = run_op("RNN", {x, w, r, Tensor(), Tensor::from_vector<int32_t>({1}, {3})}, {}, 1);
  EXPECT_NE(error_of(too_long).find("sequence_lens[0] is 3"), std::string::npos) << error_of(too_long);
  auto bad_w = run_op("GRU", {x, w, f32({1, 3, 1}, {1, 1, 1})}, {}, 1);
  EXPECT_NE(error_of(bad_w).find("W (input 1) has shape [1,1,1]"), std::string::npos) << error_of(bad_w);
  auto count = run_op("LSTM", {x, f32({1, 4, 1}, {0, 0, 0, 0}), f32({1, 4, 1}, {0, 0, 0, 0})},
                      {{"activations", ir::Attribute::of_strings({"Sigmoid", "Tanh"})}}, 1);
  EXPECT_NE(error_of(count).find("'activations' has 2 names; expected 3 per direction"), std::string::npos)
      << error_of(count);
}

// activation_alpha/beta go, in order, to the functions that take them.
TEST(Recurrent, AlphaBetaConsumedInOrder) {
  ir::Graph g;
  const ir::ValueId x = g.add_input("x", DType::kFloat32, ir::SymShape::from_concrete({1, 1, 1}));
  const ir::ValueId y = g.add_value("y", DType::kUndefined, ir::SymShape());
  const ir::NodeId n = g.add_node(
      "LSTM", {x, x, x}, {y},
      {{"direction", ir::Attribute::of_string("bidirectional")},
       {"activations", ir::Attribute::of_strings({"HardSigmoid", "Tanh", "LeakyRelu", "sigmoid", "Elu", "Affine"})},
       {"activation_alpha", ir::Attribute::of_floats({0.1f, 0.2f, 0.3f, 0.4f})},
       {"activation_beta", ir::Attribute::of_floats({0.5f, 0.6f})}},
      "lstm");
  auto a = parse_recurrent_attrs(g.node(n));
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  ASSERT_EQ(a->activations.size(), 6u);
  EXPECT_FLOAT_EQ(a->activations[0].alpha, 0.1f);  // HardSigmoid
  EXPECT_FLOAT_EQ(a->activations[0].beta, 0.5f);
  EXPECT_FLOAT_EQ(a->activations[2].alpha, 0.2f);  // LeakyRelu
  EXPECT_FLOAT_EQ(a->activations[4].alpha, 0.3f);  // Elu
  EXPECT_FLOAT_EQ(a->activations[5].alpha, 0.4f);  // Affine
  EXPECT_FLOAT_EQ(a->activations[5].beta, 0.6f);
  EXPECT_TRUE(a->reversed(1));
  EXPECT_FALSE(a->reversed(0));
}

}  // namespace
}  // namespace kiln::ops
