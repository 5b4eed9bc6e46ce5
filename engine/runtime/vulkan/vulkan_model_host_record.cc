// VulkanModel::record_into: a run recorded into the host's own command
// buffer (a game's frame) instead of Kiln's. The signature is made and
// recorded as for run() (descriptor sets, pipelines, memory); then its
// dispatches are recorded once more, into the host's command buffer,
// between an entry and an exit barrier (Recorder::record_into). Only a run
// that needs nothing from the host between its kernels, and whose inputs
// and outputs all live in the host's VkBuffers, can be handed over like
// this: staging copies and readbacks need Kiln to know when the GPU is done.
// A game records every frame, mostly with the bindings of the frame before:
// those reuse a recent call's checks (host_checks) and the signature's flat
// commands (HostCommands), so a frame's call costs little more than the
// Vulkan commands it records, or less: with a queue family for a secondary
// command buffer (host_secondaries.h), one vkCmdExecuteCommands.
#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>

#include "engine/runtime/vulkan/recorder.h"
#include "engine/runtime/vulkan/vulkan_model_impl.h"

namespace kiln::runtime {

StatusOr<Signature*> VulkanModel::Impl::host_recordable(const DeviceBindings& bindings) {
  // A game's every frame: the bindings of a recent call, whose signature
  // is still recorded (release() forgets it otherwise). The checks below
  // depend on the bindings and the signature only, so they hold again.
  for (size_t i = 0; i < host_checks.size(); ++i) {
    if (host_checks[i].bindings != bindings) continue;
    if (i != 0) std::rotate(host_checks.begin(), host_checks.begin() + static_cast<std::ptrdiff_t>(i),
                            host_checks.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    Signature* sig = host_checks.front().sig;
    sig->last_run = ++runs;
    if (!owns_memory(*sig)) KILN_RETURN_IF_ERROR(restore_arena(*sig));
    return sig;
  }
  const ir::Region& main = graph.main();
  const std::string why = "recorded into the host's command buffer: ";
  for (ir::ValueId v : main.inputs)
    if (!bindings.count(graph.value(v).name))
      return failed_precondition("input '" + graph.value(v).name + "' is not bound to a VkBuffer or VkImage; a run " +
                                 why + "reads every input from the host's buffers and images");
  for (ir::ValueId v : main.outputs)
    if (!bindings.count(graph.value(v).name))
      return failed_precondition("output '" + graph.value(v).name + "' is not bound to a VkBuffer or VkImage; a run " +
                                 why + "writes every output into the host's buffers and images");
  const std::vector<Tensor> inputs(main.inputs.size());  // all bound
  KILN_ASSIGN_OR_RETURN(const std::vector<InputSpec> specs, input_specs(inputs, bindings));
  bool created = false;
  KILN_ASSIGN_OR_RETURN(Signature* sig, signature_for(specs, bindings, &created));
  sig->last_run = ++runs;
  std::string blocker = single_submission_blocker(*sig, inputs);
  if (blocker.empty() && (!sig->images.empty() || sig->image_arena))
    blocker = "the plan stores tensors in images (KILN_STORAGE_IMAGE); use buffer storage";
  if (blocker.empty() && sig->staging) blocker = "an output is a graph input or another output (copied back by Kiln)";
  if (blocker.empty())
    for (size_t i = 0; i < plan.outputs.size(); ++i)
      if (!sig->place[static_cast<size_t>(plan.outputs[i])].present ||
          (sig->external.count(planner::memory_root(plan, plan.outputs[i])) == 0 &&
           sig->image_tensors.count(plan.outputs[i]) == 0))
        blocker = "output '" + graph.value(main.outputs[i]).name + "' is computed on the host or is a constant";
  if (!blocker.empty()) return failed_precondition("this run cannot be " + why + blocker);
  if (!owns_memory(*sig)) KILN_RETURN_IF_ERROR(restore_arena(*sig));
  if (host_checks.size() == kHostRecordChecks) host_checks.pop_back();
  host_checks.insert(host_checks.begin(), HostRecordCheck{bindings, sig});
  return sig;
}

Recorder VulkanModel::Impl::host_recorder() {
  return Recorder(device, plan, kernels, pipelines, *descriptors, *submitter, false, options.debug_labels,
                  label_names(), [this](const Signature& s, size_t step) { return host_condition(s, step); });
}

StatusOr<VkCommandBuffer> VulkanModel::Impl::host_secondary(Signature& sig) {
  if (sig.host_secondary != VK_NULL_HANDLE) return sig.host_secondary;
  if (!secondaries) secondaries = std::make_unique<HostSecondaries>(device);
  KILN_ASSIGN_OR_RETURN(sig.host_secondary, secondaries->record([&](VkCommandBuffer secondary) {
    return host_recorder().record_into(sig, secondary);
  }));
  return sig.host_secondary;
}

Status VulkanModel::Impl::record_into(VkCommandBuffer cmd, const DeviceBindings& bindings,
                                      std::optional<uint32_t> via_secondary) {
  KILN_RETURN_IF_ERROR(device.status());
  if (cmd == VK_NULL_HANDLE) return invalid_argument("the command buffer to record into is VK_NULL_HANDLE");
  std::lock_guard<std::mutex> lock(mutex);
  KILN_ASSIGN_OR_RETURN(Signature* sig, host_recordable(bindings));
  if (!via_secondary) return host_recorder().record_into(*sig, cmd);
  // The model's buffers are exclusive to its queue family: a command
  // buffer of another family would use them without an ownership transfer.
  if (*via_secondary != device.queue_family())
    return invalid_argument("queue family " + std::to_string(*via_secondary) + " is not the session's (" +
                            std::to_string(device.queue_family()) +
                            "): Kiln's memory belongs to that family's queues, so its commands run there");
  KILN_ASSIGN_OR_RETURN(VkCommandBuffer secondary, host_secondary(*sig));
  device.fn().vkCmdExecuteCommands(cmd, 1, &secondary);
  return ok_status();
}

Status VulkanModel::record_into(VkCommandBuffer cmd, const DeviceBindings& bindings,
                                std::optional<uint32_t> via_secondary) const {
  return slots_[0]->record_into(cmd, bindings, via_secondary);
}

}  // namespace kiln::runtime
