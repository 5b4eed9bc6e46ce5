// MatMul and Gemm lowerings against the reference kernels in every backend
// config (check_op), plus a compile check of every GEMM kernel variant with
// shaderc and spirv-val.
#include <gtest/gtest.h>


#include <map>
#include <string>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/ops/op_registry.h"
#include "engine/runtime/reference_executor.h"
#include "engine/runtime/vulkan/vulkan_model.h"
#include "planner/execution_plan.h"
#include "planner/gemm_kernels.h"
#include "planner/glsl_codegen.h"
#include "planner/plan_hints.h"
#include "planner/testing/op_check.h"
#include "platform/vulkan/shader_compiler.h"
#include "platform/vulkan/vk_test_env.h"

namespace kiln::planner {
namespace {

using testing::check_op;
using testing::OpCheck;
using testing::random_tensor;

class LowerLinalgTest : public vk::testing::VulkanTest {};

OpCheck matmul(Shape a, Shape b, bool const_b, uint64_t seed) {
  OpCheck c;
  c.op = "MatMul";
  c.inputs = {random_tensor(a, seed), random_tensor(b, seed + 1)};
  if (const_b) c.constant_inputs = {1};
  return c;
}

TEST_F(LowerLinalgTest, MatMulOddSizes) {
  EXPECT_TRUE(check_op(matmul({17, 33}, {33, 29}, false, 1)));
  EXPECT_TRUE(check_op(matmul({17, 33}, {33, 29}, true, 3)));
}

TEST_F(LowerLinalgTest, MatMulLargeTiles) { EXPECT_TRUE(check_op(matmul({70, 40}, {40, 67}, true, 5))); }

TEST_F(LowerLinalgTest, MatMulVectors) {
  EXPECT_TRUE(check_op(matmul({33}, {33, 29}, true, 7)));   // 1-D x 2-D
  EXPECT_TRUE(check_op(matmul({17, 33}, {33}, false, 9)));  // 2-D x 1-D
  EXPECT_TRUE(check_op(matmul({21}, {21}, false, 11)));     // dot product, rank-0 result
  EXPECT_TRUE(check_op(matmul({2, 3, 9}, {9}, false, 13)));
}

TEST_F(LowerLinalgTest, MatMulBatchBroadcast) {
  EXPECT_TRUE(check_op(matmul({2, 1, 5, 7}, {3, 7, 6}, false, 15)));
  EXPECT_TRUE(check_op(matmul({4, 6}, {2, 6, 5}, false, 17)));   // A broadcast over B's batch
  EXPECT_TRUE(check_op(matmul({2, 9, 24}, {24, 31}, true, 19)));  // batch folds into M
}

TEST_F(LowerLinalgTest, MatMulSplitK) {
  // One 32x32 tile with K = 600: four K slices and a reduction pass.
  EXPECT_TRUE(check_op(matmul({20, 600}, {600, 30}, true, 27)));
}

// Split-K whose slices the tile kernel's last workgroup per tile adds up
// (serial split-K fix-up, gemm_kernels.h emit_gemm): one dispatch instead
// of two, right on every run (its arrival counters go back to zero).
OpCheck gemm(Shape a, Shape b, Shape c, bool trans_a, bool trans_b, float alpha, float beta, uint64_t seed);

OpCheck split_k_with(OpCheck c, int slices, const std::string& reduce, const std::string& kernel) {
  c.annotations[kKernelKey] = "split_k=" + std::to_string(slices) + ",splitk_reduce=" + reduce;
  c.runs = 3;
  c.min_dispatches = c.max_dispatches = reduce == "separate" ? 2 : 1;
  c.expect_kernel = kernel;
  return c;
}
OpCheck split_k(OpCheck c, int slices, bool fused, const std::string& kernel) {
  return split_k_with(std::move(c), slices, fused ? "fused" : "separate", kernel);
}

// The atomic fix-up where the test device adds floats atomically (lavapipe
// and the H100 do), else the reduce pass it falls back to.
bool device_has_float_atomics() { return vk::testing::test_device()->enabled().buffer_float32_atomic_add; }
OpCheck split_k_atomic(OpCheck c, int slices, const std::string& name) {
  c.same_bits_every_run = false;  // the additions' order varies
  if (device_has_float_atomics()) return split_k_with(std::move(c), slices, "atomic", name + "_splitk_atomic");
  OpCheck two_pass = split_k_with(std::move(c), slices, "atomic", name + "_splitk_reduce");
  two_pass.min_dispatches = two_pass.max_dispatches = 2;
  return two_pass;
}

TEST_F(LowerLinalgTest, MatMulSplitKFixup) {
  // K = 600 in slices of 304, 208, 160 and 48 (the last one shorter).
  for (int slices : {2, 3, 4, 16}) {
    SCOPED_TRACE(slices);
    EXPECT_TRUE(check_op(split_k(matmul({20, 600}, {600, 30}, true, 27), slices, true, "matmul_splitk_fixup_tile32x32")));
  }
  // Several tiles with edges, M and N not multiples of 4, K odd.
  EXPECT_TRUE(check_op(split_k(matmul({70, 333}, {333, 67}, true, 29), 3, true, "matmul_splitk_fixup_tile64x64")));
  // The two-pass route, forced.
  EXPECT_TRUE(check_op(split_k(matmul({20, 600}, {600, 30}, true, 27), 4, false, "matmul_splitk_reduce")));
}

TEST_F(LowerLinalgTest, SplitKReducePassLanes) {
  // 4 and 16 slices: where the device has subgroup shuffles 2 and 4 lanes
  // share each output of the reduce pass (lavapipe: subgroups of 8), with
  // M odd, N not a multiple of 4 and the last workgroup partly past the end.
  for (int slices : {4, 16}) {
    SCOPED_TRACE(slices);
    EXPECT_TRUE(check_op(split_k(matmul({70, 333}, {333, 67}, true, 29), slices, false, "matmul_splitk_reduce")));
  }
  EXPECT_TRUE(check_op(split_k(matmul({3, 9, 300}, {3, 300, 30}, false, 31), 16, false, "matmul_splitk_reduce")));
}

TEST(LowerLinalgPlan, ReducePassLanesFollowSlicesAndSubgroups) {
  const ir::Graph g = testing::one_node_graph("MatMul", ir::SymShape::from_concrete({20, 600}), {random_tensor({600, 70}, 7)});
  const auto reduce_of = [&](const TargetInfo& target, int slices) {
    ir::Graph copy = g;
    for (size_t n = 0; n < copy.num_nodes(); ++n)
      copy.node(static_cast<ir::NodeId>(n)).annotations[kKernelKey] = "split_k=" + std::to_string(slices);
    auto plan = build_plan(copy, target, PlanOptions{});
    EXPECT_TRUE(plan.ok()) << plan.status().to_string();
    return plan.ok() && plan->steps.size() == 2 ? plan->steps[1].kernel : KernelDesc{};
  };
  TargetInfo shuffles;
  shuffles.subgroup_size = 32;
  shuffles.subgroup_shuffle = true;
  for (const auto& [slices, lanes] : {std::pair{2, 1}, {4, 2}, {7, 2}, {8, 4}, {16, 4}}) {
    SCOPED_TRACE(slices);
    const KernelDesc r = reduce_of(shuffles, slices);
    EXPECT_EQ(r.name, "matmul_splitk_reduce");
    const bool defined = r.helpers.find("#define REDUCE_LANES " + std::to_string(lanes) + "\n") != std::string::npos;
    EXPECT_EQ(defined, lanes > 1) << r.helpers;
    // One invocation per lane and four columns: 20 rows x 18 quads.
    EXPECT_EQ(r.groups[0].value() * r.local_size[0], (20 * 18 * lanes + r.local_size[0] - 1) / r.local_size[0] *
                                                         r.local_size[0]);
  }
  const KernelDesc plain = reduce_of(TargetInfo{}, 16);  // no subgroup shuffles
  EXPECT_EQ(plain.helpers.find("REDUCE_LANES"), std::string::npos);
  EXPECT_TRUE(plain.extensions.empty());
}

// Split-K whose workgroups add their slices into one sum with float
// atomics, the last to arrive storing it: one dispatch, right on every run
// (the sums and counters go back to zero), edges, batches and epilogues as
// above.
TEST_F(LowerLinalgTest, MatMulSplitKAtomic) {
  for (int slices : {2, 3, 16}) {
    SCOPED_TRACE(slices);
    EXPECT_TRUE(check_op(split_k_atomic(matmul({20, 600}, {600, 30}, true, 27), slices, "matmul")));
  }
  EXPECT_TRUE(check_op(split_k_atomic(matmul({70, 333}, {333, 67}, true, 29), 3, "matmul")));
  EXPECT_TRUE(check_op(split_k_atomic(matmul({3, 20, 300}, {3, 300, 30}, false, 31), 4, "matmul")));
  OpCheck bias = gemm({20, 600}, {30, 600}, {30}, false, true, 0.5f, 2.0f, 35);
  bias.constant_inputs = {1, 2};
  EXPECT_TRUE(check_op(split_k_atomic(bias, 3, "gemm")));
}

TEST_F(LowerLinalgTest, MatMulSplitKFixupBatched) {
  // Batch 3 (B an activation: a batched GEMM, one counter per tile and batch).
  EXPECT_TRUE(check_op(split_k(matmul({3, 20, 300}, {3, 300, 30}, false, 31), 4, true, "matmul_splitk_fixup")));
  // A broadcast over B's batch (an image output packed along another axis
  // than N adds its copy-out dispatch).
  OpCheck broadcast = split_k(matmul({2, 1, 9, 200}, {3, 200, 17}, false, 33), 2, true, "matmul_splitk_fixup");
  broadcast.max_dispatches = 2;
  EXPECT_TRUE(check_op(broadcast));
}

TEST_F(LowerLinalgTest, GemmSplitKFixupWithBias) {
  // The epilogue (alpha, beta * C) applies once, after the slices are added.
  OpCheck bias = gemm({20, 600}, {30, 600}, {30}, false, true, 0.5f, 2.0f, 35);
  bias.constant_inputs = {1, 2};
  EXPECT_TRUE(check_op(split_k(bias, 3, true, "gemm_splitk_fixup")));
  OpCheck full = gemm({300, 20}, {300, 18}, {20, 18}, true, false, 1.5f, -1.0f, 39);  // C [M, N], A transposed
  full.constant_inputs = {1};
  EXPECT_TRUE(check_op(split_k(full, 16, true, "gemm_splitk_fixup")));
}

// The fused and the two-pass routes add up to three slices in the same
// order: the same bits. (From four slices on the reduce pass's lanes each
// add every 2nd or 4th slice, where the device has subgroup shuffles: the
// same sum up to rounding, which the other split-K tests check.)
TEST_F(LowerLinalgTest, SplitKFixupMatchesTheReducePassBitForBit) {
  const Tensor x = random_tensor({37, 500}, 41);
  for (const testing::BackendConfig& config : testing::all_backend_configs()) {
    SCOPED_TRACE(config.name());
    std::vector<Tensor> out[2];
    for (int fused = 0; fused < 2; ++fused) {
      ir::Graph g = testing::one_node_graph("MatMul", ir::SymShape::from_concrete({37, 500}), {random_tensor({500, 45}, 43)});
      for (size_t n = 0; n < g.num_nodes(); ++n)
        g.node(static_cast<ir::NodeId>(n)).annotations[kKernelKey] =
            std::string("split_k=3,splitk_reduce=") + (fused ? "fused" : "separate");
      runtime::VulkanModelOptions options;
      options.plan.storage = config.storage;
      options.plan.precision = config.precision;
      auto model = runtime::VulkanModel::compile(*vk::testing::test_device(), *vk::testing::test_kernel_cache(), g, options);
      ASSERT_TRUE(model.ok()) << model.status().to_string();
      EXPECT_EQ((*model)->plan().dispatch_count(), fused ? 1u : 2u);
      auto got = (*model)->run({x});
      ASSERT_TRUE(got.ok()) << got.status().to_string();
      out[fused] = std::move(*got);
    }
    ASSERT_EQ(out[0][0].numel(), out[1][0].numel());
    for (int64_t i = 0; i < out[0][0].numel(); ++i)
      ASSERT_EQ(out[0][0].get_f64(i), out[1][0].get_f64(i)) << "element " << i;
  }
}

TEST_F(LowerLinalgTest, MatMulFewRows) {
  EXPECT_TRUE(check_op(matmul({1, 64}, {64, 40}, true, 21)));        // GEMV
  EXPECT_TRUE(check_op(matmul({3, 1, 20}, {3, 20, 9}, false, 23)));  // batched GEMV
  EXPECT_TRUE(check_op(matmul({3, 50}, {50, 70}, false, 25)));
}

// Every GEMV width (32 columns per workgroup, or 16 and 8 where a large GPU
// needs more workgroups): rows of 1 and 3, N not a multiple of the width.
TEST_F(LowerLinalgTest, GemvEveryWidth) {
  for (const char* columns : {"8", "16", "32"}) {
    SCOPED_TRACE(columns);
    for (OpCheck c : {matmul({1, 70}, {70, 45}, true, 33), matmul({3, 90}, {90, 21}, true, 35)}) {
      c.annotations[kKernelKey] = std::string("gemv_columns=") + columns;
      c.expect_kernel = "matmul_gemv";
      EXPECT_TRUE(check_op(c));
    }
  }
}

OpCheck gemm(Shape a, Shape b, Shape c, bool trans_a, bool trans_b, float alpha, float beta, uint64_t seed) {
  OpCheck g;
  g.op = "Gemm";
  g.inputs = {random_tensor(a, seed), random_tensor(b, seed + 1)};
  if (!c.empty() || trans_a) g.inputs.push_back(random_tensor(c, seed + 2));
  g.attrs["transA"] = ir::Attribute::of_int(trans_a ? 1 : 0);
  g.attrs["transB"] = ir::Attribute::of_int(trans_b ? 1 : 0);
  g.attrs["alpha"] = ir::Attribute::of_float(alpha);
  g.attrs["beta"] = ir::Attribute::of_float(beta);
  return g;
}

TEST_F(LowerLinalgTest, GemmLinearLayer) {
  OpCheck g = gemm({5, 32}, {20, 32}, {20}, false, true, 1.0f, 1.0f, 31);
  g.constant_inputs = {1, 2};
  EXPECT_TRUE(check_op(g));
  OpCheck head = gemm({1, 50}, {10, 50}, {10}, false, true, 1.0f, 1.0f, 35);  // classifier head, GEMV
  head.constant_inputs = {1, 2};
  EXPECT_TRUE(check_op(head));
}

TEST_F(LowerLinalgTest, GemmTransposesAndScales) {
  EXPECT_TRUE(check_op(gemm({12, 7}, {12, 9}, {7, 1}, true, false, 0.5f, 2.0f, 41)));
  EXPECT_TRUE(check_op(gemm({12, 7}, {9, 12}, {7, 9}, true, true, -1.5f, 0.25f, 45)));
  OpCheck c = gemm({19, 6}, {6, 23}, {1}, false, false, 1.0f, 3.0f, 49);
  c.constant_inputs = {1};
  EXPECT_TRUE(check_op(c));
}

TEST_F(LowerLinalgTest, GemmWithoutC) {
  OpCheck g;
  g.op = "Gemm";
  g.inputs = {random_tensor({6, 11}, 51), random_tensor({11, 5}, 52)};
  EXPECT_TRUE(check_op(g));
}

// ---------------------------------------------------------------------------
// Symbolic shapes: one compiled model runs several input shapes (dims that
// are push constants, SAME pads that are expressions of them).


// Compiles `g` once per storage and runs it for each input shape.
void expect_runs_match(const ir::Graph& g, const std::vector<Shape>& shapes) {
  runtime::ReferenceExecutor reference(g);
  for (Storage storage : {Storage::kBuffer, Storage::kImage}) {
    runtime::VulkanModelOptions options;
    options.plan.storage = storage;
    auto model = runtime::VulkanModel::compile(*vk::testing::test_device(), *vk::testing::test_kernel_cache(), g,
                                               options);
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    EXPECT_EQ((*model)->plan().fallback_count(), 0u);
    for (size_t r = 0; r < shapes.size(); ++r) {
      const std::vector<Tensor> in = {random_tensor(shapes[r], 100 + r)};
      auto want = reference.run(in);
      ASSERT_TRUE(want.ok()) << want.status().to_string();
      runtime::VulkanRunStats stats;
      auto got = (*model)->run(in, &stats);
      ASSERT_TRUE(got.ok()) << got.status().to_string();
      EXPECT_EQ(stats.shader_compiles, 0u);
      const Tensor& a = (*want)[0];
      const Tensor& b = (*got)[0];
      ASSERT_EQ(a.shape(), b.shape());
      for (int64_t i = 0; i < a.numel(); ++i)
        ASSERT_NEAR(a.get_f64(i), b.get_f64(i), 1e-4) << storage_name(storage) << " " << shape_to_string(shapes[r])
                                                      << " element " << i;
    }
  }
}

TEST_F(LowerLinalgTest, SymbolicRows) {
  const ir::SymShape x({ir::Dim::symbol("s"), ir::Dim(24)});
  expect_runs_match(testing::one_node_graph("MatMul", x, {random_tensor({24, 31}, 91)}, {}), {{3, 24}, {70, 24}, {1, 24}});
}

TEST_F(LowerLinalgTest, SymbolicConvSamePads) {
  const ir::SymShape x({ir::Dim(1), ir::Dim(3), ir::Dim::symbol("h"), ir::Dim::symbol("w")});
  std::map<std::string, ir::Attribute> attrs = {{"auto_pad", ir::Attribute::of_string("SAME_UPPER")},
                                                {"strides", ir::Attribute::of_ints({2, 2})}};
  const std::vector<Shape> shapes = {{1, 3, 7, 9}, {1, 3, 12, 5}};
  expect_runs_match(testing::one_node_graph("Conv", x, {random_tensor({6, 3, 3, 3}, 93), random_tensor({6}, 94)}, attrs),
                    shapes);
  attrs["group"] = ir::Attribute::of_int(3);
  expect_runs_match(testing::one_node_graph("Conv", x, {random_tensor({3, 1, 3, 3}, 95)}, attrs), shapes);  // depthwise
}

// ---------------------------------------------------------------------------
// Weights over the storage-buffer range go up in column chunks, one GEMM
// dispatch per chunk. The test device's range (128 MiB or more) would need
// huge weights, so the lowerings run with a limit of a few KiB here, through
// a registry of their own; the plan tests below reach the same code through
// a TargetInfo with a tiny range.

template <uint64_t kLimit>
Status matmul_limited(LoweringContext& ctx) {
  return lower_matmul_limited(ctx, kLimit);
}
template <uint64_t kLimit>
Status gemm_limited(LoweringContext& ctx) {
  return lower_gemm_limited(ctx, kLimit);
}
template <uint64_t kLimit>
const LoweringRegistry* limited_lowerings() {
  static const LoweringRegistry registry = [] {
    LoweringRegistry r;
    r.add("", "MatMul", matmul_limited<kLimit>);
    r.add("", "Gemm", gemm_limited<kLimit>);
    return r;
  }();
  return &registry;
}

// `c` with weights split at kLimit bytes, expected to take several dispatches.
template <uint64_t kLimit>
OpCheck split(OpCheck c) {
  c.lowerings = limited_lowerings<kLimit>();
  c.min_dispatches = 2;
  return c;
}

// Every chunk is a pipeline of its own (its offset is a specialization
// constant), so the cases keep to two to four chunks.
TEST_F(LowerLinalgTest, GemmSplitColumns) {
  // K = 48 at 1 KiB: 4 columns of 192 bytes (fp32) or 8 of 96 (fp16) a
  // chunk, so N = 11 is cut 4 + 4 + 3 or 8 + 3.
  OpCheck linear = gemm({5, 48}, {11, 48}, {11}, false, true, 1.0f, 1.0f, 201);
  linear.constant_inputs = {1, 2};
  EXPECT_TRUE(check_op(split<1024>(linear)));
  OpCheck head = gemm({1, 48}, {11, 48}, {11}, false, true, 1.0f, 1.0f, 205);  // GEMV chunks
  head.constant_inputs = {1, 2};
  EXPECT_TRUE(check_op(split<1024>(head)));
  OpCheck plain;  // transB = 0, no C
  plain.op = "Gemm";
  plain.inputs = {random_tensor({20, 48}, 209), random_tensor({48, 11}, 210)};
  plain.constant_inputs = {1};
  EXPECT_TRUE(check_op(split<1024>(plain)));
}

TEST_F(LowerLinalgTest, GemmSplitColumnsC) {
  OpCheck full = gemm({6, 48}, {48, 11}, {6, 11}, false, false, 0.5f, 2.0f, 211);  // C [M, N] sliced too
  full.constant_inputs = {1, 2};
  EXPECT_TRUE(check_op(split<1024>(full)));
  OpCheck rows = gemm({6, 48}, {11, 48}, {6, 1}, false, true, 1.0f, -1.0f, 215);  // C broadcast along N
  rows.constant_inputs = {1, 2};
  EXPECT_TRUE(check_op(split<1024>(rows)));
  OpCheck act = gemm({48, 6}, {11, 48}, {11}, true, true, 1.5f, 1.0f, 219);  // C an activation, A transposed
  act.constant_inputs = {1};
  EXPECT_TRUE(check_op(split<1024>(act)));
}

TEST_F(LowerLinalgTest, GemmSplitColumnsSplitK) {
  // K = 600 at 9600 bytes: 4 (fp32) or 8 (fp16) columns a chunk, each chunk
  // a split-K pair of dispatches.
  OpCheck deep = gemm({20, 600}, {10, 600}, {10}, false, true, 1.0f, 1.0f, 221);
  deep.constant_inputs = {1, 2};
  EXPECT_TRUE(check_op(split<9600>(deep)));
}

TEST_F(LowerLinalgTest, MatMulSplitColumns) {
  EXPECT_TRUE(check_op(split<1024>(matmul({17, 48}, {48, 11}, true, 231))));
  EXPECT_TRUE(check_op(split<1024>(matmul({48}, {48, 11}, true, 233))));  // 1-D A, GEMV
  // Batch folds into M; N = 9 is cut 4 + 4 + 1 (fp32) or 8 + 1 (fp16).
  EXPECT_TRUE(check_op(split<400>(matmul({2, 9, 24}, {24, 9}, true, 235))));
  // Batched B, each chunk holding its columns of every batch: 12 + 12 + 5 or 16 + 13.
  EXPECT_TRUE(check_op(split<4096>(matmul({3, 5, 24}, {3, 24, 29}, true, 237))));
}

// The planner splits by the target's range: no fallback, one dispatch per
// chunk; a weight whose four columns exceed the range runs on the host.
TEST(LowerLinalgPlan, SplitsByTargetRange) {
  TargetInfo t;
  t.max_storage_buffer_range = 4096;
  const ir::SymShape x = ir::SymShape::from_concrete({5, 64});
  std::map<std::string, ir::Attribute> trans_b = {{"transB", ir::Attribute::of_int(1)}};
  // [40, 64] fp32 = 10 KiB: 16 columns of 256 bytes a chunk, 3 chunks.
  const ir::Graph gemm_graph = testing::one_node_graph("Gemm", x, {random_tensor({40, 64}, 241), random_tensor({40}, 242)},
                                              trans_b);
  const ir::Graph matmul_graph = testing::one_node_graph("MatMul", x, {random_tensor({64, 40}, 243)}, {});
  for (const ir::Graph* g : {&gemm_graph, &matmul_graph})
    for (Storage storage : {Storage::kBuffer, Storage::kImage}) {
      PlanOptions options;
      options.storage = storage;
      auto plan = build_plan(*g, t, options);
      ASSERT_TRUE(plan.ok()) << plan.status().to_string();
      EXPECT_EQ(plan->fallback_count(), 0u);
      size_t dispatches = 0, constants = 0;
      for (const PlanStep& step : plan->steps)
        if (step.kind == PlanStep::Kind::kDispatch) ++dispatches;
      for (const PlanTensor& pt : plan->tensors)
        if (pt.constant.defined()) {
          ++constants;
          EXPECT_LE(pt.constant.numel() * 4, 4096);
        }
      EXPECT_EQ(dispatches, 3u) << describe_plan(*plan, *g);
      EXPECT_GE(constants, 3u);
    }
  t.max_storage_buffer_range = 512;  // 4 columns of K = 64 are 1 KiB
  auto plan = build_plan(gemm_graph, t, PlanOptions{});
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  ASSERT_EQ(plan->fallback_count(), 1u);
  EXPECT_NE(plan->fallback_reasons[0].find("splitting along K"), std::string::npos) << plan->fallback_reasons[0];
}

// A split GEMM with a constant grid is one dispatch (its arrival counters a
// zero-filled state tensor, one int per tile); two when the hint asks for
// the separate reduction or the grid is symbolic.
TEST(LowerLinalgPlan, SplitKFixupIsOneDispatch) {
  TargetInfo t;
  t.vulkan_version = VK_API_VERSION_1_3;
  // M = 20 (1 tile of 32 rows), N = 70 (2 tiles of 64 columns), K = 600: 4 slices.
  const ir::Graph g = testing::one_node_graph("MatMul", ir::SymShape::from_concrete({20, 600}), {random_tensor({600, 70}, 7)});
  const auto plan_of = [&](const TargetInfo& target, const char* hint) {
    ir::Graph copy = g;
    if (hint)
      for (size_t n = 0; n < copy.num_nodes(); ++n) copy.node(static_cast<ir::NodeId>(n)).annotations[kKernelKey] = hint;
    return build_plan(copy, target, PlanOptions{});
  };
  auto fused = plan_of(t, "splitk_reduce=fused");
  ASSERT_TRUE(fused.ok()) << fused.status().to_string();
  ASSERT_EQ(fused->dispatch_count(), 1u);
  const KernelDesc& k = fused->steps[0].kernel;
  EXPECT_EQ(k.name, "matmul_splitk_fixup_tile32x64");
  size_t states = 0;
  for (const KernelTensor& kt : k.tensors) {
    const PlanTensor& pt = fused->tensors[static_cast<size_t>(kt.tensor)];
    if (kt.name == "GP") {
      EXPECT_TRUE(kt.coherent);
    }
    if (pt.origin != PlanTensor::Origin::kState) continue;
    ++states;
    EXPECT_EQ(kt.name, "GC");
    EXPECT_EQ(pt.layout.type, ElemType::kI32);
    ASSERT_EQ(pt.shape.size(), 1u);
    EXPECT_EQ(pt.shape[0].value(), 2);  // one counter per output tile
  }
  EXPECT_EQ(states, 1u);

  // The atomic fix-up (asked for, on a device with float atomics): its
  // running sums (float, M x N) and counters are model state.
  TargetInfo atomics = t;
  atomics.float32_atomic_add = true;
  auto atomic = plan_of(atomics, "splitk_reduce=atomic");
  ASSERT_TRUE(atomic.ok()) << atomic.status().to_string();
  ASSERT_EQ(atomic->dispatch_count(), 1u);
  EXPECT_EQ(atomic->steps[0].kernel.name, "matmul_splitk_atomic_tile32x64");
  std::map<std::string, std::pair<ElemType, int64_t>> state;
  for (const KernelTensor& kt : atomic->steps[0].kernel.tensors) {
    const PlanTensor& pt = atomic->tensors[static_cast<size_t>(kt.tensor)];
    if (pt.origin == PlanTensor::Origin::kState) state[kt.name] = {pt.layout.type, pt.shape[0].value()};
  }
  EXPECT_EQ(state.size(), 2u);
  EXPECT_EQ(state["GA"], std::make_pair(ElemType::kF32, int64_t{20 * 70}));
  EXPECT_EQ(state["GC"], std::make_pair(ElemType::kI32, int64_t{2}));
  // Unasked, it keeps the reduce pass (the faster on the GPUs measured);
  // asked on a device without float atomics, too.
  auto unasked = plan_of(atomics, nullptr);
  ASSERT_TRUE(unasked.ok()) << unasked.status().to_string();
  EXPECT_EQ(unasked->dispatch_count(), 2u);
  auto no_atomics = plan_of(t, "splitk_reduce=atomic");
  ASSERT_TRUE(no_atomics.ok()) << no_atomics.status().to_string();
  EXPECT_EQ(no_atomics->dispatch_count(), 2u);

  auto separate = plan_of(t, nullptr);  // the default: a reduce pass
  ASSERT_TRUE(separate.ok()) << separate.status().to_string();
  ASSERT_EQ(separate->dispatch_count(), 2u);
  EXPECT_EQ(separate->steps[0].kernel.name, "matmul_splitk_tile32x64");
  EXPECT_EQ(separate->steps[1].kernel.name, "matmul_splitk_reduce");

  // A symbolic grid (M unknown) has no constant counter count: two passes.
  const ir::Graph sym = testing::one_node_graph("MatMul", ir::SymShape({ir::Dim::symbol("m"), ir::Dim(600)}),
                                                {random_tensor({600, 70}, 7)});
  ir::Graph hinted = sym;
  for (size_t n = 0; n < hinted.num_nodes(); ++n) hinted.node(static_cast<ir::NodeId>(n)).annotations[kKernelKey] = "split_k=4";
  auto symbolic = build_plan(hinted, t, PlanOptions{});
  ASSERT_TRUE(symbolic.ok()) << symbolic.status().to_string();
  EXPECT_EQ(symbolic->dispatch_count(), 2u);
}

TEST(LowerLinalgPlan, SplitKReduceHintIsChecked) {
  ir::Graph g = testing::one_node_graph("MatMul", ir::SymShape::from_concrete({20, 600}), {random_tensor({600, 70}, 7)});
  for (size_t n = 0; n < g.num_nodes(); ++n) g.node(static_cast<ir::NodeId>(n)).annotations[kKernelKey] = "splitk_reduce=later";
  auto plan = build_plan(g, TargetInfo{}, PlanOptions{});
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("splitk_reduce must be separate, fused or atomic"), std::string::npos)
      << plan.status().to_string();
}

// ---------------------------------------------------------------------------
// Every kernel variant compiles to valid SPIR-V (Vulkan 1.3 rules).

// Plans `g` and compiles and validates every kernel; expects one named
// `expect_name`.
void expect_kernels_valid(const ir::Graph& g, const TargetInfo& target, ElemType precision, Storage storage,
                          const std::string& expect_name) {
  PlanOptions options;
  options.precision = precision;
  options.storage = storage;
  auto plan = build_plan(g, target, options);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  auto compiler = vk::ShaderCompiler::create();
  ASSERT_TRUE(compiler.ok());
  bool found = false;
  for (const PlanStep& step : plan->steps) {
    ASSERT_EQ(step.kind, PlanStep::Kind::kDispatch);
    auto glsl = generate_glsl(step.kernel, target);
    ASSERT_TRUE(glsl.ok()) << glsl.status().to_string();
    vk::CompileOptions co;
    co.vulkan_version = VK_API_VERSION_1_3;
    co.source_name = glsl->name + ".comp";
    auto spirv = (*compiler)->compile(glsl->glsl, co);
    ASSERT_TRUE(spirv.ok()) << spirv.status().to_string();
    EXPECT_EQ(testing::spirv_val_errors(*spirv, (1u << 22) | (3u << 12)), "") << glsl->glsl;
    if (glsl->name == expect_name) found = true;
  }
  EXPECT_TRUE(found) << "no kernel named " << expect_name;
}

// A one-node MatMul graph [m, k] x const [k, n].
ir::Graph matmul_graph(int64_t m, int64_t n, int64_t k) {
  return testing::one_node_graph("MatMul", ir::SymShape::from_concrete({m, k}), {random_tensor({k, n}, 77)}, {});
}

TEST(LowerLinalgKernels, VariantsAreValidSpirv) {
  TargetInfo t;
  t.vulkan_version = VK_API_VERSION_1_3;
  t.fp16_storage = true;
  expect_kernels_valid(matmul_graph(1, 40, 64), t, ElemType::kF32, Storage::kBuffer, "matmul_gemv");
  expect_kernels_valid(matmul_graph(20, 40, 64), t, ElemType::kF32, Storage::kBuffer, "matmul_tile32x64");
  expect_kernels_valid(matmul_graph(100, 8, 64), t, ElemType::kF32, Storage::kImage, "matmul_tile64x16");
  ir::Graph separate = matmul_graph(20, 30, 600);
  for (size_t n = 0; n < separate.num_nodes(); ++n)
    separate.node(static_cast<ir::NodeId>(n)).annotations[kKernelKey] = "splitk_reduce=separate";
  expect_kernels_valid(separate, t, ElemType::kF16, Storage::kBuffer, "matmul_splitk_reduce");
  const auto fixup = [](ir::Graph g) {
    for (size_t n = 0; n < g.num_nodes(); ++n) g.node(static_cast<ir::NodeId>(n)).annotations[kKernelKey] = "splitk_reduce=fused";
    return g;
  };
  expect_kernels_valid(fixup(matmul_graph(20, 30, 600)), t, ElemType::kF16, Storage::kBuffer, "matmul_splitk_fixup_tile32x32");
  expect_kernels_valid(fixup(matmul_graph(20, 30, 600)), t, ElemType::kF32, Storage::kImage, "matmul_splitk_fixup_tile32x32");
  expect_kernels_valid(fixup(matmul_graph(100, 30, 2000)), t, ElemType::kF32, Storage::kBuffer, "matmul_splitk_fixup_tile64x32");
  TargetInfo atomics = t;
  atomics.float32_atomic_add = true;
  const auto atomic = [](ir::Graph g) {
    for (size_t n = 0; n < g.num_nodes(); ++n) g.node(static_cast<ir::NodeId>(n)).annotations[kKernelKey] = "splitk_reduce=atomic";
    return g;
  };
  expect_kernels_valid(atomic(matmul_graph(20, 30, 600)), atomics, ElemType::kF16, Storage::kBuffer, "matmul_splitk_atomic_tile32x32");
  expect_kernels_valid(atomic(matmul_graph(100, 30, 2000)), atomics, ElemType::kF32, Storage::kImage, "matmul_splitk_atomic_tile64x32");
  TargetInfo small = t;
  small.max_storage_buffer_range = 4096;  // column chunks of 16, 16 and 8
  expect_kernels_valid(matmul_graph(20, 40, 64), small, ElemType::kF32, Storage::kImage, "matmul_cols_tile32x16");
  const ir::SymShape x({ir::Dim(1), ir::Dim(8), ir::Dim::symbol("h"), ir::Dim::symbol("w")});
  const std::map<std::string, ir::Attribute> same = {{"auto_pad", ir::Attribute::of_string("SAME_LOWER")}};
  expect_kernels_valid(testing::one_node_graph("Conv", x, {random_tensor({12, 8, 3, 3}, 78)}, same), t, ElemType::kF16,
                       Storage::kImage, "conv_tile64x16");
  std::map<std::string, ir::Attribute> dw = same;
  dw["group"] = ir::Attribute::of_int(8);
  expect_kernels_valid(testing::one_node_graph("Conv", x, {random_tensor({8, 1, 3, 3}, 79)}, dw), t, ElemType::kF32,
                       Storage::kBuffer, "conv_depthwise_rows");
  const ir::SymShape x1({ir::Dim(1), ir::Dim(8), ir::Dim::symbol("w")});  // 1-D: the map kernel
  expect_kernels_valid(testing::one_node_graph("Conv", x1, {random_tensor({8, 1, 3}, 79)}, dw), t, ElemType::kF16,
                       Storage::kBuffer, "conv_depthwise");
  expect_kernels_valid(testing::one_node_graph("Conv", x, {random_tensor({8, 1, 3, 3}, 79), random_tensor({8}, 81)}, dw), t,
                       ElemType::kF16, Storage::kImage, "conv_depthwise_texel");
  // The latency-bound tiles of a GPU of many compute units (deep K steps).
  TargetInfo gpu = t;
  gpu.compute_units = 132;
  gpu.max_shared_memory = 49152;
  const ir::Graph pointwise = testing::one_node_graph("Conv", ir::SymShape::from_concrete({1, 64, 14, 14}),
                                                      {random_tensor({96, 64, 1, 1}, 82)}, {});
  expect_kernels_valid(pointwise, gpu, ElemType::kF16, Storage::kBuffer, "conv_tile32x32k64");
  expect_kernels_valid(pointwise, gpu, ElemType::kF32, Storage::kImage, "conv_tile32x32k64");
  const std::map<std::string, ir::Attribute> up = {{"strides", ir::Attribute::of_ints({2, 2})}};
  expect_kernels_valid(testing::one_node_graph("ConvTranspose", x, {random_tensor({8, 4, 2, 2}, 80)}, up), t, ElemType::kF32,
                       Storage::kImage, "conv_transpose");
}

// $KILN_GEMM_SWEEP: a comma list of k=, split= and latency= items; anything
// else is an error naming the value and the item.
TEST(GemmSweepEnv, ParsesItemsAndNamesBadOnes) {
  {
    testing::ScopedEnv env("KILN_GEMM_SWEEP", "");
    auto s = runtime::gemm_sweep_from_env();
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s->tile_k, 0);
    EXPECT_EQ(s->max_split, 0);
    EXPECT_TRUE(s->latency_tiles);
  }
  {
    testing::ScopedEnv env("KILN_GEMM_SWEEP", "k=64,split=12,latency=off");
    auto s = runtime::gemm_sweep_from_env();
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    EXPECT_EQ(s->tile_k, 64);
    EXPECT_EQ(s->max_split, 12);
    EXPECT_FALSE(s->latency_tiles);
  }
  for (const char* bad : {"k=48", "split=0", "split=17", "split=", "split=4x", "latency=maybe", "k=32,,split=2", "big"}) {
    testing::ScopedEnv env("KILN_GEMM_SWEEP", bad);
    auto s = runtime::gemm_sweep_from_env();
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.status().to_string().find(bad), std::string::npos) << s.status().to_string();
  }
}

}  // namespace
}  // namespace kiln::planner
