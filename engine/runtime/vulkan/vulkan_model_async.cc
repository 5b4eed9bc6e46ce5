// Asynchronous runs: VulkanModel::submit returns a ticket (a value of the
// model Submitter's timeline semaphore) without waiting on the CPU;
// poll/wait check or wait for it and read host-memory outputs back.
//
// A signature's recorded command buffers are re-submitted as they are (they
// are recorded with SIMULTANEOUS_USE), each submission after the previous
// one on Kiln's timeline, so runs that share activation memory never
// overlap on the GPU. What must not be overwritten while a submission is
// pending is the signature's staging memory (host-memory inputs and
// outputs): a ticket holds on to it until wait() reads its outputs, or
// until keep_ticket_outputs moves them out because the memory is needed.
#include <string>
#include <utility>

#include "engine/runtime/vulkan/vulkan_model_impl.h"

namespace kiln::runtime {

using planner::PlanStep;

std::string VulkanModel::Impl::single_submission_blocker(const Signature& sig,
                                                         const std::vector<Tensor>& inputs) const {
  auto node_of = [&](size_t step) { return graph.node(plan.steps[step].node).describe(); };
  if (sig.boundary.step != SIZE_MAX)
    return "output shapes depend on tensor values at " + node_of(sig.boundary.step) +
           " (the host reads them back mid-run)";
  for (const Segment& seg : sig.segments) {
    if (seg.fallback_step != SIZE_MAX) return node_of(seg.fallback_step) + " runs on the host";
    if (seg.if_step != SIZE_MAX) return "the host decides " + node_of(seg.if_step) + " mid-run";
    if (seg.loop_step != SIZE_MAX) return "the host drives " + node_of(seg.loop_step) + " mid-run";
  }
  const ir::Region& main = graph.main();
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined() || sig.staged_inputs[i].tensor != planner::kNoTensor) continue;
    if (sig.place[static_cast<size_t>(plan.inputs[i])].present)
      return "input '" + graph.value(main.inputs[i]).name + "' is uploaded outside the command buffer";
  }
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    const TensorId t = plan.outputs[i];
    const planner::PlanTensor& pt = plan.tensors[static_cast<size_t>(t)];
    const bool bound = sig.external.count(planner::memory_root(plan, t)) > 0 || sig.image_tensors.count(t) > 0;
    const bool on_host = pt.constant.defined() || sig.host_values.count(pt.value) > 0 ||
                         shape_numel(sig.shapes[static_cast<size_t>(t)]) == 0;
    if (!bound && !on_host && sig.staged_outputs[i].tensor == planner::kNoTensor)
      return "output '" + graph.value(main.outputs[i]).name + "' is read back outside the command buffer";
  }
  return "";
}

StatusOr<uint64_t> VulkanModel::Impl::submit(const std::vector<Tensor>& inputs, const DeviceBindings& bindings,
                                             const vk::SubmitSync& sync) {
  KILN_RETURN_IF_ERROR(device.status());
  if (!submitter->uses_timeline())
    return failed_precondition("asynchronous runs need timeline semaphores, which the device does not have enabled "
                               "(Vulkan 1.2 timelineSemaphore)");
  KILN_ASSIGN_OR_RETURN(const std::vector<InputSpec> specs, input_specs(inputs, bindings));
  std::lock_guard<std::mutex> lock(mutex);
  bool created = false;
  KILN_ASSIGN_OR_RETURN(Signature* sig, signature_for(specs, bindings, &created));
  sig->last_run = ++runs;
  const std::string blocker = single_submission_blocker(*sig, inputs);
  if (!blocker.empty())
    return failed_precondition("this run cannot be submitted asynchronously: " + blocker +
                               "; use kiln_session_run");
  if (sig->ticket != 0) {
    KILN_ASSIGN_OR_RETURN(const bool done, submitter->reached(sig->ticket));
    if (!done)
      return failed_precondition("ticket " + std::to_string(sig->ticket) +
                                 " of the same input shapes and bindings is still running, and its host-memory "
                                 "inputs and outputs occupy the staging memory this run needs: wait for it first, "
                                 "or bind the inputs and outputs to VkBuffers");
    keep_ticket_outputs(*sig);
  }
  if (!owns_memory(*sig)) KILN_RETURN_IF_ERROR(restore_arena(*sig));
  KILN_RETURN_IF_ERROR(upload_inputs(*sig, inputs));
  std::vector<VkCommandBuffer> cmds;
  for (const Segment& seg : sig->segments)
    if (seg.cmd != VK_NULL_HANDLE) cmds.push_back(seg.cmd);
  KILN_ASSIGN_OR_RETURN(const uint64_t value, submitter->submit_async(cmds, sync));
  Ticket ticket;
  ticket.bindings = bindings;
  if (sig->staging) {
    ticket.sig = sig;
    sig->ticket = value;
  } else {
    // Nothing to read back: outputs are bound, host values or constants.
    ticket.outputs = download_outputs(*sig, bindings);
  }
  tickets.emplace(value, std::move(ticket));
  return value;
}

StatusOr<bool> VulkanModel::Impl::poll(uint64_t ticket) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!tickets.count(ticket))
      return invalid_argument("no pending run has ticket " + std::to_string(ticket) +
                              " (never submitted, or already waited for)");
  }
  return submitter->reached(ticket);
}

StatusOr<std::vector<Tensor>> VulkanModel::Impl::wait(uint64_t ticket, uint64_t timeout_ns) {
  KILN_RETURN_IF_ERROR(poll(ticket).status());
  // Not under `mutex`: submissions (which may signal what this run waits
  // for) go on meanwhile.
  KILN_RETURN_IF_ERROR(submitter->wait(ticket, timeout_ns));
  std::lock_guard<std::mutex> lock(mutex);
  auto it = tickets.find(ticket);
  if (it == tickets.end())
    return invalid_argument("ticket " + std::to_string(ticket) + " was waited for by another thread");
  if (it->second.sig) keep_ticket_outputs(*it->second.sig);
  StatusOr<std::vector<Tensor>> outputs = std::move(it->second.outputs);
  tickets.erase(it);
  return outputs;
}

void VulkanModel::Impl::keep_ticket_outputs(Signature& sig) {
  if (sig.ticket == 0) return;
  auto it = tickets.find(sig.ticket);
  sig.ticket = 0;
  if (it == tickets.end()) return;
  it->second.outputs = download_outputs(sig, it->second.bindings);
  it->second.sig = nullptr;
}

}  // namespace kiln::runtime
