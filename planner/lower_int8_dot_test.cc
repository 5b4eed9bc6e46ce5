// The integer GEMM's packed int8 dot-product path (gemm_int.h,
// shaders/gemm_int8_dot.comp) against the reference executor, bit for bit:
// QLinearConv, QLinearMatMul, ConvInteger, MatMulInteger and ONNX Runtime's
// QGemm with constant weights, each with the path on (the test device's default where it has
// the dot products) and forced off (the kiln.kernel hint int8_dot=off, the
// scalar int32 kernel); and the plans: the scalar kernel on a target
// without the dot products, for weights that do not fit int8 after their
// zero point, and for a B that is not a constant.
#include <string>
#include <vector>

#include "engine/ops/quantization.h"
#include "planner/execution_plan.h"
#include "planner/plan_hints.h"
#include "planner/testing/op_check.h"
#include "planner/testing/random_ints.h"
#include "platform/vulkan/vk_test_env.h"

namespace kiln::planner {
namespace {

using testing::check_op;
using testing::OpCheck;
using testing::random_ints;

class LowerInt8Dot : public vk::testing::VulkanTest {};

bool device_has_dot_products() { return vk::testing::test_device()->enabled().shader_integer_dot_product; }

Tensor f32(Shape s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), v); }

// Checks `c` exactly with the dot-product path on (its kernel must be the
// dot-product one where the device has it) and forced off (the scalar
// kernel, in one config: it is the baseline the other tests cover).
void check_on_and_off(OpCheck c) {
  c.tol_f32 = c.tol_f16 = 0;
  c.min_dispatches = 1;
  OpCheck on = c;
  on.cooperative_matrix = false;  // the int8 tensor-core kernel has its own tests (gemm_int8_coopmat_test.cc)
  if (device_has_dot_products()) on.expect_kernel = "_int8dot_tile";
  EXPECT_TRUE(check_op(on)) << "int8_dot on";
  OpCheck off = c;
  off.annotations[kKernelKey] = "int8_dot=off";
  off.expect_kernel = "_int_tile";
  off.configs = {testing::BackendConfig{}};
  EXPECT_TRUE(check_op(off)) << "int8_dot off";
}

TEST_F(LowerInt8Dot, ConvIntegerUint8ActivationsPerChannelWeightZeroPoints) {
  // uint8 x (OpSUDot) with zero point 131, padded (pads read as the zero
  // point); int8 weights with per-channel zero points, W - zw within int8;
  // K = 5 * 9 = 45 (not a multiple of 4), 66 channels and 81 pixels: the
  // 64 x 64 tile with edges in M, N and K.
  OpCheck c;
  c.op = "ConvInteger";
  c.inputs = {random_ints<uint8_t>({1, 5, 9, 9}, 60, 0, 255), random_ints<int8_t>({66, 5, 3, 3}, 61, -100, 100),
              Tensor::from_vector<uint8_t>({}, {131}), random_ints<int8_t>({66}, 62, -20, 20)};
  c.constant_inputs = {1, 2, 3};
  c.attrs["pads"] = ir::Attribute::of_ints({1, 1, 1, 1});
  check_on_and_off(c);
}

TEST_F(LowerInt8Dot, ConvIntegerInt8GroupedStridedDilated) {
  // int8 x (OpSDot), two groups of 3 output channels (the packed weights
  // per group), stride, dilation and asymmetric pads; batch 2.
  OpCheck c;
  c.op = "ConvInteger";
  c.inputs = {random_ints<int8_t>({2, 4, 8, 7}, 63, -128, 127), random_ints<int8_t>({6, 2, 3, 2}, 64, -128, 127),
              Tensor::from_vector<int8_t>({}, {-5})};
  c.constant_inputs = {1, 2};
  c.attrs["group"] = ir::Attribute::of_int(2);
  c.attrs["strides"] = ir::Attribute::of_ints({2, 1});
  c.attrs["dilations"] = ir::Attribute::of_ints({1, 2});
  c.attrs["pads"] = ir::Attribute::of_ints({1, 2, 0, 1});
  check_on_and_off(c);
}

TEST_F(LowerInt8Dot, MatMulIntegerPerRowZeroPointsAndUint8Weights) {
  // int8 A with per-row zero points (subtracted once per element at the
  // end), uint8 B with zero point 128 (B - 128 is int8), batched A over one
  // B; 37 x 45 over K = 50.
  OpCheck c;
  c.op = "MatMulInteger";
  c.inputs = {random_ints<int8_t>({2, 37, 50}, 65, -128, 127), random_ints<uint8_t>({50, 45}, 66, 0, 255),
              random_ints<int8_t>({37}, 67, -128, 127), Tensor::from_vector<uint8_t>({}, {128})};
  c.constant_inputs = {1, 2, 3};
  check_on_and_off(c);
}

TEST_F(LowerInt8Dot, QLinearConvPerChannelWithBias) {
  std::vector<float> scales;
  for (int i = 0; i < 12; ++i) scales.push_back(0.0015f + 0.0003f * static_cast<float>(i));
  OpCheck c;
  c.op = "QLinearConv";
  c.inputs = {random_ints<uint8_t>({1, 8, 10, 10}, 68, 0, 255),
              f32({}, {0.021f}),
              Tensor::from_vector<uint8_t>({}, {120}),
              random_ints<int8_t>({12, 8, 3, 3}, 69, -127, 127),
              f32({12}, scales),
              Tensor::from_vector<int8_t>({12}, std::vector<int8_t>(12, 0)),
              f32({}, {0.04f}),
              Tensor::from_vector<uint8_t>({}, {3}),
              random_ints<int32_t>({12}, 70, -2000, 2000)};
  c.constant_inputs = {1, 2, 3, 4, 5, 6, 7, 8};
  c.attrs["pads"] = ir::Attribute::of_ints({1, 1, 1, 1});
  check_on_and_off(c);
}

TEST_F(LowerInt8Dot, QLinearMatMulPerColumnScales) {
  OpCheck c;
  c.op = "QLinearMatMul";
  c.inputs = {random_ints<uint8_t>({6, 40}, 71, 0, 255),
              f32({}, {0.02f}),
              Tensor::from_vector<uint8_t>({}, {131}),
              random_ints<int8_t>({40, 5}, 72, -127, 127),
              f32({5}, {0.003f, 0.004f, 0.005f, 0.006f, 0.007f}),
              Tensor::from_vector<int8_t>({}, {0}),
              f32({}, {0.05f}),
              Tensor::from_vector<int8_t>({}, {-4})};
  c.constant_inputs = {1, 2, 3, 4, 5, 6, 7};
  check_on_and_off(c);
}

TEST_F(LowerInt8Dot, QGemmTransposedPerColumnZeroPoints) {
  // com.microsoft QGemm, transA and transB (B packed from [N, K]), int8 B
  // with per-column zero points, an int32 C, alpha, a uint8 output.
  OpCheck c;
  c.op = "QGemm";
  c.domain = ops::kMicrosoftDomain;
  c.inputs = {random_ints<uint8_t>({40, 7}, 75, 0, 255),  // A^T [K, M]
              f32({}, {0.02f}),
              Tensor::from_vector<uint8_t>({}, {131}),
              random_ints<int8_t>({9, 40}, 76, -120, 120),  // B^T [N, K]
              f32({9}, {0.003f, 0.004f, 0.005f, 0.006f, 0.007f, 0.008f, 0.009f, 0.01f, 0.011f}),
              Tensor::from_vector<int8_t>({9}, {0, 1, -1, 2, -2, 3, -3, 4, -4}),
              random_ints<int32_t>({9}, 77, -2000, 2000),
              f32({}, {0.05f}),
              Tensor::from_vector<uint8_t>({}, {128})};
  c.constant_inputs = {1, 2, 3, 4, 5, 6, 7, 8};
  c.attrs["transA"] = ir::Attribute::of_int(1);
  c.attrs["transB"] = ir::Attribute::of_int(1);
  c.attrs["alpha"] = ir::Attribute::of_float(0.75f);
  check_on_and_off(c);
}

// The kernel build_plan picks for a one-node integer GEMM graph.
std::string planned_kernel(const TargetInfo& t, const char* op, DType a_type, const Shape& a_shape,
                           const std::vector<Tensor>& constants) {
  ir::Graph g;
  std::vector<ir::ValueId> ins = {g.add_input("a", a_type, ir::SymShape::from_concrete(a_shape))};
  for (size_t i = 0; i < constants.size(); ++i) ins.push_back(g.add_constant("c" + std::to_string(i), constants[i]));
  const ir::ValueId y = g.add_value("y", DType::kUndefined, ir::SymShape::unranked());
  const ir::NodeId n = g.add_node(op, ins, {y});
  EXPECT_TRUE(testing::finish_one_node_graph(g, n).ok());
  auto plan = build_plan(g, t, PlanOptions{});
  EXPECT_TRUE(plan.ok()) << plan.status().to_string();
  if (!plan.ok() || plan->dispatch_count() != 1) return "";
  return plan->steps[0].kernel.name;
}

TEST(LowerInt8DotPlan, ScalarKernelWhereTheDotProductsDoNotApply) {
  TargetInfo dot;
  dot.vulkan_version = (1u << 22) | (3u << 12);
  dot.integer_dot_product = true;
  const Tensor w = random_ints<int8_t>({40, 24}, 73, -128, 127);
  EXPECT_EQ(planned_kernel(dot, "MatMulInteger", DType::kUInt8, {30, 40}, {w}), "matmul_integer_int8dot_tile32x32");
  // No dot products on the device, or a Vulkan 1.2 target (SPIR-V 1.5: not core).
  TargetInfo none = dot;
  none.integer_dot_product = false;
  EXPECT_EQ(planned_kernel(none, "MatMulInteger", DType::kUInt8, {30, 40}, {w}), "matmul_integer_int_tile32x32");
  TargetInfo v12 = dot;
  v12.vulkan_version = (1u << 22) | (2u << 12);
  EXPECT_EQ(planned_kernel(v12, "MatMulInteger", DType::kUInt8, {30, 40}, {w}), "matmul_integer_int_tile32x32");
  // uint8 weights with zero point 0 (values above 127 do not fit int8).
  const Tensor wu = random_ints<uint8_t>({40, 24}, 74, 0, 255);
  EXPECT_EQ(planned_kernel(dot, "MatMulInteger", DType::kUInt8, {30, 40}, {wu}), "matmul_integer_int_tile32x32");
  // ... which fit with zero point 128.
  EXPECT_EQ(planned_kernel(dot, "MatMulInteger", DType::kUInt8, {30, 40},
                           {wu, Tensor::from_vector<uint8_t>({}, {0}), Tensor::from_vector<uint8_t>({}, {128})}),
            "matmul_integer_int8dot_tile32x32");
}

}  // namespace
}  // namespace kiln::planner
