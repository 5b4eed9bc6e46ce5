// The integer GEMM on int8 cooperative matrices (gemm_int.h,
// shaders/gemm_int8_coopmat.comp): which kernel the planner picks on a
// target with int8 fragment shapes, SPIR-V validity of every such kernel in
// both dialects (NV as compiled, checked by spirv-val; KHR as the runtime
// rewrites it, checked structurally), and results against the reference
// executor bit for bit on the test device — through the tensor cores where
// it has int8 shapes (the H100), else through the dot-product kernel, so
// the same cases guard both.
#include <string>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/runtime/vulkan/vulkan_model.h"
#include "planner/execution_plan.h"
#include "planner/glsl_codegen.h"
#include "planner/testing/op_check.h"
#include "planner/testing/random_ints.h"
#include "platform/vulkan/coopmat_khr.h"
#include "platform/vulkan/shader_compiler.h"
#include "platform/vulkan/vk_test_env.h"

namespace kiln::planner {
namespace {

using testing::check_op;
using testing::OpCheck;
using testing::random_ints;

constexpr uint32_t kVulkan13 = (1u << 22) | (3u << 12);

// An H100 as the planner sees it: int8 dot products and the int8 shapes
// NVIDIA lists for both cooperative-matrix extensions.
TargetInfo int8_target(CoopMatFlavour flavour) {
  TargetInfo t;
  t.vulkan_version = kVulkan13;
  t.integer_dot_product = true;
  t.fp16_storage = t.fp16_arithmetic = true;
  t.subgroup_size = 32;
  t.max_shared_memory = 49152;
  t.compute_units = 132;
  t.coopmat = flavour;
  t.coopmat_f16_shapes = {{16, 16, 16, true}};
  t.coopmat_s8_shapes = {{16, 8, 32, false}, {16, 16, 32, false}};
  return t;
}

Tensor f32(Shape s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), v); }

// A one-node graph whose input "a" has `a_type`, the rest constants.
ir::Graph int_graph(const char* op, DType a_type, const Shape& a_shape, const std::vector<Tensor>& constants,
                    std::map<std::string, ir::Attribute> attrs = {}) {
  ir::Graph g;
  std::vector<ir::ValueId> ins = {g.add_input("a", a_type, ir::SymShape::from_concrete(a_shape))};
  for (size_t i = 0; i < constants.size(); ++i) ins.push_back(g.add_constant("c" + std::to_string(i), constants[i]));
  const ir::ValueId y = g.add_value("y", DType::kUndefined, ir::SymShape::unranked());
  const ir::NodeId n = g.add_node(op, ins, {y}, std::move(attrs));
  EXPECT_TRUE(testing::finish_one_node_graph(g, n).ok());
  return g;
}

// QLinearConv's constants after x: x_scale, x_zero_point, W [oc, ic, 3, 3]
// (int8), per-channel w_scale, w_zero_point 0, y_scale, y_zero_point, bias.
std::vector<Tensor> qconv_constants(int64_t oc, int64_t ic, uint64_t seed) {
  std::vector<float> ws;
  for (int64_t i = 0; i < oc; ++i) ws.push_back(0.001f + 0.00002f * static_cast<float>(i));
  return {f32({}, {0.02f}),
          Tensor::from_vector<uint8_t>({}, {117}),
          random_ints<int8_t>({oc, ic, 3, 3}, seed, -127, 127),
          f32({oc}, ws),
          Tensor::from_vector<int8_t>({oc}, std::vector<int8_t>(static_cast<size_t>(oc), 0)),
          f32({}, {0.05f}),
          Tensor::from_vector<uint8_t>({}, {9}),
          random_ints<int32_t>({oc}, seed + 1, -3000, 3000)};
}

// Plans `g` for `t`, expects the dispatches' names to be `names`, and
// compiles each for Vulkan 1.3: spirv-val on NV modules, the KHR rewrite's
// structural check on a kKHR target's tensor-core ones.
void expect_plan(const ir::Graph& g, const TargetInfo& t, const std::vector<std::string>& names) {
  auto plan = build_plan(g, t, PlanOptions{});
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  std::vector<std::string> got;
  for (const PlanStep& s : plan->steps) got.push_back(s.kernel.name);
  EXPECT_EQ(got, names);
  auto compiler = vk::ShaderCompiler::create();
  ASSERT_TRUE(compiler.ok());
  for (const PlanStep& step : plan->steps) {
    auto glsl = generate_glsl(step.kernel, t);
    ASSERT_TRUE(glsl.ok()) << glsl.status().to_string();
    vk::CompileOptions co;
    co.vulkan_version = kVulkan13;
    co.source_name = glsl->name + ".comp";
    co.cooperative_matrix_khr =
        t.coopmat == CoopMatFlavour::kKHR && glsl->glsl.find("GL_NV_cooperative_matrix") != std::string::npos;
    auto spirv = (*compiler)->compile(glsl->glsl, co);
    ASSERT_TRUE(spirv.ok()) << spirv.status().to_string() << "\n" << glsl->glsl;
    if (co.cooperative_matrix_khr) {
      const Status check = vk::check_khr_cooperative_matrix(*spirv);
      EXPECT_TRUE(check.ok()) << glsl->name << ": " << check.to_string();
      EXPECT_FALSE(vk::uses_nv_cooperative_matrix(*spirv)) << glsl->name;
    } else {
      EXPECT_EQ(testing::spirv_val_errors(*spirv, kVulkan13), "") << glsl->glsl;
    }
    auto reflection = vk::reflect(*spirv);
    ASSERT_TRUE(reflection.ok()) << reflection.status().to_string();
    EXPECT_EQ(reflection->local_size, glsl->local_size);
  }
}

TEST(GemmInt8CoopMatPlan, KernelsPerShapeAndDialect) {
  for (CoopMatFlavour flavour : {CoopMatFlavour::kNV, CoopMatFlavour::kKHR}) {
    SCOPED_TRACE(flavour == CoopMatFlavour::kNV ? "NV" : "KHR");
    const TargetInfo t = int8_target(flavour);
    // A batch-1 convolution: 4 tiles of 64 x 128 over K = 576, split into
    // 9 slices of 64, then the int32 reduce pass that requantizes.
    expect_plan(int_graph("QLinearConv", DType::kUInt8, {1, 64, 14, 14}, qconv_constants(128, 64, 80),
                          {{"pads", ir::Attribute::of_ints({1, 1, 1, 1})}}),
                t, {"qlinear_conv_splitk_int8cm64x128", "qlinear_conv_splitk_reduce"});
    // Enough tiles (32 x 4 of 64 x 64): one kernel; int8 A (no offset).
    expect_plan(int_graph("MatMulInteger", DType::kInt8, {2048, 64}, {random_ints<int8_t>({64, 256}, 81, -128, 127)}),
                t, {"matmul_integer_int8cm64x64"});
    // A few rows: 32-row tiles.
    expect_plan(int_graph("MatMulInteger", DType::kUInt8, {20, 96}, {random_ints<int8_t>({96, 48}, 82, -128, 127)}),
                t, {"matmul_integer_int8cm32x64"});
    // Under 16 rows: the dot-product kernel.
    expect_plan(int_graph("MatMulInteger", DType::kUInt8, {8, 96}, {random_ints<int8_t>({96, 48}, 83, -128, 127)}),
                t, {"matmul_integer_int8dot_tile16x32"});
  }
  // Without int8 shapes, or without cooperative matrices: the dot products.
  TargetInfo no_s8 = int8_target(CoopMatFlavour::kNV);
  no_s8.coopmat_s8_shapes.clear();
  expect_plan(int_graph("MatMulInteger", DType::kInt8, {2048, 64}, {random_ints<int8_t>({64, 256}, 81, -128, 127)}),
              no_s8, {"matmul_integer_int8dot_tile64x64"});
  TargetInfo none = int8_target(CoopMatFlavour::kNone);
  expect_plan(int_graph("MatMulInteger", DType::kInt8, {2048, 64}, {random_ints<int8_t>({64, 256}, 81, -128, 127)}),
              none, {"matmul_integer_int8dot_tile64x64"});
}

// ---------------------------------------------------------------------------
// On the test device, bit for bit against the reference executor.

class GemmInt8CoopMat : public vk::testing::VulkanTest {};

bool device_has_int8_coopmat() {
  return !runtime::target_info(*vk::testing::test_device()).coopmat_s8_shapes.empty();
}

// Checks `c` exactly, expecting `cm_kernel` where the device has int8
// cooperative matrices, and again with them off (the dot-product kernel).
void check_exact(OpCheck c, const std::string& cm_kernel) {
  c.tol_f32 = c.tol_f16 = 0;
  c.configs = {testing::BackendConfig{}, testing::BackendConfig{Storage::kImage, ElemType::kF16}};
  c.runs = 2;
  OpCheck on = c;
  if (device_has_int8_coopmat()) on.expect_kernel = cm_kernel;
  EXPECT_TRUE(check_op(on)) << "cooperative matrices on";
  OpCheck off = c;
  off.cooperative_matrix = false;
  off.expect_kernel = vk::testing::test_device()->enabled().shader_integer_dot_product ? "_int8dot_tile" : "_int_tile";
  EXPECT_TRUE(check_op(off)) << "cooperative matrices off";
}

TEST_F(GemmInt8CoopMat, QLinearConvSplitKUint8Activations) {
  // 14 x 14 pixels (M = 196, not a multiple of the tile), 72 channels in
  // (K = 648: the last slice and the last word partial), 130 out (N past a
  // tile); padding reads the zero point; per-channel scales and a bias.
  OpCheck c;
  c.op = "QLinearConv";
  c.inputs = {random_ints<uint8_t>({1, 72, 14, 14}, 90, 0, 255)};
  for (Tensor& t : qconv_constants(130, 72, 91)) c.inputs.push_back(std::move(t));
  c.constant_inputs = {1, 2, 3, 4, 5, 6, 7, 8};
  c.attrs["pads"] = ir::Attribute::of_ints({1, 1, 1, 1});
  check_exact(c, "_splitk_int8cm");
}

TEST_F(GemmInt8CoopMat, QLinearConvTapMajorUnitsStridedAndGrouped) {
  // Channels per group a multiple of 16: K packed tap-major and A read 16
  // channels of one pixel at a time (gemm_a16), padding the zero point.
  // Stride 2 over a 9 x 9 input (M = 25), 40 outputs.
  OpCheck c;
  c.op = "QLinearConv";
  c.inputs = {random_ints<uint8_t>({1, 32, 9, 9}, 99, 0, 255)};
  for (Tensor& t : qconv_constants(40, 32, 100)) c.inputs.push_back(std::move(t));
  c.constant_inputs = {1, 2, 3, 4, 5, 6, 7, 8};
  c.attrs["pads"] = ir::Attribute::of_ints({1, 1, 1, 1});
  c.attrs["strides"] = ir::Attribute::of_ints({2, 2});
  check_exact(c, "_int8cm");
  // Two groups of 32 channels, 24 outputs each, asymmetric padding.
  OpCheck g;
  g.op = "QLinearConv";
  g.inputs = {random_ints<uint8_t>({1, 64, 7, 7}, 101, 0, 255)};
  for (Tensor& t : qconv_constants(48, 32, 102)) g.inputs.push_back(std::move(t));
  g.constant_inputs = {1, 2, 3, 4, 5, 6, 7, 8};
  g.attrs["group"] = ir::Attribute::of_int(2);
  g.attrs["pads"] = ir::Attribute::of_ints({0, 1, 2, 1});
  check_exact(g, "_int8cm");
}

TEST_F(GemmInt8CoopMat, MatMulIntegerInt8WholeGridPerRowZeroPoints) {
  // int8 A with per-row zero points, batched over one B; K = 70 (not a
  // multiple of 16), enough tiles for no split.
  OpCheck c;
  c.op = "MatMulInteger";
  c.inputs = {random_ints<int8_t>({3, 700, 70}, 92, -128, 127), random_ints<int8_t>({70, 300}, 93, -128, 127),
              random_ints<int8_t>({700}, 94, -128, 127)};
  c.constant_inputs = {1, 2};
  check_exact(c, "_int8cm64x64");
}

TEST_F(GemmInt8CoopMat, QLinearMatMulFewRows) {
  OpCheck c;
  c.op = "QLinearMatMul";
  c.inputs = {random_ints<uint8_t>({27, 200}, 95, 0, 255),
              f32({}, {0.02f}),
              Tensor::from_vector<uint8_t>({}, {131}),
              random_ints<int8_t>({200, 40}, 96, -127, 127),
              f32({}, {0.004f}),
              Tensor::from_vector<int8_t>({}, {0}),
              f32({}, {0.3f}),
              Tensor::from_vector<int8_t>({}, {-4})};
  c.constant_inputs = {1, 2, 3, 4, 5, 6, 7};
  check_exact(c, "_int8cm32x64");
}

TEST_F(GemmInt8CoopMat, FullyConnectedRowSplitsKOnTheDotProducts) {
  // A classifier's last layer at batch 1 (one row: no fragment fits): the
  // dot-product kernel's one workgroup would walk all of K = 520 alone, so
  // K is cut into slices whose int32 sums the reduce pass adds and
  // requantizes (A's zero point taken out there).
  OpCheck c;
  c.op = "QLinearMatMul";
  c.inputs = {random_ints<uint8_t>({1, 520}, 97, 0, 255),
              f32({}, {0.02f}),
              Tensor::from_vector<uint8_t>({}, {140}),
              random_ints<int8_t>({520, 24}, 98, -127, 127),
              f32({}, {0.004f}),
              Tensor::from_vector<int8_t>({}, {0}),
              f32({}, {0.3f}),
              Tensor::from_vector<int8_t>({}, {2})};
  c.constant_inputs = {1, 2, 3, 4, 5, 6, 7};
  c.tol_f32 = c.tol_f16 = 0;
  c.runs = 2;
  const bool dot = vk::testing::test_device()->enabled().shader_integer_dot_product;
  c.expect_kernel = dot ? "_splitk_int8dot_tile" : "_int_tile";
  c.min_dispatches = dot ? 2 : 1;
  EXPECT_TRUE(check_op(c));
}

}  // namespace
}  // namespace kiln::planner
