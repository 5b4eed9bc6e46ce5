// The op registry: one entry per supported op with its schema, its shape
// inference and its reference CPU kernel.
//
// Shape inference is written once, over symbolic dims (ir::Dim): with
// concrete input shapes everything folds to constants (that is how the
// reference executor sizes outputs), with symbolic ones it builds dim
// expressions (what later passes and SoD²'s rank/dimension propagation use).
// Inference may also read the *values* of inputs when they are known: a
// constant tensor, or (for shape-computation chains) a vector of symbolic dims
// that an earlier op such as Shape produced.
//
// Reference kernels are the correctness oracle for every backend: clear,
// exact (fp32 accumulation in double where it matters), not fast — except
// Conv/MatMul/Gemm, which are blocked enough to run the model zoo in tests.
//
// Thread-safety: the registry is immutable after builtin() returns; kernels
// are re-entrant.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/status.h"
#include "engine/base/tensor.h"
#include "engine/ir/graph.h"

namespace kiln::ops {

// What shape inference knows about one input or output.
struct ValueInfo {
  DType dtype = DType::kUndefined;
  ir::SymShape shape;
  const Tensor* value = nullptr;                 // known tensor value, if any
  std::optional<std::vector<ir::Dim>> dims_value;  // 0-D/1-D int tensor known as symbolic dims
};

class InferContext {
 public:
  InferContext(const ir::Node& node, std::vector<ValueInfo> inputs, size_t num_outputs)
      : node_(node), inputs_(std::move(inputs)), outputs_(num_outputs) {}

  const ir::Node& node() const { return node_; }
  size_t num_inputs() const { return inputs_.size(); }
  size_t num_outputs() const { return outputs_.size(); }
  // False for omitted optional inputs and indices past the end.
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i].dtype != DType::kUndefined; }
  const ValueInfo& input(size_t i) const { return inputs_[i]; }
  DType input_dtype(size_t i) const { return inputs_[i].dtype; }
  const ir::SymShape& input_shape(size_t i) const { return inputs_[i].shape; }
  const Tensor* input_value(size_t i) const { return has_input(i) ? inputs_[i].value : nullptr; }
  // The input's value as dims: from a known int tensor, or from dims_value.
  std::optional<std::vector<ir::Dim>> input_as_dims(size_t i) const;

  void set_output(size_t i, DType dtype, ir::SymShape shape) {
    outputs_[i].dtype = dtype;
    outputs_[i].shape = std::move(shape);
  }
  void set_output_dims_value(size_t i, std::vector<ir::Dim> dims) { outputs_[i].dims_value = std::move(dims); }
  const std::vector<ValueInfo>& outputs() const { return outputs_; }
  std::vector<ValueInfo>& mutable_outputs() { return outputs_; }

  // An INVALID_ARGUMENT status prefixed with the node's description.
  Status error(const std::string& message) const;

 private:
  const ir::Node& node_;
  std::vector<ValueInfo> inputs_;
  std::vector<ValueInfo> outputs_;
};

// Runs a sub-graph region of the node with the given region inputs; used by
// If/Loop kernels. Returns the region's outputs.
using RegionRunner = std::function<StatusOr<std::vector<Tensor>>(ir::RegionId, std::vector<Tensor>)>;

class KernelContext {
 public:
  KernelContext(const ir::Node& node, std::vector<const Tensor*> inputs, std::vector<ValueInfo> inferred,
                RegionRunner region_runner)
      : node_(node), inputs_(std::move(inputs)), inferred_(std::move(inferred)),
        outputs_(inferred_.size()), region_runner_(std::move(region_runner)) {}

  const ir::Node& node() const { return node_; }
  size_t num_inputs() const { return inputs_.size(); }
  size_t num_outputs() const { return outputs_.size(); }
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  const Tensor& input(size_t i) const { return *inputs_[i]; }
  // What shape inference said about output i (static for most ops).
  const ValueInfo& inferred_output(size_t i) const { return inferred_[i]; }

  // Allocates output i with the inferred dtype and (static) shape.
  StatusOr<Tensor*> allocate_output(size_t i);
  // Allocates output i with an explicit shape (data-dependent ops).
  StatusOr<Tensor*> allocate_output(size_t i, DType dtype, Shape shape);
  // Sets output i to an existing tensor (views such as Reshape share storage).
  void set_output(size_t i, Tensor t) { outputs_[i] = std::move(t); }
  std::vector<Tensor>& outputs() { return outputs_; }

  StatusOr<std::vector<Tensor>> run_region(ir::RegionId region, std::vector<Tensor> region_inputs) const;
  Status error(const std::string& message) const;

 private:
  const ir::Node& node_;
  std::vector<const Tensor*> inputs_;
  std::vector<ValueInfo> inferred_;
  std::vector<Tensor> outputs_;
  RegionRunner region_runner_;
};

using InferFn = Status (*)(InferContext&);
using KernelFn = Status (*)(KernelContext&);

// The domain of Kiln's own ops (fused forms such as kiln::Silu that passes
// produce and that have no ONNX equivalent). Printed as "kiln"::Silu.
inline constexpr const char* kKilnDomain = "kiln";

// DNNFusion's classification of an op by how its output elements map to its
// input elements (the basis of fusion legality, plugins/fusion): one-to-one
// (elementwise: Add, Relu, Cast, Clip, Where), one-to-many (an input element
// feeds several outputs: Expand, Tile, Resize), many-to-many (complex ops
// that read a window or a whole axis per output element: Conv, MatMul, Gemm,
// pooling, reductions, Softmax, the normalizations), reorganize (same
// elements, another shape: Reshape, Flatten, Squeeze, Unsqueeze, Concat,
// Split), shuffle (same elements, permuted: Transpose, DepthToSpace,
// SpaceToDepth), and other (opaque to fusion: control flow, shape
// computation, data-dependent indexing such as Gather, Slice, Pad,
// generators). kUnset marks a registration that forgot to choose; a test
// checks that no built-in op has it. The numbering is kiln_mapping_t's in
// kiln/kiln_plugin.h, where plugins read it (host op_mapping).
enum class MappingType : uint8_t {
  kUnset = 0,
  kOneToOne = 1,
  kOneToMany = 2,
  kManyToMany = 3,
  kReorganize = 4,
  kShuffle = 5,
  kOther = 6,
};

// "one-to-one", "many-to-many", ... ("unset" for kUnset).
const char* mapping_type_name(MappingType type);

struct OpSchema {
  std::string name;
  std::string domain;       // "" = default ONNX domain
  int min_inputs = 0;
  int max_inputs = 0;       // -1 = variadic
  int min_outputs = 1;
  int max_outputs = 1;      // -1 = variadic
  InferFn infer = nullptr;
  KernelFn kernel = nullptr;
  // Inputs whose *values* (not only shapes) decide the output's shape or how
  // a device kernel indexes — Reshape's target, Slice's starts, Resize's
  // scales, a reduction's axes (SoD²'s "input shape & value determined" ops).
  // A runtime keeps such values on the host when they are small graph inputs.
  std::vector<int> value_inputs = {};
  // DNNFusion mapping type; every registration sets it (the family's add
  // helpers take it as an argument).
  MappingType mapping = MappingType::kUnset;
};

class OpRegistry {
 public:
  // Registers an op; a duplicate (domain, name) is an internal error, which
  // is also remembered in registration_errors() so that a family that
  // ignores the status cannot hide it (a test checks the list is empty).
  Status add(OpSchema schema);
  const std::vector<std::string>& registration_errors() const { return registration_errors_; }
  const OpSchema* find(std::string_view domain, std::string_view name) const;
  std::vector<const OpSchema*> all() const;

  // The registry with every built-in op, built on first use.
  static const OpRegistry& builtin();

 private:
  std::map<std::pair<std::string, std::string>, std::unique_ptr<OpSchema>> ops_;
  std::vector<std::string> registration_errors_;
};

// Runs shape inference for `node` with the given input infos, after checking
// input/output arity against the schema.
StatusOr<std::vector<ValueInfo>> infer_node(const OpSchema& schema, const ir::Node& node,
                                            std::vector<ValueInfo> inputs);

// Registration functions, one per op family (each in its own file).
void register_elementwise_ops(OpRegistry& r);     // unary, binary, Where, comparisons, Cast, Clip...
void register_reduction_ops(OpRegistry& r);       // Reduce*, Softmax, LayerNorm, BatchNorm, ArgMax...
void register_linalg_ops(OpRegistry& r);          // Conv, ConvTranspose, Gemm, MatMul
void register_pooling_ops(OpRegistry& r);         // MaxPool, AveragePool, Global*Pool
void register_data_movement_ops(OpRegistry& r);   // Reshape, Transpose, Concat, Slice, Gather, Resize, Pad...
void register_control_flow_ops(OpRegistry& r);    // If, Loop, Identity, Constant
void register_recurrent_ops(OpRegistry& r);       // LSTM, GRU, RNN

}  // namespace kiln::ops
