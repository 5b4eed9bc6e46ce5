// kiln_host_api_t::target_info through the engine session: test.target-info
// (loaded from its .so) records what the host tells it. A Vulkan session
// opens its device before the pipeline and tells the pass the device's
// facts, the planner's own view of them; a reference-backend session runs
// the pipeline for no device and tells it nothing.
#include <gtest/gtest.h>

#include <string>

#include "engine/ir/text.h"
#include "engine/session/session.h"
#include "platform/vulkan/vk_test_env.h"

namespace kiln {
namespace {

const char* kModel = R"(graph @g opset 17 {
  input %x : f32[2,8]
  %y = Relu(%x) : f32[2,8]
  return %y
}
)";

session::SessionOptions options(session::BackendChoice backend) {
  session::SessionOptions o;
  o.backend = backend;
  o.plugins.load_environment = false;
  o.plugins.plugin_files = {KILN_TARGET_PLUGIN};
  o.context_options.validation = vk::Validation::kRequired;
  o.context_options.kernel_cache_dir = "";
  return o;
}

const std::map<std::string, int64_t>& statistics(const session::Session& s) {
  for (const registry::PassRecord& r : s.pass_records())
    if (r.name == "test.target-info") {
      EXPECT_TRUE(r.committed);
      return r.statistics;
    }
  static const std::map<std::string, int64_t> kNone;
  ADD_FAILURE() << "test.target-info did not run";
  return kNone;
}

int64_t stat(const std::map<std::string, int64_t>& stats, const std::string& key) {
  auto it = stats.find(key);
  return it == stats.end() ? -1 : it->second;
}

class TargetInfo : public vk::testing::VulkanTest {};

TEST_F(TargetInfo, AVulkanSessionTellsPassesItsDevice) {
  auto model = ir::parse_graph(kModel);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  auto s = session::Session::create(**model, options(session::BackendChoice::kVulkan));
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  ASSERT_EQ((*s)->backend(), "vulkan");
  const auto& st = statistics(**s);
  const vk::Capabilities& caps = (*s)->vulkan_context()->device().capabilities();
  EXPECT_EQ(stat(st, "has-target"), 1);
  EXPECT_EQ(stat(st, "shared-memory-bytes"), caps.max_compute_shared_memory_size);
  EXPECT_GT(stat(st, "shared-memory-bytes"), 0);
  EXPECT_EQ(stat(st, "compute-units"), caps.compute_units);  // 0 on lavapipe: no vendor extension says
  EXPECT_EQ(stat(st, "max-workgroup-invocations"), caps.max_compute_work_group_invocations);
  EXPECT_EQ(stat(st, "max-image-dimension-2d"), caps.max_image_dimension_2d);
  EXPECT_EQ(stat(st, "vendor-id"), caps.vendor_id);
  EXPECT_EQ(stat(st, "device-name-length"), static_cast<int64_t>(caps.device_name.size()));
  EXPECT_GT(stat(st, "device-name-length"), 0);
  const planner::TargetInfo t = runtime::target_info((*s)->vulkan_context()->device());
  EXPECT_EQ(stat(st, "subgroup-size"), t.subgroup_size);
  EXPECT_EQ(stat(st, "fp16-arithmetic"), t.fp16_arithmetic ? 1 : 0);
  EXPECT_EQ(stat(st, "cooperative-matrix"), t.coopmat != planner::CoopMatFlavour::kNone ? 1 : 0);
  EXPECT_EQ(t.compute_units, caps.compute_units);
  EXPECT_EQ((*s)->vulkan_context()->validation_errors(), 0u);
}

TEST_F(TargetInfo, AReferenceSessionTellsPassesNoDevice) {
  auto model = ir::parse_graph(kModel);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  auto s = session::Session::create(**model, options(session::BackendChoice::kReference));
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  ASSERT_EQ((*s)->backend(), "reference");
  const auto& st = statistics(**s);
  EXPECT_EQ(stat(st, "has-target"), 0);
  EXPECT_EQ(st.count("shared-memory-bytes"), 0u);
}

// kAuto with a device: the pipeline runs for the device it then compiles for.
TEST_F(TargetInfo, AnAutomaticSessionWithADeviceTellsPassesIt) {
  auto model = ir::parse_graph(kModel);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  auto s = session::Session::create(**model, options(session::BackendChoice::kAuto));
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  ASSERT_EQ((*s)->backend(), "vulkan") << (*s)->fallback_reason();
  EXPECT_EQ(stat(statistics(**s), "has-target"), 1);
}

}  // namespace
}  // namespace kiln
