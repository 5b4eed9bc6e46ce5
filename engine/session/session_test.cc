// The engine session: the pipeline runs on the session's own copy of the
// graph, options select and disable passes, plugin errors name the file, and
// Vulkan and reference sessions of one model agree.
#include "engine/session/session.h"

#include <gtest/gtest.h>

#include "engine/ir/text.h"
#include "engine/registry/testdata/two_level_folding.h"
#include "engine/runtime/reference_executor.h"
#include "engine/runtime/vulkan/vulkan_model.h"
#include "platform/vulkan/vk_test_env.h"

namespace kiln::session {
namespace {

using registry::testdata::kTwoLevelFolding;

std::unique_ptr<ir::Graph> parse(const char* text) {
  auto g = ir::parse_graph(text);
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  return g.ok() ? std::move(g).value() : nullptr;
}

// Runs `session` and the reference executor on the unoptimized `model` with
// the same input; the outputs must be equal.
void expect_same_as_unoptimized(const ir::Graph& model, const Session& session, runtime::RunStats* stats) {
  Tensor x = Tensor::from_vector<float>({1, 2}, {1.0f, 2.0f});
  auto expected = runtime::ReferenceExecutor(model).run({x});
  ASSERT_TRUE(expected.ok());
  auto out = session.run({x}, stats);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  ASSERT_EQ((*out)[0].shape(), (*expected)[0].shape());
  for (int64_t i = 0; i < (*out)[0].numel(); ++i) EXPECT_EQ((*out)[0].get_f64(i), (*expected)[0].get_f64(i));
}

SessionOptions reference_options() {
  SessionOptions o;
  o.backend = BackendChoice::kReference;
  o.plugins.load_environment = false;
  return o;
}

TEST(Session, RunsTheDefaultPipelineOnItsOwnCopy) {
  auto model = parse(kTwoLevelFolding);
  ASSERT_TRUE(model);
  const size_t nodes_before = model->num_live_nodes();
  auto s = Session::create(*model, reference_options());
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ(model->num_live_nodes(), nodes_before) << "the model itself must not change";
  EXPECT_EQ((*s)->graph().num_live_nodes(), 2u) << ir::print_graph((*s)->graph());  // Pad, Add
  EXPECT_EQ((*s)->backend(), "reference");
  ASSERT_FALSE((*s)->pass_records().empty());
  bool folded = false;
  for (const registry::PassRecord& r : (*s)->pass_records())
    folded |= r.name == "fold-constants" && r.committed && !r.statistics.empty();
  EXPECT_TRUE(folded);

  runtime::RunStats stats;
  expect_same_as_unoptimized(*model, **s, &stats);
  EXPECT_GE(stats.wall_ms, 0.0);
}

TEST(Session, NoPassesLeavesTheGraphAsImported) {
  auto model = parse(kTwoLevelFolding);
  ASSERT_TRUE(model);
  SessionOptions o = reference_options();
  o.run_passes = false;
  auto s = Session::create(*model, o);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_TRUE((*s)->pass_records().empty());
  EXPECT_EQ((*s)->graph().num_live_nodes(), model->num_live_nodes());
}

TEST(Session, DisabledPassesDoNotRun) {
  auto model = parse(kTwoLevelFolding);
  ASSERT_TRUE(model);
  SessionOptions o = reference_options();
  o.pipeline.disabled = {"fold-constants", "fold-shapes"};
  auto s = Session::create(*model, o);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  for (const registry::PassRecord& r : (*s)->pass_records()) {
    EXPECT_NE(r.name, "fold-constants");
    EXPECT_NE(r.name, "fold-shapes");
  }
  EXPECT_GT((*s)->graph().num_live_nodes(), 2u);
}

TEST(Session, AMissingPluginFileIsAnErrorNamingIt) {
  auto model = parse(kTwoLevelFolding);
  ASSERT_TRUE(model);
  SessionOptions o = reference_options();
  o.plugins.plugin_files = {"/nonexistent/libacme_plugin.so"};
  auto s = Session::create(*model, o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("/nonexistent/libacme_plugin.so"), std::string::npos) << s.status().message();
}

TEST(Session, AnUnknownPassIsAnErrorNamingIt) {
  auto model = parse(kTwoLevelFolding);
  ASSERT_TRUE(model);
  SessionOptions o = reference_options();
  o.pipeline.passes = {"cse", "acme.no-such-pass"};
  auto s = Session::create(*model, o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("acme.no-such-pass"), std::string::npos) << s.status().message();
}

class SessionVulkan : public vk::testing::VulkanTest {};

TEST_F(SessionVulkan, VulkanAndReferenceSessionsAgree) {
  auto model = parse(kTwoLevelFolding);
  ASSERT_TRUE(model);
  SessionOptions o;
  o.backend = BackendChoice::kVulkan;
  o.plugins.load_environment = false;
  o.context_options.validation = vk::Validation::kRequired;
  o.context_options.kernel_cache_dir = "";
  auto s = Session::create(*model, o);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ((*s)->backend(), "vulkan");
  ASSERT_NE((*s)->vulkan_model(), nullptr);
  EXPECT_EQ((*s)->compiled().fallback_count(), 0u) << "after folding every node runs on the device";
  EXPECT_GT((*s)->compiled().dispatch_count(), 0u);

  runtime::RunStats stats;
  expect_same_as_unoptimized(*model, **s, &stats);
  EXPECT_GT(stats.dispatches, 0u);
  EXPECT_EQ((*s)->vulkan_context()->validation_errors(), 0u);
}

// A static QDQ Conv (plugins/canonicalize/testdata/qdq.kir's first case):
// power-of-two scales, so the float graph and the integer kernel agree bit
// for bit.
constexpr const char* kQdqConv = R"(graph @conv opset 13 {
  input %x : f32[1,2,4,4]
  const %sx : f32[] = dense<[0.0625]>
  const %zx : u8[] = dense<[128]>
  const %w : i8[3,2,3,3] = dense<[4,1,2,4,1,2,3,-2,-4,-2,-2,3,4,-4,0,3,-3,3,-3,0,3,-2,-1,-2,2,-2,4,0,0,0,1,0,0,4,3,3,2,1,-1,4,0,-3,3,-3,3,1,-3,-4,0,-4,-3,0,4,0]>
  const %sw : f32[3] = dense<[0.125,0.25,0.0625]>
  const %zw : i8[3] = dense<[0,0,0]>
  const %b : f32[3] = dense<[0.5,-0.25,0.125]>
  const %sy : f32[] = dense<[0.125]>
  const %zy : u8[] = dense<[0]>
  %xq = QuantizeLinear(%x, %sx, %zx) : u8[1,2,4,4]
  %xd = DequantizeLinear(%xq, %sx, %zx) : f32[1,2,4,4]
  %wd = DequantizeLinear(%w, %sw, %zw) {axis = 0} : f32[3,2,3,3]
  %c = Conv(%xd, %wd, %b) {kernel_shape = [3,3], pads = [1,1,1,1]} : f32[1,3,4,4]
  %r = Relu(%c) : f32[1,3,4,4]
  %yq = QuantizeLinear(%r, %sy, %zy) : u8[1,3,4,4]
  %y = DequantizeLinear(%yq, %sy, %zy) : f32[1,3,4,4]
  return %y
})";

bool has_op(const ir::Graph& g, const std::string& op) {
  for (ir::NodeId id : g.main().nodes)
    if (g.node(id).op == op) return true;
  return false;
}

// Runs `session` and the reference executor on the unoptimized QDQ model;
// the outputs must be equal.
void expect_qdq_output(const ir::Graph& model, const Session& session) {
  std::vector<float> x(32);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.37f * static_cast<float>(i % 11) - 1.6f;
  Tensor in = Tensor::from_vector<float>({1, 2, 4, 4}, x);
  auto expected = runtime::ReferenceExecutor(model).run({in});
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  auto out = session.run({in});
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  ASSERT_EQ((*out)[0].numel(), (*expected)[0].numel());
  for (int64_t i = 0; i < (*out)[0].numel(); ++i) EXPECT_EQ((*out)[0].get_f64(i), (*expected)[0].get_f64(i)) << i;
}

// Without a device the automatic choice keeps the float graph; kOn puts
// fuse-qdq into the default pipeline, kOff and --disable-pass fuse-qdq keep
// it out, and an explicit pass list decides by itself.
TEST(Session, Int8KernelsChooseWhetherFuseQdqRuns) {
  auto model = parse(kQdqConv);
  ASSERT_TRUE(model);
  struct Case {
    runtime::Int8Kernels mode;
    std::vector<std::string> disabled, passes;
    bool integer;
    const char* reason;
  };
  const Case cases[] = {
      {runtime::Int8Kernels::kAuto, {}, {}, false, "no device"},
      {runtime::Int8Kernels::kOn, {}, {}, true, "requested"},
      {runtime::Int8Kernels::kOff, {}, {}, false, "turned off"},
      {runtime::Int8Kernels::kOn, {"fuse-qdq"}, {}, false, "fuse-qdq disabled"},
      {runtime::Int8Kernels::kAuto, {}, {"fuse-qdq", "fold-constants", "dce"}, true, "the pass list names fuse-qdq"},
      {runtime::Int8Kernels::kOn, {}, {"fold-constants", "dce"}, false, "leaves out fuse-qdq"},
  };
  for (const Case& c : cases) {
    SessionOptions o = reference_options();
    o.int8_kernels = c.mode;
    o.pipeline.disabled = c.disabled;
    o.pipeline.passes = c.passes;
    auto s = Session::create(*model, o);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    const std::string what = c.reason;
    EXPECT_EQ((*s)->int8_kernels().integer, c.integer) << what;
    EXPECT_NE((*s)->int8_kernels().reason.find(c.reason), std::string::npos) << (*s)->int8_kernels().reason;
    EXPECT_EQ(has_op((*s)->graph(), "QLinearConv"), c.integer) << what << "\n" << ir::print_graph((*s)->graph());
    EXPECT_EQ(has_op((*s)->graph(), "Conv"), !c.integer) << what;
    expect_qdq_output(*model, **s);
  }
}

// On a device: kAuto takes the integer kernels exactly where the device
// has int8 cooperative matrices and Vulkan 1.3 dot products (lavapipe has
// neither tensor cores nor accelerated dot products: the float graph);
// kOn and kOff override, and both paths give the same bits.
TEST_F(SessionVulkan, Int8KernelsFollowTheDevice) {
  auto model = parse(kQdqConv);
  ASSERT_TRUE(model);
  const vk::Capabilities& caps = vk::testing::test_device()->capabilities();
  const bool dot = caps.shader_integer_dot_product && caps.api_version >= VK_API_VERSION_1_3;
  const bool tensor_cores = dot && !runtime::target_info(*vk::testing::test_device()).coopmat_s8_shapes.empty();
  for (runtime::Int8Kernels mode : {runtime::Int8Kernels::kAuto, runtime::Int8Kernels::kOn, runtime::Int8Kernels::kOff}) {
    SessionOptions o;
    o.backend = BackendChoice::kVulkan;
    o.plugins.load_environment = false;
    o.context_options.kernel_cache_dir = "";
    o.int8_kernels = mode;
    auto s = Session::create(*model, o);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    const bool want = mode == runtime::Int8Kernels::kOn || (mode == runtime::Int8Kernels::kAuto && tensor_cores);
    EXPECT_EQ((*s)->int8_kernels().integer, want) << (*s)->int8_kernels().reason;
    EXPECT_EQ(has_op((*s)->graph(), "QLinearConv"), want);
    if (mode == runtime::Int8Kernels::kAuto && !want) {
      const char* why = !dot ? "no packed"
                             : caps.integer_dot_product_accelerated ? "without int8 cooperative matrices"
                                                                    : "not accelerated";
      EXPECT_NE((*s)->int8_kernels().reason.find(why), std::string::npos) << (*s)->int8_kernels().reason;
    }
    expect_qdq_output(*model, **s);
  }
}

// Global-memory bytes per dispatch and per run, exactly: z = Add(x, y) of
// two [1,4,8,8] fp32 tensors reads 2 x 1024 B and writes 1024 B, in either
// storage (an image packing 4 channels per texel holds exactly 256 floats),
// profiled or not.
TEST_F(SessionVulkan, RunStatsCountTheBytesEachDispatchMoves) {
  auto model = parse(R"(graph @g opset 17 {
  input %x : f32[1,4,8,8]
  input %y : f32[1,4,8,8]
  %z = Add(%x, %y) : f32[1,4,8,8]
  return %z
}
)");
  ASSERT_TRUE(model);
  Tensor x = Tensor::allocate(DType::kFloat32, {1, 4, 8, 8}).value();
  Tensor y = Tensor::allocate(DType::kFloat32, {1, 4, 8, 8}).value();
  for (int64_t i = 0; i < x.numel(); ++i) {
    x.set_f64(i, 0.5 * static_cast<double>(i));
    y.set_f64(i, -0.25 * static_cast<double>(i));
  }
  for (planner::Storage storage : {planner::Storage::kBuffer, planner::Storage::kImage})
    for (bool profile : {false, true}) {
      SCOPED_TRACE(std::string(planner::storage_name(storage)) + (profile ? ", profiled" : ""));
      SessionOptions o;
      o.backend = BackendChoice::kVulkan;
      o.plugins.load_environment = false;
      o.context_options.validation = vk::Validation::kRequired;
      o.context_options.kernel_cache_dir = "";
      o.vulkan.plan.storage = storage;
      o.vulkan.profile = profile;
      auto s = Session::create(*model, o);
      ASSERT_TRUE(s.ok()) << s.status().to_string();
      for (int run = 0; run < 2; ++run) {  // recording, then replaying
        runtime::RunStats stats;
        auto out = (*s)->run({x, y}, &stats);
        ASSERT_TRUE(out.ok()) << out.status().to_string();
        EXPECT_EQ((*out)[0].get_f64(10), 2.5);
        EXPECT_EQ(stats.dispatches, 1u);
        EXPECT_EQ(stats.fused_dispatches, 0u);
        EXPECT_EQ(stats.bytes_read, 2u * 1024u);
        EXPECT_EQ(stats.bytes_written, 1024u);
        if (profile && stats.gpu_ms >= 0) {
          ASSERT_EQ(stats.kernels.size(), 1u);
          EXPECT_EQ(stats.kernels[0].bytes_read, 2u * 1024u);
          EXPECT_EQ(stats.kernels[0].bytes_written, 1024u);
          EXPECT_EQ(stats.kernels[0].bytes, 3u * 1024u);
        } else {
          EXPECT_TRUE(stats.kernels.empty());
        }
      }
      EXPECT_EQ((*s)->vulkan_context()->validation_errors(), 0u);
    }
}

TEST(RunStats, FusedKernelsAreNamedSo) {
  EXPECT_TRUE(runtime::is_fused_kernel("fused_sigmoid_mul"));
  EXPECT_TRUE(runtime::is_fused_kernel("dw3x3+pw"));
  EXPECT_FALSE(runtime::is_fused_kernel("conv2d_1x1"));
  EXPECT_FALSE(runtime::is_fused_kernel("unfused"));
}

}  // namespace
}  // namespace kiln::session
