// Reference kernels of ONNX Runtime's com.microsoft quantized ops against
// values worked out by hand from ORT's definitions (dequantize, float32 op,
// quantize with rint half to even and saturation; see qlinear_contrib.cc
// and integer_linalg.cc), and their errors. The ops the Vulkan backend also
// runs are checked against numpy on both backends by
// tests/built_models/generate_quantized_contrib.py.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/ops/op_test_util.h"
#include "engine/ops/quantization.h"

namespace kiln::ops {
namespace {

using testing::int_attr;
using testing::ints;

template <typename T>
Tensor t(Shape s, std::vector<T> v) {
  return Tensor::from_vector<T>(std::move(s), v);
}
Tensor f(float v) { return t<float>({}, {v}); }
Tensor u8(uint8_t v) { return t<uint8_t>({}, {v}); }
Tensor i8(int8_t v) { return t<int8_t>({}, {v}); }

StatusOr<std::vector<Tensor>> run_ms(const std::string& op, const std::vector<Tensor>& inputs,
                                     std::map<std::string, ir::Attribute> attrs = {}) {
  return testing::run_op(op, inputs, std::move(attrs), 1, {}, kMicrosoftDomain);
}

std::vector<int64_t> values(const StatusOr<std::vector<Tensor>>& y) { return (*y)[0].to_i64_vector(); }

TEST(QLinearContrib, AddRoundsTiesToEvenAndSaturates) {
  // A_f = {0, 5, 60, 122.5}, B_f = {-0.5, 0.25, 1.25, 24.5};
  // (A_f + B_f) / 0.5 = {-1, 10.5, 122.5, 294} -> rint {-1, 10, 122, 294} + 100.
  auto y = run_ms("QLinearAdd", {t<uint8_t>({4}, {10, 20, 130, 255}), f(0.5f), u8(10), t<uint8_t>({4}, {0, 3, 7, 100}),
                                 f(0.25f), u8(2), f(0.5f), u8(100)});
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_EQ((*y)[0].dtype(), DType::kUInt8);
  EXPECT_EQ(values(y), (std::vector<int64_t>{99, 110, 222, 255}));
}

TEST(QLinearContrib, MulBroadcastsWithoutZeroPoints) {
  // {2, -3, 63.5} * 1.5 = {3, -4.5, 95.25} -> {3, -4, 95} - 1.
  auto y = run_ms("QLinearMul", {t<int8_t>({3}, {4, -6, 127}), f(0.5f), Tensor(), t<int8_t>({1}, {3}), f(0.5f),
                                 Tensor(), f(1.0f), i8(-1)});
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_EQ((*y)[0].dtype(), DType::kInt8);
  EXPECT_EQ(values(y), (std::vector<int64_t>{2, -5, 94}));
}

TEST(QLinearContrib, SigmoidAndLeakyRelu) {
  // x_f = {0, -12.8, 12.7}: sigmoid {0.5, ~2.8e-6, ~0.999997} * 256.
  auto s = run_ms("QLinearSigmoid", {t<uint8_t>({3}, {128, 0, 255}), f(0.1f), u8(128), f(1.0f / 256), u8(0)});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(values(s), (std::vector<int64_t>{128, 0, 255}));
  // x_f = {-5, 0, 3.5}: {-0.5, 0, 3.5} / 0.25 + 2.
  auto l = run_ms("QLinearLeakyRelu", {t<int8_t>({3}, {-10, 0, 7}), f(0.5f), i8(0), f(0.25f), i8(2)},
                  {{"alpha", ir::Attribute::of_float(0.1f)}});
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_EQ(values(l), (std::vector<int64_t>{0, 2, 16}));
}

TEST(QLinearContrib, SoftmaxOpset13AndFlattenedBefore13) {
  // x_f = {0, ln 3} per row (scale ln 3, zero point 0): softmax {1/4, 3/4} * 256.
  const float ln3 = std::log(3.0f);
  const std::vector<Tensor> in = {t<uint8_t>({2, 2}, {0, 1, 1, 0}), f(ln3), u8(0), f(1.0f / 256), u8(0)};
  auto y = run_ms("QLinearSoftmax", in, {{"opset", int_attr(13)}});
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_EQ(values(y), (std::vector<int64_t>{64, 192, 192, 64}));
  // opset 11, axis 0: one softmax over all four values {0, ln 3, ln 3, 0}: {1/8, 3/8, 3/8, 1/8}.
  auto old = run_ms("QLinearSoftmax", in, {{"opset", int_attr(11)}, {"axis", int_attr(0)}});
  ASSERT_TRUE(old.ok()) << old.status().message();
  EXPECT_EQ(values(old), (std::vector<int64_t>{32, 96, 96, 32}));
  auto no_opset = run_ms("QLinearSoftmax", in);
  ASSERT_FALSE(no_opset.ok());
  EXPECT_NE(no_opset.status().message().find("opset"), std::string::npos) << no_opset.status().message();
}

TEST(QLinearContrib, GlobalAveragePoolNchwAndChannelsLast) {
  // Channel means 1.5 and 10.25 -> {2, 10}.
  auto y = run_ms("QLinearGlobalAveragePool",
                  {t<uint8_t>({1, 2, 2, 2}, {0, 1, 2, 3, 10, 10, 10, 11}), f(1.0f), u8(0), f(1.0f), u8(0)});
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_EQ((*y)[0].shape(), (Shape{1, 2, 1, 1}));
  EXPECT_EQ(values(y), (std::vector<int64_t>{2, 10}));
  auto nhwc = run_ms("QLinearGlobalAveragePool",
                     {t<uint8_t>({1, 2, 2, 2}, {0, 10, 1, 10, 2, 10, 3, 11}), f(1.0f), u8(0), f(1.0f), u8(0)},
                     {{"channels_last", int_attr(1)}});
  ASSERT_TRUE(nhwc.ok()) << nhwc.status().message();
  EXPECT_EQ((*nhwc)[0].shape(), (Shape{1, 1, 1, 2}));
  EXPECT_EQ(values(nhwc), (std::vector<int64_t>{2, 10}));
}

TEST(QLinearContrib, AveragePool) {
  // 2x2 windows of 0..8: means {2, 3, 5, 6} / 0.5 + 1.
  auto y = run_ms("QLinearAveragePool",
                  {t<uint8_t>({1, 1, 3, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8}), f(1.0f), u8(0), f(0.5f), u8(1)},
                  {{"kernel_shape", ints({2, 2})}});
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_EQ((*y)[0].shape(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(values(y), (std::vector<int64_t>{5, 7, 11, 13}));
}

TEST(QLinearContrib, ConcatRequantizesEachInput) {
  // {10, 20} * 0.5 and (3 - 1) * 2 on the output's scale 1.
  auto y = run_ms("QLinearConcat", {f(1.0f), u8(0), t<uint8_t>({1, 2}, {10, 20}), f(0.5f), u8(0),
                                    t<uint8_t>({1, 1}, {3}), f(2.0f), u8(1)},
                  {{"axis", int_attr(1)}});
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_EQ(values(y), (std::vector<int64_t>{5, 10, 4}));
}

TEST(QLinearContrib, QGemmQuantizedAndFloat) {
  // (A - 1) = [[0, 1], [2, 3]] times the identity, + C {1, -1} = [[1, 0], [3, 2]].
  const std::vector<Tensor> in = {t<uint8_t>({2, 2}, {1, 2, 3, 4}), f(0.5f), u8(1), t<int8_t>({2, 2}, {1, 0, 0, 1}),
                                  f(1.0f), i8(0), t<int32_t>({2}, {1, -1})};
  auto fl = run_ms("QGemm", in, {{"alpha", ir::Attribute::of_float(2.0f)}});
  ASSERT_TRUE(fl.ok()) << fl.status().message();
  EXPECT_EQ((*fl)[0].dtype(), DType::kFloat32);
  EXPECT_EQ((*fl)[0].to_f32_vector(), (std::vector<float>{1, 0, 3, 2}));  // acc * 2 * 0.5
  std::vector<Tensor> quantized = in;
  quantized.push_back(f(0.25f));
  quantized.push_back(u8(3));
  auto q = run_ms("QGemm", quantized, {{"transB", int_attr(1)}});
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ((*q)[0].dtype(), DType::kUInt8);
  EXPECT_EQ(values(q), (std::vector<int64_t>{5, 3, 9, 7}));  // acc * 0.5 / 0.25 + 3
}

TEST(QLinearContrib, MatMulIntegerToFloatAndDynamicQuantizeMatMul) {
  // (3 - 1) * 2 + (5 - 1) * 4 = 20; 20 * 0.5 * 0.25 + 1.
  auto y = run_ms("MatMulIntegerToFloat", {t<uint8_t>({1, 2}, {3, 5}), t<uint8_t>({2, 1}, {2, 4}), f(0.5f), f(0.25f),
                                           u8(1), u8(0), t<float>({1}, {1.0f})});
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_EQ((*y)[0].to_f32_vector(), (std::vector<float>{3.5f}));
  // A in [0, 2.55]: scale 2.55 / 255, zero point 0, A_q = {0, 255}; 255 * 2.
  auto d = run_ms("DynamicQuantizeMatMul", {t<float>({1, 2}, {0.0f, 2.55f}), t<int8_t>({2, 1}, {1, 2}), f(1.0f)});
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ((*d)[0].to_f32_vector(), (std::vector<float>{510.0f * (2.55f / 255.0f)}));
}

TEST(QLinearContrib, MicrosoftQuantizeLinearIsOnnxs) {
  auto y = run_ms("QuantizeLinear", {t<float>({3}, {0.5f, 1.5f, -300.0f}), f(1.0f), i8(0)});
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_EQ(values(y), (std::vector<int64_t>{0, 2, -128}));
}

TEST(QLinearContrib, ClearErrors) {
  auto per_axis = run_ms("QLinearAdd", {t<uint8_t>({2}, {1, 2}), t<float>({2}, {0.1f, 0.2f}), Tensor(),
                                        t<uint8_t>({2}, {1, 2}), f(0.1f), Tensor(), f(0.1f), Tensor()});
  ASSERT_FALSE(per_axis.ok());
  EXPECT_NE(per_axis.status().message().find("must hold one value"), std::string::npos) << per_axis.status().message();
  auto arity = run_ms("QLinearConcat", {f(1.0f), u8(0), t<uint8_t>({1}, {1}), f(1.0f)}, {{"axis", int_attr(0)}});
  ASSERT_FALSE(arity.ok());
  EXPECT_NE(arity.status().message().find("triple"), std::string::npos) << arity.status().message();
  auto rank = run_ms("QGemm", {t<uint8_t>({1, 2, 2}, {1, 2, 3, 4}), f(1.0f), u8(0), t<int8_t>({2, 2}, {1, 0, 0, 1}),
                               f(1.0f), i8(0)});
  ASSERT_FALSE(rank.ok());
  EXPECT_NE(rank.status().message().find("2-D"), std::string::npos) << rank.status().message();
  auto bad_c = run_ms("QGemm", {t<uint8_t>({2, 3}, {1, 2, 3, 4, 5, 6}), f(1.0f), u8(0),
                                t<int8_t>({3, 2}, {1, 0, 0, 1, 1, 1}), f(1.0f), i8(0), t<int32_t>({5}, {1, 2, 3, 4, 5})});
  ASSERT_FALSE(bad_c.ok());
  EXPECT_NE(bad_c.status().message().find("does not broadcast"), std::string::npos) << bad_c.status().message();
  auto bad_bias = run_ms("MatMulIntegerToFloat", {t<uint8_t>({1, 2}, {3, 5}), t<uint8_t>({2, 2}, {2, 4, 1, 1}),
                                                  f(0.5f), f(0.25f), u8(1), u8(0), t<float>({3}, {1.0f, 2.0f, 3.0f})});
  ASSERT_FALSE(bad_bias.ok());
  EXPECT_NE(bad_bias.status().message().find("one value per column"), std::string::npos) << bad_bias.status().message();
  auto missing = run_ms("QLinearSigmoid", {t<uint8_t>({1}, {1}), f(1.0f)});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("required input 3"), std::string::npos) << missing.status().message();
  auto float_x = run_ms("QLinearLeakyRelu", {t<float>({1}, {1.0f}), f(1.0f), Tensor(), f(1.0f)});
  ASSERT_FALSE(float_x.ok());
  EXPECT_NE(float_x.status().message().find("int8 and uint8"), std::string::npos) << float_x.status().message();
}

}  // namespace
}  // namespace kiln::ops
