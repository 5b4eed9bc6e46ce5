// Lowering: one function per op turns a graph node into kernel dispatches.
//
// The plan builder (execution_plan.h) walks the graph and calls the op's
// LowerFn with a LoweringContext. The context answers what the node reads
// and writes (symbolic shapes, dtypes, constant values, the device layout the
// planner chose for each tensor) and collects what the lowering produces:
// kernel descriptions, re-packed constants, scratch tensors, and aliases
// (an output that is the same memory as an input, e.g. Reshape of a buffer).
//
// A lowering must work for every layout its tensors may have (buffer or
// image): it reads and writes through the generated accessors. Its choices
// (kernel variant, tiling) may depend only on what is known at plan time —
// constant dims — never on a symbol's value, so one plan serves every shape.
//
// A lowering that cannot handle a node returns ctx.unsupported(why); the
// planner then runs that node on the host (reported in the plan's stats).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/status.h"
#include "engine/base/tensor.h"
#include "engine/ir/graph.h"
#include "planner/kernel.h"
#include "planner/target.h"

namespace kiln::planner {

class PlanBuilder;

// What a host parameter (LoweringContext::host_param) is computed from, per
// shape signature: the node's inputs' concrete shapes and, for inputs whose
// value is on the host (constants, small graph inputs, shape arithmetic),
// their values (null for device tensors).
struct HostParamInputs {
  std::vector<Shape> shapes;
  std::vector<const Tensor*> values;
};
// Computes one integer kernel parameter (a float travels as its bits: see
// float_param_bits). An error status fails the run that needed it.
using HostParamFn = std::function<StatusOr<int64_t>(const HostParamInputs&)>;

// A float's bit pattern as a kernel parameter; GLSL reads it back with
// intBitsToFloat(NAME).
int64_t float_param_bits(float f);

// Input `i` of `node` when it is a constant (an initializer); null when it
// is not, or is omitted. For lowerings of several nodes (fusion groups);
// LoweringContext::input_constant is the same for its own node.
const Tensor* node_input_constant(const ir::Graph& graph, const ir::Node& node, size_t i);

class LoweringContext {
 public:
  LoweringContext(PlanBuilder& builder, const ir::Graph& graph, ir::NodeId node);

  const ir::Node& node() const { return node_; }
  const ir::Graph& graph() const { return graph_; }
  const TargetInfo& target() const;
  // The float element type of activations (kF32, or kF16 for --precision fp16).
  ElemType float_type() const;
  // PlanBuilder::m_major_store_hint: the node's output is stored through a
  // view that makes its rows, not its columns, contiguous.
  bool m_major_store_hint() const;
  // The device element type of input i's value: for floats float_type(), or
  // kF32 where the precision policy keeps a constant fp32 (precision_policy.h).
  // A lowering re-packing a constant input stores the copy in this type.
  ElemType input_elem_type(size_t i) const;

  size_t num_inputs() const { return node_.inputs.size(); }
  size_t num_outputs() const { return node_.outputs.size(); }
  // False for omitted optional inputs and indices past the end.
  bool has_input(size_t i) const;
  bool has_output(size_t i) const;
  DType input_dtype(size_t i) const;
  const std::vector<ir::Dim>& input_shape(size_t i) const;
  DType output_dtype(size_t i) const;
  const std::vector<ir::Dim>& output_shape(size_t i) const;
  // The input's value when it is a constant (an initializer); else null.
  const Tensor* input_constant(size_t i) const;
  // The input's value as dims when known at plan time, constant or symbolic
  // (a shape-derived int tensor such as Reshape's target).
  std::optional<std::vector<ir::Dim>> input_dims_value(size_t i) const;
  // Whether the input's value is on the host when a run starts (a constant,
  // a small graph input, or host shape arithmetic), so that host_param()
  // can read it even though the plan does not know it.
  bool input_on_host(size_t i) const;
  // A symbolic kernel parameter whose value the runtime computes on the host
  // once per shape signature (Slice's start along an axis when `starts` is a
  // graph input; a Resize scale). Use it as a KernelParam value; the kernel
  // sees a push constant.
  ir::Dim host_param(HostParamFn fn);

  // The plan tensors of the node's inputs and outputs (device resident).
  TensorId input(size_t i);
  TensorId output(size_t i);
  const DeviceLayout& layout(TensorId t) const;
  const std::vector<ir::Dim>& shape(TensorId t) const;

  // An accessor named `name` for tensor `t` (shape and layout from the plan).
  KernelTensor bind(std::string name, TensorId t, bool written = false) const;
  // Same, viewing `t` with another logical shape of the same element count
  // (buffers only: a row-major view; images keep their own shape).
  KernelTensor bind_as(std::string name, TensorId t, std::vector<ir::Dim> view_shape, bool written = false) const;

  // A constant made by the lowering (re-packed or converted weights), uploaded
  // once when the model is compiled. `host` is the data in graph dtype; the
  // layout's element type decides what is stored.
  TensorId add_constant(Tensor host, DeviceLayout layout);
  // A scratch tensor living only during this node's kernels.
  TensorId add_temporary(DType dtype, std::vector<ir::Dim> shape, DeviceLayout layout);
  // Device memory the compiled model keeps from run to run, zero-filled once
  // at creation (PlanTensor::Origin::kState): a buffer of `shape` (constant
  // dims) in `type`. Whatever a kernel leaves there, the next run sees, so
  // its kernels must leave it as they need to find it.
  TensorId add_state(DType dtype, std::vector<int64_t> shape, ElemType type);
  // Output `out` is the same device memory as `source` (same element count,
  // both buffers of the same element type); no kernel runs for it.
  Status alias_output(size_t out, TensorId source);

  // Appends a dispatch; dispatches run in the order emitted.
  void emit(KernelDesc desc);

  // A kUnimplemented status naming the node: the planner falls back to the host.
  Status unsupported(std::string_view why) const;
  // A kInvalidArgument status naming the node (malformed node).
  Status error(std::string_view why) const;

 private:
  PlanBuilder& builder_;
  const ir::Graph& graph_;
  const ir::Node& node_;
};

using LowerFn = Status (*)(LoweringContext&);

class LoweringRegistry {
 public:
  // Registers the lowering of (domain, op); a duplicate is remembered in
  // registration_errors() (a test checks the list is empty).
  void add(std::string domain, std::string op, LowerFn fn);
  LowerFn find(std::string_view domain, std::string_view op) const;
  std::vector<std::string> ops() const;  // "Conv", "kiln.Silu", sorted
  const std::vector<std::string>& registration_errors() const { return errors_; }

  // Every built-in lowering, built on first use; immutable afterwards.
  static const LoweringRegistry& builtin();

 private:
  std::vector<std::pair<std::pair<std::string, std::string>, LowerFn>> entries_;
  std::vector<std::string> errors_;
};

// Registration functions, one per op family, each in its own lower_*.cc.
void register_elementwise_lowerings(LoweringRegistry& r);     // unary, binary, Where, Cast, Clip, activations
void register_data_movement_lowerings(LoweringRegistry& r);   // Reshape, Transpose, Concat, Slice, Gather, Pad, Resize...
void register_reduction_lowerings(LoweringRegistry& r);       // Reduce*, ArgMax, Softmax, LayerNorm, norms
void register_pooling_lowerings(LoweringRegistry& r);         // MaxPool, AveragePool, Global*Pool
void register_linalg_lowerings(LoweringRegistry& r);          // MatMul, Gemm, Conv, ConvTranspose
void register_topk_lowerings(LoweringRegistry& r);            // TopK
void register_einsum_lowerings(LoweringRegistry& r);          // Einsum
void register_recurrent_lowerings(LoweringRegistry& r);       // LSTM, GRU, RNN

}  // namespace kiln::planner
