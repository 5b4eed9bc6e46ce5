// Instance, device selection, capabilities and device-loss stickiness on a
// real (lavapipe in CI) device with validation enabled.
#include "platform/vulkan/device.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <iostream>

#include "platform/vulkan/memory_arena.h"
#include "platform/vulkan/submitter.h"
#include "platform/vulkan/transfer.h"
#include "platform/vulkan/vk_test_env.h"

namespace kiln::vk {
namespace {

using testing::VulkanTest;

TEST_F(VulkanTest, InstanceRunsWithValidation) {
  EXPECT_TRUE(instance().validation_enabled());
  EXPECT_FALSE(instance().borrowed());
  EXPECT_GE(instance().api_version(), VK_API_VERSION_1_1);
  EXPECT_FALSE(device().borrowed());
}

TEST_F(VulkanTest, CapabilitiesAreSane) {
  const Capabilities& caps = device().capabilities();
  EXPECT_FALSE(caps.device_name.empty());
  EXPECT_GT(caps.max_storage_buffer_range, 0u);
  // Vulkan's required minimums.
  EXPECT_GE(caps.max_image_dimension_2d, 4096u);
  EXPECT_GE(caps.max_compute_work_group_invocations, 128u);
  EXPECT_GE(caps.max_push_constants_size, 128u);
  EXPECT_GE(caps.max_compute_work_group_count[0], 65535u);
  EXPECT_GT(caps.max_memory_allocation_size, 0u);
  EXPECT_GT(caps.subgroup_size, 0u);
  EXPECT_LE(caps.min_subgroup_size, caps.subgroup_size);
  EXPECT_GE(caps.max_subgroup_size, caps.subgroup_size);
  EXPECT_GE(caps.api_version, VK_API_VERSION_1_1);
  EXPECT_FALSE(caps.heaps.empty());
  EXPECT_TRUE(std::any_of(caps.heaps.begin(), caps.heaps.end(), [](const MemoryHeapInfo& h) { return h.device_local; }));
  // RGBA32F sampled + storage images are required by the Vulkan spec.
  EXPECT_TRUE(caps.rgba32f_image);
  if (device().timestamp_valid_bits() > 0) {
    EXPECT_GT(caps.timestamp_period_ns, 0.0f);
  }
  // Enabled features are a subset of supported ones.
  const EnabledFeatures& e = device().enabled();
  EXPECT_LE(e.shader_float16, caps.shader_float16);
  EXPECT_LE(e.shader_int8, caps.shader_int8);
  EXPECT_LE(e.timeline_semaphore, caps.timeline_semaphore);
  EXPECT_LE(e.cooperative_matrix_khr, caps.cooperative_matrix_khr);
  // Kiln enables what the device offers.
  EXPECT_EQ(e.shader_float16, caps.shader_float16);
  EXPECT_EQ(e.cooperative_matrix_nv, caps.cooperative_matrix_nv);
  EXPECT_EQ(e.buffer_float32_atomic_add, caps.buffer_float32_atomic_add);
  EXPECT_EQ(e.shader_integer_dot_product, caps.shader_integer_dot_product);
  // Vulkan 1.3 requires shaderIntegerDotProduct.
  if (caps.api_version >= VK_API_VERSION_1_3) {
    EXPECT_TRUE(caps.shader_integer_dot_product);
  }
  // NV shapes are listed exactly when the NV extension is usable.
  EXPECT_EQ(caps.cooperative_matrix_nv_shapes.empty(), !caps.cooperative_matrix_nv);
  EXPECT_EQ(e.storage_buffer_16bit, caps.storage_buffer_16bit);
  EXPECT_EQ(e.timeline_semaphore, caps.timeline_semaphore && caps.api_version >= VK_API_VERSION_1_2);
}

TEST_F(VulkanTest, CapabilityReports) {
  const Capabilities& caps = device().capabilities();
  std::string json = caps.to_json();
  ASSERT_FALSE(json.empty());
  EXPECT_EQ(json.front(), '{');
  EXPECT_EQ(json.back(), '}');
  EXPECT_EQ(std::count(json.begin(), json.end(), '{'), std::count(json.begin(), json.end(), '}'));
  EXPECT_EQ(std::count(json.begin(), json.end(), '['), std::count(json.begin(), json.end(), ']'));
  EXPECT_NE(json.find("\"max_storage_buffer_range\":" + std::to_string(caps.max_storage_buffer_range)),
            std::string::npos);
  EXPECT_NE(json.find("\"max_image_dimension_2d\":" + std::to_string(caps.max_image_dimension_2d)), std::string::npos);
  EXPECT_NE(json.find(std::string("\"shader_float16\":") + (caps.shader_float16 ? "true" : "false")), std::string::npos);
  EXPECT_NE(json.find("\"cooperative_matrix_khr\":"), std::string::npos);
  EXPECT_NE(json.find("\"cooperative_matrix_nv_shapes\":["), std::string::npos);
  EXPECT_NE(json.find("\"subgroup_size\":" + std::to_string(caps.subgroup_size)), std::string::npos);
  std::string text = caps.to_text();
  std::cout << text;  // which device the suite ran on, in the CI log
  EXPECT_NE(text.find(caps.device_name), std::string::npos);
  EXPECT_NE(text.find("maxStorageBufferRange: " + std::to_string(caps.max_storage_buffer_range)), std::string::npos);
  EXPECT_NE(text.find("cooperative matrix"), std::string::npos);
}

TEST_F(VulkanTest, SelectsDeviceByIndexAndName) {
  EXPECT_EQ(*Device::select_physical_device(instance(), "0"), 0u);
  std::string name = device().capabilities().device_name;
  // A case-changed substring of the name finds the same device.
  std::string part = name.substr(0, std::min<size_t>(4, name.size()));
  for (char& c : part) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  StatusOr<uint32_t> by_name = Device::select_physical_device(instance(), part);
  ASSERT_TRUE(by_name.ok()) << by_name.status().to_string();
  auto devices = instance().physical_devices();
  ASSERT_TRUE(devices.ok());
  VkPhysicalDeviceProperties props{};
  instance().fn().vkGetPhysicalDeviceProperties((*devices)[*by_name], &props);
  EXPECT_NE(std::string(props.deviceName).find(name.substr(0, part.size())), std::string::npos);

  StatusOr<uint32_t> bad_index = Device::select_physical_device(instance(), "99");
  EXPECT_EQ(bad_index.status().code(), StatusCode::kNotFound);
  EXPECT_NE(bad_index.status().message().find("99"), std::string::npos);
  EXPECT_NE(bad_index.status().message().find(name), std::string::npos) << "lists the devices";
  StatusOr<uint32_t> bad_name = Device::select_physical_device(instance(), "no-such-gpu");
  EXPECT_EQ(bad_name.status().code(), StatusCode::kNotFound);
  EXPECT_NE(bad_name.status().message().find("no-such-gpu"), std::string::npos);

  DeviceOptions options;
  options.selector = "no-such-gpu";
  EXPECT_EQ(Device::create(instance(), options).status().code(), StatusCode::kNotFound);
}

TEST_F(VulkanTest, DeviceLossIsStickyAcrossTheDevice) {
  // A second device of our own, so the shared one stays healthy.
  auto created = Device::create(instance(), {});
  ASSERT_TRUE(created.ok()) << created.status().to_string();
  std::unique_ptr<Device> dev = std::move(created).value();
  auto arena = MemoryArena::create(*dev, 1 << 20);
  ASSERT_TRUE(arena.ok()) << arena.status().to_string();
  auto buffer = (*arena)->create_buffer(256);
  ASSERT_TRUE(buffer.ok());
  auto transfer = Transfer::create(*dev);
  ASSERT_TRUE(transfer.ok());

  // The driver reports a loss (injected through the one mapping path).
  Status lost = dev->check(VK_ERROR_DEVICE_LOST, "vkQueueSubmit (injected)");
  EXPECT_EQ(lost.code(), StatusCode::kDeviceLost);
  EXPECT_TRUE(dev->lost());

  // Every later call reports that first loss, without touching the GPU.
  std::vector<float> data(64, 1.0f);
  Status up = (*transfer)->upload(*buffer, data.data(), data.size() * sizeof(float));
  EXPECT_EQ(up.code(), StatusCode::kDeviceLost);
  EXPECT_EQ(up.message(), "vkQueueSubmit (injected): VK_ERROR_DEVICE_LOST");
  EXPECT_EQ((*arena)->create_buffer(256).status().code(), StatusCode::kDeviceLost);
  EXPECT_EQ(MemoryArena::create(*dev, 1 << 20).status().code(), StatusCode::kDeviceLost);
  EXPECT_EQ(Submitter::create(*dev).status().code(), StatusCode::kDeviceLost);
  EXPECT_EQ(dev->wait_idle().code(), StatusCode::kDeviceLost);
  EXPECT_EQ(dev->check(VK_SUCCESS, "later").message(), "vkQueueSubmit (injected): VK_ERROR_DEVICE_LOST");
  // Teardown after a loss is clean (no crash, no validation error).
  buffer->reset();
  transfer->reset();
  arena->reset();
  dev.reset();
}

TEST(VulkanValidationTest, MessengerRecordsValidationErrors) {
  KILN_VULKAN_TEST_NEEDS(testing::test_device() != nullptr, testing::skip_reason());
  // A private instance, so the deliberate error does not touch the shared one.
  std::vector<std::string> seen;
  InstanceOptions options;
  options.validation = Validation::kRequired;
  options.on_message = [&](const DebugMessage& m) {
    if (m.is_error()) seen.push_back(m.id_name);
  };
  auto inst = Instance::create(options);
  ASSERT_TRUE(inst.ok()) << inst.status().to_string();
  auto dev = Device::create(**inst);
  ASSERT_TRUE(dev.ok()) << dev.status().to_string();
  // A zero-sized buffer is invalid usage the layer must report.
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = 0;
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
  VkBuffer buffer = VK_NULL_HANDLE;
  VkResult r = (*dev)->fn().vkCreateBuffer((*dev)->handle(), &info, nullptr, &buffer);
  if (r == VK_SUCCESS && buffer != VK_NULL_HANDLE) (*dev)->fn().vkDestroyBuffer((*dev)->handle(), buffer, nullptr);
  EXPECT_GE((*inst)->error_count(), 1u);
  ASSERT_FALSE(seen.empty());
  EXPECT_NE(seen[0].find("VUID-VkBufferCreateInfo-size"), std::string::npos) << seen[0];
  dev->reset();
}

TEST(VulkanValidationTest, SynchronizationValidationCatchesMissingBarriers) {
  KILN_VULKAN_TEST_NEEDS(testing::test_device() != nullptr, testing::skip_reason());
  // The tests rely on synchronization validation to catch missing barriers;
  // prove it is live: two copies into one buffer with no barrier between.
  std::vector<std::string> seen;
  InstanceOptions options;
  options.validation = Validation::kRequired;
  options.synchronization_validation = true;
  options.on_message = [&](const DebugMessage& m) {
    if (m.is_error()) seen.push_back(m.id_name);
  };
  auto inst = Instance::create(options);
  ASSERT_TRUE(inst.ok()) << inst.status().to_string();
  {
    auto dev = Device::create(**inst);
    ASSERT_TRUE(dev.ok()) << dev.status().to_string();
    auto arena = MemoryArena::create(**dev, 1 << 16);
    auto submitter = Submitter::create(**dev);
    ASSERT_TRUE(arena.ok() && submitter.ok());
    auto a = (*arena)->create_buffer(256);
    auto b = (*arena)->create_buffer(256);
    ASSERT_TRUE(a.ok() && b.ok());
    const VolkDeviceTable& fn = (*dev)->fn();
    Status s = (*submitter)->run([&](VkCommandBuffer cmd) {
      fn.vkCmdFillBuffer(cmd, a->handle(), 0, 256, 0);
      VkBufferCopy copy{0, 0, 256};
      fn.vkCmdCopyBuffer(cmd, a->handle(), b->handle(), 1, &copy);  // RAW on a without a barrier
      return ok_status();
    });
    EXPECT_TRUE(s.ok()) << s.to_string();
  }
  ASSERT_FALSE(seen.empty()) << "synchronization validation reported nothing";
  EXPECT_NE(seen[0].find("SYNC-HAZARD"), std::string::npos) << seen[0];
}

TEST(VulkanInstanceTest, WithoutValidationEveryCapabilityIsQueriedAndEnabled) {
  KILN_VULKAN_TEST_NEEDS(testing::test_device() != nullptr, testing::skip_reason());
  // Without a (possibly older) validation layer nothing is held back, e.g.
  // VK_KHR_cooperative_matrix on GPUs that offer it.
  auto inst = Instance::create({});
  ASSERT_TRUE(inst.ok()) << inst.status().to_string();
  EXPECT_FALSE((*inst)->validation_enabled());
  EXPECT_EQ((*inst)->validation_layer_version(), 0u);
  auto dev = Device::create(**inst);
  ASSERT_TRUE(dev.ok()) << dev.status().to_string();
  const Capabilities& caps = (*dev)->capabilities();
  EXPECT_FALSE(caps.cooperative_matrix_khr_hidden);
  bool offered = std::find(caps.notable_extensions.begin(), caps.notable_extensions.end(),
                           "VK_KHR_cooperative_matrix") != caps.notable_extensions.end();
  if (offered) {
    EXPECT_TRUE(caps.cooperative_matrix_khr);
    EXPECT_FALSE(caps.cooperative_matrix_shapes.empty());
    EXPECT_TRUE((*dev)->enabled().cooperative_matrix_khr);
    std::cout << caps.to_text();
  }
}

TEST(VulkanInstanceTest, RejectsTooOldApiVersion) {
  InstanceOptions options;
  options.max_api_version = VK_API_VERSION_1_0;
  StatusOr<std::unique_ptr<Instance>> inst = Instance::create(options);
  KILN_VULKAN_TEST_NEEDS(inst.status().code() != StatusCode::kUnavailable, inst.status().to_string());
  EXPECT_EQ(inst.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(inst.status().message().find("1.1"), std::string::npos);
}

// Submitter::wait_before_next: the next submission (only it) waits on the
// GPU for another timeline -- how a run slot on a second queue waits for
// the weights the first slot's queue wrote. Here the "other queue" is the
// host, which signals the semaphore itself.
TEST_F(VulkanTest, WaitBeforeNextGatesOnlyTheNextSubmission) {
  ASSERT_TRUE(device().enabled().timeline_semaphore);
  auto submitter = Submitter::create(device(), device().queue_count() - 1);
  ASSERT_TRUE(submitter.ok()) << submitter.status().to_string();
  EXPECT_EQ((*submitter)->queue_index(), device().queue_count() - 1);
  VkSemaphoreTypeCreateInfo type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
  type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  VkSemaphoreCreateInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
  info.pNext = &type;
  VkSemaphore other = VK_NULL_HANDLE;
  ASSERT_EQ(device().fn().vkCreateSemaphore(device().handle(), &info, nullptr, &other), VK_SUCCESS);
  auto cmd = (*submitter)->allocate();
  ASSERT_TRUE(cmd.ok());
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT;
  ASSERT_EQ(device().fn().vkBeginCommandBuffer(*cmd, &begin), VK_SUCCESS);
  ASSERT_EQ(device().fn().vkEndCommandBuffer(*cmd), VK_SUCCESS);

  (*submitter)->wait_before_next({other, 1, 0});
  auto gated = (*submitter)->submit_async({*cmd});
  ASSERT_TRUE(gated.ok()) << gated.status().to_string();
  // Not before the other timeline reaches 1.
  EXPECT_EQ((*submitter)->wait(*gated, 20'000'000).code(), StatusCode::kUnavailable);
  VkSemaphoreSignalInfo signal{VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO};
  signal.semaphore = other;
  signal.value = 1;
  ASSERT_EQ(device().fn().vkSignalSemaphore(device().handle(), &signal), VK_SUCCESS);
  EXPECT_TRUE((*submitter)->wait(*gated).ok());
  // The wait was consumed: the next submission does not wait for value 2.
  auto next = (*submitter)->submit_async({*cmd});
  ASSERT_TRUE(next.ok());
  EXPECT_TRUE((*submitter)->wait(*next, 5'000'000'000ull).ok());
  submitter->reset();
  device().fn().vkDestroySemaphore(device().handle(), other, nullptr);
}

}  // namespace
}  // namespace kiln::vk
