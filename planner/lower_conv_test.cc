// Conv and ConvTranspose lowerings against the reference kernels in every
// backend config (check_op): the implicit-GEMM path (general, pointwise,
// grouped, 1-D and 3-D, GEMV-sized), the depthwise path, padding variants,
// and weights that are graph inputs instead of constants.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "planner/execution_plan.h"
#include "planner/plan_hints.h"
#include "planner/testing/op_check.h"
#include "platform/vulkan/vk_test_env.h"

namespace kiln::planner {
namespace {

using testing::check_op;
using testing::OpCheck;
using testing::random_tensor;

class LowerConvTest : public vk::testing::VulkanTest {};

ir::Attribute ints(std::vector<int64_t> v) { return ir::Attribute::of_ints(std::move(v)); }

// X [x], W [w], optional bias, weights (and bias) constant.
OpCheck conv(Shape x, Shape w, bool bias, std::map<std::string, ir::Attribute> attrs, uint64_t seed,
             const char* op = "Conv") {
  OpCheck c;
  c.op = op;
  c.inputs = {random_tensor(x, seed), random_tensor(w, seed + 1)};
  c.constant_inputs = {1};
  if (bias) {
    const int64_t m = std::string(op) == "Conv" ? w[0] : w[1] * (attrs.count("group") ? attrs["group"].i : 1);
    c.inputs.push_back(random_tensor({m}, seed + 2));
    c.constant_inputs.push_back(2);
  }
  c.attrs = std::move(attrs);
  return c;
}

TEST_F(LowerConvTest, Conv3x3) {
  EXPECT_TRUE(check_op(conv({1, 3, 9, 11}, {8, 3, 3, 3}, true, {{"pads", ints({1, 1, 1, 1})}}, 1)));
  EXPECT_TRUE(check_op(conv({2, 13, 10, 9}, {6, 13, 3, 3}, true,
                            {{"pads", ints({1, 1, 1, 1})}, {"strides", ints({2, 2})}}, 5)));
}

TEST_F(LowerConvTest, Pointwise) {
  EXPECT_TRUE(check_op(conv({1, 16, 7, 5}, {12, 16, 1, 1}, false, {}, 11)));
  EXPECT_TRUE(check_op(conv({2, 20, 6, 6}, {24, 20, 1, 1}, true, {{"strides", ints({2, 2})}}, 13)));
  // 1x1 spatial: a GEMV over channels (squeeze-excite, classifier convs).
  EXPECT_TRUE(check_op(conv({1, 32, 1, 1}, {20, 32, 1, 1}, true, {}, 15)));
}

TEST_F(LowerConvTest, Depthwise) {
  EXPECT_TRUE(check_op(conv({1, 8, 9, 9}, {8, 1, 3, 3}, true, {{"group", ir::Attribute::of_int(8)},
                                                                {"pads", ints({1, 1, 1, 1})}}, 21)));
  EXPECT_TRUE(check_op(conv({2, 6, 10, 7}, {12, 1, 5, 5}, false,
                            {{"group", ir::Attribute::of_int(6)}, {"pads", ints({2, 2, 2, 2})},
                             {"strides", ints({2, 2})}},
                            23)));  // channel multiplier 2
  // The row kernel into buffers (conv_depthwise_rows): a 7x7 window whose
  // rows end in a partial block of 8, and a dilated window with different
  // y and x strides, padded unevenly.
  EXPECT_TRUE(check_op(conv({1, 4, 13, 19}, {4, 1, 7, 7}, true,
                            {{"group", ir::Attribute::of_int(4)}, {"pads", ints({3, 3, 3, 3})}}, 25)));
  EXPECT_TRUE(check_op(conv({1, 3, 11, 12}, {3, 1, 3, 3}, false,
                            {{"group", ir::Attribute::of_int(3)}, {"pads", ints({2, 1, 0, 2})},
                             {"dilations", ints({2, 2})}, {"strides", ints({2, 1})}},
                            27)));
  EXPECT_TRUE(check_op(conv({1, 3, 11, 17}, {3, 1, 3, 3}, true,
                            {{"group", ir::Attribute::of_int(3)}, {"pads", ints({1, 1, 1, 1})},
                             {"strides", ints({1, 2})}},
                            29)));
}

TEST_F(LowerConvTest, Grouped) {
  EXPECT_TRUE(check_op(conv({1, 6, 8, 8}, {10, 3, 3, 3}, true,
                            {{"group", ir::Attribute::of_int(2)}, {"pads", ints({1, 1, 1, 1})}}, 31)));
  EXPECT_TRUE(check_op(conv({1, 8, 5, 6}, {8, 4, 1, 1}, false, {{"group", ir::Attribute::of_int(2)}}, 33)));
}

TEST_F(LowerConvTest, DilationAndPads) {
  EXPECT_TRUE(check_op(conv({1, 3, 11, 10}, {4, 3, 3, 3}, true,
                            {{"dilations", ints({2, 2})}, {"pads", ints({2, 2, 2, 2})}}, 41)));
  EXPECT_TRUE(check_op(conv({1, 5, 8, 9}, {7, 5, 3, 2}, true, {{"pads", ints({0, 1, 2, 0})}}, 43)));
  EXPECT_TRUE(check_op(conv({1, 4, 7, 8}, {5, 4, 3, 3}, true,
                            {{"auto_pad", ir::Attribute::of_string("SAME_UPPER")}, {"strides", ints({2, 2})}}, 45)));
  EXPECT_TRUE(check_op(conv({1, 4, 6, 7}, {5, 4, 2, 2}, false,
                            {{"auto_pad", ir::Attribute::of_string("SAME_LOWER")}}, 47)));
}

// Pads only at the end (begin pads 0): the last windows still reach past
// the input, in the GEMM, depthwise and depthwise-texel paths. SAME_UPPER
// at stride 2 over an even size pads 0 before and 1 after.
TEST_F(LowerConvTest, EndPadsOnly) {
  const std::map<std::string, ir::Attribute> end = {{"pads", ints({0, 0, 1, 1})}, {"strides", ints({2, 2})}};
  const std::map<std::string, ir::Attribute> same = {{"auto_pad", ir::Attribute::of_string("SAME_UPPER")},
                                                     {"strides", ints({2, 2})}};
  for (const auto& attrs : {end, same}) {
    EXPECT_TRUE(check_op(conv({1, 8, 8, 8}, {6, 8, 3, 3}, true, attrs, 61)));
    auto dw = attrs;
    dw["group"] = ir::Attribute::of_int(8);
    EXPECT_TRUE(check_op(conv({1, 8, 8, 8}, {8, 1, 3, 3}, true, dw, 63)));
  }
  // A 1x1 conv padded at the end is no plain pointwise GEMM.
  EXPECT_TRUE(check_op(conv({1, 8, 5, 5}, {6, 8, 1, 1}, false, {{"pads", ints({0, 0, 1, 1})}}, 65)));
}

TEST_F(LowerConvTest, OneAndThreeSpatialAxes) {
  EXPECT_TRUE(check_op(conv({2, 5, 17}, {7, 5, 3}, true, {{"pads", ints({1, 1})}, {"strides", ints({2})}}, 51)));
  EXPECT_TRUE(check_op(conv({1, 3, 5, 6, 4}, {4, 3, 3, 3, 3}, true, {{"pads", ints({1, 1, 1, 1, 1, 1})}}, 53)));
}

TEST_F(LowerConvTest, WeightsAsInputs) {
  OpCheck c = conv({1, 3, 7, 7}, {5, 3, 3, 3}, true, {{"pads", ints({1, 1, 1, 1})}}, 61);
  c.constant_inputs.clear();
  EXPECT_TRUE(check_op(c));
  OpCheck d = conv({1, 4, 6, 6}, {4, 1, 3, 3}, false, {{"group", ir::Attribute::of_int(4)}}, 63);
  d.constant_inputs.clear();
  EXPECT_TRUE(check_op(d));
}

TEST_F(LowerConvTest, LargerTiles) {
  // M = 16*16 pixels, N = 70 channels, K = 13*9: several 64x64 tiles with edges.
  EXPECT_TRUE(check_op(conv({1, 13, 16, 16}, {70, 13, 3, 3}, true, {{"pads", ints({1, 1, 1, 1})}}, 71)));
}

TEST_F(LowerConvTest, SplitK) {
  // A late-network shape: 5x5 pixels, K = 64 * 9 in four slices.
  EXPECT_TRUE(check_op(conv({1, 64, 5, 5}, {40, 64, 3, 3}, true, {{"pads", ints({1, 1, 1, 1})}}, 75)));
}

// The split-K slices added by the tile kernel's last workgroup (one
// dispatch; kiln.kernel splitk_reduce=fused), with the bias epilogue, at
// batch 2, on every run of the model.
TEST_F(LowerConvTest, SplitKFixup) {
  for (int slices : {2, 3, 16}) {
    SCOPED_TRACE(slices);
    OpCheck c = conv({2, 64, 5, 5}, {40, 64, 3, 3}, true, {{"pads", ints({1, 1, 1, 1})}}, 91);
    c.annotations[planner::kKernelKey] = "split_k=" + std::to_string(slices) + ",splitk_reduce=fused";
    c.runs = 2;
    c.min_dispatches = c.max_dispatches = 1;
    c.expect_kernel = "conv_splitk_fixup_tile";
    EXPECT_TRUE(check_op(c));
  }
  // The planner's own choice for a late-network shape (K = 64 * 9 = 576,
  // few tiles) splits K with a reduce pass (the default); strided, no bias.
  OpCheck c = conv({1, 64, 9, 9}, {24, 64, 3, 3}, false, {{"strides", ints({2, 2})}}, 93);
  c.runs = 2;
  c.min_dispatches = c.max_dispatches = 2;
  c.expect_kernel = "conv_splitk_reduce";
  EXPECT_TRUE(check_op(c));
  // The atomic fix-up, asked for (where the device adds floats atomically).
  if (vk::testing::test_device()->enabled().buffer_float32_atomic_add) {
    c.annotations[planner::kKernelKey] = "splitk_reduce=atomic";
    c.runs = 3;
    c.same_bits_every_run = false;
    c.min_dispatches = c.max_dispatches = 1;
    c.expect_kernel = "conv_splitk_atomic";
    EXPECT_TRUE(check_op(c));
  }
}

// An NCHW buffer output is m-major (GemmProblem::store_m_major): the tile
// pass writes its partials transposed and the reduce pass reads them so.
// Edges in M (7x7 pixels) and N (38 channels), batch 2, one to four reduce
// lanes per output (3, 8 and 16 slices), 128-row tiles (each invocation's
// rows BM/4 apart) and a grouped convolution (batch = images x groups).
TEST_F(LowerConvTest, SplitKPartialsOfAnNchwOutput) {
  for (const char* hint : {"split_k=3", "split_k=8", "split_k=16,tile=128x64", "split_k=4,tile=32x16"}) {
    SCOPED_TRACE(hint);
    OpCheck c = conv({2, 64, 7, 7}, {38, 64, 3, 3}, true, {{"pads", ints({1, 1, 1, 1})}}, 95);
    c.annotations[planner::kKernelKey] = std::string(hint) + ",splitk_reduce=separate";
    c.min_dispatches = c.max_dispatches = 2;
    c.expect_kernel = "conv_splitk_reduce";
    EXPECT_TRUE(check_op(c));
  }
  OpCheck g = conv({2, 32, 6, 6}, {20, 16, 3, 3}, true, {{"group", ir::Attribute::of_int(2)}}, 97);
  g.annotations[planner::kKernelKey] = "split_k=4,splitk_reduce=separate";
  g.min_dispatches = 2;
  g.max_dispatches = 3;  // image storage: 10 channels a group store through a scratch copy
  g.expect_kernel = "conv_splitk_reduce";
  EXPECT_TRUE(check_op(g));
}

TEST_F(LowerConvTest, ConvTranspose) {
  EXPECT_TRUE(check_op(conv({1, 4, 5, 6}, {4, 3, 3, 3}, true,
                            {{"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}, {"output_padding", ints({1, 1})}},
                            81, "ConvTranspose")));
  EXPECT_TRUE(check_op(conv({1, 4, 4, 4}, {4, 2, 2, 2}, false,
                            {{"strides", ints({2, 2})}, {"group", ir::Attribute::of_int(2)}}, 83, "ConvTranspose")));
  EXPECT_TRUE(check_op(conv({2, 3, 7}, {3, 5, 4}, true, {{"strides", ints({3})}, {"dilations", ints({2})}}, 85,
                            "ConvTranspose")));
  EXPECT_TRUE(check_op(conv({1, 2, 4, 5}, {2, 3, 3, 3}, true,
                            {{"strides", ints({2, 2})}, {"auto_pad", ir::Attribute::of_string("SAME_UPPER")}}, 87,
                            "ConvTranspose")));
}

// Deeper K steps of the scalar kernel (32 and 64, forced through
// $KILN_GEMM_SWEEP; the planner takes them for latency-bound GEMMs on large
// GPUs): K not a multiple of the step (72 = 64 + 8, 40 = 32 + 8), 32 x 32
// tiles as choose_tile shrinks to, a split whose slices round to the step,
// an NCHW output (m-major), a strided 3x3 and fp16 staging.
TEST_F(LowerConvTest, DeepKStepsOfTheScalarKernel) {
  for (const char* sweep : {"k=32", "k=64"}) {
    testing::ScopedEnv env("KILN_GEMM_SWEEP", sweep);
    for (const char* hint : {"tile=32x32,coopmat=off", "tile=64x32,split_k=2,splitk_reduce=separate"}) {
      SCOPED_TRACE(std::string(sweep) + " " + hint);
      OpCheck c = conv({2, 72, 5, 5}, {38, 72, 1, 1}, true, {}, 101);
      c.annotations[planner::kKernelKey] = hint;
      c.expect_kernel = std::string("k") + (sweep + 2);
      EXPECT_TRUE(check_op(c));
      OpCheck s = conv({1, 40, 9, 9}, {20, 40, 3, 3}, false,
                       {{"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}}, 103);
      s.annotations[planner::kKernelKey] = hint;
      EXPECT_TRUE(check_op(s));
    }
  }
}

// On a GPU of many compute units a 1x1 convolution of little work whose
// 64 x 64 tiles would leave it idle takes 32 x 32 tiles and K steps as deep
// as K (one 64-deep step for K = 64, no split); one over a deep K (15 steps
// of 64 for K = 960) keeps its tiles and split, and so do strided 1x1s and
// 3x3s, small or not; a device of two compute units (lavapipe) keeps the tiles it had.
TEST(LowerConvPlan, LatencyBoundConvolutionsTakeSmallTilesAndDeepSteps) {
  TargetInfo gpu;
  gpu.compute_units = 132;
  gpu.max_shared_memory = 49152;
  TargetInfo cpu = gpu;
  cpu.compute_units = 2;
  const auto kernels = [](const TargetInfo& t, Shape x, Shape w, std::map<std::string, ir::Attribute> attrs) {
    const ir::Graph g = testing::one_node_graph("Conv", ir::SymShape::from_concrete(x), {random_tensor(w, 105)}, attrs);
    auto plan = build_plan(g, t, PlanOptions{});
    EXPECT_TRUE(plan.ok()) << plan.status().to_string();
    std::vector<std::string> names;
    if (plan.ok())
      for (const PlanStep& step : plan->steps)
        if (step.kind == PlanStep::Kind::kDispatch) names.push_back(step.kernel.name);
    return names;
  };
  using Names = std::vector<std::string>;
  EXPECT_EQ(kernels(gpu, {1, 64, 14, 14}, {384, 64, 1, 1}, {}), Names{"conv_tile32x32k64"});
  EXPECT_EQ(kernels(gpu, {1, 24, 28, 28}, {64, 24, 1, 1}, {}), Names{"conv_tile32x32k32"});
  EXPECT_EQ(kernels(gpu, {1, 960, 7, 7}, {160, 960, 1, 1}, {}),
            (Names{"conv_splitk_tile64x64", "conv_splitk_reduce"}));
  EXPECT_EQ(kernels(gpu, {1, 128, 14, 14}, {256, 128, 1, 1}, {{"strides", ints({2, 2})}}),
            (Names{"conv_splitk_tile64x64", "conv_splitk_reduce"}));
  EXPECT_EQ(kernels(gpu, {1, 32, 14, 14}, {64, 32, 3, 3}, {{"pads", ints({1, 1, 1, 1})}}),
            (Names{"conv_splitk_tile64x64", "conv_splitk_reduce"}));
  EXPECT_EQ(kernels(gpu, {1, 256, 14, 14}, {256, 256, 3, 3}, {{"pads", ints({1, 1, 1, 1})}}),
            (Names{"conv_splitk_tile64x64", "conv_splitk_reduce"}));
  EXPECT_EQ(kernels(cpu, {1, 64, 14, 14}, {384, 64, 1, 1}, {}), Names{"conv_tile64x64"});
  TargetInfo ablation = gpu;  // $KILN_GEMM_SWEEP=latency=off
  ablation.gemm_sweep.latency_tiles = false;
  EXPECT_EQ(kernels(ablation, {1, 64, 14, 14}, {384, 64, 1, 1}, {}), Names{"conv_tile64x64"});
}

}  // namespace
}  // namespace kiln::planner
