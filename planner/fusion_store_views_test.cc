// Store-side index views (planner/fusion_store_views.h): an anchor whose
// output reaches its elementwise tail through Reshape/Transpose nodes runs
// as the anchor's kernels, storing the tail's result at the view chain's
// forward map. ViT's out-projection Gemm -> Reshape -> Reshape -> Add,
// ConvNeXt's MatMul -> Add -> Mul -> Transpose(NHWC -> NCHW) -> Add, a conv
// through a Reshape, odd sizes, a symbolic batch, split-K, a load-side
// prologue in the same group. Each plans in every storage x precision with
// the dispatch count and kernel name expected (or, where an image cannot
// keep a texel's lanes together, the reason in fusion_notes) and the
// reference executor's results; groups that are not a bijection or read a
// view value elsewhere stay unfused with their reason.
#include "planner/fusion_store_views.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "engine/ir/text.h"
#include "engine/ops/shape_inference.h"
#include "engine/runtime/reference_executor.h"
#include "engine/runtime/vulkan/vulkan_model.h"
#include "planner/execution_plan.h"
#include "planner/index_view.h"
#include "planner/testing/op_check.h"
#include "platform/vulkan/vk_test_env.h"

namespace kiln::planner {
namespace {

const std::string kG = " #{kiln.fusion_group = \"s\"}";

using testing::parse_shaped_graph;
using testing::plan_or_fail;

// "dense<[...]>" of n deterministic values in [-1, 1).
std::string values(int n, int seed) {
  std::string s = "dense<[";
  uint32_t x = 2463534242u + static_cast<uint32_t>(seed) * 7919u;
  for (int i = 0; i < n; ++i) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    s += (i ? "," : "") + std::to_string(static_cast<double>(x % 2000) / 1000.0 - 1.0);
  }
  return s + "]>";
}

std::string kernel_names(const ExecutionPlan& plan) {
  std::string s;
  for (const PlanStep& step : plan.steps)
    if (step.kind == PlanStep::Kind::kDispatch) s += step.kernel.name + " ";
  return s;
}

// ViT's out-projection and residual.
std::string vit_model(const std::string& rows = "5") {
  return "graph @g opset 17 {\n  input %x : f32[" + rows + ",16]\n  input %r : f32[1," + rows + ",24]\n"
         "  const %w : f32[24,16] = " + values(384, 1) + "\n  const %b : f32[24] = " + values(24, 2) + "\n"
         "  const %s1 : i64[3] = dense<[" + (rows == "5" ? "5" : "-1") + ",1,24]>\n"
         "  const %s2 : i64[3] = dense<[1," + (rows == "5" ? "5" : "-1") + ",24]>\n"
         "  %p = Gemm(%x, %w, %b) {transB = 1}" + kG + " : f32[" + rows + ",24]\n"
         "  %a = Reshape(%p, %s1)" + kG + " : f32[" + rows + ",1,24]\n"
         "  %t = Reshape(%a, %s2)" + kG + " : f32[1," + rows + ",24]\n"
         "  %y = Add(%t, %r)" + kG + " : f32[1," + rows + ",24]\n  return %y\n}\n";
}

// ViT's out-projection split in 4 (Gemm -> Reshape -> Reshape -> residual
// Add, the residual stream %y) and the next LayerNormalization in its group
// (fusion_row_norm.h); the stream is read again after the norm.
std::string vit_norm_model() {
  const std::string kS = " #{kiln.fusion_group = \"s\", kiln.kernel = \"split_k=4,splitk_reduce=separate\"}";
  return "graph @g opset 17 {\n  input %x : f32[7,64]\n  input %r : f32[1,7,24]\n"
         "  const %w : f32[24,64] = " + values(1536, 21) + "\n  const %b : f32[24] = " + values(24, 22) + "\n"
         "  const %g : f32[24] = " + values(24, 23) + "\n  const %be : f32[24] = " + values(24, 24) + "\n"
         "  const %s1 : i64[3] = dense<[7,1,24]>\n  const %s2 : i64[3] = dense<[1,7,24]>\n"
         "  %p = Gemm(%x, %w, %b) {transB = 1}" + kS + " : f32[7,24]\n"
         "  %a = Reshape(%p, %s1)" + kG + " : f32[7,1,24]\n"
         "  %t = Reshape(%a, %s2)" + kG + " : f32[1,7,24]\n"
         "  %y = Add(%t, %r)" + kG + " : f32[1,7,24]\n"
         "  %n = LayerNormalization(%y, %g, %be) {axis = -1}" + kG + " : f32[1,7,24]\n"
         "  %o = Add(%n, %y) : f32[1,7,24]\n  return %o\n}\n";
}

// ConvNeXt's block exit: fc2 (MatMul + bias), layer scale, NHWC -> NCHW,
// residual.
// `kernel`: a kiln.kernel hint for the MatMul.
std::string convnext_model(const std::string& n = "1", int h = 5, int w = 6, const std::string& kernel = "") {
  const std::string hw = std::to_string(h) + "," + std::to_string(w);
  const std::string mm = kernel.empty() ? kG : " #{kiln.fusion_group = \"s\", kiln.kernel = \"" + kernel + "\"}";
  return "graph @g opset 17 {\n  input %x : f32[" + n + "," + hw + ",16]\n  input %r : f32[" + n + ",12," + hw +
         "]\n  const %w : f32[16,12] = " + values(192, 3) + "\n  const %b : f32[12] = " + values(12, 4) + "\n  const %s : f32[12] = " + values(12, 5) + "\n"
         "  %m = MatMul(%x, %w)" + mm + " : f32[" + n + "," + hw + ",12]\n"
         "  %a = Add(%m, %b)" + kG + " : f32[" + n + "," + hw + ",12]\n"
         "  %l = Mul(%a, %s)" + kG + " : f32[" + n + "," + hw + ",12]\n"
         "  %t = Transpose(%l) {perm = [0,3,1,2]}" + kG + " : f32[" + n + ",12," + hw + "]\n"
         "  %y = Add(%t, %r)" + kG + " : f32[" + n + ",12," + hw + "]\n  return %y\n}\n";
}

// A conv whose spatial dims a Reshape flattens, then a residual and a Relu.
std::string conv_model(const std::string& split_k = "") {
  return std::string("graph @g opset 17 {\n  input %x : f32[1,8,6,7]\n  input %r : f32[1,12,42]\n") +
         "  const %w : f32[12,8,3,3] = " + values(864, 6) + "\n  const %s : i64[3] = dense<[1,12,42]>\n"
         "  %c = Conv(%x, %w) {kernel_shape = [3,3], pads = [1,1,1,1]}" +
         (split_k.empty() ? kG : " #{kiln.fusion_group = \"s\", kiln.kernel = \"" + split_k + "\"}") +
         " : f32[1,12,6,7]\n"
         "  %f = Reshape(%c, %s)" + kG + " : f32[1,12,42]\n"
         "  %a = Add(%f, %r)" + kG + " : f32[1,12,42]\n"
         "  %y = Relu(%a)" + kG + " : f32[1,12,42]\n  return %y\n}\n";
}

// Swin's window reverse: the attention out-projection (MatMul + bias) per
// window, windows back to the image (Reshape, Transpose, Reshape), a crop
// that keeps everything (an identity Slice), the residual Add.
std::string swin_model() {
  return "graph @g opset 17 {\n  input %x : f32[4,9,8]\n  input %r : f32[1,6,6,8]\n"
         "  const %w : f32[8,8] = " + values(64, 9) + "\n  const %b : f32[8] = " + values(8, 10) + "\n"
         "  const %s1 : i64[6] = dense<[1,2,2,3,3,8]>\n  const %s2 : i64[4] = dense<[1,6,6,8]>\n"
         "  const %st : i64[1] = dense<[0]>\n  const %en : i64[1] = dense<[6]>\n  const %ax : i64[1] = dense<[1]>\n"
         "  %m = MatMul(%x, %w)" + kG + " : f32[4,9,8]\n"
         "  %a = Add(%m, %b)" + kG + " : f32[4,9,8]\n"
         "  %v = Reshape(%a, %s1)" + kG + " : f32[1,2,2,3,3,8]\n"
         "  %t = Transpose(%v) {perm = [0,1,3,2,4,5]}" + kG + " : f32[1,2,3,2,3,8]\n"
         "  %i = Reshape(%t, %s2)" + kG + " : f32[1,6,6,8]\n"
         "  %c = Slice(%i, %st, %en, %ax)" + kG + " : f32[1,6,6,8]\n"
         "  %y = Add(%r, %c)" + kG + " : f32[1,6,6,8]\n  return %y\n}\n";
}

// Odd extents through a Transpose, no tail: the group writes the view.
std::string transpose_only_model() {
  return "graph @g opset 17 {\n  input %x : f32[7,13]\n  const %w : f32[13,11] = " + values(143, 7) + "\n"
         "  %m = MatMul(%x, %w)" + kG + " : f32[7,11]\n"
         "  %y = Transpose(%m) {perm = [1,0]}" + kG + " : f32[11,7]\n  return %y\n}\n";
}

// A load-side prologue (x transposed into the MatMul) and a store view.
std::string both_sides_model() {
  return "graph @g opset 17 {\n  input %x : f32[2,9,5]\n  input %r : f32[2,5,3,3]\n  const %w : f32[9,9] = " + values(81, 8) + "\n"
         "  const %s : i64[4] = dense<[2,5,3,3]>\n"
         "  %t = Transpose(%x) {perm = [0,2,1]}" + kG + " : f32[2,5,9]\n"
         "  %m = MatMul(%t, %w)" + kG + " : f32[2,5,9]\n"
         "  %f = Reshape(%m, %s)" + kG + " : f32[2,5,3,3]\n"
         "  %y = Sub(%f, %r)" + kG + " : f32[2,5,3,3]\n  return %y\n}\n";
}

// A super-resolution head: a conv's channels shuffled into space (pixel
// shuffle, CRD as torch exports it), a residual and a Relu.
std::string pixel_shuffle_model() {
  return std::string("graph @g opset 17 {\n  input %x : f32[1,3,5,6]\n  input %r : f32[1,2,10,12]\n") +
         "  const %w : f32[8,3,3,3] = " + values(216, 11) + "\n"
         "  %c = Conv(%x, %w) {kernel_shape = [3,3], pads = [1,1,1,1]}" + kG + " : f32[1,8,5,6]\n"
         "  %d = DepthToSpace(%c) {blocksize = 2, mode = \"CRD\"}" + kG + " : f32[1,2,10,12]\n"
         "  %a = Add(%d, %r)" + kG + " : f32[1,2,10,12]\n"
         "  %y = Relu(%a)" + kG + " : f32[1,2,10,12]\n  return %y\n}\n";
}

// ESPCN's last op: the pixel shuffle is the graph's output, with no tail.
std::string pixel_shuffle_output_model() {
  return std::string("graph @g opset 17 {\n  input %x : f32[1,3,5,6]\n") +
         "  const %w : f32[8,3,3,3] = " + values(216, 12) + "\n"
         "  %c = Conv(%x, %w) {kernel_shape = [3,3], pads = [1,1,1,1]}" + kG + " : f32[1,8,5,6]\n"
         "  %y = DepthToSpace(%c) {blocksize = 2}" + kG + " : f32[1,2,10,12]\n  return %y\n}\n";
}

// Every storage x precision: `dispatches` kernels (or, for images with
// `image_refused`, the group refused with that reason), a kernel named
// with `name`, the views' values bound by no kernel, and the reference's
// results for each input set (the later ones compile no shader).
struct Expect {
  size_t dispatches = 1;
  std::string name;
  size_t image_dispatches = 0;  // for the image configs, when different (or refused)
  std::string image_refused;    // a substring of the image configs' fusion note
};

void expect_store_view(const std::string& text, const std::vector<std::vector<Tensor>>& runs, const Expect& e,
                       const std::vector<const char*>& views) {
  auto g = parse_shaped_graph(text);
  ASSERT_TRUE(g);
  runtime::ReferenceExecutor reference(*g);
  for (const testing::BackendConfig& config : testing::all_backend_configs()) {
    auto model = testing::compile_on_test_device(*g, config);
    ASSERT_TRUE(model.ok()) << config.name() << ": " << model.status().to_string();
    const ExecutionPlan& plan = (*model)->plan();
    const bool refused = config.storage == Storage::kImage && !e.image_refused.empty();
    if (refused) {
      // Then the two groups it joined fuse on their own.
      ASSERT_EQ(plan.fusion_notes.size(), 1u) << config.name() << ": " << plan.fusion_notes.back();
      EXPECT_NE(plan.fusion_notes[0].find(e.image_refused), std::string::npos) << plan.fusion_notes[0];
      EXPECT_NE(plan.fusion_notes[0].find("runs as two groups"), std::string::npos) << plan.fusion_notes[0];
      EXPECT_EQ(plan.dispatch_count(), e.image_dispatches) << config.name() << "\n" << describe_plan(plan, *g);
    } else {
      EXPECT_TRUE(plan.fusion_notes.empty()) << config.name() << ": " << plan.fusion_notes.front();
      const bool image = config.storage == Storage::kImage;
      EXPECT_EQ(plan.dispatch_count(), image && e.image_dispatches ? e.image_dispatches : e.dispatches)
          << config.name() << "\n" << describe_plan(plan, *g);
      EXPECT_NE(kernel_names(plan).find(e.name), std::string::npos) << config.name() << ": " << kernel_names(plan);
      for (const char* v : views) {
        const TensorId t = plan.value_tensor.at(g->find_value(v));
        for (const PlanStep& s : plan.steps)
          for (const KernelTensor& kt : s.kernel.tensors) EXPECT_NE(kt.tensor, t) << config.name() << ": " << v;
      }
    }
    const double tol = config.precision == ElemType::kF16 ? 2e-2 : 1e-4;
    for (size_t r = 0; r < runs.size(); ++r) {
      auto want = reference.run(runs[r]);
      ASSERT_TRUE(want.ok()) << want.status().to_string();
      runtime::VulkanRunStats stats;
      auto got = (*model)->run(runs[r], &stats);
      ASSERT_TRUE(got.ok()) << config.name() << ": " << got.status().to_string();
      if (r > 0) {
        EXPECT_EQ(stats.shader_compiles, 0u) << config.name() << " run " << r;
      }
      for (size_t j = 0; j < want->size(); ++j) {
        const Tensor& a = (*want)[j];
        const Tensor& b = (*got)[j];
        ASSERT_EQ(a.shape(), b.shape()) << config.name();
        double scale = 1.0;
        for (int64_t i = 0; i < a.numel(); ++i) scale = std::max(scale, std::fabs(a.get_f64(i)));
        for (int64_t i = 0; i < a.numel(); ++i)
          ASSERT_NEAR(a.get_f64(i), b.get_f64(i), tol * scale)
              << config.name() << " run " << r << " element " << i << " (" << kernel_names(plan) << ")";
      }
    }
  }
}

using testing::random_tensor;

class FusionStoreViews : public vk::testing::VulkanTest {};

TEST_F(FusionStoreViews, VitGemmReshapeReshapeAdd) {
  expect_store_view(vit_model(), {{random_tensor({5, 16}, 11), random_tensor({1, 5, 24}, 12)}},
                    {.name = "+reshape_reshape+add"}, {"a", "t"});
}

TEST_F(FusionStoreViews, ConvnextMatMulBiasScaleTransposeResidual) {
  expect_store_view(convnext_model(), {{random_tensor({1, 5, 6, 16}, 13), random_tensor({1, 12, 5, 6}, 14)}},
                    {.name = "+add+mul+transpose+add"}, {"t"});
}

TEST_F(FusionStoreViews, ConvnextSplitMatMulStoresRowMajorToNchw) {
  // Through the Transpose to NCHW the MatMul's rows (pixels) are the
  // output's contiguous axis (PlanBuilder::m_major_store_hint): the
  // tensor-core kernel then stores m-major
  // (GemmCoopMatKernels.StoreThroughATransposeToNchwIsValidSpirv), the
  // scalar split kernel and its reduce pass row-major (emit_gemm), with
  // the same results either way.
  expect_store_view(convnext_model("1", 5, 6, "split_k=2,splitk_reduce=separate"),
                    {{random_tensor({1, 5, 6, 16}, 15), random_tensor({1, 12, 5, 6}, 16)}},
                    {.dispatches = 2, .name = "matmul_splitk_reduce+add+mul+transpose+add"}, {"t"});
  auto g = parse_shaped_graph(convnext_model("1", 5, 6, "split_k=2,splitk_reduce=separate"));
  ASSERT_TRUE(g);
  auto plan = build_plan(*g, TargetInfo{}, PlanOptions{});
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  ASSERT_EQ(plan->dispatch_count(), 2u);
  EXPECT_EQ(plan->steps[1].kernel.helpers.find("#define REDUCE_M_MAJOR 1"), std::string::npos);
}

TEST_F(FusionStoreViews, ConvReshapeAddRelu) {
  // Images: the output [1,12,42] is packed along the flattened axis, where
  // the conv's texel lanes (along W of 6x7) do not stay together.
  expect_store_view(conv_model(), {{random_tensor({1, 8, 6, 7}, 15), random_tensor({1, 12, 42}, 16)}},
                    {.name = "+reshape+add+relu", .image_dispatches = 2, .image_refused = "moves the packed axis"},
                    {"f"});
}

TEST_F(FusionStoreViews, SplitKReduceStoresThroughTheView) {
  expect_store_view(conv_model("split_k=4,splitk_reduce=separate"),
                    {{random_tensor({1, 8, 6, 7}, 17), random_tensor({1, 12, 42}, 18)}},
                    {.dispatches = 2, .name = "splitk_reduce+reshape+add+relu", .image_dispatches = 3,
                     .image_refused = "packed axis"},
                    {"f"});
}

TEST_F(FusionStoreViews, SplitReduceThroughReshapesNormalizesItsRows) {
  // Buffers: the partial tiles, the reduce pass storing the stream through
  // the reshapes and normalizing it, the Add after; images keep the reduce
  // pass and the layer norm apart (fusion_row_norm.h).
  expect_store_view(vit_norm_model(), {{random_tensor({7, 64}, 25), random_tensor({1, 7, 24}, 26)}},
                    {.dispatches = 3, .name = "splitk_reduce+reshape_reshape+add", .image_dispatches = 4},
                    {"a", "t"});
}

TEST_F(FusionStoreViews, SwinWindowReverseWithAnIdentityCrop) {
  expect_store_view(swin_model(), {{random_tensor({4, 9, 8}, 30), random_tensor({1, 6, 6, 8}, 31)}},
                    // Images: [1,6,6,8] is packed along axis 1, a row of windows.
                    {.name = "+add+reshape_transpose_reshape_slice+add", .image_dispatches = 2,
                     .image_refused = "moves the packed axis"},
                    {"v", "t", "i", "c"});
}

TEST_F(FusionStoreViews, OddSizesTransposeWithoutATail) {
  // Images: the GEMM stores a scratch buffer, whose copy kernel takes the view.
  expect_store_view(transpose_only_model(), {{random_tensor({7, 13}, 19)}},
                    {.name = "+transpose", .image_dispatches = 2}, {"m"});
}

TEST_F(FusionStoreViews, SymbolicBatchCompilesOnce) {
  expect_store_view(convnext_model("n", 3, 5),
                    {{random_tensor({1, 3, 5, 16}, 20), random_tensor({1, 12, 3, 5}, 21)},
                     {random_tensor({3, 3, 5, 16}, 22), random_tensor({3, 12, 3, 5}, 23)}},
                    {.name = "+add+mul+transpose+add"}, {"t"});
}

TEST_F(FusionStoreViews, SymbolicRowsThroughReshapes) {
  expect_store_view(vit_model("n"),
                    {{random_tensor({5, 16}, 24), random_tensor({1, 5, 24}, 25)},
                     {random_tensor({9, 16}, 26), random_tensor({1, 9, 24}, 27)}},
                    {.name = "+reshape_reshape+add"}, {"a", "t"});
}

TEST_F(FusionStoreViews, ALoadSidePrologueComposes) {
  expect_store_view(both_sides_model(), {{random_tensor({2, 9, 5}, 28), random_tensor({2, 5, 3, 3}, 29)}},
                    {.name = "fused_transpose_", .image_dispatches = 2}, {"t", "f"});
}

TEST_F(FusionStoreViews, ConvPixelShuffleAddRelu) {
  // Images: the output's packed channels merge with the block offsets in
  // the conv's channels, so the texel lanes cannot stay together.
  expect_store_view(pixel_shuffle_model(), {{random_tensor({1, 3, 5, 6}, 32), random_tensor({1, 2, 10, 12}, 33)}},
                    {.name = "+depthtospace+add+relu", .image_dispatches = 2, .image_refused = "moves the packed axis"},
                    {"d"});
}

TEST_F(FusionStoreViews, ConvPixelShuffleAsTheGraphOutput) {
  expect_store_view(pixel_shuffle_output_model(), {{random_tensor({1, 3, 5, 6}, 34)}},
                    {.name = "+depthtospace", .image_dispatches = 2, .image_refused = "moves the packed axis"}, {});
}

// ---------------------------------------------------------------- refusals

void expect_refused(const std::string& text, const std::string& why) {
  auto g = parse_shaped_graph(text);
  ASSERT_TRUE(g);
  const ExecutionPlan plan = plan_or_fail(*g);
  ASSERT_EQ(plan.fusion_notes.size(), 1u) << kernel_names(plan);
  EXPECT_NE(plan.fusion_notes[0].find(why), std::string::npos) << plan.fusion_notes[0];
}

TEST(FusionStoreViewsPlan, ASliceIsNoStoreView) {
  expect_refused("graph @g opset 17 {\n  input %x : f32[4,8]\n  input %r : f32[4,4]\n  const %w : f32[8,8] = " + values(64, 1) + "\n"
                 "  const %st : i64[1] = dense<[0]>\n  const %en : i64[1] = dense<[4]>\n  const %ax : i64[1] = dense<[1]>\n"
                 "  %m = MatMul(%x, %w)" + kG + " : f32[4,8]\n"
                 "  %s = Slice(%m, %st, %en, %ax)" + kG + " : f32[4,4]\n"
                 "  %y = Add(%s, %r)" + kG + " : f32[4,4]\n  return %y\n}\n",
                 "not a bijection");
}

TEST(FusionStoreViewsPlan, ASliceThatCropsIsNoStoreView) {
  std::string text = swin_model();
  const std::string crop = "dense<[6]>";
  text.replace(text.find(crop), crop.size(), "dense<[5]>");
  for (const char* shape : {"%c = Slice(%i, %st, %en, %ax)" , "%y = Add(%r, %c)"}) {
    const size_t at = text.find(shape);
    text.replace(text.find("f32[1,6,6,8]", at), 12, "f32[1,5,6,8]");
  }
  text.replace(text.find("input %r : f32[1,6,6,8]"), 23, "input %r : f32[1,5,6,8]");
  expect_refused(text, "is not a bijection");
}

TEST(FusionStoreViewsPlan, AViewValueReadOutsideTheGroup) {
  expect_refused("graph @g opset 17 {\n  input %x : f32[4,8]\n  input %r : f32[8,4]\n  const %w : f32[8,8] = " + values(64, 1) + "\n"
                 "  %m = MatMul(%x, %w)" + kG + " : f32[4,8]\n"
                 "  %t = Transpose(%m) {perm = [1,0]}" + kG + " : f32[8,4]\n"
                 "  %y = Add(%t, %r)" + kG + " : f32[8,4]\n  return %y, %t\n}\n",
                 "is read outside the group");
}

TEST(FusionStoreViewsPlan, ATailReadingTheAnchorItself) {
  expect_refused("graph @g opset 17 {\n  input %x : f32[4,4]\n  const %w : f32[4,4] = " + values(16, 1) + "\n"
                 "  %m = MatMul(%x, %w)" + kG + " : f32[4,4]\n"
                 "  %t = Transpose(%m) {perm = [1,0]}" + kG + " : f32[4,4]\n"
                 "  %y = Add(%t, %m)" + kG + " : f32[4,4]\n  return %y\n}\n",
                 "is read by more than");
}

TEST(FusionStoreViewsPlan, TheForwardMapOfTheChain) {
  // Gemm [5,24] -> Reshape [5,1,24] -> Reshape [1,5,24]: unit axes only,
  // the stores' map passes both coordinates through (no division).
  auto g = parse_shaped_graph(vit_model());
  ASSERT_TRUE(g);
  const ExecutionPlan plan = plan_or_fail(*g);
  ASSERT_EQ(plan.dispatch_count(), 1u) << kernel_names(plan);
  const KernelDesc& k = plan.steps.back().kernel;
  auto y = std::find_if(k.tensors.begin(), k.tensors.end(), [](const KernelTensor& t) { return t.written; });
  ASSERT_NE(y, k.tensors.end());
  ASSERT_TRUE(y->view);
  const CoordProgram program = compile_view(*y->view);
  for (const CoordOp& op : program.ops) {
    EXPECT_NE(op.kind, CoordOp::Kind::kDiv);
    EXPECT_NE(op.kind, CoordOp::Kind::kMod);
  }
  auto o = evaluate_coord_program(program, {3, 17});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(*o, (std::vector<int64_t>{0, 3, 17}));
  // ConvNeXt's NHWC -> NCHW: coordinates renamed.
  auto c = parse_shaped_graph(convnext_model());
  ASSERT_TRUE(c);
  const ExecutionPlan cp = plan_or_fail(*c);
  ASSERT_EQ(cp.dispatch_count(), 1u) << kernel_names(cp);
  for (const KernelTensor& t : cp.steps.back().kernel.tensors)
    if (t.written) {
      ASSERT_TRUE(t.view);
      auto oc = evaluate_coord_program(compile_view(*t.view), {0, 2, 4, 7});
      ASSERT_TRUE(oc.ok());
      EXPECT_EQ(*oc, (std::vector<int64_t>{0, 7, 2, 4}));
    }
}

}  // namespace
}  // namespace kiln::planner
