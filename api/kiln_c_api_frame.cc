// The C API inside a game's frame (kiln_vulkan.h): asynchronous runs
// (kiln_session_submit, poll, wait, the session's timeline semaphore and
// the wait's spin, over VulkanModel::submit/poll/wait in
// engine/runtime/vulkan/vulkan_model_async.cc) and runs recorded into the
// host's command buffer (kiln_session_record and _with_options, over
// VulkanModel::record_into), and the compiled model's device memory
// (kiln_session_memory).
#include "api/kiln_c_api_internal.h"
#include "kiln/kiln_vulkan.h"

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "platform/vulkan/wait_spin.h"

using kiln::capi::make_status;
using kiln::capi::null_arg;
using kiln::capi::to_c;

namespace {

kiln_status_t* not_vulkan(const char* call) {
  return make_status(KILN_FAILED_PRECONDITION,
                     std::string(call) + " needs a Vulkan session; this one runs on the reference backend");
}

// The host's semaphores as the Submitter takes them.
kiln_status_t* to_sync(const kiln_vulkan_submit_sync_t* sync, kiln::vk::SubmitSync& out) {
  if (!sync) return nullptr;
  if (sync->struct_size < offsetof(kiln_vulkan_submit_sync_t, signal_count) + sizeof(sync->signal_count))
    return make_status(KILN_INVALID_ARGUMENT, "kiln_vulkan_submit_sync_t.struct_size is too small");
  auto convert = [](const kiln_vulkan_semaphore_value_t* list, uint32_t count, const char* what,
                    std::vector<kiln::vk::SemaphoreUse>& to) -> kiln_status_t* {
    if (count > 0 && !list) return null_arg(what);
    for (uint32_t i = 0; i < count; ++i) {
      if (list[i].semaphore == VK_NULL_HANDLE)
        return make_status(KILN_INVALID_ARGUMENT,
                           std::string(what) + "[" + std::to_string(i) + "].semaphore is VK_NULL_HANDLE");
      to.push_back({list[i].semaphore, list[i].value, list[i].stage});
    }
    return nullptr;
  };
  if (kiln_status_t* s = convert(sync->waits, sync->wait_count, "kiln_vulkan_submit_sync_t.waits", out.waits))
    return s;
  return convert(sync->signals, sync->signal_count, "kiln_vulkan_submit_sync_t.signals", out.signals);
}

}  // namespace

extern "C" {

kiln_status_t* kiln_session_submit(kiln_session_t* session, const kiln_tensor_t* const* inputs, size_t input_count,
                                   const kiln_vulkan_submit_sync_t* sync, uint64_t* out_ticket) {
  if (!session) return null_arg("session");
  if (!out_ticket) return null_arg("out_ticket");
  kiln::runtime::VulkanModel* vulkan = session->vulkan_model();
  if (!vulkan) return not_vulkan("kiln_session_submit");
  kiln::vk::SubmitSync host_sync;
  if (kiln_status_t* s = to_sync(sync, host_sync)) return s;
  std::vector<kiln::Tensor> in;
  for (size_t i = 0; i < input_count; ++i) {
    if (inputs && inputs[i]) in.push_back(inputs[i]->tensor);
    else in.emplace_back();  // bound to a buffer, or reported missing by the run
  }
  kiln::runtime::DeviceBindings bindings;
  {
    std::lock_guard<std::mutex> lock(session->bindings_mutex);
    bindings = session->bindings;
  }
  auto ticket = vulkan->submit(in, bindings, host_sync);
  if (!ticket.ok()) return to_c(ticket.status());
  *out_ticket = *ticket;
  return nullptr;
}

kiln_status_t* kiln_session_poll(kiln_session_t* session, uint64_t ticket, int* out_done) {
  if (!session) return null_arg("session");
  if (!out_done) return null_arg("out_done");
  if (!session->vulkan_model()) return not_vulkan("kiln_session_poll");
  auto done = session->vulkan_model()->poll(ticket);
  if (!done.ok()) return to_c(done.status());
  *out_done = *done ? 1 : 0;
  return nullptr;
}

kiln_status_t* kiln_session_wait(kiln_session_t* session, uint64_t ticket, uint64_t timeout_ns,
                                 kiln_tensor_t** out_outputs, size_t output_count) {
  if (!session) return null_arg("session");
  if (!out_outputs && output_count > 0) return null_arg("out_outputs");
  if (!session->vulkan_model()) return not_vulkan("kiln_session_wait");
  const size_t expected_out = session->engine->graph().main().outputs.size();
  if (output_count != expected_out)
    return make_status(KILN_INVALID_ARGUMENT, "the model has " + std::to_string(expected_out) +
                                                  " outputs, output_count is " + std::to_string(output_count));
  auto outputs = session->vulkan_model()->wait(ticket, timeout_ns);
  if (!outputs.ok()) return to_c(outputs.status());
  return kiln::capi::copy_outputs(*outputs, out_outputs);
}

kiln_status_t* kiln_session_timeline(const kiln_session_t* session, VkSemaphore* out_semaphore) {
  if (!session) return null_arg("session");
  if (!out_semaphore) return null_arg("out_semaphore");
  if (!session->vulkan_model()) return not_vulkan("kiln_session_timeline");
  if (session->vulkan_model()->run_slots() > 1)
    return make_status(KILN_FAILED_PRECONDITION,
                       "the session has " + std::to_string(session->vulkan_model()->run_slots()) +
                           " run slots (max_concurrent_runs), each with a timeline semaphore of its own, so its "
                           "tickets are no values of one semaphore; have submissions signal a semaphore of yours "
                           "(kiln_vulkan_submit_sync_t.signals)");
  const VkSemaphore timeline = session->vulkan_model()->timeline();
  if (timeline == VK_NULL_HANDLE)
    return make_status(KILN_FAILED_PRECONDITION,
                       "the session's device has no timeline semaphores enabled (Vulkan 1.2 timelineSemaphore)");
  *out_semaphore = timeline;
  return nullptr;
}

kiln_status_t* kiln_session_record(kiln_session_t* session, VkCommandBuffer command_buffer) {
  if (!session) return null_arg("session");
  if (command_buffer == VK_NULL_HANDLE) return null_arg("command_buffer");
  if (!session->vulkan_model()) return not_vulkan("kiln_session_record");
  // A game's every frame: the bindings are read in place, under their lock
  // (recording is short and submits nothing), rather than copied.
  std::lock_guard<std::mutex> lock(session->bindings_mutex);
  return to_c(session->vulkan_model()->record_into(command_buffer, session->bindings));
}

kiln_status_t* kiln_session_record_with_options(kiln_session_t* session, VkCommandBuffer command_buffer,
                                                const kiln_record_options_t* options) {
  if (!options) return kiln_session_record(session, command_buffer);
  if (options->struct_size <
      offsetof(kiln_record_options_t, queue_family_index) + sizeof(options->queue_family_index))
    return make_status(KILN_INVALID_ARGUMENT, "kiln_record_options_t.struct_size is too small");
  if (options->flags == 0) return kiln_session_record(session, command_buffer);
  if (!session) return null_arg("session");
  if (command_buffer == VK_NULL_HANDLE) return null_arg("command_buffer");
  if (options->flags & ~KILN_RECORD_VIA_SECONDARY)
    return make_status(KILN_INVALID_ARGUMENT, "kiln_record_options_t.flags has unknown bits " +
                                                  std::to_string(options->flags & ~KILN_RECORD_VIA_SECONDARY));
  if (!session->vulkan_model()) return not_vulkan("kiln_session_record_with_options");
  std::lock_guard<std::mutex> lock(session->bindings_mutex);
  return to_c(
      session->vulkan_model()->record_into(command_buffer, session->bindings, options->queue_family_index));
}

kiln_status_t* kiln_session_memory(const kiln_session_t* session, kiln_device_memory_t* out_memory) {
  if (!session) return null_arg("session");
  if (!out_memory) return null_arg("out_memory");
  if (out_memory->struct_size < offsetof(kiln_device_memory_t, limit_bytes) + sizeof(out_memory->limit_bytes))
    return make_status(KILN_INVALID_ARGUMENT, "kiln_device_memory_t.struct_size is too small");
  if (!session->vulkan_model()) return not_vulkan("kiln_session_memory");
  const kiln::runtime::DeviceMemoryUse use = session->vulkan_model()->memory();
  out_memory->weights_bytes = use.weights;
  out_memory->activation_bytes = use.activations;
  out_memory->staging_bytes = use.staging;
  out_memory->total_bytes = use.total;
  out_memory->limit_bytes = use.limit;
  if (out_memory->struct_size >= offsetof(kiln_device_memory_t, per_run_bytes) + sizeof(out_memory->per_run_bytes)) {
    out_memory->run_slots = use.run_slots;
    out_memory->per_run_bytes = use.per_run;
  }
  return nullptr;
}

void kiln_session_set_wait_spin(kiln_session_t* session, uint32_t microseconds) {
  if (session && session->vulkan_model())
    session->vulkan_model()->set_wait_spin(microseconds == KILN_WAIT_SPIN_AUTO
                                               ? kiln::vk::kAutoSpin
                                               : std::chrono::microseconds(microseconds));
}

}  // extern "C"
