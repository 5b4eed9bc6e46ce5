// Reference kernels of the quantization family against values worked out
// by hand from the ONNX definitions: rounding half to even, saturation,
// per-tensor / per-axis / blocked parameters, integer products with zero
// points, requantization per output channel, and the errors.
#include <gtest/gtest.h>

#include "engine/ops/op_test_util.h"

namespace kiln::ops {
namespace {

using testing::int_attr;
using testing::run_op;

template <typename T>
Tensor t(Shape s, std::vector<T> v) {
  return Tensor::from_vector<T>(std::move(s), v);
}

std::vector<int64_t> values(const Tensor& x) { return x.to_i64_vector(); }

TEST(QuantizeLinear, RoundsHalfToEvenAndSaturates) {
  auto y = run_op("QuantizeLinear", {t<float>({7}, {0.5f, 1.5f, 2.5f, -0.5f, 300.0f, -300.0f, 2.4999f}),
                                     t<float>({}, {1.0f}), t<uint8_t>({}, {0})});
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_EQ((*y)[0].dtype(), DType::kUInt8);
  EXPECT_EQ(values((*y)[0]), (std::vector<int64_t>{0, 2, 2, 0, 255, 0, 2}));
  // int8 with a zero point: rint first, then the zero point, then saturation.
  auto s = run_op("QuantizeLinear", {t<float>({3}, {2.5f, -2.5f, 1000.0f}), t<float>({}, {1.0f}), t<int8_t>({}, {-1})});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(values((*s)[0]), (std::vector<int64_t>{1, -3, 127}));
}

TEST(QuantizeLinear, DefaultsToUInt8WithoutZeroPoint) {
  auto y = run_op("QuantizeLinear", {t<float>({2}, {3.0f, -1.0f}), t<float>({}, {0.5f})});
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_EQ((*y)[0].dtype(), DType::kUInt8);
  EXPECT_EQ(values((*y)[0]), (std::vector<int64_t>{6, 0}));
}

TEST(QuantizeLinear, Float16QuotientIsRoundedToFloat16) {
  // numpy: float16(25.265625) / float16(0.10247802734375) = 246.5 in float16
  // (246.5468 in float32), rint -> 246, not 247; +1 zero point.
  auto y = run_op("QuantizeLinear", {t<Half>({1}, {Half(25.265625f)}), t<Half>({}, {Half(0.10247802734375f)}),
                                     t<uint8_t>({}, {1})});
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_EQ(values((*y)[0]), (std::vector<int64_t>{247}));
  // The same values as float32 divide in float32: 246.5468 -> 247, +1.
  auto f = run_op("QuantizeLinear", {t<float>({1}, {25.265625f}), t<float>({}, {0.10247802734375f}),
                                     t<uint8_t>({}, {1})});
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(values((*f)[0]), (std::vector<int64_t>{248}));
}

TEST(QuantizeLinear, PerAxisAndBlocked) {
  auto y = run_op("QuantizeLinear",
                  {t<float>({2, 3}, {1, 2, 3, 4, 5, 6}), t<float>({2}, {1.0f, 2.0f}), t<uint8_t>({2}, {0, 10})},
                  {{"axis", int_attr(0)}});
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_EQ(values((*y)[0]), (std::vector<int64_t>{1, 2, 3, 12, 12, 13}));  // 2.5 -> 2
  // Opset 21: blocks of 2 along axis 1, one scale per block.
  auto b = run_op("QuantizeLinear", {t<float>({1, 4}, {1, 3, 4, 5}), t<float>({1, 2}, {1.0f, 2.0f})},
                  {{"axis", int_attr(1)}, {"block_size", int_attr(2)}});
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(values((*b)[0]), (std::vector<int64_t>{1, 3, 2, 2}));
}

TEST(QuantizeLinear, Int16) {
  auto y = run_op("QuantizeLinear", {t<float>({2}, {40000.0f, -3.5f}), t<float>({}, {1.0f}), t<int16_t>({}, {0})});
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_EQ(values((*y)[0]), (std::vector<int64_t>{32767, -4}));
}

TEST(QuantizeLinear, ClearErrors) {
  auto bad_axis = run_op("QuantizeLinear", {t<float>({2, 3}, {1, 2, 3, 4, 5, 6}), t<float>({3}, {1, 1, 1})},
                         {{"axis", int_attr(0)}});
  ASSERT_FALSE(bad_axis.ok());
  EXPECT_NE(bad_axis.status().message().find("per-axis scale has 3 values"), std::string::npos)
      << bad_axis.status().message();
  auto int32_out = run_op("QuantizeLinear", {t<float>({1}, {1}), t<float>({}, {1}), t<int32_t>({}, {0})});
  ASSERT_FALSE(int32_out.ok());
  EXPECT_EQ(int32_out.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(int32_out.status().message().find("quantizing to i32 is not supported"), std::string::npos)
      << int32_out.status().message();
  auto bad_block = run_op("QuantizeLinear", {t<float>({1, 4}, {1, 2, 3, 4}), t<float>({1, 3}, {1, 1, 1})},
                          {{"axis", int_attr(1)}, {"block_size", int_attr(2)}});
  ASSERT_FALSE(bad_block.ok());
  EXPECT_NE(bad_block.status().message().find("blocked scale"), std::string::npos) << bad_block.status().message();
}

TEST(DequantizeLinear, PerAxisAndInt32) {
  auto y = run_op("DequantizeLinear",
                  {t<int8_t>({2, 2}, {-128, 127, 3, 4}), t<float>({2}, {0.5f, 2.0f}), t<int8_t>({2}, {0, 1})},
                  {{"axis", int_attr(1)}});
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_EQ((*y)[0].to_f32_vector(), (std::vector<float>{-64.0f, 252.0f, 1.5f, 6.0f}));
  auto i = run_op("DequantizeLinear", {t<int32_t>({2}, {1000, -7}), t<float>({}, {0.25f})});
  ASSERT_TRUE(i.ok()) << i.status().message();
  EXPECT_EQ((*i)[0].to_f32_vector(), (std::vector<float>{250.0f, -1.75f}));
}

TEST(DynamicQuantizeLinear, AllZerosUseUnitRange) {
  auto y = run_op("DynamicQuantizeLinear", {t<float>({3}, {0, 0, 0})}, {}, 3);
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_EQ(values((*y)[0]), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ((*y)[1].to_f32_vector()[0], 1.0f / 255.0f);
  EXPECT_EQ(values((*y)[2]), (std::vector<int64_t>{0}));
}

TEST(MatMulInteger, PerRowAndPerColumnZeroPoints) {
  // A - [1, 2] per row = [[0, 1], [1, 0]]; B - [0, 1] per column = [[1, 1], [2, -1]].
  auto y = run_op("MatMulInteger", {t<uint8_t>({2, 2}, {1, 2, 3, 2}), t<int8_t>({2, 2}, {1, 2, 2, 0}),
                                    t<uint8_t>({2}, {1, 2}), t<int8_t>({2}, {0, 1})});
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_EQ((*y)[0].dtype(), DType::kInt32);
  EXPECT_EQ(values((*y)[0]), (std::vector<int64_t>{2, -1, 1, 1}));
}

TEST(ConvInteger, PadsWithTheZeroPoint) {
  // x - 5 = [[-4, -3], [-2, -1]], a 2x2 ones kernel with pads 1: the corner
  // windows see one element each, padding contributes zero.
  auto y = run_op("ConvInteger",
                  {t<uint8_t>({1, 1, 2, 2}, {1, 2, 3, 4}), t<uint8_t>({1, 1, 2, 2}, {1, 1, 1, 1}), t<uint8_t>({}, {5})},
                  {{"pads", testing::ints({1, 1, 1, 1})}});
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_EQ(values((*y)[0]), (std::vector<int64_t>{-4, -7, -3, -6, -10, -4, -2, -3, -1}));
}

TEST(QLinearConv, PerChannelScaleAndBias) {
  // ch0: (2x + 1) * 0.5 = [1.5, 2.5, 3.5, 4.5] -> rint [2, 2, 4, 4];
  // ch1: (3x - 1) * 1   = [2, 5, 8, 11].
  auto y = run_op("QLinearConv", {t<uint8_t>({1, 1, 2, 2}, {1, 2, 3, 4}), t<float>({}, {1.0f}), t<uint8_t>({}, {0}),
                                  t<int8_t>({2, 1, 1, 1}, {2, 3}), t<float>({2}, {0.5f, 1.0f}), t<int8_t>({2}, {0, 0}),
                                  t<float>({}, {1.0f}), t<uint8_t>({}, {0}), t<int32_t>({2}, {1, -1})});
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_EQ((*y)[0].dtype(), DType::kUInt8);
  EXPECT_EQ(values((*y)[0]), (std::vector<int64_t>{2, 2, 4, 4, 2, 5, 8, 11}));
}

TEST(QLinearMatMul, SaturatesToTheOutputType) {
  // (10 * 10) * (1 * 1 / 0.5) + 0 = 200 -> int8 saturates to 127; -1 * 1 * 2 = -2.
  auto y = run_op("QLinearMatMul",
                  {t<int8_t>({2, 1}, {10, -1}), t<float>({}, {1.0f}), t<int8_t>({}, {0}), t<int8_t>({1, 1}, {10}),
                   t<float>({}, {1.0f}), t<int8_t>({}, {0}), t<float>({}, {0.5f}), t<int8_t>({}, {0})});
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_EQ(values((*y)[0]), (std::vector<int64_t>{127, -20}));
}

TEST(IntegerLinalg, RefusesOtherTypes) {
  auto y = run_op("MatMulInteger", {t<int32_t>({1, 1}, {1}), t<int32_t>({1, 1}, {1})});
  ASSERT_FALSE(y.ok());
  EXPECT_EQ(y.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(y.status().message().find("Kiln supports int8 and uint8"), std::string::npos) << y.status().message();
}

}  // namespace
}  // namespace kiln::ops
