// The C API (include/kiln/kiln.h) over the C++ engine.
//
// Handles are thin structs around the C++ objects. Nothing here throws
// (the engine builds with -fno-exceptions; the importer contains protobuf's
// exceptions itself), so no exception can cross the API.
#include "kiln/kiln.h"

#include <atomic>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "engine/base/status.h"
#include "engine/base/tensor.h"
#include "engine/runtime/reference_executor.h"
#include "frontends/onnx/onnx_importer.h"

struct kiln_status_t {
  kiln_status_code_t code;
  std::string message;
};

struct kiln_tensor_t {
  kiln::Tensor tensor;
};

struct kiln_model_t {
  std::unique_ptr<kiln::ir::Graph> graph;
  std::atomic<int> refs{1};
};

struct kiln_session_t {
  kiln_model_t* model = nullptr;
  std::unique_ptr<kiln::runtime::ReferenceExecutor> reference;
};

namespace {

kiln_status_t* make_status(kiln_status_code_t code, std::string message) {
  return new kiln_status_t{code, std::move(message)};
}

kiln_status_t* to_c(const kiln::Status& status) {
  if (status.ok()) return nullptr;
  return make_status(static_cast<kiln_status_code_t>(status.code()), status.message());
}

kiln_status_t* null_arg(const char* what) {
  return make_status(KILN_INVALID_ARGUMENT, std::string(what) + " must not be NULL");
}

}  // namespace

extern "C" {

kiln_status_code_t kiln_status_code(const kiln_status_t* status) { return status ? status->code : KILN_OK; }
const char* kiln_status_message(const kiln_status_t* status) { return status ? status->message.c_str() : ""; }
void kiln_status_free(kiln_status_t* status) { delete status; }

const char* kiln_version_string(void) { return "0.1.0"; }

kiln_status_t* kiln_tensor_create(kiln_dtype_t dtype, const int64_t* shape, size_t rank, kiln_tensor_t** out_tensor) {
  if (!out_tensor) return null_arg("out_tensor");
  if (rank > 0 && !shape) return null_arg("shape");
  if (dtype <= KILN_DTYPE_UNDEFINED || dtype > KILN_DTYPE_UINT64)
    return make_status(KILN_INVALID_ARGUMENT, "unknown dtype " + std::to_string(static_cast<int>(dtype)));
  kiln::Shape s(shape, shape + rank);
  auto t = kiln::Tensor::allocate(static_cast<kiln::DType>(dtype), s);
  if (!t.ok()) return to_c(t.status());
  auto* handle = new (std::nothrow) kiln_tensor_t{std::move(t).value()};
  if (!handle) return make_status(KILN_OUT_OF_MEMORY, "out of memory");
  *out_tensor = handle;
  return nullptr;
}

void kiln_tensor_destroy(kiln_tensor_t* tensor) { delete tensor; }
kiln_dtype_t kiln_tensor_dtype(const kiln_tensor_t* t) {
  return t ? static_cast<kiln_dtype_t>(t->tensor.dtype()) : KILN_DTYPE_UNDEFINED;
}
size_t kiln_tensor_rank(const kiln_tensor_t* t) { return t ? static_cast<size_t>(t->tensor.rank()) : 0; }
int64_t kiln_tensor_dim(const kiln_tensor_t* t, size_t axis) {
  if (!t || axis >= static_cast<size_t>(t->tensor.rank())) return -1;
  return t->tensor.dim(static_cast<int64_t>(axis));
}
size_t kiln_tensor_byte_size(const kiln_tensor_t* t) { return t ? t->tensor.nbytes() : 0; }
void* kiln_tensor_data(kiln_tensor_t* t) { return t ? t->tensor.raw_data() : nullptr; }

static kiln_status_t* wrap_model(kiln::StatusOr<std::unique_ptr<kiln::ir::Graph>> g, kiln_model_t** out_model) {
  if (!g.ok()) return to_c(g.status());
  auto* m = new (std::nothrow) kiln_model_t;
  if (!m) return make_status(KILN_OUT_OF_MEMORY, "out of memory");
  m->graph = std::move(g).value();
  *out_model = m;
  return nullptr;
}

kiln_status_t* kiln_model_load(const char* path, kiln_model_t** out_model) {
  if (!path) return null_arg("path");
  if (!out_model) return null_arg("out_model");
  return wrap_model(kiln::onnx::import_model_file(path), out_model);
}

kiln_status_t* kiln_model_load_from_memory(const void* data, size_t size, kiln_model_t** out_model) {
  if (!data && size) return null_arg("data");
  if (!out_model) return null_arg("out_model");
  return wrap_model(kiln::onnx::import_model_bytes(data, size, ""), out_model);
}

void kiln_model_retain(kiln_model_t* model) {
  if (model) model->refs.fetch_add(1, std::memory_order_relaxed);
}

void kiln_model_release(kiln_model_t* model) {
  if (model && model->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete model;
}

size_t kiln_model_input_count(const kiln_model_t* m) { return m ? m->graph->main().inputs.size() : 0; }
size_t kiln_model_output_count(const kiln_model_t* m) { return m ? m->graph->main().outputs.size() : 0; }
const char* kiln_model_input_name(const kiln_model_t* m, size_t i) {
  if (!m || i >= m->graph->main().inputs.size()) return nullptr;
  return m->graph->value(m->graph->main().inputs[i]).name.c_str();
}
const char* kiln_model_output_name(const kiln_model_t* m, size_t i) {
  if (!m || i >= m->graph->main().outputs.size()) return nullptr;
  return m->graph->value(m->graph->main().outputs[i]).name.c_str();
}

kiln_status_t* kiln_session_create(kiln_model_t* model, const kiln_session_options_t* options,
                                   kiln_session_t** out_session) {
  if (!model) return null_arg("model");
  if (!out_session) return null_arg("out_session");
  kiln_backend_t backend = KILN_BACKEND_DEFAULT;
  if (options) {
    if (options->struct_size < offsetof(kiln_session_options_t, backend) + sizeof(options->backend))
      return make_status(KILN_INVALID_ARGUMENT, "kiln_session_options_t.struct_size is too small");
    backend = options->backend;
  }
  if (backend == KILN_BACKEND_VULKAN)
    return make_status(KILN_UNAVAILABLE,
                       "the Vulkan execution backend is not available in this build yet; use the reference backend");
  if (backend != KILN_BACKEND_DEFAULT && backend != KILN_BACKEND_REFERENCE)
    return make_status(KILN_INVALID_ARGUMENT, "unknown backend " + std::to_string(static_cast<int>(backend)));
  auto* s = new (std::nothrow) kiln_session_t;
  if (!s) return make_status(KILN_OUT_OF_MEMORY, "out of memory");
  s->reference = std::make_unique<kiln::runtime::ReferenceExecutor>(*model->graph);
  kiln_model_retain(model);
  s->model = model;
  *out_session = s;
  return nullptr;
}

void kiln_session_destroy(kiln_session_t* session) {
  if (!session) return;
  session->reference.reset();
  kiln_model_release(session->model);
  delete session;
}

kiln_status_t* kiln_session_run(kiln_session_t* session, const kiln_tensor_t* const* inputs, size_t input_count,
                                kiln_tensor_t** out_outputs, size_t output_count) {
  if (!session) return null_arg("session");
  if (input_count && !inputs) return null_arg("inputs");
  if (!out_outputs) return null_arg("out_outputs");
  const size_t expected_out = session->model->graph->main().outputs.size();
  if (output_count != expected_out)
    return make_status(KILN_INVALID_ARGUMENT, "the model has " + std::to_string(expected_out) +
                                                  " outputs, output_count is " + std::to_string(output_count));
  std::vector<kiln::Tensor> in;
  for (size_t i = 0; i < input_count; ++i) {
    if (!inputs[i]) return make_status(KILN_INVALID_ARGUMENT, "input " + std::to_string(i) + " is NULL");
    in.push_back(inputs[i]->tensor);
  }
  auto out = session->reference->run(in);
  if (!out.ok()) return to_c(out.status());
  std::vector<kiln_tensor_t*> handles;
  for (kiln::Tensor& t : *out) {
    // Outputs may share storage with inputs or model constants (Identity,
    // Reshape); the caller owns what it gets, so hand out a private copy.
    auto copy = t.clone();
    if (!copy.ok()) {
      for (auto* p : handles) delete p;
      return to_c(copy.status());
    }
    auto* h = new (std::nothrow) kiln_tensor_t{std::move(copy).value()};
    if (!h) {
      for (auto* p : handles) delete p;
      return make_status(KILN_OUT_OF_MEMORY, "out of memory");
    }
    handles.push_back(h);
  }
  for (size_t i = 0; i < handles.size(); ++i) out_outputs[i] = handles[i];
  return nullptr;
}

}  // extern "C"
