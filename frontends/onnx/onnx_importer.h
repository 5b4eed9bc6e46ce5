// ONNX → Kiln graph IR.
//
// Parses a ModelProto with the OS's libonnx/protobuf, converts initializers
// (including external data confined to the model's directory), normalizes
// opsets 11–18 to the op semantics the registry implements (attributes that
// later opsets turned into inputs — Split's split, Squeeze/Unsqueeze/Reduce*
// axes, Clip's min/max, Pad's pads — become constant inputs), turns Constant
// nodes into constant values, and checks every node against the op registry.
// Errors name the node, op and problem. protobuf may throw; every exception
// is caught here and becomes a status.
//
// Thread-safety: the functions are re-entrant.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "engine/base/status.h"
#include "engine/base/tensor.h"
#include "engine/ir/graph.h"

namespace kiln::onnx {

struct ImportOptions {
  // Names of graph inputs' dims that should become symbols even if the model
  // fixes them (unused dims keep the model's names).
  bool allow_external_data = true;
};

// Imports a .onnx file. External data files are resolved relative to the
// model's directory; "..", absolute paths and symlinks are rejected.
StatusOr<std::unique_ptr<ir::Graph>> import_model_file(const std::string& path, const ImportOptions& options = {});
// Imports serialized ModelProto bytes. `base_dir` is where external data
// lives; empty rejects models with external data.
StatusOr<std::unique_ptr<ir::Graph>> import_model_bytes(const void* data, size_t size, const std::string& base_dir,
                                                        const ImportOptions& options = {});
// Loads a serialized TensorProto (.pb), as the ONNX test data uses.
StatusOr<Tensor> load_tensor_proto_file(const std::string& path);

}  // namespace kiln::onnx
