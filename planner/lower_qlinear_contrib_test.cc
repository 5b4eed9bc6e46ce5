// Differential tests of ONNX Runtime's com.microsoft quantized ops
// (lower_qlinear_contrib.cc, the com.microsoft GEMMs of
// lower_integer_linalg.cc, com.microsoft QuantizeLinear/DequantizeLinear)
// against the reference executor in every backend config. Add, Mul,
// LeakyRelu, Concat and the integer GEMMs must give the reference's bits;
// Sigmoid (exp) and the pool (summation order) may differ by one
// quantization step. The expected values of the ONNX Runtime formulas are
// checked separately, on both backends, by the node-test cases of
// tests/built_models/generate_quantized_contrib.py.
#include <string>
#include <vector>

#include "engine/ops/quantization.h"
#include "planner/testing/op_check.h"
#include "planner/testing/random_ints.h"
#include "platform/vulkan/vk_test_env.h"

namespace kiln::planner {
namespace {

using testing::check_op;
using testing::OpCheck;
using testing::random_ints;

class LowerQLinearContrib : public vk::testing::VulkanTest {};

Tensor f32(Shape s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), v); }
Tensor u8(uint8_t v) { return Tensor::from_vector<uint8_t>({}, {v}); }
Tensor i8(int8_t v) { return Tensor::from_vector<int8_t>({}, {v}); }

OpCheck contrib_check(const char* op) {
  OpCheck c;
  c.op = op;
  c.domain = ops::kMicrosoftDomain;
  c.min_dispatches = 1;
  c.tol_f32 = c.tol_f16 = 0;
  return c;
}

TEST_F(LowerQLinearContrib, QLinearAddAndMulBroadcast) {
  for (const char* op : {"QLinearAdd", "QLinearMul"}) {
    OpCheck c = contrib_check(op);
    c.inputs = {random_ints<uint8_t>({2, 3, 4, 5}, 1, 0, 255), f32({}, {0.0375f}), u8(121),
                random_ints<uint8_t>({3, 1, 5}, 2, 0, 255),    f32({}, {0.021f}),  u8(140),
                f32({}, {std::string(op) == "QLinearAdd" ? 0.06f : 0.4f}), u8(118)};
    c.constant_inputs = {1, 2, 4, 5, 6, 7};
    EXPECT_TRUE(check_op(c)) << op;
  }
}

TEST_F(LowerQLinearContrib, QLinearAddInt8WithoutZeroPointsAndRuntimeScales) {
  OpCheck c = contrib_check("QLinearAdd");
  // Scales as graph inputs (not constants): read from tensors.
  c.inputs = {random_ints<int8_t>({4, 33}, 3, -128, 127), f32({}, {0.5f}), Tensor(),
              random_ints<int8_t>({4, 33}, 4, -128, 127), f32({}, {0.25f}), Tensor(),
              f32({}, {0.5f}), Tensor()};
  EXPECT_TRUE(check_op(c));
}

TEST_F(LowerQLinearContrib, QLinearSigmoidWithinOneStep) {
  OpCheck c = contrib_check("QLinearSigmoid");
  c.inputs = {random_ints<uint8_t>({3, 70}, 5, 0, 255), f32({}, {0.05f}), u8(128), f32({}, {1.0f / 256}), u8(0)};
  c.constant_inputs = {1, 2, 3, 4};
  c.tol_f32 = c.tol_f16 = 1.0 / 255;  // one step of the [0, 255] output
  EXPECT_TRUE(check_op(c));
}

TEST_F(LowerQLinearContrib, QLinearSoftmaxWithinOneStep) {
  for (const int64_t axis : {-1, 1}) {
    OpCheck c = contrib_check("QLinearSoftmax");
    c.inputs = {random_ints<uint8_t>({2, 9, 12}, 23, 0, 255), f32({}, {0.07f}), u8(140), f32({}, {1.0f / 256}),
                u8(0)};
    c.constant_inputs = {1, 2, 3, 4};
    c.attrs["axis"] = ir::Attribute::of_int(axis);
    c.attrs["opset"] = ir::Attribute::of_int(13);
    c.tol_f32 = c.tol_f16 = 1.0 / 255;
    EXPECT_TRUE(check_op(c)) << "axis " << axis;
  }
}

TEST_F(LowerQLinearContrib, QLinearLeakyRelu) {
  OpCheck c = contrib_check("QLinearLeakyRelu");
  c.inputs = {random_ints<int8_t>({2, 4, 6, 6}, 6, -128, 127), f32({}, {0.04f}), i8(3), f32({}, {0.03f}), i8(-10)};
  c.constant_inputs = {1, 2, 3, 4};
  c.attrs["alpha"] = ir::Attribute::of_float(0.1f);
  EXPECT_TRUE(check_op(c));
}

TEST_F(LowerQLinearContrib, QLinearGlobalAveragePoolWithinOneStep) {
  OpCheck c = contrib_check("QLinearGlobalAveragePool");
  c.inputs = {random_ints<uint8_t>({2, 5, 7, 6}, 7, 0, 255), f32({}, {0.031f}), u8(127), f32({}, {0.011f}), u8(128)};
  c.constant_inputs = {1, 2, 3, 4};
  c.tol_f32 = c.tol_f16 = 1.0 / 255;
  EXPECT_TRUE(check_op(c));
}

TEST_F(LowerQLinearContrib, QLinearAveragePoolPaddedStridedWithinOneStep) {
  for (const int64_t include_pad : {0, 1}) {
    OpCheck c = contrib_check("QLinearAveragePool");
    c.inputs = {random_ints<uint8_t>({2, 3, 9, 8}, 19, 0, 255), f32({}, {0.031f}), u8(127), f32({}, {0.017f}),
                u8(120)};
    c.constant_inputs = {1, 2, 3, 4};
    c.attrs["kernel_shape"] = ir::Attribute::of_ints({3, 2});
    c.attrs["strides"] = ir::Attribute::of_ints({2, 2});
    c.attrs["pads"] = ir::Attribute::of_ints({1, 0, 1, 1});
    c.attrs["ceil_mode"] = ir::Attribute::of_int(1);
    c.attrs["count_include_pad"] = ir::Attribute::of_int(include_pad);
    c.tol_f32 = c.tol_f16 = 1.0 / 255;
    EXPECT_TRUE(check_op(c)) << "count_include_pad " << include_pad;
  }
}

TEST_F(LowerQLinearContrib, QLinearConcatRequantizesEachInput) {
  OpCheck c = contrib_check("QLinearConcat");
  c.inputs = {f32({}, {0.05f}), u8(120),
              random_ints<uint8_t>({2, 3, 12}, 8, 0, 255), f32({}, {0.03f}), u8(100),
              random_ints<uint8_t>({2, 5, 12}, 9, 0, 255), f32({}, {0.08f}), u8(131),
              random_ints<uint8_t>({2, 1, 12}, 10, 0, 255), f32({}, {0.05f}), u8(120)};
  c.constant_inputs = {0, 1, 3, 4, 6, 7, 9, 10};
  c.attrs["axis"] = ir::Attribute::of_int(-2);
  EXPECT_TRUE(check_op(c));
}

TEST_F(LowerQLinearContrib, QGemmTransposedPerColumnQuantizedAndFloat) {
  for (const bool float_out : {false, true}) {
    OpCheck c = contrib_check("QGemm");
    c.inputs = {random_ints<uint8_t>({40, 7}, 11, 0, 255),      // A^T [K, M]
                f32({}, {0.02f}),
                u8(131),
                random_ints<int8_t>({9, 40}, 12, -127, 127),    // B^T [N, K]
                f32({9}, {0.003f, 0.004f, 0.005f, 0.006f, 0.007f, 0.008f, 0.009f, 0.01f, 0.011f}),
                Tensor::from_vector<int8_t>({9}, {0, 1, -1, 2, -2, 3, -3, 4, -4}),
                random_ints<int32_t>({9}, 13, -2000, 2000)};
    if (!float_out) c.inputs.insert(c.inputs.end(), {f32({}, {0.05f}), u8(128)});
    c.constant_inputs = float_out ? std::vector<size_t>{1, 2, 3, 4, 5, 6} : std::vector<size_t>{1, 2, 3, 4, 5, 6, 7, 8};
    c.attrs["transA"] = ir::Attribute::of_int(1);
    c.attrs["transB"] = ir::Attribute::of_int(1);
    c.attrs["alpha"] = ir::Attribute::of_float(0.75f);
    c.tol_f32 = float_out ? 1e-6 : 0;
    c.tol_f16 = float_out ? 2e-2 : 0;
    EXPECT_TRUE(check_op(c)) << (float_out ? "float output" : "uint8 output");
  }
}

TEST_F(LowerQLinearContrib, MatMulIntegerToFloatBatchedWithBias) {
  OpCheck c = contrib_check("MatMulIntegerToFloat");
  c.inputs = {random_ints<uint8_t>({2, 5, 24}, 14, 0, 255), random_ints<int8_t>({24, 6}, 15, -127, 127),
              f32({}, {0.013f}), f32({6}, {0.002f, 0.003f, 0.004f, 0.005f, 0.006f, 0.007f}), u8(127),
              Tensor::from_vector<int8_t>({6}, {0, 1, 2, -1, -2, 0}), testing::random_tensor({6}, 16)};
  c.constant_inputs = {1, 2, 3, 4, 5, 6};
  c.tol_f32 = 1e-6;
  c.tol_f16 = 2e-2;
  EXPECT_TRUE(check_op(c));
}

TEST_F(LowerQLinearContrib, DynamicQuantizeMatMulQuantizesAOnTheDevice) {
  OpCheck c = contrib_check("DynamicQuantizeMatMul");
  c.inputs = {testing::random_tensor({3, 7, 24}, 20, -1.5f, 4.0f), random_ints<int8_t>({24, 6}, 21, -127, 127),
              f32({6}, {0.002f, 0.003f, 0.004f, 0.005f, 0.006f, 0.007f}),
              Tensor::from_vector<int8_t>({6}, {0, 1, 2, -1, -2, 0}), testing::random_tensor({6}, 22)};
  c.constant_inputs = {1, 2, 3, 4};
  c.min_dispatches = 2;  // range, GEMM (and a copy into an image output)
  c.max_dispatches = 3;
  c.tol_f32 = 1e-6;
  c.tol_f16 = 2e-2;
  EXPECT_TRUE(check_op(c));
}

TEST_F(LowerQLinearContrib, MicrosoftQuantizeAndDequantizeLinear) {
  OpCheck q = contrib_check("QuantizeLinear");
  q.inputs = {testing::random_tensor({3, 4, 5}, 17, -3, 3), f32({4}, {0.013f, 0.027f, 0.0091f, 0.02f}),
              Tensor::from_vector<int8_t>({4}, {0, -5, 7, 1})};
  q.constant_inputs = {1, 2};
  q.attrs["axis"] = ir::Attribute::of_int(1);
  EXPECT_TRUE(check_op(q));

  OpCheck d = contrib_check("DequantizeLinear");
  d.inputs = {random_ints<uint8_t>({5, 13}, 18, 0, 255), f32({}, {0.037f}), u8(128)};
  d.constant_inputs = {1, 2};
  d.tol_f32 = 1e-7;
  d.tol_f16 = 2e-2;
  EXPECT_TRUE(check_op(d));
}

}  // namespace
}  // namespace kiln::planner
