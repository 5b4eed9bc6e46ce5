// VulkanModel end to end on the validated test device, with lowerings
// defined here so the runtime is tested independently of the op families:
// placement, barriers, aliases, fallbacks, shape signatures, errors.
#include "engine/runtime/vulkan/vulkan_model.h"

#include <gtest/gtest.h>

#include <thread>

#include "engine/runtime/reference_executor.h"
#include "planner/lowering.h"
#include "platform/vulkan/vk_test_env.h"

namespace kiln::runtime {
namespace {

using planner::KernelDesc;
using planner::LoweringContext;

// y = max(x, 0) and y = a + b (same shapes) as map kernels.
Status lower_relu(LoweringContext& ctx) {
  KernelDesc k;
  k.name = "test_relu";
  k.tensors = {ctx.bind("x", ctx.input(0)), ctx.bind("y", ctx.output(0), true)};
  k.body = "v = max(x_ld(oi), 0.0);";
  ctx.emit(std::move(k));
  return ok_status();
}

Status lower_add(LoweringContext& ctx) {
  if (ctx.input_shape(0).size() != ctx.input_shape(1).size()) return ctx.unsupported("test lowering: no broadcasting");
  for (size_t k = 0; k < ctx.input_shape(0).size(); ++k)
    if (!ctx.input_shape(0)[k].same_as(ctx.input_shape(1)[k])) return ctx.unsupported("test lowering: no broadcasting");
  KernelDesc k;
  k.name = "test_add";
  k.tensors = {ctx.bind("a", ctx.input(0)), ctx.bind("b", ctx.input(1)), ctx.bind("y", ctx.output(0), true)};
  k.body = "v = a_ld(oi) + b_ld(oi);";
  ctx.emit(std::move(k));
  return ok_status();
}

// A view where memory allows (buffers), else a copy (images).
Status lower_identity(LoweringContext& ctx) {
  if (ctx.alias_output(0, ctx.input(0)).ok()) return ok_status();
  KernelDesc k;
  k.name = "test_copy";
  k.tensors = {ctx.bind("x", ctx.input(0)), ctx.bind("y", ctx.output(0), true)};
  k.body = "v = x_ld(oi);";
  ctx.emit(std::move(k));
  return ok_status();
}

// 1-D Slice whose start is a host parameter read from the `starts` input
// per run (step 1; the test keeps bounds in range).
Status lower_slice_1d(LoweringContext& ctx) {
  if (ctx.input_shape(0).size() != 1 || !ctx.input_on_host(1)) return ctx.unsupported("test lowering: 1-D, host starts");
  KernelDesc k;
  k.name = "test_slice";
  k.tensors = {ctx.bind("x", ctx.input(0)), ctx.bind("y", ctx.output(0), true)};
  k.params.push_back({"start", ctx.host_param([](const planner::HostParamInputs& in) -> StatusOr<int64_t> {
                        if (!in.values[1]) return internal_error("starts are not on the host");
                        return in.values[1]->get_i64(0);
                      })});
  k.body = "v = x_ld(start + oi);";
  ctx.emit(std::move(k));
  return ok_status();
}

const planner::LoweringRegistry& test_lowerings() {
  static const planner::LoweringRegistry* r = [] {
    auto* reg = new planner::LoweringRegistry();
    reg->add("", "Relu", lower_relu);
    reg->add("", "Add", lower_add);
    reg->add("", "Identity", lower_identity);
    reg->add("", "Slice", lower_slice_1d);
    return reg;
  }();
  return *r;
}

class VulkanModelTest : public vk::testing::VulkanTest {
 protected:
  StatusOr<std::unique_ptr<VulkanModel>> compile(const ir::Graph& g, planner::Storage storage,
                                                 bool profile = false) {
    VulkanModelOptions options;
    options.plan.storage = storage;
    options.lowerings = &test_lowerings();
    options.profile = profile;
    return VulkanModel::compile(device(), *vk::testing::test_kernel_cache(), g, options);
  }
};

Tensor ramp(const Shape& shape, float scale) {
  Tensor t = Tensor::allocate(DType::kFloat32, shape).value();
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = scale * static_cast<float>((i * 7) % 13 - 6);
  return t;
}

// x -> Relu -> r; r + x -> s; Identity(s) -> y; Exp(y) -> e (no lowering: host).
ir::Graph chain_graph(ir::SymShape shape) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", DType::kFloat32, shape);
  ir::ValueId r = g.add_value("r", DType::kFloat32, shape);
  ir::ValueId s = g.add_value("s", DType::kFloat32, shape);
  ir::ValueId y = g.add_value("y", DType::kFloat32, shape);
  ir::ValueId e = g.add_value("e", DType::kFloat32, shape);
  g.add_node("Relu", {x}, {r});
  g.add_node("Add", {r, x}, {s});
  g.add_node("Identity", {s}, {y});
  g.add_node("Exp", {y}, {e});
  g.add_output(y);
  g.add_output(e);
  return g;
}

void expect_equal(const std::vector<Tensor>& want, const std::vector<Tensor>& got, double tol) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t j = 0; j < want.size(); ++j) {
    ASSERT_EQ(want[j].shape(), got[j].shape()) << "output " << j;
    for (int64_t i = 0; i < want[j].numel(); ++i)
      ASSERT_NEAR(want[j].get_f64(i), got[j].get_f64(i), tol) << "output " << j << " element " << i;
  }
}

TEST_F(VulkanModelTest, ChainMatchesReferenceInBothStorages) {
  ir::Graph g = chain_graph(ir::SymShape::from_concrete({2, 5, 3, 7}));
  ReferenceExecutor reference(g);
  const Tensor x = ramp({2, 5, 3, 7}, 0.25f);
  auto want = reference.run({x});
  ASSERT_TRUE(want.ok()) << want.status().to_string();
  for (planner::Storage storage : {planner::Storage::kBuffer, planner::Storage::kImage}) {
    auto model = compile(g, storage);
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    EXPECT_EQ((*model)->plan().dispatch_count(), storage == planner::Storage::kBuffer ? 2u : 3u);
    EXPECT_EQ((*model)->plan().fallback_count(), 1u);  // Exp has no test lowering
    VulkanRunStats stats;
    auto got = (*model)->run({x}, &stats);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    expect_equal(*want, *got, 1e-5);
    EXPECT_EQ(stats.fallbacks, 1u);
    EXPECT_TRUE(stats.recorded);
  }
}

// Image tensors share the activation arena: intermediates that die free
// their memory for later images (each transitioned from UNDEFINED at its
// first write, inside the command buffer), so the arena is far below the
// no-reuse total, and repeated runs with other inputs stay correct (each
// submission discards and rewrites the re-used memory again).
TEST_F(VulkanModelTest, ImagesReuseArenaMemoryAcrossRuns) {
  const ir::SymShape shape = ir::SymShape::from_concrete({1, 8, 24, 24});
  ir::Graph g;
  ir::ValueId v = g.add_input("x", DType::kFloat32, shape);
  for (int i = 0; i < 8; ++i) {
    ir::ValueId next = g.add_value("v" + std::to_string(i), DType::kFloat32, shape);
    if (i % 2 == 0) g.add_node("Relu", {v}, {next});
    else g.add_node("Add", {v, v}, {next});
    v = next;
  }
  g.add_output(v);
  ReferenceExecutor reference(g);
  auto model = compile(g, planner::Storage::kImage);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  for (float scale : {0.25f, -1.5f, 3.0f}) {
    const Tensor x = ramp({1, 8, 24, 24}, scale);
    VulkanRunStats stats;
    auto got = (*model)->run({x}, &stats);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    expect_equal(reference.run({x}).value(), *got, 1e-4);
    EXPECT_EQ(stats.memory.images, "shared");
    EXPECT_GT(stats.memory.image_bytes, 0u);
    // Input, output and at most two intermediates live at once, of nine images.
    EXPECT_LT(stats.memory.arena_bytes * 2, stats.memory.no_reuse_bytes);
    EXPECT_GE(stats.memory.arena_bytes, stats.memory.live_lower_bound);
    EXPECT_LE(stats.memory.arena_bytes, stats.memory.live_lower_bound * 105 / 100);
  }
}

TEST_F(VulkanModelTest, NewShapeRecordsButNeverCompiles) {
  ir::Graph g = chain_graph(ir::SymShape({ir::Dim::symbol("n"), ir::Dim(6)}));
  ReferenceExecutor reference(g);
  auto model = compile(g, planner::Storage::kBuffer, /*profile=*/true);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  for (int64_t n : {3, 17, 3}) {
    const Tensor x = ramp({n, 6}, 0.5f);
    VulkanRunStats stats;
    auto got = (*model)->run({x}, &stats);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    expect_equal(reference.run({x}).value(), *got, 1e-5);
    EXPECT_EQ(stats.shader_compiles, 0u);
    if (stats.gpu_ms >= 0) {
      EXPECT_EQ(stats.kernels.size(), 2u);
      // Bytes are evaluated per signature: every tensor bound is n x 6 fp32.
      for (const KernelTiming& k : stats.kernels) {
        EXPECT_GT(k.bytes, 0u) << k.kernel;
        EXPECT_EQ(k.bytes % static_cast<uint64_t>(n * 6 * 4), 0u) << k.kernel << " n=" << n;
        EXPECT_EQ(k.flops, 0u) << k.kernel;
      }
    }
  }
  // The third run re-used the first signature.
  VulkanRunStats stats;
  ASSERT_TRUE((*model)->run({ramp({3, 6}, 1.0f)}, &stats).ok());
  EXPECT_FALSE(stats.recorded);
}

// Small int inputs are host values: their values key the signature and
// feed host parameters, so new values re-record but never re-plan.
TEST_F(VulkanModelTest, HostValuesFeedKernelParameters) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", DType::kFloat32, ir::SymShape::from_concrete({9}));
  ir::ValueId starts = g.add_input("starts", DType::kInt64, ir::SymShape::from_concrete({1}));
  ir::ValueId ends = g.add_input("ends", DType::kInt64, ir::SymShape::from_concrete({1}));
  ir::ValueId y = g.add_value("y", DType::kFloat32, ir::SymShape({ir::Dim::symbol("len")}));
  g.add_node("Slice", {x, starts, ends}, {y});
  g.add_output(y);
  ReferenceExecutor reference(g);
  auto model = compile(g, planner::Storage::kBuffer);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  EXPECT_EQ((*model)->plan().fallback_count(), 0u);
  EXPECT_EQ((*model)->plan().host_params.size(), 1u);
  const Tensor xv = ramp({9}, 1.0f);
  auto i64 = [](int64_t v) { return Tensor::from_vector<int64_t>({1}, {v}); };
  const std::pair<int64_t, int64_t> runs[] = {{1, 5}, {3, 9}, {1, 5}};
  for (size_t r = 0; r < 3; ++r) {
    const std::vector<Tensor> in = {xv, i64(runs[r].first), i64(runs[r].second)};
    VulkanRunStats stats;
    auto got = (*model)->run(in, &stats);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    expect_equal(reference.run(in).value(), *got, 0.0);
    EXPECT_EQ(stats.shader_compiles, 0u);
    EXPECT_EQ(stats.recorded, r < 2) << "run " << r;
  }
}

TEST_F(VulkanModelTest, BadInputsAreRejectedByName) {
  ir::Graph g = chain_graph(ir::SymShape::from_concrete({4, 4}));
  auto model = compile(g, planner::Storage::kBuffer);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  auto wrong_shape = (*model)->run({ramp({4, 5}, 1.0f)});
  ASSERT_FALSE(wrong_shape.ok());
  EXPECT_NE(wrong_shape.status().message().find("'x'"), std::string::npos) << wrong_shape.status().to_string();
  auto wrong_count = (*model)->run({});
  EXPECT_FALSE(wrong_count.ok());
  Tensor ints = Tensor::allocate(DType::kInt64, {4, 4}).value();
  auto wrong_dtype = (*model)->run({ints});
  ASSERT_FALSE(wrong_dtype.ok());
  EXPECT_NE(wrong_dtype.status().message().find("f32"), std::string::npos) << wrong_dtype.status().to_string();
}

TEST_F(VulkanModelTest, ConcurrentRunsShareOneCompiledModel) {
  ir::Graph g = chain_graph(ir::SymShape({ir::Dim::symbol("n"), ir::Dim(5)}));
  ReferenceExecutor reference(g);
  auto model = compile(g, planner::Storage::kBuffer);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  // Threads run two signatures at once, several times each.
  std::vector<std::thread> threads;
  std::vector<std::string> failures(6);
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      for (int it = 0; it < 4; ++it) {
        const Tensor x = ramp({t % 2 ? 4 : 9, 5}, 0.1f * static_cast<float>(t + 1));
        auto got = (*model)->run({x});
        if (!got.ok()) {
          failures[static_cast<size_t>(t)] = got.status().to_string();
          return;
        }
        const std::vector<Tensor> want = reference.run({x}).value();
        for (size_t j = 0; j < want.size(); ++j)
          for (int64_t i = 0; i < want[j].numel(); ++i)
            if (std::abs(want[j].get_f64(i) - (*got)[j].get_f64(i)) > 1e-5) {
              failures[static_cast<size_t>(t)] = "wrong value in thread " + std::to_string(t);
              return;
            }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (const std::string& f : failures) EXPECT_TRUE(f.empty()) << f;
}

}  // namespace
}  // namespace kiln::runtime
