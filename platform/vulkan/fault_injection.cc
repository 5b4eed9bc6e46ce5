// Fault injection for tests; see fault_injection.h.
#include "platform/vulkan/fault_injection.h"

#include <atomic>

namespace kiln::vk {
namespace {

std::atomic<uint64_t> g_calls[kFaultSiteCount];
std::atomic<int> g_armed_site{-1};  // -1: disarmed
std::atomic<uint64_t> g_armed_call{0};
std::atomic<int32_t> g_armed_result{VK_SUCCESS};
std::atomic<bool> g_fired{false};

void reset_counters() {
  for (auto& c : g_calls) c.store(0, std::memory_order_relaxed);
  g_fired.store(false, std::memory_order_relaxed);
}

}  // namespace

const char* fault_site_name(FaultSite site) {
  switch (site) {
    case FaultSite::kAllocation: return "allocation";
    case FaultSite::kSubmission: return "submission";
    case FaultSite::kPipelineCreation: return "pipeline creation";
    case FaultSite::kShaderCompilation: return "shader compilation";
  }
  return "unknown";
}

void arm_fault(FaultSite site, uint64_t nth, VkResult result) {
  g_armed_site.store(-1, std::memory_order_release);
  reset_counters();
  if (nth == 0) return;
  g_armed_call.store(nth, std::memory_order_relaxed);
  g_armed_result.store(result, std::memory_order_relaxed);
  g_armed_site.store(static_cast<int>(site), std::memory_order_release);
}

void disarm_fault() { arm_fault(FaultSite::kAllocation, 0, VK_SUCCESS); }

uint64_t fault_site_calls(FaultSite site) {
  return g_calls[static_cast<int>(site)].load(std::memory_order_relaxed);
}

bool fault_fired() { return g_fired.load(std::memory_order_acquire); }

VkResult injected_fault(FaultSite site) {
  const uint64_t call = g_calls[static_cast<int>(site)].fetch_add(1, std::memory_order_relaxed) + 1;
  if (g_armed_site.load(std::memory_order_acquire) != static_cast<int>(site)) return VK_SUCCESS;
  if (call != g_armed_call.load(std::memory_order_relaxed)) return VK_SUCCESS;
  g_fired.store(true, std::memory_order_release);
  return static_cast<VkResult>(g_armed_result.load(std::memory_order_relaxed));
}

}  // namespace kiln::vk
