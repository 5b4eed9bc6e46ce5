// ReferenceExecutor: runs a graph on the CPU with the ops' reference kernels.
//
// The correctness oracle for every backend: it executes nodes in region order,
// sizes outputs with the same shape inference the compiler uses, frees each
// intermediate after its last use, and runs If/Loop sub-graphs by recursion
// (only the taken If branch runs). Not fast (apart from the blocked
// Conv/GEMM kernels); exact.
//
// Thread-safety: run() is const and re-entrant; one executor may serve
// concurrent runs. The graph is borrowed and must outlive the executor.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/base/status.h"
#include "engine/base/tensor.h"
#include "engine/ir/graph.h"
#include "engine/ops/op_registry.h"

namespace kiln::runtime {

class ReferenceExecutor {
 public:
  explicit ReferenceExecutor(const ir::Graph& graph,
                             const ops::OpRegistry& registry = ops::OpRegistry::builtin());

  // Runs with inputs in the order of the main region's inputs; returns the
  // main region's outputs in order. Errors: INVALID_ARGUMENT for a wrong
  // input count, dtype or shape (naming the input), or any kernel error
  // (naming the node).
  StatusOr<std::vector<Tensor>> run(const std::vector<Tensor>& inputs) const;
  // Same, with inputs by name; every graph input must be given.
  StatusOr<std::vector<Tensor>> run_named(const std::map<std::string, Tensor>& inputs) const;
  // Runs one region (an If branch, a Loop body) with `region_inputs`,
  // reading the values it uses from enclosing regions from `env` (borrowed
  // for the call; constants come from the graph). Backends use it to run an
  // If or Loop node on the host. Errors: as run(), and kInternal for a value
  // neither the region nor `env` has.
  StatusOr<std::vector<Tensor>> run_region(ir::RegionId region, std::vector<Tensor> region_inputs,
                                           std::map<ir::ValueId, Tensor>& env) const;

 private:
  const ir::Graph& graph_;
  const ops::OpRegistry& registry_;
};

}  // namespace kiln::runtime
