// The in-tree 'kiln.memplan' plugin: the `memplan-order` pass chooses an
// execution order of the main graph that lowers peak intermediate memory
// (order.h, SoD² §4.3) and records it as the node annotation "memplan.order"
// (0, 1, 2, ...), which build_plan (planner/execution_plan.cc) follows when
// every node carries a valid one. Arena offsets are not chosen here: they
// need each signature's sizes, so the runtime asks arena.h per signature.
//
// Sizes at plan time: shapes may be symbolic, so every dim is evaluated at a
// hint. A symbol on axis 0 of a graph input of rank >= 2 is batch-like and
// evaluates to 1;
// every other symbol (seq, h, w) and every unknown dim to kOtherHint = 64 — a
// typical length or extent, large enough that shape-dependent tensors weigh
// more than fixed ones of the same rank, as they do at realistic sizes.
//
// Written against the plugin ABI only (kiln_plugin.hpp), built both as a
// shared library and as a static library the host links in
// (kiln_memplan_plugin_query).
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kiln/kiln_plugin.hpp"
#include "plugins/memplan/memplan.h"
#include "plugins/memplan/order.h"

namespace {

using kiln::plugin::GraphView;
using kiln::plugin::Rewriter;

constexpr int64_t kBatchHint = 1;
constexpr int64_t kOtherHint = 64;

int64_t dtype_bytes(int32_t dtype) {
  const size_t size = kiln_plugin_dtype_size(dtype);
  return size ? static_cast<int64_t>(size) : 4;  // undefined: as a float
}

// SoD² §4.3: an output shape nothing is known about (unknown rank or dim:
// nac) stops the analysis, so such a node cuts the graph into sub-graphs
// that are ordered independently.
bool has_nac_output(const GraphView& g, kiln_node_id_t n) {
  for (kiln_value_id_t v : g.outputs(n)) {
    if (v == KILN_NO_ID) continue;
    auto dims = g.shape(v);
    if (!dims) return true;
    for (const kiln::plugin::Dim& d : *dims)
      if (d.is_unknown) return true;
  }
  return false;
}

bool owns_subgraph(const GraphView& g, kiln_node_id_t n) {
  auto names = g.attr_names(n);
  if (!names) return true;  // cannot tell: keep it in place
  for (const std::string& name : *names)
    if (g.attr_kind(n, name.c_str()) == KILN_ATTR_GRAPH) return true;
  return false;
}

class MemplanOrder : public kiln::plugin::Pass {
 public:
  void run(GraphView& g, Rewriter& rw) override {
    const std::vector<kiln_node_id_t> nodes = g.nodes(0);
    if (nodes.size() < 2) return;
    // Hints: batch-like symbols (axis 0 of a graph input of rank >= 2) are 1.
    std::map<std::string, int64_t> hints;
    for (kiln_value_id_t in : g.region_inputs(0)) {
      auto dims = g.shape(in);
      if (dims && dims->size() >= 2 && !(*dims)[0].is_const && !(*dims)[0].is_unknown) hints[(*dims)[0].expr] = kBatchHint;
    }
    // A dim evaluates at the hints, every other symbol at kOtherHint; text
    // that does not parse (a model's symbol name outside the Dim grammar,
    // "batch.size") is looked up whole.
    auto evaluate = [&](const std::string& text) -> int64_t {
      if (auto e = kiln::plugin::DimExpr::parse(text)) return e->evaluate(hints, kOtherHint).value_or(kOtherHint);
      auto it = hints.find(text);
      return it != hints.end() ? it->second : kOtherHint;
    };
    constexpr uint64_t kAbsurdBytes = uint64_t{1} << 48;
    auto bytes_of = [&](kiln_value_id_t v) -> uint64_t {
      auto info = g.value(v);
      auto dims = g.shape(v);
      if (!info || !dims) return 0;  // unknown rank: no guidance
      int64_t n = dtype_bytes(info->dtype);
      for (const kiln::plugin::Dim& d : *dims) {
        int64_t e = kOtherHint;
        if (d.is_const) e = d.value;
        else if (!d.is_unknown) e = evaluate(d.expr);  // unknown: a barrier anyway
        // An estimate for ordering: absurd dims saturate (at 2^48 bytes, so
        // that the order search can still add many of them) instead of wrapping.
        if (__builtin_mul_overflow(n, std::max<int64_t>(e, 0), &n)) return kAbsurdBytes;
      }
      return std::min(static_cast<uint64_t>(n), kAbsurdBytes);
    };

    std::map<kiln_node_id_t, int> index;
    for (size_t i = 0; i < nodes.size(); ++i) index[nodes[i]] = static_cast<int>(i);
    kiln::memplan::OrderGraph graph;
    graph.node_count = nodes.size();
    graph.barrier.assign(nodes.size(), false);
    std::map<kiln_value_id_t, size_t> value_index;
    auto value_slot = [&](kiln_value_id_t v) -> size_t {
      auto [it, inserted] = value_index.emplace(v, graph.values.size());
      if (inserted) {
        kiln::memplan::OrderGraph::Value val;
        val.bytes = bytes_of(v);
        auto info = g.value(v);
        if (info && info->producer != KILN_NO_ID) {
          auto p = index.find(info->producer);
          if (p != index.end()) val.producer = p->second;
        }
        for (const kiln::plugin::Use& u : g.uses(v)) {
          auto c = u.node == KILN_NO_ID ? index.end() : index.find(u.node);
          if (c != index.end()) val.consumers.push_back(c->second);
          else val.live_out = true;  // a graph output, or read inside a sub-graph
        }
        graph.values.push_back(std::move(val));
      }
      return it->second;
    };
    bool stale = false;
    for (size_t i = 0; i < nodes.size(); ++i) {
      const kiln_node_id_t n = nodes[i];
      graph.barrier[i] = owns_subgraph(g, n) || has_nac_output(g, n);
      stale = stale || g.node_annotation(n, KILN_ANNOTATION_MEMPLAN_ORDER).has_value();
      for (kiln_value_id_t v : g.inputs(n))
        if (v != KILN_NO_ID && !g.is_constant(v)) value_slot(v);
      for (kiln_value_id_t v : g.outputs(n))
        if (v != KILN_NO_ID) value_slot(v);
    }

    std::vector<int> identity(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) identity[i] = static_cast<int>(i);
    const std::vector<int> order = kiln::memplan::choose_order(graph);
    const uint64_t before = kiln::memplan::order_peak(graph, identity);
    const uint64_t after = kiln::memplan::order_peak(graph, order);
    rw.add_statistic("peak-bytes-at-hint-before", static_cast<int64_t>(before));
    rw.add_statistic("peak-bytes-at-hint", static_cast<int64_t>(std::min(before, after)));
    // An order that does not lower the peak is not worth moving kernels
    // for (segments away from the peak may still have improved): the graph's
    // own order is kept unannotated and the text IR stays as it was.
    // Annotations left by an earlier run are refreshed.
    const std::vector<int>& chosen = after < before ? order : identity;
    if (chosen == identity && !stale) return;
    for (size_t k = 0; k < chosen.size(); ++k)
      rw.annotate_node(nodes[static_cast<size_t>(chosen[k])], KILN_ANNOTATION_MEMPLAN_ORDER, std::to_string(k));
    rw.add_statistic("nodes-moved", static_cast<int64_t>(count_moved(chosen)));
  }

 private:
  static size_t count_moved(const std::vector<int>& order) {
    size_t moved = 0;
    for (size_t k = 0; k < order.size(); ++k) moved += order[k] != static_cast<int>(k);
    return moved;
  }
};

MemplanOrder memplan_order;

const kiln_pass_t kMemplanOrder = kiln::plugin::make_pass(
    memplan_order, "memplan-order",
    "orders the main graph for lower peak memory (exhaustive in segments of 12 nodes); annotates memplan.order",
    KILN_FACT_SHAPES, 0, false, KILN_FACT_MEMORY_PLAN);

const kiln_pass_t* const kPasses[] = {&kMemplanOrder};
const kiln_plugin_t kPlugin = kiln::plugin::make_plugin("kiln.memplan", "1.0", kPasses, 1);

}  // namespace

KILN_PLUGIN_DEFINE_QUERY(kiln_memplan_plugin_query, kPlugin)
#ifdef KILN_MEMPLAN_SHARED
KILN_PLUGIN_DEFINE_QUERY(kiln_plugin_query, kPlugin)
#endif
