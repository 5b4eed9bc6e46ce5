// The one VkResult -> kiln::Status mapping, and the sticky device-loss state.
//
// Every Vulkan call in Kiln funnels its VkResult through vk_status() so that
// error codes are mapped in exactly one place (device loss -> kDeviceLost,
// out-of-memory -> kOutOfMemory, no driver -> kUnavailable). A lost device
// stays lost: StickyStatus keeps the first loss and every later call through
// the same Device reports it instead of touching the GPU again.
#pragma once

#include <atomic>
#include <mutex>
#include <string_view>

#include <volk.h>

#include "engine/base/status.h"

namespace kiln::vk {

// "VK_ERROR_DEVICE_LOST" etc.; nullptr for codes this build does not name.
const char* vk_result_name(VkResult result);

// The StatusCode a VkResult maps to. VK_SUCCESS and the other non-negative
// (non-error) codes map to kOk.
StatusCode vk_status_code(VkResult result);

// OK for non-negative results; otherwise an error whose message is
// "<what>: <VK_ERROR_NAME>" with the code from vk_status_code().
Status vk_status(VkResult result, std::string_view what);

// The first device loss seen on one device, returned by every later check.
// Thread-safe: any thread may check() while others read status().
class StickyStatus {
 public:
  // Maps `result` like vk_status(). A kDeviceLost error is remembered (only
  // the first one) and returned by this and every later call, whatever the
  // later result. Other errors are returned but not remembered: an allocation
  // that ran out of memory does not poison the device.
  Status check(VkResult result, std::string_view what);

  // OK until a device loss was recorded; then that first loss.
  Status status() const;

  // True once a device loss was recorded. Lock-free.
  bool lost() const { return lost_.load(std::memory_order_acquire); }

  // Records `status` as the device's loss if it is a kDeviceLost error and
  // none was recorded yet (for losses detected outside a VkResult, e.g. a
  // timeout the caller decides to treat as a hang). Returns status().
  Status record(const Status& status);

 private:
  mutable std::mutex mutex_;
  std::atomic<bool> lost_{false};
  Status first_loss_;
};

}  // namespace kiln::vk
