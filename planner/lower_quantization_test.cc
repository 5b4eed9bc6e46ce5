// Differential tests of the quantized ops' lowerings (lower_quantize.cc,
// lower_integer_linalg.cc) against the reference executor in every backend
// config. Integer results must be exact (tolerance 0) in fp16 plans too:
// the precision policy keeps what QuantizeLinear / DynamicQuantizeLinear
// quantize in fp32, and the integer ops never touch floats; only the
// dequantized float outputs get fp16's tolerance.
#include <string>
#include <vector>

#include "engine/ops/op_test_util.h"
#include "planner/testing/op_check.h"
#include "planner/testing/random_ints.h"
#include "platform/vulkan/vk_test_env.h"

namespace kiln::planner {
namespace {

using testing::check_op;
using testing::OpCheck;
using testing::random_ints;

class LowerQuantization : public vk::testing::VulkanTest {};

// Multiples of 1/8 in [-40, 40]: divided by a power-of-two scale they land
// on exact .5 ties, which must round to even.
Tensor eighths(const Shape& shape, uint64_t seed) {
  Tensor t = random_ints<int32_t>(shape, seed, -320, 320);
  std::vector<float> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(static_cast<float>(t.get_i64(i)) / 8.0f);
  return Tensor::from_vector<float>(shape, v);
}

// A check of `op` that must dispatch kernels: integer graph inputs of at
// most 64 elements are host values, and a node reading only such values is
// computed on the host (no fallback, but no kernel either).
OpCheck device_check(const char* op) {
  OpCheck c;
  c.op = op;
  c.min_dispatches = 1;
  return c;
}

Tensor f32(Shape s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), v); }
ir::Attribute i_attr(int64_t v) { return ir::Attribute::of_int(v); }

TEST_F(LowerQuantization, QuantizeLinearRoundsTiesToEvenPerTensor) {
  for (const bool signed_out : {false, true}) {
    OpCheck c;
    c.op = "QuantizeLinear";
    Tensor zp = signed_out ? Tensor::from_vector<int8_t>({}, {-3}) : Tensor::from_vector<uint8_t>({}, {100});
    c.inputs = {eighths({2, 3, 5, 7}, 1), f32({}, {0.25f}), zp};
    c.constant_inputs = {1, 2};
    c.tol_f32 = c.tol_f16 = 0;
    EXPECT_TRUE(check_op(c)) << (signed_out ? "int8" : "uint8");
  }
}

TEST_F(LowerQuantization, QuantizeLinearOfFloat16RoundsTheQuotientToFloat16) {
  // numpy divides two float16 operands in float16: the quotient is rounded
  // to fp16 before rint, which moves some results by one step.
  Tensor x = testing::random_tensor({4, 33}, 40, -30.0f, 30.0f);
  std::vector<Half> h;
  for (float v : x.to_f32_vector()) h.push_back(Half(v));
  OpCheck c = device_check("QuantizeLinear");
  c.inputs = {Tensor::from_vector<Half>({4, 33}, h), Tensor::from_vector<Half>({}, {Half(0.3f)}),
              Tensor::from_vector<int8_t>({}, {1})};
  c.constant_inputs = {1, 2};
  c.tol_f32 = c.tol_f16 = 0;
  EXPECT_TRUE(check_op(c));
}

TEST_F(LowerQuantization, QuantizeLinearPerAxisAndBlocked) {
  OpCheck axis = device_check("QuantizeLinear");
  axis.inputs = {testing::random_tensor({2, 3, 4, 5}, 2, -3, 3), f32({3}, {0.013f, 0.027f, 0.0091f}),
                 Tensor::from_vector<int8_t>({3}, {0, -5, 7})};
  axis.constant_inputs = {1, 2};
  axis.attrs["axis"] = i_attr(1);
  axis.tol_f32 = axis.tol_f16 = 0;
  EXPECT_TRUE(check_op(axis));

  OpCheck blocked = device_check("QuantizeLinear");
  blocked.inputs = {testing::random_tensor({3, 7}, 3, -2, 2),
                    f32({3, 4}, {0.01f, 0.02f, 0.03f, 0.04f, 0.05f, 0.06f, 0.07f, 0.08f, 0.09f, 0.1f, 0.11f, 0.12f})};
  blocked.constant_inputs = {1};
  blocked.attrs["axis"] = i_attr(-1);
  blocked.attrs["block_size"] = i_attr(2);
  blocked.tol_f32 = blocked.tol_f16 = 0;
  EXPECT_TRUE(check_op(blocked));
}

TEST_F(LowerQuantization, DequantizeLinear) {
  OpCheck axis = device_check("DequantizeLinear");
  axis.inputs = {random_ints<int8_t>({2, 4, 3, 3}, 4, -128, 127), f32({4}, {0.5f, 0.125f, 2.0f, 0.0625f}),
                 Tensor::from_vector<int8_t>({4}, {0, 3, -2, 1})};
  axis.constant_inputs = {1, 2};
  axis.tol_f32 = 0;
  EXPECT_TRUE(check_op(axis));

  OpCheck tensor = device_check("DequantizeLinear");
  tensor.inputs = {random_ints<uint8_t>({5, 13}, 5, 0, 255), f32({}, {0.037f}),
                   Tensor::from_vector<uint8_t>({}, {128})};
  tensor.constant_inputs = {1, 2};
  tensor.tol_f32 = 1e-7;
  EXPECT_TRUE(check_op(tensor));
}

TEST_F(LowerQuantization, DynamicQuantizeLinear) {
  OpCheck c = device_check("DynamicQuantizeLinear");
  c.inputs = {testing::random_tensor({3, 70}, 6, -1.5f, 4.0f)};
  c.num_outputs = 3;
  c.tol_f32 = 0;                            // fp16: the y_scale output is stored in fp16
  c.min_dispatches = c.max_dispatches = 2;  // range, quantize
  EXPECT_TRUE(check_op(c));

  // Past 64K elements the range is folded by 256 workgroups first.
  OpCheck big = device_check("DynamicQuantizeLinear");
  big.inputs = {testing::random_tensor({300, 301}, 7, -7.0f, 2.5f)};
  big.num_outputs = 3;
  big.tol_f32 = 0;
  big.min_dispatches = big.max_dispatches = 3;
  big.expect_kernel = "dynamic_quantize_range_partial";
  EXPECT_TRUE(check_op(big));
}

TEST_F(LowerQuantization, MatMulIntegerPerRowAndColumnZeroPointsWithBatchBroadcast) {
  OpCheck c = device_check("MatMulInteger");
  c.inputs = {random_ints<uint8_t>({2, 3, 7, 9}, 7, 0, 255), random_ints<int8_t>({3, 9, 5}, 8, -128, 127),
              random_ints<uint8_t>({7}, 9, 0, 255), random_ints<int8_t>({5}, 10, -10, 10)};
  c.constant_inputs = {1, 2, 3};
  c.tol_f32 = c.tol_f16 = 0;
  c.expect_kernel = "matmul_integer_int_tile";
  EXPECT_TRUE(check_op(c));
}

TEST_F(LowerQuantization, FormsTheDeviceDoesNotHandleRunOnTheHost) {
  // An N-D zero point ([batch, M, 1]) and an int32 QuantizeLinear input are
  // host fallbacks, with the reference's results.
  OpCheck m;
  m.op = "MatMulInteger";
  m.inputs = {random_ints<uint8_t>({2, 7, 9}, 50, 0, 255), random_ints<uint8_t>({9, 5}, 51, 0, 255),
              random_ints<uint8_t>({2, 7, 1}, 52, 0, 255)};
  m.constant_inputs = {1, 2};
  m.require_device = false;
  m.tol_f32 = m.tol_f16 = 0;
  EXPECT_TRUE(check_op(m));
  OpCheck q;
  q.op = "QuantizeLinear";
  q.inputs = {random_ints<int32_t>({9, 10}, 53, -1000, 1000), f32({}, {3.7f}), Tensor::from_vector<int8_t>({}, {2})};
  q.constant_inputs = {1, 2};
  q.require_device = false;
  q.tol_f32 = q.tol_f16 = 0;
  EXPECT_TRUE(check_op(q));
}

TEST_F(LowerQuantization, MatMulIntegerSeveralTilesWithEdges) {
  // 37 x 45 over K = 50: partial tiles in M, N and K; B and its zero point
  // from the graph (device tensors), A's zero point one value.
  OpCheck c = device_check("MatMulInteger");
  c.inputs = {random_ints<int8_t>({37, 50}, 30, -128, 127), random_ints<uint8_t>({50, 45}, 31, 0, 255),
              Tensor::from_vector<int8_t>({}, {-3}), random_ints<uint8_t>({45}, 32, 0, 255)};
  c.constant_inputs = {2};
  c.tol_f32 = c.tol_f16 = 0;
  EXPECT_TRUE(check_op(c));
}

TEST_F(LowerQuantization, LargeProblemsUse64x64TilesWithEdges) {
  // M and N of 64 or more take the 64 x 64 tile (128 invocations, 8 x 4
  // each): partial tiles in M, N and K, batched; and a convolution (A loaded
  // m-fastest through the im2col view) with 81 pixels and 66 channels.
  OpCheck mm = device_check("MatMulInteger");
  mm.inputs = {random_ints<uint8_t>({2, 70, 40}, 33, 0, 255), random_ints<int8_t>({40, 67}, 34, -128, 127),
               Tensor::from_vector<uint8_t>({}, {131}), Tensor::from_vector<int8_t>({}, {2})};
  mm.constant_inputs = {1, 2, 3};
  mm.expect_kernel = "tile64x64";
  mm.tol_f32 = mm.tol_f16 = 0;
  EXPECT_TRUE(check_op(mm));

  OpCheck conv = device_check("ConvInteger");
  conv.inputs = {random_ints<uint8_t>({1, 5, 9, 9}, 35, 0, 255), random_ints<int8_t>({66, 5, 3, 3}, 36, -127, 127),
                 Tensor::from_vector<uint8_t>({}, {128})};
  conv.constant_inputs = {1, 2};
  conv.attrs["pads"] = ir::Attribute::of_ints({1, 1, 1, 1});
  conv.expect_kernel = "tile64x64";
  conv.tol_f32 = conv.tol_f16 = 0;
  EXPECT_TRUE(check_op(conv));
}

TEST_F(LowerQuantization, ConvIntegerOneAndThreeSpatialAxes) {
  OpCheck c1 = device_check("ConvInteger");
  c1.inputs = {random_ints<int8_t>({2, 3, 11}, 33, -128, 127), random_ints<int8_t>({5, 3, 4}, 34, -128, 127)};
  c1.constant_inputs = {1};
  c1.attrs["auto_pad"] = ir::Attribute::of_string("SAME_UPPER");
  c1.attrs["strides"] = ir::Attribute::of_ints({2});
  c1.tol_f32 = c1.tol_f16 = 0;
  EXPECT_TRUE(check_op(c1));

  OpCheck c3 = device_check("ConvInteger");
  c3.inputs = {random_ints<uint8_t>({1, 2, 4, 5, 6}, 35, 0, 255), random_ints<uint8_t>({3, 2, 2, 3, 2}, 36, 0, 255),
               Tensor::from_vector<uint8_t>({}, {128}), Tensor::from_vector<uint8_t>({}, {127})};
  c3.constant_inputs = {1, 2, 3};
  c3.attrs["pads"] = ir::Attribute::of_ints({1, 0, 1, 0, 1, 1});
  c3.tol_f32 = c3.tol_f16 = 0;
  c3.expect_kernel = "conv_integer_int";  // the scalar or the int8 dot-product GEMM (lower_int8_dot_test.cc)
  EXPECT_TRUE(check_op(c3));
}

TEST_F(LowerQuantization, QLinearMatMulPerColumnScales) {
  OpCheck c = device_check("QLinearMatMul");
  c.inputs = {random_ints<uint8_t>({6, 40}, 11, 0, 255),
              f32({}, {0.02f}),
              Tensor::from_vector<uint8_t>({}, {131}),
              random_ints<int8_t>({40, 5}, 12, -127, 127),
              f32({5}, {0.003f, 0.004f, 0.005f, 0.006f, 0.007f}),
              Tensor::from_vector<int8_t>({}, {0}),
              f32({}, {0.05f}),
              Tensor::from_vector<int8_t>({}, {-4})};
  c.constant_inputs = {1, 2, 3, 4, 5, 6, 7};
  c.tol_f32 = c.tol_f16 = 0;
  EXPECT_TRUE(check_op(c));
}

TEST_F(LowerQuantization, QLinearMatMulRoundsTheProductAsDouble) {
  // acc * multiplier whose float32 product is exactly k + 0.5 while the
  // exact (double) product is just off it: ONNX's numpy rounds the double,
  // so each row gives 3 where rint of the float product would give 4 or 2.
  // 72 rows: small integer graph inputs (<= 64 elements) are host values,
  // computed on the host.
  const std::vector<uint8_t> pattern = {3, 5, 6, 7, 9, 10};
  const std::vector<float> pattern_mult = {1.1666666f, 0.7f, 0.5833333f, 0.35714287f, 0.2777778f, 0.35f};
  std::vector<uint8_t> acc;
  std::vector<float> mult;
  for (int r = 0; r < 12; ++r) {
    acc.insert(acc.end(), pattern.begin(), pattern.end());
    mult.insert(mult.end(), pattern_mult.begin(), pattern_mult.end());
  }
  OpCheck c = device_check("QLinearMatMul");
  c.inputs = {Tensor::from_vector<uint8_t>({72, 1}, acc),
              f32({72}, mult),
              Tensor::from_vector<uint8_t>({}, {0}),
              Tensor::from_vector<uint8_t>({1, 1}, {1}),
              f32({}, {1.0f}),
              Tensor::from_vector<uint8_t>({}, {0}),
              f32({}, {1.0f}),
              Tensor::from_vector<int8_t>({}, {0})};
  c.constant_inputs = {1, 2, 3, 4, 5, 6, 7};
  c.tol_f32 = c.tol_f16 = 0;
  EXPECT_TRUE(check_op(c));
  auto reference = ops::testing::run_op(c.op, c.inputs);
  ASSERT_TRUE(reference.ok()) << reference.status().to_string();
  EXPECT_EQ((*reference)[0].to_i64_vector(), std::vector<int64_t>(72, 3));
}

TEST_F(LowerQuantization, ConvIntegerGroupedStridedPaddedPerChannelZeroPoint) {
  OpCheck c = device_check("ConvInteger");
  c.inputs = {random_ints<uint8_t>({1, 4, 7, 7}, 13, 0, 255), random_ints<uint8_t>({6, 2, 3, 3}, 14, 0, 255),
              Tensor::from_vector<uint8_t>({}, {77}), random_ints<uint8_t>({6}, 15, 100, 150)};
  c.constant_inputs = {1, 2, 3};
  c.attrs["group"] = i_attr(2);
  c.attrs["strides"] = ir::Attribute::of_ints({2, 1});
  c.attrs["dilations"] = ir::Attribute::of_ints({1, 2});
  c.attrs["pads"] = ir::Attribute::of_ints({1, 2, 0, 1});
  c.tol_f32 = c.tol_f16 = 0;
  EXPECT_TRUE(check_op(c));
}

TEST_F(LowerQuantization, DepthwiseConvsLoopOverTheirWindows) {
  OpCheck q = device_check("QLinearConv");
  std::vector<float> scales;
  for (int i = 0; i < 8; ++i) scales.push_back(0.002f + 0.0007f * static_cast<float>(i));
  q.inputs = {random_ints<uint8_t>({1, 8, 9, 9}, 41, 0, 255),
              f32({}, {0.03f}),
              Tensor::from_vector<uint8_t>({}, {128}),
              random_ints<int8_t>({8, 1, 3, 3}, 42, -127, 127),
              f32({8}, scales),
              Tensor::from_vector<int8_t>({8}, std::vector<int8_t>(8, 0)),
              f32({}, {0.02f}),
              Tensor::from_vector<uint8_t>({}, {110}),
              random_ints<int32_t>({8}, 43, -500, 500)};
  q.constant_inputs = {1, 2, 3, 4, 5, 6, 7, 8};
  q.attrs["group"] = i_attr(8);
  q.attrs["pads"] = ir::Attribute::of_ints({1, 1, 1, 1});
  q.attrs["strides"] = ir::Attribute::of_ints({2, 2});
  q.tol_f32 = q.tol_f16 = 0;
  q.expect_kernel = "qlinear_conv_direct";
  EXPECT_TRUE(check_op(q));

  OpCheck c = device_check("ConvInteger");  // channel multiplier 2, per-channel zero points
  c.inputs = {random_ints<uint8_t>({2, 4, 6, 6}, 44, 0, 255), random_ints<uint8_t>({8, 1, 3, 3}, 45, 0, 255),
              Tensor::from_vector<uint8_t>({}, {5}), random_ints<uint8_t>({8}, 46, 0, 255)};
  c.constant_inputs = {1, 2, 3};
  c.attrs["group"] = i_attr(4);
  c.attrs["dilations"] = ir::Attribute::of_ints({2, 1});
  c.tol_f32 = c.tol_f16 = 0;
  c.expect_kernel = "conv_integer_direct";
  EXPECT_TRUE(check_op(c));
}

TEST_F(LowerQuantization, QLinearConvPerChannelWithBias) {
  OpCheck c = device_check("QLinearConv");
  c.inputs = {random_ints<uint8_t>({1, 3, 8, 8}, 16, 0, 255),
              f32({}, {0.021f}),
              Tensor::from_vector<uint8_t>({}, {120}),
              random_ints<int8_t>({4, 3, 3, 3}, 17, -127, 127),
              f32({4}, {0.002f, 0.003f, 0.0041f, 0.0017f}),
              Tensor::from_vector<int8_t>({4}, {0, 0, 0, 0}),
              f32({}, {0.04f}),
              Tensor::from_vector<int8_t>({}, {3}),
              random_ints<int32_t>({4}, 18, -2000, 2000)};
  c.constant_inputs = {1, 2, 3, 4, 5, 6, 7, 8};
  c.attrs["pads"] = ir::Attribute::of_ints({1, 1, 1, 1});
  c.tol_f32 = c.tol_f16 = 0;
  EXPECT_TRUE(check_op(c));
}

}  // namespace
}  // namespace kiln::planner
