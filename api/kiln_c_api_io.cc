// The C API's small helpers for clients that work from files and the command
// line (kiln.h "\since 0.2" sections): status and dtype names, tensor files
// (.npy, ONNX TensorProto), element access, and what a model declares for
// its inputs, so a client can build inputs without the engine's headers.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <new>
#include <string>

#include "api/kiln_c_api_internal.h"
#include "engine/base/npy.h"
#include "frontends/onnx/onnx_importer.h"

using kiln::capi::make_status;
using kiln::capi::null_arg;
using kiln::capi::to_c;

namespace kiln::capi {

kiln_status_t* return_string(const std::string& text, char** out_text) {
  char* copy = static_cast<char*>(std::malloc(text.size() + 1));
  if (!copy) return make_status(KILN_OUT_OF_MEMORY, "out of memory");
  std::memcpy(copy, text.c_str(), text.size() + 1);
  *out_text = copy;
  return nullptr;
}

}  // namespace kiln::capi

namespace {

// The model's input `index`, or OUT_OF_RANGE.
kiln_status_t* find_input(const kiln_model_t* model, size_t index, const kiln::ir::Value** out) {
  const auto& inputs = model->graph->main().inputs;
  if (index >= inputs.size())
    return make_status(KILN_OUT_OF_RANGE,
                       "input " + std::to_string(index) + " of a model with " + std::to_string(inputs.size()) + " inputs");
  *out = &model->graph->value(inputs[index]);
  return nullptr;
}

bool ends_with(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

}  // namespace

extern "C" {

const char* kiln_status_code_name(kiln_status_code_t code) {
  if (code < KILN_OK || code > KILN_DATA_LOSS) return "UNKNOWN";
  return kiln::status_code_name(static_cast<kiln::StatusCode>(code));
}

const char* kiln_dtype_name(kiln_dtype_t dtype) {
  if (dtype < KILN_DTYPE_UNDEFINED || dtype > KILN_DTYPE_UINT64) return "?";
  // dtype_name returns views of string literals.
  return kiln::dtype_name(static_cast<kiln::DType>(dtype)).data();
}

void kiln_string_free(char* string) { std::free(string); }

kiln_status_t* kiln_tensor_load(const char* path, kiln_tensor_t** out_tensor) {
  if (!path) return null_arg("path");
  if (!out_tensor) return null_arg("out_tensor");
  const std::string p = path;
  auto t = ends_with(p, ".pb") ? kiln::onnx::load_tensor_proto_file(p) : kiln::read_npy(p);
  if (!t.ok()) return to_c(t.status());
  auto* h = new (std::nothrow) kiln_tensor_t{std::move(t).value()};
  if (!h) return make_status(KILN_OUT_OF_MEMORY, "out of memory");
  *out_tensor = h;
  return nullptr;
}

kiln_status_t* kiln_tensor_save_npy(const kiln_tensor_t* tensor, const char* path) {
  if (!tensor) return null_arg("tensor");
  if (!path) return null_arg("path");
  return to_c(kiln::write_npy(path, tensor->tensor));
}

double kiln_tensor_get_f64(const kiln_tensor_t* t, size_t index) {
  if (!t || index >= static_cast<size_t>(t->tensor.numel())) return std::numeric_limits<double>::quiet_NaN();
  return t->tensor.get_f64(static_cast<int64_t>(index));
}

kiln_status_t* kiln_tensor_set_f64(kiln_tensor_t* t, size_t index, double value) {
  if (!t) return null_arg("tensor");
  if (index >= static_cast<size_t>(t->tensor.numel()))
    return make_status(KILN_OUT_OF_RANGE, "element " + std::to_string(index) + " of a tensor with " +
                                              std::to_string(t->tensor.numel()) + " elements");
  t->tensor.set_f64(static_cast<int64_t>(index), value);
  return nullptr;
}

kiln_status_t* kiln_model_input_info(const kiln_model_t* model, size_t index, kiln_input_info_t* out_info) {
  if (!model) return null_arg("model");
  if (!out_info) return null_arg("out_info");
  if (out_info->struct_size < offsetof(kiln_input_info_t, shape_text) + sizeof(out_info->shape_text))
    return make_status(KILN_INVALID_ARGUMENT, "kiln_input_info_t.struct_size is too small");
  const kiln::ir::Value* input = nullptr;
  if (kiln_status_t* bad = find_input(model, index, &input)) return bad;
  const kiln::ir::Value& v = *input;
  out_info->name = v.name.c_str();
  out_info->dtype = static_cast<kiln_dtype_t>(v.dtype);
  out_info->rank = v.shape.has_rank ? v.shape.rank() : -1;
  out_info->shape_text = model->input_shape_text[index].c_str();
  return nullptr;
}

kiln_status_t* kiln_model_input_dim(const kiln_model_t* model, size_t index, size_t axis, kiln_input_dim_t* out_dim) {
  if (!model) return null_arg("model");
  if (!out_dim) return null_arg("out_dim");
  if (out_dim->struct_size < offsetof(kiln_input_dim_t, is_expression) + sizeof(out_dim->is_expression))
    return make_status(KILN_INVALID_ARGUMENT, "kiln_input_dim_t.struct_size is too small");
  const kiln::ir::Value* input = nullptr;
  if (kiln_status_t* bad = find_input(model, index, &input)) return bad;
  const kiln::ir::Value& v = *input;
  if (!v.shape.has_rank || axis >= v.shape.dims.size())
    return make_status(KILN_OUT_OF_RANGE, "axis " + std::to_string(axis) + " of input '" + v.name + "' of shape " +
                                              v.shape.to_string());
  const kiln::ir::Dim& d = v.shape.dims[axis];
  const std::string& text = model->input_dim_text[index][axis];
  out_dim->value = d.is_const() ? d.value() : -1;
  out_dim->symbol = text.empty() ? nullptr : text.c_str();
  out_dim->is_expression = d.is_expr() ? 1 : 0;
  return nullptr;
}

kiln_status_t* kiln_model_input_shape(const kiln_model_t* model, size_t index, const char* const* symbol_names,
                                      const int64_t* symbol_values, size_t binding_count, int64_t* out_shape,
                                      size_t capacity, size_t* out_rank) {
  if (!model) return null_arg("model");
  if (binding_count && (!symbol_names || !symbol_values)) return null_arg("symbol_names/symbol_values");
  if (!out_rank) return null_arg("out_rank");
  const kiln::ir::Value* input = nullptr;
  if (kiln_status_t* bad = find_input(model, index, &input)) return bad;
  const kiln::ir::Value& v = *input;
  if (!v.shape.has_rank)
    return make_status(KILN_FAILED_PRECONDITION, "input '" + v.name + "' has unknown rank");
  if (capacity < v.shape.dims.size())
    return make_status(KILN_OUT_OF_RANGE, "input '" + v.name + "' has rank " + std::to_string(v.shape.rank()) +
                                              "; out_shape has room for " + std::to_string(capacity));
  if (!v.shape.dims.empty() && !out_shape) return null_arg("out_shape");
  std::map<std::string, int64_t> bindings;
  for (size_t i = 0; i < binding_count; ++i) {
    if (!symbol_names[i]) return make_status(KILN_INVALID_ARGUMENT, "symbol_names[" + std::to_string(i) + "] is NULL");
    bindings.emplace(symbol_names[i], symbol_values[i]);
  }
  for (size_t k = 0; k < v.shape.dims.size(); ++k) {
    auto value = v.shape.dims[k].evaluate(bindings);
    if (!value)
      return make_status(KILN_FAILED_PRECONDITION,
                         "input '" + v.name + "' has dynamic shape " + v.shape.to_string());
    out_shape[k] = *value;
  }
  *out_rank = v.shape.dims.size();
  return nullptr;
}

}  // extern "C"
