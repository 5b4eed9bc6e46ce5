// The planner hooks through the plugin ABI: test.force-hooks (loaded from its
// .so like any third party's plugin) sets a MatMul's kernel configuration and
// its output's storage and packed axis, and puts an elementwise chain into
// one fusion group; the compiled plan takes them and the outputs stay those
// of the planner's own choices. Without the plugin (and without kiln.fusion,
// which groups the same chain by itself) the plan is the default one; a
// malformed hint fails the compile naming the node.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "engine/ir/text.h"
#include "engine/session/session.h"
#include "platform/vulkan/vk_test_env.h"

namespace kiln {
namespace {

// y = MatMul(x, w) with a [32, 24] weight, z = Relu(y).
std::string matmul_model() {
  std::string w;
  for (int i = 0; i < 32 * 24; ++i) w += (i ? "," : "") + std::to_string(((i * 37) % 17 - 8) / 8.0);
  return "graph @g opset 17 {\n  input %x : f32[8,32]\n  const %w : f32[32,24] = dense<[" + w +
         "]>\n  %y = MatMul(%x, %w) : f32[8,24]\n  %z = Relu(%y) : f32[8,24]\n  return %z\n}\n";
}

// z = Tanh(Sigmoid(x) * b + x) with b broadcast along the last axis; x of
// shape [n,3,4,8] (n = "2" or a symbol).
std::string chain_model(const std::string& n) {
  const std::string t = " : f32[" + n + ",3,4,8]\n";
  return "graph @g opset 17 {\n  input %x" + t + "  const %b : f32[8] = dense<[0.5,-1,2,0.25,1.5,-0.5,3,1]>\n" +
         "  %s = Sigmoid(%x)" + t + "  %m = Mul(%s, %b)" + t + "  %a = Add(%m, %x)" + t + "  %z = Tanh(%a)" + t +
         "  return %z\n}\n";
}

session::SessionOptions vulkan_options() {
  session::SessionOptions o;
  o.backend = session::BackendChoice::kVulkan;
  o.plugins.load_environment = false;
  o.context_options.validation = vk::Validation::kRequired;
  o.context_options.kernel_cache_dir = "";
  return o;
}

std::string kernel_names(const runtime::VulkanModel& m) {
  std::string names;
  for (const planner::PlanStep& s : m.plan().steps)
    if (s.kind == planner::PlanStep::Kind::kDispatch) names += s.kernel.name + " ";
  return names;
}

const planner::PlanTensor& tensor_of(const session::Session& s, const std::string& value) {
  const ir::ValueId v = s.graph().find_value(value);
  const planner::ExecutionPlan& plan = s.vulkan_model()->plan();
  return plan.tensors[static_cast<size_t>(plan.value_tensor.at(v))];
}

class PlannerHooks : public vk::testing::VulkanTest {};

TEST_F(PlannerHooks, APluginChangesKernelAndStorageNotResults) {
  auto model = ir::parse_graph(matmul_model());
  ASSERT_TRUE(model.ok()) << model.status().to_string();

  auto plain = session::Session::create(**model, vulkan_options());
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();
  session::SessionOptions hooked_options = vulkan_options();
  hooked_options.plugins.plugin_files = {KILN_HOOKS_PLUGIN};
  auto hooked = session::Session::create(**model, hooked_options);
  ASSERT_TRUE(hooked.ok()) << hooked.status().to_string();

  // The plugin ran, from its file, and said what it set.
  bool ran = false;
  for (const registry::PassRecord& r : (*hooked)->pass_records())
    if (r.name == "test.force-hooks") {
      ran = r.committed;
      EXPECT_EQ(r.statistics.at("kernel-configs"), 1);
      EXPECT_EQ(r.statistics.at("storages"), 1);
    }
  ASSERT_TRUE(ran);

  // Default plan: the planner's tile, no K split, a buffer.
  const std::string plain_kernels = kernel_names(*(*plain)->vulkan_model());
  EXPECT_EQ(plain_kernels.find("tile16x16"), std::string::npos) << plain_kernels;
  EXPECT_EQ(plain_kernels.find("splitk"), std::string::npos) << plain_kernels;
  EXPECT_EQ(tensor_of(**plain, "y").layout.storage, planner::Storage::kBuffer);

  // Hooked plan: the plugin's tile and split (its slices added by the
  // reduce pass, the default), an image packed along axis 0.
  const std::string hooked_kernels = kernel_names(*(*hooked)->vulkan_model());
  EXPECT_NE(hooked_kernels.find("splitk_tile16x16"), std::string::npos) << hooked_kernels;
  EXPECT_NE(hooked_kernels.find("splitk_reduce"), std::string::npos) << hooked_kernels;
  const planner::PlanTensor& y = tensor_of(**hooked, "y");
  EXPECT_EQ(y.layout.storage, planner::Storage::kImage);
  EXPECT_EQ(y.layout.packed_axis, 0);

  Tensor x = Tensor::allocate(DType::kFloat32, {8, 32}).value();
  for (int64_t i = 0; i < x.numel(); ++i) x.set_f64(i, std::sin(0.1 * static_cast<double>(i)));
  auto a = (*plain)->run({x});
  auto b = (*hooked)->run({x});
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  ASSERT_EQ((*a)[0].shape(), (*b)[0].shape());
  // The K split adds the products in another order: equal up to rounding.
  for (int64_t i = 0; i < (*a)[0].numel(); ++i)
    EXPECT_NEAR((*a)[0].get_f64(i), (*b)[0].get_f64(i), 1e-5 * (1.0 + std::fabs((*a)[0].get_f64(i)))) << i;
  EXPECT_EQ((*hooked)->vulkan_context()->validation_errors(), 0u);
}

TEST_F(PlannerHooks, AFusionGroupIsOneKernelWithTheSameResults) {
  Tensor x = Tensor::allocate(DType::kFloat32, {2, 3, 4, 8}).value();
  for (int64_t i = 0; i < x.numel(); ++i) x.set_f64(i, 3.0 * std::sin(0.37 * static_cast<double>(i)));
  int configs = 0;
  for (const std::string n : {"2", "n"}) {
    for (planner::Storage storage : {planner::Storage::kBuffer, planner::Storage::kImage})
      for (planner::ElemType precision : {planner::ElemType::kF32, planner::ElemType::kF16}) {
        auto model = ir::parse_graph(chain_model(n));
        ASSERT_TRUE(model.ok()) << model.status().to_string();
        const std::string config = "[" + n + ",3,4,8] " + planner::storage_name(storage) + "/" +
                                   planner::elem_type_name(precision);
        session::SessionOptions options = vulkan_options();
        options.vulkan.plan.storage = storage;
        options.vulkan.plan.precision = precision;
        // kiln.fusion would group the chain itself (checked below): without
        // it only the plugin's group is left.
        auto fused_by_default = session::Session::create(**model, options);
        options.pipeline.disabled = {"fusion"};
        auto plain = session::Session::create(**model, options);
        if (!plain.ok() && precision == planner::ElemType::kF16 &&
            plain.status().code() == StatusCode::kUnimplemented)
          continue;  // no 16-bit storage on this device
        ASSERT_TRUE(plain.ok()) << config << ": " << plain.status().to_string();
        options.plugins.plugin_files = {KILN_HOOKS_PLUGIN};
        auto hooked = session::Session::create(**model, options);
        ASSERT_TRUE(hooked.ok()) << config << ": " << hooked.status().to_string();

        // Four map kernels become one, which writes only z.
        const planner::ExecutionPlan& a = (*plain)->vulkan_model()->plan();
        const planner::ExecutionPlan& b = (*hooked)->vulkan_model()->plan();
        EXPECT_EQ(a.dispatch_count(), 4u) << config << ": " << kernel_names(*(*plain)->vulkan_model());
        EXPECT_EQ(b.dispatch_count(), a.dispatch_count() - 3) << config;
        EXPECT_EQ(kernel_names(*(*hooked)->vulkan_model()), "fused_sigmoid_mul_add_tanh ") << config;
        EXPECT_TRUE(b.fusion_notes.empty()) << config << ": " << b.fusion_notes.front();
        // The default pipeline's fusion pass makes the same group.
        ASSERT_TRUE(fused_by_default.ok()) << config << ": " << fused_by_default.status().to_string();
        EXPECT_EQ(kernel_names(*(*fused_by_default)->vulkan_model()), "fused_sigmoid_mul_add_tanh ") << config;

        runtime::RunStats sa, sb;
        auto ra = (*plain)->run({x}, &sa);
        auto rb = (*hooked)->run({x}, &sb);
        ASSERT_TRUE(ra.ok()) << config << ": " << ra.status().to_string();
        ASSERT_TRUE(rb.ok()) << config << ": " << rb.status().to_string();
        // The run statistics count the fused kernel, which moves less.
        EXPECT_EQ(sa.fused_dispatches, 0u) << config;
        EXPECT_EQ(sb.dispatches, 1u) << config;
        EXPECT_EQ(sb.fused_dispatches, 1u) << config;
        EXPECT_LT(sb.bytes_read + sb.bytes_written, sa.bytes_read + sa.bytes_written) << config;
        ASSERT_EQ((*ra)[0].shape(), (*rb)[0].shape());
        // fp32: the same float operations (lavapipe gives the same bits; a
        // driver may contract a * b + c across the fused bodies); fp16: the
        // unfused plan rounds each intermediate to half, the fused one does not.
        const double tol = precision == planner::ElemType::kF32 ? 1e-6 : 4e-3;
        for (int64_t i = 0; i < (*ra)[0].numel(); ++i)
          EXPECT_NEAR((*ra)[0].get_f64(i), (*rb)[0].get_f64(i), tol) << config << " element " << i;
        EXPECT_EQ((*hooked)->vulkan_context()->validation_errors(), 0u) << config;
        ++configs;
      }
  }
  RecordProperty("configs", configs);  // 8 where the device has 16-bit storage
  EXPECT_GE(configs, 4);
}

TEST_F(PlannerHooks, AMalformedHintFailsNamingTheNode) {
  auto model = ir::parse_graph(matmul_model());
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  for (size_t i = 0; i < (*model)->num_nodes(); ++i) {
    ir::Node& n = (*model)->node(static_cast<ir::NodeId>(i));
    if (n.op == "MatMul") {
      n.name = "the_matmul";
      n.annotations[KILN_ANNOTATION_KERNEL] = "tile=7x7";
    }
  }
  auto s = session::Session::create(**model, vulkan_options());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("the_matmul"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("kiln.kernel"), std::string::npos) << s.status().message();
}

TEST_F(PlannerHooks, AnAxisOutsideTheRankFailsNamingTheValue) {
  auto model = ir::parse_graph(matmul_model());
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  (*model)->value((*model)->find_value("y")).annotations[KILN_ANNOTATION_PACKED_AXIS] = "5";
  auto s = session::Session::create(**model, vulkan_options());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("'y'"), std::string::npos) << s.status().message();
}

}  // namespace
}  // namespace kiln
