// In-place reuse: an elementwise dispatch writes its output over an input
// whose data dies at it, so the two tensors need one block of memory, not
// two (plugins/memplan's arena then plans one lifetime for both).
//
// plan_inplace() sets PlanTensor::inplace_of = U on the tensor T a dispatch
// step writes when all of this holds (deliberately narrow; anything it is
// unsure of keeps T in its own memory):
//   * the kernel reads U only at the elements it writes of T
//     (KernelTensor::elementwise, set by the elementwise lowerings: unary
//     ops, casts, binary/ternary ops whose operand is not broadcast), and
//     every other binding of U's memory in the kernel is such a read too;
//   * T and U are buffers of one element type and the same shape (dims
//     same_as), and the memory U lives in holds as many elements;
//   * nothing touches U's data after this step: no later step, no view of
//     U, no node without steps (a view's shape input, read at a dynamic-shape
//     boundary), no sub-graph a host fallback runs; U is not a graph input
//     or output, a constant or a host value, and a dispatch produced it;
//   * T is first touched by this step, is no graph output (the host may bind
//     its own buffer to an output) and no view;
//   * neither the step nor any access to U or T lies inside an If branch or
//     a Loop body, nor at the If/Loop step itself.
// Both bindings of the kernel are then marked KernelTensor::shares_memory, so
// the generated GLSL does not declare them `restrict`.
#pragma once

#include "engine/ir/graph.h"
#include "planner/execution_plan.h"

namespace kiln::planner {

// Decides in-place writes for the whole plan (after every node is lowered).
// `graph` is the graph the plan was built from (borrowed for the call).
void plan_inplace(ExecutionPlan& plan, const ir::Graph& graph);

}  // namespace kiln::planner
