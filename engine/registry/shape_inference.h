// Whole-graph shape re-inference: the KILN_FACT_SHAPES fact.
//
// After a pass rewrites the graph, the dtypes and symbolic shapes of the
// values it created (and of everything downstream) are recomputed with the
// ops' own inference functions, in region order, so that a later pass and the
// planner see shapes consistent with the edited graph.
#pragma once

#include "engine/base/status.h"
#include "engine/ir/graph.h"
#include "engine/ops/op_registry.h"

namespace kiln::registry {

// Re-infers every live node's outputs in topological order (sub-graph regions
// before the node that owns them). What inference knows replaces what the
// value held; where inference knows less (unknown dtype, unranked, unknown
// dim) the value keeps what it had, so shapes declared by the model are not
// lost. Nodes of ops the registry does not know keep their outputs' types.
// Errors name the node.
Status infer_graph_shapes(ir::Graph& graph, const ops::OpRegistry& registry = ops::OpRegistry::builtin());

}  // namespace kiln::registry
