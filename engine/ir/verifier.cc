// Graph verifier; see verifier.h.
#include "engine/ir/verifier.h"

#include <set>
#include <vector>

namespace kiln::ir {

namespace {

class Verifier {
 public:
  explicit Verifier(const Graph& g) : g_(g), defined_(g.num_values(), false) {}

  Status run() {
    // Constants are visible everywhere below the region that defines them.
    for (size_t i = 0; i < g_.num_values(); ++i) {
      const Value& v = g_.value(static_cast<ValueId>(i));
      if (v.id != static_cast<ValueId>(i)) return internal_error("value #" + std::to_string(i) + " has id " + std::to_string(v.id));
      if (v.is_constant()) {
        if (v.producer != kNoNode)
          return invalid_argument("constant '" + v.name + "' also has a producer node");
        if (v.constant.dtype() != v.dtype)
          return invalid_argument("constant '" + v.name + "' holds " + std::string(dtype_name(v.constant.dtype())) +
                                  " data but is declared " + std::string(dtype_name(v.dtype)));
        if (!v.shape.same_as(SymShape::from_concrete(v.constant.shape())))
          return invalid_argument("constant '" + v.name + "' holds shape " + shape_to_string(v.constant.shape()) +
                                  " but is declared " + v.shape.to_string());
      }
    }
    for (size_t i = 0; i < g_.num_nodes(); ++i) {
      const Node& n = g_.node(static_cast<NodeId>(i));
      if (n.erased) continue;
      if (n.region < 0 || static_cast<size_t>(n.region) >= g_.num_regions())
        return invalid_argument(n.describe() + ": region " + std::to_string(n.region) + " does not exist");
    }
    std::vector<int> listed(g_.num_nodes(), 0);
    for (size_t r = 0; r < g_.num_regions(); ++r)
      for (NodeId id : g_.region(static_cast<RegionId>(r)).nodes) {
        if (id < 0 || static_cast<size_t>(id) >= g_.num_nodes())
          return invalid_argument("region '" + g_.region(static_cast<RegionId>(r)).name + "' lists node #" +
                                  std::to_string(id) + " which does not exist");
        if (g_.node(id).erased) return invalid_argument(g_.node(id).describe() + ": erased but still listed in a region");
        if (g_.node(id).region != static_cast<RegionId>(r))
          return invalid_argument(g_.node(id).describe() + ": listed in region " + std::to_string(r) + " but belongs to " +
                                  std::to_string(g_.node(id).region));
        if (++listed[static_cast<size_t>(id)] > 1) return invalid_argument(g_.node(id).describe() + ": listed twice");
      }
    for (size_t i = 0; i < g_.num_nodes(); ++i)
      if (!g_.node(static_cast<NodeId>(i)).erased && listed[i] == 0)
        return invalid_argument(g_.node(static_cast<NodeId>(i)).describe() + ": live but in no region's order");
    for (size_t r = 1; r < g_.num_regions(); ++r) {
      const Region& region = g_.region(static_cast<RegionId>(r));
      if (region.owner == kNoNode) continue;  // an orphan region (unreferenced) is harmless
      if (region.owner < 0 || static_cast<size_t>(region.owner) >= g_.num_nodes())
        return invalid_argument("region '" + region.name + "' has an invalid owner");
      if (g_.node(region.owner).region != region.parent)
        return invalid_argument("region '" + region.name + "' is owned by " + g_.node(region.owner).describe() +
                                " which is not in its parent region");
    }
    return verify_region(kMainRegion);
  }

 private:
  bool visible(ValueId id) const {
    return id >= 0 && static_cast<size_t>(id) < g_.num_values() && (defined_[static_cast<size_t>(id)] || g_.value(id).is_constant());
  }

  Status verify_region(RegionId rid) {
    const Region& region = g_.region(rid);
    std::vector<ValueId> defined_here;
    auto define = [&](ValueId id, const std::string& where) -> Status {
      if (id < 0 || static_cast<size_t>(id) >= g_.num_values())
        return invalid_argument(where + ": value #" + std::to_string(id) + " does not exist");
      if (defined_[static_cast<size_t>(id)] || g_.value(id).is_constant())
        return invalid_argument(where + ": value '" + g_.value(id).name + "' is defined more than once");
      defined_[static_cast<size_t>(id)] = true;
      defined_here.push_back(id);
      return ok_status();
    };
    for (ValueId in : region.inputs) KILN_RETURN_IF_ERROR(define(in, "region '" + region.name + "' input"));
    for (NodeId nid : region.nodes) {
      const Node& n = g_.node(nid);
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        const ValueId in = n.inputs[i];
        if (in == kNoValue) continue;
        if (!visible(in))
          return invalid_argument(n.describe() + ": input " + std::to_string(i) + " (" +
                                  (in >= 0 && static_cast<size_t>(in) < g_.num_values() ? "'" + g_.value(in).name + "'"
                                                                                        : "#" + std::to_string(in)) +
                                  ") is not defined before its use");
      }
      for (const auto& [key, a] : n.attrs) {
        if (a.kind != AttrKind::kGraph) continue;
        if (a.region <= 0 || static_cast<size_t>(a.region) >= g_.num_regions())
          return invalid_argument(n.describe() + ": attribute '" + key + "' names a region that does not exist");
        const Region& sub = g_.region(a.region);
        if (sub.owner != nid || sub.parent != rid)
          return invalid_argument(n.describe() + ": sub-graph '" + key + "' is not owned by this node");
        KILN_RETURN_IF_ERROR(verify_region(a.region));
      }
      for (size_t i = 0; i < n.outputs.size(); ++i) {
        const ValueId out = n.outputs[i];
        if (out == kNoValue) continue;
        KILN_RETURN_IF_ERROR(define(out, n.describe() + " output " + std::to_string(i)));
        const Value& v = g_.value(out);
        if (v.producer != nid || v.producer_output != static_cast<int32_t>(i))
          return invalid_argument(n.describe() + ": output '" + v.name + "' does not record this node as its producer");
      }
    }
    for (ValueId out : region.outputs)
      if (!visible(out))
        return invalid_argument("region '" + region.name + "' returns " +
                                (out >= 0 && static_cast<size_t>(out) < g_.num_values() ? "'" + g_.value(out).name + "'"
                                                                                        : "#" + std::to_string(out)) +
                                " which is not defined");
    // Leaving the region: its values are no longer visible to siblings.
    for (ValueId id : defined_here) defined_[static_cast<size_t>(id)] = false;
    // But values must stay "defined once": remember them globally.
    for (ValueId id : defined_here) {
      if (!ever_.insert(id).second)
        return invalid_argument("value '" + g_.value(id).name + "' is defined in more than one region");
    }
    return ok_status();
  }

  const Graph& g_;
  std::vector<bool> defined_;
  std::set<ValueId> ever_;
};

}  // namespace

Status verify_graph(const Graph& graph) { return Verifier(graph).run(); }

}  // namespace kiln::ir
