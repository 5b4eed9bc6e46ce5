// The C API's handle structs and status helpers, shared by kiln_c_api.cc
// (tensors, models, sessions) and kiln_c_api_vulkan.cc (Vulkan devices and
// buffer bindings). Not installed.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "engine/base/status.h"
#include "engine/base/tensor.h"
#include "engine/runtime/reference_executor.h"
#include "engine/runtime/vulkan/vulkan_model.h"
#include "kiln/kiln.h"
#include "platform/vulkan/device.h"
#include "platform/vulkan/instance.h"
#include "platform/vulkan/kernel_cache.h"
#include "platform/vulkan/shader_compiler.h"

struct kiln_status_t {
  kiln_status_code_t code;
  std::string message;
};

struct kiln_tensor_t {
  kiln::Tensor tensor;
};

struct kiln_model_t {
  std::unique_ptr<kiln::ir::Graph> graph;
  std::atomic<int> refs{1};
};

// Members are destroyed in reverse order: the kernel cache (pipelines)
// before the compiler, the device before the instance Kiln created.
struct kiln_vulkan_device_t {
  std::unique_ptr<kiln::vk::Instance> instance;  // null for a wrapped device
  std::unique_ptr<kiln::vk::Device> device;
  std::unique_ptr<kiln::vk::ShaderCompiler> compiler;
  std::unique_ptr<kiln::vk::KernelCache> cache;
  std::atomic<int> refs{1};
};

struct kiln_session_t {
  kiln_model_t* model = nullptr;  // retained
  kiln_backend_t backend = KILN_BACKEND_REFERENCE;
  std::unique_ptr<kiln::runtime::ReferenceExecutor> reference;
  kiln_vulkan_device_t* vulkan = nullptr;  // retained
  std::unique_ptr<kiln::runtime::VulkanModel> vulkan_model;
  std::mutex bindings_mutex;  // guards `bindings` (runs copy them)
  kiln::runtime::DeviceBindings bindings;
  mutable std::mutex stats_mutex;  // guards `last` and `has_last`
  kiln::runtime::VulkanRunStats last;  // the last completed run
  bool has_last = false;
};

namespace kiln::capi {

inline kiln_status_t* make_status(kiln_status_code_t code, std::string message) {
  return new kiln_status_t{code, std::move(message)};
}

inline kiln_status_t* to_c(const Status& status) {
  if (status.ok()) return nullptr;
  return make_status(static_cast<kiln_status_code_t>(status.code()), status.message());
}

inline kiln_status_t* null_arg(const char* what) {
  return make_status(KILN_INVALID_ARGUMENT, std::string(what) + " must not be NULL");
}

// A Kiln-created Vulkan device (selector as kiln_vulkan_device_options_t).
StatusOr<kiln_vulkan_device_t*> create_vulkan_device(const char* selector, const char* kernel_cache_dir);

}  // namespace kiln::capi
