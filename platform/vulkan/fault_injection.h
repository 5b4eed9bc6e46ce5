// Fault injection for tests: fail the Nth memory allocation, queue
// submission, pipeline creation or shader compilation with a chosen VkResult
// (VK_ERROR_DEVICE_LOST simulates losing the device).
//
// Failures a driver reports rarely (out of memory, a lost device, a compiler
// that gives up) are the ones whose error paths never run in tests. Each
// such call in the platform layer asks injected_fault() first; a test arms
// one site with arm_fault() and runs a whole model, then checks that the
// failure came back as a status, nothing leaked and the context still works
// (or, after a device loss, keeps reporting it: Device::check records an
// injected loss like a real one).
//
// Always compiled in: disarmed, a call costs one relaxed atomic increment
// (the call counter a sweep reads) and one load, at sites that are far from
// hot (allocations, submissions, pipeline and shader builds).
//
// Thread-safety: every function is thread-safe; the counters are
// process-wide, so a test that arms a fault must not run other Vulkan work
// concurrently.
#pragma once

#include <cstdint>

#include <volk.h>

namespace kiln::vk {

enum class FaultSite : uint8_t {
  kAllocation,         // vkAllocateMemory (arenas, host buffers, staging)
  kSubmission,         // vkQueueSubmit (Device::queue_submit)
  kPipelineCreation,   // vkCreateComputePipelines
  kShaderCompilation,  // ShaderCompiler::compile (GLSL -> SPIR-V)
};
inline constexpr int kFaultSiteCount = 4;

// "allocation", "submission", "pipeline creation", "shader compilation".
const char* fault_site_name(FaultSite site);

// From now on the `nth` call (1-based) at `site` fails with `result`, once;
// resets every site's call counter. nth = 0 arms nothing (only resets).
void arm_fault(FaultSite site, uint64_t nth, VkResult result);
// Disarms and resets the call counters.
void disarm_fault();
// Calls seen at `site` since the last arm_fault/disarm_fault.
uint64_t fault_site_calls(FaultSite site);
// Whether the armed failure has been returned since arm_fault.
bool fault_fired();

// The hook each site calls before the real call: VK_SUCCESS, or the armed
// result when this is the armed call (the real call is then skipped).
VkResult injected_fault(FaultSite site);

// `call()` unless the fault at `site` fires, whose result is returned instead.
template <class Call>
VkResult call_unless_fault(FaultSite site, Call&& call) {
  const VkResult injected = injected_fault(site);
  return injected != VK_SUCCESS ? injected : call();
}

}  // namespace kiln::vk
