// The C API's handle structs and status helpers, shared by kiln_c_api.cc
// (tensors, models, sessions) and kiln_c_api_vulkan.cc (Vulkan devices and
// buffer bindings). Not installed.
#pragma once

#include <atomic>
#include <chrono>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/base/status.h"
#include "engine/base/tensor.h"
#include "engine/runtime/vulkan/vulkan_context.h"
#include "engine/runtime/vulkan/vulkan_model.h"
#include "engine/session/session.h"
#include "kiln/kiln.h"

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
  // Text the input queries hand out (kiln_model_input_info/_dim), made at
  // load so a shared model is never written afterwards.
  std::vector<std::string> input_shape_text;
  std::vector<std::vector<std::string>> input_dim_text;
};

struct kiln_vulkan_device_t {
  std::unique_ptr<kiln::runtime::VulkanContext> context;
  std::atomic<int> refs{1};
};

// The C handle over the engine session (engine/session/session.h), plus what
// only the C API keeps: buffer bindings and the last run's statistics.
struct kiln_session_t {
  kiln_model_t* model = nullptr;           // retained
  kiln_vulkan_device_t* vulkan = nullptr;  // retained when the caller gave one
  std::unique_ptr<kiln::session::Session> engine;
  std::mutex bindings_mutex;  // guards `bindings` (runs copy them)
  kiln::runtime::DeviceBindings bindings;
  mutable std::mutex stats_mutex;  // guards `last` and `has_last`
  kiln::runtime::RunStats last;    // the last completed run
  bool has_last = false;
  // As asked for, for the session's description ("buffer"/"image", "fp32"/"fp16").
  std::string storage = "buffer";
  std::string precision = "fp32";

  // Null unless the session runs on Vulkan.
  kiln::runtime::VulkanModel* vulkan_model() const { return engine ? engine->vulkan_model() : nullptr; }
  kiln::runtime::VulkanContext* vulkan_context() const { return engine ? engine->vulkan_context() : nullptr; }

  // Drops every binding `matches` (kiln_session_forget_vulkan_buffer/_image).
  template <typename Pred>
  void erase_bindings_if(Pred matches) {
    std::lock_guard<std::mutex> lock(bindings_mutex);
    for (auto it = bindings.begin(); it != bindings.end();) it = matches(it->second) ? bindings.erase(it) : std::next(it);
  }
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

// Hands `out` to the caller as kiln_tensor_t handles in out_outputs (a
// private copy of each; NULL for an output bound to a device buffer).
kiln_status_t* copy_outputs(std::vector<Tensor>& out, kiln_tensor_t** out_outputs);

// A heap copy of `text` for the caller to free with kiln_string_free.
kiln_status_t* return_string(const std::string& text, char** out_text);


}  // namespace kiln::capi
