// The C API's frame budget (kiln_vulkan.h, kiln_session_record_slice): a
// run recorded into the host's command buffers a slice at a time, over
// VulkanModel::record_slice (engine/runtime/vulkan/
// vulkan_model_sliced_record.cc). Here: the size-tolerant option and
// progress structs, and the session's bindings.
#include <cstddef>
#include <string>

#include "api/kiln_c_api_internal.h"
#include "kiln/kiln_vulkan.h"

using kiln::capi::make_status;
using kiln::capi::null_arg;
using kiln::capi::to_c;

namespace {

// Whether a caller's struct of `struct_size` bytes holds `field`.
#define KILN_SLICE_HAS(object, type, field) \
  ((object)->struct_size >= offsetof(type, field) + sizeof((object)->field))

void fill_progress(const kiln::runtime::SliceProgress& p, kiln_record_slice_progress_t* out) {
  using T = kiln_record_slice_progress_t;
  out->dispatches_recorded = p.recorded;
  out->dispatches_left = p.left;
  out->dispatches_total = p.total;
  out->slice_index = p.index;
  out->done = p.left == 0 ? 1 : 0;
  out->estimated_us = p.estimated_us;
  out->estimated_run_us = p.estimated_run_us;
  if (KILN_SLICE_HAS(out, T, estimate))
    out->estimate = p.measured ? KILN_SLICE_ESTIMATE_MEASURED : KILN_SLICE_ESTIMATE_MODEL;
}

}  // namespace

extern "C" {

kiln_status_t* kiln_session_record_slice(kiln_session_t* session, VkCommandBuffer command_buffer,
                                         const kiln_record_slice_options_t* options,
                                         kiln_record_slice_progress_t* out_progress) {
  using Options = kiln_record_slice_options_t;
  using Progress = kiln_record_slice_progress_t;
  if (!session) return null_arg("session");
  if (command_buffer == VK_NULL_HANDLE) return null_arg("command_buffer");
  if (!options) return null_arg("options");
  if (!KILN_SLICE_HAS(options, Options, max_dispatches))
    return make_status(KILN_INVALID_ARGUMENT, "kiln_record_slice_options_t.struct_size is too small");
  if (out_progress && !KILN_SLICE_HAS(out_progress, Progress, estimated_run_us))
    return make_status(KILN_INVALID_ARGUMENT, "kiln_record_slice_progress_t.struct_size is too small");
  kiln::runtime::VulkanModel* vulkan = session->vulkan_model();
  if (!vulkan)
    return make_status(KILN_FAILED_PRECONDITION,
                       "kiln_session_record_slice needs a Vulkan session; this one runs on the reference backend");
  kiln::runtime::SliceOptions opts;
  opts.budget_us = options->budget_us;
  opts.max_dispatches = options->max_dispatches;
  opts.restart = KILN_SLICE_HAS(options, Options, flags) && (options->flags & KILN_RECORD_SLICE_RESTART) != 0;
  if (KILN_SLICE_HAS(options, Options, flags) && (options->flags & ~KILN_RECORD_SLICE_RESTART) != 0)
    return make_status(KILN_INVALID_ARGUMENT, "kiln_record_slice_options_t.flags has unknown bits " +
                                                  std::to_string(options->flags & ~KILN_RECORD_SLICE_RESTART));
  // Every frame, as kiln_session_record: the bindings read in place, under their lock.
  std::unique_lock<std::mutex> lock(session->bindings_mutex);
  auto progress = vulkan->record_slice(command_buffer, session->bindings, opts);
  lock.unlock();
  if (!progress.ok()) return to_c(progress.status());
  if (out_progress) fill_progress(*progress, out_progress);
  return nullptr;
}

}  // extern "C"
