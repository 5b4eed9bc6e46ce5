// PlanBuilder: the state build_plan() keeps while lowering nodes; the
// LoweringContext of each node forwards to it. Internal to the planner.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "planner/execution_plan.h"
#include "planner/plan_hints.h"

namespace kiln::planner {

class PlanBuilder {
 public:
  PlanBuilder(const ir::Graph& graph, const TargetInfo& target, const PlanOptions& options);

  // Values: symbolic shapes with fresh symbols for unknown dims.
  const std::vector<ir::Dim>& value_shape(ir::ValueId v) const { return shapes_[static_cast<size_t>(v)]; }
  bool value_ranked(ir::ValueId v) const { return ranked_[static_cast<size_t>(v)]; }
  const std::optional<std::vector<ir::Dim>>& dims_value(ir::ValueId v) const {
    return dims_values_[static_cast<size_t>(v)];
  }
  void set_dims_value(ir::ValueId v, std::vector<ir::Dim> d) { dims_values_[static_cast<size_t>(v)] = std::move(d); }

  // The device element type of a value's tensor: the plan precision for float
  // values unless the precision policy keeps it fp32 (precision_policy.h).
  ElemType value_elem_type(ir::ValueId v) const;

  // The tensor of a value, created on first use with the planner's layout.
  TensorId tensor_of(ir::ValueId v);
  TensorId add_tensor(PlanTensor t);
  PlanTensor& tensor(TensorId t) { return plan_.tensors[static_cast<size_t>(t)]; }
  const PlanTensor& tensor(TensorId t) const { return plan_.tensors[static_cast<size_t>(t)]; }
  // The layout a tensor of this dtype and shape gets, float values stored as
  // `float_type`.
  // `hint` is the value's kiln.storage / kiln.packed_axis (plan_hints.h);
  // without one the plan's storage option and the default packed axis apply.
  DeviceLayout choose_layout(DType dtype, const std::vector<ir::Dim>& shape, bool constant, ElemType float_type,
                             const StorageHint& hint = {}) const;

  const TargetInfo& target() const { return target_; }
  // Set while a store-view group's anchor is lowered whose view sends the
  // anchor's innermost row axis to the output's innermost axis (ConvNeXt's
  // channels-last MatMul stored through a Transpose to NCHW): a GEMM
  // anchor then prefers m-major stores (GemmProblem::store_m_major).
  bool m_major_store_hint() const { return m_major_store_hint_; }
  void set_m_major_store_hint(bool on) { m_major_store_hint_ = on; }
  const PlanOptions& options() const { return options_; }
  ExecutionPlan& plan() { return plan_; }
  std::vector<KernelDesc>& pending_kernels() { return pending_; }
  // The pending kernels, leaving none (a fused lowering collects what the
  // lowerings it ran emitted).
  std::vector<KernelDesc> take_pending_kernels() {
    std::vector<KernelDesc> kernels = std::move(pending_);
    pending_.clear();
    return kernels;
  }

 private:
  bool m_major_store_hint_ = false;
  const ir::Graph& graph_;
  const TargetInfo& target_;
  PlanOptions options_;
  ExecutionPlan plan_;
  std::vector<std::vector<ir::Dim>> shapes_;
  std::vector<bool> ranked_;
  std::vector<std::optional<std::vector<ir::Dim>>> dims_values_;
  std::vector<ElemType> float_types_;  // per value, from the precision policy
  std::vector<KernelDesc> pending_;  // kernels of the node being lowered
};

}  // namespace kiln::planner
