// Test helper for the C API's Vulkan tests: the validated test device
// described as a host application ("game") describes its own to
// kiln_vulkan_device_wrap.
#pragma once

#include "kiln/kiln_vulkan.h"
#include "platform/vulkan/device.h"
#include "platform/vulkan/instance.h"

namespace kiln::capi::testing {

// `instance` and `device`'s handles, queue 0 of the device's queue family,
// the features the host says it enabled (nullptr: none said), and `gipa`
// (nullptr: the instance's own vkGetInstanceProcAddr). `features` is read
// by the wrap call, not kept.
inline kiln_vulkan_host_device_t host_device(const kiln::vk::Instance& instance, const kiln::vk::Device& device,
                                             const VkPhysicalDeviceFeatures2* features = nullptr,
                                             PFN_vkGetInstanceProcAddr gipa = nullptr) {
  kiln_vulkan_host_device_t h{};
  h.struct_size = sizeof(h);
  h.instance = instance.handle();
  h.instance_api_version = instance.api_version();
  h.get_instance_proc_addr = gipa ? gipa : instance.fn().vkGetInstanceProcAddr;
  h.physical_device = device.physical_device();
  h.device = device.handle();
  h.queue_family_index = device.queue_family();
  h.queue_index = 0;
  h.enabled_features = features;
  return h;
}

}  // namespace kiln::capi::testing
