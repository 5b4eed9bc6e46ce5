// Shared instance/device for the platform tests; see vk_test_env.h.
#include "platform/vulkan/vk_test_env.h"

#include <cstdlib>
#include <memory>
#include <string>

namespace kiln::vk::testing {
namespace {

struct State {
  bool initialized = false;
  std::unique_ptr<Instance> instance;
  std::unique_ptr<Device> device;
  std::unique_ptr<ShaderCompiler> compiler;
  std::unique_ptr<KernelCache> cache;
  std::string skip_reason;
};

State& state() {
  static State s;
  return s;
}

void initialize() {
  State& s = state();
  if (s.initialized) return;
  s.initialized = true;
  InstanceOptions options;
  options.application_name = "kiln_vulkan_test";
  options.validation = Validation::kRequired;
  options.synchronization_validation = true;
  if (const char* v = std::getenv("KILN_TEST_VALIDATION"); v != nullptr && *v != '\0') {
    if (std::string(v) == "off")
      options.validation = Validation::kOff, options.synchronization_validation = false;
    else
      ADD_FAILURE() << "KILN_TEST_VALIDATION='" << v << "' is not 'off' (unset: validated)";
  }
  StatusOr<std::unique_ptr<Instance>> instance = Instance::create(options);
  if (!instance.ok()) {
    // No loader at all is a skip; a missing validation layer is a failure
    // (the tests promise validated runs).
    if (instance.status().message().find("validation") != std::string::npos) {
      ADD_FAILURE() << instance.status().to_string();
    }
    s.skip_reason = "no Vulkan instance: " + instance.status().to_string();
    return;
  }
  StatusOr<std::unique_ptr<Device>> device = Device::create(**instance);
  if (!device.ok()) {
    s.skip_reason = "no Vulkan device: " + device.status().to_string();
    s.instance = std::move(instance).value();
    return;
  }
  s.instance = std::move(instance).value();
  s.device = std::move(device).value();
}

// Destroys the device, then the instance, after the last test, and fails if
// their destruction produced validation errors.
class Environment : public ::testing::Environment {
 public:
  void TearDown() override {
    State& s = state();
    s.cache.reset();
    s.compiler.reset();
    s.device.reset();
    if (s.instance != nullptr) {
      EXPECT_EQ(s.instance->error_count(), 0u) << format_errors(*s.instance);
      s.instance.reset();
    }
  }
};

[[maybe_unused]] ::testing::Environment* const kEnvironment =
    ::testing::AddGlobalTestEnvironment(new Environment());

}  // namespace

Instance* test_instance() {
  initialize();
  return state().instance.get();
}

Device* test_device() {
  initialize();
  return state().device.get();
}

KernelCache* test_kernel_cache() {
  State& s = state();
  if (test_device() == nullptr) return nullptr;
  if (!s.cache) {
    auto compiler = ShaderCompiler::create();
    if (!compiler.ok()) return nullptr;
    s.compiler = std::move(compiler).value();
    KernelCacheOptions options;
    options.use_disk = false;
    auto cache = KernelCache::open(*s.device, *s.compiler, options);
    if (!cache.ok()) {
      s.compiler.reset();
      return nullptr;
    }
    s.cache = std::move(cache).value();
  }
  return s.cache.get();
}

const std::string& skip_reason() {
  initialize();
  return state().skip_reason;
}

std::string format_errors(const Instance& instance) {
  std::string out;
  for (const DebugMessage& m : instance.messages()) {
    if (!m.is_error()) continue;
    out += "\n  [" + m.id_name + "] " + m.text;
  }
  return out;
}

void VulkanTest::SetUp() {
  // A failure the environment already recorded (a missing validation
  // layer) keeps gtest from counting a skip as one, and it would run the
  // body against a null device: make it fatal instead.
  if (test_device() == nullptr && HasFailure()) FAIL() << skip_reason();
  KILN_VULKAN_TEST_NEEDS(test_device() != nullptr, skip_reason());
  instance().clear_messages();
}

void VulkanTest::TearDown() {
  if (test_device() == nullptr) return;
  EXPECT_EQ(instance().error_count(), 0u) << "validation errors:" << format_errors(instance());
}

}  // namespace kiln::vk::testing
