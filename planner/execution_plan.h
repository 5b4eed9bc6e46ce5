// ExecutionPlan: what a backend runtime executes for one compiled model.
//
// build_plan() walks the (already optimized) graph in order and decides,
// per node, where it runs:
//   * kDispatch — lowered to one or more device kernels (lowering.h);
//   * kHost     — shape arithmetic: every input is a constant or derived from
//                 shapes only (Shape, Size and what they feed), so its value
//                 depends on the input *shapes* alone; the runtime evaluates it
//                 on the host once per input-shape signature;
//   * kFallback — no device lowering: the runtime downloads the inputs, runs
//                 the reference kernel and uploads the outputs (counted in
//                 stats; every op of the zoo has a device lowering);
//   * kIf, kLoop — control flow on the device: the steps of the branches or
//                 the body follow as ranges of the same step list
//                 (planner/control_flow.h).
// Every dim in the plan is symbolic. Dims the graph does not know (unknown
// after shape inference) are replaced by fresh symbols "_vN_K" (value N,
// axis K), which the runtime binds from the concrete shapes it computes per
// signature; the model's own symbols ("seq", "h") bind from the inputs.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/base/status.h"
#include "engine/base/tensor.h"
#include "engine/ir/graph.h"
#include "engine/ops/op_registry.h"
#include "planner/kernel.h"
#include "planner/lowering.h"
#include "planner/target.h"

namespace kiln::planner {

struct PlanTensor {
  // kState: device memory the compiled model owns for as long as it lives,
  // zero-filled once when it is created and kept from run to run (never in
  // the activation arena, never re-used by other tensors): the split-K
  // fix-up's arrival counters, which the kernel returns to zero itself.
  // Its shape is constant; it is never a graph value.
  enum class Origin : uint8_t { kValue, kConstant, kTemporary, kState };
  Origin origin = Origin::kValue;
  ir::ValueId value = ir::kNoValue;  // kValue: the graph value
  DType dtype = DType::kFloat32;     // graph dtype (host side of up/downloads)
  std::vector<ir::Dim> shape;
  DeviceLayout layout;
  // Host data uploaded once at compile time: graph initializers a kernel
  // binds, and constants lowerings derive. Undefined otherwise.
  Tensor constant;
  // The value is computed on the host (kHost steps) or is a small integer
  // graph input (see kHostInputMaxElements); it is uploaded before a run
  // only when some kernel binds it (device_needed).
  bool host_resident = false;
  bool device_needed = false;
  // Same device memory and the same data as this tensor (views: Reshape,
  // Flatten, Identity).
  TensorId alias_of = kNoTensor;
  // Same device memory as this tensor, but other data: the dispatch writing
  // this tensor writes it over that one, whose data dies there (in-place
  // reuse, planner/inplace.h). Memory follows both links (memory_root);
  // what a tensor holds follows alias_of only (data_root).
  TensorId inplace_of = kNoTensor;
};

struct PlanStep {
  enum class Kind : uint8_t { kDispatch, kHost, kFallback, kIf, kLoop };
  Kind kind = Kind::kDispatch;
  ir::NodeId node = ir::kNoNode;  // the node it implements
  KernelDesc kernel;              // kDispatch
  // kIf (planner/control_flow.h): the steps of the then branch are
  // [this step + 1, then_end), those of the else branch [then_end, else_end);
  // the runtime reads `cond` and runs only one range. Ranges nest (an If in
  // a branch). Each range ends with copies of the branch's outputs into the
  // If's output tensors.
  TensorId cond = kNoTensor;
  size_t then_end = 0;
  size_t else_end = 0;
  // kLoop (planner/control_flow.h): the body's steps are [this step + 1,
  // body_end), ending with the copies of the carried values into the body's
  // parameters; they run while fewer than `trip` iterations ran (kNoTensor:
  // no limit), `cond` (the initial condition; kNoTensor: true) and then
  // `body_cond` (the body's condition output) hold. Both are host values
  // or constants except body_cond, which the runtime may read back from
  // the device after every iteration.
  size_t body_end = 0;
  TensorId trip = kNoTensor;
  TensorId body_cond = kNoTensor;
};

// Graph inputs with a static shape of at most this many elements are host
// values when they are integers, or when every node reading them reads them
// as shape data (OpSchema::value_inputs, e.g. Resize's float scales): their
// contents are part of the shape signature.
constexpr int64_t kHostInputMaxElements = 64;

// A kernel parameter computed on the host per shape signature
// (LoweringContext::host_param): the runtime binds `symbol` to fn(node's inputs).
struct HostParam {
  std::string symbol;
  ir::NodeId node = ir::kNoNode;
  HostParamFn fn;
};

struct PlanOptions {
  Storage storage = Storage::kBuffer;  // where activations live (images fall back to buffers when too large)
  ElemType precision = ElemType::kF32; // float activations and weights on the device
  // Use the target's cooperative matrices (tensor cores) for fp16 GEMMs when
  // it has them; off forces the scalar kernels (for A/B measurements).
  bool cooperative_matrix = true;
  // Let elementwise kernels write their output over an input that dies at
  // them (planner/inplace.h); off keeps every tensor in its own block (for
  // A/B measurements and debugging).
  bool inplace = true;
  // Use the target's packed int8 dot products for integer GEMMs when it has
  // them (gemm_int.h); off forces the scalar int32 kernel (A/B measurements).
  bool integer_dot_product = true;
};

struct ExecutionPlan {
  std::vector<PlanTensor> tensors;
  std::vector<PlanStep> steps;
  std::vector<TensorId> inputs;   // main region inputs, in order
  std::vector<TensorId> outputs;  // main region outputs, in order
  std::map<ir::ValueId, TensorId> value_tensor;
  PlanOptions options;
  // Every symbol plan dims mention, sorted (model symbols and fresh ones).
  std::vector<std::string> symbols;
  std::vector<HostParam> host_params;
  // Nodes that run on the host because no lowering handles them, with why.
  std::vector<std::string> fallback_reasons;
  // Fusion groups (planner/fusion.h) planned unfused, with why.
  std::vector<std::string> fusion_notes;

  // Counts over all steps, both branches of every If included.
  size_t dispatch_count() const;
  size_t fallback_count() const;
};

// Builds the plan for the main region of `graph` (shapes must be inferred).
// `graph` is borrowed and must outlive the plan (steps refer to its nodes).
// If runs on the device (a kIf step and its branches' steps) when both
// branches give every output the same dtype and rank; Loop (a kLoop
// step and its body's steps) when it has no scan outputs, its body ignores
// the iteration number, its carried values keep their shapes and its trip
// count and initial condition are host values. Otherwise the node is a
// host fallback with the reason recorded.
// Errors: kUnimplemented for graphs the planner cannot run at all,
// kInvalidArgument for malformed nodes, naming them.
StatusOr<ExecutionPlan> build_plan(const ir::Graph& graph, const TargetInfo& target, const PlanOptions& options,
                                   const LoweringRegistry& lowerings = LoweringRegistry::builtin(),
                                   const ops::OpRegistry& ops = ops::OpRegistry::builtin());

// Every value the sub-graphs of `node` (an If's branches, a Loop's body, and
// the regions nested in them) read or return: what a host fallback of the
// node reads of the enclosing graph, plus the sub-graphs' own values (which
// have no plan tensors of the enclosing graph and are harmless extra).
std::vector<ir::ValueId> subgraph_reads(const ir::Graph& graph, const ir::Node& node);

// The (head step, end step) of every If and Loop: the steps of its branches
// or body lie in (head, end).
std::vector<std::pair<size_t, size_t>> control_ranges(const ExecutionPlan& plan);

// The tensor whose memory `t` lives in: alias_of and inplace_of followed to
// the end. The runtime places only such roots.
TensorId memory_root(const ExecutionPlan& plan, TensorId t);
// The tensor whose data `t` shows: alias_of followed (views), not inplace_of.
TensorId data_root(const ExecutionPlan& plan, TensorId t);

// A readable listing of the plan (tensors with layouts, steps with kernels).
std::string describe_plan(const ExecutionPlan& plan, const ir::Graph& graph);

}  // namespace kiln::planner
