/* Kiln public C API.
 *
 * Opaque handles, status returns, no exceptions, no printing. Every function
 * that can fail returns a kiln_status_t*: NULL means success; otherwise the
 * caller owns the status and frees it with kiln_status_free. Outputs are
 * `out_` parameters, written only on success. destroy/release functions
 * accept NULL.
 *
 * Thread-safety: a model may be shared by several threads once loaded; a
 * session's run is thread-safe; a tensor must not be written concurrently.
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
 * dim, rank > 8 with shape NULL), OUT_OF_MEMORY. */
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
  KILN_BACKEND_VULKAN = 2
} kiln_backend_t;

/* Where the Vulkan backend keeps activations. */
typedef enum kiln_storage_t {
  KILN_STORAGE_BUFFER = 0, /* storage buffers, row-major (bindable to host buffers) */
  KILN_STORAGE_IMAGE = 1   /* RGBA images (texture memory) where they fit */
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
   * or "default": the default pipeline (canonicalization to a fixed point,
   * rdp, memplan), followed by every pass of the loaded third-party
   * plugins; "none": no pass; else a comma-separated list of pass names
   * run once, in that order. */
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
  /* Where Kiln's own plugins (kiln.canonicalize, kiln.rdp, kiln.memplan)
   * are. NULL: beside libkiln (<libdir>/kiln/plugins), or linked in when
   * Kiln was built with KILN_STATIC_PLUGINS. */
  const char* plugin_dir;
  /* Receives pipeline and plugin messages; NULL drops them. */
  kiln_log_fn log;
  void* log_user_data;
} kiln_session_options_t;

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

/* The backend the session runs on (REFERENCE or VULKAN, never DEFAULT). */
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
 * DEVICE_LOST, or a kernel error naming the node. */
KILN_API KILN_NODISCARD kiln_status_t* kiln_session_run(kiln_session_t* session, const kiln_tensor_t* const* inputs,
                                                        size_t input_count, kiln_tensor_t** out_outputs,
                                                        size_t output_count);

/* What the session's last completed run did (Vulkan sessions; a reference
 * session reports wall_ms only). Grows only at the end; set struct_size =
 * sizeof(kiln_run_stats_t). */
typedef struct kiln_run_stats_t {
  uint32_t struct_size;
  double wall_ms;       /* kiln_session_run from call to return */
  double gpu_ms;        /* command buffers on the GPU; -1 without timestamps */
  uint32_t dispatches;  /* compute dispatches */
  uint32_t fallbacks;   /* nodes run on the host (with transfers) */
  uint32_t recorded;    /* 1: the run recorded new command buffers (new shapes or bindings) */
  uint32_t kernel_timings; /* entries for kiln_session_kernel_timing (profile on) */
  /* Device memory the session holds after the run: weights, the activation
   * memory all input shapes share, per-signature staging (Vulkan). */
  uint64_t device_bytes;
  /* The activation memory: the largest arena plan seen, not one per shape. */
  uint64_t activation_bytes;
} kiln_run_stats_t;

/* One kernel's GPU time in the last run (profile on). Names are truncated
 * to fit. Grows only at the end; set struct_size. */
typedef struct kiln_kernel_timing_t {
  uint32_t struct_size;
  char kernel[64];  /* the kernel ("conv2d_1x1", "add") */
  char node[128];   /* the graph node it implements (name, else op) */
  double gpu_ms;
} kiln_kernel_timing_t;

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

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_KILN_H_ */
