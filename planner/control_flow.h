// If and Loop on the device: the planner side (see execution_plan.h's
// PlanStep::kIf and kLoop).
//
// SoD² (§3, Table 2) puts If among the "execution determined" ops: which
// sub-graph runs is known only once the condition is computed, and the
// static engines it compares against run every branch and strip the unused
// results. Kiln instead lowers both branches into the plan, each as its own
// range of steps behind one kIf step, and the runtime records each range in
// its own command buffers and submits only the taken one after reading the
// 1-element condition back (or, when the condition is a host value, decides
// when it records the signature). Branch nodes share the plan's tensor
// table: values of the enclosing scope are read by id, branch-local values
// get their own tensors, and a branch's results land in the If's output
// tensors (what later steps read, whichever branch ran): computed straight
// into them where nothing else can tell, else copied at the branch's end.
// A Loop's body is likewise one range behind a kLoop step, recorded once and
// submitted per iteration; its carried values live in the body's parameter
// tensors, rewritten at the end of each iteration. Its iteration number is
// a device counter the body's last kernels increment, and each scan value
// is stored as row `iteration` of its scan output by a loop_scan kernel.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "planner/plan_builder.h"

namespace kiln::planner {

// Lowers one node into the plan (build_plan's per-node logic).
using LowerNodeFn = std::function<Status(ir::NodeId)>;

// Why If `node` cannot run on the device, or "" when it can: its branches
// must give each output one dtype and rank (the dims may differ: the
// runtime then sizes the If's outputs and consumers from the taken branch,
// a sub-graph boundary when the device computes the condition), and every
// value its branches compute must be ranked. Nested Ifs are checked when
// lowered.
std::string if_device_blocker(const PlanBuilder& builder, const ir::Graph& graph, const ir::Node& node);

// Appends If node `nid`'s kIf step, then per branch the steps of its nodes
// (each lowered with `lower_node`) and the copies of its outputs into the
// If's outputs. Call only when if_device_blocker() is "". Errors: whatever
// lowering a branch node returns (node-named).
Status lower_if(PlanBuilder& builder, const ir::Graph& graph, ir::NodeId nid, const LowerNodeFn& lower_node);

// Why Loop `node` cannot run on the device, or "" when it can. `host_known`
// says which values are host values (build_plan's view). The device Loop
// keeps every carried value in one tensor (the body's parameter) for all
// iterations and sizes the body once, so it needs: carried values whose
// dtype and dims the body keeps, a body that reads the iteration number
// only as data (not as shape data: a Slice's starts, a Reshape's shape),
// scan outputs one rank above their per-iteration values and, with scan
// outputs, a body condition the host computes (an early exit the device
// computes leaves the scan length unknown until the run), a trip count and
// initial condition computed on the host or, for a Loop of the main graph,
// on the device (read back at a sub-graph boundary), and no Loop nested in
// the body.
std::string loop_device_blocker(const PlanBuilder& builder, const ir::Graph& graph, const ir::Node& node,
                                const std::vector<bool>& host_known);

// Appends Loop node `nid`: copies of the initial values into the body's
// parameters, the iteration counter's reset (when the body reads the
// iteration number or there are scan outputs), the kLoop step, the body's
// steps (lowered with `lower_node`), the scan rows, the copies of the
// carried results into the parameters and the counter's increment (the
// body range), then copies of the parameters into the Loop's outputs.
// Scan outputs are stored as buffers (a row is then one linear range). The
// body's condition input is a host value (true: the body runs only while
// the condition holds), marked in `host_known`. Call only when
// loop_device_blocker() is "". Errors: whatever lowering a body node
// returns.
Status lower_loop(PlanBuilder& builder, const ir::Graph& graph, ir::NodeId nid, std::vector<bool>& host_known,
                  const LowerNodeFn& lower_node);

}  // namespace kiln::planner
