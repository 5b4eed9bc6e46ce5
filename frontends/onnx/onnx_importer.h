// ONNX → Kiln graph IR.
//
// Parses a ModelProto with the OS's libonnx/protobuf, converts initializers
// (including external data confined to the model's directory), normalizes
// opsets 7–21 to the latest semantics the registry implements (attributes
// that later opsets turned into inputs — Split's split, Squeeze/Unsqueeze/
// Reduce* axes, Clip's min/max, Pad's pads, Slice's starts/ends — become
// constant inputs; Upsample and Resize-10 become Resize; Softmax before 13
// keeps its flatten-to-2-D meaning), turns Constant nodes into constant
// values, checks every node against the op registry and runs shape inference
// so every value has a dtype and a (symbolic) shape. Models for opsets 1–6
// import only when all their ops kept their meaning since. Errors name the
// node, op and problem. protobuf may throw; every exception is caught here
// and becomes a status.
//
// Errors: DATA_LOSS for bytes that do not parse (or external data files that
// are too short), UNIMPLEMENTED for unsupported ops (all listed in one
// message), opsets and types, PERMISSION_DENIED for external data outside
// the model's directory, NOT_FOUND for missing files, INVALID_ARGUMENT for
// malformed models (dangling inputs, duplicate outputs, sizes that do not
// match shapes, cycles, fields sent with the wrong protobuf wire type,
// attributes of another type than the ONNX schema declares, input counts
// outside the schema's range: onnx_checks.h) and for model, .pb and external
// data paths that are not regular files (FIFOs, devices, directories).
//
// Thread-safety: the functions are re-entrant.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "engine/base/status.h"
#include "engine/base/tensor.h"
#include "engine/ir/graph.h"

namespace kiln::onnx {

struct ImportOptions {
  // Whether tensors may read external data files (always confined to the
  // model's directory); false makes such models PERMISSION_DENIED.
  bool allow_external_data = true;
};

// Imports a .onnx file. External data files are resolved relative to the
// model's directory; "..", absolute paths, symlinks, hard links (a file with
// more than one link may be a file outside the directory) and anything but a
// regular file are rejected.
StatusOr<std::unique_ptr<ir::Graph>> import_model_file(const std::string& path, const ImportOptions& options = {});
// Imports serialized ModelProto bytes. `base_dir` is where external data
// lives; empty rejects models with external data.
StatusOr<std::unique_ptr<ir::Graph>> import_model_bytes(const void* data, size_t size, const std::string& base_dir,
                                                        const ImportOptions& options = {});
// Loads a serialized TensorProto (.pb), as the ONNX test data uses.
StatusOr<Tensor> load_tensor_proto_file(const std::string& path);

// What of a model file Kiln does not support, found without converting it.
// Conformance runners use it to tell "unsupported" apart from "wrong".
struct SupportReport {
  // Ops (sub-graphs included) the built-in registry lacks, after the same
  // opset upgrades import applies: "Foo" or "com.example.Bar".
  std::vector<std::string> ops;
  // Value types Kiln has no equivalent for, used by the model's inputs,
  // outputs, initializers or value_info: "string", "bfloat16", "complex64",
  // "sequence", "optional", "map", "sparse tensor".
  std::vector<std::string> types;
  bool supported() const { return ops.empty() && types.empty(); }
};
StatusOr<SupportReport> check_model_support(const std::string& path);

}  // namespace kiln::onnx
