// The cooperative-matrix GEMM path: shape and tile choice, SPIR-V validity of
// its kernels for MatMul / Gemm / Conv (constant and symbolic sizes, sizes
// that are not multiples of the tile) on a target that claims NV cooperative
// matrices, and — on a device that has them (NVIDIA; lavapipe skips) — fp16
// results against the reference executor.
//
// GPU run: kiln_planner_test --gtest_filter='*CoopMat*'
#include "planner/gemm_coopmat.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/ops/shape_inference.h"
#include "engine/runtime/reference_executor.h"
#include "engine/runtime/vulkan/vulkan_model.h"
#include "planner/execution_plan.h"
#include "planner/glsl_codegen.h"
#include "planner/plan_hints.h"
#include "planner/testing/op_check.h"
#include "platform/vulkan/coopmat_khr.h"
#include "platform/vulkan/shader_compiler.h"
#include "platform/vulkan/vk_test_env.h"

namespace kiln::planner {
namespace {

using testing::BackendConfig;
using testing::check_op;
using testing::OpCheck;
using testing::random_tensor;

// What an NVIDIA GPU reports through VK_NV_cooperative_matrix (Turing and
// later): 16x8x16 and 16x8x8 with fp16 or fp32 accumulators.
TargetInfo nv_target() {
  TargetInfo t;
  t.vulkan_version = VK_API_VERSION_1_3;
  t.fp16_storage = true;
  t.fp16_arithmetic = true;
  t.subgroup_size = 32;
  t.max_shared_memory = 49152;
  t.coopmat = CoopMatFlavour::kNV;
  t.coopmat_f16_shapes = {{16, 8, 8, false}, {16, 8, 16, false}, {16, 8, 8, true}, {16, 8, 16, true}};
  return t;
}

// A device with only VK_KHR_cooperative_matrix and the 16x16x16 shape
// (AMD RDNA3, Intel Arc; NVIDIA lists it too): the kernels' fp16 A and B
// fragments then share one NV type, which the KHR rewrite must split.
TargetInfo khr_target(bool f32_accumulators = true) {
  TargetInfo t = nv_target();
  t.coopmat = CoopMatFlavour::kKHR;
  t.coopmat_f16_shapes = {{16, 16, 16, f32_accumulators}};
  return t;
}

GemmProblem problem(ir::Dim m, ir::Dim n, ir::Dim k) {
  GemmProblem p;
  p.name = "g";
  p.m = m;
  p.n = n;
  p.k = k;
  return p;
}

TEST(GemmCoopMatChoice, PrefersF32AccumulatorsThenTheLargestShape) {
  TargetInfo t = nv_target();
  auto s = pick_coopmat_shape(t);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->m, 16u);
  EXPECT_EQ(s->n, 8u);
  EXPECT_EQ(s->k, 16u);
  EXPECT_TRUE(s->f32_accumulator);
  // Only fp16 accumulators: still used.
  t.coopmat_f16_shapes = {{16, 8, 16, false}};
  s = pick_coopmat_shape(t);
  ASSERT_TRUE(s.has_value());
  EXPECT_FALSE(s->f32_accumulator);
  // Shapes the tiles cannot hold (m does not divide 16, k not a multiple of 8).
  t.coopmat_f16_shapes = {{32, 8, 16, true}, {16, 8, 4, true}, {16, 4, 16, true}};
  EXPECT_FALSE(pick_coopmat_shape(t).has_value());
  t = nv_target();
  t.coopmat = CoopMatFlavour::kNone;
  EXPECT_FALSE(pick_coopmat_shape(t).has_value());
}

TEST(GemmCoopMatChoice, OnlyFp16AndLargeEnoughProblems) {
  const TargetInfo t = nv_target();
  const ir::Dim s = ir::Dim::symbol("s");
  EXPECT_FALSE(choose_coopmat(problem(ir::Dim(256), ir::Dim(256), ir::Dim(64)), t, ElemType::kF32).has_value());
  EXPECT_FALSE(choose_coopmat(problem(ir::Dim(16), ir::Dim(256), ir::Dim(64)), t, ElemType::kF16).has_value());
  EXPECT_FALSE(choose_coopmat(problem(ir::Dim(256), ir::Dim(8), ir::Dim(64)), t, ElemType::kF16).has_value());
  TargetInfo no_subgroups = t;
  no_subgroups.subgroup_size = 0;
  EXPECT_FALSE(choose_coopmat(problem(s, ir::Dim(256), ir::Dim(64)), no_subgroups, ElemType::kF16).has_value());

  auto c = choose_coopmat(problem(s, ir::Dim(256), ir::Dim(64)), t, ElemType::kF16);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->bm, 64);
  EXPECT_EQ(c->bn, 64);
  c = choose_coopmat(problem(ir::Dim(100), ir::Dim(20), ir::Dim(64)), t, ElemType::kF16);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->bn, 32);
  // A batch-1 transformer projection (197 tokens): 32 x 64 tiles.
  c = choose_coopmat(problem(ir::Dim(197), ir::Dim(3072), ir::Dim(768)), t, ElemType::kF16);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->bm, 32);
  EXPECT_EQ(c->bn, 64);
  // Large: 128 x 128 tiles of 2 x 2 subgroups (128 of them), 32 of K per step.
  c = choose_coopmat(problem(ir::Dim(4096), ir::Dim(512), ir::Dim(64)), t, ElemType::kF16);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->bm, 128);
  EXPECT_EQ(c->bn, 128);
  EXPECT_EQ(c->wm * c->wn, 4);
  EXPECT_EQ(c->bk, 32);
  // Too few 128 x 128 tiles, enough 128 x 64 ones: eight subgroups.
  c = choose_coopmat(problem(ir::Dim(4096), ir::Dim(256), ir::Dim(64)), t, ElemType::kF16);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->bm, 128);
  EXPECT_EQ(c->bn, 64);
  EXPECT_EQ(c->wm * c->wn, 8);
  // A batch of small products (swin's 49-token windows) is no large GEMM.
  GemmProblem windows = problem(ir::Dim(49), ir::Dim(49), ir::Dim(32));
  windows.batch = ir::Dim(192);
  c = choose_coopmat(windows, t, ElemType::kF16);
  ASSERT_TRUE(c.has_value());
  EXPECT_NE(c->bn, 128);
  // MatMul and Gemm tiles of up to 64 rows: 64 of K per step.
  c = choose_coopmat(problem(ir::Dim(197), ir::Dim(768), ir::Dim(768)), t, ElemType::kF16);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->bm, 32);
  EXPECT_EQ(c->bk, 64);
  GemmProblem conv = problem(s, ir::Dim(256), ir::Dim(576));
  conv.a_m_fastest = true;
  c = choose_coopmat(conv, t, ElemType::kF16);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->bm, 64);
  EXPECT_EQ(c->bn, 128);
  EXPECT_EQ(c->bk, 32);  // convolutions: 32
  // 64-column tiles where 128-column ones would leave the GPU idle and
  // 64-column ones fill it (no split-K then), or K is too shallow to split.
  const auto conv_tile = [&](int64_t m, int64_t n, int64_t k) {
    GemmProblem q = problem(ir::Dim(m), ir::Dim(n), ir::Dim(k));
    q.a_m_fastest = true;
    std::optional<CoopMatConfig> r = choose_coopmat(q, t, ElemType::kF16);
    return r ? r->bn : 0;
  };
  EXPECT_EQ(conv_tile(3136, 256, 256), 64);   // 98 tiles of 128 columns, 196 of 64
  EXPECT_EQ(conv_tile(784, 192, 32), 64);     // shallow: never split
  EXPECT_EQ(conv_tile(196, 1024, 256), 128);  // split either way: the wide tile
  EXPECT_EQ(conv_tile(3136, 512, 1152), 128); // 196 tiles of 128 columns fill it
  // 128 x 128 tiles need 18.9 KiB of shared memory (A and B tiles; the C
  // staging of four subgroups reuses them); with 16 KiB 64 x 64.
  TargetInfo small = t;
  small.max_shared_memory = 16384;
  c = choose_coopmat(problem(ir::Dim(4096), ir::Dim(512), ir::Dim(64)), small, ElemType::kF16);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->bm, 64);
  std::cout << "GemmCoopMat: large GEMM on the NV target: " << describe(*c) << "\n";
}

// A forced tile (TargetInfo::coopmat_tile, $KILN_COOPMAT_TILE) replaces
// the planner's choice where the target can run it, and only there.
TEST(GemmCoopMatChoice, ForcedTileOrThePlannersChoice) {
  TargetInfo t = nv_target();
  const GemmProblem big = problem(ir::Dim(4096), ir::Dim(4096), ir::Dim(4096));
  t.coopmat_tile = CoopMatTile{128, 128, 2, 2, 32, 2};
  auto c = choose_coopmat(big, t, ElemType::kF16);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->bm, 128);
  EXPECT_EQ(c->bn, 128);
  EXPECT_EQ(c->wm * c->wn, 4);
  EXPECT_EQ(c->bk, 32);
  EXPECT_EQ(c->stages, 2);
  t.coopmat_tile = CoopMatTile{64, 64, 2, 2, 64, 1};
  c = choose_coopmat(big, t, ElemType::kF16);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->bk, 64);
  // A zero tile: the planner's 128 x 128, double-buffered.
  t.coopmat_tile = CoopMatTile{0, 0, 0, 0, 32, 2};
  c = choose_coopmat(big, t, ElemType::kF16);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->bm, 128);
  EXPECT_EQ(c->bn, 128);
  EXPECT_EQ(c->stages, 2);
  // Three subgroup rows do not divide 128 rows; double-buffered 128 x 256
  // tiles 64 deep need 70 KiB of the target's 48: the planner's choice.
  for (const CoopMatTile& bad : {CoopMatTile{128, 128, 3, 2, 32, 1}, CoopMatTile{128, 256, 2, 4, 64, 2}}) {
    t.coopmat_tile = bad;
    c = choose_coopmat(big, t, ElemType::kF16);
    ASSERT_TRUE(c.has_value());
    EXPECT_EQ(c->bm, 128);
    EXPECT_EQ(c->bn, 128);
    EXPECT_EQ(c->bk, 32);
    EXPECT_EQ(c->stages, 1);
  }
}

// ---------------------------------------------------------------------------
// SPIR-V validity of the planned kernels (no device needed).


// What a KHR cooperative-matrix module holds, read back from its words
// (independently of vk::check_khr_cooperative_matrix).
struct KhrFragments {
  size_t muladds = 0, loads = 0, stores = 0;
  bool nv_left = false;
  bool uses_ok = true;     // every MulAdd's A, B, C, result of Uses 0, 1, 2, 2
  bool layouts_ok = true;  // every Load / Store layout an OpConstant 0 or 1
  bool ids_ok = true;      // every result id under the bound
  // (component type, rows id, columns id) -> the Uses declared for it
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, std::set<uint32_t>> uses_per_shape;
};

KhrFragments read_khr(const std::vector<uint32_t>& spirv) {
  KhrFragments f;
  std::map<uint32_t, uint32_t> constant, type_of, matrix_use;
  std::vector<std::vector<uint32_t>> insts;
  for (size_t i = 5; i < spirv.size() && (spirv[i] >> 16) != 0; i += spirv[i] >> 16)
    insts.emplace_back(spirv.begin() + i, spirv.begin() + i + (spirv[i] >> 16));
  for (const auto& w : insts) {
    const uint32_t op = w[0] & 0xffffu;
    if (op == 43) constant[w[2]] = w[3];  // OpConstant
    if ((op == 17 && w[1] == 5357) || (op >= 5358 && op <= 5362)) f.nv_left = true;
    if (op == 4456) {
      matrix_use[w[1]] = constant.count(w[6]) ? constant[w[6]] : 99;
      f.uses_per_shape[{w[2], w[4], w[5]}].insert(matrix_use[w[1]]);
      f.ids_ok &= w[1] < spirv[3];
    }
    if (op == 4457 || op == 4459 || op == 61 || op == 59 || op == 65 || op == 44 || op == 80 || op == 81 || op == 245) {
      type_of[w[2]] = w[1];
      f.ids_ok &= w[2] < spirv[3];
    }
  }
  const auto use = [&](uint32_t value) {
    auto t = type_of.find(value);
    return t != type_of.end() && matrix_use.count(t->second) ? matrix_use[t->second] : 99u;
  };
  const auto layout_ok = [&](uint32_t id) { return constant.count(id) && constant[id] <= 1; };
  for (const auto& w : insts) {
    const uint32_t op = w[0] & 0xffffu;
    if (op == 4459) {
      ++f.muladds;
      f.uses_ok &= use(w[3]) == 0 && use(w[4]) == 1 && use(w[5]) == 2 && use(w[2]) == 2;
    }
    if (op == 4457) ++f.loads, f.layouts_ok &= layout_ok(w[4]);
    if (op == 4458) ++f.stores, f.layouts_ok &= layout_ok(w[3]);
  }
  return f;
}

// The KHR form of a tensor-core kernel, checked: the pass's own check, the
// structure read back here, and SPIRV-Cross's reflection (the runtime's
// pipeline layout). spirv-val cannot judge it (this SPIRV-Tools rejects
// the KHR capability). Returns whether an fp16 NV type served as both A
// and B and was split.
bool expect_khr_kernel(const std::vector<uint32_t>& spirv, const std::string& what) {
  const Status check = vk::check_khr_cooperative_matrix(spirv);
  EXPECT_TRUE(check.ok()) << what << ": " << check.to_string();
  const KhrFragments f = read_khr(spirv);
  EXPECT_FALSE(f.nv_left) << what;
  EXPECT_GT(f.muladds, 0u) << what;
  EXPECT_GT(f.loads, 0u) << what;
  EXPECT_TRUE(f.uses_ok) << what;
  EXPECT_TRUE(f.layouts_ok) << what;
  EXPECT_TRUE(f.ids_ok) << what;
  EXPECT_TRUE(vk::reflect(spirv).ok()) << what;
  bool split = false;
  for (const auto& [shape, uses] : f.uses_per_shape) split |= uses.count(0) && uses.count(1);
  return split;
}

// Plans `g`, compiles every kernel for Vulkan 1.1 and 1.3 and validates it;
// expects a kernel named `expect_name`. On a kKHR target the tensor-core
// kernels are rewritten (as the runtime does) and checked with
// expect_khr_kernel instead; `khr_split` (optional) counts the kernels
// whose fp16 type was split into A and B variants.
// `glsl_of_expected` (optional) receives the GLSL of the kernel named `expect_name`.
void expect_valid(const ir::Graph& g, const TargetInfo& target, Storage storage, const std::string& expect_name,
                  std::string* glsl_of_expected = nullptr, int* khr_split = nullptr) {
  PlanOptions options;
  options.precision = ElemType::kF16;
  options.storage = storage;
  auto plan = build_plan(g, target, options);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  auto compiler = vk::ShaderCompiler::create();
  ASSERT_TRUE(compiler.ok());
  bool found = false;
  std::string names;
  for (const PlanStep& step : plan->steps) {
    ASSERT_EQ(step.kind, PlanStep::Kind::kDispatch);
    names += " " + step.kernel.name;
    auto glsl = generate_glsl(step.kernel, target);
    ASSERT_TRUE(glsl.ok()) << glsl.status().to_string();
    for (uint32_t version : {VK_API_VERSION_1_1, VK_API_VERSION_1_3}) {
      vk::CompileOptions co;
      co.vulkan_version = version;
      co.source_name = glsl->name + ".comp";
      co.cooperative_matrix_khr = target.coopmat == CoopMatFlavour::kKHR &&
                                  glsl->glsl.find("GL_NV_cooperative_matrix") != std::string::npos;
      auto spirv = (*compiler)->compile(glsl->glsl, co);
      ASSERT_TRUE(spirv.ok()) << spirv.status().to_string() << "\n" << glsl->glsl;
      if (co.cooperative_matrix_khr) {
        const bool split = expect_khr_kernel(*spirv, glsl->name);
        if (khr_split && split) ++*khr_split;
      } else {
        EXPECT_EQ(testing::spirv_val_errors(*spirv, version), "") << glsl->glsl;
      }
      // The runtime reflects every module for its pipeline layout. The
      // passes of a split GEMM declare all of its tensors but use only
      // theirs (the partial tiles do not store Y; the reduce pass reads only
      // GP), and the compiler drops the unused bindings.
      auto reflection = vk::reflect(*spirv);
      ASSERT_TRUE(reflection.ok()) << reflection.status().to_string();
      if (step.kernel.name.find("splitk") == std::string::npos) {
        EXPECT_EQ(reflection->bindings.size(), glsl->bindings);
      }
      EXPECT_LE(reflection->bindings.size(), glsl->bindings);
      EXPECT_GE(reflection->bindings.size(), 2u);
      EXPECT_EQ(reflection->local_size, glsl->local_size);
    }
    if (glsl->name == expect_name) {
      found = true;
      if (glsl_of_expected) *glsl_of_expected = glsl->glsl;
    }
  }
  EXPECT_TRUE(found) << "no kernel named " << expect_name << " among" << names;
}

TEST(GemmCoopMatKernels, MatMulGemmConvAreValidSpirv) {
  const TargetInfo t = nv_target();
  const ir::Dim s = ir::Dim::symbol("s");
  // Constant sizes, none a multiple of the tile (up to 4096 rows: 32-row tiles).
  expect_valid(testing::one_node_graph("MatMul", ir::SymShape::from_concrete({100, 72}), {random_tensor({72, 90}, 1)}, {}), t,
               Storage::kBuffer, "matmul_coopmat32x64");
  expect_valid(testing::one_node_graph("MatMul", ir::SymShape::from_concrete({100, 72}), {random_tensor({72, 90}, 1)}, {}), t,
               Storage::kImage, "matmul_coopmat32x64");
  // Symbolic rows: 64 x 64.
  expect_valid(testing::one_node_graph("MatMul", ir::SymShape({s, ir::Dim(72)}), {random_tensor({72, 90}, 1)}, {}), t,
               Storage::kBuffer, "matmul_coopmat64x64");
  // Symbolic rows, N <= 32.
  expect_valid(testing::one_node_graph("MatMul", ir::SymShape({s, ir::Dim(40)}), {random_tensor({40, 24}, 2)}, {}), t,
               Storage::kBuffer, "matmul_coopmat64x32");
  // Large: 128 x 128 tiles of four subgroups; 128 x 64 of eight where
  // fewer columns leave too few of those.
  expect_valid(testing::one_node_graph("MatMul", ir::SymShape::from_concrete({4096, 64}), {random_tensor({64, 512}, 3)}, {}), t,
               Storage::kBuffer, "matmul_coopmat128x128");
  expect_valid(testing::one_node_graph("MatMul", ir::SymShape::from_concrete({4096, 64}), {random_tensor({64, 256}, 3)}, {}), t,
               Storage::kBuffer, "matmul_coopmat128x64");
  // Gemm with transposed A and a bias.
  std::map<std::string, ir::Attribute> gemm = {{"transA", ir::Attribute::of_int(1)},
                                               {"alpha", ir::Attribute::of_float(0.5f)},
                                               {"beta", ir::Attribute::of_float(1.0f)}};
  expect_valid(testing::one_node_graph("Gemm", ir::SymShape::from_concrete({33, 70}), {random_tensor({33, 50}, 4), random_tensor({50}, 5)},
                        gemm),
               t, Storage::kBuffer, "gemm_coopmat64x64");
  // Conv (implicit GEMM) with symbolic spatial dims, buffer and image.
  const ir::SymShape x({ir::Dim(1), ir::Dim(8), ir::Dim::symbol("h"), ir::Dim::symbol("w")});
  const std::map<std::string, ir::Attribute> same = {{"auto_pad", ir::Attribute::of_string("SAME_UPPER")}};
  const std::vector<Tensor> w = {random_tensor({24, 8, 3, 3}, 6), random_tensor({24}, 7)};
  expect_valid(testing::one_node_graph("Conv", x, w, same), t, Storage::kBuffer, "conv_coopmat64x32");
  expect_valid(testing::one_node_graph("Conv", x, w, same), t, Storage::kImage, "conv_coopmat64x32");
  // Wide convolution: 64 x 128 tiles.
  const std::vector<Tensor> wide = {random_tensor({128, 8, 3, 3}, 10)};
  expect_valid(testing::one_node_graph("Conv", x, wide, same), t, Storage::kBuffer, "conv_coopmat64x128");
  expect_valid(testing::one_node_graph("Conv", x, wide, same), t, Storage::kImage, "conv_coopmat64x128");
  // Strided pointwise projections: with more weights than output pixels
  // per image the weights are fp16; else the precision policy keeps them
  // fp32 and the kernel multiplies by their fp16 halves (B_SPLIT). More than
  // 196 output pixels in all and 32 MFLOP: fewer take the scalar kernel
  // (emit_gemm).
  const std::map<std::string, ir::Attribute> stride2 = {{"strides", ir::Attribute::of_ints({2, 2})}};
  // (The first is GemmCoopMatDeviceTest.Conv's projection.)
  expect_valid(testing::one_node_graph("Conv", ir::SymShape::from_concrete({6, 96, 18, 18}), {random_tensor({384, 96, 1, 1}, 8)},
                        stride2),
               t, Storage::kBuffer, "conv_coopmat64x64");
  expect_valid(testing::one_node_graph("Conv", ir::SymShape::from_concrete({1, 64, 128, 128}), {random_tensor({96, 64, 1, 1}, 9)},
                        stride2),
               t, Storage::kBuffer, "conv_coopmat64x64");
  // 196 output pixels or fewer (a 14x14 stage at batch 1), or at most 32
  // MFLOP (here 29.5): the scalar kernel.
  expect_valid(testing::one_node_graph("Conv", ir::SymShape::from_concrete({1, 64, 28, 28}), {random_tensor({96, 64, 1, 1}, 9)},
                        stride2),
               t, Storage::kBuffer, "conv_tile64x64");
  expect_valid(testing::one_node_graph("Conv", ir::SymShape::from_concrete({1, 96, 40, 40}), {random_tensor({96, 96, 1, 1}, 9)}, {}),
               t, Storage::kBuffer, "conv_tile64x64");
  // 1x1 convolutions that would split K: the scalar split-K kernel
  // (efficientnet_b0's 7x7 projection), unless wide (resnet50's last
  // expansion, 2048 channels) or wide and deep.
  expect_valid(testing::one_node_graph("Conv", ir::SymShape::from_concrete({1, 1152, 7, 7}),
                                       {random_tensor({192, 1152, 1, 1}, 12)}, {}),
               t, Storage::kBuffer, "conv_splitk_tile64x64");
  expect_valid(testing::one_node_graph("Conv", ir::SymShape::from_concrete({1, 512, 7, 7}),
                                       {random_tensor({2048, 512, 1, 1}, 13)}, {}),
               t, Storage::kBuffer, "conv_splitk_coopmat64x128");
  expect_valid(testing::one_node_graph("Conv", ir::SymShape::from_concrete({1, 1024, 14, 14}),
                                       {random_tensor({512, 1024, 1, 1}, 14)}, {}),
               t, Storage::kBuffer, "conv_splitk_coopmat64x128");
}

// Every forced tile shape the sweeps use compiles to valid SPIR-V, for a
// MatMul whose sizes are no multiple of any tile, a split-K one, an
// implicit-GEMM convolution, and one with fp32 weights (B_SPLIT).
TEST(GemmCoopMatKernels, ForcedTilesAreValidSpirv) {
  const std::map<std::string, ir::Attribute> pads = {{"pads", ir::Attribute::of_ints({1, 1, 1, 1})}};
  for (const CoopMatTile& tile : {CoopMatTile{128, 128, 2, 2, 32, 2}, CoopMatTile{128, 128, 4, 2, 32, 2},
                                  CoopMatTile{128, 64, 4, 2, 64, 1}, CoopMatTile{64, 64, 2, 2, 32, 2},
                                  CoopMatTile{32, 64, 2, 2, 64, 2}}) {
    for (const TargetInfo& base : {nv_target(), khr_target()}) {
      TargetInfo t = base;
      t.coopmat_tile = tile;
      // The depth shows in a name where it is not the default: 64 for
      // MatMul tiles of up to 64 rows, 32 for larger ones and convolutions.
      const std::string tile_name = "coopmat" + std::to_string(tile.bm) + "x" + std::to_string(tile.bn);
      const std::string db = tile.stages == 2 ? "db" : "";
      const int matmul_bk = tile.bm > 64 ? 32 : 64;
      const std::string name = tile_name + (tile.bk != matmul_bk ? "k" + std::to_string(tile.bk) : "") + db;
      const std::string conv_name = tile_name + (tile.bk == 64 ? "k64" : "") + db;
      SCOPED_TRACE(name + (base.coopmat == CoopMatFlavour::kKHR ? " KHR" : " NV"));
      // 2 x 2 tiles or fewer over K = 4096 split K on a GPU of many compute
      // units; on one of a single unit nothing splits.
      expect_valid(testing::one_node_graph("MatMul", ir::SymShape::from_concrete({200, 4096}),
                                           {random_tensor({4096, 200}, 2)}, {}),
                   t, Storage::kBuffer, "matmul_splitk_" + name);
      t.compute_units = 1;
      expect_valid(testing::one_node_graph("MatMul", ir::SymShape::from_concrete({300, 200}),
                                           {random_tensor({200, 250}, 1)}, {}),
                   t, Storage::kBuffer, "matmul_" + name);
      expect_valid(testing::one_node_graph("Conv", ir::SymShape::from_concrete({1, 64, 20, 20}),
                                           {random_tensor({128, 64, 3, 3}, 3)}, pads),
                   t, Storage::kImage, "conv_" + conv_name);
      // Fewer weights than output pixels: kept fp32 and multiplied as two
      // fp16 halves, whose second B tile double-buffered 128 x 128 tiles
      // have no room for in 48 KiB.
      if (tile.bm * tile.bn < 128 * 128 || tile.stages == 1)
        expect_valid(testing::one_node_graph("Conv", ir::SymShape::from_concrete({1, 16, 40, 40}),
                                             {random_tensor({72, 16, 3, 3}, 4)}, pads),
                     t, Storage::kBuffer, "conv_" + conv_name);
    }
  }
}

// A fusion group (planner/fusion.h) of `op` on x plus constant inputs,
// then the tail ops (each reading the previous value and, for a binary op,
// `tail_input`); built by hand, shapes inferred.
ir::Graph fused_graph(const ir::SymShape& x_shape, const std::vector<std::pair<std::string, std::vector<Tensor>>>& ops,
                      const std::vector<std::map<std::string, ir::Attribute>>& attrs) {
  ir::Graph g;
  ir::ValueId v = g.add_input("x", DType::kFloat32, x_shape);
  for (size_t i = 0; i < ops.size(); ++i) {
    std::vector<ir::ValueId> in = {v};
    for (size_t j = 0; j < ops[i].second.size(); ++j)
      in.push_back(g.add_constant("c" + std::to_string(i) + "_" + std::to_string(j), ops[i].second[j]));
    v = g.add_value("v" + std::to_string(i), DType::kUndefined, ir::SymShape::unranked());
    const ir::NodeId n = g.add_node(ops[i].first, in, {v}, i < attrs.size() ? attrs[i] : std::map<std::string, ir::Attribute>{});
    g.node(n).annotations["kiln.fusion_group"] = "f";
  }
  g.add_output(v);
  EXPECT_TRUE(ops::infer_graph_shapes(g).ok());
  return g;
}

TEST(GemmCoopMatKernels, FusedEpiloguesAndDepthwisePointwiseAreValidSpirv) {
  const TargetInfo t = nv_target();
  // MatMul + bias + Relu: the cooperative-matrix kernel stores through the tail.
  const ir::Graph mm = fused_graph(ir::SymShape::from_concrete({100, 72}),
                                   {{"MatMul", {random_tensor({72, 90}, 1)}}, {"Add", {random_tensor({90}, 2)}}, {"Relu", {}}}, {});
  expect_valid(mm, t, Storage::kBuffer, "matmul_coopmat32x64+add+relu");
  expect_valid(mm, t, Storage::kImage, "matmul_coopmat32x64+add+relu");
  // Depthwise 3x3 + Clip + pointwise 32 -> 64 + Relu, symbolic spatial dims.
  const ir::SymShape x({ir::Dim(1), ir::Dim(32), ir::Dim::symbol("h"), ir::Dim::symbol("w")});
  const ir::Graph dwpw = fused_graph(
      x,
      {{"Conv", {random_tensor({32, 1, 3, 3}, 3), random_tensor({32}, 4)}},
       {"Clip", {Tensor::scalar_f32(0.0f), Tensor::scalar_f32(6.0f)}},
       {"Conv", {random_tensor({64, 32, 1, 1}, 5)}},
       {"Relu", {}}},
      {{{"group", ir::Attribute::of_int(32)}, {"pads", ir::Attribute::of_ints({1, 1, 1, 1})}}});
  expect_valid(dwpw, t, Storage::kBuffer, "dwpw_coopmat64x64+relu");
  expect_valid(dwpw, t, Storage::kImage, "dwpw_coopmat64x64+relu");
  // A read through Transpose + Reshape (vit's attention output into its
  // projection): runs of 8 along K are contiguous in the source, so the
  // tensor-core kernel loads them as one 16-byte vector through the view.
  const ir::Graph proj = fused_graph(
      ir::SymShape::from_concrete({4, 70, 16}),
      {{"Transpose", {}}, {"Reshape", {Tensor::from_vector<int64_t>({2}, {70, 64})}}, {"MatMul", {random_tensor({64, 40}, 6)}}},
      {{{"perm", ir::Attribute::of_ints({1, 0, 2})}}});
  std::string text;
  expect_valid(proj, t, Storage::kBuffer, "fused_transpose_reshape_matmul_coopmat32x64", &text);
  EXPECT_NE(text.find("uvec4 A_ld8h(int i) {"), std::string::npos);
  EXPECT_NE(text.find("return A_src_data8[A_src_index("), std::string::npos) << text;
}

// A LayerNormalization read by a MatMul (fusion_norm_gemm.h): the
// tensor-core kernel runs the row prologue and normalizes its 16-byte A
// units, or through a channels-last view reads element by element.
TEST(GemmCoopMatKernels, NormGemmIsValidSpirv) {
  const std::map<std::string, ir::Attribute> last = {{"axis", ir::Attribute::of_int(-1)}};
  const ir::Graph rows = fused_graph(
      ir::SymShape::from_concrete({1, 100, 96}),
      {{"LayerNormalization", {random_tensor({96}, 1), random_tensor({96}, 2)}},
       {"MatMul", {random_tensor({96, 128}, 3)}},
       {"Relu", {}}},
      {last});
  std::string text;
  expect_valid(rows, nv_target(), Storage::kBuffer, "normmatmul_coopmat32x64+relu", &text);
  EXPECT_NE(text.find("uvec4 gemm_a8("), std::string::npos) << text;
  expect_valid(rows, khr_target(), Storage::kBuffer, "normmatmul_coopmat32x64+relu");
  expect_valid(rows, nv_target(), Storage::kImage, "normmatmul_coopmat32x64+relu");
  const ir::Graph view = fused_graph(
      ir::SymShape::from_concrete({1, 64, 10, 10}),
      {{"Transpose", {}}, {"LayerNormalization", {random_tensor({64}, 4)}}, {"MatMul", {random_tensor({64, 256}, 5)}}},
      {{{"perm", ir::Attribute::of_ints({0, 2, 3, 1})}}, last});
  expect_valid(view, nv_target(), Storage::kBuffer, "fused_transpose_normmatmul_coopmat32x64");
}

// ConvNeXt's Linear over channels-last rows stored through a Transpose to
// NCHW: the tensor-core kernel stores m-major (its rows are the output's
// contiguous axis), whole and split.
TEST(GemmCoopMatKernels, StoreThroughATransposeToNchwIsValidSpirv) {
  const auto chain = [](int64_t k) {
    return fused_graph(ir::SymShape::from_concrete({1, 7, 7, k}),
                       {{"MatMul", {random_tensor({k, 96}, 1)}}, {"Add", {random_tensor({96}, 2)}}, {"Transpose", {}}},
                       {{}, {}, {{"perm", ir::Attribute::of_ints({0, 3, 1, 2})}}});
  };
  std::string text;
  expect_valid(chain(64), nv_target(), Storage::kBuffer, "matmul_coopmat32x64+add+transpose", &text);
  EXPECT_NE(text.find("  return q % FM;"), std::string::npos) << text;  // M_MAJOR's quads down the column
  expect_valid(chain(1536), nv_target(), Storage::kBuffer, "matmul_splitk_reduce+add+transpose", &text);
  EXPECT_NE(text.find("#define REDUCE_M_MAJOR 1"), std::string::npos) << text;
  // Stored through reshapes only, the columns stay contiguous: row-major.
  const ir::Graph rows = fused_graph(
      ir::SymShape::from_concrete({1, 49, 1536}),
      {{"MatMul", {random_tensor({1536, 96}, 3)}}, {"Reshape", {Tensor::from_vector<int64_t>({4}, {1, 7, 7, 96})}}},
      {});
  expect_valid(rows, nv_target(), Storage::kBuffer, "matmul_splitk_reduce+reshape", &text);
  EXPECT_EQ(text.find("#define REDUCE_M_MAJOR 1"), std::string::npos) << text;
}

// A few tensor-core workgroups over a deep K would leave the GPU idle:
// such a GEMM splits K on the tensor cores, its slices added by the last
// workgroup per tile (one dispatch; resnet50's 7x7 stage: M = 49,
// N = 512, K = 4608), or with splitk_reduce=separate takes the scalar
// split-K pair.
// vit's attention at 70 tokens (q, k and v sliced out of one projection,
// k transposed to [heads, d, tokens]) as one fused tensor-core kernel: the
// keys staged through a view with the last two axes swapped back.
TEST(GemmCoopMatKernels, AttentionThroughViewsIsValidSpirv) {
  const std::string g = " #{kiln.fusion_group = \"a\"}";
  const std::string text =
      "graph @g opset 17 {\n  input %qkv : f32[70,48]\n"
      "  const %z : i64[1] = dense<[0]>\n  const %e1 : i64[1] = dense<[16]>\n"
      "  const %e2 : i64[1] = dense<[32]>\n  const %e3 : i64[1] = dense<[48]>\n"
      "  const %ax : i64[1] = dense<[1]>\n  const %shape : i64[3] = dense<[70,2,8]>\n"
      "  const %sq : f32[] = dense<[2.828427]>\n"
      "  %qs = Slice(%qkv, %z, %e1, %ax)" + g + " : f32[70,16]\n"
      "  %ks = Slice(%qkv, %e1, %e2, %ax)" + g + " : f32[70,16]\n"
      "  %vs = Slice(%qkv, %e2, %e3, %ax)" + g + " : f32[70,16]\n"
      "  %qr = Reshape(%qs, %shape)" + g + " : f32[70,2,8]\n"
      "  %kr = Reshape(%ks, %shape)" + g + " : f32[70,2,8]\n"
      "  %vr = Reshape(%vs, %shape)" + g + " : f32[70,2,8]\n"
      "  %q = Transpose(%qr) {perm = [1,0,2]}" + g + " : f32[2,70,8]\n"
      "  %k = Transpose(%kr) {perm = [1,2,0]}" + g + " : f32[2,8,70]\n"
      "  %v = Transpose(%vr) {perm = [1,0,2]}" + g + " : f32[2,70,8]\n"
      "  %qd = Div(%q, %sq)" + g + " : f32[2,70,8]\n"
      "  %s = MatMul(%qd, %k)" + g + " : f32[2,70,70]\n"
      "  %p = Softmax(%s) {axis = -1}" + g + " : f32[2,70,70]\n"
      "  %y = MatMul(%p, %v)" + g + " : f32[2,70,8]\n  return %y\n}\n";
  auto graph = testing::parse_shaped_graph(text);
  ASSERT_TRUE(graph);
  std::string glsl;
  const std::string name =
      "fused_slice_slice_slice_reshape_reshape_reshape_transpose_transpose_transpose_attention_d8x8_coopmat";
  expect_valid(*graph, nv_target(), Storage::kBuffer, name, &glsl);
  // Every staging read is one 16-byte load: keys, queries and values are
  // runs of 8 contiguous halves in the fp16 projection.
  EXPECT_NE(glsl.find("return col < 8 ? KT_ld8h("), std::string::npos) << glsl;
  EXPECT_NE(glsl.find("return col < 8 ? Q_ld8h("), std::string::npos) << glsl;
  EXPECT_NE(glsl.find("KT_src_data8[") , std::string::npos) << glsl;
  expect_valid(*graph, nv_target(), Storage::kImage, name);
  // With subgroup shuffles and arithmetic (an H100's), rows' maxima meet
  // through shuffles and the rescale test is one subgroup reduction.
  TargetInfo with_subgroup_ops = nv_target();
  with_subgroup_ops.subgroup_shuffle = with_subgroup_ops.subgroup_arithmetic = true;
  std::string fast;
  expect_valid(*graph, with_subgroup_ops, Storage::kBuffer, name, &fast);
  EXPECT_NE(fast.find("#define ATT_SHUFFLE 1"), std::string::npos);
  EXPECT_NE(fast.find("GL_KHR_shader_subgroup_arithmetic"), std::string::npos);
  EXPECT_NE(glsl.find("#define ATT_SHUFFLE 0"), std::string::npos);
  // The same kernel rewritten for KHR: its fp16 Q / P (A) and K / V (B)
  // fragments share a 16x16 type with the 16x16x16 shape.
  int split = 0;
  expect_valid(*graph, khr_target(), Storage::kBuffer, name, nullptr, &split);
  EXPECT_EQ(split, 2);
  TargetInfo khr_with_subgroup_ops = khr_target();
  khr_with_subgroup_ops.subgroup_shuffle = khr_with_subgroup_ops.subgroup_arithmetic = true;
  split = 0;
  expect_valid(*graph, khr_with_subgroup_ops, Storage::kBuffer, name, nullptr, &split);
  EXPECT_EQ(split, 2);
}

TEST(GemmCoopMatKernels, SmallGridsOverDeepKSplitK) {
  PlanOptions options;
  options.precision = ElemType::kF16;
  const std::map<std::string, ir::Attribute> same = {{"pads", ir::Attribute::of_ints({1, 1, 1, 1})}};
  ir::Graph g = testing::one_node_graph("Conv", ir::SymShape::from_concrete({1, 512, 7, 7}),
                                        {random_tensor({512, 512, 3, 3}, 11)}, same);
  // The tensor-core fix-up only on request (gemm_kernels.cc says why).
  for (size_t n = 0; n < g.num_nodes(); ++n)
    g.node(static_cast<ir::NodeId>(n)).annotations[kKernelKey] = "splitk_reduce=fused";
  auto plan = build_plan(g, nv_target(), options);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  ASSERT_EQ(plan->dispatch_count(), 1u);
  const KernelDesc& k = plan->steps[0].kernel;
  EXPECT_NE(k.name.find("coopmat"), std::string::npos) << k.name;
  EXPECT_NE(k.name.find("splitk_fixup"), std::string::npos) << k.name;
  EXPECT_GT(k.groups[2].value(), 1);  // K slices
  expect_valid(g, nv_target(), Storage::kBuffer, k.name);
  expect_valid(g, nv_target(), Storage::kImage, k.name);

  // By default the tensor-core kernel writes partial tiles and the reduce
  // pass adds them; the same with splitk_reduce=separate.
  for (const char* hint : {"", "splitk_reduce=separate"}) {
    for (size_t n = 0; n < g.num_nodes(); ++n) {
      auto& annotations = g.node(static_cast<ir::NodeId>(n)).annotations;
      annotations.erase(kKernelKey);
      if (*hint != '\0') annotations[kKernelKey] = hint;
    }
    auto split = build_plan(g, nv_target(), options);
    ASSERT_TRUE(split.ok()) << split.status().to_string();
    ASSERT_EQ(split->dispatch_count(), 2u) << hint;  // the tensor-core split and its reduce pass
    const KernelDesc& part = split->steps[0].kernel;
    EXPECT_EQ(part.name, "conv_splitk_coopmat64x128") << hint;
    EXPECT_GT(part.groups[2].value(), 1);  // K slices
    EXPECT_EQ(split->steps[1].kernel.name, "conv_splitk_reduce") << hint;
    expect_valid(g, nv_target(), Storage::kBuffer, part.name);
    expect_valid(g, nv_target(), Storage::kImage, "conv_splitk_reduce");
  }
}

// Which convolutions take the tensor cores in an fp16 plan (emit_gemm):
// narrow ones that split K only where their A units are runs of channels
// of one tap; RGB stems (gathered A units) only within one K step.
TEST(GemmCoopMatKernels, ConvolutionRouting) {
  PlanOptions options;
  options.precision = ElemType::kF16;
  const auto first_kernel = [&](const std::vector<int64_t>& x, const std::vector<int64_t>& w, int pad, int stride) {
    const std::map<std::string, ir::Attribute> attrs = {
        {"pads", ir::Attribute::of_ints({pad, pad, pad, pad})}, {"strides", ir::Attribute::of_ints({stride, stride})}};
    ir::Graph g = testing::one_node_graph("Conv", ir::SymShape::from_concrete(x), {random_tensor(w, 12)}, attrs);
    auto plan = build_plan(g, nv_target(), options);
    EXPECT_TRUE(plan.ok()) << plan.status().to_string();
    if (!plan.ok()) return std::string();
    expect_valid(g, nv_target(), Storage::kBuffer, plan->steps[0].kernel.name);
    return plan->steps[0].kernel.name;
  };
  // 3x3, 128 -> 32 channels (densenet121's): 13 tiles over K = 1152 split,
  // on the tensor cores.
  EXPECT_EQ(first_kernel({1, 128, 28, 28}, {32, 128, 3, 3}, 1, 1), "conv_splitk_coopmat64x32");
  // 1x1, 256 -> 64 (resnet50's layer-1 reduction at 28x28): the scalar split.
  EXPECT_EQ(first_kernel({1, 256, 28, 28}, {64, 256, 1, 1}, 0, 1), "conv_splitk_tile64x64");
  // 7x7 RGB stem (K = 147, fp32 weights): the scalar kernel.
  EXPECT_EQ(first_kernel({1, 3, 224, 224}, {64, 3, 7, 7}, 3, 2), "conv_tile64x64");
  // 3x3 RGB stem (K = 27, one K step): the tensor cores.
  EXPECT_EQ(first_kernel({1, 3, 64, 64}, {32, 3, 3, 3}, 1, 2), "conv_coopmat64x32");
}

// A MatMul's batch on the tensor cores: a strided batch of both operands,
// a constant B broadcast over A's batch, and batches broadcast on both sides
// ([2,1,M,K] x [3,K,N]); planned for the NV and KHR targets and compiled
// (GemmCoopMatDeviceTest.BatchedAndBroadcastBatch runs them).
TEST(GemmCoopMatKernels, BatchedAndBroadcastBatchesAreValidSpirv) {
  const auto two_inputs = [](const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
    ir::Graph g;
    const ir::ValueId x = g.add_input("a", DType::kFloat32, ir::SymShape::from_concrete(a));
    const ir::ValueId w = g.add_input("b", DType::kFloat32, ir::SymShape::from_concrete(b));
    const ir::ValueId y = g.add_value("y", DType::kUndefined, ir::SymShape::unranked());
    const ir::NodeId n = g.add_node("MatMul", {x, w}, {y}, {});
    EXPECT_TRUE(testing::finish_one_node_graph(g, n).ok());
    return g;
  };
  for (const TargetInfo& t : {nv_target(), khr_target()}) {
    expect_valid(two_inputs({4, 70, 40}, {4, 40, 50}), t, Storage::kBuffer, "matmul_coopmat32x64");
    expect_valid(two_inputs({2, 1, 70, 40}, {3, 40, 50}), t, Storage::kBuffer, "matmul_coopmat32x64");
    expect_valid(two_inputs({2, 1, 70, 40}, {3, 40, 50}), t, Storage::kImage, "matmul_coopmat32x64");
    expect_valid(testing::one_node_graph("MatMul", ir::SymShape::from_concrete({3, 70, 40}),
                                         {random_tensor({40, 50}, 5)}, {}),
                 t, Storage::kBuffer, "matmul_coopmat32x64");
  }
}

// The KHR path (a device with only VK_KHR_cooperative_matrix): every
// tensor-core kernel kind rewritten from NV into KHR SPIR-V and checked
// structurally; with the 16x16x16 shape the fp16 A and B fragments share
// one NV type, which each kernel splits into MatrixA and MatrixB variants.
TEST(GemmCoopMatKernels, KhrRewriteOfEveryTensorCoreKernel) {
  const ir::Dim s = ir::Dim::symbol("s");
  for (bool f32_acc : {true, false}) {
    SCOPED_TRACE(f32_acc ? "fp32 accumulators" : "fp16 accumulators");
    const TargetInfo t = khr_target(f32_acc);
    ASSERT_TRUE(pick_coopmat_shape(t).has_value());
    int split = 0;
    expect_valid(testing::one_node_graph("MatMul", ir::SymShape::from_concrete({100, 72}), {random_tensor({72, 90}, 1)}, {}),
                 t, Storage::kBuffer, "matmul_coopmat32x64", nullptr, &split);
    expect_valid(testing::one_node_graph("MatMul", ir::SymShape({s, ir::Dim(40)}), {random_tensor({40, 24}, 2)}, {}), t,
                 Storage::kBuffer, "matmul_coopmat64x32", nullptr, &split);
    const ir::SymShape x({ir::Dim(1), ir::Dim(8), ir::Dim::symbol("h"), ir::Dim::symbol("w")});
    const std::map<std::string, ir::Attribute> same = {{"auto_pad", ir::Attribute::of_string("SAME_UPPER")}};
    expect_valid(testing::one_node_graph("Conv", x, {random_tensor({128, 8, 3, 3}, 10)}, same), t, Storage::kImage,
                 "conv_coopmat64x128", nullptr, &split);
    const ir::Graph mm = fused_graph(ir::SymShape::from_concrete({100, 72}),
                                     {{"MatMul", {random_tensor({72, 90}, 1)}}, {"Add", {random_tensor({90}, 2)}}, {"Relu", {}}}, {});
    expect_valid(mm, t, Storage::kBuffer, "matmul_coopmat32x64+add+relu", nullptr, &split);
    // Split K: partial tiles (and the scalar reduce pass, left alone).
    ir::Graph deep = testing::one_node_graph("Conv", ir::SymShape::from_concrete({1, 512, 7, 7}),
                                             {random_tensor({512, 512, 3, 3}, 11)}, {{"pads", ir::Attribute::of_ints({1, 1, 1, 1})}});
    expect_valid(deep, t, Storage::kBuffer, "conv_splitk_coopmat64x128", nullptr, &split);
    EXPECT_EQ(split, 2 * 5) << "every kernel, at Vulkan 1.1 and 1.3, splits its fp16 fragment type";
    if (f32_acc) {
      // fp32 weights in an fp16 plan: B as two fp16 halves (B_SPLIT).
      expect_valid(testing::one_node_graph("Conv", ir::SymShape::from_concrete({1, 64, 128, 128}),
                                           {random_tensor({96, 64, 1, 1}, 9)}, {{"strides", ir::Attribute::of_ints({2, 2})}}),
                   t, Storage::kBuffer, "conv_coopmat64x64");
    }
  }
}

TEST(GemmCoopMatKernels, Fp32PlansKeepTheScalarKernel) {
  PlanOptions options;
  options.precision = ElemType::kF32;
  auto plan = build_plan(testing::one_node_graph("MatMul", ir::SymShape::from_concrete({100, 72}), {random_tensor({72, 90}, 1)}, {}),
                         nv_target(), options);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  ASSERT_EQ(plan->steps.size(), 1u);
  EXPECT_EQ(plan->steps[0].kernel.name, "matmul_tile64x64");
}

TEST(GemmCoopMatKernels, ScalarKernelStagesFp16OperandsUnconverted) {
  // No tensor cores, fp16: the scalar kernel keeps both operands in fp16
  // registers, and a padded 3x3 convolution's A comes through gemm_a_h
  // (the element as stored); an fp32 plan converts nothing.
  for (const ElemType precision : {ElemType::kF16, ElemType::kF32}) {
    PlanOptions options;
    options.precision = precision;
    TargetInfo t = nv_target();  // without its tensor cores
    t.coopmat = CoopMatFlavour::kNone;
    t.coopmat_f16_shapes.clear();
    auto plan = build_plan(testing::one_node_graph("Conv", ir::SymShape::from_concrete({1, 16, 9, 9}),
                                                   {random_tensor({32, 16, 3, 3}, 15)},
                                                   {{"pads", ir::Attribute::of_ints({1, 1, 1, 1})}}),
                           t, options);
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    ASSERT_FALSE(plan->steps.empty());  // the tile pass (a split-K reduce pass may follow)
    auto glsl = generate_glsl(plan->steps[0].kernel, t);
    ASSERT_TRUE(glsl.ok()) << glsl.status().to_string();
    const bool half = precision == ElemType::kF16;
    EXPECT_EQ(glsl->glsl.find("float16_t pa[A_LD];") != std::string::npos, half) << glsl->glsl;
    EXPECT_EQ(glsl->glsl.find("float16_t pb[B_LD];") != std::string::npos, half) << glsl->glsl;
    EXPECT_EQ(glsl->glsl.find("float16_t X_ath(") != std::string::npos, half) << glsl->glsl;
    EXPECT_EQ(glsl->glsl.find("pa[j] = gemm_a_h(b, m, k);") != std::string::npos, half)
        << glsl->glsl;
  }
}

// ---------------------------------------------------------------------------
// On a device with fp16 cooperative matrices: results against the reference.
// Each test runs twice: "device" with the device's choice (NV on NVIDIA, or
// what $KILN_COOPMAT says) and "khr" with the KHR path forced
// ($KILN_COOPMAT=khr: the NV kernels rewritten into SPV_KHR_cooperative_
// matrix), which skips on a device without fp16 shapes through
// VK_KHR_cooperative_matrix.

class GemmCoopMatDeviceTest : public vk::testing::VulkanTest, public ::testing::WithParamInterface<const char*> {
 protected:
  void SetUp() override {
    VulkanTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    const bool khr = std::string(GetParam()) == "khr";
    runtime::CoopMatMode mode = runtime::CoopMatMode::kKHR;
    if (khr) {
      env_ = std::make_unique<testing::ScopedCoopMatEnv>("khr");
    } else {
      auto from_env = runtime::coopmat_mode_from_env();
      ASSERT_TRUE(from_env.ok()) << from_env.status().to_string();
      mode = *from_env == runtime::CoopMatMode::kAuto ? runtime::CoopMatMode::kDevice : *from_env;
    }
    target_ = runtime::target_info(device(), mode);
    if (!pick_coopmat_shape(target_))
      GTEST_SKIP() << "the device has no fp16 cooperative-matrix shape" << (khr ? " through VK_KHR_cooperative_matrix" : "")
                   << (device().capabilities().cooperative_matrix_khr_hidden
                           ? " (it offers VK_KHR_cooperative_matrix, hidden from the old validation layer: "
                             "KILN_TEST_VALIDATION=off)"
                           : "");
    std::cout << "GemmCoopMat: device " << device().capabilities().device_name << ", "
              << (target_.coopmat == CoopMatFlavour::kKHR ? "KHR" : "NV") << " cooperative matrices, subgroup "
              << target_.subgroup_size << ", fp16 shapes:";
    for (const CoopMatShape& s : target_.coopmat_f16_shapes)
      std::cout << " " << s.m << "x" << s.n << "x" << s.k << (s.f32_accumulator ? "/f32" : "/f16");
    std::cout << "\n";
    const CoopMatShape shape = *pick_coopmat_shape(target_);
    std::cout << "GemmCoopMat: using " << shape.m << "x" << shape.n << "x" << shape.k
              << (shape.f32_accumulator ? " with fp32 accumulators" : " with fp16 accumulators") << "\n";
  }

  // Prints the GEMM kernels the fp16 plan of `c` uses and expects one of
  // them to be a cooperative-matrix kernel.
  void expect_coopmat_plan(const OpCheck& c) {
    ir::Graph g;
    std::vector<ir::ValueId> ins;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      const bool constant =
          std::find(c.constant_inputs.begin(), c.constant_inputs.end(), i) != c.constant_inputs.end();
      ins.push_back(constant ? g.add_constant("c" + std::to_string(i), c.inputs[i])
                             : g.add_input("x" + std::to_string(i), c.inputs[i].dtype(),
                                           ir::SymShape::from_concrete(c.inputs[i].shape())));
    }
    const ir::ValueId y = g.add_value("y", DType::kUndefined, ir::SymShape::unranked());
    const ir::NodeId nid = g.add_node(c.op, ins, {y}, c.attrs);
    ASSERT_TRUE(testing::finish_one_node_graph(g, nid).ok());
    PlanOptions options;
    options.precision = ElemType::kF16;
    auto plan = build_plan(g, target_, options);
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    bool coopmat = false;
    for (const PlanStep& step : plan->steps) {
      if (step.kind != PlanStep::Kind::kDispatch) continue;
      std::cout << "GemmCoopMat: " << c.op << " kernel " << step.kernel.name << "\n";
      coopmat |= step.kernel.name.find("_coopmat") != std::string::npos;
    }
    EXPECT_TRUE(coopmat) << c.op << " did not use the cooperative-matrix kernel";
  }

  void check(OpCheck c) {
    expect_coopmat_plan(c);
    c.configs = {BackendConfig{Storage::kBuffer, ElemType::kF16}, BackendConfig{Storage::kImage, ElemType::kF16}};
    EXPECT_TRUE(check_op(c));
  }

  // Every element of `got` within 2e-2 * max(1, max|want|) of `want`.
  static void expect_within_fp16_bound(const Tensor& want, const Tensor& got, const std::string& what) {
    ASSERT_EQ(want.shape(), got.shape()) << what;
    double ref_max = 1.0;
    for (int64_t i = 0; i < want.numel(); ++i) ref_max = std::max(ref_max, std::abs(want.get_f64(i)));
    for (int64_t i = 0; i < want.numel(); ++i)
      ASSERT_NEAR(want.get_f64(i), got.get_f64(i), 2e-2 * ref_max) << what << " element " << i;
  }

  // `g` compiled for the device in fp16 with `storage`; expects a
  // cooperative-matrix kernel in its plan.
  StatusOr<std::unique_ptr<runtime::VulkanModel>> compile_fp16(const ir::Graph& g, Storage storage) {
    runtime::VulkanModelOptions options;
    options.plan.storage = storage;
    options.plan.precision = ElemType::kF16;
    auto model = runtime::VulkanModel::compile(device(), *vk::testing::test_kernel_cache(), g, options);
    if (!model.ok()) return model;
    bool coopmat = false;
    for (const PlanStep& step : (*model)->plan().steps)
      coopmat |= step.kind == PlanStep::Kind::kDispatch && step.kernel.name.find("_coopmat") != std::string::npos;
    EXPECT_TRUE(coopmat) << "no cooperative-matrix kernel";
    return model;
  }

  void TearDown() override {
    env_.reset();
    VulkanTest::TearDown();
  }

  TargetInfo target_;
  std::unique_ptr<testing::ScopedCoopMatEnv> env_;
};

// $KILN_COOPMAT and VulkanModelOptions::coopmat: a forced dialect the
// device lacks is an error (lavapipe has neither), an unknown value names
// itself.
class GemmCoopMatForcedTest : public vk::testing::VulkanTest {};

// $KILN_COOPMAT_TILE: six numbers, or the planner's tile with a depth and
// buffering; anything else is an error naming the value.
TEST(GemmCoopMatTileEnv, ParsesTilesAndNamesBadValues) {
  {
    testing::ScopedEnv env("KILN_COOPMAT_TILE", "");
    auto t = runtime::coopmat_tile_from_env();
    ASSERT_TRUE(t.ok());
    EXPECT_FALSE(t->has_value());
  }
  {
    testing::ScopedEnv env("KILN_COOPMAT_TILE", "128x64x4x2x64x2");
    auto t = runtime::coopmat_tile_from_env();
    ASSERT_TRUE(t.ok() && t->has_value());
    EXPECT_EQ((*t)->bm, 128);
    EXPECT_EQ((*t)->bn, 64);
    EXPECT_EQ((*t)->wm, 4);
    EXPECT_EQ((*t)->wn, 2);
    EXPECT_EQ((*t)->bk, 64);
    EXPECT_EQ((*t)->stages, 2);
  }
  {
    testing::ScopedEnv env("KILN_COOPMAT_TILE", "0x0x0x0x32x2");
    auto t = runtime::coopmat_tile_from_env();
    ASSERT_TRUE(t.ok() && t->has_value());
    EXPECT_EQ((*t)->bm, 0);
    EXPECT_EQ((*t)->stages, 2);
  }
  for (const char* bad : {"128x128", "128x128x2x2x48x1", "128x128x2x2x32x3", "0x128x2x2x32x1", "128x128x2x2x32x1x",
                          "-64x64x2x2x32x1", "big"}) {
    testing::ScopedEnv env("KILN_COOPMAT_TILE", bad);
    auto t = runtime::coopmat_tile_from_env();
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(t.status().to_string().find(bad), std::string::npos) << t.status().to_string();
  }
}

TEST_F(GemmCoopMatForcedTest, ForcedDialectsAndTheEnvironmentSwitch) {
  const ir::Graph g =
      testing::one_node_graph("MatMul", ir::SymShape::from_concrete({100, 72}), {random_tensor({72, 90}, 1)}, {});
  runtime::VulkanModelOptions options;
  options.plan.precision = ElemType::kF16;
  for (runtime::CoopMatMode mode : {runtime::CoopMatMode::kNV, runtime::CoopMatMode::kKHR}) {
    options.coopmat = mode;
    const bool has = runtime::target_info(device(), mode).coopmat != CoopMatFlavour::kNone;
    auto model = runtime::VulkanModel::compile(device(), *vk::testing::test_kernel_cache(), g, options);
    if (has) {
      ASSERT_TRUE(model.ok()) << model.status().to_string();
    } else {
      ASSERT_FALSE(model.ok());
      EXPECT_EQ(model.status().code(), StatusCode::kUnavailable) << model.status().to_string();
      EXPECT_NE(model.status().message().find(mode == runtime::CoopMatMode::kNV ? "forced to nv" : "forced to khr"),
                std::string::npos)
          << model.status().to_string();
    }
  }
  options.coopmat = runtime::CoopMatMode::kOff;
  auto off = runtime::VulkanModel::compile(device(), *vk::testing::test_kernel_cache(), g, options);
  ASSERT_TRUE(off.ok()) << off.status().to_string();
  for (const PlanStep& step : (*off)->plan().steps) EXPECT_EQ(step.kernel.name.find("_coopmat"), std::string::npos);

  {
    testing::ScopedCoopMatEnv env("tensorcores");
    auto mode = runtime::coopmat_mode_from_env();
    ASSERT_FALSE(mode.ok());
    EXPECT_NE(mode.status().message().find("KILN_COOPMAT='tensorcores'"), std::string::npos) << mode.status().to_string();
    options.coopmat = runtime::CoopMatMode::kAuto;
    auto model = runtime::VulkanModel::compile(device(), *vk::testing::test_kernel_cache(), g, options);
    ASSERT_FALSE(model.ok());
    EXPECT_NE(model.status().message().find("tensorcores"), std::string::npos) << model.status().to_string();
  }
  for (const auto& [value, want] : {std::pair<const char*, runtime::CoopMatMode>{"nv", runtime::CoopMatMode::kNV},
                                    {"khr", runtime::CoopMatMode::kKHR},
                                    {"off", runtime::CoopMatMode::kOff},
                                    {"auto", runtime::CoopMatMode::kAuto},
                                    {"", runtime::CoopMatMode::kAuto}}) {
    testing::ScopedCoopMatEnv env(value);
    auto mode = runtime::coopmat_mode_from_env();
    ASSERT_TRUE(mode.ok()) << value;
    EXPECT_EQ(*mode, want) << value;
  }
}

INSTANTIATE_TEST_SUITE_P(Flavours, GemmCoopMatDeviceTest, ::testing::Values("device", "khr"),
                         [](const ::testing::TestParamInfo<const char*>& param) { return std::string(param.param); });

OpCheck matmul(Shape a, Shape b, bool const_b, uint64_t seed) {
  OpCheck c;
  c.op = "MatMul";
  c.inputs = {random_tensor(a, seed), random_tensor(b, seed + 1)};
  if (const_b) c.constant_inputs = {1};
  return c;
}

TEST_P(GemmCoopMatDeviceTest, MatMul) {
  check(matmul({100, 72}, {72, 90}, true, 11));          // edges in M, N and K
  check(matmul({64, 64}, {64, 64}, false, 13));          // exact tiles
  check(matmul({2, 3, 50, 40}, {40, 24}, true, 15));     // batch folds into M, N <= 32
  check(matmul({3, 70, 33}, {3, 33, 130}, false, 17));   // batched
  check(matmul({1024, 300}, {300, 2048}, true, 19));     // 128 x 64 tiles, K not a multiple of 32
}

// Small grids over deep K: partial tiles of K slices and the reduce pass.
TEST_P(GemmCoopMatDeviceTest, SplitK) {
  check(matmul({197, 3072}, {3072, 768}, true, 51));     // a transformer's second MLP projection, batch 1
  check(matmul({2, 40, 1000}, {1000, 64}, true, 53));    // batch with split, K not a multiple of a slice
  OpCheck conv;
  conv.op = "Conv";
  conv.inputs = {random_tensor({1, 256, 7, 7}, 55), random_tensor({200, 256, 3, 3}, 56), random_tensor({200}, 57)};
  conv.attrs["pads"] = ir::Attribute::of_ints({1, 1, 1, 1});
  conv.constant_inputs = {1, 2};
  check(conv);
}

TEST_P(GemmCoopMatDeviceTest, Gemm) {
  OpCheck g;
  g.op = "Gemm";
  g.inputs = {random_tensor({37, 70}, 21), random_tensor({50, 37}, 22), random_tensor({50}, 23)};
  g.attrs["transA"] = ir::Attribute::of_int(1);
  g.attrs["transB"] = ir::Attribute::of_int(1);
  g.attrs["alpha"] = ir::Attribute::of_float(0.5f);
  g.attrs["beta"] = ir::Attribute::of_float(2.0f);
  g.constant_inputs = {1, 2};
  check(g);
}

TEST_P(GemmCoopMatDeviceTest, Conv) {
  // Shapes that take the tensor-core kernel on any device: narrower than
  // 128 output channels with grids that need no split-K, or kernels larger
  // than 1x1 over runs of 8 channels (other narrow splits take the scalar
  // split-K kernel, emit_gemm).
  OpCheck c;
  c.op = "Conv";
  c.inputs = {random_tensor({2, 16, 64, 64}, 31), random_tensor({40, 16, 3, 3}, 32), random_tensor({40}, 33)};
  c.attrs["pads"] = ir::Attribute::of_ints({1, 1, 1, 1});
  c.constant_inputs = {1, 2};
  check(c);
  // 128 output channels: 64 x 128 tiles, split K or not (K = 216: a
  // partial last K step).
  OpCheck wide = c;
  wide.inputs = {random_tensor({2, 24, 15, 15}, 36), random_tensor({128, 24, 3, 3}, 37), random_tensor({128}, 38)};
  check(wide);
  // An RGB stem: gathered A units within one K step (K = 27), fp32 weights.
  OpCheck stem = c;
  stem.inputs = {random_tensor({1, 3, 32, 32}, 45), random_tensor({32, 3, 3, 3}, 46), random_tensor({32}, 47)};
  stem.attrs["strides"] = ir::Attribute::of_ints({2, 2});
  check(stem);
  // Weights the precision policy keeps in fp32 (fewer than an output
  // image's elements): multiplied as two fp16 halves.
  OpCheck early = c;
  early.inputs = {random_tensor({1, 16, 40, 40}, 39), random_tensor({136, 16, 3, 3}, 40), random_tensor({136}, 41)};
  check(early);
  // Narrower than 128 channels, split K, a 3x3 kernel over runs of 8
  // channels: the tensor-core split (emit_gemm).
  OpCheck narrow = c;
  narrow.inputs = {random_tensor({1, 128, 14, 14}, 42), random_tensor({32, 128, 3, 3}, 43), random_tensor({32}, 44)};
  check(narrow);
  // A strided 1x1 projection (fp16 weights: more of them than an output
  // image's elements) of more than 196 output pixels and 32 MFLOP, too
  // shallow to split (smaller 1x1 convolutions take the scalar kernel,
  // emit_gemm).
  OpCheck s = c;
  s.inputs = {random_tensor({6, 96, 18, 18}, 34), random_tensor({384, 96, 1, 1}, 35)};
  s.attrs = {{"strides", ir::Attribute::of_ints({2, 2})}};
  s.constant_inputs = {1};
  check(s);
}

TEST_P(GemmCoopMatDeviceTest, ForcedTiles) {
  for (const char* forced : {"128x128x2x2x32x2", "128x128x4x2x32x2", "128x64x4x2x64x1", "64x64x2x2x32x2",
                             "32x64x2x2x64x2"}) {
    SCOPED_TRACE(forced);
    testing::ScopedEnv env("KILN_COOPMAT_TILE", forced);
    auto tile = runtime::coopmat_tile_from_env();
    ASSERT_TRUE(tile.ok() && tile->has_value()) << forced;
    target_.coopmat_tile = *tile;
    OpCheck m;
    m.op = "MatMul";
    m.inputs = {random_tensor({150, 200}, 91), random_tensor({200, 170}, 92, -0.1f, 0.1f)};
    m.constant_inputs = {1};
    check(m);
    OpCheck deep = m;  // few tiles over K = 2048: split K
    deep.inputs = {random_tensor({70, 2048}, 93), random_tensor({2048, 90}, 94, -0.03f, 0.03f)};
    check(deep);
    OpCheck c;
    c.op = "Conv";
    c.inputs = {random_tensor({1, 32, 15, 13}, 95), random_tensor({136, 32, 3, 3}, 96), random_tensor({136}, 97)};
    c.attrs["pads"] = ir::Attribute::of_ints({1, 1, 1, 1});
    c.constant_inputs = {1, 2};
    check(c);
    OpCheck early = c;  // fp32 weights (fewer than the output's elements)
    early.inputs = {random_tensor({1, 16, 40, 40}, 98), random_tensor({136, 16, 3, 3}, 99), random_tensor({136}, 100)};
    check(early);
    // Gathered A units (28 channels: no runs of 8) over several K steps,
    // which unforced takes the scalar kernel.
    OpCheck gathered = c;
    gathered.inputs = {random_tensor({2, 28, 15, 15}, 101), random_tensor({128, 28, 3, 3}, 102),
                       random_tensor({128}, 103)};
    check(gathered);
  }
  target_.coopmat_tile.reset();
}

TEST_P(GemmCoopMatDeviceTest, BatchedAndBroadcastBatch) {
  OpCheck strided;  // both operands batched
  strided.op = "MatMul";
  strided.inputs = {random_tensor({4, 70, 40}, 111), random_tensor({4, 40, 50}, 112)};
  check(strided);
  OpCheck shared = strided;  // one constant B for every batch of A
  shared.inputs = {random_tensor({3, 70, 40}, 113), random_tensor({40, 50}, 114)};
  shared.constant_inputs = {1};
  check(shared);
  OpCheck both = strided;  // [2,1,M,K] x [3,K,N] -> [2,3,M,N]
  both.inputs = {random_tensor({2, 1, 70, 40}, 115), random_tensor({3, 40, 50}, 116)};
  check(both);
}

TEST_P(GemmCoopMatDeviceTest, SymbolicRows) {
  // One compiled model, several row counts (M is a push constant).
  ir::Graph g =testing::one_node_graph("MatMul", ir::SymShape({ir::Dim::symbol("s"), ir::Dim(72)}), {random_tensor({72, 90}, 41)}, {});
  runtime::ReferenceExecutor reference(g);
  for (Storage storage : {Storage::kBuffer, Storage::kImage}) {
    auto model = compile_fp16(g, storage);
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    for (int64_t rows : {1, 70, 200}) {
      const std::vector<Tensor> in = {random_tensor({rows, 72}, 42 + rows)};
      auto want = reference.run(in);
      ASSERT_TRUE(want.ok()) << want.status().to_string();
      auto got = (*model)->run(in);
      ASSERT_TRUE(got.ok()) << got.status().to_string();
      expect_within_fp16_bound((*want)[0], (*got)[0], std::string(storage_name(storage)) + " rows " + std::to_string(rows));
    }
  }
}

// A read through Transpose + Reshape with 16-byte loads (the view's runs of
// 8 are contiguous in the source), as vit's attention output projection.
TEST_P(GemmCoopMatDeviceTest, ViewWithContiguousRuns) {
  const ir::Graph g = fused_graph(
      ir::SymShape::from_concrete({12, 197, 64}),
      {{"Transpose", {}}, {"Reshape", {Tensor::from_vector<int64_t>({2}, {197, 768})}}, {"MatMul", {random_tensor({768, 96}, 80, -0.05f, 0.05f)}}},
      {{{"perm", ir::Attribute::of_ints({1, 0, 2})}}});
  auto model = compile_fp16(g, Storage::kBuffer);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const std::vector<Tensor> in = {random_tensor({12, 197, 64}, 81)};
  auto want = runtime::ReferenceExecutor(g).run(in);
  ASSERT_TRUE(want.ok()) << want.status().to_string();
  auto got = (*model)->run(in);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  expect_within_fp16_bound((*want)[0], (*got)[0], "view");
}

// The fp32 weights the precision policy keeps (an early convolution's)
// keep their precision on the tensor cores (B_SPLIT): with an input that
// fp16 holds exactly, every fp16 output is the fp32 result rounded once —
// but for results within ~2^-22 of a rounding boundary. With the weights
// rounded to fp16 (relative error ~2^-12 per product) a large share of the
// outputs would round the other way.
TEST_P(GemmCoopMatDeviceTest, Fp32WeightsKeepTheirPrecision) {
  Tensor x = random_tensor({1, 16, 40, 40}, 70);
  for (int64_t i = 0; i < x.numel(); ++i) x.set_f64(i, half_to_float(float_to_half(static_cast<float>(x.get_f64(i)))));
  // 136 output channels: the tensor-core kernel whether or not K splits.
  const Tensor w = random_tensor({136, 16, 3, 3}, 71), bias = random_tensor({136}, 72);
  const std::map<std::string, ir::Attribute> pads = {{"pads", ir::Attribute::of_ints({1, 1, 1, 1})}};
  ir::Graph g = testing::one_node_graph("Conv", ir::SymShape::from_concrete({1, 16, 40, 40}), {w, bias}, pads);
  auto model = compile_fp16(g, Storage::kBuffer);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  auto want = runtime::ReferenceExecutor(g).run({x});
  ASSERT_TRUE(want.ok()) << want.status().to_string();
  auto got = (*model)->run({x});
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  const Tensor& a = (*want)[0];
  const Tensor& b = (*got)[0];
  ASSERT_EQ(a.shape(), b.shape());
  int64_t off = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    off += half_to_float(float_to_half(static_cast<float>(a.get_f64(i)))) != static_cast<float>(b.get_f64(i));
  // The same count for the weights rounded to fp16 (on the host): what the
  // test tells apart.
  Tensor w16 = w;
  for (int64_t i = 0; i < w16.numel(); ++i) w16.set_f64(i, half_to_float(float_to_half(static_cast<float>(w.get_f64(i)))));
  auto rounded = runtime::ReferenceExecutor(
                     testing::one_node_graph("Conv", ir::SymShape::from_concrete({1, 16, 40, 40}), {w16, bias}, pads))
                     .run({x});
  ASSERT_TRUE(rounded.ok()) << rounded.status().to_string();
  int64_t off16 = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    off16 += float_to_half(static_cast<float>(a.get_f64(i))) != float_to_half(static_cast<float>((*rounded)[0].get_f64(i)));
  std::cout << "GemmCoopMat: fp32 weights on the tensor cores: " << off << " of " << a.numel()
            << " fp16 outputs differ from the rounded fp32 result (fp16 weights: " << off16 << ")\n";
  EXPECT_LE(off, a.numel() / 100);
  EXPECT_GT(off16, 5 * off);
}

// `layers` nodes `op`, each with one constant weight of `w_shape` (values in
// +-w_range, about the 1/sqrt(K) that keeps magnitudes steady), chained from
// the input x of `shape` (every layer keeps it).
ir::Graph chain(const std::string& op, const Shape& shape, const Shape& w_shape, float w_range, int layers,
                const std::map<std::string, ir::Attribute>& attrs) {
  ir::Graph g;
  ir::ValueId v = g.add_input("x", DType::kFloat32, ir::SymShape::from_concrete(shape));
  for (int i = 0; i < layers; ++i) {
    const ir::ValueId w =
        g.add_constant("w" + std::to_string(i), random_tensor(w_shape, 60 + i, -w_range, w_range));
    const ir::ValueId y = g.add_value("h" + std::to_string(i), DType::kFloat32, ir::SymShape::from_concrete(shape));
    g.add_node(op, {v, w}, {y}, attrs);
    v = y;
  }
  g.add_output(v);
  return g;
}

// GPU time of the cooperative fp16 kernel against the scalar fp32 one on
// chains of large GEMMs and ResNet-like 3x3 convolutions (batch 32; weights
// fp16: more of them than output pixels per image), printed for the log; the
// two precisions' results must agree within the fp16 tolerance. A chain,
// and the fastest of its kernels, because a kernel's timestamps also span
// the upload of the input before it.
TEST_P(GemmCoopMatDeviceTest, ThroughputAgainstScalarFp32) {
  struct Case {
    std::string what;
    ir::Graph graph;
    Shape input;
    double flops;  // per layer
  };
  std::vector<Case> cases;
  cases.push_back({"MatMul 2048x4096 x 4096x4096", chain("MatMul", {2048, 4096}, {4096, 4096}, 0.027f, 6, {}),
                   {2048, 4096}, 2.0 * 2048 * 4096 * 4096});
  cases.push_back({"Conv 32x256x28x28 3x3 -> 256",
                   chain("Conv", {32, 256, 28, 28}, {256, 256, 3, 3}, 0.036f, 4,
                         {{"pads", ir::Attribute::of_ints({1, 1, 1, 1})}}),
                   {32, 256, 28, 28}, 2.0 * 32 * 28 * 28 * 256 * 256 * 9});
  cases.push_back({"Conv 32x512x7x7 3x3 -> 512",
                   chain("Conv", {32, 512, 7, 7}, {512, 512, 3, 3}, 0.025f, 4,
                         {{"pads", ir::Attribute::of_ints({1, 1, 1, 1})}}),
                   {32, 512, 7, 7}, 2.0 * 32 * 7 * 7 * 512 * 512 * 9});
  for (Case& c : cases) {
    const std::vector<Tensor> inputs = {random_tensor(c.input, 59)};
    std::vector<Tensor> results;
    for (ElemType precision : {ElemType::kF16, ElemType::kF32}) {
      runtime::VulkanModelOptions options;
      options.plan.precision = precision;
      options.profile = true;
      auto model = runtime::VulkanModel::compile(device(), *vk::testing::test_kernel_cache(), c.graph, options);
      ASSERT_TRUE(model.ok()) << model.status().to_string();
      runtime::VulkanRunStats stats;
      StatusOr<std::vector<Tensor>> out = (*model)->run(inputs, &stats);  // records
      ASSERT_TRUE(out.ok()) << out.status().to_string();
      double best = 1e30;
      std::string kernel;
      // Many runs: an idle GPU takes a while to raise its clocks.
      for (int r = 0; r < 10; ++r) {
        out = (*model)->run(inputs, &stats);
        ASSERT_TRUE(out.ok()) << out.status().to_string();
        for (const runtime::KernelTiming& k : stats.kernels)
          if (k.gpu_ms > 0 && k.gpu_ms < best) {
            best = k.gpu_ms;
            kernel = k.kernel;
          }
      }
      std::cout << "GemmCoopMat: " << c.what << " " << elem_type_name(precision) << ": " << kernel << " " << best
                << " ms, " << c.flops / (best * 1e9) << " TFLOP/s\n";
      results.push_back(std::move((*out)[0]));
    }
    const Tensor& h = results[0];
    const Tensor& f = results[1];
    ASSERT_EQ(h.shape(), f.shape());
    double ref_max = 1.0, worst = 0.0;
    for (int64_t i = 0; i < f.numel(); ++i) ref_max = std::max(ref_max, std::abs(f.get_f64(i)));
    for (int64_t i = 0; i < f.numel(); ++i) worst = std::max(worst, std::abs(h.get_f64(i) - f.get_f64(i)));
    std::cout << "GemmCoopMat: " << c.what << " max|f16 - f32| " << worst << ", max|f32| " << ref_max << "\n";
    EXPECT_LE(worst, 2e-2 * ref_max) << c.what;
  }
}

}  // namespace
}  // namespace kiln::planner
