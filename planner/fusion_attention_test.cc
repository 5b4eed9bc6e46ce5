// Attention groups (planner/fusion_attention.h): MatMul -> scale/mask ->
// Softmax -> MatMul of one fusion group plans as ONE attention kernel, in
// every storage x precision it gives the reference executor's results
// (query and key counts that are no multiple of the tiles, scalings on the
// scores or on q and k, a bias and a mask Add, a symbolic sequence length,
// q, k and v read through vit's Slice -> Reshape -> Transpose views), and
// what it cannot take runs unfused with the reason in fusion_notes.
#include "planner/fusion_attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "engine/ir/text.h"
#include "engine/ops/shape_inference.h"
#include "engine/runtime/reference_executor.h"
#include "engine/runtime/vulkan/vulkan_model.h"
#include "planner/execution_plan.h"
#include "planner/fusion.h"
#include "planner/gemm_coopmat.h"
#include "planner/testing/op_check.h"
#include "platform/vulkan/vk_test_env.h"

namespace kiln::planner {
namespace {

const std::string kG = " #{kiln.fusion_group = \"a\"}";

std::string dims(const std::vector<std::string>& d) {
  std::string s;
  for (const std::string& x : d) s += (s.empty() ? "" : ",") + x;
  return "f32[" + s + "]";
}

struct AttentionCase {
  std::string heads = "2", m = "7", n = "7";
  int64_t d = 16, dv = 16;
  enum class Scale { kScores, kQandK, kDivQ } scale = Scale::kScores;
  bool bias = false;   // + a constant [heads, m, n] bias (swin's relative positions)
  bool mask = false;   // + an input mask [1, 1, n] broadcast over heads and queries
  std::string axis = "-1";
  bool grouped = true;
  std::string rows;  // a kiln.kernel attention_rows hint on the last MatMul
};

// q [h, m, d], kt [h, d, n], v [h, n, dv] as graph inputs.
std::string attention_model(const AttentionCase& c) {
  const std::string g = c.grouped ? kG : "";
  const std::string d = std::to_string(c.d), dv = std::to_string(c.dv);
  std::string t = "graph @g opset 17 {\n  input %q : " + dims({c.heads, c.m, d}) + "\n  input %kt : " +
                  dims({c.heads, d, c.n}) + "\n  input %v : " + dims({c.heads, c.n, dv}) + "\n";
  if (c.mask) t += "  input %mask : " + dims({"1", "1", c.n}) + "\n";
  t += "  const %c : f32[] = dense<[0.25]>\n  const %r : f32[] = dense<[0.5]>\n";
  if (c.bias) {
    const int64_t h = std::stoll(c.heads), m = std::stoll(c.m), n = std::stoll(c.n);
    std::string w;
    for (int64_t i = 0; i < h * m * n; ++i) w += (i ? "," : "") + std::to_string(((i * 7) % 13 - 6) / 4.0);
    t += "  const %bias : " + dims({c.heads, c.m, c.n}) + " = dense<[" + w + "]>\n";
  }
  std::string q = "%q", k = "%kt";
  if (c.scale == AttentionCase::Scale::kQandK) {
    t += "  %qs = Mul(%q, %r)" + g + " : " + dims({c.heads, c.m, d}) + "\n";
    t += "  %ks = Mul(%r, %kt)" + g + " : " + dims({c.heads, d, c.n}) + "\n";
    q = "%qs", k = "%ks";
  } else if (c.scale == AttentionCase::Scale::kDivQ) {
    t += "  %qs = Div(%q, %c)" + g + " : " + dims({c.heads, c.m, d}) + "\n";
    q = "%qs";
  }
  const std::string sd = dims({c.heads, c.m, c.n});
  t += "  %s = MatMul(" + q + ", " + k + ")" + g + " : " + sd + "\n";
  std::string s = "%s";
  if (c.scale == AttentionCase::Scale::kScores) t += "  %s1 = Mul(%s, %c)" + g + " : " + sd + "\n", s = "%s1";
  if (c.bias) t += "  %s2 = Add(%bias, " + s + ")" + g + " : " + sd + "\n", s = "%s2";
  if (c.mask) t += "  %s3 = Add(" + s + ", %mask)" + g + " : " + sd + "\n", s = "%s3";
  t += "  %p = Softmax(" + s + ") {axis = " + c.axis + "}" + g + " : " + sd + "\n";
  const std::string hint = c.rows.empty() ? g : " #{kiln.fusion_group = \"a\", kiln.kernel = \"attention_rows=" + c.rows + "\"}";
  t += "  %y = MatMul(%p, %v)" + hint + " : " + dims({c.heads, c.m, dv}) + "\n  return %y\n}\n";
  return t;
}

using testing::parse_shaped_graph;
using testing::plan_or_fail;

TEST(FusionAttention, MatchesTheShapesAndNamesTheParts) {
  for (auto scale : {AttentionCase::Scale::kScores, AttentionCase::Scale::kQandK, AttentionCase::Scale::kDivQ}) {
    AttentionCase c;
    c.scale = scale;
    c.mask = true;
    auto g = parse_shaped_graph(attention_model(c));
    ASSERT_TRUE(g);
    const std::vector<FusionGroup> groups = collect_fusion_groups(*g, g->main().nodes);
    ASSERT_EQ(groups.size(), 1u);
    const auto pat = match_attention(*g, groups[0]);
    ASSERT_TRUE(pat);
    EXPECT_EQ(pat->a, g->find_value("q"));
    EXPECT_EQ(pat->b, g->find_value("kt"));
    EXPECT_EQ(pat->v, g->find_value("v"));
    // 0.25 on the scores, 0.5 * 0.5 on q and k, 1 / 0.25 on q.
    EXPECT_DOUBLE_EQ(pat->scale, scale == AttentionCase::Scale::kDivQ ? 4.0 : 0.25);
    ASSERT_EQ(pat->steps.size(), 1u);
    EXPECT_EQ(pat->steps[0].add, g->find_value("mask"));
  }
}

TEST(FusionAttention, PlansOneKernelAndBindsNoIntermediate) {
  AttentionCase c;
  c.bias = true;
  auto g = parse_shaped_graph(attention_model(c));
  ASSERT_TRUE(g);
  for (Storage storage : {Storage::kBuffer, Storage::kImage}) {
    const ExecutionPlan plan = plan_or_fail(*g, storage);
    ASSERT_EQ(plan.dispatch_count(), 1u) << describe_plan(plan, *g);
    EXPECT_TRUE(plan.fusion_notes.empty()) << plan.fusion_notes.front();
    EXPECT_EQ(plan.steps.back().kernel.name, "attention_d16x16");
  }
  c.grouped = false;
  EXPECT_EQ(plan_or_fail(*parse_shaped_graph(attention_model(c))).dispatch_count(), 5u);  // MatMul, Mul, Add, Softmax, MatMul
  for (size_t n : testing::expect_plan_kernels_valid(*g, "attention_bias")) EXPECT_EQ(n, 1u);
}

// What the kernel cannot take runs unfused, node by node, saying why.
void expect_unfused(const AttentionCase& c, const std::string& why) {
  auto g = parse_shaped_graph(attention_model(c));
  ASSERT_TRUE(g);
  const ExecutionPlan plan = plan_or_fail(*g);
  ASSERT_EQ(plan.fusion_notes.size(), 1u) << describe_plan(plan, *g);
  EXPECT_NE(plan.fusion_notes[0].find(why), std::string::npos) << plan.fusion_notes[0];
  EXPECT_GT(plan.dispatch_count(), 1u);
}

TEST(FusionAttention, ASoftmaxOverAnotherAxisOrAHugeHeadStaysUnfused) {
  AttentionCase c;
  c.axis = "1";
  expect_unfused(c, "shape of the group's output");  // no attention: the generic check refuses
  AttentionCase big;
  big.d = 160;
  expect_unfused(big, "head dims 160 and 16");
}

TEST(FusionAttention, ARowsHintIsChecked) {
  AttentionCase c;
  c.rows = "12";
  auto g = parse_shaped_graph(attention_model(c));
  ASSERT_TRUE(g);
  auto plan = build_plan(*g, TargetInfo{}, PlanOptions{});
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("attention_rows must be 8, 16, 32 or 64"), std::string::npos)
      << plan.status().to_string();
}

// ------------------------------------------------ results on the device

class FusionAttentionDevice : public vk::testing::VulkanTest {};

// Compiles `text` in every storage x precision, expects one attention
// kernel (plus an image's copy out of the scratch, `image_extra`) and no
// fusion note, and compares with the reference executor for each input set.
void expect_matches_reference(const std::string& text, const std::vector<std::vector<Tensor>>& runs,
                              size_t image_extra = 0) {
  auto g = parse_shaped_graph(text);
  ASSERT_TRUE(g);
  runtime::ReferenceExecutor reference(*g);
  for (const testing::BackendConfig& config : testing::all_backend_configs()) {
    auto model = testing::compile_on_test_device(*g, config);
    ASSERT_TRUE(model.ok()) << config.name() << ": " << model.status().to_string();
    const ExecutionPlan& plan = (*model)->plan();
    EXPECT_EQ(plan.dispatch_count(), 1 + (config.storage == Storage::kImage ? image_extra : 0))
        << config.name() << "\n" << describe_plan(plan, *g);
    EXPECT_TRUE(plan.fusion_notes.empty()) << config.name() << ": " << plan.fusion_notes.front();
    bool attention = false;
    for (const PlanStep& s : plan.steps) attention = attention || s.kernel.name.find("attention_d") != std::string::npos;
    EXPECT_TRUE(attention) << describe_plan(plan, *g);
    for (size_t run = 0; run < runs.size(); ++run) {
      auto want = reference.run(runs[run]);
      ASSERT_TRUE(want.ok()) << want.status().to_string();
      runtime::VulkanRunStats stats;
      auto got = (*model)->run(runs[run], &stats);
      ASSERT_TRUE(got.ok()) << config.name() << ": " << got.status().to_string();
      if (run > 0) {
        EXPECT_EQ(stats.shader_compiles, 0u) << config.name() << " run " << run;
      }
      const double tol = config.precision == ElemType::kF16 ? 1e-2 : 1e-5;
      const Tensor& a = (*want)[0];
      const Tensor& b = (*got)[0];
      ASSERT_EQ(a.shape(), b.shape()) << config.name();
      for (int64_t i = 0; i < a.numel(); ++i)
        ASSERT_NEAR(a.get_f64(i), b.get_f64(i), tol * std::max(1.0, std::fabs(a.get_f64(i))))
            << config.name() << " run " << run << " element " << i;
    }
  }
}

std::vector<Tensor> inputs_of(const AttentionCase& c, int64_t m, int64_t n, uint64_t seed) {
  const int64_t h = std::stoll(c.heads);
  std::vector<Tensor> in = {testing::random_tensor({h, m, c.d}, seed), testing::random_tensor({h, c.d, n}, seed + 1),
                            testing::random_tensor({h, n, c.dv}, seed + 2)};
  if (c.mask) {
    Tensor mask = testing::random_tensor({1, 1, n}, seed + 3);
    for (int64_t i = 0; i < n; ++i) mask.set_f64(i, i % 3 == 1 ? -1e4 : 0.0);  // every third key masked
    in.push_back(mask);
  }
  return in;
}

TEST_F(FusionAttentionDevice, ScaledScores) {
  AttentionCase c;
  expect_matches_reference(attention_model(c), {inputs_of(c, 7, 7, 1)});
}

TEST_F(FusionAttentionDevice, ScaledQAndKWithOddSizes) {
  AttentionCase c;
  c.scale = AttentionCase::Scale::kQandK;
  c.m = "19", c.n = "37", c.d = 24, c.dv = 40;
  expect_matches_reference(attention_model(c), {inputs_of(c, 19, 37, 4)});
}

TEST_F(FusionAttentionDevice, SwinLikeBiasWithOneQueryAndManyKeys) {
  AttentionCase c;
  c.scale = AttentionCase::Scale::kDivQ;
  c.bias = true;
  c.m = "1", c.n = "49", c.d = 32, c.dv = 32;
  expect_matches_reference(attention_model(c), {inputs_of(c, 1, 49, 7)});
}

TEST_F(FusionAttentionDevice, MaskAndLargeHeadDim) {
  AttentionCase c;
  c.mask = true;
  c.m = "9", c.n = "33", c.d = 128, c.dv = 128;
  expect_matches_reference(attention_model(c), {inputs_of(c, 9, 33, 10)});
}

// swin's shifted windows: a relative-position bias on [windows, heads, m,
// n], then the window mask added in a [1, windows, 1, m, n] broadcast over
// a Reshape to [1, windows, heads, m, n], reshaped back for the softmax.
std::string swin_shifted_model() {
  std::string w;
  for (int i = 0; i < 3 * 5 * 5; ++i) w += (i ? "," : "") + std::to_string(((i * 5) % 11 - 5) / 4.0);
  return "graph @g opset 17 {\n  input %q : f32[2,3,5,8]\n  input %kt : f32[2,3,8,5]\n  input %v : f32[2,3,5,8]\n"
         "  input %mask : f32[1,2,1,5,5]\n  const %c : f32[] = dense<[0.35]>\n"
         "  const %bias : f32[3,5,5] = dense<[" + w + "]>\n"
         "  const %s5 : i64[5] = dense<[1,2,3,5,5]>\n  const %s4 : i64[4] = dense<[2,3,5,5]>\n"
         "  %qs = Mul(%q, %c)" + kG + " : f32[2,3,5,8]\n"
         "  %s = MatMul(%qs, %kt)" + kG + " : f32[2,3,5,5]\n"
         "  %b = Add(%s, %bias)" + kG + " : f32[2,3,5,5]\n"
         "  %r5 = Reshape(%b, %s5)" + kG + " : f32[1,2,3,5,5]\n"
         "  %m = Add(%r5, %mask)" + kG + " : f32[1,2,3,5,5]\n"
         "  %r4 = Reshape(%m, %s4)" + kG + " : f32[2,3,5,5]\n"
         "  %p = Softmax(%r4) {axis = -1}" + kG + " : f32[2,3,5,5]\n"
         "  %y = MatMul(%p, %v)" + kG + " : f32[2,3,5,8]\n  return %y\n}\n";
}

TEST_F(FusionAttentionDevice, SwinShiftedWindowMaskThroughReshapes) {
  Tensor mask = testing::random_tensor({1, 2, 1, 5, 5}, 40);
  for (int64_t i = 0; i < mask.numel(); ++i) mask.set_f64(i, (i * 7) % 5 == 2 ? -100.0 : 0.0);
  expect_matches_reference(swin_shifted_model(),
                           {{testing::random_tensor({2, 3, 5, 8}, 41), testing::random_tensor({2, 3, 8, 5}, 42),
                             testing::random_tensor({2, 3, 5, 8}, 43), mask}},
                           /*image_extra=*/1);
}

// Every tiling (rows per workgroup 8, 16, 32, 64: 16, 8, 4, 2 invocations
// per row), forced by the kiln.kernel hint; the planner's own choice
// depends on the device's compute units.
TEST_F(FusionAttentionDevice, EveryTiling) {
  for (const char* rows : {"8", "16", "32", "64"}) {
    SCOPED_TRACE(rows);
    AttentionCase c;
    c.mask = true;
    c.m = "37", c.n = "45", c.d = 64, c.dv = 64;
    c.rows = rows;
    auto g = parse_shaped_graph(attention_model(c));
    ASSERT_TRUE(g);
    const ExecutionPlan plan = plan_or_fail(*g);
    ASSERT_EQ(plan.dispatch_count(), 1u);
    EXPECT_EQ(plan.steps.back().kernel.groups[0].to_string(), std::to_string((37 + std::stoi(rows) - 1) / std::stoi(rows)));
    expect_matches_reference(attention_model(c), {inputs_of(c, 37, 45, 50)});
  }
}

// One plan and one shader for every sequence length.
TEST_F(FusionAttentionDevice, SymbolicSequenceLength) {
  AttentionCase c;
  c.m = "seq", c.n = "seq";
  c.mask = true;
  c.d = 8, c.dv = 8;
  std::vector<std::vector<Tensor>> runs;
  for (int64_t seq : {1, 7, 49, 197}) runs.push_back(inputs_of(c, seq, seq, 20 + static_cast<uint64_t>(seq)));
  expect_matches_reference(attention_model(c), runs);
}

// vit's attention as it is exported: q, k and v sliced out of one QKV
// projection [tokens, 3 * heads * d], split into heads and transposed (k
// to [heads, d, tokens]), q divided by sqrt(d); every view read by the
// attention kernel, and bert's rank-4 [1, heads, tokens, d] output, which
// an image packs on the heads, through the scratch copy.
std::string vit_model(bool rank4, int64_t tokens = 11) {
  const std::string n = std::to_string(tokens);
  const std::string lead = rank4 ? "1," : "";
  std::string t = "graph @g opset 17 {\n  input %qkv : f32[" + n + ",48]\n"
                  "  const %z : i64[1] = dense<[0]>\n  const %e1 : i64[1] = dense<[16]>\n"
                  "  const %e2 : i64[1] = dense<[32]>\n  const %e3 : i64[1] = dense<[48]>\n"
                  "  const %ax : i64[1] = dense<[1]>\n  const %shape : i64[3] = dense<[" + n + ",2,8]>\n"
                  "  const %sq : f32[] = dense<[2.828427]>\n";
  const std::string p = rank4 ? "[0,2,1,3]" : "[1,0,2]";
  const std::string pk = rank4 ? "[0,2,3,1]" : "[1,2,0]";
  const std::string shape4 = rank4 ? "  const %shape4 : i64[4] = dense<[1," + n + ",2,8]>\n" : "";
  t += shape4;
  const std::string sh = rank4 ? "%shape4" : "%shape";
  const std::string hd = rank4 ? "f32[1," + n + ",2,8]" : "f32[" + n + ",2,8]";
  t += "  %qs = Slice(%qkv, %z, %e1, %ax)" + kG + " : f32[" + n + ",16]\n";
  t += "  %ks = Slice(%qkv, %e1, %e2, %ax)" + kG + " : f32[" + n + ",16]\n";
  t += "  %vs = Slice(%qkv, %e2, %e3, %ax)" + kG + " : f32[" + n + ",16]\n";
  t += "  %qr = Reshape(%qs, " + sh + ")" + kG + " : " + hd + "\n";
  t += "  %kr = Reshape(%ks, " + sh + ")" + kG + " : " + hd + "\n";
  t += "  %vr = Reshape(%vs, " + sh + ")" + kG + " : " + hd + "\n";
  t += "  %q = Transpose(%qr) {perm = " + p + "}" + kG + " : f32[" + lead + "2," + n + ",8]\n";
  t += "  %k = Transpose(%kr) {perm = " + pk + "}" + kG + " : f32[" + lead + "2,8," + n + "]\n";
  t += "  %v = Transpose(%vr) {perm = " + p + "}" + kG + " : f32[" + lead + "2," + n + ",8]\n";
  t += "  %qd = Div(%q, %sq)" + kG + " : f32[" + lead + "2," + n + ",8]\n";
  t += "  %s = MatMul(%qd, %k)" + kG + " : f32[" + lead + "2," + n + "," + n + "]\n";
  t += "  %p = Softmax(%s) {axis = -1}" + kG + " : f32[" + lead + "2," + n + "," + n + "]\n";
  t += "  %y = MatMul(%p, %v)" + kG + " : f32[" + lead + "2," + n + ",8]\n  return %y\n}\n";
  return t;
}

TEST_F(FusionAttentionDevice, VitViewsIntoTheKernel) {
  auto g = parse_shaped_graph(vit_model(false));
  ASSERT_TRUE(g);
  const ExecutionPlan plan = plan_or_fail(*g);
  ASSERT_EQ(plan.dispatch_count(), 1u) << describe_plan(plan, *g);
  const KernelDesc& k = plan.steps.back().kernel;
  EXPECT_EQ(k.name, "fused_slice_slice_slice_reshape_reshape_reshape_transpose_transpose_transpose_attention_d8x8");
  const TensorId src = plan.value_tensor.at(g->find_value("qkv"));
  size_t views = 0;
  for (const KernelTensor& t : k.tensors) views += t.view && t.tensor == src;
  EXPECT_EQ(views, 3u);
  expect_matches_reference(vit_model(false), {{testing::random_tensor({11, 48}, 30)}});
}

TEST_F(FusionAttentionDevice, Rank4OutputThroughViews) {
  expect_matches_reference(vit_model(true), {{testing::random_tensor({11, 48}, 31)}}, /*image_extra=*/1);
}

// vit's views with enough tokens for the tensor-core kernel on a device
// that has it (fp16): keys read through a view with their last two axes
// swapped back, 8 halves per load; 70 tokens leave a partial key block.
TEST_F(FusionAttentionDevice, TensorCoreStagingThroughViews) {
  expect_matches_reference(vit_model(false, 70), {{testing::random_tensor({70, 48}, 32)}});
  expect_matches_reference(vit_model(true, 70), {{testing::random_tensor({70, 48}, 33)}}, /*image_extra=*/1);
}

// vit-sized heads with keys past a block edge, a masked key every third and
// head dims that pad to the fragments, each as its graph and its seed.
struct MaskedHeads {
  AttentionCase c;
  int64_t n;
  uint64_t seed;
};
std::vector<MaskedHeads> masked_heads(uint64_t seed_base) {
  std::vector<MaskedHeads> cases;
  for (const auto& [d, dv, n] : {std::tuple<int64_t, int64_t, int64_t>{64, 64, 197}, {24, 40, 170}, {128, 128, 161}}) {
    AttentionCase c;
    c.heads = "2", c.m = std::to_string(n), c.n = std::to_string(n), c.d = d, c.dv = dv;
    c.mask = true;
    cases.push_back({c, n, seed_base + static_cast<uint64_t>(d)});
  }
  return cases;
}

// The masked heads in fp16: on a device with NV cooperative matrices (fp32
// accumulators) the tensor-core kernel; checked against the reference
// everywhere (lavapipe runs the scalar kernel).
TEST_F(FusionAttentionDevice, TensorCoresWhereTheDeviceHasThem) {
  const TargetInfo target = runtime::target_info(device());
  const std::optional<CoopMatShape> shape = pick_coopmat_shape(target);
  const bool tensor_cores = shape && shape->f32_accumulator;
  for (const MaskedHeads& h : masked_heads(60)) {
    SCOPED_TRACE(attention_model(h.c));
    auto g = parse_shaped_graph(attention_model(h.c));
    ASSERT_TRUE(g);
    PlanOptions options;
    options.precision = ElemType::kF16;
    auto plan = build_plan(*g, target, options);
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    ASSERT_EQ(plan->dispatch_count(), 1u) << describe_plan(*plan, *g);
    EXPECT_EQ(plan->steps.back().kernel.name.find("_coopmat") != std::string::npos, tensor_cores)
        << plan->steps.back().kernel.name;
    expect_matches_reference(attention_model(h.c), {inputs_of(h.c, h.n, h.n, h.seed)});
  }
}

// The same through VK_KHR_cooperative_matrix forced ($KILN_COOPMAT=khr:
// the NV kernel rewritten into SPV_KHR_cooperative_matrix), on a device
// with fp16 shapes (fp32 accumulators) through it; others skip.
TEST_F(FusionAttentionDevice, TensorCoresThroughKhrCooperativeMatrix) {
  const TargetInfo target = runtime::target_info(device(), runtime::CoopMatMode::kKHR);
  const std::optional<CoopMatShape> shape = pick_coopmat_shape(target);
  if (!shape || !shape->f32_accumulator)
    GTEST_SKIP() << "the device has no fp16 shape with fp32 accumulators through VK_KHR_cooperative_matrix"
                 << (device().capabilities().cooperative_matrix_khr_hidden
                         ? " (it offers it, hidden from the old validation layer: KILN_TEST_VALIDATION=off)"
                         : "");
  testing::ScopedCoopMatEnv khr("khr");
  for (const MaskedHeads& h : masked_heads(80)) {
    SCOPED_TRACE(attention_model(h.c));
    auto g = parse_shaped_graph(attention_model(h.c));
    ASSERT_TRUE(g);
    auto model = testing::compile_on_test_device(*g, {Storage::kBuffer, ElemType::kF16});
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    EXPECT_NE((*model)->plan().steps.back().kernel.name.find("_coopmat"), std::string::npos)
        << (*model)->plan().steps.back().kernel.name;
    expect_matches_reference(attention_model(h.c), {inputs_of(h.c, h.n, h.n, h.seed)});
  }
}

}  // namespace
}  // namespace kiln::planner
