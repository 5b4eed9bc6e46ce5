/* Kiln public C API, Vulkan interop: run on the host application's own
 * VkDevice and queue, and keep inputs and outputs in the host's VkBuffers
 * or VkImages.
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
 * Queue sharing: Kiln submits to the wrapped queue; kiln_session_run waits
 * for its own submissions to finish before it returns (kiln_session_submit
 * below does not). Vulkan requires
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
 * or KILN_STORAGE_AUTO (graph inputs and outputs stay buffers) for the
 * tensor to be bindable.
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

/* ---- Images as tensors ------------------------------------------------
 *
 * A model input can be read from, and a model output written into, a host
 * VkImage: a game's rendered frame into a denoiser, its result into an
 * image the game composites. Kiln converts between the image and the
 * tensor on the device, with one small compute dispatch per bound image:
 * right before the run's first kernel for an input (it writes the input
 * tensor in Kiln's own memory), right after the last kernel for an output.
 * It is a separate dispatch rather than folded into the model's first and
 * last kernels (those are whatever the planner fused, each reading its
 * inputs its own way); for a frame-sized image it costs about what one
 * elementwise kernel over the input does.
 *
 * A game's sRGB frame into an ImageNet-normalized RGB model, and the
 * model's 4-channel output into an RGBA8 storage image for display:
 *
 *   kiln_vulkan_image_binding_t in = {sizeof(in), frame, frame_view,
 *       VK_FORMAT_R8G8B8A8_SRGB, frame_usage,
 *       VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL, 224, 224, 3, {0, 1, 2},
 *       {0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}, 0};
 *   kiln_vulkan_image_binding_t out = {sizeof(out), shown, shown_view,
 *       VK_FORMAT_R8G8B8A8_UNORM, VK_IMAGE_USAGE_STORAGE_BIT | ...,
 *       VK_IMAGE_LAYOUT_GENERAL, 224, 224, 4, {0, 1, 2, 3},
 *       {0, 0, 0, 0}, {1, 1, 1, 1}, 0};
 *   kiln_session_bind_vulkan_image(session, "image", &in);
 *   kiln_session_bind_vulkan_image(session, "stylized", &out);
 *   // each frame: kiln_session_record(session, frame_cmd) (or run, submit)
 *
 * The conversion, per model channel c < channel_count:
 *   input:  x[c] = (texel[channel_map[c]] - mean[c]) / std[c]
 *   output: texel[channel_map[c]] = x[c] * std[c] + mean[c]
 * where texel is the image's (R, G, B, A) as floats: UNORM formats in
 * [0, 1], BGRA formats in RGBA order too, sRGB formats (through an sRGB
 * view) decoded to linear by the hardware. For an RGB model from an RGBA
 * image: channel_count 3, channel_map {0, 1, 2}; a BGR model: {2, 1, 0};
 * a grayscale image into an RGB model: {0, 0, 0}. Output image components
 * no model channel maps to are 0 (alpha 1); UNORM outputs are clamped to
 * [0, 1]. Hardware sRGB decode is as exact as the driver makes it (Vulkan
 * allows a fraction of an 8-bit step: lavapipe's is up to 1.2e-3 off the
 * exact curve, which moved mobilenet_v2's logits by up to 0.026); a UNORM
 * view of the same memory (VK_IMAGE_CREATE_MUTABLE_FORMAT_BIT) with
 * KILN_VULKAN_IMAGE_SRGB decodes with the exact curve in the shader.
 * The tensor is [1, C, H, W] (or [1, H, W, C] with
 * KILN_VULKAN_IMAGE_NHWC) of a float type. By default it covers the whole
 * image at its size (H and W are the image's height and width); the
 * optional region fields pick a rectangle of the image instead (a crop),
 * and tensor_width/_height a tensor size for an input: a region of another
 * size is resized bilinearly (half-pixel centres, edges clamped, filtered
 * in linear light after any sRGB decode, no antialiasing: ONNX Resize
 * "linear" with "half_pixel", OpenCV INTER_LINEAR). An output is written
 * into a region of exactly the tensor's size (the rest of the image is left
 * as it was).
 *
 * Formats: inputs VK_FORMAT_R8G8B8A8_UNORM, R8G8B8A8_SRGB, B8G8R8A8_UNORM,
 * B8G8R8A8_SRGB, R16G16B16A16_SFLOAT, R32G32B32A32_SFLOAT, R8_UNORM,
 * R16_SFLOAT, R32_SFLOAT; outputs (storage images) R8G8B8A8_UNORM,
 * R16G16B16A16_SFLOAT, R32G32B32A32_SFLOAT, R32_SFLOAT.
 *
 * Requirements: the image belongs to the session's VkDevice, is 2D, and
 * `view` shows one mip level and one array layer of it (color aspect) in
 * `format`. Inputs with VK_IMAGE_USAGE_SAMPLED_BIT must be in
 * VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL or VK_IMAGE_LAYOUT_GENERAL
 * (as `layout` says) whenever the run's commands execute; Kiln reads them
 * with texelFetch (no sampler; resizing filters in the shader). Inputs
 * without it (a frame a compute pass wrote) need VK_IMAGE_USAGE_STORAGE_BIT,
 * one of the output formats below and VK_IMAGE_LAYOUT_GENERAL; Kiln reads
 * them with imageLoad. Outputs need VK_IMAGE_USAGE_STORAGE_BIT and
 * VK_IMAGE_LAYOUT_GENERAL. Kiln never changes an image's layout: the host
 * transitions it before the run and back after. The session must use
 * KILN_STORAGE_BUFFER or KILN_STORAGE_AUTO (the default, which keeps graph
 * inputs and outputs in buffers). An image-bound input tensor lives in
 * Kiln's activation memory like any intermediate tensor (no staging).
 * Vulkan cannot be asked for an image's usage or extent, so the binding
 * states them; a binding that misstates them is undefined behaviour (the
 * validation layers report it).
 *
 * Synchronization: as for buffers. The entry barrier (ALL_COMMANDS /
 * MEMORY_WRITE -> COMPUTE_SHADER / SHADER_READ) makes the host's earlier
 * writes to an input image (a render pass, a copy) visible to the
 * conversion; the exit barrier (COMPUTE_SHADER / SHADER_WRITE ->
 * ALL_COMMANDS / MEMORY_READ|MEMORY_WRITE) orders the output image's
 * writes, and the input image's reads, before later commands on the queue.
 * A layout transition the host records after the run (for display) may
 * therefore use srcStageMask COMPUTE_SHADER and srcAccessMask
 * SHADER_WRITE, or rely on the exit barrier. */

/* kiln_vulkan_image_binding_t.flags */
/* Inputs: decode sRGB in the shader (a UNORM view of sRGB-encoded data; an
 * sRGB view decodes in hardware and must not set it). Outputs: encode the
 * linear result to sRGB before storing it (into a UNORM image that is
 * displayed as sRGB). */
#define KILN_VULKAN_IMAGE_SRGB 0x1u
/* The tensor is [1, H, W, C] instead of [1, C, H, W]. */
#define KILN_VULKAN_IMAGE_NHWC 0x2u

/* A host image that one model input is read from, or one model output is
 * written into. Grows only at the end; set struct_size =
 * sizeof(kiln_vulkan_image_binding_t). Every field up to `flags` is
 * required; the region fields after it are optional. */
typedef struct kiln_vulkan_image_binding_t {
  uint32_t struct_size;
  VkImage image;      /* identifies the binding (kiln_session_forget_vulkan_image) */
  VkImageView view;   /* what Kiln binds: 2D, one level and layer, color aspect */
  VkFormat format;    /* the view's format (see "Formats" above) */
  VkImageUsageFlags usage;  /* the usage the image was created with */
  VkImageLayout layout;     /* its layout whenever the run's commands execute */
  uint32_t width;     /* the view's extent */
  uint32_t height;
  uint32_t channel_count;   /* the model's C: 1 to 4 */
  uint32_t channel_map[4];  /* image component (0 R, 1 G, 2 B, 3 A) of model channel c */
  float mean[4];            /* per model channel (see the conversion above) */
  float std[4];             /* per model channel; non-zero */
  uint32_t flags;           /* KILN_VULKAN_IMAGE_* */
  /* Optional from here: zero (or beyond an older caller's struct_size)
   * means the whole image, at its size. */
  uint32_t region_x;        /* the rectangle of the image the tensor covers */
  uint32_t region_y;
  uint32_t region_width;    /* 0: to the image's right edge */
  uint32_t region_height;   /* 0: to its bottom edge */
  uint32_t tensor_width;    /* the tensor's W (0: the region's width); inputs only */
  uint32_t tensor_height;   /* the tensor's H (0: the region's height); inputs only */
} kiln_vulkan_image_binding_t;

/* Binds model input or output `name` to a host image for later runs of
 * `session` (replacing an earlier binding of that name, to a buffer or an
 * image; kiln_session_unbind removes it). Runs, submissions and
 * kiln_session_record treat a bound image as they treat a bound buffer:
 * NULL in the inputs for it, NULL among the outputs, commands recorded per
 * input shapes + bindings (a binding's view, layout and numbers included),
 * so re-binding the same images re-uses them.
 * Ownership: the image and view are borrowed; they must stay valid until
 * kiln_session_forget_vulkan_image (or the session's destruction).
 * Thread-safety: may be called from any thread; a run already started
 * keeps the bindings it started with.
 * Errors: NOT_FOUND (no input or output `name`; the message lists them),
 * INVALID_ARGUMENT (NULL arguments or handles, struct_size too small, a
 * format Kiln cannot read or write or this device cannot sample or store,
 * missing usage (or, without the sampled usage, a format that cannot be
 * read as a storage image), a layout other than those above, channel_count
 * outside 1..4, a channel_map entry beyond the format's components, two
 * output channels on one component, a zero or non-finite std, KILN_VULKAN_IMAGE_SRGB
 * on an sRGB view, a region not inside the image, an output region not of
 * the tensor's size, a tensor width, height or channel count that
 * disagrees with the tensor's declared shape), FAILED_PRECONDITION (not a
 * Vulkan session; the tensor is stored in an image (KILN_STORAGE_IMAGE), is
 * an integer tensor, a constant, or computed on the host). A run reports what depends on its
 * shapes: an output whose shape disagrees with the image, a run the device
 * does not do alone (host steps before the first or after the last kernel,
 * shapes read back mid-run). */
KILN_API KILN_NODISCARD kiln_status_t* kiln_session_bind_vulkan_image(kiln_session_t* session, const char* name,
                                                                      const kiln_vulkan_image_binding_t* binding);

/* Call before destroying a VkImage (or its view) bound to `session`:
 * removes every binding to it and the commands recorded for runs that used
 * it, after waiting for the session's submissions. Not concurrently with a
 * run that uses the image. An image never bound is ignored. */
KILN_API void kiln_session_forget_vulkan_image(kiln_session_t* session, VkImage image);

/* ---- Asynchronous runs ------------------------------------------------
 *
 * A frame submits the model's work and goes on; the GPU runs it after the
 * frame's producer and before its consumer, ordered by semaphores:
 *
 *   kiln_vulkan_semaphore_value_t rendered = {game_timeline, frame_value, 0};
 *   kiln_vulkan_semaphore_value_t inferred = {game_timeline, frame_value + 1, 0};
 *   kiln_vulkan_submit_sync_t sync = {sizeof(sync), &rendered, 1, &inferred, 1};
 *   uint64_t ticket;
 *   kiln_session_submit(session, inputs, 1, &sync, &ticket);  // returns at once
 *   ... the game's next submission waits on game_timeline = frame_value + 1 ...
 *   kiln_session_wait(session, ticket, UINT64_MAX, outputs, 1);  // later, once
 *
 * Tickets are values of the session's own timeline semaphore
 * (kiln_session_timeline), which the host may also wait on in its
 * submissions. Every ticket must be waited for once (kiln_session_wait
 * returns its outputs and forgets it); the outputs of tickets never waited
 * for are kept until the session is destroyed. Destroying a session waits
 * for its pending submissions (so signal the host semaphores they wait on
 * first).
 *
 * Concurrent runs (kiln_session_options_t.max_concurrent_runs = N > 1):
 * the session keeps N run slots over one compiled model. What a run writes
 * is a slot's own: activation memory, staging for host-memory inputs and
 * outputs, descriptor sets, command buffers, timestamp queries, model
 * state, and a timeline semaphore; the plan, kernels, pipelines and
 * weights are shared and never written by runs. kiln_session_run and
 * kiln_session_submit take an idle slot (of those, the one with the fewest
 * tickets not yet waited for) and block only while all N are inside a run
 * or submit call. So N submissions of the same shapes with host-memory
 * inputs and outputs can be in flight at once (with one slot the second is
 * FAILED_PRECONDITION until the first is waited for), and N threads'
 * kiln_session_run calls upload, record and read back at once.
 * Ownership: slots live as long as the session; a slot's memory is
 * allocated by its first run of given shapes (kiln_session_memory reports
 * per_run_bytes). Synchronization: a slot's submissions run one after
 * another on its own timeline; submissions of different slots are not
 * ordered against each other by Kiln (order them with sync semaphores if
 * they must be). Queues: on a device Kiln created (kiln_vulkan_device_create),
 * slot s submits to queue s mod Q, Q being every queue of its compute
 * family up to 16 (NVIDIA: 16; lavapipe: 1), so runs of slots on different
 * queues execute on the device at once; slots sharing a queue (and every
 * slot of a wrapped host device, which gives Kiln its one queue) still run
 * one after another there, each run's entry barrier (ALL_COMMANDS ->
 * COMPUTE_SHADER) waiting for the queue's earlier work: what the slots
 * remove there is the CPU-side serialization and the shared staging.
 * kiln_run_stats_t.queue says which queue a run used, gpu_begin_ns and
 * gpu_end_ns its device interval (kiln_session_run_with_stats gives a
 * call its own statistics while other threads run). Tickets then encode the
 * slot (slot timeline value * N + slot) and are no values of one semaphore:
 * kiln_session_timeline is FAILED_PRECONDITION, and a host that must wait
 * on the GPU passes a semaphore of its own in sync->signals.
 * kiln_session_record records into the first slot's memory. */

/* One semaphore a submission waits on or signals: a timeline semaphore at
 * `value`, or a binary semaphore (value ignored). `stage` (waits only): the
 * pipeline stages that wait, 0 meaning VK_PIPELINE_STAGE_ALL_COMMANDS_BIT.
 * This struct never grows (it is an array element). */
typedef struct kiln_vulkan_semaphore_value_t {
  VkSemaphore semaphore;
  uint64_t value;
  VkPipelineStageFlags stage;
} kiln_vulkan_semaphore_value_t;

/* The host's semaphores around one submission; borrowed for the call only
 * (Kiln keeps no reference). Grows only at the end; set struct_size =
 * sizeof(kiln_vulkan_submit_sync_t). Semaphores must belong to the
 * session's VkDevice; binary semaphores follow Vulkan's rules (a wait needs
 * a signal submitted before it, and consumes it). */
typedef struct kiln_vulkan_submit_sync_t {
  uint32_t struct_size;
  const kiln_vulkan_semaphore_value_t* waits;
  uint32_t wait_count;
  const kiln_vulkan_semaphore_value_t* signals;
  uint32_t signal_count;
} kiln_vulkan_submit_sync_t;

/* Starts a run and returns without waiting for the GPU: *out_ticket
 * identifies it. Inputs are as for kiln_session_run (NULL for inputs bound
 * to VkBuffers); host-memory inputs are copied during the call, so the
 * caller may free or reuse them at once. The submission waits on
 * sync->waits, runs after every earlier submission of this session (of
 * its run slot, when the session has several: "Concurrent runs" above),
 * and signals sync->signals and the session's timeline at *out_ticket
 * (sync may be NULL).
 *
 * No CPU wait, except: the first submit of new input shapes or bindings
 * records commands, and first waits for the session's earlier submissions
 * (recording may reuse their memory); a submit of a run whose inputs and
 * outputs share staging memory with a still-running ticket of the same
 * shapes and bindings is refused instead (below). With several run slots,
 * both concern the slot the submit takes (one with no ticket pending,
 * while there is one: "Concurrent runs" above).
 *
 * Only a run that is one device submission can be submitted: no node run on
 * the host, no If or Loop the host decides, no output shape read back
 * mid-run. Host-memory outputs (not bound to a VkBuffer) are copied to
 * staging memory by the GPU and read back by kiln_session_wait; until then
 * that memory is the ticket's, and submitting the same shapes and bindings
 * again is FAILED_PRECONDITION while the ticket runs. Runs with every input
 * and output bound to VkBuffers (the natural fit) can be submitted again at
 * once, frame after frame.
 *
 * Errors: as kiln_session_run, plus FAILED_PRECONDITION (not a Vulkan
 * session; the device has no timeline semaphores; the run needs the host
 * mid-run, the message names the node; staging memory still in use),
 * INVALID_ARGUMENT (sync->struct_size too small, NULL arrays with counts,
 * VK_NULL_HANDLE semaphores).
 *
 * Thread-safety: may be called from any thread; submissions of one session
 * are serialized (of one run slot, with max_concurrent_runs). The queue is externally synchronized (as for
 * kiln_session_run). A submission waiting on a host semaphore blocks every
 * later submission to the queue (Vulkan's submission order), including
 * kiln_session_run's and the recording wait above: signal it before any
 * blocking Kiln call on the same session, or that call never returns. */
KILN_API KILN_NODISCARD kiln_status_t* kiln_session_submit(kiln_session_t* session, const kiln_tensor_t* const* inputs,
                                                           size_t input_count, const kiln_vulkan_submit_sync_t* sync,
                                                           uint64_t* out_ticket);

/* *out_done = 1 when `ticket`'s run is complete, else 0; never waits.
 * Errors: INVALID_ARGUMENT (a ticket never returned, or already waited
 * for), DEVICE_LOST. Thread-safe. */
KILN_API KILN_NODISCARD kiln_status_t* kiln_session_poll(kiln_session_t* session, uint64_t ticket, int* out_done);

/* Waits at most timeout_ns (UINT64_MAX: no limit; 0: a poll) for `ticket`'s
 * run, then hands out its outputs like kiln_session_run (the caller owns
 * them and frees them with kiln_tensor_destroy; NULL for outputs
 * bound to VkBuffers, whose contents are then visible to the host and to
 * later commands on the queue) and forgets the ticket. The wait polls for
 * a short, bounded time (kiln_session_set_wait_spin) and then blocks.
 * Errors: UNAVAILABLE when the timeout passed first (the ticket stays
 * valid; wait again), INVALID_ARGUMENT (unknown ticket, output_count not
 * the model's), DEVICE_LOST. Thread-safe; it does not block submissions
 * from other threads while it waits. */
KILN_API KILN_NODISCARD kiln_status_t* kiln_session_wait(kiln_session_t* session, uint64_t ticket,
                                                         uint64_t timeout_ns, kiln_tensor_t** out_outputs,
                                                         size_t output_count);

/* The timeline semaphore whose value reaches a ticket when its run is
 * complete. Owned by the session (never destroy it; valid until the session
 * is destroyed); the host may wait on it in its own submissions, never
 * signal it. Thread-safe. Errors: FAILED_PRECONDITION (not a Vulkan
 * session, the device has no timeline semaphores, or the session has
 * several run slots, each with a timeline of its own). */
KILN_API KILN_NODISCARD kiln_status_t* kiln_session_timeline(const kiln_session_t* session,
                                                             VkSemaphore* out_semaphore);

/* How long kiln_session_run and kiln_session_wait poll the GPU before a
 * blocking wait (whose wake-up can come 0.05-0.15 ms after the GPU is done,
 * or later): at most `microseconds`; 0 blocks at once. The default,
 * KILN_WAIT_SPIN_AUTO (which restores it), polls for up to 1.5x the time
 * the session's last submission took until a wait saw it complete, at
 * least 200 us and at most 10 ms: a model's runs never block, and a long
 * wait costs at most 10 ms of a core. Ignored for NULL or a non-Vulkan
 * session. Thread-safe. */
#define KILN_WAIT_SPIN_AUTO UINT32_MAX
KILN_API void kiln_session_set_wait_spin(kiln_session_t* session, uint32_t microseconds);

/* ---- Device memory ------------------------------------------------------ */

/* The device memory a Vulkan session's compiled model holds, in bytes.
 * Grows only at the end; set struct_size = sizeof(kiln_device_memory_t). */
typedef struct kiln_device_memory_t {
  uint32_t struct_size;
  /* Constants and model state: allocated when the session is created. */
  uint64_t weights_bytes;
  /* Intermediate tensors: allocated by the first run (or submit, record)
   * of given input shapes, shared by all shapes, grown for larger ones. */
  uint64_t activation_bytes;
  /* Host-visible staging for host-memory inputs and outputs, and other
   * memory held per recorded input shapes. */
  uint64_t staging_bytes;
  uint64_t total_bytes;
  /* kiln_session_options_t.device_memory_limit (0: none). */
  uint64_t limit_bytes;
  /* \since 0.2. The session's run slots (max_concurrent_runs), and the most
   * device memory one of them holds alone: its activations and staging
   * (and, past the first slot, its copy of the model state). The fields
   * above sum over the slots; the weights are counted once. A slot that
   * never ran holds next to nothing. */
  uint32_t run_slots;
  uint64_t per_run_bytes;
} kiln_device_memory_t;

/* Fills *out_memory (whose struct_size the caller set) with what the
 * session's model holds now. Errors: INVALID_ARGUMENT (NULL arguments,
 * struct_size too small), FAILED_PRECONDITION (not a Vulkan session).
 * Thread-safe. */
KILN_API KILN_NODISCARD kiln_status_t* kiln_session_memory(const kiln_session_t* session,
                                                           kiln_device_memory_t* out_memory);

/* ---- Recording into the host's command buffer ---------------------------
 *
 * Records one run of the session into `command_buffer`, which the host has
 * begun (primary, or secondary with a compute-capable pool) and will end
 * and submit itself, on a queue of the session's device whose family can
 * run compute; no Kiln call is needed to run it, and it may be submitted
 * many times. What is recorded, in order:
 *
 *   1. an entry barrier: ALL_COMMANDS / MEMORY_WRITE -> COMPUTE_SHADER /
 *      SHADER_READ|SHADER_WRITE (everything earlier in submission order,
 *      e.g. the host's render pass or upload into the input buffer, and
 *      earlier runs of the session, is complete and visible);
 *   2. the model's compute dispatches (binding Kiln's pipelines and
 *      descriptor sets, with push constants), with compute->compute
 *      barriers where one reads what another wrote;
 *      Each dispatch is enclosed in a VK_EXT_debug_utils label named after
 *      its kernel (fused node group) when the instance has the extension
 *      enabled (Kiln's own command buffers get the same labels);
 *   3. an exit barrier: COMPUTE_SHADER / SHADER_WRITE -> ALL_COMMANDS|HOST /
 *      MEMORY_READ|MEMORY_WRITE|HOST_READ (later commands, and the host
 *      after waiting for the submission, see the outputs).
 *
 * A secondary command buffer must be executed outside a render pass. The
 * host's compute pipeline and descriptor-set bindings are disturbed:
 * bind them again after this call if the host records more compute work.
 *
 * Only a run whose every input and output is bound to a VkBuffer or VkImage
 * (kiln_session_bind_vulkan_buffer/_image; the shapes come from the
 * bindings; image conversions are recorded after the entry barrier and
 * before the exit barrier), that
 * is all on the device (no node on the host, no If or Loop decided by the
 * host, no shape read back mid-run) and uses buffer storage can be
 * recorded; otherwise FAILED_PRECONDITION names why. The first record (or
 * run) of given bindings records Kiln's own commands and allocates memory,
 * and first waits for the session's earlier submissions.
 *
 * CPU cost per call: a record with the same bindings as one of the last
 * four records (a game's every frame, with one set of buffers per frame in
 * flight or one for all) skips every check and only records the Vulkan
 * commands, from arrays made by the first record of those bindings: per
 * dispatch a descriptor-set bind, the push constants when the kernel has
 * any, the dispatch, a pipeline bind unless the previous dispatch used the
 * same pipeline, and a barrier where one is needed. On lavapipe with warm
 * caches, Kiln's own code is about 4% of such a call; the rest is the
 * driver's (see examples/game_frame/README.md). For a small constant cost
 * per frame, kiln_session_record_with_options with KILN_RECORD_VIA_SECONDARY
 * records into a secondary command buffer of Kiln's once and executes it;
 * for no per-frame cost at all, record once into a command buffer of the
 * host's and submit it every frame (the lifetime rules below then hold for
 * that command buffer).
 *
 * Lifetime and synchronization: the recorded commands use the session's
 * pipelines, descriptor sets and activation memory. The host must let every
 * submission of the command buffer complete before destroying the session,
 * kiln_session_forget_vulkan_buffer on a buffer it binds, or running the
 * session with other shapes or bindings (which may evict or move that
 * memory), and must order it against kiln_session_run/submit of the same
 * session (submitting both on the same queue suffices: Kiln's kernels
 * start after an entry barrier like the one above).
 *
 * Errors: INVALID_ARGUMENT (NULL session or command buffer),
 * FAILED_PRECONDITION (not a Vulkan session; the reasons above), the
 * binding errors of kiln_session_run. Thread-safety: may be called from any
 * thread, concurrently with other Kiln calls on the session (a bind or
 * unbind on the session waits while it records: it reads the bindings in
 * place); the command buffer (and its pool) must be externally
 * synchronized by the host, as Vulkan requires. */
KILN_API KILN_NODISCARD kiln_status_t* kiln_session_record(kiln_session_t* session, VkCommandBuffer command_buffer);

/* kiln_session_record with options. Grows only at the end; set
 * struct_size = sizeof(kiln_record_options_t). */
typedef struct kiln_record_options_t {
  uint32_t struct_size;
  uint32_t flags; /* KILN_RECORD_* */
  /* With KILN_RECORD_VIA_SECONDARY: the queue family of the pool that
   * command_buffer was allocated from. */
  uint32_t queue_family_index;
} kiln_record_options_t;

/* command_buffer is a primary command buffer (begun, outside a render
 * pass, with no query active) from a pool of queue family
 * options->queue_family_index, which must be the session's (the queue
 * family of its device, kiln_vulkan_host_device_t's for a wrapped one:
 * Kiln's memory belongs to that family). The first call with a set of bindings records what
 * kiln_session_record records (entry barrier, dispatches, exit barrier)
 * once, into a secondary command buffer of the session's, begun with
 * VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT (the primaries of several
 * frames in flight may execute it at once); this and every later call with
 * those bindings record only vkCmdExecuteCommands of it into
 * command_buffer. A game that records its frame anew every frame then pays
 * the same small CPU cost whatever the model's size, instead of a
 * driver's cost per dispatch. One secondary per set of bindings and queue
 * family, kept as long as the session keeps the commands of those bindings
 * (the lifetime rules of kiln_session_record apply unchanged: a host that
 * follows them never has a pending command buffer that executes a freed
 * secondary). */
#define KILN_RECORD_VIA_SECONDARY 0x1u

/* kiln_session_record (above) with `options` (NULL, or flags 0: the same
 * as kiln_session_record). After vkCmdExecuteCommands every state of the
 * primary (compute and graphics pipelines, descriptor sets, push
 * constants, dynamic state) is undefined: bind again what the host records
 * next. Errors: those of kiln_session_record, and INVALID_ARGUMENT for
 * struct_size too small, an unknown flag, or a queue family other than the
 * session's. Thread-safety: as kiln_session_record. */
KILN_API KILN_NODISCARD kiln_status_t* kiln_session_record_with_options(kiln_session_t* session,
                                                                       VkCommandBuffer command_buffer,
                                                                       const kiln_record_options_t* options);

/* ---- A frame budget: one run recorded over several frames ---------------
 *
 * A model longer than a frame's GPU budget (a 50 ms model in a game that
 * can spare 5 ms a frame) is recorded a slice at a time, one slice into
 * each frame's command buffer:
 *
 *   kiln_record_slice_options_t opts = {sizeof(opts)};
 *   opts.budget_us = 5000;                        // estimated GPU time per slice
 *   kiln_record_slice_progress_t progress = {sizeof(progress)};
 *   // each frame, between the game's passes:
 *   kiln_session_record_slice(session, frame_cmd, &opts, &progress);
 *   ... submit frame_cmd on the queue, as every frame ...
 *   if (progress.done) { the outputs are written once frame_cmd completes }
 *
 * A run is what kiln_session_record records, cut between its dispatches:
 * the same requirements (every input and output bound, all on the device,
 * buffer storage; FAILED_PRECONDITION names what stands in the way), the
 * same commands and the same outputs. The first call of a run makes the
 * run's commands and memory for the session's bindings (as record does);
 * each call records the next dispatches, as many as fit the options, but
 * always at least one, so a run always progresses. The run's activation
 * memory stays allocated, and holds the run's intermediate tensors, from
 * its first slice to its last.
 *
 * Estimates: a dispatch costs its GPU time in the session's last profiled
 * kiln_session_run of the same bindings (kiln_session_options_t.profile;
 * kiln_session_kernel_timing shows them) when every dispatch has one
 * (KILN_SLICE_ESTIMATE_MEASURED), else a roofline over the kernel's FLOPs
 * and global memory bytes (KILN_SLICE_ESTIMATE_MODEL): a fixed cost per
 * dispatch plus the larger of FLOPs / peak rate and bytes / bandwidth, with
 * round numbers per device type (discrete GPU 20 TFLOP/s, 500 GB/s, 4 us;
 * integrated GPU and others 2 TFLOP/s, 60 GB/s, 8 us; CPU such as lavapipe
 * 50 GFLOP/s, 10 GB/s, 20 us) — an order of magnitude only: profile one run
 * for budgets that mean something.
 *
 * What each slice records: the entry barrier of kiln_session_record (all
 * earlier commands on the queue, including the previous slice and whatever
 * the host did between, are complete and visible), the image input
 * conversions (first slice only), its dispatches, the image output
 * conversions (last slice only), and record's exit barrier (the slice's
 * writes and reads are ordered before later commands and visible to them).
 *
 * Synchronization: slices must execute in the order they were recorded,
 * each after the previous one completed or ordered after it: submitting
 * them in order on one queue suffices (the barriers above do the rest),
 * as does the host's semaphores between queues. The host's input buffers
 * and images must hold the run's input from the first slice's execution
 * until the last slice's (an input buffer may be read by any slice; an
 * input image only by the first), and bound outputs are complete only after
 * the last slice; until then they may hold partial results. Everything that
 * kiln_session_record says about lifetime holds for each slice's command
 * buffer.
 *
 * Runs in progress: a call with no run in progress (or with
 * KILN_RECORD_SLICE_RESTART) starts one with the session's current
 * bindings; later calls continue it with those bindings whatever the
 * session is bound to now (re-binding takes effect at the next run).
 * KILN_RECORD_SLICE_RESTART abandons a run in progress and starts again
 * from its first dispatch (already-submitted slices of the abandoned run
 * may still execute; their results are overwritten). Any other run of the
 * session between two slices (kiln_session_run, _submit, _record, which
 * reuse the activation memory) or forgetting a buffer or image it binds
 * interrupts the run: the next call returns FAILED_PRECONDITION saying so
 * and records nothing, and the call after it starts a new run.
 *
 * Thread-safety: may be called from any thread; calls on one session are
 * serialized (a bind or unbind waits while a slice records, as for
 * kiln_session_record), and a run's slices are taken in call order, so
 * one thread (or the host's own ordering) should drive a sliced run. The
 * command buffer is externally synchronized by the host. */

/* kiln_record_slice_options_t.flags */
/* Abandon the run in progress, if any, and start a new one. */
#define KILN_RECORD_SLICE_RESTART 0x1u

/* How much of a run one slice may hold. Grows only at the end; set
 * struct_size = sizeof(kiln_record_slice_options_t). */
typedef struct kiln_record_slice_options_t {
  uint32_t struct_size;
  /* The slice's estimated GPU time, at most (unless its one dispatch alone
   * takes longer), in microseconds; 0: no time limit. Negative or NaN is
   * INVALID_ARGUMENT; a budget larger than the run records it in one slice. */
  double budget_us;
  /* The slice's dispatches, at most; 0: no count limit. budget_us and
   * max_dispatches both 0 is INVALID_ARGUMENT. */
  uint32_t max_dispatches;
  uint32_t flags; /* KILN_RECORD_SLICE_* */
} kiln_record_slice_options_t;

/* Where a slice's estimates come from (see "Estimates" above). */
typedef enum kiln_slice_estimate_t {
  KILN_SLICE_ESTIMATE_MODEL = 0,    /* the device-type roofline over FLOPs and bytes */
  KILN_SLICE_ESTIMATE_MEASURED = 1  /* a profiled run's per-kernel timestamps */
} kiln_slice_estimate_t;

/* What one kiln_session_record_slice recorded. Grows only at the end; set
 * struct_size = sizeof(kiln_record_slice_progress_t); Kiln fills the fields
 * that fit in it. */
typedef struct kiln_record_slice_progress_t {
  uint32_t struct_size;
  uint32_t dispatches_recorded; /* in this slice: at least 1 (0 for a run with none) */
  uint32_t dispatches_left;     /* after this slice */
  uint32_t dispatches_total;    /* of the whole run */
  uint32_t slice_index;         /* 0 for a run's first slice */
  uint32_t done;                /* 1: this slice is the run's last; the next call starts a new run */
  double estimated_us;          /* this slice's estimated GPU time */
  double estimated_run_us;      /* the whole run's */
  kiln_slice_estimate_t estimate; /* where the estimates come from */
} kiln_record_slice_progress_t;

/* Records the next slice of the session's sliced run into `command_buffer`
 * (begun by the host, primary or secondary, as for kiln_session_record),
 * starting a run when none is in progress; fills *out_progress (optional:
 * NULL is allowed). Ownership: `options` and `out_progress` are read and
 * written during the call only; the command buffer is borrowed for the call
 * and the recorded commands use the session's objects as record's do.
 * Errors: INVALID_ARGUMENT (NULL session, options or command buffer,
 * struct_size too small, a negative or NaN budget, no limit at all),
 * FAILED_PRECONDITION (not a Vulkan session; a run that cannot be recorded,
 * as kiln_session_record; the run in progress was interrupted), the
 * binding errors of kiln_session_run. INVALID_ARGUMENT changes nothing (a
 * run in progress stays so); after any other error no run is in progress,
 * and what the call may have recorded must not be submitted (the host
 * resets or discards the command buffer). */
KILN_API KILN_NODISCARD kiln_status_t* kiln_session_record_slice(kiln_session_t* session,
                                                                 VkCommandBuffer command_buffer,
                                                                 const kiln_record_slice_options_t* options,
                                                                 kiln_record_slice_progress_t* out_progress);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_KILN_VULKAN_H_ */
