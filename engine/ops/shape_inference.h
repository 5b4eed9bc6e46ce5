// Shape inference over a whole graph or node by node: the KILN_FACT_SHAPES
// fact, and the ONNX importer's inference while it builds a graph.
//
// After a pass rewrites the graph, the dtypes and symbolic shapes of the
// values it created (and of everything downstream) are recomputed with the
// ops' own inference functions, in region order, so that a later pass and the
// planner see shapes consistent with the edited graph. The importer infers
// each node as it appends it (a rewrite of an old opset's node can depend on
// what is known about its inputs), with the same code.
#pragma once

#include <optional>
#include <vector>

#include "engine/base/status.h"
#include "engine/ir/graph.h"
#include "engine/ops/op_registry.h"

namespace kiln::ops {

// Infers nodes of one graph, remembering between calls the shape values
// (ValueInfo::dims_value: what Shape -> Gather -> Concat chains compute) that
// later nodes such as Reshape read.
//
// What inference knows replaces what a value held; where inference knows
// less (unknown dtype, unranked, unknown dim) the value keeps what it had, so
// shapes declared by the model are not lost. Nodes of ops the registry does
// not know keep their outputs' types. An If's outputs that its inference
// leaves unknown take what both branches agree on; a Loop's, what its body
// gives (scan outputs [iterations, ...]), after typing untyped body
// parameters from the node (a Loop's infer_node re-infers its body then). Errors name the node.
//
// Borrows `graph` and `registry`, which must outlive it. Not thread-safe.
class ShapeInferrer {
 public:
  explicit ShapeInferrer(ir::Graph& graph, const OpRegistry& registry = OpRegistry::builtin())
      : graph_(graph), registry_(registry) {}

  // Infers the outputs of `node` from its inputs as they are now. Its
  // sub-graph regions are not visited: infer them first (infer_region does).
  Status infer_node(ir::NodeId node);
  // Infers every live node of `region` in topological order, each node's
  // sub-graph regions before the node.
  Status infer_region(ir::RegionId region);

 private:
  void merge_if_branches(const ir::Node& node);
  // Types a Loop body's untyped parameters from the node (re-inferring the
  // body) and refines its unranked outputs from the body's results.
  Status refine_loop(const ir::Node& node);

  ir::Graph& graph_;
  const OpRegistry& registry_;
  std::vector<std::optional<std::vector<ir::Dim>>> dims_values_;  // by value id
};

// Re-infers every live node of the graph (ShapeInferrer over the main region).
Status infer_graph_shapes(ir::Graph& graph, const OpRegistry& registry = OpRegistry::builtin());

}  // namespace kiln::ops
