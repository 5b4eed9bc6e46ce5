// Fusion groups that start with data-movement nodes (planner/fusion_views.h):
// the transformer chains (convnext's Transpose before and after its MLP,
// vit's Slice -> Reshape -> Transpose of attention heads, a Reshape that is
// a copy in image storage) plan as ONE kernel that reads the chain's source
// through an index view, no kernel binds the view values, every storage x
// precision gives valid SPIR-V and the same results as the reference
// executor; a symbolic batch compiles no shader for a new batch size; a
// view read outside the group, or a Slice whose starts are only known per
// run, keeps the group unfused with the reason in fusion_notes.
#include "planner/fusion_views.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "engine/ir/text.h"
#include "engine/ops/shape_inference.h"
#include "engine/runtime/reference_executor.h"
#include "engine/runtime/vulkan/vulkan_model.h"
#include "planner/execution_plan.h"
#include "planner/glsl_codegen.h"
#include "planner/index_view.h"
#include "planner/lower_util.h"
#include "planner/memory/liveness.h"
#include "planner/testing/op_check.h"
#include "platform/vulkan/vk_test_env.h"

namespace kiln::planner {
namespace {

const std::string kG = " #{kiln.fusion_group = \"v\"}";

// convnext's block entry: NCHW -> NHWC, then a bias (a LayerNorm's shift).
std::string nhwc_model(const std::string& n = "2", bool grouped = true) {
  const std::string g = grouped ? kG : "";
  return "graph @g opset 17 {\n  input %x : f32[" + n + ",8,4,4]\n"
         "  const %b : f32[8] = dense<[0.5,-1,2,0.25,1.5,-0.5,3,1]>\n"
         "  %t = Transpose(%x) {perm = [0,2,3,1]}" + g + " : f32[" + n + ",4,4,8]\n"
         "  %y = Add(%t, %b)" + g + " : f32[" + n + ",4,4,8]\n  return %y\n}\n";
}

// convnext's block exit: NHWC -> NCHW, layer scale, residual.
std::string nchw_model(bool grouped = true, bool t_is_output = false) {
  const std::string g = grouped ? kG : "";
  return std::string("graph @g opset 17 {\n  input %x : f32[2,4,4,8]\n  input %r : f32[2,8,4,4]\n") +
         "  const %s : f32[8,1,1] = dense<[0.1,0.2,-0.3,0.4,0.5,-0.6,0.7,0.8]>\n"
         "  %t = Transpose(%x) {perm = [0,3,1,2]}" + g + " : f32[2,8,4,4]\n"
         "  %m = Mul(%t, %s)" + g + " : f32[2,8,4,4]\n"
         "  %y = Add(%m, %r)" + g + " : f32[2,8,4,4]\n  return %y" + (t_is_output ? ", %t" : "") + "\n}\n";
}

// vit's attention: the keys of a QKV projection split into heads, scaled.
std::string vit_model(bool grouped = true) {
  const std::string g = grouped ? kG : "";
  return "graph @g opset 17 {\n  input %qkv : f32[6,24]\n"
         "  const %st : i64[1] = dense<[8]>\n  const %en : i64[1] = dense<[16]>\n  const %ax : i64[1] = dense<[1]>\n"
         "  const %shape : i64[3] = dense<[6,2,4]>\n  const %d : f32[] = dense<[2.0]>\n"
         "  %k = Slice(%qkv, %st, %en, %ax)" + g + " : f32[6,8]\n"
         "  %r = Reshape(%k, %shape)" + g + " : f32[6,2,4]\n"
         "  %h = Transpose(%r) {perm = [1,0,2]}" + g + " : f32[2,6,4]\n"
         "  %y = Div(%h, %d)" + g + " : f32[2,6,4]\n  return %y\n}\n";
}

// A Reshape (a copy in image storage) feeding a Relu.
std::string reshape_model(bool grouped = true) {
  const std::string g = grouped ? kG : "";
  return "graph @g opset 17 {\n  input %x : f32[2,3,4,8]\n  const %shape : i64[2] = dense<[6,32]>\n"
         "  %r = Reshape(%x, %shape)" + g + " : f32[6,32]\n"
         "  %y = Relu(%r)" + g + " : f32[6,32]\n  return %y\n}\n";
}

using testing::parse_shaped_graph;
using testing::plan_or_fail;

bool bound_by_a_kernel(const ExecutionPlan& plan, const ir::Graph& g, const char* value) {
  auto it = plan.value_tensor.find(g.find_value(value));
  if (it == plan.value_tensor.end()) return false;
  for (const PlanStep& s : plan.steps)
    for (const KernelTensor& t : s.kernel.tensors)
      if (t.tensor == it->second) return true;
  return false;
}

// The one kernel of a fused plan reads `source` through a view, and the
// view values get neither a binding nor memory.
void expect_fused_view(const ExecutionPlan& plan, const ir::Graph& g, const char* source,
                       const std::vector<const char*>& views, const std::string& name) {
  ASSERT_EQ(plan.dispatch_count(), 1u) << describe_plan(plan, g);
  EXPECT_TRUE(plan.fusion_notes.empty()) << plan.fusion_notes.front();
  const KernelDesc& k = plan.steps.back().kernel;
  EXPECT_EQ(k.name, name);
  const TensorId src = plan.value_tensor.at(g.find_value(source));
  bool through_view = false;
  for (const KernelTensor& t : k.tensors)
    if (t.view) {
      EXPECT_EQ(t.tensor, src);
      EXPECT_FALSE(t.elementwise);
      // Read at the harness's coordinates, not by re-decomposing oi.
      EXPECT_EQ(k.body.find(t.name + "_ld(oi)"), std::string::npos) << k.body;
      through_view = true;
    }
  EXPECT_TRUE(through_view) << describe_plan(plan, g);
  const Liveness live = compute_liveness(plan, g);
  for (const char* v : views) {
    EXPECT_FALSE(bound_by_a_kernel(plan, g, v)) << v;
    auto it = plan.value_tensor.find(g.find_value(v));
    if (it != plan.value_tensor.end()) {
      EXPECT_FALSE(live.needed[static_cast<size_t>(it->second)]) << v;
    }
  }
}

TEST(FusionViews, ConvnextTransposeIntoABiasIsOneKernel) {
  auto g = parse_shaped_graph(nhwc_model());
  ASSERT_TRUE(g);
  for (Storage storage : {Storage::kBuffer, Storage::kImage})
    expect_fused_view(plan_or_fail(*g, storage), *g, "x", {"t"}, "fused_transpose_add");
  EXPECT_EQ(plan_or_fail(*parse_shaped_graph(nhwc_model("2", false))).dispatch_count(), 2u);
  for (size_t n : testing::expect_plan_kernels_valid(*g, "views_nhwc")) EXPECT_EQ(n, 1u);
}

TEST(FusionViews, ConvnextTransposeScaleResidualIsOneKernel) {
  auto g = parse_shaped_graph(nchw_model());
  ASSERT_TRUE(g);
  for (Storage storage : {Storage::kBuffer, Storage::kImage})
    expect_fused_view(plan_or_fail(*g, storage), *g, "x", {"t"}, "fused_transpose_mul_add");
  EXPECT_EQ(plan_or_fail(*parse_shaped_graph(nchw_model(false))).dispatch_count(), 3u);
  for (size_t n : testing::expect_plan_kernels_valid(*g, "views_nchw")) EXPECT_EQ(n, 1u);
}

TEST(FusionViews, VitSliceReshapeTransposeIsOneKernel) {
  auto g = parse_shaped_graph(vit_model());
  ASSERT_TRUE(g);
  for (Storage storage : {Storage::kBuffer, Storage::kImage})
    expect_fused_view(plan_or_fail(*g, storage), *g, "qkv", {"k", "r", "h"}, "fused_slice_reshape_transpose_div");
  // Unfused: the slice, the transpose and the division (the Reshape of a
  // buffer is an alias).
  EXPECT_EQ(plan_or_fail(*parse_shaped_graph(vit_model(false))).dispatch_count(), 3u);
  for (size_t n : testing::expect_plan_kernels_valid(*g, "views_vit")) EXPECT_EQ(n, 1u);
}

TEST(FusionViews, AnImageReshapeIsReadInPlaceOfItsCopy) {
  auto plain = parse_shaped_graph(reshape_model(false));
  auto g = parse_shaped_graph(reshape_model());
  ASSERT_TRUE(plain && g);
  EXPECT_EQ(plan_or_fail(*plain, Storage::kImage).dispatch_count(), 2u);  // a copy, then the Relu
  expect_fused_view(plan_or_fail(*g, Storage::kImage), *g, "x", {"r"}, "fused_reshape_relu");
  for (size_t n : testing::expect_plan_kernels_valid(*g, "views_reshape")) EXPECT_EQ(n, 1u);
}

TEST(FusionViews, AViewReadOutsideTheGroupKeepsItUnfused) {
  auto plain = parse_shaped_graph(nchw_model(false, /*t_is_output=*/true));
  auto g = parse_shaped_graph(nchw_model(true, /*t_is_output=*/true));
  ASSERT_TRUE(plain && g);
  const ExecutionPlan a = plan_or_fail(*plain), b = plan_or_fail(*g);
  EXPECT_EQ(describe_plan(a, *plain), describe_plan(b, *g));
  ASSERT_EQ(b.fusion_notes.size(), 1u);
  EXPECT_NE(b.fusion_notes[0].find("'t'"), std::string::npos) << b.fusion_notes[0];
  EXPECT_NE(b.fusion_notes[0].find("read outside the group"), std::string::npos) << b.fusion_notes[0];
}

TEST(FusionViews, ASliceWithStartsKnownPerRunKeepsTheGroupUnfused) {
  auto g = parse_shaped_graph(
      "graph @g opset 17 {\n  input %x : f32[6,24]\n  input %st : i64[1]\n"
      "  const %en : i64[1] = dense<[16]>\n  const %ax : i64[1] = dense<[1]>\n"
      "  %k = Slice(%x, %st, %en, %ax)" + kG + " : f32[6,?]\n"
      "  %y = Relu(%k)" + kG + " : f32[6,?]\n  return %y\n}\n");
  ASSERT_TRUE(g);
  const ExecutionPlan b = plan_or_fail(*g);
  EXPECT_EQ(b.dispatch_count(), 2u);
  ASSERT_EQ(b.fusion_notes.size(), 1u);
  EXPECT_NE(b.fusion_notes[0].find("not known at plan time"), std::string::npos) << b.fusion_notes[0];
}

TEST(FusionViews, AGroupOfViewsOnlyIsUnfused) {
  auto g = parse_shaped_graph("graph @g opset 17 {\n  input %x : f32[2,3]\n  %t = Transpose(%x) {perm = [1,0]}" + kG +
                 " : f32[3,2]\n  %y = Relu(%t) : f32[3,2]\n  return %y\n}\n");
  ASSERT_TRUE(g);
  const ExecutionPlan b = plan_or_fail(*g);
  ASSERT_EQ(b.fusion_notes.size(), 1u);
  EXPECT_EQ(b.dispatch_count(), 2u);
}

// A kernel that touches a view value's storage directly cannot read it
// through a view: the group is refused naming the identifier.
Status lower_raw_relu(LoweringContext& ctx) {
  ctx.emit(map_kernel("raw_relu", {ctx.bind("x0", ctx.input(0)), ctx.bind("y", ctx.output(0), true)},
                      "v = max(float(x0_data[oi]), 0.0);"));
  return ok_status();
}

TEST(FusionViews, AKernelUsingRawStorageIsRefused) {
  LoweringRegistry lowerings;
  register_data_movement_lowerings(lowerings);
  lowerings.add("", "Relu", lower_raw_relu);
  auto g = parse_shaped_graph("graph @g opset 17 {\n  input %x : f32[2,3]\n  %t = Transpose(%x) {perm = [1,0]}" + kG +
                 " : f32[3,2]\n  %y = Relu(%t)" + kG + " : f32[3,2]\n  return %y\n}\n");
  ASSERT_TRUE(g);
  auto plan = build_plan(*g, TargetInfo{}, PlanOptions{}, lowerings);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(plan->dispatch_count(), 2u);
  ASSERT_EQ(plan->fusion_notes.size(), 1u);
  EXPECT_NE(plan->fusion_notes[0].find("x0_data"), std::string::npos) << plan->fusion_notes[0];
}

// A Transpose before a MatMul: the core is one node of any kernel family,
// its GEMM reads A through the view.
std::string matmul_model(bool grouped = true) {
  const std::string g = grouped ? kG : "";
  std::string w;
  for (int i = 0; i < 8 * 6; ++i) w += (i ? "," : "") + std::to_string(((i * 7) % 11 - 5) / 4.0);
  return "graph @g opset 17 {\n  input %x : f32[2,8,5]\n  const %w : f32[8,6] = dense<[" + w + "]>\n"
         "  %t = Transpose(%x) {perm = [0,2,1]}" + g + " : f32[2,5,8]\n"
         "  %y = MatMul(%t, %w)" + g + " : f32[2,5,6]\n  return %y\n}\n";
}

TEST(FusionViews, ATransposeIntoAMatMulIsReadByTheGemm) {
  auto g = parse_shaped_graph(matmul_model());
  auto plain = parse_shaped_graph(matmul_model(false));
  ASSERT_TRUE(g && plain);
  const ExecutionPlan a = plan_or_fail(*plain), b = plan_or_fail(*g);
  EXPECT_TRUE(b.fusion_notes.empty()) << b.fusion_notes.front();
  EXPECT_EQ(b.dispatch_count() + 1, a.dispatch_count()) << describe_plan(b, *g);
  EXPECT_FALSE(bound_by_a_kernel(b, *g, "t"));
  for (size_t n : testing::expect_plan_kernels_valid(*g, "views_matmul")) EXPECT_EQ(n, b.dispatch_count());
}

// convnext's block entry as it really is: NCHW -> NHWC into a LayerNorm
// over channels. The core is one row kernel reading through the view.
std::string layernorm_model(bool grouped = true) {
  const std::string g = grouped ? kG : "";
  return "graph @g opset 17 {\n  input %x : f32[2,8,3,5]\n"
         "  const %s : f32[8] = dense<[1,0.5,2,-1,1.5,0.25,-0.5,3]>\n"
         "  const %b : f32[8] = dense<[0.5,-1,2,0.25,1.5,-0.5,3,1]>\n"
         "  %t = Transpose(%x) {perm = [0,2,3,1]}" + g + " : f32[2,3,5,8]\n"
         "  %y = LayerNormalization(%t, %s, %b) {axis = -1}" + g + " : f32[2,3,5,8]\n  return %y\n}\n";
}

TEST(FusionViews, ATransposeIntoALayerNormIsReadByTheRowKernel) {
  auto g = parse_shaped_graph(layernorm_model());
  auto plain = parse_shaped_graph(layernorm_model(false));
  ASSERT_TRUE(g && plain);
  const ExecutionPlan a = plan_or_fail(*plain), b = plan_or_fail(*g);
  EXPECT_TRUE(b.fusion_notes.empty()) << b.fusion_notes.front();
  EXPECT_EQ(b.dispatch_count() + 1, a.dispatch_count()) << describe_plan(b, *g);
  EXPECT_FALSE(bound_by_a_kernel(b, *g, "t"));
  for (size_t n : testing::expect_plan_kernels_valid(*g, "views_layernorm")) EXPECT_EQ(n, b.dispatch_count());
}

// torch's MultiheadAttention: k = Transpose(qkv projection)[1] (a Gather of
// a constant scalar index), then k^T into the scores' MatMul. The Gather is
// a Slice of one element plus a squeeze in the view.
std::string gather_model(bool grouped = true) {
  const std::string g = grouped ? kG : "";
  return "graph @g opset 17 {\n  input %p : f32[5,3,2,4]\n  const %i : i64[] = dense<[1]>\n"
         "  const %s : f32[] = dense<[0.5]>\n"
         "  %t = Transpose(%p) {perm = [1,2,0,3]}" + g + " : f32[3,2,5,4]\n"
         "  %k = Gather(%t, %i) {axis = 0}" + g + " : f32[2,5,4]\n"
         "  %y = Mul(%k, %s)" + g + " : f32[2,5,4]\n  return %y\n}\n";
}

TEST(FusionViews, AGatherOfAConstantIndexIsAView) {
  auto g = parse_shaped_graph(gather_model());
  ASSERT_TRUE(g);
  for (Storage storage : {Storage::kBuffer, Storage::kImage})
    expect_fused_view(plan_or_fail(*g, storage), *g, "p", {"t", "k"}, "fused_transpose_gather_mul");
  EXPECT_EQ(plan_or_fail(*parse_shaped_graph(gather_model(false))).dispatch_count(), 3u);
  for (size_t n : testing::expect_plan_kernels_valid(*g, "views_gather")) EXPECT_EQ(n, 1u);
}

// swin's PatchMerging: four strided Slices concatenated along channels; the
// Concat is the core and reads each Slice through its view.
std::string patch_merging_model(bool grouped = true) {
  const std::string g = grouped ? kG : "";
  std::string text = "graph @g opset 17 {\n  input %x : f32[1,6,4,5]\n"
                     "  const %end : i64[2] = dense<[9223372036854775807,9223372036854775807]>\n"
                     "  const %ax : i64[2] = dense<[1,2]>\n  const %st : i64[2] = dense<[2,2]>\n";
  const char* starts[] = {"[0,0]", "[1,0]", "[0,1]", "[1,1]"};
  for (int i = 0; i < 4; ++i) {
    const std::string k = std::to_string(i);
    text += "  const %s" + k + " : i64[2] = dense<" + starts[i] + ">\n";
    text += "  %a" + k + " = Slice(%x, %s" + k + ", %end, %ax, %st)" + g + " : f32[1,3,2,5]\n";
  }
  text += "  %y = Concat(%a0, %a1, %a2, %a3) {axis = -1}" + g + " : f32[1,3,2,20]\n  return %y\n}\n";
  return text;
}

TEST(FusionViews, AConcatReadsItsSliceInputsThroughViews) {
  auto g = parse_shaped_graph(patch_merging_model());
  ASSERT_TRUE(g);
  for (Storage storage : {Storage::kBuffer, Storage::kImage})
    expect_fused_view(plan_or_fail(*g, storage), *g, "x", {"a0", "a1", "a2", "a3"}, "fused_slice_slice_slice_slice_concat");
  EXPECT_EQ(plan_or_fail(*parse_shaped_graph(patch_merging_model(false))).dispatch_count(), 5u);
  for (size_t n : testing::expect_plan_kernels_valid(*g, "views_concat")) EXPECT_EQ(n, 1u);
}

// ------------------------------------------------ results on the device

class FusionViewsDevice : public vk::testing::VulkanTest {};

// Compiles `text` in every storage x precision, expects `dispatches`
// kernels (`image_dispatches` in image storage, where not 0) and no fusion
// note, and compares the outputs for `inputs` with the reference executor's.
void expect_matches_reference(const std::string& text, const std::vector<Tensor>& inputs, size_t dispatches,
                              size_t image_dispatches = 0) {
  auto g = parse_shaped_graph(text);
  ASSERT_TRUE(g);
  runtime::ReferenceExecutor reference(*g);
  auto want = reference.run(inputs);
  ASSERT_TRUE(want.ok()) << want.status().to_string();
  for (const testing::BackendConfig& config : testing::all_backend_configs()) {
    auto model = testing::compile_on_test_device(*g, config);
    ASSERT_TRUE(model.ok()) << config.name() << ": " << model.status().to_string();
    const ExecutionPlan& plan = (*model)->plan();
    const bool image = config.storage == Storage::kImage && image_dispatches > 0;
    EXPECT_EQ(plan.dispatch_count(), image ? image_dispatches : dispatches) << config.name() << "\n"
                                                                           << describe_plan(plan, *g);
    EXPECT_TRUE(plan.fusion_notes.empty()) << config.name() << ": " << plan.fusion_notes.front();
    auto got = (*model)->run(inputs);
    ASSERT_TRUE(got.ok()) << config.name() << ": " << got.status().to_string();
    const double tol = config.precision == ElemType::kF16 ? 1e-2 : 1e-5;
    for (size_t j = 0; j < want->size(); ++j) {
      const Tensor& a = (*want)[j];
      const Tensor& b = (*got)[j];
      ASSERT_EQ(a.shape(), b.shape()) << config.name();
      for (int64_t i = 0; i < a.numel(); ++i)
        ASSERT_NEAR(a.get_f64(i), b.get_f64(i), tol * std::max(1.0, std::fabs(a.get_f64(i))))
            << config.name() << " output " << j << " element " << i;
    }
  }
}

TEST_F(FusionViewsDevice, ConvnextTransposeIntoABias) {
  expect_matches_reference(nhwc_model(), {testing::random_tensor({2, 8, 4, 4}, 1)}, 1);
}

TEST_F(FusionViewsDevice, ConvnextTransposeScaleResidual) {
  expect_matches_reference(nchw_model(), {testing::random_tensor({2, 4, 4, 8}, 2), testing::random_tensor({2, 8, 4, 4}, 3)},
                           1);
}

TEST_F(FusionViewsDevice, VitSliceReshapeTransposeDiv) {
  expect_matches_reference(vit_model(), {testing::random_tensor({6, 24}, 4)}, 1);
}

TEST_F(FusionViewsDevice, TransposeGatherMul) {
  expect_matches_reference(gather_model(), {testing::random_tensor({5, 3, 2, 4}, 11)}, 1);
}

TEST_F(FusionViewsDevice, SlicesConcat) {
  expect_matches_reference(patch_merging_model(), {testing::random_tensor({1, 6, 4, 5}, 12)}, 1);
}

// A dynamic head split: the Reshape target comes from Shape(slice), a host
// step that reads only the view's dims, so the Slice stays a view.
TEST_F(FusionViewsDevice, AViewWhoseShapeIsReadOnTheHost) {
  expect_matches_reference(
      "graph @g opset 17 {\n  input %x : f32[seq,24]\n"
      "  const %st : i64[1] = dense<[8]>\n  const %en : i64[1] = dense<[16]>\n  const %ax : i64[1] = dense<[1]>\n"
      "  const %heads : i64[2] = dense<[2,4]>\n  const %i0 : i64[1] = dense<[0]>\n"
      "  %k = Slice(%x, %st, %en, %ax)" + kG + " : f32[seq,8]\n"
      "  %s = Shape(%k) : i64[2]\n"
      "  %n = Gather(%s, %i0) {axis = 0} : i64[1]\n"
      "  %target = Concat(%n, %heads) {axis = 0} : i64[3]\n"
      "  %r = Reshape(%k, %target)" + kG + " : f32[seq,2,4]\n"
      "  %y = Relu(%r)" + kG + " : f32[seq,2,4]\n  return %y\n}\n",
      {testing::random_tensor({5, 24}, 13)}, 1);
}

// swin's shifted windows: torch.roll on two axes (7: a wrap, 8: a mask)
// read by the next node: the rolls cost no kernel of their own.
std::string roll_model() {
  return "graph @g opset 17 {\n  input %x : f32[1,7,8,5]\n"
         "  const %s3 : i64[1] = dense<[3]>\n  const %end : i64[1] = dense<[9223372036854775807]>\n"
         "  const %zero : i64[1] = dense<[0]>\n  const %m2 : i64[1] = dense<[-2]>\n"
         "  const %ax1 : i64[1] = dense<[1]>\n  const %ax2 : i64[1] = dense<[2]>\n"
         "  %a = Slice(%x, %s3, %end, %ax1)" + kG + " : f32[1,4,8,5]\n"
         "  %b = Slice(%x, %zero, %s3, %ax1)" + kG + " : f32[1,3,8,5]\n"
         "  %r = Concat(%a, %b) {axis = 1}" + kG + " : f32[1,7,8,5]\n"
         "  %c = Slice(%r, %m2, %end, %ax2)" + kG + " : f32[1,7,2,5]\n"
         "  %d = Slice(%r, %zero, %m2, %ax2)" + kG + " : f32[1,7,6,5]\n"
         "  %q = Concat(%c, %d) {axis = 2}" + kG + " : f32[1,7,8,5]\n"
         "  %y = Sigmoid(%q)" + kG + " : f32[1,7,8,5]\n  return %y\n}\n";
}

TEST_F(FusionViewsDevice, RollsAreViews) {
  auto g = parse_shaped_graph(roll_model());
  ASSERT_TRUE(g);
  expect_fused_view(plan_or_fail(*g), *g, "x", {"a", "b", "r", "c", "d", "q"},
                    "fused_slice_slice_roll_slice_slice_roll_sigmoid");
  expect_matches_reference(roll_model(), {testing::random_tensor({1, 7, 8, 5}, 14)}, 1);
  // A roll that ends its group is the group's core: one concat kernel.
  const std::string last = "  %y = Sigmoid(%q)" + kG + " : f32[1,7,8,5]\n  return %y\n";
  std::string text = roll_model();
  text.replace(text.find(last), last.size(), "  return %q\n");
  expect_matches_reference(text, {testing::random_tensor({1, 7, 8, 5}, 15)}, 1);
}

// The packed in-projection as the fusion plugin leaves it (views_shared.kir):
// the Reshape -> Unsqueeze -> Transpose -> Squeeze chain once per group, each
// group a Gather of one constant index and its reader. Three kernels, no copy.
TEST_F(FusionViewsDevice, ClonedViewChainsOfAPackedInProjection) {
  std::string text = "graph @g opset 17 {\n  input %proj : f32[5,1,24]\n  const %split : i64[4] = dense<[5,1,3,8]>\n"
                     "  const %ax0 : i64[1] = dense<[0]>\n  const %axm2 : i64[1] = dense<[-2]>\n";
  const char* ops[] = {"Relu", "Sigmoid", "Tanh"};
  for (int k = 0; k < 3; ++k) {
    const std::string n = std::to_string(k), g = " #{kiln.fusion_group = \"g" + n + "\"}";
    text += "  const %i" + n + " : i64[] = dense<[" + n + "]>\n"
            "  %u" + n + " = Reshape(%proj, %split)" + g + " : f32[5,1,3,8]\n"
            "  %e" + n + " = Unsqueeze(%u" + n + ", %ax0)" + g + " : f32[1,5,1,3,8]\n"
            "  %t" + n + " = Transpose(%e" + n + ") {perm = [3,1,2,0,4]}" + g + " : f32[3,5,1,1,8]\n"
            "  %s" + n + " = Squeeze(%t" + n + ", %axm2)" + g + " : f32[3,5,1,8]\n"
            "  %x" + n + " = Gather(%s" + n + ", %i" + n + ") {axis = 0}" + g + " : f32[5,1,8]\n"
            "  %y" + n + " = " + ops[k] + "(%x" + n + ")" + g + " : f32[5,1,8]\n";
  }
  text += "  return %y0, %y1, %y2\n}\n";
  expect_matches_reference(text, {testing::random_tensor({5, 1, 24}, 16)}, 3);
}

// SmartMem's elimination patterns as the fusion plugin groups them
// (plugins/fusion/testdata/layout_chains.kir), each one kernel: the chain
// is read through a view, no copy runs.
// shufflenet's channel shuffle into the next 1x1 Conv.
TEST_F(FusionViewsDevice, ChannelShuffleIntoAConv) {
  std::string w;
  for (int i = 0; i < 64; ++i) w += (i ? "," : "") + std::to_string((i * 37 % 17 - 8) / 8.0);
  expect_matches_reference(
      "graph @g opset 17 {\n  input %x : f32[1,8,4,4]\n  const %s5 : i64[5] = dense<[1,2,4,4,4]>\n"
      "  const %s4 : i64[4] = dense<[1,8,4,4]>\n  const %w : f32[8,8,1,1] = dense<[" + w + "]>\n"
      "  %a = Reshape(%x, %s5)" + kG + " : f32[1,2,4,4,4]\n"
      "  %t = Transpose(%a) {perm = [0,2,1,3,4]}" + kG + " : f32[1,4,2,4,4]\n"
      "  %b = Reshape(%t, %s4)" + kG + " : f32[1,8,4,4]\n"
      "  %c = Conv(%b, %w) {kernel_shape = [1,1]}" + kG + " : f32[1,8,4,4]\n"
      "  %y = Relu(%c)" + kG + " : f32[1,8,4,4]\n  return %y\n}\n",
      {testing::random_tensor({1, 8, 4, 4}, 21)}, 1);
}

// The same shuffle into 1x1 convolutions of one and of three pixel axes: the
// pointwise GEMM reads a view by coordinates (pointwise_plane_read), one per
// pixel axis. (In image storage the rank-3 and rank-5 outputs are packed
// on their last axis, not on the channels the GEMM stores in fours: a copy
// kernel follows.)
TEST_F(FusionViewsDevice, ChannelShuffleIntoConvsOfOneAndThreePixelAxes) {
  std::string w;
  for (int i = 0; i < 48; ++i) w += (i ? "," : "") + std::to_string((i * 29 % 13 - 6) / 6.0);
  expect_matches_reference(
      "graph @g opset 17 {\n  input %x : f32[2,8,5]\n  const %s4 : i64[4] = dense<[2,2,4,5]>\n"
      "  const %s3 : i64[3] = dense<[2,8,5]>\n  const %w : f32[6,8,1] = dense<[" + w + "]>\n"
      "  %a = Reshape(%x, %s4)" + kG + " : f32[2,2,4,5]\n"
      "  %t = Transpose(%a) {perm = [0,2,1,3]}" + kG + " : f32[2,4,2,5]\n"
      "  %b = Reshape(%t, %s3)" + kG + " : f32[2,8,5]\n"
      "  %y = Conv(%b, %w) {kernel_shape = [1]}" + kG + " : f32[2,6,5]\n  return %y\n}\n",
      {testing::random_tensor({2, 8, 5}, 25)}, 1, 2);
  expect_matches_reference(
      "graph @g opset 17 {\n  input %x : f32[1,8,3,4,5]\n  const %s6 : i64[6] = dense<[1,2,4,3,4,5]>\n"
      "  const %s5 : i64[5] = dense<[1,8,3,4,5]>\n  const %w : f32[6,8,1,1,1] = dense<[" + w + "]>\n"
      "  %a = Reshape(%x, %s6)" + kG + " : f32[1,2,4,3,4,5]\n"
      "  %t = Transpose(%a) {perm = [0,2,1,3,4,5]}" + kG + " : f32[1,4,2,3,4,5]\n"
      "  %b = Reshape(%t, %s5)" + kG + " : f32[1,8,3,4,5]\n"
      "  %c = Conv(%b, %w) {kernel_shape = [1,1,1]}" + kG + " : f32[1,6,3,4,5]\n"
      "  %y = Relu(%c)" + kG + " : f32[1,6,3,4,5]\n  return %y\n}\n",
      {testing::random_tensor({1, 8, 3, 4, 5}, 26)}, 1, 2);
}

// swin's window partition (windows of 4x4 tokens) into the qkv projection.
TEST_F(FusionViewsDevice, WindowPartitionIntoAMatMul) {
  std::string w, b;
  for (int i = 0; i < 48; ++i) w += (i ? "," : "") + std::to_string((i * 29 % 13 - 6) / 6.0);
  for (int i = 0; i < 12; ++i) b += (i ? "," : "") + std::to_string(i / 4.0 - 1.0);
  expect_matches_reference(
      "graph @g opset 17 {\n  input %x : f32[1,8,8,4]\n  const %s6 : i64[6] = dense<[1,2,4,2,4,4]>\n"
      "  const %s3 : i64[3] = dense<[4,16,4]>\n  const %w : f32[4,12] = dense<[" + w + "]>\n"
      "  const %bias : f32[12] = dense<[" + b + "]>\n"
      "  %a = Reshape(%x, %s6)" + kG + " : f32[1,2,4,2,4,4]\n"
      "  %t = Transpose(%a) {perm = [0,1,3,2,4,5]}" + kG + " : f32[1,2,2,4,4,4]\n"
      "  %win = Reshape(%t, %s3)" + kG + " : f32[4,16,4]\n"
      "  %q = MatMul(%win, %w)" + kG + " : f32[4,16,12]\n"
      "  %y = Add(%q, %bias)" + kG + " : f32[4,16,12]\n  return %y\n}\n",
      {testing::random_tensor({1, 8, 8, 4}, 22)}, 1);
}

// Two Transposes that compose to the identity, into an Add.
TEST_F(FusionViewsDevice, TransposePairIntoAnAdd) {
  expect_matches_reference(
      "graph @g opset 17 {\n  input %x : f32[2,3,4]\n  input %r : f32[2,3,4]\n"
      "  %t1 = Transpose(%x) {perm = [2,0,1]}" + kG + " : f32[4,2,3]\n"
      "  %t2 = Transpose(%t1) {perm = [1,2,0]}" + kG + " : f32[2,3,4]\n"
      "  %y = Add(%t2, %r)" + kG + " : f32[2,3,4]\n  return %y\n}\n",
      {testing::random_tensor({2, 3, 4}, 23), testing::random_tensor({2, 3, 4}, 24)}, 1);
}

TEST_F(FusionViewsDevice, ReshapeRelu) {
  expect_matches_reference(reshape_model(), {testing::random_tensor({2, 3, 4, 8}, 5)}, 1);
}

// Odd extents (no power of two, a vector axis that is not a multiple of 4)
// through a reshape that is neither a split nor a merge.
TEST_F(FusionViewsDevice, OddShapesThroughAGeneralReshape) {
  expect_matches_reference(
      "graph @g opset 17 {\n  input %x : f32[3,5,7]\n  const %shape : i64[2] = dense<[15,7]>\n"
      "  const %shape2 : i64[3] = dense<[7,3,5]>\n"
      "  %t = Transpose(%x) {perm = [2,0,1]}" + kG + " : f32[7,3,5]\n"
      "  %f = Reshape(%t, %shape)" + kG + " : f32[15,7]\n"
      "  %y = Sigmoid(%f)" + kG + " : f32[15,7]\n  return %y\n}\n",
      {testing::random_tensor({3, 5, 7}, 6)}, 1);
}

TEST_F(FusionViewsDevice, TransposeMatMul) {
  auto g = parse_shaped_graph(matmul_model());
  ASSERT_TRUE(g);
  expect_matches_reference(matmul_model(), {testing::random_tensor({2, 8, 5}, 7)}, plan_or_fail(*g).dispatch_count());
}

TEST_F(FusionViewsDevice, TransposeLayerNorm) {
  auto g = parse_shaped_graph(layernorm_model());
  ASSERT_TRUE(g);
  expect_matches_reference(layernorm_model(), {testing::random_tensor({2, 8, 3, 5}, 8)}, plan_or_fail(*g).dispatch_count());
}

// x + x^T: the kernel binds x twice, once through the view. x dies at the
// Add, which reads it elementwise too, but the output must not be written
// over it: the view reads other elements than the lane writes. (Two guards
// keep it out: the view binding is never `elementwise`, and inplace.cc
// blocks the input of a node without steps, the Transpose here.)
TEST_F(FusionViewsDevice, ASourceAlsoReadDirectlyIsNeverOverwrittenInPlace) {
  const std::string text =
      "graph @g opset 17 {\n  input %i : f32[2,5,5]\n  %x = Relu(%i) : f32[2,5,5]\n"
      "  %t = Transpose(%x) {perm = [0,2,1]}" + kG + " : f32[2,5,5]\n"
      "  %y = Add(%t, %x)" + kG + " : f32[2,5,5]\n  return %y\n}\n";
  auto g = parse_shaped_graph(text);
  ASSERT_TRUE(g);
  const ExecutionPlan plan = plan_or_fail(*g);
  ASSERT_EQ(plan.dispatch_count(), 2u);
  EXPECT_EQ(plan.tensors[static_cast<size_t>(plan.value_tensor.at(g->find_value("y")))].inplace_of, kNoTensor);
  expect_matches_reference(text, {testing::random_tensor({2, 5, 5}, 9)}, 2);
}

// A super-resolution head's pixel shuffle (DepthToSpace, DCR and CRD) read by
// the conv after it, and a SpaceToDepth read by a Relu: the shuffles cost no
// kernel of their own — the plan has the dispatches of the same graph
// without them — in every storage and precision.
std::string pixel_shuffle_model(const std::string& mode, bool shuffled = true) {
  std::string w = "dense<[";
  for (int i = 0; i < 72; ++i) w += (i ? "," : "") + std::to_string((i * 37 % 19 - 9) / 8.0);
  w += "]>";
  const std::string x = shuffled ? "%d" : "%x";
  return "graph @g opset 17 {\n  input %x : f32[1," + std::string(shuffled ? "8,3,4" : "2,6,8") + "]\n"
         "  const %w : f32[4,2,3,3] = " + w + "\n" +
         (shuffled ? "  %d = DepthToSpace(%x) {blocksize = 2, mode = \"" + mode + "\"}" + kG + " : f32[1,2,6,8]\n" : "") +
         "  %y = Conv(" + x + ", %w) {kernel_shape = [3,3], pads = [1,1,1,1]}" + kG + " : f32[1,4,6,8]\n"
         "  return %y\n}\n";
}

TEST_F(FusionViewsDevice, PixelShuffleIntoAConvIsReadByTheConv) {
  auto plain = parse_shaped_graph(pixel_shuffle_model("DCR", false));
  ASSERT_TRUE(plain);
  const size_t conv_dispatches = plan_or_fail(*plain).dispatch_count();
  for (const char* mode : {"DCR", "CRD"}) {
    SCOPED_TRACE(mode);
    auto g = parse_shaped_graph(pixel_shuffle_model(mode));
    ASSERT_TRUE(g);
    const ExecutionPlan plan = plan_or_fail(*g);
    EXPECT_FALSE(bound_by_a_kernel(plan, *g, "d")) << describe_plan(plan, *g);
    expect_matches_reference(pixel_shuffle_model(mode), {testing::random_tensor({1, 8, 3, 4}, 17)}, conv_dispatches);
  }
}

TEST_F(FusionViewsDevice, SpaceToDepthIntoARelu) {
  const std::string text = "graph @g opset 17 {\n  input %x : f32[2,3,4,6]\n"
                           "  %s = SpaceToDepth(%x) {blocksize = 2}" + kG + " : f32[2,12,2,3]\n"
                           "  %y = Relu(%s)" + kG + " : f32[2,12,2,3]\n  return %y\n}\n";
  auto g = parse_shaped_graph(text);
  ASSERT_TRUE(g);
  expect_fused_view(plan_or_fail(*g), *g, "x", {"s"}, "fused_spacetodepth_relu");
  expect_matches_reference(text, {testing::random_tensor({2, 3, 4, 6}, 18)}, 1);
}

// A dynamic batch through the view: one plan, and a second batch size
// compiles no shader.
TEST_F(FusionViewsDevice, ASymbolicBatchCompilesNothingNew) {
  auto g = parse_shaped_graph(nhwc_model("n"));
  ASSERT_TRUE(g);
  runtime::ReferenceExecutor reference(*g);
  for (Storage storage : {Storage::kBuffer, Storage::kImage}) {
    runtime::VulkanModelOptions options;
    options.plan.storage = storage;
    auto model = runtime::VulkanModel::compile(*vk::testing::test_device(), *vk::testing::test_kernel_cache(), *g, options);
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    ASSERT_EQ((*model)->plan().dispatch_count(), 1u);
    for (int64_t n : {2, 3, 5}) {
      const Tensor x = testing::random_tensor({n, 8, 4, 4}, 10 + static_cast<uint64_t>(n));
      runtime::VulkanRunStats stats;
      auto got = (*model)->run({x}, &stats);
      ASSERT_TRUE(got.ok()) << got.status().to_string();
      EXPECT_EQ(stats.shader_compiles, 0u) << "n=" << n;
      auto want = reference.run({x});
      ASSERT_TRUE(want.ok());
      ASSERT_EQ((*want)[0].shape(), (*got)[0].shape());
      for (int64_t i = 0; i < (*want)[0].numel(); ++i)
        ASSERT_NEAR((*want)[0].get_f64(i), (*got)[0].get_f64(i), 1e-5) << "n=" << n << " element " << i;
    }
  }
}

}  // namespace
}  // namespace kiln::planner
