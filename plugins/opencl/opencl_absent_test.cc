// Kiln without the OpenCL backend plugin: a session naming the backend says
// that the plugin is not there and why, and the rest of Kiln (the pass
// pipeline with Kiln's other plugins, the reference backend) runs as before.
// Built whether or not OpenCL is: the plugin directory here is a copy of
// the build's without libkiln_opencl_backend.so.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>

#include "engine/ir/text.h"
#include "engine/session/session.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

constexpr char kPluginFile[] = "libkiln_opencl_backend.so";

// Kiln's other plugins, linked into a fresh directory.
std::string plugin_dir_without_opencl() {
  std::string dir = ::testing::TempDir() + "/kiln_no_opencl_XXXXXX";
  if (!mkdtemp(dir.data())) return {};
  for (const auto& e : fs::directory_iterator(KILN_BUILD_PLUGIN_DIR))
    if (e.path().filename() != kPluginFile) fs::create_symlink(e.path(), fs::path(dir) / e.path().filename());
  return dir;
}

TEST(OpenClAbsent, BackendSaysThePluginIsMissingAndTheRestRuns) {
  const std::string dir = plugin_dir_without_opencl();
  ASSERT_FALSE(dir.empty());
  auto graph = ir::parse_graph(
      "graph @g opset 17 {\n  input %x : f32[4]\n  %y = Relu(%x) : f32[4]\n  return %y\n}\n");
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();

  session::SessionOptions options;
  options.plugins.plugin_dir = dir;
  options.plugins.load_environment = false;
  options.backend = session::BackendChoice::kPlugin;
  options.backend_plugin = "opencl";
  auto missing = session::Session::create(**graph, options);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("the OpenCL backend plugin is not available: " + std::string(kPluginFile) +
                                            " is not in " + dir),
            std::string::npos)
      << missing.status().message();

  options.backend = session::BackendChoice::kReference;
  auto reference = session::Session::create(**graph, options);
  ASSERT_TRUE(reference.ok()) << reference.status().to_string();
  EXPECT_FALSE((*reference)->pass_records().empty());  // Kiln's own plugins ran
  auto out = (*reference)->run({Tensor::from_vector<float>({4}, {-1.0f, 2.0f, -3.0f, 4.0f})});
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ((*out)[0].data<float>()[0], 0.0f);
  EXPECT_EQ((*out)[0].data<float>()[1], 2.0f);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kiln
