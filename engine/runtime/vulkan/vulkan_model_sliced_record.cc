// VulkanModel::record_slice: a run recorded into the host's command buffers
// a slice at a time, so that a model longer than a frame's GPU budget runs
// over several frames (a 50 ms model at 5 ms a frame). It is record_into
// cut into pieces: the same signature (host_recordable), the same recorder
// (Recorder::record_slice_into, one entry and one exit barrier per slice),
// and the same activation memory, which stays allocated and untouched
// between slices because the model remembers the run in progress
// (Impl::sliced) and refuses to continue it once anything else ran. How
// many dispatches fit a slice is slice_plan.h's: each dispatch costs its
// GPU time in the last profiled run when every dispatch has one, else the
// device-class rate model over its FLOPs and bytes.
#include <cmath>
#include <string>

#include "engine/runtime/vulkan/control_flow_executor.h"
#include "engine/runtime/vulkan/recorder.h"
#include "engine/runtime/vulkan/slice_plan.h"
#include "engine/runtime/vulkan/vulkan_model_impl.h"

namespace kiln::runtime {

namespace {

DeviceClass device_class(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return DeviceClass::kDiscreteGpu;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return DeviceClass::kIntegratedGpu;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return DeviceClass::kCpu;
    default: return DeviceClass::kOther;
  }
}

}  // namespace

StatusOr<SliceProgress> VulkanModel::Impl::record_slice(VkCommandBuffer cmd, const DeviceBindings& bindings,
                                                        const SliceOptions& opts) {
  KILN_RETURN_IF_ERROR(device.status());
  if (cmd == VK_NULL_HANDLE) return invalid_argument("the command buffer to record into is VK_NULL_HANDLE");
  if (std::isnan(opts.budget_us) || opts.budget_us < 0)
    return invalid_argument("the slice budget is " + std::to_string(opts.budget_us) +
                            " us; give a positive number of microseconds (or 0 with a dispatch count)");
  if (opts.budget_us == 0 && opts.max_dispatches == 0)
    return invalid_argument("a slice needs a limit: a GPU time budget in microseconds, a dispatch count, or both");
  std::lock_guard<std::mutex> lock(mutex);
  if (opts.restart) sliced.reset();
  if (sliced && (!sliced->sig || sliced->stamp != runs)) {
    const std::string why = !sliced->sig ? "its recorded commands were dropped (a forgotten buffer or image, or "
                                           "more input shapes and bindings than max_signatures)"
                                         : "another run of the session (run, submit or record) used the activation "
                                           "memory its later slices read";
    const std::string done = std::to_string(sliced->next) + " of " + std::to_string(sliced->cost_us.size());
    sliced.reset();
    return failed_precondition("the sliced run in progress was interrupted after " + done + " dispatches: " + why +
                               "; its outputs will not be written. The next call starts a new run");
  }
  if (!sliced) {
    KILN_ASSIGN_OR_RETURN(Signature* sig, host_recordable(bindings));
    SlicedRun run;
    run.sig = sig;
    run.measured = true;
    for (const Segment& seg : sig->segments)
      run.measured = run.measured && seg.measured_ms.size() == seg.dispatches.size();
    const DeviceRates rates = device_rates(device_class(device.capabilities().device_type));
    for (const Segment& seg : sig->segments)
      for (size_t d = 0; d < seg.dispatches.size(); ++d) {
        if (run.measured) {
          run.cost_us.push_back(seg.measured_ms[d] * 1000.0);
          continue;
        }
        const Segment::Traffic t = kernel_traffic(plan.steps[seg.dispatches[d].step].kernel, *sig);
        run.cost_us.push_back(modelled_dispatch_us(rates, t.flops, t.read + t.written));
      }
    sliced = std::move(run);
  } else {
    sliced->sig->last_run = ++runs;  // the most recently used: kept by eviction
  }
  SlicedRun& run = *sliced;
  SliceProgress progress;
  progress.total = static_cast<uint32_t>(run.cost_us.size());
  progress.index = run.slices;
  progress.measured = run.measured;
  for (double c : run.cost_us) progress.estimated_run_us += c;
  const size_t first = run.next;
  const size_t end = run.cost_us.empty() ? 0 : slice_end(run.cost_us, first, opts.budget_us, opts.max_dispatches);
  Status recorded = host_recorder().record_slice_into(*run.sig, cmd, first, end);
  if (!recorded.ok()) {
    sliced.reset();  // the host discards the command buffer; the run starts again
    return recorded;
  }
  for (size_t d = first; d < end; ++d) progress.estimated_us += run.cost_us[d];
  progress.recorded = static_cast<uint32_t>(end - first);
  progress.left = static_cast<uint32_t>(run.cost_us.size() - end);
  run.next = end;
  ++run.slices;
  run.stamp = runs;
  if (progress.left == 0) sliced.reset();
  return progress;
}

StatusOr<SliceProgress> VulkanModel::record_slice(VkCommandBuffer cmd, const DeviceBindings& bindings,
                                                  const SliceOptions& opts) const {
  return slots_[0]->record_slice(cmd, bindings, opts);
}

}  // namespace kiln::runtime
