// A Vulkan instance: created by Kiln (CLI, tests) or borrowed from a host.
//
// Embedding comes first: a host hands Kiln its VkInstance and the
// vkGetInstanceProcAddr it was created with, and Kiln never destroys it.
// Creating an instance is a convenience for the CLI and the tests; it can turn
// on the Khronos validation layer (optionally with synchronization
// validation) and records every warning and error the layer reports, so a
// test can fail on any validation message.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/base/status.h"
#include "platform/vulkan/vk_loader.h"

namespace kiln::vk {

enum class Validation {
  kOff,          // no layer
  kIfAvailable,  // enable VK_LAYER_KHRONOS_validation when installed
  kRequired,     // fail with kUnavailable when it is not installed
};

struct DebugMessage {
  VkDebugUtilsMessageSeverityFlagBitsEXT severity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  int32_t id_number = 0;
  std::string id_name;
  std::string text;
  bool is_error() const { return severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT; }
};

struct InstanceOptions {
  std::string application_name = "kiln";
  Validation validation = Validation::kOff;
  // With validation on: also enable synchronization validation (hazards
  // between commands), which the tests rely on to catch missing barriers.
  bool synchronization_validation = true;
  // Highest Vulkan version to request; clamped to what the loader supports.
  // Kiln needs at least 1.1.
  uint32_t max_api_version = VK_API_VERSION_1_3;
  // Called (from whichever thread the driver reports on) for every warning
  // and error message, after it is recorded. Must be thread-safe.
  std::function<void(const DebugMessage&)> on_message;
};

class Instance {
 public:
  // Creates an instance through the system loader. Errors: kUnavailable when
  // there is no loader, the loader is older than Vulkan 1.1, or validation is
  // kRequired and the layer is missing; VkResult errors from vkCreateInstance.
  static StatusOr<std::unique_ptr<Instance>> create(const InstanceOptions& options = {});

  // Wraps a host's instance. `instance` is borrowed: it must outlive this
  // object and every Device made from it, and is never destroyed by Kiln.
  // `api_version` is the apiVersion the host created it with (0 = 1.1).
  // Errors: kInvalidArgument for null handles, kUnavailable when the instance
  // lacks a Vulkan 1.1 entry point Kiln needs.
  static StatusOr<std::unique_ptr<Instance>> wrap(VkInstance instance, PFN_vkGetInstanceProcAddr get_instance_proc_addr,
                                                  uint32_t api_version);

  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  VkInstance handle() const { return instance_; }
  const InstanceTable& fn() const { return fn_; }
  uint32_t api_version() const { return api_version_; }
  bool borrowed() const { return borrowed_; }
  bool validation_enabled() const { return validation_enabled_; }
  // The enabled validation layer's specVersion; 0 without validation (and
  // for borrowed instances, whose layers Kiln cannot see). A layer validates
  // only the structures its headers knew, so Kiln leaves newer ones (e.g.
  // VK_KHR_cooperative_matrix before 1.3.255) out of its queries when an
  // older layer is active, rather than trip it.
  uint32_t validation_layer_version() const { return validation_layer_version_; }

  // The physical devices, in the driver's order (the order device indices
  // refer to). Thread-safe.
  StatusOr<std::vector<VkPhysicalDevice>> physical_devices() const;

  // Validation messages recorded so far (warnings and errors; at most the
  // first 256 are kept, the counts are exact). Thread-safe.
  std::vector<DebugMessage> messages() const;
  uint64_t error_count() const;
  uint64_t warning_count() const;
  void clear_messages();

 private:
  Instance() = default;
  static VKAPI_ATTR VkBool32 VKAPI_CALL debug_callback(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                       VkDebugUtilsMessageTypeFlagsEXT types,
                                                       const VkDebugUtilsMessengerCallbackDataEXT* data,
                                                       void* user_data);
  void record(DebugMessage message);

  VkInstance instance_ = VK_NULL_HANDLE;
  InstanceTable fn_;
  uint32_t api_version_ = VK_API_VERSION_1_1;
  bool borrowed_ = false;
  bool validation_enabled_ = false;
  uint32_t validation_layer_version_ = 0;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  std::function<void(const DebugMessage&)> on_message_;

  mutable std::mutex messages_mutex_;
  std::vector<DebugMessage> messages_;
  uint64_t error_count_ = 0;
  uint64_t warning_count_ = 0;
};

}  // namespace kiln::vk
