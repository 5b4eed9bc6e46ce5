// A plan compiled on one thread and on several gives the same model: the same
// pipelines and counters, the same outputs; a kernel that fails to compile is
// named (kernel and node) whatever the thread count. Once compiled, the
// weights the lowerings repacked live on the device only.
#include <gtest/gtest.h>

#include "engine/runtime/reference_executor.h"
#include "engine/runtime/vulkan/vulkan_model.h"
#include "planner/lowering.h"
#include "platform/vulkan/vk_test_env.h"

namespace kiln::runtime {
namespace {

class ParallelCompileTest : public vk::testing::VulkanTest {
 protected:
  void SetUp() override {
    VulkanTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    auto compiler = vk::ShaderCompiler::create();
    ASSERT_TRUE(compiler.ok());
    compiler_ = std::move(compiler).value();
  }
  void TearDown() override {
    caches_.clear();
    compiler_.reset();
    VulkanTest::TearDown();
  }
  // A fresh memory-only cache, so every compile starts cold.
  vk::KernelCache& fresh_cache() {
    vk::KernelCacheOptions o;
    o.use_disk = false;
    caches_.push_back(vk::KernelCache::open(device(), *compiler_, o).value());
    return *caches_.back();
  }
  std::unique_ptr<vk::ShaderCompiler> compiler_;
  std::vector<std::unique_ptr<vk::KernelCache>> caches_;
};

// Several distinct kernels, some ops repeated (equal kernels share a shader).
ir::Graph many_kernels_graph() {
  const ir::SymShape shape = ir::SymShape::from_concrete({2, 3, 5, 7});
  ir::Graph g;
  ir::ValueId v = g.add_input("x", DType::kFloat32, shape);
  const char* ops[] = {"Relu", "Sigmoid", "Tanh", "Abs", "Neg", "Relu", "Sigmoid", "Softsign"};
  int n = 0;
  for (const char* op : ops) {
    ir::ValueId next = g.add_value("v" + std::to_string(n++), DType::kFloat32, shape);
    g.add_node(op, {v}, {next});
    ir::ValueId sum = g.add_value("v" + std::to_string(n++), DType::kFloat32, shape);
    g.add_node(n % 4 == 0 ? "Mul" : "Add", {next, v}, {sum});
    v = sum;
  }
  g.add_output(v);
  return g;
}

TEST_F(ParallelCompileTest, RepackedWeightsLeaveTheHostOnceUploaded) {
  ir::Graph g;
  const ir::ValueId x = g.add_input("x", DType::kFloat32, ir::SymShape::from_concrete({1, 8, 6, 6}));
  Tensor w = Tensor::allocate(DType::kFloat32, {16, 8, 3, 3}).value();
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = 0.01f * static_cast<float>(i % 23 - 11);
  const ir::ValueId wv = g.add_constant("w", w);
  const ir::ValueId y = g.add_value("y", DType::kFloat32, ir::SymShape::from_concrete({1, 16, 4, 4}));
  g.add_node("Conv", {x, wv}, {y});
  g.add_output(y);
  Tensor input = Tensor::allocate(DType::kFloat32, {1, 8, 6, 6}).value();
  for (int64_t i = 0; i < input.numel(); ++i) input.data<float>()[i] = 0.1f * static_cast<float>(i % 13 - 6);
  ReferenceExecutor reference(g);
  auto want = reference.run({input});
  ASSERT_TRUE(want.ok()) << want.status().to_string();

  auto model = VulkanModel::compile(device(), fresh_cache(), g, VulkanModelOptions{});
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  // The conv's repacked weight keeps its shape (runs size their memory by
  // it) but no host data; the graph's initializer is the graph's own.
  size_t repacked = 0;
  for (const planner::PlanTensor& t : (*model)->plan().tensors) {
    if (t.origin != planner::PlanTensor::Origin::kConstant) continue;
    ++repacked;
    EXPECT_TRUE(t.constant.defined());
    EXPECT_GT(t.constant.numel(), 0);
    EXPECT_EQ(t.constant.raw_data(), nullptr);
  }
  EXPECT_GE(repacked, 1u);
  EXPECT_NE(g.value(wv).constant.raw_data(), nullptr);
  for (int round = 0; round < 2; ++round) {  // and every run reads them from the device
    auto got = (*model)->run({input});
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    ASSERT_EQ(got->size(), 1u);
    for (int64_t i = 0; i < (*want)[0].numel(); ++i)
      ASSERT_NEAR((*want)[0].get_f64(i), (*got)[0].get_f64(i), 1e-4) << "round " << round << " element " << i;
  }
}

TEST_F(ParallelCompileTest, SameModelOnOneThreadAndOnSeveral) {
  const ir::Graph g = many_kernels_graph();
  Tensor x = Tensor::allocate(DType::kFloat32, {2, 3, 5, 7}).value();
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 0.1f * static_cast<float>(i % 17 - 8);
  ReferenceExecutor reference(g);
  auto want = reference.run({x});
  ASSERT_TRUE(want.ok()) << want.status().to_string();

  std::vector<VulkanCompileStats> stats;
  for (unsigned threads : {1u, 4u}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    VulkanModelOptions options;
    options.compile_threads = threads;
    auto model = VulkanModel::compile(device(), fresh_cache(), g, options);
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    auto got = (*model)->run({x});
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    ASSERT_EQ(got->size(), 1u);
    for (int64_t i = 0; i < x.numel(); ++i) ASSERT_NEAR((*want)[0].get_f64(i), (*got)[0].get_f64(i), 1e-5) << i;
    stats.push_back((*model)->compile_stats());
  }
  EXPECT_EQ(stats[0].compile_threads, 1u);
  EXPECT_GT(stats[1].compile_threads, 1u);
  EXPECT_GE(stats[0].kernels, 6u);
  EXPECT_EQ(stats[0].kernels, stats[1].kernels);
  EXPECT_EQ(stats[0].shader_compiles, stats[1].shader_compiles);
  EXPECT_EQ(stats[0].shader_cache_hits, stats[1].shader_cache_hits);
  EXPECT_GT(stats[0].shader_cache_hits, 0u);  // the repeated ops
  EXPECT_EQ(caches_[0]->stats().pipelines_created, caches_[1]->stats().pipelines_created);
  EXPECT_EQ(caches_[0]->stats().pipeline_hits, caches_[1]->stats().pipeline_hits);
}

// Relu lowers to GLSL that does not compile.
Status lower_broken(planner::LoweringContext& ctx) {
  planner::KernelDesc k;
  k.name = "test_broken";
  k.tensors = {ctx.bind("x", ctx.input(0)), ctx.bind("y", ctx.output(0), true)};
  k.body = "v = no_such_variable;";
  ctx.emit(std::move(k));
  return ok_status();
}

Status lower_neg(planner::LoweringContext& ctx) {
  planner::KernelDesc k;
  k.name = "test_neg";
  k.tensors = {ctx.bind("x", ctx.input(0)), ctx.bind("y", ctx.output(0), true)};
  k.body = "v = -x_ld(oi);";
  ctx.emit(std::move(k));
  return ok_status();
}

TEST_F(ParallelCompileTest, AFailingKernelIsNamedWithItsNode) {
  planner::LoweringRegistry lowerings;
  lowerings.add("", "Neg", lower_neg);
  lowerings.add("", "Relu", lower_broken);
  const ir::SymShape shape = ir::SymShape::from_concrete({64});
  ir::Graph g;
  ir::ValueId v = g.add_input("x", DType::kFloat32, shape);
  ir::ValueId a = g.add_value("a", DType::kFloat32, shape);
  ir::ValueId b = g.add_value("b", DType::kFloat32, shape);
  ir::ValueId c = g.add_value("c", DType::kFloat32, shape);
  g.add_node("Neg", {v}, {a}, {}, "fine_node");
  g.add_node("Relu", {a}, {b}, {}, "broken_node");
  g.add_node("Relu", {b}, {c}, {}, "broken_again");
  g.add_output(c);
  for (unsigned threads : {1u, 2u, 4u}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    VulkanModelOptions options;
    options.compile_threads = threads;
    options.lowerings = &lowerings;
    auto model = VulkanModel::compile(device(), fresh_cache(), g, options);
    ASSERT_FALSE(model.ok());
    const std::string message = model.status().to_string();
    EXPECT_NE(message.find("test_broken"), std::string::npos) << message;
    EXPECT_NE(message.find("no_such_variable"), std::string::npos) << message;
    EXPECT_NE(message.find("broken_node"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace kiln::runtime
