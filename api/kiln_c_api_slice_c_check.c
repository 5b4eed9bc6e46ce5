/* Compiled as strict C99 into kiln_c_api_slice_test: the frame-budget part
 * of kiln_vulkan.h stays valid C, its documented initializers compile, and
 * the call fails cleanly on a NULL session. */
#include "kiln/kiln.h"
#include "kiln/kiln_vulkan.h"

int capi_c_check_record_slice(void) {
  /* As kiln_vulkan.h's example. */
  kiln_record_slice_options_t opts = {sizeof(opts)};
  kiln_record_slice_progress_t progress = {sizeof(progress)};
  kiln_status_t* status;
  opts.budget_us = 5000;
  opts.flags = KILN_RECORD_SLICE_RESTART;
  status = kiln_session_record_slice(NULL, VK_NULL_HANDLE, &opts, &progress);
  if (!status || kiln_status_code(status) != KILN_INVALID_ARGUMENT) return 0;
  kiln_status_free(status);
  return progress.estimate == KILN_SLICE_ESTIMATE_MODEL && progress.done == 0 ? 1 : 0;
}
