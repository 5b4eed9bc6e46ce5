// Embedding: a host creates its own VkInstance/VkDevice (through volk, as a
// game engine would), Kiln wraps them, runs work, is destroyed, and the
// host's device still works and is destroyed by the host.
#include <gtest/gtest.h>

#include <volk.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "platform/vulkan/device.h"
#include "platform/vulkan/pipeline.h"
#include "platform/vulkan/transfer.h"
#include "platform/vulkan/vk_test_env.h"

namespace kiln::vk {
namespace {

// The host application's side, written against plain Vulkan via volk globals.
class HostApp {
 public:
  ~HostApp() { destroy(); }

  // Returns false (with reason) when there is no Vulkan to host on.
  bool create(bool enable_timeline, std::string* reason) {
    if (volkInitialize() != VK_SUCCESS) {
      *reason = "no Vulkan loader";
      return false;
    }
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "host-app";
    app.apiVersion = VK_API_VERSION_1_2;
    const char* layers[] = {"VK_LAYER_KHRONOS_validation"};
    const char* extensions[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
    VkDebugUtilsMessengerCreateInfoEXT messenger{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    messenger.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    messenger.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT;
    messenger.pfnUserCallback = &HostApp::on_message;
    messenger.pUserData = this;
    VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    info.pNext = &messenger;
    info.pApplicationInfo = &app;
    info.enabledLayerCount = 1;
    info.ppEnabledLayerNames = layers;
    info.enabledExtensionCount = 1;
    info.ppEnabledExtensionNames = extensions;
    if (vkCreateInstance(&info, nullptr, &instance) != VK_SUCCESS) {
      *reason = "host vkCreateInstance failed";
      return false;
    }
    volkLoadInstanceOnly(instance);
    vkCreateDebugUtilsMessengerEXT(instance, &messenger, nullptr, &messenger_);
    uint32_t count = 1;
    VkResult r = vkEnumeratePhysicalDevices(instance, &count, &physical_device);
    if ((r != VK_SUCCESS && r != VK_INCOMPLETE) || count == 0) {
      *reason = "no physical device";
      return false;
    }
    uint32_t families = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(physical_device, &families, nullptr);
    std::vector<VkQueueFamilyProperties> props(families);
    vkGetPhysicalDeviceQueueFamilyProperties(physical_device, &families, props.data());
    for (uint32_t i = 0; i < families; ++i) {
      if (props[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
        queue_family = i;
        break;
      }
    }
    // Ask what the device has, then enable timeline semaphores if wanted.
    VkPhysicalDeviceVulkan12Features supported12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceFeatures2 supported{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    supported.pNext = &supported12;
    vkGetPhysicalDeviceFeatures2(physical_device, &supported);
    features12.timelineSemaphore = enable_timeline ? supported12.timelineSemaphore : VK_FALSE;
    timeline_enabled = features12.timelineSemaphore == VK_TRUE;
    features.pNext = &features12;
    float priority = 1.0f;
    VkDeviceQueueCreateInfo queue{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    queue.queueFamilyIndex = queue_family;
    queue.queueCount = 1;
    queue.pQueuePriorities = &priority;
    VkDeviceCreateInfo dinfo{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    dinfo.pNext = &features;
    dinfo.queueCreateInfoCount = 1;
    dinfo.pQueueCreateInfos = &queue;
    if (vkCreateDevice(physical_device, &dinfo, nullptr, &device) != VK_SUCCESS) {
      *reason = "host vkCreateDevice failed";
      return false;
    }
    volkLoadDevice(device);
    return true;
  }

  HostVulkanHandles handles(bool share_features) const {
    HostVulkanHandles h;
    h.instance = instance;
    h.physical_device = physical_device;
    h.device = device;
    h.queue_family_index = queue_family;
    h.queue_index = 0;
    h.get_instance_proc_addr = vkGetInstanceProcAddr;
    h.instance_api_version = VK_API_VERSION_1_2;
    h.enabled_features = share_features ? &features : nullptr;
    return h;
  }

  void destroy() {
    if (device != VK_NULL_HANDLE) vkDestroyDevice(device, nullptr);
    if (messenger_ != VK_NULL_HANDLE) vkDestroyDebugUtilsMessengerEXT(instance, messenger_, nullptr);
    if (instance != VK_NULL_HANDLE) vkDestroyInstance(instance, nullptr);
    device = VK_NULL_HANDLE;
    messenger_ = VK_NULL_HANDLE;
    instance = VK_NULL_HANDLE;
  }

  std::string errors() {
    std::lock_guard<std::mutex> lock(mutex_);
    return errors_;
  }
  int error_count() const { return error_count_.load(); }

  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical_device = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  uint32_t queue_family = 0;
  bool timeline_enabled = false;
  VkPhysicalDeviceVulkan12Features features12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};

 private:
  static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT,
                                                   VkDebugUtilsMessageTypeFlagsEXT,
                                                   const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
    auto* self = static_cast<HostApp*>(user);
    std::lock_guard<std::mutex> lock(self->mutex_);
    self->error_count_.fetch_add(1);
    self->errors_ += std::string("\n  ") + (data && data->pMessage ? data->pMessage : "?");
    return VK_FALSE;
  }
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  std::mutex mutex_;
  std::string errors_;
  std::atomic<int> error_count_{0};
};

constexpr const char* kDouble = R"(#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer Data { float v[]; };
void main() { v[gl_GlobalInvocationID.x] = v[gl_GlobalInvocationID.x] * 2.0 + 1.0; }
)";

// Runs one kernel on the wrapped device and checks its output.
void run_kernel(Device& device) {
  auto compiler = ShaderCompiler::create();
  ASSERT_TRUE(compiler.ok());
  auto spirv = (*compiler)->compile(kDouble);
  ASSERT_TRUE(spirv.ok()) << spirv.status().to_string();
  auto refl = reflect(*spirv);
  ASSERT_TRUE(refl.ok());
  auto pipeline = ComputePipeline::create(device, *spirv, std::move(refl).value());
  ASSERT_TRUE(pipeline.ok()) << pipeline.status().to_string();
  auto arena = MemoryArena::create(device, 1 << 20);
  ASSERT_TRUE(arena.ok()) << arena.status().to_string();
  auto transfer = Transfer::create(device);
  ASSERT_TRUE(transfer.ok());
  auto descriptors = DescriptorAllocator::create(device);
  ASSERT_TRUE(descriptors.ok());
  std::vector<float> v(256);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  auto buffer = (*arena)->create_buffer(v.size() * 4);
  ASSERT_TRUE(buffer.ok());
  ASSERT_TRUE((*transfer)->upload(*buffer, v.data(), v.size() * 4).ok());
  DescriptorResource res[] = {DescriptorResource::of(0, *buffer)};
  Status s = dispatch_sync((*transfer)->submitter(), **descriptors, **pipeline, res, {}, {4, 1, 1});
  ASSERT_TRUE(s.ok()) << s.to_string();
  std::vector<float> out(v.size());
  ASSERT_TRUE((*transfer)->download(*buffer, out.data(), out.size() * 4).ok());
  for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(out[i], v[i] * 2.0f + 1.0f) << i;
  EXPECT_EQ((*transfer)->submitter().uses_timeline(), device.enabled().timeline_semaphore);
}

// The host's device must still be fully usable after Kiln is gone.
void expect_host_device_works(HostApp& host) {
  EXPECT_EQ(vkDeviceWaitIdle(host.device), VK_SUCCESS);
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = 1024;
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
  VkBuffer buffer = VK_NULL_HANDLE;
  EXPECT_EQ(vkCreateBuffer(host.device, &info, nullptr, &buffer), VK_SUCCESS);
  vkDestroyBuffer(host.device, buffer, nullptr);
  VkQueue queue = VK_NULL_HANDLE;
  vkGetDeviceQueue(host.device, host.queue_family, 0, &queue);
  EXPECT_EQ(vkQueueSubmit(queue, 0, nullptr, VK_NULL_HANDLE), VK_SUCCESS);
  EXPECT_EQ(vkQueueWaitIdle(queue), VK_SUCCESS);
}

class WrapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    KILN_VULKAN_TEST_NEEDS(testing::test_device() != nullptr, testing::skip_reason());
  }
};

TEST_F(WrapTest, WrappedHostDeviceRunsKernelsAndSurvivesKiln) {
  HostApp host;
  std::string reason;
  ASSERT_TRUE(host.create(/*enable_timeline=*/true, &reason)) << reason;
  {
    auto wrapped = Device::wrap(host.handles(/*share_features=*/true));
    ASSERT_TRUE(wrapped.ok()) << wrapped.status().to_string();
    Device& device = **wrapped;
    EXPECT_TRUE(device.borrowed());
    EXPECT_TRUE(device.instance().borrowed());
    EXPECT_EQ(device.handle(), host.device);
    EXPECT_EQ(device.queue_family(), host.queue_family);
    // Kiln uses exactly what the host enabled.
    EXPECT_EQ(device.enabled().timeline_semaphore, host.timeline_enabled);
    EXPECT_FALSE(device.enabled().shader_float16);  // the host did not enable it
    EXPECT_FALSE(device.enabled().cooperative_matrix_nv);  // nor VK_NV_cooperative_matrix
    run_kernel(device);
  }  // Kiln's device is destroyed here; the host's must survive.
  expect_host_device_works(host);
  host.destroy();
  EXPECT_EQ(host.error_count(), 0) << host.errors();
}

TEST_F(WrapTest, WithoutAFeatureChainKilnFallsBackToFences) {
  HostApp host;
  std::string reason;
  ASSERT_TRUE(host.create(/*enable_timeline=*/true, &reason)) << reason;
  {
    auto wrapped = Device::wrap(host.handles(/*share_features=*/false));
    ASSERT_TRUE(wrapped.ok()) << wrapped.status().to_string();
    EXPECT_FALSE((*wrapped)->enabled().timeline_semaphore);
    run_kernel(**wrapped);
  }
  expect_host_device_works(host);
  host.destroy();
  EXPECT_EQ(host.error_count(), 0) << host.errors();
}

TEST_F(WrapTest, RejectsBadHandles) {
  HostApp host;
  std::string reason;
  ASSERT_TRUE(host.create(/*enable_timeline=*/false, &reason)) << reason;
  HostVulkanHandles h = host.handles(false);
  h.device = VK_NULL_HANDLE;
  EXPECT_EQ(Device::wrap(h).status().code(), StatusCode::kInvalidArgument);
  h = host.handles(false);
  h.get_instance_proc_addr = nullptr;
  EXPECT_EQ(Device::wrap(h).status().code(), StatusCode::kInvalidArgument);
  h = host.handles(false);
  h.queue_family_index = 99;
  auto bad_family = Device::wrap(h);
  EXPECT_EQ(bad_family.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad_family.status().message().find("queue family 99"), std::string::npos) << bad_family.status().message();
  h = host.handles(false);
  h.queue_index = 1000;
  EXPECT_EQ(Device::wrap(h).status().code(), StatusCode::kInvalidArgument);
  expect_host_device_works(host);
  host.destroy();
  EXPECT_EQ(host.error_count(), 0) << host.errors();
}

}  // namespace
}  // namespace kiln::vk
