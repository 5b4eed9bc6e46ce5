// A logical Vulkan device with its own dispatch table: created by Kiln on a
// chosen physical device, or wrapping (borrowing) a host's device and queue.
//
// Every Vulkan call Kiln makes on a device goes through fn(), a volk
// VolkDeviceTable loaded for that device alone, and every VkResult goes
// through check(), which maps it to a Status and remembers the first device
// loss: once lost, every later call on this Device returns that first error
// instead of touching the GPU. A wrapped device is never destroyed by Kiln.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/status.h"
#include "platform/vulkan/capabilities.h"
#include "platform/vulkan/device_clock.h"
#include "platform/vulkan/instance.h"
#include "platform/vulkan/vk_status.h"

namespace kiln::vk {

struct DeviceOptions {
  // Which physical device: "" picks the best one (discrete, then integrated,
  // virtual, CPU; driver order within a kind); a decimal number picks that
  // index in the driver's order; anything else picks the first device whose
  // name contains it, ignoring case.
  std::string selector;
};

// The features Kiln may use on this device: supported by the device AND
// enabled when the VkDevice was created (by Kiln, or as the host reported).
struct EnabledFeatures {
  bool shader_float16 = false;
  bool shader_int8 = false;
  bool shader_int16 = false;
  bool shader_int64 = false;
  bool storage_buffer_16bit = false;
  bool storage_buffer_8bit = false;
  bool storage_push_constant_16bit = false;
  bool timeline_semaphore = false;
  bool synchronization2 = false;
  bool host_query_reset = false;
  bool subgroup_size_control = false;
  bool compute_full_subgroups = false;
  bool vulkan_memory_model = false;
  bool cooperative_matrix_khr = false;
  bool cooperative_matrix_nv = false;  // VK_NV_cooperative_matrix (GL_NV_cooperative_matrix kernels)
  bool buffer_float32_atomic_add = false;  // VK_EXT_shader_atomic_float: atomicAdd(float) on buffers
  bool shader_integer_dot_product = false;  // Vulkan 1.3 shaderIntegerDotProduct: packed int8 dot products
  bool memory_budget = false;  // VK_EXT_memory_budget enabled
  // VK_EXT_calibrated_timestamps enabled, with the device and
  // CLOCK_MONOTONIC time domains (Device::clock()).
  bool calibrated_timestamps = false;
  // VK_KHR_pipeline_executable_properties with pipelineExecutableInfo:
  // pipelines capture the driver's statistics (pipeline_statistics.h). Only
  // asked for while $KILN_PIPELINE_STATS names a file.
  bool pipeline_executable_info = false;
};

// What a host hands Kiln to run on its device. All handles are borrowed: they
// must stay valid until the Kiln Device is destroyed, and Kiln destroys none.
struct HostVulkanHandles {
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical_device = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  uint32_t queue_family_index = 0;
  uint32_t queue_index = 0;
  PFN_vkGetInstanceProcAddr get_instance_proc_addr = nullptr;
  // The apiVersion the host's VkInstance was created with; 0 means 1.1.
  uint32_t instance_api_version = 0;
  // Optional: the VkPhysicalDeviceFeatures2 chain the host passed to
  // vkCreateDevice (read during wrap(), not kept). Kiln uses only features it
  // finds enabled there; with none given it assumes core Vulkan 1.0 features
  // only and falls back accordingly (fences instead of timeline semaphores).
  const VkPhysicalDeviceFeatures2* enabled_features = nullptr;
  // Optional: the device extensions the host enabled (e.g. VK_EXT_memory_budget).
  std::vector<std::string> enabled_extensions;
};

class Device {
 public:
  // Creates a device on the physical device `options.selector` names, with
  // up to kMaxQueues queues of one compute family (as many as the family
  // has: runs submitted to different queues may execute at once) and every
  // optional feature Kiln uses that the device supports. `instance` is borrowed and must outlive the Device.
  // Errors: kNotFound (no device matches; the message lists the devices),
  // kUnavailable (no Vulkan device, device older than 1.1, no compute queue),
  // VkResult errors from vkCreateDevice.
  static StatusOr<std::unique_ptr<Device>> create(const Instance& instance, const DeviceOptions& options = {});

  // Wraps a host's device; see HostVulkanHandles for what is borrowed.
  // Errors: kInvalidArgument for null handles or a queue family/index the
  // physical device does not have or that cannot run compute; kUnavailable
  // when the instance or device lacks Vulkan 1.1.
  static StatusOr<std::unique_ptr<Device>> wrap(const HostVulkanHandles& host);

  // The index `selector` picks among `instance`'s physical devices (rules as
  // in DeviceOptions). Errors: kNotFound naming the available devices.
  static StatusOr<uint32_t> select_physical_device(const Instance& instance, std::string_view selector);

  // Destroys what Kiln created: after waiting for the queue to go idle, the
  // VkDevice when Kiln created it; for a wrapped device only Kiln's own
  // objects (the host's queue, device and instance are left untouched).
  // Every object made from this Device (arenas, pipelines, submitters) must
  // be destroyed first.
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  VkDevice handle() const { return device_; }
  VkPhysicalDevice physical_device() const { return physical_device_; }
  uint32_t queue_family() const { return queue_family_; }
  // The first queue (a wrapped device's only one: the host's).
  VkQueue queue() const { return queues_.empty() ? VK_NULL_HANDLE : queues_[0]; }
  // How many queues of queue_family() Kiln may submit to: 1 for a wrapped
  // device, else min(the family's queueCount, kMaxQueues).
  uint32_t queue_count() const { return static_cast<uint32_t>(queues_.size()); }
  static constexpr uint32_t kMaxQueues = 16;
  bool borrowed() const { return borrowed_; }
  uint32_t api_version() const { return caps_.api_version; }
  // Valid bits of timestamps on this device's queue; 0 = no timestamps.
  uint32_t timestamp_valid_bits() const { return timestamp_valid_bits_; }
  // Converts timestamps of any of the device's queues to the host's steady
  // clock (available() only with calibrated_timestamps). Thread-safe.
  DeviceClock& clock() const { return clock_; }

  // The device's own dispatch table; never call Vulkan device functions
  // through anything else. Immutable after construction, so thread-safe.
  const VolkDeviceTable& fn() const { return fn_; }
  const InstanceTable& instance_fn() const { return instance_->fn(); }
  const Instance& instance() const { return *instance_; }
  const Capabilities& capabilities() const { return caps_; }
  const EnabledFeatures& enabled() const { return enabled_; }

  // OK, or the first device loss. Thread-safe.
  Status status() const { return sticky_.status(); }
  bool lost() const { return sticky_.lost(); }
  // Maps `result` to a Status (see vk_status()); a device loss is recorded
  // and returned by every later check()/status(), whatever their result.
  // Thread-safe.
  Status check(VkResult result, std::string_view what) { return sticky_.check(result, what); }

  // vkQueueSubmit to queue `queue_index` (< queue_count()) under that
  // queue's lock (Vulkan requires external synchronization of a queue). A
  // host sharing a wrapped queue must not submit to it concurrently with
  // Kiln. Thread-safe.
  Status queue_submit(uint32_t count, const VkSubmitInfo* submits, VkFence fence, uint32_t queue_index = 0);
  // vkQueueWaitIdle on every queue, each under its lock. Thread-safe.
  Status wait_idle();

  // The index of a memory type allowed by `type_bits` that has all of
  // `required` (and, among those, most of `preferred`), or kNotFound.
  StatusOr<uint32_t> find_memory_type(uint32_t type_bits, VkMemoryPropertyFlags required,
                                      VkMemoryPropertyFlags preferred = 0) const;
  const VkPhysicalDeviceMemoryProperties& memory_properties() const { return memory_properties_; }
  // Current heap sizes, with budget/usage when VK_EXT_memory_budget is enabled.
  std::vector<MemoryHeapInfo> memory_heaps() const;

  // A nearest-filter, clamp-to-edge sampler for sampled-image descriptors
  // (kernels read texels with texelFetch). Owned by the Device.
  VkSampler nearest_sampler() const { return sampler_; }

 private:
  Device() = default;
  Status finish_init();

  std::unique_ptr<Instance> owned_instance_;  // set by wrap()
  const Instance* instance_ = nullptr;
  VkPhysicalDevice physical_device_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  std::vector<VkQueue> queues_;
  uint32_t queue_family_ = 0;
  uint32_t created_queue_count_ = 1;  // queues vkCreateDevice made (create())
  uint32_t timestamp_valid_bits_ = 0;
  bool borrowed_ = false;
  VolkDeviceTable fn_{};
  Capabilities caps_;
  EnabledFeatures enabled_;
  VkPhysicalDeviceMemoryProperties memory_properties_{};
  VkSampler sampler_ = VK_NULL_HANDLE;
  StickyStatus sticky_;
  mutable DeviceClock clock_;
  std::unique_ptr<std::mutex[]> queue_mutexes_{new std::mutex[kMaxQueues]};
};

}  // namespace kiln::vk
