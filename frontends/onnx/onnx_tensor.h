// TensorProto → kiln::Tensor, and the ONNX element-type mapping.
//
// Separate from the graph conversion because three callers need it: graph
// initializers, Constant nodes and tensor attributes, and the .pb files of the
// ONNX test data. Everything read from a model is untrusted: sizes are checked
// against the shape before anything is allocated, and external data is read
// only from regular files inside the model's directory, never through a
// symlink. Internal to kiln_onnx (it includes the protobuf headers).
#pragma once

#include <string>

#include <onnx/onnx_pb.h>

#include "engine/base/status.h"
#include "engine/base/tensor.h"

namespace kiln::onnx {

// Where a tensor's external data may come from.
struct ExternalDataPolicy {
  bool allowed = true;
  std::string base_dir;  // the model's directory; empty forbids external data
};

// Maps an ONNX TensorProto.DataType to a Kiln dtype. `what` names the tensor or
// value for the error ("initializer 'w'"): UNIMPLEMENTED for types Kiln does
// not have (string, complex, bfloat16), INVALID_ARGUMENT for unknown numbers.
StatusOr<DType> dtype_from_onnx(int32_t onnx_type, const std::string& what);
// Inverse of dtype_from_onnx (0 for kUndefined).
int32_t dtype_to_onnx(DType dtype);

// Converts a tensor. `what` names it in errors ("initializer 'conv1.weight'").
// Data comes from raw_data, the typed fields or external data; a size that
// does not match the shape is INVALID_ARGUMENT naming the tensor.
StatusOr<Tensor> tensor_from_proto(const ::onnx::TensorProto& proto, const std::string& what,
                                   const ExternalDataPolicy& policy);

// Opens `location` relative to `base_dir` for reading external data: the path
// must be relative, without "..", and no component may be a symlink; the file
// must be a regular file (no FIFO or device) with one link (a hard link may
// be a file outside the directory). Returns a file descriptor (the caller
// closes it) or PERMISSION_DENIED / NOT_FOUND.
StatusOr<int> open_confined(const std::string& base_dir, const std::string& location, const std::string& what);

}  // namespace kiln::onnx
