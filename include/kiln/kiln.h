/* Kiln public C API.
 *
 * Opaque handles, status returns, no exceptions, no printing. Every function
 * that can fail returns a kiln_status_t*: NULL means success; otherwise the
 * caller owns the status and frees it with kiln_status_free. Outputs are
 * `out_` parameters, written only on success. destroy/release functions
 * accept NULL.
 *
 * Thread-safety: a model may be shared by several threads once loaded; a
 * session's run is thread-safe (runs take turns unless the session has
 * several run slots, kiln_session_options_t.max_concurrent_runs); a tensor
 * must not be written concurrently.
 *
 * Vulkan: sessions run on a Vulkan device Kiln creates, or on the host
 * application's own VkDevice and queue (kiln_vulkan_device_wrap), with
 * inputs and outputs optionally living in the host's VkBuffers without a
 * copy (kiln_session_bind_vulkan_buffer). Those two functions take Vulkan
 * types and are declared in kiln/kiln_vulkan.h, which includes
 * <vulkan/vulkan.h>; this header needs no Vulkan headers.
 */
#ifndef KILN_KILN_H_
#define KILN_KILN_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define KILN_API __declspec(dllexport)
#else
#define KILN_API __attribute__((visibility("default")))
#endif

#if defined(__cplusplus) && __cplusplus >= 201703L
#define KILN_NODISCARD [[nodiscard]]
#elif defined(__GNUC__)
#define KILN_NODISCARD __attribute__((warn_unused_result))
#else
#define KILN_NODISCARD
#endif

#define KILN_VERSION_MAJOR 0
#define KILN_VERSION_MINOR 2
#define KILN_VERSION_PATCH 0

/* ---- status ------------------------------------------------------------ */

typedef enum kiln_status_code_t {
  KILN_OK = 0,
  KILN_INVALID_ARGUMENT = 1,
  KILN_NOT_FOUND = 2,
  KILN_UNIMPLEMENTED = 3,
  KILN_OUT_OF_MEMORY = 4,
  KILN_DEVICE_LOST = 5,
  KILN_INTERNAL = 6,
  KILN_FAILED_PRECONDITION = 7,
  KILN_UNAVAILABLE = 8,
  KILN_PERMISSION_DENIED = 9,
  KILN_OUT_OF_RANGE = 10,
  KILN_DATA_LOSS = 11
} kiln_status_code_t;

typedef struct kiln_status_t kiln_status_t;

/* The status's code; KILN_OK for NULL. */
KILN_API kiln_status_code_t kiln_status_code(const kiln_status_t* status);
/* The message ("" for NULL); valid until the status is freed. */
KILN_API const char* kiln_status_message(const kiln_status_t* status);
KILN_API void kiln_status_free(kiln_status_t* status);

/* "0.2.0" */
KILN_API const char* kiln_version_string(void);

/* ---- tensors ----------------------------------------------------------- */

typedef enum kiln_dtype_t {
  KILN_DTYPE_UNDEFINED = 0,
  KILN_DTYPE_FLOAT32 = 1,
  KILN_DTYPE_FLOAT16 = 2,
  KILN_DTYPE_FLOAT64 = 3,
  KILN_DTYPE_INT8 = 4,
  KILN_DTYPE_UINT8 = 5,
  KILN_DTYPE_INT16 = 6,
  KILN_DTYPE_INT32 = 7,
  KILN_DTYPE_INT64 = 8,
  KILN_DTYPE_BOOL = 9,
  KILN_DTYPE_UINT16 = 10,
  KILN_DTYPE_UINT32 = 11,
  KILN_DTYPE_UINT64 = 12
} kiln_dtype_t;

/* A dense, row-major host tensor. Single owner: create/destroy. */
typedef struct kiln_tensor_t kiln_tensor_t;

/* Creates a zero-filled tensor. Errors: INVALID_ARGUMENT (bad dtype, negative
 * dim, rank > 8 with shape NULL, a byte size beyond int64), OUT_OF_MEMORY
 * (also for more bytes than $KILN_MAX_TENSOR_BYTES, default the host's
 * physical memory). */
KILN_API KILN_NODISCARD kiln_status_t* kiln_tensor_create(kiln_dtype_t dtype, const int64_t* shape, size_t rank,
                                                          kiln_tensor_t** out_tensor);
KILN_API void kiln_tensor_destroy(kiln_tensor_t* tensor);
KILN_API kiln_dtype_t kiln_tensor_dtype(const kiln_tensor_t* tensor);
KILN_API size_t kiln_tensor_rank(const kiln_tensor_t* tensor);
/* Dim `axis`, or -1 when axis >= rank. */
KILN_API int64_t kiln_tensor_dim(const kiln_tensor_t* tensor, size_t axis);
KILN_API size_t kiln_tensor_byte_size(const kiln_tensor_t* tensor);
/* The tensor's storage; valid until it is destroyed. */
KILN_API void* kiln_tensor_data(kiln_tensor_t* tensor);

/* ---- models ------------------------------------------------------------ */

/* An imported model (graph IR). Shared: retain/release. Immutable once
 * loaded, so it may be used from several threads. */
typedef struct kiln_model_t kiln_model_t;

/* Loads an ONNX model. Errors: NOT_FOUND (file), INVALID_ARGUMENT (malformed
 * model; the message names the node, op and problem), UNIMPLEMENTED
 * (unsupported op or opset), PERMISSION_DENIED (external data outside the
 * model's directory). */
KILN_API KILN_NODISCARD kiln_status_t* kiln_model_load(const char* path, kiln_model_t** out_model);
/* Same, from serialized ModelProto bytes (no external data). */
KILN_API KILN_NODISCARD kiln_status_t* kiln_model_load_from_memory(const void* data, size_t size,
                                                                   kiln_model_t** out_model);
KILN_API void kiln_model_retain(kiln_model_t* model);
KILN_API void kiln_model_release(kiln_model_t* model);

KILN_API size_t kiln_model_input_count(const kiln_model_t* model);
KILN_API size_t kiln_model_output_count(const kiln_model_t* model);
/* Names are valid while the model lives; NULL for an index out of range. */
KILN_API const char* kiln_model_input_name(const kiln_model_t* model, size_t index);
KILN_API const char* kiln_model_output_name(const kiln_model_t* model, size_t index);

/* ---- Vulkan devices ------------------------------------------------------ */

/* A Vulkan device sessions run on: one Kiln creates (kiln_vulkan_device_create)
 * or one wrapping the host application's VkDevice (kiln_vulkan_device_wrap in
 * kiln/kiln_vulkan.h). It holds the shader compiler and kernel cache, so
 * sessions on one device share compiled kernels. Shared: sessions retain it;
 * the creator releases its reference with kiln_vulkan_device_release. */
typedef struct kiln_vulkan_device_t kiln_vulkan_device_t;

/* Grows only at the end; set struct_size = sizeof(kiln_vulkan_device_options_t).
 * Zero-filled fields are the defaults. */
typedef struct kiln_vulkan_device_options_t {
  uint32_t struct_size;
  /* Which physical device: NULL or "" picks the best (discrete, integrated,
   * virtual, CPU); a decimal number is an index in the driver's order;
   * anything else picks the first device whose name contains it (any case). */
  const char* selector;
  /* Where compiled kernels are cached on disk: NULL uses $KILN_CACHE_DIR,
   * else $XDG_CACHE_HOME/kiln, else $HOME/.cache/kiln; "" keeps them in
   * memory only. */
  const char* kernel_cache_dir;
  /* \since 0.2. Nonzero: enable the Khronos validation layers (an error when
   * they are not installed); kiln_vulkan_device_validation_errors counts
   * what they report. For tests and debugging; slow. */
  uint32_t validation;
} kiln_vulkan_device_options_t;

/* Creates a Vulkan instance and device of Kiln's own. `options` may be NULL.
 * Errors: UNAVAILABLE (no Vulkan loader or device, device older than 1.1),
 * NOT_FOUND (no device matches the selector; the message lists them). */
KILN_API KILN_NODISCARD kiln_status_t* kiln_vulkan_device_create(const kiln_vulkan_device_options_t* options,
                                                                 kiln_vulkan_device_t** out_device);
KILN_API void kiln_vulkan_device_retain(kiln_vulkan_device_t* device);
/* Releases a reference; the last one destroys what Kiln created (never the
 * host's VkInstance, VkDevice or queue of a wrapped device). */
KILN_API void kiln_vulkan_device_release(kiln_vulkan_device_t* device);
/* The physical device's name; valid while the device lives ("" for NULL). */
KILN_API const char* kiln_vulkan_device_name(const kiln_vulkan_device_t* device);

/* ---- sessions ------------------------------------------------------------ */

typedef enum kiln_backend_t {
  KILN_BACKEND_DEFAULT = 0,   /* Vulkan when available, else reference */
  KILN_BACKEND_REFERENCE = 1, /* the CPU reference executor */
  KILN_BACKEND_VULKAN = 2,
  /* \since 0.2: the backend a loaded plugin offers (kiln.backend.v1 in
   * kiln_plugin.h), named by kiln_session_options_t.backend_plugin. */
  KILN_BACKEND_PLUGIN = 3
} kiln_backend_t;

/* Where the Vulkan backend keeps activations. AUTO (\since 0.2, the
 * default; before it 0 was BUFFER, whose graph inputs and outputs AUTO keeps)
 * lets the layout pass choose buffer or image per tensor for the device, with
 * graph inputs and outputs in buffers (bindable to host buffers); BUFFER and
 * IMAGE force one storage for every activation (ablations). */
typedef enum kiln_storage_t {
  KILN_STORAGE_AUTO = 0,  /* per tensor, by the layout pass (plugins/layout) */
  KILN_STORAGE_IMAGE = 1, /* RGBA images (texture memory) where they fit */
  KILN_STORAGE_BUFFER = 2 /* storage buffers, row-major (bindable to host buffers) */
} kiln_storage_t;

/* The float element type of weights and activations on the Vulkan device. */
typedef enum kiln_precision_t {
  KILN_PRECISION_FP32 = 0,
  KILN_PRECISION_FP16 = 1 /* needs 16-bit storage and shaderFloat16 */
} kiln_precision_t;

/* Messages from the pass pipeline and plugins (a plugin on KILN_PLUGIN_PATH
 * that failed to load, a pass's log). Called on the thread that creates the
 * session; `message` is valid for the call only. Kiln itself never prints. */
typedef enum kiln_message_level_t {
  KILN_MESSAGE_DEBUG = 0,
  KILN_MESSAGE_INFO = 1,
  KILN_MESSAGE_WARNING = 2,
  KILN_MESSAGE_ERROR = 3
} kiln_message_level_t;
typedef void (*kiln_log_fn)(void* user_data, kiln_message_level_t level, const char* message);

/* Grows only at the end; set struct_size = sizeof(kiln_session_options_t).
 * Zero-filled fields are the defaults; fields beyond an older struct_size
 * take their defaults. */
typedef struct kiln_session_options_t {
  uint32_t struct_size;
  kiln_backend_t backend;
  /* The rest applies to the Vulkan backend. */
  /* The device to run on (retained by the session). NULL: the session
   * creates a device of its own from `device_selector`. */
  kiln_vulkan_device_t* vulkan_device;
  /* As kiln_vulkan_device_options_t.selector, when vulkan_device is NULL. */
  const char* device_selector;
  kiln_storage_t storage;
  kiln_precision_t precision;
  /* Nonzero: time every kernel on the GPU (kiln_session_kernel_timing;
   * costs a timestamp per dispatch). */
  uint32_t profile;
  /* Input-shape signatures kept recorded (command buffers, descriptor sets);
   * the least recently run beyond it is dropped and recorded again if its
   * shape returns (nothing is recompiled). 0: the default, 32. Every
   * signature's activations share one device memory sized for the largest
   * shape seen, whatever this is. */
  uint32_t max_signatures;
  /* \since 0.2. The pass pipeline the session runs on its own copy of the
   * model before compiling it (the model itself is not changed). NULL, ""
   * or "default": the default pipeline (canonicalization and rdp to a fixed
   * point, then fusion, layout and memplan), followed by every pass of the
   * loaded third-party plugins; "none": no pass; else a comma-separated
   * list of pass names run once, in that order. */
  const char* passes;
  /* Comma-separated pass names the pipeline leaves out (NULL: none). */
  const char* disabled_passes;
  /* Plugin shared libraries to load, in order (`plugin_file_count` paths);
   * one that fails to load is an error naming it. Plugins on the
   * colon-separated $KILN_PLUGIN_PATH are loaded too, unless
   * `ignore_plugin_path` is nonzero. */
  const char* const* plugin_files;
  size_t plugin_file_count;
  uint32_t ignore_plugin_path;
  /* Where Kiln's own plugins (kiln.canonicalize, kiln.rdp, kiln.fusion, kiln.memplan)
   * are. NULL: beside libkiln (<libdir>/kiln/plugins), or linked in when
   * Kiln was built with KILN_STATIC_PLUGINS. */
  const char* plugin_dir;
  /* Receives pipeline and plugin messages; NULL drops them. */
  kiln_log_fn log;
  void* log_user_data;
  /* \since 0.2. A/B switches of the Vulkan planner. Nonzero: fp16 GEMMs
   * stay off cooperative matrices (tensor cores). */
  uint32_t disable_cooperative_matrix;
  /* \since 0.2. Nonzero: every elementwise output gets memory of its own
   * instead of overwriting an input that dies there. */
  uint32_t disable_inplace;
  /* \since 0.2. Nonzero: after compiling, write the device's pipeline cache
   * to its kernel cache directory (a Kiln-created device with one). */
  uint32_t save_pipeline_cache;
  /* \since 0.2. As kiln_vulkan_device_options_t.validation, for the device
   * the session creates when vulkan_device is NULL. */
  uint32_t validation;
  /* \since 0.2. With KILN_BACKEND_PLUGIN: the name of the backend a loaded
   * plugin offers (plugin_files, $KILN_PLUGIN_PATH or the plugin directory).
   * Errors: NOT_FOUND naming the backends that are loaded. */
  const char* backend_plugin;
  /* \since 0.2. Vulkan sessions: the most device memory the compiled model
   * may hold (weights and state, activations, staging; see
   * kiln_session_memory in kiln_vulkan.h), 0 for no limit. Creating the
   * session, or a first run of new input shapes, fails with
   * KILN_OUT_OF_MEMORY naming what needed how much and the limit. */
  uint64_t device_memory_limit;
  /* \since 0.2. Vulkan sessions: how many runs of the session may be in
   * progress at once (kiln_session_run from several threads, submissions
   * not yet waited for), 1 to 64; 0 means 1. Each is a run slot with its
   * own activation memory, staging, descriptor sets, command buffers and
   * timeline (see "Concurrent runs" in kiln_vulkan.h); the compiled model
   * (plan, kernels, pipelines, weights) is shared. A slot allocates its
   * activation memory when it first runs, so memory grows with the runs
   * actually in progress together, up to one slot's worth each
   * (kiln_device_memory_t.per_run_bytes); device_memory_limit applies to
   * all slots together (a run that would pass it, counting the memory the
   * other slots held after their last run, fails with OUT_OF_MEMORY). */
  uint32_t max_concurrent_runs;
  /* \since 0.2. A/B switch of the Vulkan planner. Nonzero: integer GEMMs
   * (QLinearConv, QLinearMatMul, ConvInteger, MatMulInteger) stay off the
   * packed int8 dot products (VK_KHR_shader_integer_dot_product) and run
   * the scalar int32 kernel. */
  uint32_t disable_integer_dot_product;
  /* \since 0.2. Static QDQ graphs (DequantizeLinear -> Conv/MatMul/Gemm
   * [-> Relu/Clip] -> QuantizeLinear, as ONNX Runtime's quantizer writes
   * them): a kiln_int8_kernels_t. ON runs them as integer kernels
   * (QLinearConv/QLinearMatMul on int8 dot products where the device has
   * them: kiln.canonicalize's fuse-qdq joins the default pipeline); AUTO (0)
   * and OFF run the float graph (AUTO: the integer kernels measured slower
   * than it even where the dot products are accelerated; the statistics say
   * why). disable_integer_dot_product with
   * AUTO means OFF. An explicit `passes` list decides by itself;
   * kiln_session_describe_json reports the choice ("int8_kernels"). */
  uint32_t int8_kernels;
} kiln_session_options_t;

/* \since 0.2. kiln_session_options_t.int8_kernels. */
typedef enum kiln_int8_kernels_t {
  KILN_INT8_KERNELS_AUTO = 0,
  KILN_INT8_KERNELS_ON = 1,
  KILN_INT8_KERNELS_OFF = 2
} kiln_int8_kernels_t;

/* A model prepared for one backend. Single owner: create/destroy. */
typedef struct kiln_session_t kiln_session_t;

/* Prepares `model` for execution (the session retains the model): for
 * Vulkan, plans the graph, compiles its kernels and uploads the weights.
 * `options` may be NULL (KILN_BACKEND_DEFAULT: Vulkan when a device exists
 * and the model compiles for it, else the reference executor). Errors:
 * UNAVAILABLE (no Vulkan device), INVALID_ARGUMENT (bad options),
 * UNIMPLEMENTED (precision not supported by the device), compile errors
 * naming the node. */
KILN_API KILN_NODISCARD kiln_status_t* kiln_session_create(kiln_model_t* model, const kiln_session_options_t* options,
                                                           kiln_session_t** out_session);
KILN_API void kiln_session_destroy(kiln_session_t* session);

/* The backend the session runs on (REFERENCE, VULKAN or PLUGIN, never DEFAULT). */
KILN_API kiln_backend_t kiln_session_backend(const kiln_session_t* session);

/* Runs the model. `inputs` are in the model's input order (borrowed);
 * `out_outputs` receives kiln_model_output_count() new tensors the caller
 * destroys. An input bound to a Vulkan buffer (kiln_session_bind_vulkan_buffer)
 * is read from that buffer: pass NULL for it (`inputs` itself may be NULL
 * when every input is bound). An output bound to a buffer is
 * written there and its out_outputs entry is set to NULL (nothing is
 * downloaded). Returns after the work is complete on the device, so bound
 * output buffers hold the results (see kiln/kiln_vulkan.h for the barriers).
 * Thread-safe. Errors: INVALID_ARGUMENT (wrong count, dtype or shape; the
 * message names the input), binding errors (kiln_session_bind_vulkan_buffer),
 * DEVICE_LOST, or a kernel error naming the node. With several run slots
 * (max_concurrent_runs), calls from several threads run at once, each in an
 * idle slot; otherwise they take turns. */
KILN_API KILN_NODISCARD kiln_status_t* kiln_session_run(kiln_session_t* session, const kiln_tensor_t* const* inputs,
                                                        size_t input_count, kiln_tensor_t** out_outputs,
                                                        size_t output_count);

/* What the session's last completed run did (Vulkan sessions; a reference
 * session reports wall_ms only). Grows only at the end; set struct_size =
 * sizeof(kiln_run_stats_t). */
typedef struct kiln_run_stats_t {
  uint32_t struct_size;
  double wall_ms;       /* kiln_session_run from call to return */
  double gpu_ms;        /* command buffers on the GPU; -1 without timestamps. With profile
                         * on, from the end of the input uploads to the last kernel. */
  uint32_t dispatches;  /* compute dispatches */
  uint32_t fallbacks;   /* nodes run on the host (with transfers) */
  uint32_t recorded;    /* 1: the run recorded new command buffers (new shapes or bindings) */
  uint32_t kernel_timings; /* entries for kiln_session_kernel_timing (profile on) */
  /* Device memory the session holds after the run: weights, the activation
   * memory all input shapes share, per-signature staging (Vulkan). */
  uint64_t device_bytes;
  /* The activation memory: the largest arena plan seen, not one per shape. */
  uint64_t activation_bytes;
  /* \since 0.2. Global memory the dispatches moved (every dispatch, profile
   * or not): each tensor a kernel only reads, and each it writes, whole, at
   * its device layout, for the run's shapes. A roofline count, not what the
   * caches fetched. */
  uint64_t bytes_read;
  uint64_t bytes_written;
  /* \since 0.2. Of `dispatches`, those of fused kernels (a name that starts
   * with "fused" or contains '+'). */
  uint32_t fused_dispatches;
  /* \since 0.2. The run's device interval on the host's monotonic clock
   * (CLOCK_MONOTONIC, i.e. std::chrono::steady_clock; ns): from the first
   * command buffer's opening timestamp (written once the queue's earlier
   * work is done) to the last one's closing timestamp. Runs on different
   * queues compare. Both 0 when unknown: no timestamps, or the device lacks
   * VK_EXT_calibrated_timestamps (device timestamps are then not converted
   * rather than guessed). */
  int64_t gpu_begin_ns;
  int64_t gpu_end_ns;
  /* \since 0.2. The device queue the run was submitted to: run slot s uses
   * queue s mod the number of queues Kiln opened on the device (every queue
   * of its compute family, up to 16; a wrapped device's one queue), so runs
   * of different slots on different queues may execute at once. */
  uint32_t queue;
} kiln_run_stats_t;

/* One kernel's GPU time in the last run (profile on). Names are truncated
 * to fit. Grows only at the end; set struct_size. */
typedef struct kiln_kernel_timing_t {
  uint32_t struct_size;
  char kernel[64];  /* the kernel ("conv2d_1x1", "add") */
  char node[128];   /* the graph node it implements (name, else op) */
  double gpu_ms;
  /* \since 0.2. The dispatch's global memory: the tensors it only reads and
   * those it writes (as kiln_run_stats_t.bytes_read / bytes_written). */
  uint64_t bytes_read;
  uint64_t bytes_written;
} kiln_kernel_timing_t;

/* \since 0.2. kiln_session_run that also gives this run's statistics in
 * `out_stats` (may be NULL; set its struct_size), as
 * kiln_session_last_run_stats would right after the call, but for this call
 * even while other threads run the session at once (max_concurrent_runs),
 * when "the last run" may be another thread's. kernel_timings counts this
 * run's profile, which kiln_session_kernel_timing reads only while it is
 * the last run. Errors: as kiln_session_run; INVALID_ARGUMENT for a
 * struct_size too small. */
KILN_API KILN_NODISCARD kiln_status_t* kiln_session_run_with_stats(kiln_session_t* session,
                                                                   const kiln_tensor_t* const* inputs,
                                                                   size_t input_count, kiln_tensor_t** out_outputs,
                                                                   size_t output_count, kiln_run_stats_t* out_stats);

/* Errors: FAILED_PRECONDITION before the first successful run. */
KILN_API KILN_NODISCARD kiln_status_t* kiln_session_last_run_stats(const kiln_session_t* session,
                                                                   kiln_run_stats_t* out_stats);
/* Errors: OUT_OF_RANGE for index >= kernel_timings. */
KILN_API KILN_NODISCARD kiln_status_t* kiln_session_kernel_timing(const kiln_session_t* session, size_t index,
                                                                  kiln_kernel_timing_t* out_timing);

/* ---- what the pass pipeline did (\since 0.2) ---------------------------- */

/* One pass of the session's pipeline, in the order it ran (the default
 * pipeline repeats its passes until the graph stops changing). Grows only at
 * the end; set struct_size. */
typedef struct kiln_pass_record_t {
  uint32_t struct_size;
  char name[64];             /* the pass ("fold-constants", "acme.fuse-gelu"); truncated to fit */
  double ms;                 /* time the pass took */
  uint32_t committed;        /* 1: it succeeded and its edits were kept */
  uint32_t skipped;          /* 1: an optional pass failed; the graph is unchanged */
  uint32_t statistic_count;  /* entries for kiln_session_pass_statistic */
} kiln_pass_record_t;

/* Passes the session's pipeline ran (0 for "none" or NULL). */
KILN_API size_t kiln_session_pass_count(const kiln_session_t* session);
/* Errors: OUT_OF_RANGE for index >= kiln_session_pass_count. */
KILN_API KILN_NODISCARD kiln_status_t* kiln_session_pass_record(const kiln_session_t* session, size_t index,
                                                                kiln_pass_record_t* out_record);
/* A statistic the pass reported ("nodes_folded" = 3). `*out_name` is valid
 * while the session lives. Errors: OUT_OF_RANGE (either index). */
KILN_API KILN_NODISCARD kiln_status_t* kiln_session_pass_statistic(const kiln_session_t* session, size_t pass_index,
                                                                   size_t statistic_index, const char** out_name,
                                                                   int64_t* out_value);
/* Nodes in the graph the session runs, after its pipeline (sub-graphs
 * included). */
KILN_API size_t kiln_session_node_count(const kiln_session_t* session);

/* The element type a Vulkan session stores input or output `name` in on the
 * device, which is what a buffer bound to it must hold (row-major, densely
 * packed): FLOAT32, FLOAT16 (fp16 precision, float tensors) or INT32
 * (integer and bool tensors). Errors: NOT_FOUND (no such input or output),
 * FAILED_PRECONDITION (not a Vulkan session). */
KILN_API KILN_NODISCARD kiln_status_t* kiln_session_device_dtype(const kiln_session_t* session, const char* name,
                                                                 kiln_dtype_t* out_dtype);
/* Removes the buffer binding of `name`; later runs take it as a host tensor
 * again. Errors: NOT_FOUND (not bound). */
KILN_API KILN_NODISCARD kiln_status_t* kiln_session_unbind(kiln_session_t* session, const char* name);
/* Removes every buffer binding. */
KILN_API void kiln_session_unbind_all(kiln_session_t* session);

/* ---- names, strings and tensor files (\since 0.2) ------------------------ */

/* "INVALID_ARGUMENT" ("OK" for KILN_OK, "UNKNOWN" for other values). */
KILN_API const char* kiln_status_code_name(kiln_status_code_t code);
/* Short dtype names as Kiln prints them ("f32", "i64", "bool"); "?" for an
 * unknown value. */
KILN_API const char* kiln_dtype_name(kiln_dtype_t dtype);

/* Frees a string Kiln returned (the describe functions below); NULL is
 * accepted. */
KILN_API void kiln_string_free(char* string);

/* Loads a tensor file: NumPy .npy (little-endian, C order), or an ONNX
 * TensorProto (.pb, by the file name's extension). Errors: NOT_FOUND (file),
 * INVALID_ARGUMENT (malformed file; the message names it), UNIMPLEMENTED
 * (element type Kiln has no dtype for). */
KILN_API KILN_NODISCARD kiln_status_t* kiln_tensor_load(const char* path, kiln_tensor_t** out_tensor);
/* Writes `tensor` as a NumPy .npy file. Errors: NOT_FOUND (cannot create the
 * file), DATA_LOSS (short write). */
KILN_API KILN_NODISCARD kiln_status_t* kiln_tensor_save_npy(const kiln_tensor_t* tensor, const char* path);
/* Element `index` (row-major) converted to double; NaN for an index out of
 * range or a NULL tensor. */
KILN_API double kiln_tensor_get_f64(const kiln_tensor_t* tensor, size_t index);
/* Sets element `index` from a double (rounded and saturated to the dtype,
 * as a cast). Errors: OUT_OF_RANGE (index), INVALID_ARGUMENT (NULL). */
KILN_API KILN_NODISCARD kiln_status_t* kiln_tensor_set_f64(kiln_tensor_t* tensor, size_t index, double value);

/* ---- model inputs (\since 0.2) -------------------------------------------- */

/* What the model declares for one input. Grows only at the end; set
 * struct_size. Strings are valid while the model lives. */
typedef struct kiln_input_info_t {
  uint32_t struct_size;
  const char* name;
  kiln_dtype_t dtype;      /* UNDEFINED when the model does not say */
  int64_t rank;            /* -1: unknown rank */
  const char* shape_text;  /* "[n,3]", "[*]" for an unknown rank */
} kiln_input_info_t;

/* One declared dim. Grows only at the end; set struct_size. */
typedef struct kiln_input_dim_t {
  uint32_t struct_size;
  int64_t value;       /* the size, or -1 when it is not a constant */
  const char* symbol;  /* a symbol's name ("n"), an expression's text
                          ("2*n"), or NULL (a constant or an unknown dim);
                          valid while the model lives */
  uint32_t is_expression; /* 1: `symbol` is an expression over symbols */
} kiln_input_dim_t;

/* Errors: OUT_OF_RANGE (index), INVALID_ARGUMENT (NULL, struct_size too
 * small). */
KILN_API KILN_NODISCARD kiln_status_t* kiln_model_input_info(const kiln_model_t* model, size_t index,
                                                             kiln_input_info_t* out_info);
/* Errors: OUT_OF_RANGE (index, or axis >= rank), INVALID_ARGUMENT. */
KILN_API KILN_NODISCARD kiln_status_t* kiln_model_input_dim(const kiln_model_t* model, size_t index, size_t axis,
                                                            kiln_input_dim_t* out_dim);
/* The concrete shape of input `index` once the symbols `symbol_names[i]` =
 * `symbol_values[i]` are bound (expressions are evaluated). `out_shape` has
 * room for `capacity` dims; `*out_rank` receives the rank. Errors:
 * FAILED_PRECONDITION (unknown rank, or a dim the bindings do not determine;
 * the message gives the declared shape), OUT_OF_RANGE (index, capacity),
 * INVALID_ARGUMENT (NULL). */
KILN_API KILN_NODISCARD kiln_status_t* kiln_model_input_shape(const kiln_model_t* model, size_t index,
                                                              const char* const* symbol_names,
                                                              const int64_t* symbol_values, size_t binding_count,
                                                              int64_t* out_shape, size_t capacity, size_t* out_rank);

/* ---- descriptions (\since 0.2) --------------------------------------------
 * Each returns a new NUL-terminated string in *out_text that the caller frees
 * with kiln_string_free. The JSON documents are objects whose members only
 * grow; bench/README.md and `kiln run --stats` document the fields. */

/* The compiled session: {"backend", "passes_ms", "nodes", "passes": [{"name",
 * "ms", "committed", "skipped", "statistics": {...}}], and for Vulkan
 * "device", "driver", "storage", "precision", "compile": {"plan_ms",
 * "kernels_ms", "upload_ms", "pipelines", "shader_compiles",
 * "shader_cache_hits", "weight_bytes", "state_bytes", "dispatches", "fallbacks",
 * "fallback_reasons": [...], "kernel_cache": {"compiles", "disk_hits",
 * "memory_hits", "pipeline_hits", "pipelines_created",
 * "pipeline_cache_bytes_loaded"} (what the device's kernel cache did during
 * this session's compile)}}, for a plugin backend "compile": {"dispatches",
 * "fallbacks"} (as the plugin reports them); "fallback_reason" when KILN_BACKEND_DEFAULT
 * fell back to the reference executor; \since 0.2 "int8_kernels":
 * {"integer" (whether static QDQ patterns were given to fuse-qdq),
 * "reason", "rewritten" (the QDQ convolutions and matrix products fuse-qdq
 * turned into integer kernels)} (kiln_session_options_t.int8_kernels). */
KILN_API KILN_NODISCARD kiln_status_t* kiln_session_describe_json(const kiln_session_t* session, char** out_text);

/* The last completed run: "{}" for a reference session; for Vulkan
 * {"gpu_ms", "dispatches", "fallbacks", "recorded", "shader_compiles",
 * "device_bytes", "activation_bytes", "signatures", "memory": {...},
 * "branches"?, "loops"?, "kernels"? (profile on): [{"kernel", "node",
 * "gpu_ms", "bytes", "flops"}]}. Errors: FAILED_PRECONDITION before the
 * first successful run. */
KILN_API KILN_NODISCARD kiln_status_t* kiln_session_last_run_json(const kiln_session_t* session, char** out_text);

typedef enum kiln_graph_format_t {
  KILN_GRAPH_TEXT = 0, /* Kiln's text IR (parseable) */
  KILN_GRAPH_DOT = 1   /* Graphviz */
} kiln_graph_format_t;
/* For kiln_session_graph: print every element of large constants (text IR;
 * else those over 16 elements are elided). */
#define KILN_GRAPH_FULL_CONSTANTS 1u

/* The graph the session runs (after its pass pipeline). Errors:
 * INVALID_ARGUMENT (NULL, unknown format). */
KILN_API KILN_NODISCARD kiln_status_t* kiln_session_graph(const kiln_session_t* session, kiln_graph_format_t format,
                                                          uint32_t flags, char** out_text);

/* The plugin catalogue a session with `options` would load (plugin_files,
 * $KILN_PLUGIN_PATH unless ignore_plugin_path, plugin_dir; other fields are
 * ignored; NULL for the defaults), as JSON: {"plugins": [{"name",
 * "version", "abi_major", "abi_minor", "origin", "passes": [{"name",
 * "requires": [...], "invalidates": [...], "description"}], and for a
 * backend plugin "backend": {"name", "devices": its device listing or
 * null} (plugins of ABI 1.4)}], "default_pipeline": [...]}. Load warnings go to options->log. Errors: as
 * kiln_session_create for plugin files. */
KILN_API KILN_NODISCARD kiln_status_t* kiln_plugins_describe_json(const kiln_session_options_t* options,
                                                                  char** out_text);

/* The Vulkan devices this machine offers, without creating any:
 * {"vulkan_error": null or "why there is no Vulkan", "devices": [{...
 * capabilities ...}]}. With `text` nonzero,
 * a readable listing instead ("device 0:\n  name: ..."). Errors:
 * INVALID_ARGUMENT (NULL), INTERNAL (a device's capabilities could not be
 * read). */
KILN_API KILN_NODISCARD kiln_status_t* kiln_vulkan_devices_describe(uint32_t text, char** out_text);

/* `device`'s capabilities as JSON ({"device_name", "device_type",
 * "vendor_id", "device_id", "driver_version", "api_version", "driver_name",
 * "driver_info", limits and features}), as kiln_vulkan_devices_describe
 * lists them. Errors: INVALID_ARGUMENT (NULL). */
KILN_API KILN_NODISCARD kiln_status_t* kiln_vulkan_device_describe_json(const kiln_vulkan_device_t* device,
                                                                        char** out_text);
/* Messages the validation layers reported on `device` (0 without validation
 * or for NULL). */
KILN_API uint64_t kiln_vulkan_device_validation_errors(const kiln_vulkan_device_t* device);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_KILN_H_ */
