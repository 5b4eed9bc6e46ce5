// The one VkResult -> Status mapping; see vk_status.h.
#include "platform/vulkan/vk_status.h"

#include <string>

namespace kiln::vk {

const char* vk_result_name(VkResult result) {
  switch (result) {
#define KILN_VK_RESULT_CASE(name) \
  case name:                      \
    return #name;
    KILN_VK_RESULT_CASE(VK_SUCCESS)
    KILN_VK_RESULT_CASE(VK_NOT_READY)
    KILN_VK_RESULT_CASE(VK_TIMEOUT)
    KILN_VK_RESULT_CASE(VK_EVENT_SET)
    KILN_VK_RESULT_CASE(VK_EVENT_RESET)
    KILN_VK_RESULT_CASE(VK_INCOMPLETE)
    KILN_VK_RESULT_CASE(VK_ERROR_OUT_OF_HOST_MEMORY)
    KILN_VK_RESULT_CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    KILN_VK_RESULT_CASE(VK_ERROR_INITIALIZATION_FAILED)
    KILN_VK_RESULT_CASE(VK_ERROR_DEVICE_LOST)
    KILN_VK_RESULT_CASE(VK_ERROR_MEMORY_MAP_FAILED)
    KILN_VK_RESULT_CASE(VK_ERROR_LAYER_NOT_PRESENT)
    KILN_VK_RESULT_CASE(VK_ERROR_EXTENSION_NOT_PRESENT)
    KILN_VK_RESULT_CASE(VK_ERROR_FEATURE_NOT_PRESENT)
    KILN_VK_RESULT_CASE(VK_ERROR_INCOMPATIBLE_DRIVER)
    KILN_VK_RESULT_CASE(VK_ERROR_TOO_MANY_OBJECTS)
    KILN_VK_RESULT_CASE(VK_ERROR_FORMAT_NOT_SUPPORTED)
    KILN_VK_RESULT_CASE(VK_ERROR_FRAGMENTED_POOL)
    KILN_VK_RESULT_CASE(VK_ERROR_UNKNOWN)
    KILN_VK_RESULT_CASE(VK_ERROR_OUT_OF_POOL_MEMORY)
    KILN_VK_RESULT_CASE(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    KILN_VK_RESULT_CASE(VK_ERROR_FRAGMENTATION)
    KILN_VK_RESULT_CASE(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
    KILN_VK_RESULT_CASE(VK_PIPELINE_COMPILE_REQUIRED)
    KILN_VK_RESULT_CASE(VK_ERROR_SURFACE_LOST_KHR)
    KILN_VK_RESULT_CASE(VK_ERROR_NATIVE_WINDOW_IN_USE_KHR)
    KILN_VK_RESULT_CASE(VK_SUBOPTIMAL_KHR)
    KILN_VK_RESULT_CASE(VK_ERROR_OUT_OF_DATE_KHR)
    KILN_VK_RESULT_CASE(VK_ERROR_INCOMPATIBLE_DISPLAY_KHR)
    KILN_VK_RESULT_CASE(VK_ERROR_VALIDATION_FAILED_EXT)
    KILN_VK_RESULT_CASE(VK_ERROR_INVALID_SHADER_NV)
    KILN_VK_RESULT_CASE(VK_ERROR_INVALID_DRM_FORMAT_MODIFIER_PLANE_LAYOUT_EXT)
    KILN_VK_RESULT_CASE(VK_ERROR_NOT_PERMITTED_KHR)
    KILN_VK_RESULT_CASE(VK_THREAD_IDLE_KHR)
    KILN_VK_RESULT_CASE(VK_THREAD_DONE_KHR)
    KILN_VK_RESULT_CASE(VK_OPERATION_DEFERRED_KHR)
    KILN_VK_RESULT_CASE(VK_OPERATION_NOT_DEFERRED_KHR)
    KILN_VK_RESULT_CASE(VK_ERROR_COMPRESSION_EXHAUSTED_EXT)
#undef KILN_VK_RESULT_CASE
    default:
      break;
  }
  return nullptr;
}

StatusCode vk_status_code(VkResult result) {
  if (result >= 0) return StatusCode::kOk;
  switch (result) {
    case VK_ERROR_DEVICE_LOST:
      return StatusCode::kDeviceLost;
    case VK_ERROR_OUT_OF_HOST_MEMORY:
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
    case VK_ERROR_OUT_OF_POOL_MEMORY:
    case VK_ERROR_FRAGMENTED_POOL:
    case VK_ERROR_FRAGMENTATION:
    case VK_ERROR_TOO_MANY_OBJECTS:
      return StatusCode::kOutOfMemory;
    case VK_ERROR_INITIALIZATION_FAILED:
    case VK_ERROR_INCOMPATIBLE_DRIVER:
    case VK_ERROR_LAYER_NOT_PRESENT:
    case VK_ERROR_SURFACE_LOST_KHR:
      return StatusCode::kUnavailable;
    case VK_ERROR_EXTENSION_NOT_PRESENT:
    case VK_ERROR_FEATURE_NOT_PRESENT:
    case VK_ERROR_FORMAT_NOT_SUPPORTED:
      return StatusCode::kUnimplemented;
    case VK_ERROR_MEMORY_MAP_FAILED:
      return StatusCode::kOutOfMemory;
    case VK_ERROR_NOT_PERMITTED_KHR:
      return StatusCode::kPermissionDenied;
    default:
      return StatusCode::kInternal;
  }
}

Status vk_status(VkResult result, std::string_view what) {
  StatusCode code = vk_status_code(result);
  if (code == StatusCode::kOk) return ok_status();
  std::string message(what);
  message += ": ";
  if (const char* name = vk_result_name(result)) {
    message += name;
  } else {
    message += "VK_RESULT(" + std::to_string(static_cast<int>(result)) + ")";
  }
  return Status(code, std::move(message));
}

Status StickyStatus::check(VkResult result, std::string_view what) {
  if (lost()) return status();
  Status s = vk_status(result, what);
  if (s.code() == StatusCode::kDeviceLost) return record(s);
  return s;
}

Status StickyStatus::status() const {
  if (!lost()) return ok_status();
  std::lock_guard<std::mutex> lock(mutex_);
  return first_loss_;
}

Status StickyStatus::record(const Status& status) {
  if (status.code() != StatusCode::kDeviceLost) return this->status();
  std::lock_guard<std::mutex> lock(mutex_);
  if (!lost_.load(std::memory_order_relaxed)) {
    first_loss_ = status;
    lost_.store(true, std::memory_order_release);
  }
  return first_loss_;
}

}  // namespace kiln::vk
