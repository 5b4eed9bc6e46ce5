/* Kiln public C API, Vulkan interop: run on the host application's own
 * VkDevice and queue, and keep inputs and outputs in the host's VkBuffers.
 *
 * Include after the application's Vulkan headers (with volk, include volk.h
 * first, as usual); this header includes <vulkan/vulkan.h> for the handle
 * types only, and Kiln calls Vulkan through the vkGetInstanceProcAddr it is
 * given, never through the application's prototypes.
 *
 * Everything the host hands Kiln is borrowed: the VkInstance, VkDevice,
 * queue and VkBuffers must stay valid while Kiln uses them (the device until
 * the last session on it is destroyed and the device released; a buffer
 * until kiln_session_forget_vulkan_buffer or the session's destruction).
 * Kiln destroys none of them.
 *
 * A frame's inference on the game's device, input and output in its buffers:
 *
 *   kiln_vulkan_host_device_t host = {sizeof(host)};
 *   host.instance = instance;  host.instance_api_version = VK_API_VERSION_1_2;
 *   host.get_instance_proc_addr = vkGetInstanceProcAddr;
 *   host.physical_device = gpu;  host.device = device;
 *   host.queue_family_index = compute_family;  host.queue_index = 0;
 *   host.enabled_features = &features2;         // what vkCreateDevice got
 *   kiln_vulkan_device_t* kdev;  kiln_vulkan_device_wrap(&host, &kdev);
 *   kiln_session_options_t opts = {sizeof(opts), KILN_BACKEND_VULKAN, kdev};
 *   kiln_session_t* session;  kiln_session_create(model, &opts, &session);
 *   kiln_vulkan_device_release(kdev);          // the session holds it
 *   kiln_vulkan_buffer_binding_t in = {sizeof(in), input_buffer, 0, input_bytes};
 *   kiln_vulkan_buffer_binding_t out = {sizeof(out), output_buffer, 0, output_bytes};
 *   kiln_session_bind_vulkan_buffer(session, "image", &in);
 *   kiln_session_bind_vulkan_buffer(session, "logits", &out);
 *   // each frame, after recording and submitting the input's producer:
 *   const kiln_tensor_t* inputs[1] = {NULL};
 *   kiln_tensor_t* outputs[1];
 *   kiln_session_run(session, inputs, 1, outputs, 1);  // outputs[0] == NULL
 *   // output_buffer now holds the logits (check every returned status).
 *
 * Queue sharing: Kiln submits to the wrapped queue and waits for its own
 * submissions to finish before kiln_session_run returns. Vulkan requires
 * submissions to one queue to be externally synchronized, so the host must
 * not submit to that queue from another thread while a run is in progress.
 */
#ifndef KILN_KILN_VULKAN_H_
#define KILN_KILN_VULKAN_H_

#include <vulkan/vulkan.h>

#include "kiln/kiln.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The host's Vulkan objects. Grows only at the end; set struct_size =
 * sizeof(kiln_vulkan_host_device_t); zero-filled optional fields are unset. */
typedef struct kiln_vulkan_host_device_t {
  uint32_t struct_size;
  VkInstance instance;
  /* The apiVersion the instance was created with; 0 means 1.1. Kiln needs
   * Vulkan 1.1 at least. */
  uint32_t instance_api_version;
  /* The vkGetInstanceProcAddr that created `instance` (the loader's, or
   * volk's vkGetInstanceProcAddr). Required. */
  PFN_vkGetInstanceProcAddr get_instance_proc_addr;
  VkPhysicalDevice physical_device;
  VkDevice device;
  /* The queue Kiln submits to: a family with compute support, and an index
   * the device was created with. */
  uint32_t queue_family_index;
  uint32_t queue_index;
  /* Optional: the VkPhysicalDeviceFeatures2 chain given to vkCreateDevice
   * (read during the call, not kept). Kiln uses only features enabled there
   * (16-bit storage and shaderFloat16 for fp16, timelineSemaphore, ...);
   * NULL means core Vulkan 1.0 features only. */
  const VkPhysicalDeviceFeatures2* enabled_features;
  /* Optional: the device extensions the host enabled. */
  const char* const* enabled_extensions;
  uint32_t enabled_extension_count;
} kiln_vulkan_host_device_t;

/* Wraps the host's device for sessions (kiln_session_options_t.vulkan_device).
 * Kiln creates only its own objects on it (pipelines, command pools, memory
 * for weights and activations) and destroys only those. Errors:
 * INVALID_ARGUMENT (NULL handles, struct_size too small, a queue family or
 * index the device lacks or that cannot run compute), UNAVAILABLE (the
 * instance or device is older than Vulkan 1.1). */
KILN_API KILN_NODISCARD kiln_status_t* kiln_vulkan_device_wrap(const kiln_vulkan_host_device_t* host,
                                                               kiln_vulkan_device_t** out_device);

/* A range of a host VkBuffer that one model input or output lives in.
 * Grows only at the end; set struct_size = sizeof(kiln_vulkan_buffer_binding_t).
 *
 * Contents: the tensor row-major and densely packed, with elements of
 * kiln_session_device_dtype() (float32; float16 under KILN_PRECISION_FP16;
 * int32 for integer and bool tensors); the range needs at least
 * element count * element size bytes. The buffer must belong to the
 * session's VkDevice and have VK_BUFFER_USAGE_STORAGE_BUFFER_BIT (add
 * TRANSFER_SRC_BIT | TRANSFER_DST_BIT if the model runs steps on the host,
 * which then copy the tensor); `offset` must be a multiple of the device's
 * minStorageBufferOffsetAlignment. Sessions must use KILN_STORAGE_BUFFER
 * for the tensor to be bindable.
 *
 * Synchronization: each run's command buffers begin with a barrier that
 * makes writes by earlier commands on the same queue visible to Kiln's
 * kernels, and end with one that makes the outputs visible to later
 * commands on the queue and to the host; kiln_session_run returns after the
 * device finished. Host writes through mapped memory must be flushed (or
 * coherent) before the run; host reads of non-coherent memory need an
 * invalidate. Work on other queues must be synchronized by the host. */
typedef struct kiln_vulkan_buffer_binding_t {
  uint32_t struct_size;
  VkBuffer buffer;
  VkDeviceSize offset;
  VkDeviceSize size;
  /* Inputs: the input's shape (rank dims); NULL with rank 0 takes the
   * model's declared shape, which then must be fully static. Ignored for
   * outputs, whose shapes follow from the inputs. */
  const int64_t* shape;
  size_t rank;
} kiln_vulkan_buffer_binding_t;

/* Binds model input or output `name` to a range of a host buffer for later
 * runs of `session` (replacing an earlier binding of that name). Runs are
 * recorded once per input shapes + bindings, so re-binding the same ranges
 * (e.g. alternating between two frames' buffers) re-uses recorded commands;
 * each distinct set of bindings keeps its own activation memory.
 * Errors: NOT_FOUND (no input or output `name`; the message lists them),
 * INVALID_ARGUMENT (NULL arguments or VK_NULL_HANDLE buffer, struct_size too
 * small, a range smaller than the tensor, a misaligned offset, a shape that
 * does not fit the input, or no shape for an input with symbolic dims),
 * FAILED_PRECONDITION (not a Vulkan session, or the tensor is stored in an
 * image). What depends on the plan or on a run's shapes is reported by
 * kiln_session_run: an output range too small for its shape, ranges that
 * overlap, FAILED_PRECONDITION for a tensor that is a constant, computed on
 * the host, or shares memory with another tensor bound elsewhere. */
KILN_API KILN_NODISCARD kiln_status_t* kiln_session_bind_vulkan_buffer(kiln_session_t* session, const char* name,
                                                                       const kiln_vulkan_buffer_binding_t* binding);

/* Call before destroying a VkBuffer that was bound to `session`: removes
 * every binding to it and the commands and memory recorded for runs that
 * used it (Vulkan may give a later buffer the same handle value, which must
 * never meet commands recorded for the old one). Not concurrently with a run
 * that uses the buffer. A buffer never bound is ignored. */
KILN_API void kiln_session_forget_vulkan_buffer(kiln_session_t* session, VkBuffer buffer);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_KILN_VULKAN_H_ */
