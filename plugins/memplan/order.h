// Execution order that lowers peak intermediate memory (SoD² §4.3).
//
// Finding the order of least peak memory is NP-complete, so, as SoD² does,
// the graph is cut into small sub-graphs (consecutive runs of at most
// `max_segment` nodes of the current order; nodes that own sub-graphs are
// barriers no node moves across) and each is solved exactly by a dynamic
// program over the sets of its nodes already run: the memory live after a
// set runs depends only on the set, so the least peak to reach every set is
// exact. Across sub-graphs the cut is the heuristic; a second sweep with the
// cuts shifted by half a segment lets nodes move across the first cuts.
// Solving a segment never raises its peak, so the order's peak never rises.
//
// Sizes are plain byte counts: the plugin evaluates symbolic shapes at a hint
// (see memplan_pass.cc) before it asks for an order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln::memplan {

struct OrderGraph {
  struct Value {
    int producer = -1;           // node index, or -1: live from the start (a graph input)
    std::vector<int> consumers;  // node indices (repeats allowed)
    uint64_t bytes = 0;
    bool live_out = false;       // a graph output: live to the end
  };
  size_t node_count = 0;         // nodes 0..node_count-1, listed in a valid order
  std::vector<Value> values;
  std::vector<bool> barrier;     // per node (may be empty): never reordered
};

// The peak bytes of running the nodes in `order` (a permutation of the
// nodes): at each node, the values still needed plus the node's outputs.
uint64_t order_peak(const OrderGraph& graph, const std::vector<int>& order);

// An order of no higher peak than 0..node_count-1 (see the file comment).
// Segments are at most max_segment nodes (clamped to 2..20: the program
// visits up to 2^max_segment sets).
std::vector<int> choose_order(const OrderGraph& graph, size_t max_segment = 12);

}  // namespace kiln::memplan
