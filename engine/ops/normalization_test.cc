// Tests for the softmax and normalization ops (normalization.cc) against
// hand-computed values, parameter broadcasting and error messages.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "engine/ops/op_registry.h"
#include "engine/ops/op_test_util.h"

namespace kiln::ops {
namespace {

using testing::expect_near;
using testing::run_op;
using Attrs = std::map<std::string, ir::Attribute>;

Tensor f32(Shape s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), v); }

std::vector<Tensor> run(const std::string& op, const std::vector<Tensor>& inputs, Attrs attrs = {},
                        size_t num_outputs = 1) {
  auto r = run_op(op, inputs, std::move(attrs), num_outputs);
  if (!r.ok()) {
    ADD_FAILURE() << op << ": " << r.status().to_string();
    return std::vector<Tensor>(num_outputs);
  }
  return std::move(r).value();
}
Tensor run1(const std::string& op, const std::vector<Tensor>& inputs, Attrs attrs = {}) {
  return run(op, inputs, std::move(attrs))[0];
}

void expect_error(const std::string& op, const std::vector<Tensor>& inputs, Attrs attrs, const std::string& substr,
                  StatusCode code = StatusCode::kInvalidArgument) {
  auto r = run_op(op, inputs, std::move(attrs));
  ASSERT_FALSE(r.ok()) << op << " should fail with '" << substr << "'";
  EXPECT_EQ(r.status().code(), code) << r.status().to_string();
  EXPECT_NE(r.status().message().find(substr), std::string::npos) << r.status().to_string();
}

Attrs axis(int64_t a) { return {{"axis", ir::Attribute::of_int(a)}}; }
Attrs eps(float e) { return {{"epsilon", ir::Attribute::of_float(e)}}; }

// --- Softmax family --------------------------------------------------------------

TEST(NormalizationTest, Softmax) {
  expect_near(run1("Softmax", {f32({3}, {1, 2, 3})}), f32({3}, {0.09003057f, 0.24472847f, 0.66524096f}), 1e-7, 1e-6);
  expect_near(run1("Softmax", {f32({2, 2}, {1, 1, 1000, 1000})}), f32({2, 2}, {0.5f, 0.5f, 0.5f, 0.5f}));
  // axis 0 of [2,2]: columns normalize.
  expect_near(run1("Softmax", {f32({2, 2}, {0, 5, 0, 5})}, axis(0)), f32({2, 2}, {0.5f, 0.5f, 0.5f, 0.5f}));
  expect_near(run1("Softmax", {f32({2, 2}, {1, 0, 2, 0})}, axis(0)),
              f32({2, 2}, {0.26894142f, 0.5f, 0.73105858f, 0.5f}));
}

TEST(NormalizationTest, LogSoftmaxAndHardmax) {
  expect_near(run1("LogSoftmax", {f32({3}, {1, 2, 3})}), f32({3}, {-2.4076060f, -1.4076060f, -0.40760596f}));
  expect_near(run1("Hardmax", {f32({2, 3}, {1, 3, 3, 2, 1, 0})}), f32({2, 3}, {0, 1, 0, 1, 0, 0}));
  expect_error("Softmax", {f32({2, 2}, {1, 2, 3, 4})}, axis(2), "axis 2 is out of range for an input of rank 2");
  expect_error("Softmax", {Tensor::from_vector<int32_t>({2}, {1, 2})}, {}, "Softmax accepts float");
}

TEST(NormalizationTest, SoftmaxOnHalf) {
  Tensor h = f32({3}, {1, 2, 3}).cast(DType::kFloat16).value();
  Tensor y = run1("Softmax", {h});
  ASSERT_EQ(y.dtype(), DType::kFloat16);
  expect_near(y.cast(DType::kFloat32).value(), f32({3}, {0.09003057f, 0.24472847f, 0.66524096f}), 1e-3, 1e-3);
}

// --- LayerNormalization -----------------------------------------------------------------

TEST(NormalizationTest, LayerNormWithStats) {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 6, 8});
  auto out = run("LayerNormalization", {x, f32({3}, {1, 1, 2}), f32({3}, {0, 1, 0})}, eps(0), 3);
  // Both rows normalize to [-1.2247, 0, 1.2247].
  expect_near(out[0], f32({2, 3}, {-1.2247449f, 1, 2.4494897f, -1.2247449f, 1, 2.4494897f}));
  expect_near(out[1], f32({2, 1}, {2, 6}));
  expect_near(out[2], f32({2, 1}, {1.2247449f, 0.61237244f}));
}

TEST(NormalizationTest, LayerNormAxisAndBroadcastScale) {
  const Tensor x = f32({2, 2}, {0, 2, 4, 6});
  // axis 0: one group of four, mean 3, var 5.
  const float inv = 1.0f / std::sqrt(5.0f);
  expect_near(run1("LayerNormalization", {x, f32({}, {1})}, {{"axis", ir::Attribute::of_int(0)}, {"epsilon", ir::Attribute::of_float(0)}}),
              f32({2, 2}, {-3 * inv, -inv, inv, 3 * inv}));
  // Scale of shape [2,1] varies by row, beyond the normalized dims.
  expect_near(run1("LayerNormalization", {x, f32({2, 1}, {1, 10})}, eps(0)), f32({2, 2}, {-1, 1, -10, 10}));
  // Default epsilon 1e-5 on a constant row: 0 / sqrt(eps) = 0, not NaN.
  expect_near(run1("LayerNormalization", {f32({1, 2}, {3, 3}), f32({2}, {1, 1})}), f32({1, 2}, {0, 0}));
}

TEST(NormalizationTest, LayerNormErrors) {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_error("LayerNormalization", {x, f32({2}, {1, 1})}, {}, "(scale) of shape [2] does not broadcast");
  expect_error("LayerNormalization", {x, f32({3}, {1, 1, 1})}, axis(-3), "axis -3 is out of range");
}

// --- BatchNormalization -------------------------------------------------------------------

TEST(NormalizationTest, BatchNormInference) {
  const Tensor x = f32({1, 2, 2}, {1, 2, 3, 4});
  const Tensor scale = f32({2}, {1, 2}), b = f32({2}, {0, 1}), mean = f32({2}, {1, 3}), var = f32({2}, {4, 1});
  expect_near(run1("BatchNormalization", {x, scale, b, mean, var}, eps(0)), f32({1, 2, 2}, {0, 0.5f, 1, 3}));
  // N=2, no spatial dims.
  expect_near(run1("BatchNormalization", {f32({2, 2}, {1, 3, 5, 4}), scale, b, mean, var}, eps(0)),
              f32({2, 2}, {0, 1, 2, 3}));
}

TEST(NormalizationTest, BatchNormErrors) {
  const Tensor x = f32({1, 2, 2}, {1, 2, 3, 4});
  const Tensor c2 = f32({2}, {1, 1});
  expect_error("BatchNormalization", {x, f32({3}, {1, 1, 1}), c2, c2, c2}, {},
               "input 1 (scale) has 3 elements, the input has 2 channels");
  expect_error("BatchNormalization", {x, c2, c2, c2, c2}, {{"training_mode", ir::Attribute::of_int(1)}},
               "training_mode=1 is not supported", StatusCode::kUnimplemented);
  expect_error("BatchNormalization", {f32({2}, {1, 2}), c2, c2, c2, c2}, {}, "must have shape [N, C, ...]");
}

// --- Instance / Group / Lp normalization ------------------------------------------------------

TEST(NormalizationTest, InstanceNorm) {
  const Tensor x = f32({1, 2, 2}, {1, 3, 2, 2});
  // Channel 0: mean 2, var 1. Channel 1 is constant: 0 * 1/sqrt(eps) = 0, then + bias.
  const float inv = 0.99999500f;
  expect_near(run1("InstanceNormalization", {x, f32({2}, {1, 3}), f32({2}, {0, 0.5f})}),
              f32({1, 2, 2}, {-inv, inv, 0.5f, 0.5f}));
  expect_error("InstanceNormalization", {x, f32({3}, {1, 1, 1}), f32({2}, {0, 0})}, {}, "(scale) has 3 elements");
}

TEST(NormalizationTest, GroupNorm) {
  const Tensor x = f32({1, 4, 1}, {1, 2, 3, 5});
  Attrs attrs = {{"num_groups", ir::Attribute::of_int(2)}, {"epsilon", ir::Attribute::of_float(0)}};
  // Group 0: [1,2] -> [-1,1]; group 1: [3,5] -> [-1,1]; then per-group scale/bias.
  expect_near(run1("GroupNormalization", {x, f32({2}, {1, 2}), f32({2}, {0, 1})}, attrs), f32({1, 4, 1}, {-1, 1, -1, 3}));
  // Per-channel scale/bias (the opset-21 form).
  expect_near(run1("GroupNormalization", {x, f32({4}, {1, 2, 3, 4}), f32({4}, {0, 0, 0, 1})}, attrs),
              f32({1, 4, 1}, {-1, 2, -3, 5}));
  Attrs three = {{"num_groups", ir::Attribute::of_int(3)}};
  expect_error("GroupNormalization", {x, f32({3}, {1, 1, 1}), f32({3}, {0, 0, 0})}, three,
               "4 channels do not split into num_groups=3");
  expect_error("GroupNormalization", {x, f32({2}, {1, 1}), f32({2}, {0, 0})}, {}, "'num_groups'");
}

TEST(NormalizationTest, LpNorm) {
  const Tensor x = f32({2, 2}, {3, 4, 0, 0});
  expect_near(run1("LpNormalization", {x}), f32({2, 2}, {0.6f, 0.8f, 0, 0}));
  expect_near(run1("LpNormalization", {x}, {{"p", ir::Attribute::of_int(1)}}), f32({2, 2}, {3.0f / 7, 4.0f / 7, 0, 0}));
  expect_near(run1("LpNormalization", {f32({2, 2}, {3, 1, 4, 1})}, axis(0)),
              f32({2, 2}, {0.6f, 0.70710678f, 0.8f, 0.70710678f}));
  expect_error("LpNormalization", {x}, {{"p", ir::Attribute::of_int(3)}}, "'p' must be 1 or 2");
}

}  // namespace
}  // namespace kiln::ops
