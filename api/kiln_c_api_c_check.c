/* Compiled as strict C99 into kiln_c_api_vulkan_test: the public headers
 * must stay valid C for C hosts (no C++-only syntax, Vulkan types only in
 * kiln_vulkan.h). The test compares these sizes with the C++ view. */
#include <string.h>

#include "kiln/kiln.h"
#include "kiln/kiln_vulkan.h"

size_t capi_c_check_session_options_size(void) {
  kiln_session_options_t o;
  memset(&o, 0, sizeof o);
  o.struct_size = (uint32_t)sizeof o;
  o.backend = KILN_BACKEND_VULKAN;
  o.storage = KILN_STORAGE_BUFFER;
  o.precision = KILN_PRECISION_FP16;
  return o.struct_size;
}

size_t capi_c_check_binding_size(void) {
  kiln_vulkan_buffer_binding_t b;
  memset(&b, 0, sizeof b);
  b.struct_size = (uint32_t)sizeof b;
  b.buffer = VK_NULL_HANDLE;
  return b.struct_size;
}

size_t capi_c_check_host_device_size(void) { return sizeof(kiln_vulkan_host_device_t); }

/* \since 0.2: the input metadata structs and describe calls from C. */
size_t capi_c_check_value_info_size(void) {
  kiln_input_info_t info;
  kiln_input_dim_t dim;
  char* text = NULL;
  memset(&info, 0, sizeof info);
  memset(&dim, 0, sizeof dim);
  info.struct_size = (uint32_t)sizeof info;
  dim.struct_size = (uint32_t)sizeof dim;
  kiln_status_free(kiln_session_graph(NULL, KILN_GRAPH_DOT, KILN_GRAPH_FULL_CONSTANTS, &text));
  kiln_string_free(text);
  return info.struct_size + dim.struct_size;
}

/* Asynchronous runs and recording into the host's command buffer from C
 * (the calls fail cleanly on a NULL session). */
size_t capi_c_check_submit_sync_size(void) {
  kiln_vulkan_semaphore_value_t wait;
  kiln_vulkan_submit_sync_t sync;
  kiln_record_options_t record_options;
  uint64_t ticket = 0;
  int done = 0;
  memset(&wait, 0, sizeof wait);
  memset(&sync, 0, sizeof sync);
  memset(&record_options, 0, sizeof record_options);
  record_options.struct_size = (uint32_t)sizeof record_options;
  record_options.flags = KILN_RECORD_VIA_SECONDARY;
  sync.struct_size = (uint32_t)sizeof sync;
  sync.waits = &wait;
  sync.wait_count = 1;
  kiln_status_free(kiln_session_submit(NULL, NULL, 0, &sync, &ticket));
  kiln_status_free(kiln_session_poll(NULL, ticket, &done));
  kiln_status_free(kiln_session_wait(NULL, ticket, 0, NULL, 0));
  kiln_status_free(kiln_session_record(NULL, VK_NULL_HANDLE));
  kiln_status_free(kiln_session_record_with_options(NULL, VK_NULL_HANDLE, &record_options));
  kiln_session_set_wait_spin(NULL, 0);
  return sync.struct_size + sizeof wait;
}

size_t capi_c_check_memory_size(void) {
  kiln_device_memory_t memory;
  kiln_session_options_t o;
  memset(&memory, 0, sizeof memory);
  memset(&o, 0, sizeof o);
  memory.struct_size = (uint32_t)sizeof memory;
  o.device_memory_limit = 1u << 30;
  kiln_status_free(kiln_session_memory(NULL, &memory));
  return memory.struct_size;
}
