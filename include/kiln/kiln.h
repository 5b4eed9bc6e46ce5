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
#define KILN_VERSION_MINOR 1
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

/* "0.1.0" */
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

/* ---- sessions ------------------------------------------------------------ */

typedef enum kiln_backend_t {
  KILN_BACKEND_DEFAULT = 0,   /* Vulkan when available, else reference */
  KILN_BACKEND_REFERENCE = 1, /* the CPU reference executor */
  KILN_BACKEND_VULKAN = 2
} kiln_backend_t;

/* Grows only at the end; set struct_size = sizeof(kiln_session_options_t). */
typedef struct kiln_session_options_t {
  uint32_t struct_size;
  kiln_backend_t backend;
} kiln_session_options_t;

/* A model prepared for one backend. Single owner: create/destroy. */
typedef struct kiln_session_t kiln_session_t;

/* Prepares `model` for execution (the session retains the model). `options`
 * may be NULL. Errors: UNAVAILABLE (backend not built or no device). */
KILN_API KILN_NODISCARD kiln_status_t* kiln_session_create(kiln_model_t* model, const kiln_session_options_t* options,
                                                           kiln_session_t** out_session);
KILN_API void kiln_session_destroy(kiln_session_t* session);

/* Runs the model. `inputs` are in the model's input order (borrowed);
 * `out_outputs` receives kiln_model_output_count() new tensors the caller
 * destroys. Thread-safe. Errors: INVALID_ARGUMENT (wrong count, dtype or
 * shape; the message names the input), or a kernel error naming the node. */
KILN_API KILN_NODISCARD kiln_status_t* kiln_session_run(kiln_session_t* session, const kiln_tensor_t* const* inputs,
                                                        size_t input_count, kiln_tensor_t** out_outputs,
                                                        size_t output_count);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_KILN_H_ */
