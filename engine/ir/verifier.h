// Structural verifier for the graph IR.
//
// Checks what every pass must preserve: ids in range, each value produced by
// at most one live node and its producer fields consistent, every input
// visible where it is used (defined earlier in the same region, or in an
// enclosing region before the sub-graph's owner, or a constant), region
// outputs defined, sub-graph regions owned by the node that names them, no
// erased node left in an order, constants matching their declared dtype and
// shape. Errors name the node and the problem.
#pragma once

#include "engine/base/status.h"
#include "engine/ir/graph.h"

namespace kiln::ir {

Status verify_graph(const Graph& graph);

}  // namespace kiln::ir
