// The backend interface reached through a plugin: test.eltwise (a .so
// offering kiln.backend.v1) compiles and runs a model in the engine session
// and agrees with the reference executor; a graph it cannot run, an unknown
// backend name and a missing plugin are errors naming them.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/ir/text.h"
#include "engine/runtime/reference_executor.h"
#include "engine/session/session.h"

namespace kiln {
namespace {

constexpr const char* kEltwise = R"(graph @g opset 17 {
  input %x : f32[2,3]
  input %y : f32[2,3]
  %s = Add(%x, %y) : f32[2,3]
  %r = Relu(%s) : f32[2,3]
  %z = Mul(%r, %x) : f32[2,3]
  return %z
}
)";

session::SessionOptions plugin_options() {
  session::SessionOptions o;
  o.backend = session::BackendChoice::kPlugin;
  o.backend_plugin = "test.eltwise";
  o.plugins.load_environment = false;
  o.plugins.plugin_files = {KILN_BACKEND_PLUGIN};
  return o;
}

TEST(PluginBackend, RunsAModelLikeTheReference) {
  auto model = ir::parse_graph(kEltwise);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  auto s = session::Session::create(**model, plugin_options());
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ((*s)->backend(), "test.eltwise");
  EXPECT_EQ((*s)->vulkan_model(), nullptr);
  EXPECT_FALSE((*s)->pass_records().empty()) << "the default pipeline runs before a plugin backend too";

  Tensor x = Tensor::from_vector<float>({2, 3}, {1, -2, 3, -4, 5, -6});
  Tensor y = Tensor::from_vector<float>({2, 3}, {0.5f, 1, -4, 8, -1, 2});
  auto expected = runtime::ReferenceExecutor(**model).run({x, y});
  ASSERT_TRUE(expected.ok());
  runtime::RunStats stats;
  auto out = (*s)->run({x, y}, &stats);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  ASSERT_EQ((*out)[0].shape(), (*expected)[0].shape());
  for (int64_t i = 0; i < (*out)[0].numel(); ++i) EXPECT_EQ((*out)[0].get_f64(i), (*expected)[0].get_f64(i)) << i;
  EXPECT_GE(stats.wall_ms, 0.0);
}

TEST(PluginBackend, AGraphItCannotRunIsAnErrorNamingTheNode) {
  auto model = ir::parse_graph(R"(graph @g opset 17 {
  input %x : f32[2,3]
  %t = Tanh(%x) : f32[2,3]
  return %t
}
)");
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  auto s = session::Session::create(**model, plugin_options());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("Tanh"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("test.eltwise"), std::string::npos) << s.status().message();
}

// test.eltwise predates ABI 1.5 (no compile_with_options): what it could
// not honour is refused, naming the options, instead of ignored.
TEST(PluginBackend, APluginWithoutOptionsRefusesFp16AndProfiling) {
  auto model = ir::parse_graph(kEltwise);
  ASSERT_TRUE(model.ok());
  for (int choice = 0; choice < 2; ++choice) {
    session::SessionOptions o = plugin_options();
    if (choice == 0) o.vulkan.plan.precision = planner::ElemType::kF16;
    else o.vulkan.profile = true;
    auto s = session::Session::create(**model, o);
    ASSERT_FALSE(s.ok()) << choice;
    EXPECT_EQ(s.status().code(), StatusCode::kUnimplemented);
    EXPECT_NE(s.status().message().find("takes no fp16, image-storage or profiling option"), std::string::npos)
        << s.status().message();
  }
}

TEST(PluginBackend, AnUnknownBackendNameListsTheLoadedOnes) {
  auto model = ir::parse_graph(kEltwise);
  ASSERT_TRUE(model.ok());
  session::SessionOptions o = plugin_options();
  o.backend_plugin = "acme.npu";
  auto s = session::Session::create(**model, o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("acme.npu"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("test.eltwise"), std::string::npos) << s.status().message();
}

}  // namespace
}  // namespace kiln
