// Epilogue fusion (planner/fusion.h, group shape 2): an anchor node of any
// lowering plus its elementwise tail in one fusion group runs as the
// anchor's kernels, which store through the composed tail; and shape 3
// (planner/fusion_dwpw.h): depthwise conv + chain + pointwise conv (+ tail)
// as one GEMM; shape 5 (planner/fusion_conv_sum.h): two 1x1 convs and
// their sum as one GEMM; shape 4 (planner/fusion_row_norm.h): a split GEMM's
// reduce pass and the LayerNormalization after it; and shape 6
// (planner/fusion_dw_norm.h): a depthwise conv, a Transpose to channels last
// and a LayerNormalization over the channels as one kernel. Each case builds
// a small graph, plans it in every storage x precision, checks the plan
// fused (dispatch count, kernel names, no fusion note) and compares the
// Vulkan results with the reference executor's.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/ops/quantization.h"
#include "engine/ops/shape_inference.h"
#include "engine/runtime/reference_executor.h"
#include "engine/runtime/vulkan/vulkan_model.h"
#include "planner/execution_plan.h"
#include "planner/glsl_codegen.h"
#include "planner/plan_hints.h"
#include "planner/testing/op_check.h"
#include "planner/testing/random_ints.h"
#include "platform/vulkan/vk_test_env.h"

namespace kiln::planner {
namespace {

using testing::random_tensor;

// A test graph under construction; nodes made by op() join fusion group "g"
// unless told otherwise.
class Net {
 public:
  ir::ValueId input(const std::string& name, std::vector<ir::Dim> shape) {
    return g.add_input(name, DType::kFloat32, ir::SymShape(std::move(shape)));
  }
  ir::ValueId constant(const Tensor& t) { return g.add_constant("c" + std::to_string(n_++), t); }
  ir::ValueId scalar(float v) {
    Tensor t = Tensor::allocate(DType::kFloat32, {}).value();
    t.set_f64(0, v);
    return constant(t);
  }
  ir::ValueId op(const std::string& op, std::vector<ir::ValueId> in, std::map<std::string, ir::Attribute> attrs = {},
                 bool grouped = true, size_t outputs = 1) {
    std::vector<ir::ValueId> outs;
    for (size_t j = 0; j < outputs; ++j)
      outs.push_back(g.add_value("v" + std::to_string(n_++), DType::kUndefined, ir::SymShape::unranked()));
    const ir::NodeId id = g.add_node(op, std::move(in), outs, std::move(attrs), op + std::to_string(n_));
    if (grouped) g.node(id).annotations[kFusionGroupKey] = "g";
    last = id;
    return outs[0];
  }
  // Infers the shapes and makes `outs` the graph's outputs.
  ir::Graph& finish(const std::vector<ir::ValueId>& outs) {
    for (ir::ValueId v : outs) g.add_output(v);
    const Status st = ops::infer_graph_shapes(g);
    EXPECT_TRUE(st.ok()) << st.to_string();
    return g;
  }
  ir::Graph g;
  ir::NodeId last = ir::kNoNode;

 private:
  int n_ = 0;
};

ir::Attribute ints(std::vector<int64_t> v) { return ir::Attribute::of_ints(std::move(v)); }
ir::Attribute one(int64_t v) { return ir::Attribute::of_int(v); }

struct Expect {
  size_t dispatches = 1;        // of the fused plan
  std::string name;             // a substring of a dispatch's kernel name
  size_t image_dispatches = 0;  // for the image configs, when different
  std::string image_name;      // same for the image configs, when different
  double tol_f32 = 1e-4;
  double tol_f16 = 2e-2;
  bool images = true;          // also the image configs
};

std::string kernel_names(const ExecutionPlan& plan) {
  std::string s;
  for (const PlanStep& step : plan.steps)
    if (step.kind == PlanStep::Kind::kDispatch) s += step.kernel.name + " ";
  return s;
}

// Plans `g` in every storage x precision, expects the group fused as `e`
// says and the results of every input set in `runs` (the first compiles,
// the others must compile no shader) to match the reference.
void expect_fused(const ir::Graph& g, const std::vector<std::vector<Tensor>>& runs, const Expect& e) {
  runtime::ReferenceExecutor reference(g);
  std::vector<std::vector<Tensor>> want;
  for (const std::vector<Tensor>& in : runs) {
    auto r = reference.run(in);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    want.push_back(std::move(r).value());
  }
  int configs = 0;
  for (const testing::BackendConfig& config : testing::all_backend_configs()) {
    if (!e.images && config.storage == Storage::kImage) continue;
    auto model = testing::compile_on_test_device(g, config);
    ASSERT_TRUE(model.ok()) << config.name() << ": " << model.status().to_string();
    const ExecutionPlan& plan = (*model)->plan();
    const std::string names = kernel_names(plan);
    EXPECT_EQ(plan.fallback_count(), 0u) << config.name();
    EXPECT_TRUE(plan.fusion_notes.empty()) << config.name() << ": " << plan.fusion_notes.front();
    const bool image = config.storage == Storage::kImage;
    EXPECT_EQ(plan.dispatch_count(), image && e.image_dispatches ? e.image_dispatches : e.dispatches)
        << config.name() << ": " << names;
    const std::string& name = image && !e.image_name.empty() ? e.image_name : e.name;
    EXPECT_NE(names.find(name), std::string::npos) << config.name() << ": " << names;
    const double tol = config.precision == ElemType::kF16 ? e.tol_f16 : e.tol_f32;
    for (size_t r = 0; r < runs.size(); ++r) {
      runtime::VulkanRunStats stats;
      auto got = (*model)->run(runs[r], &stats);
      ASSERT_TRUE(got.ok()) << config.name() << ": " << got.status().to_string();
      if (r > 0) {
        EXPECT_EQ(stats.shader_compiles, 0u) << config.name() << " run " << r;
      }
      for (size_t j = 0; j < want[r].size(); ++j) {
        const Tensor& a = want[r][j];
        const Tensor& b = (*got)[j];
        ASSERT_EQ(a.shape(), b.shape()) << config.name();
        double max_ref = 1.0;
        for (int64_t i = 0; i < a.numel(); ++i) max_ref = std::max(max_ref, std::fabs(a.get_f64(i)));
        for (int64_t i = 0; i < a.numel(); ++i)
          ASSERT_NEAR(a.get_f64(i), b.get_f64(i), tol * max_ref)
              << config.name() << " run " << r << " output " << j << " element " << i << " (" << names << ")";
      }
    }
    ++configs;
  }
  EXPECT_GE(configs, e.images ? 2 : 1);
}

class FusionEpilogue : public vk::testing::VulkanTest {};

// x [n, c, h, w] -> Conv(W [co, c/group, k, k]) (+ bias).
ir::ValueId conv(Net& net, ir::ValueId x, int64_t c, int64_t co, int64_t k, int64_t stride, int64_t pad,
                 int64_t group = 1, bool bias = false, uint64_t seed = 7) {
  std::vector<ir::ValueId> in = {x, net.constant(random_tensor({co, c / group, k, k}, seed, -0.5f, 0.5f))};
  if (bias) in.push_back(net.constant(random_tensor({co}, seed + 1)));
  return net.op("Conv", in,
                {{"kernel_shape", ints({k, k})},
                 {"strides", ints({stride, stride})},
                 {"pads", ints({pad, pad, pad, pad})},
                 {"group", one(group)}});
}

TEST_F(FusionEpilogue, ConvRelu) {
  Net net;
  const ir::ValueId x = net.input("x", {1, 8, 10, 10});
  const ir::ValueId y = net.op("Relu", {conv(net, x, 8, 16, 3, 1, 1)});
  expect_fused(net.finish({y}), {{random_tensor({1, 8, 10, 10}, 1)}}, {.name = "+relu"});
}

TEST_F(FusionEpilogue, ConvAddResidualRelu) {
  Net net;
  const ir::ValueId x = net.input("x", {1, 8, 10, 10});
  const ir::ValueId r = net.input("r", {1, 16, 10, 10});
  const ir::ValueId y = net.op("Relu", {net.op("Add", {conv(net, x, 8, 16, 3, 1, 1), r})});
  expect_fused(net.finish({y}), {{random_tensor({1, 8, 10, 10}, 1), random_tensor({1, 16, 10, 10}, 2)}},
               {.name = "+add+relu"});
}

TEST_F(FusionEpilogue, ConvBiasClip) {
  Net net;
  const ir::ValueId x = net.input("x", {1, 8, 9, 9});
  const ir::ValueId c = conv(net, x, 8, 12, 3, 2, 1, 1, /*bias=*/true);
  const ir::ValueId y = net.op("Clip", {c, net.scalar(0.0f), net.scalar(0.5f)});
  expect_fused(net.finish({y}), {{random_tensor({1, 8, 9, 9}, 3)}}, {.name = "+clip"});
}

TEST_F(FusionEpilogue, SplitKConvRelu) {
  Net net;
  const ir::ValueId x = net.input("x", {1, 8, 6, 6});
  const ir::ValueId c = conv(net, x, 8, 16, 3, 1, 1);
  net.g.node(net.last).annotations[kKernelKey] = "split_k=4,splitk_reduce=fused";
  const ir::ValueId y = net.op("Relu", {c});
  // The last workgroup of each tile adds the slices and stores through the tail.
  expect_fused(net.finish({y}), {{random_tensor({1, 8, 6, 6}, 4)}}, {.dispatches = 1, .name = "splitk_fixup"});
}

TEST_F(FusionEpilogue, SplitKAtomicConvRelu) {
  if (!vk::testing::test_device()->enabled().buffer_float32_atomic_add) GTEST_SKIP() << "no float atomics";
  Net net;
  const ir::ValueId x = net.input("x", {1, 8, 6, 6});
  const ir::ValueId c = conv(net, x, 8, 16, 3, 1, 1);
  net.g.node(net.last).annotations[kKernelKey] = "split_k=4,splitk_reduce=atomic";
  const ir::ValueId y = net.op("Relu", {c});
  // The last workgroup of each tile reads the atomic sums back and stores
  // them through the tail.
  expect_fused(net.finish({y}), {{random_tensor({1, 8, 6, 6}, 4)}}, {.dispatches = 1, .name = "splitk_atomic"});
}

TEST_F(FusionEpilogue, SplitKSeparateReduceConvRelu) {
  Net net;
  const ir::ValueId x = net.input("x", {1, 8, 6, 6});
  const ir::ValueId c = conv(net, x, 8, 16, 3, 1, 1);
  net.g.node(net.last).annotations[kKernelKey] = "split_k=4,splitk_reduce=separate";
  const ir::ValueId y = net.op("Relu", {c});
  // The tile pass binds the output too (never storing it), the reduction stores.
  expect_fused(net.finish({y}), {{random_tensor({1, 8, 6, 6}, 4)}}, {.dispatches = 2, .name = "splitk_reduce+relu"});
}

TEST_F(FusionEpilogue, PointwiseConvRelu) {
  Net net;
  const ir::ValueId x = net.input("x", {2, 8, 6, 6});
  const ir::ValueId y = net.op("Relu", {conv(net, x, 8, 12, 1, 1, 0, 1, true)});
  expect_fused(net.finish({y}), {{random_tensor({2, 8, 6, 6}, 5)}}, {.name = "+relu"});
}

TEST_F(FusionEpilogue, DepthwiseConvClip) {
  Net net;
  const ir::ValueId x = net.input("x", {1, 8, 9, 9});
  const ir::ValueId c = conv(net, x, 8, 8, 3, 2, 1, /*group=*/8, true);
  const ir::ValueId y = net.op("Clip", {c, net.scalar(0.0f), net.scalar(0.6f)});
  expect_fused(net.finish({y}), {{random_tensor({1, 8, 9, 9}, 6)}}, {.name = "+clip"});
}

TEST_F(FusionEpilogue, MatMulBiasErfGelu) {
  Net net;
  const ir::ValueId x = net.input("x", {2, 5, 16});
  const ir::ValueId mm = net.op("MatMul", {x, net.constant(random_tensor({16, 32}, 8, -0.5f, 0.5f))});
  const ir::ValueId a = net.op("Add", {mm, net.constant(random_tensor({32}, 9))});
  const ir::ValueId e = net.op("Erf", {net.op("Div", {a, net.scalar(1.4142135f)})});
  const ir::ValueId f = net.op("Add", {e, net.scalar(1.0f)});
  const ir::ValueId y = net.op("Mul", {net.op("Mul", {a, f}), net.scalar(0.5f)});
  expect_fused(net.finish({y}), {{random_tensor({2, 5, 16}, 10)}}, {.name = "+add+div+erf+add+mul+mul"});
}

TEST_F(FusionEpilogue, GemmRelu) {
  Net net;
  const ir::ValueId x = net.input("x", {3, 16});
  const ir::ValueId c = net.op("Gemm", {x, net.constant(random_tensor({16, 8}, 11)), net.constant(random_tensor({8}, 12))});
  const ir::ValueId y = net.op("Relu", {c});
  expect_fused(net.finish({y}), {{random_tensor({3, 16}, 13)}}, {.name = "gemv+relu"});
}

TEST_F(FusionEpilogue, SiluTailReadsTheAnchorTwice) {
  Net net;
  const ir::ValueId x = net.input("x", {1, 8, 7, 7});
  const ir::ValueId c = conv(net, x, 8, 8, 3, 1, 1);
  const ir::ValueId y = net.op("Mul", {c, net.op("Sigmoid", {c})});
  expect_fused(net.finish({y}), {{random_tensor({1, 8, 7, 7}, 14)}}, {.name = "+sigmoid+mul"});
}

TEST_F(FusionEpilogue, SoftmaxMul) {
  Net net;
  const ir::ValueId x = net.input("x", {4, 20});
  const ir::ValueId s = net.op("Softmax", {x}, {{"axis", one(-1)}});
  const ir::ValueId y = net.op("Mul", {s, net.constant(random_tensor({20}, 15))});
  expect_fused(net.finish({y}), {{random_tensor({4, 20}, 16, -3.0f, 3.0f)}}, {.name = "+mul"});
}

TEST_F(FusionEpilogue, LayerNormAdd) {
  Net net;
  const ir::ValueId x = net.input("x", {3, 7, 24});
  const ir::ValueId r = net.input("r", {3, 7, 24});
  const ir::ValueId n = net.op("LayerNormalization",
                               {x, net.constant(random_tensor({24}, 17)), net.constant(random_tensor({24}, 18))},
                               {{"axis", one(-1)}});
  const ir::ValueId y = net.op("Add", {n, r});
  expect_fused(net.finish({y}), {{random_tensor({3, 7, 24}, 19), random_tensor({3, 7, 24}, 20)}}, {.name = "+add"});
}

TEST_F(FusionEpilogue, AnAnchorsUnusedExtraOutputsAreStillWritten) {
  // LayerNormalization's Mean and InvStdDev outputs, read by nothing.
  Net net;
  const ir::ValueId x = net.input("x", {4, 24});
  const ir::ValueId n = net.op("LayerNormalization",
                               {x, net.constant(random_tensor({24}, 17)), net.constant(random_tensor({24}, 18))},
                               {{"axis", one(-1)}}, true, 3);
  const ir::ValueId y = net.op("Relu", {n});
  // Their kernels (layer_norm_mean, layer_norm_inv_std) run as without the group.
  expect_fused(net.finish({y}), {{random_tensor({4, 24}, 19)}}, {.dispatches = 3, .name = "layer_norm+relu"});
}

TEST_F(FusionEpilogue, PoolsRelu) {
  Net net;
  const ir::ValueId x = net.input("x", {1, 6, 9, 9});
  const ir::ValueId m = net.op("MaxPool", {x}, {{"kernel_shape", ints({3, 3})}, {"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}});
  const ir::ValueId y = net.op("Relu", {net.op("Add", {m, net.scalar(-0.25f)})});
  expect_fused(net.finish({y}), {{random_tensor({1, 6, 9, 9}, 21)}}, {.name = "+add+relu"});

  Net gap;
  const ir::ValueId x2 = gap.input("x", {2, 6, 5, 5});
  const ir::ValueId y2 = gap.op("Relu", {gap.op("GlobalAveragePool", {x2})});
  expect_fused(gap.finish({y2}), {{random_tensor({2, 6, 5, 5}, 22)}}, {.name = "+relu"});
}

TEST_F(FusionEpilogue, SymbolicBatchCompilesOnce) {
  Net net;
  const ir::ValueId x = net.input("x", {ir::Dim::symbol("n"), 8, 10, 10});
  const ir::ValueId r = net.input("r", {ir::Dim::symbol("n"), 16, 1, 1});
  const ir::ValueId y = net.op("Relu", {net.op("Add", {conv(net, x, 8, 16, 3, 1, 1), r})});
  expect_fused(net.finish({y}),
               {{random_tensor({1, 8, 10, 10}, 23), random_tensor({1, 16, 1, 1}, 24)},
                {random_tensor({3, 8, 10, 10}, 25), random_tensor({3, 16, 1, 1}, 26)}},
               {.name = "+add+relu"});
}

TEST_F(FusionEpilogue, ImageOutputThroughTheGemmScratchCopy) {
  // An output image packed along W: the GEMM cannot store four texel lanes,
  // writes a scratch buffer, and the copy kernel (which writes the output)
  // takes the epilogue.
  Net net;
  const ir::ValueId x = net.input("x", {1, 8, 6, 6});
  const ir::ValueId r = net.input("r", {1, 16, 6, 6});
  const ir::ValueId y = net.op("Relu", {net.op("Add", {conv(net, x, 8, 16, 3, 1, 1), r})});
  net.g.value(y).annotations[kPackedAxisKey] = "3";
  expect_fused(net.finish({y}), {{random_tensor({1, 8, 6, 6}, 27), random_tensor({1, 16, 6, 6}, 28)}},
               {.name = "+add+relu", .image_dispatches = 2, .image_name = "gemm_copy_out+add+relu"});
}

// ---------------------------------------------------------------------------
// Depthwise conv + chain + pointwise conv (+ tail) as one GEMM (fusion_dwpw.h).

// x [n, c, h, w] -> dw (k x k, `stride`, `pad`, bias) -> chain (Clip,
// Relu) -> pw c -> 12 (bias) -> Add(residual); returns the last value.
// The pw hint defaults to 16x16 tiles: lavapipe compiles a GEMM whose A
// loads each run a depthwise window for long (~45 s for 64-row tiles in
// four configs), so only DwClipPwIsOneGemm takes the planner's own tile.
struct Dwpw {
  int64_t c = 8, k = 3, stride = 1, pad = 1;
  bool clip = true, relu = false;
  std::string pw_hint = "tile=16x16";
};

ir::ValueId dwpw(Net& net, ir::ValueId x, const Dwpw& d, ir::ValueId residual = ir::kNoValue) {
  ir::ValueId v = conv(net, x, d.c, d.c, d.k, d.stride, d.pad, /*group=*/d.c, /*bias=*/true, 31);
  if (d.clip) v = net.op("Clip", {v, net.scalar(0.0f), net.scalar(0.4f)});
  if (d.relu) v = net.op("Relu", {v});
  v = conv(net, v, d.c, 12, 1, 1, 0, 1, /*bias=*/true, 33);
  if (!d.pw_hint.empty()) net.g.node(net.last).annotations[kKernelKey] = d.pw_hint;
  if (residual != ir::kNoValue) v = net.op("Add", {v, residual});
  return v;
}

TEST_F(FusionEpilogue, DwClipPwIsOneGemm) {
  Net net;
  const ir::ValueId x = net.input("x", {1, 8, 9, 9});
  const ir::ValueId y = dwpw(net, x, {.pw_hint = ""});
  expect_fused(net.finish({y}), {{random_tensor({1, 8, 9, 9}, 40)}}, {.name = "dwpw_tile64x16"});
}

TEST_F(FusionEpilogue, DwStride2ReluPwResidualAdd) {
  Net net;
  const ir::ValueId x = net.input("x", {2, 8, 9, 9});
  const ir::ValueId r = net.input("r", {2, 12, 5, 5});
  const ir::ValueId y = dwpw(net, x, {.stride = 2, .clip = false, .relu = true}, r);
  expect_fused(net.finish({y}), {{random_tensor({2, 8, 9, 9}, 41), random_tensor({2, 12, 5, 5}, 42)}},
               {.name = "dwpw_", .tol_f16 = 3e-2});
}

TEST_F(FusionEpilogue, DwWithoutPadsOrChainPwRelu) {
  Net net;
  const ir::ValueId x = net.input("x", {1, 8, 9, 9});
  const ir::ValueId v = dwpw(net, x, {.pad = 0, .clip = false});
  const ir::ValueId y = net.op("Relu", {v});
  expect_fused(net.finish({y}), {{random_tensor({1, 8, 9, 9}, 43)}}, {.name = "+relu"});
}

TEST_F(FusionEpilogue, DwPwTakesThePointwiseTileHint) {
  Net net;
  const ir::ValueId x = net.input("x", {1, 8, 11, 11});
  const ir::ValueId r = net.input("r", {1, 12, 6, 6});
  const ir::ValueId y = dwpw(net, x, {.k = 5, .stride = 2, .pad = 2, .pw_hint = "tile=16x32"}, r);
  expect_fused(net.finish({y}), {{random_tensor({1, 8, 11, 11}, 44), random_tensor({1, 12, 6, 6}, 45)}},
               {.name = "dwpw_tile16x32+add"});
}

TEST_F(FusionEpilogue, DwPwSplitKAndSymbolicBatch) {
  Net net;
  const ir::ValueId x = net.input("x", {ir::Dim::symbol("n"), 40, 7, 7});
  const ir::ValueId r = net.input("r", {ir::Dim::symbol("n"), 12, 7, 7});
  // K = 40 in two slices of 32 and 8; the reduction stores through the Add.
  const ir::ValueId y = dwpw(net, x, {.c = 40, .pw_hint = "tile=16x16,split_k=2"}, r);
  expect_fused(net.finish({y}),
               {{random_tensor({1, 40, 7, 7}, 46), random_tensor({1, 12, 7, 7}, 47)},
                {random_tensor({3, 40, 7, 7}, 48), random_tensor({3, 12, 7, 7}, 49)}},
               {.dispatches = 2, .name = "dwpw_splitk_reduce+add"});
}

// dw with pads only at the end (explicit, or SAME_UPPER over an even size
// with stride 2) and symbolic spatial dims: the last window reaches past
// the input.
TEST_F(FusionEpilogue, DwPwWithEndPadsAndSamePads) {
  for (const bool same : {false, true}) {
    Net net;
    const ir::Dim h = ir::Dim::symbol("h"), w = ir::Dim::symbol("w");
    const ir::ValueId x = net.input("x", {1, 8, h, w});
    std::map<std::string, ir::Attribute> attrs = {{"group", one(8)}, {"strides", ints({2, 2})}};
    if (same) attrs["auto_pad"] = ir::Attribute::of_string("SAME_UPPER");
    else attrs["pads"] = ints({0, 0, 1, 1});
    const ir::ValueId d = net.op("Conv", {x, net.constant(random_tensor({8, 1, 3, 3}, 50, -0.5f, 0.5f))}, attrs);
    const ir::ValueId c = net.op("Clip", {d, net.scalar(-0.3f), net.scalar(0.3f)});
    const ir::ValueId p = net.op("Conv", {c, net.constant(random_tensor({12, 8, 1, 1}, 51))});
    net.g.node(net.last).annotations[kKernelKey] = "tile=16x16";
    expect_fused(net.finish({p}), {{random_tensor({1, 8, 8, 10}, 52)}, {random_tensor({1, 8, 6, 6}, 53)}},
                 {.name = "dwpw_tile16x16"});
  }
}

TEST_F(FusionEpilogue, DwPwImageOutputThroughTheGemmScratchCopy) {
  Net net;
  const ir::ValueId x = net.input("x", {1, 8, 9, 9});
  const ir::ValueId r = net.input("r", {1, 12, 9, 9});
  const ir::ValueId y = dwpw(net, x, {}, r);
  net.g.value(y).annotations[kPackedAxisKey] = "3";
  expect_fused(net.finish({y}), {{random_tensor({1, 8, 9, 9}, 48), random_tensor({1, 12, 9, 9}, 49)}},
               {.name = "dwpw_", .image_dispatches = 2, .image_name = "gemm_copy_out+add"});
}

// Group shape 5 (planner/fusion_conv_sum.h): a residual block's last 1x1
// conv y [n, 12, 8, 8] -> 24 and its projection shortcut x [n, 16, 15, 15]
// -> 24 at stride 2, added (either order), then the tail.
ir::ValueId conv_sum(Net& net, ir::ValueId y, ir::ValueId x, bool biases, bool shortcut_first) {
  const ir::ValueId a = conv(net, y, 12, 24, 1, 1, 0, 1, biases, 61);
  const ir::ValueId b = conv(net, x, 16, 24, 1, 2, 0, 1, biases, 63);
  return net.op("Add", shortcut_first ? std::vector<ir::ValueId>{b, a} : std::vector<ir::ValueId>{a, b});
}

TEST_F(FusionEpilogue, ProjectionShortcutAndLastConvAreOneGemm) {
  Net net;
  const ir::ValueId y = net.input("y", {1, 12, 8, 8});
  const ir::ValueId x = net.input("x", {1, 16, 15, 15});
  const ir::ValueId r = net.op("Relu", {conv_sum(net, y, x, /*biases=*/true, /*shortcut_first=*/false)});
  expect_fused(net.finish({r}), {{random_tensor({1, 12, 8, 8}, 64), random_tensor({1, 16, 15, 15}, 65)}},
               {.name = "convsum_tile", .image_name = "+relu"});
}

TEST_F(FusionEpilogue, ConvSumWithoutBiasesOrTail) {
  Net net;
  const ir::ValueId y = net.input("y", {2, 12, 8, 8});
  const ir::ValueId x = net.input("x", {2, 16, 15, 15});
  const ir::ValueId s = conv_sum(net, y, x, /*biases=*/false, /*shortcut_first=*/true);
  expect_fused(net.finish({s}), {{random_tensor({2, 12, 8, 8}, 66), random_tensor({2, 16, 15, 15}, 67)}},
               {.name = "convsum_"});
}

TEST_F(FusionEpilogue, ConvSumSplitKAcrossBothConvsAndSymbolicBatch) {
  // K = 12 + 16 in three slices, whose bounds need not be the convs':
  // a slice may read both inputs. A new batch compiles no shader.
  Net net;
  const ir::Dim n = ir::Dim::symbol("n");
  const ir::ValueId y = net.input("y", {n, 12, 8, 8});
  const ir::ValueId x = net.input("x", {n, 16, 15, 15});
  const ir::ValueId s = conv_sum(net, y, x, /*biases=*/true, /*shortcut_first=*/false);
  net.g.node(net.last).annotations[kKernelKey] = "tile=16x16,split_k=3";
  const ir::ValueId r = net.op("Relu", {s});
  expect_fused(net.finish({r}),
               {{random_tensor({1, 12, 8, 8}, 68), random_tensor({1, 16, 15, 15}, 69)},
                {random_tensor({3, 12, 8, 8}, 70), random_tensor({3, 16, 15, 15}, 71)}},
               {.dispatches = 2, .name = "convsum_splitk_reduce+relu"});
}

TEST(FusionConvSumPlan, ATailReadingAConvKeepsTheGroupUnfused) {
  // Relu(conv) + Add(conv, shortcut): the tail reads a conv's own output,
  // which the GEMM never stores; the group is no conv sum, and as an
  // anchor group it has two anchors: it runs node by node, saying why.
  Net net;
  const ir::ValueId y = net.input("y", {1, 12, 8, 8});
  const ir::ValueId x = net.input("x", {1, 16, 15, 15});
  const ir::ValueId a = conv(net, y, 12, 24, 1, 1, 0, 1, false, 61);
  const ir::ValueId b = conv(net, x, 16, 24, 1, 2, 0, 1, false, 63);
  const ir::ValueId s = net.op("Add", {a, b});
  const ir::ValueId r = net.op("Add", {s, net.op("Relu", {a})});
  auto plan = build_plan(net.finish({r}), TargetInfo{}, PlanOptions{});
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_FALSE(plan->fusion_notes.empty());
  EXPECT_EQ(kernel_names(*plan).find("convsum_"), std::string::npos) << kernel_names(*plan);
}

// Group shape 6 (planner/fusion_dw_norm.h): x [n, c, h, w] -> depthwise
// k x k conv (pad k/2, `stride`) -> Transpose [0, 2, 3, 1] -> LayerNorm over
// the c channels; the channels-last values packed on the channels as
// image tensors (what the layout plugin chooses for ConvNeXt).
struct DwNorm {
  int64_t c = 12, k = 7, stride = 1;
  bool dw_bias = true, beta = true;
  std::vector<int> perm = {0, 2, 3, 1};
};

ir::ValueId dw_norm(Net& net, ir::ValueId x, const DwNorm& d) {
  const ir::ValueId v = conv(net, x, d.c, d.c, d.k, d.stride, d.k / 2, /*group=*/d.c, d.dw_bias, 81);
  const ir::ValueId t = net.op("Transpose", {v}, {{"perm", ints({d.perm.begin(), d.perm.end()})}});
  std::vector<ir::ValueId> in = {t, net.constant(random_tensor({d.c}, 83, 0.5f, 1.5f))};
  if (d.beta) in.push_back(net.constant(random_tensor({d.c}, 84)));
  const ir::ValueId n = net.op("LayerNormalization", in, {{"axis", one(-1)}, {"epsilon", ir::Attribute::of_float(1e-6f)}});
  for (ir::ValueId packed : {t, n}) net.g.value(packed).annotations[kPackedAxisKey] = "3";
  return n;
}

TEST_F(FusionEpilogue, DepthwiseTransposeLayerNormIsOneKernel) {
  // W = 10: the last workgroup's pixels run past the row.
  Net net;
  const ir::ValueId x = net.input("x", {1, 12, 9, 10});
  const ir::ValueId y = dw_norm(net, x, {});
  expect_fused(net.finish({y}), {{random_tensor({1, 12, 9, 10}, 85)}},
               {.name = "fused_depthwise_transpose_layer_norm", .tol_f16 = 3e-2});
}

TEST_F(FusionEpilogue, DwNormOddChannelsStride2AndSymbolicSizesCompileOnce) {
  // 10 channels (a partial block of four), stride 2, no biases; a new
  // batch and image size compile no shader.
  Net net;
  const ir::Dim n = ir::Dim::symbol("n"), h = ir::Dim::symbol("h"), w = ir::Dim::symbol("w");
  const ir::ValueId x = net.input("x", {n, 10, h, w});
  const ir::ValueId y = dw_norm(net, x, {.c = 10, .k = 3, .stride = 2, .dw_bias = false, .beta = false});
  expect_fused(net.finish({y}), {{random_tensor({1, 10, 8, 9}, 86)}, {random_tensor({2, 10, 13, 6}, 87)}},
               {.name = "fused_depthwise_transpose_layer_norm", .tol_f16 = 3e-2});
}

TEST(FusionDwNormPlan, ManyComputeUnitsGetOneOutputPerInvocation) {
  // A GPU's many compute units: one output per invocation, pixels fastest;
  // a CPU device's few: eight outputs per invocation from register spans.
  // (ShaderTemplateKernels compiles both to SPIR-V.)
  for (const uint32_t units : {132u, 2u}) {
    Net net;
    const ir::ValueId x = net.input("x", {1, 96, 56, 56});
    const ir::ValueId y = dw_norm(net, x, {.c = 96});
    TargetInfo target;
    target.compute_units = units;
    auto plan = build_plan(net.finish({y}), target, PlanOptions{});
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    ASSERT_EQ(plan->dispatch_count(), 1u) << kernel_names(*plan);
    auto glsl = generate_glsl(plan->steps.back().kernel, target);
    ASSERT_TRUE(glsl.ok()) << glsl.status().to_string();
    EXPECT_NE(glsl->glsl.find(units > 16 ? "const int R = 1," : "const int R = 8,"), std::string::npos) << units;
  }
}

TEST(FusionDwNormPlan, AnotherTransposeRunsAsTheConvThenTheNormWithItsView) {
  // Transpose [0, 3, 2, 1]: the norm's rows are no pixels of an image row;
  // the group runs as the conv, then the norm reading it through the view.
  Net net;
  const ir::ValueId x = net.input("x", {1, 12, 9, 10});
  const ir::ValueId y = dw_norm(net, x, {.perm = {0, 3, 2, 1}});
  auto plan = build_plan(net.finish({y}), TargetInfo{}, PlanOptions{});
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  ASSERT_EQ(plan->fusion_notes.size(), 1u);
  EXPECT_NE(plan->fusion_notes[0].find("runs as two groups"), std::string::npos)
      << plan->fusion_notes[0];
  EXPECT_EQ(plan->dispatch_count(), 2u) << kernel_names(*plan);
  EXPECT_NE(kernel_names(*plan).find("fused_transpose_layer_norm"), std::string::npos) << kernel_names(*plan);
}

// Group shape 7 (planner/fusion_squeeze_excite.h): x [n, c, h, w] ->
// GlobalAveragePool -> 1x1 conv to r hidden units (bias) -> SiLU or Relu ->
// 1x1 conv back to c (bias) -> Sigmoid, the per-channel scale.
ir::ValueId squeeze_excite(Net& net, ir::ValueId x, int64_t c, int64_t r, bool silu) {
  const ir::ValueId p = net.op("GlobalAveragePool", {x});
  const ir::ValueId h = conv(net, p, c, r, 1, 1, 0, 1, true, 91);
  const ir::ValueId a = silu ? net.op("Mul", {h, net.op("Sigmoid", {h})}) : net.op("Relu", {h});
  return net.op("Sigmoid", {conv(net, a, r, c, 1, 1, 0, 1, true, 93)});
}

TEST_F(FusionEpilogue, SqueezeExciteIsThePoolAndOneKernel) {
  // 13 x 11 pixels: no multiple of a subgroup's lanes; batch 2.
  Net net;
  const ir::ValueId x = net.input("x", {2, 40, 13, 11});
  const ir::ValueId y = squeeze_excite(net, x, 40, 10, true);
  expect_fused(net.finish({y}), {{random_tensor({2, 40, 13, 11}, 95)}},
               {.dispatches = 2, .name = "fused_excite+sigmoid+mul+sigmoid"});
}

TEST_F(FusionEpilogue, SqueezeExciteSymbolicSizesCompileOnce) {
  // 30 channels (a partial block of four), Relu; a new batch and image
  // size compile no shader.
  Net net;
  const ir::Dim n = ir::Dim::symbol("n"), h = ir::Dim::symbol("h"), w = ir::Dim::symbol("w");
  const ir::ValueId x = net.input("x", {n, 30, h, w});
  const ir::ValueId y = squeeze_excite(net, x, 30, 8, false);
  expect_fused(net.finish({y}), {{random_tensor({1, 30, 7, 9}, 96)}, {random_tensor({3, 30, 20, 5}, 97)}},
               {.dispatches = 2, .name = "fused_excite+relu+sigmoid"});
}

TEST(FusionSqueezeExcitePlan, APooledValueReadOutsideRunsUnfused) {
  // The pool's output is also a graph output: the group runs unfused and says why.
  Net net;
  const ir::ValueId x = net.input("x", {1, 16, 6, 6});
  const ir::ValueId y = squeeze_excite(net, x, 16, 4, true);
  const ir::ValueId pooled = net.g.node(0).outputs[0];  // the first node made: the pool
  auto plan = build_plan(net.finish({y, pooled}), TargetInfo{}, PlanOptions{});
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  ASSERT_EQ(plan->fusion_notes.size(), 1u);
  EXPECT_NE(plan->fusion_notes[0].find("is a graph output"), std::string::npos) << plan->fusion_notes[0];
  EXPECT_EQ(kernel_names(*plan).find("fused_excite"), std::string::npos) << kernel_names(*plan);
}

// Group shape 8 (planner/fusion_scaled_conv.h): x [n, c, h, w] times a
// per-channel scale s, read only by a 1x1 conv (squeeze-excite's end and
// the block's projection), then a tail.
TEST_F(FusionEpilogue, ScaledConvReadsItsInputTimesTheScale) {
  Net net;
  const ir::ValueId x = net.input("x", {2, 24, 7, 9});
  const ir::ValueId s = net.input("s", {2, 24, 1, 1});
  const ir::ValueId r = net.input("r", {2, 16, 7, 9});
  const ir::ValueId m = net.op("Mul", {x, s});
  const ir::ValueId y = net.op("Add", {conv(net, m, 24, 16, 1, 1, 0, 1, true, 99), r});
  expect_fused(net.finish({y}),
               {{random_tensor({2, 24, 7, 9}, 101), random_tensor({2, 24, 1, 1}, 102), random_tensor({2, 16, 7, 9}, 103)}},
               {.name = "scaledconv_"});
}

TEST_F(FusionEpilogue, ScaledConvStridedScaleFirstSymbolicBatch) {
  // Mul(s, x) with one scale for the whole batch, stride 2; a new batch
  // and image size compile no shader.
  Net net;
  const ir::Dim n = ir::Dim::symbol("n"), h = ir::Dim::symbol("h"), w = ir::Dim::symbol("w");
  const ir::ValueId x = net.input("x", {n, 12, h, w});
  const ir::ValueId s = net.input("s", {1, 12, 1, 1});
  const ir::ValueId m = net.op("Mul", {s, x});
  const ir::ValueId y = net.op("Relu", {conv(net, m, 12, 20, 1, 2, 0, 1, false, 104)});
  expect_fused(net.finish({y}),
               {{random_tensor({1, 12, 9, 8}, 105), random_tensor({1, 12, 1, 1}, 106)},
                {random_tensor({3, 12, 6, 11}, 107), random_tensor({1, 12, 1, 1}, 108)}},
               {.name = "scaledconv_"});
}

// Group shape 9 (planner/fusion_norm_gemm.h): LayerNormalization(x) read
// only by a MatMul with a constant weight, then a tail; the GEMM computes
// its tile rows' statistics and reads the normalized rows. `k` columns,
// `rows` leading dims of x; `beta` adds the norm's bias.
ir::ValueId norm_gemm_block(Net& net, ir::ValueId x, int64_t k, int64_t n, bool beta) {
  std::vector<ir::ValueId> in = {x, net.constant(random_tensor({k}, 41, 0.5f, 1.5f))};
  if (beta) in.push_back(net.constant(random_tensor({k}, 42)));
  const ir::ValueId z = net.op("LayerNormalization", std::move(in),
                               {{"axis", one(-1)}, {"epsilon", ir::Attribute::of_float(1e-5f)}});
  const ir::ValueId mm = net.op("MatMul", {z, net.constant(random_tensor({k, n}, 43, -0.3f, 0.3f))});
  return net.op("Relu", {net.op("Add", {mm, net.constant(random_tensor({n}, 44))})});
}

TEST_F(FusionEpilogue, NormGemmNormalizesTheRowsItStages) {
  // Rows far from zero (mean ~40, spread ~5): the statistics' shifted sums
  // keep their digits. An image output packed on its last axis (N) takes
  // the GEMM's stores directly.
  Net net;
  const ir::ValueId y = norm_gemm_block(net, net.input("x", {2, 20, 96}), 96, 64, true);
  expect_fused(net.finish({y}), {{random_tensor({2, 20, 96}, 45, 35.0f, 45.0f)}},
               {.dispatches = 1, .name = "normmatmul_"});
}

TEST_F(FusionEpilogue, NormGemmSplitKSymbolicRowsNoBias) {
  // K split in slices (each slice's workgroups still normalize by the
  // whole row), rows symbolic: a new count compiles no shader.
  Net net;
  const ir::Dim r = ir::Dim::symbol("r");
  const ir::ValueId y = norm_gemm_block(net, net.input("x", {r, 7, 72}), 72, 40, false);
  for (size_t i = 0; i < net.g.num_nodes(); ++i)
    if (net.g.node(static_cast<ir::NodeId>(i)).op == "MatMul")
      net.g.node(static_cast<ir::NodeId>(i)).annotations[kKernelKey] = "split_k=3,splitk_reduce=separate";
  expect_fused(net.finish({y}), {{random_tensor({3, 7, 72}, 46, -2.0f, 3.0f)}, {random_tensor({5, 7, 72}, 47)}},
               {.dispatches = 2, .name = "normmatmul_splitk"});
}

TEST_F(FusionEpilogue, NormGemmThroughAChannelsLastView) {
  // ConvNeXt's block: an NCHW map viewed channels-last (Transpose), its
  // norm over the channels (K = 36, no multiple of 8), the first Linear.
  // Its image output is packed on the channels of the NCHW layout, not N:
  // the GEMM stores a row-major scratch that a copy moves.
  Net net;
  const ir::ValueId x = net.input("x", {1, 36, 5, 6});
  const ir::ValueId t = net.op("Transpose", {x}, {{"perm", ints({0, 2, 3, 1})}});
  const ir::ValueId y = norm_gemm_block(net, t, 36, 48, true);
  expect_fused(net.finish({y}), {{random_tensor({1, 36, 5, 6}, 48, -1.0f, 3.0f)}},
               {.dispatches = 1, .name = "fused_transpose_normmatmul_", .image_dispatches = 2,
                .image_name = "gemm_copy_out+add+relu"});
}

TEST_F(FusionEpilogue, NormGemmWhoseNormIsReadByTheTailRunsUnfused) {
  Net net;
  const ir::ValueId x = net.input("x", {4, 32});
  const ir::ValueId z = net.op("LayerNormalization", {x, net.constant(random_tensor({32}, 49, 0.5f, 1.5f))},
                               {{"axis", one(-1)}});
  const ir::ValueId mm = net.op("MatMul", {z, net.constant(random_tensor({32, 32}, 50))});
  const ir::ValueId y = net.op("Add", {mm, z});
  auto plan = build_plan(net.finish({y}), TargetInfo{}, PlanOptions{});
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  ASSERT_EQ(plan->fusion_notes.size(), 1u);
  EXPECT_EQ(kernel_names(*plan).find("normmatmul"), std::string::npos) << kernel_names(*plan);
}

// Group shape 4 (planner/fusion_row_norm.h): a transformer's fc2 -> bias ->
// residual add -> LayerNormalization. x [1, 20, 96] @ W [96, 64] split in
// `slices` (0: unsplit), the residual stream X = . + b + r, Z = LN(X).
ir::ValueId row_norm_block(Net& net, int slices, ir::ValueId* stream) {
  const ir::ValueId x = net.input("x", {1, 20, 96});
  const ir::ValueId r = net.input("r", {1, 20, 64});
  const ir::ValueId mm = net.op("MatMul", {x, net.constant(random_tensor({96, 64}, 31, -0.3f, 0.3f))});
  if (slices) net.g.node(net.last).annotations[kKernelKey] = "split_k=" + std::to_string(slices) + ",splitk_reduce=separate";
  const ir::ValueId biased = net.op("Add", {mm, net.constant(random_tensor({64}, 32))});
  *stream = net.op("Add", {biased, r});
  return net.op("LayerNormalization",
                {*stream, net.constant(random_tensor({64}, 33, 0.5f, 1.5f)), net.constant(random_tensor({64}, 34))},
                {{"axis", one(-1)}, {"epsilon", ir::Attribute::of_float(1e-5f)}});
}
std::vector<std::vector<Tensor>> row_norm_inputs() {
  return {{random_tensor({1, 20, 96}, 35), random_tensor({1, 20, 64}, 36, -2.0f, 2.0f)}};
}

TEST_F(FusionEpilogue, SplitKReduceAndLayerNormPreNorm) {
  // X read after the group too (the next residual add): the row kernel
  // stores both; image storage keeps the reduce pass and the layer norm.
  Net net;
  ir::ValueId x;
  const ir::ValueId z = row_norm_block(net, 4, &x);
  const ir::ValueId y = net.op("Add", {x, z}, {}, /*grouped=*/false);
  expect_fused(net.finish({y}), row_norm_inputs(),
               {.dispatches = 3, .name = "matmul_splitk_reduce+add+add+layer_norm", .image_dispatches = 4,
                .image_name = "layer_norm"});
}

TEST_F(FusionEpilogue, SplitKReduceAndLayerNormPostNorm) {
  Net net;
  ir::ValueId x;
  const ir::ValueId z = row_norm_block(net, 3, &x);
  expect_fused(net.finish({z}), row_norm_inputs(),
               {.dispatches = 2, .name = "splitk_reduce+add+add+layer_norm", .image_dispatches = 3,
                .image_name = "layer_norm"});
}

TEST_F(FusionEpilogue, UnsplitGemmKeepsItsLayerNorm) {
  // No reduce pass to take the normalization: the GEMM with its tail, then
  // the layer norm's own kernel, as without the group.
  Net net;
  ir::ValueId x;
  const ir::ValueId z = row_norm_block(net, 0, &x);
  expect_fused(net.finish({z}), row_norm_inputs(), {.dispatches = 2, .name = "layer_norm"});
}

TEST(FusionRowNormPlan, FollowsTheDevicesSharedMemoryAndWorkgroupLimits) {
  Net net;
  ir::ValueId x;
  const ir::Graph& g = net.finish({row_norm_block(net, 4, &x)});
  const auto plan_for = [&](const TargetInfo& t) {
    auto plan = build_plan(g, t, PlanOptions{});
    EXPECT_TRUE(plan.ok()) << plan.status().to_string();
    return plan.ok() ? std::move(*plan) : ExecutionPlan{};
  };
  TargetInfo small_wg;
  small_wg.max_workgroup_invocations = 64;
  const ExecutionPlan fused = plan_for(small_wg);
  ASSERT_EQ(fused.dispatch_count(), 2u) << kernel_names(fused);
  EXPECT_NE(fused.steps.back().kernel.name.find("+layer_norm"), std::string::npos);
  EXPECT_EQ(fused.steps.back().kernel.local_size[0], 64u);
  // 64 floats of row and 64 vec4 sums do not fit 512 bytes: reduce pass and norm apart.
  TargetInfo tiny = small_wg;
  tiny.max_shared_memory = 512;
  const ExecutionPlan apart = plan_for(tiny);
  EXPECT_EQ(apart.dispatch_count(), 3u) << kernel_names(apart);
  EXPECT_TRUE(apart.fusion_notes.empty());
}

TEST_F(FusionEpilogue, RowNormGroupWhoseStreamIsReadEarlierRunsWithoutItsNorm) {
  // A reader of X placed before the layer norm: the group cannot run where
  // the layer norm stands, so it runs without it (the split MatMul with its
  // bias: 2 dispatches), the Relu and the norm after it, with a note.
  Net net;
  const ir::ValueId x = net.input("x", {1, 20, 96});
  const ir::ValueId mm = net.op("MatMul", {x, net.constant(random_tensor({96, 64}, 31, -0.3f, 0.3f))});
  net.g.node(net.last).annotations[kKernelKey] = "split_k=4,splitk_reduce=separate";
  const ir::ValueId stream = net.op("Add", {mm, net.constant(random_tensor({64}, 32))});
  const ir::ValueId early = net.op("Relu", {stream}, {}, /*grouped=*/false);
  const ir::ValueId z = net.op("LayerNormalization", {stream, net.constant(random_tensor({64}, 33))},
                               {{"axis", one(-1)}});
  const ir::Graph& g = net.finish({early, z});
  runtime::ReferenceExecutor reference(g);
  const std::vector<Tensor> in = {random_tensor({1, 20, 96}, 37)};
  auto want = reference.run(in);
  ASSERT_TRUE(want.ok()) << want.status().to_string();
  auto model = testing::compile_on_test_device(g, {Storage::kBuffer, ElemType::kF32});
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const ExecutionPlan& plan = (*model)->plan();
  ASSERT_EQ(plan.fusion_notes.size(), 1u) << kernel_names(plan);
  EXPECT_NE(plan.fusion_notes[0].find("runs without its LayerNormalization: its input"), std::string::npos)
      << plan.fusion_notes[0];
  EXPECT_EQ(plan.dispatch_count(), 4u) << kernel_names(plan);
  EXPECT_NE(kernel_names(plan).find("matmul_splitk_reduce+add "), std::string::npos) << kernel_names(plan);
  auto got = (*model)->run(in);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  for (size_t j = 0; j < want->size(); ++j)
    for (int64_t i = 0; i < (*want)[j].numel(); ++i)
      ASSERT_NEAR((*want)[j].get_f64(i), (*got)[j].get_f64(i), 1e-4) << "output " << j << " element " << i;
}


// A quantized residual block's end: QLinearConv, then com.microsoft
// QLinearAdd of its uint8 output and the block's uint8 input (what
// fuse-qdq makes of DequantizeLinear -> Add -> Relu -> QuantizeLinear): the
// add runs in the convolution's store (or its split-K reduce pass), its
// quantize.glsl helpers defined once; bit for bit the reference's.
TEST_F(FusionEpilogue, QLinearConvQLinearAddResidual) {
  Net net;
  const ir::ValueId x = net.g.add_input("x", DType::kUInt8, ir::SymShape::from_concrete({1, 32, 8, 8}));
  const ir::ValueId h = net.g.add_input("h", DType::kUInt8, ir::SymShape::from_concrete({1, 40, 8, 8}));
  const auto f32 = [&](float v) { return net.scalar(v); };
  const auto u8 = [&](uint8_t v) { return net.constant(Tensor::from_vector<uint8_t>({}, {v})); };
  std::vector<float> ws;
  for (int i = 0; i < 40; ++i) ws.push_back(0.002f + 0.0001f * static_cast<float>(i));
  const ir::ValueId y = net.op(
      "QLinearConv",
      {x, f32(0.02f), u8(121), net.constant(testing::random_ints<int8_t>({40, 32, 3, 3}, 110, -127, 127)),
       net.constant(Tensor::from_vector<float>({40}, ws)),
       net.constant(Tensor::from_vector<int8_t>({40}, std::vector<int8_t>(40, 0))), f32(0.07f), u8(118),
       net.constant(testing::random_ints<int32_t>({40}, 111, -4000, 4000))},
      {{"pads", ints({1, 1, 1, 1})}});
  const ir::ValueId r = net.op("QLinearAdd", {y, f32(0.07f), u8(118), h, f32(0.05f), u8(130), f32(0.09f), u8(0)});
  net.g.node(net.last).domain = ops::kMicrosoftDomain;
  ir::Graph& g = net.finish({r});
  const std::vector<Tensor> in = {testing::random_ints<uint8_t>({1, 32, 8, 8}, 112, 0, 255),
                                  testing::random_ints<uint8_t>({1, 40, 8, 8}, 113, 0, 255)};
  runtime::ReferenceExecutor reference(g);
  auto want = reference.run(in);
  ASSERT_TRUE(want.ok()) << want.status().to_string();
  for (const testing::BackendConfig& config :
       {testing::BackendConfig{}, testing::BackendConfig{Storage::kImage, ElemType::kF16}}) {
    auto model = testing::compile_on_test_device(g, config);
    ASSERT_TRUE(model.ok()) << config.name() << ": " << model.status().to_string();
    const ExecutionPlan& plan = (*model)->plan();
    const std::string names = kernel_names(plan);
    EXPECT_TRUE(plan.fusion_notes.empty()) << config.name() << ": " << plan.fusion_notes.front();
    EXPECT_NE(names.find("+qlinear_add"), std::string::npos) << config.name() << ": " << names;
    EXPECT_EQ(names.find(" qlinear_add"), std::string::npos) << config.name() << ": " << names;
    auto got = (*model)->run(in);
    ASSERT_TRUE(got.ok()) << config.name() << ": " << got.status().to_string();
    for (int64_t i = 0; i < (*want)[0].numel(); ++i)
      ASSERT_EQ((*want)[0].get_i64(i), (*got)[0].get_i64(i)) << config.name() << " element " << i << " (" << names << ")";
  }
}

}  // namespace
}  // namespace kiln::planner
