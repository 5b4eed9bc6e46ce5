// Whole-graph shape re-inference (see shape_inference.h).
#include "engine/registry/shape_inference.h"

#include <optional>
#include <vector>

namespace kiln::registry {
namespace {

class GraphInferrer {
 public:
  GraphInferrer(ir::Graph& graph, const ops::OpRegistry& registry)
      : graph_(graph), registry_(registry), dims_values_(graph.num_values()) {}

  Status infer_region(ir::RegionId region_id) {
    // Copy: the order does not change during inference, but be safe against
    // references into the region vector.
    const std::vector<ir::NodeId> order = graph_.region(region_id).nodes;
    for (ir::NodeId nid : order) KILN_RETURN_IF_ERROR(infer_node(nid));
    return ok_status();
  }

 private:
  Status infer_node(ir::NodeId nid) {
    const ir::Node& node = graph_.node(nid);
    for (const auto& [key, attr] : node.attrs)
      if (attr.kind == ir::AttrKind::kGraph && attr.region != ir::kNoRegion)
        KILN_RETURN_IF_ERROR(infer_region(attr.region));
    const ops::OpSchema* schema = registry_.find(node.domain, node.op);
    if (!schema) return ok_status();
    std::vector<ops::ValueInfo> inputs;
    for (ir::ValueId id : node.inputs) {
      ops::ValueInfo info;
      if (id != ir::kNoValue) {
        const ir::Value& v = graph_.value(id);
        // An input nothing is known about (an untyped sub-graph parameter):
        // the outputs stay as they are rather than failing.
        if (v.dtype == DType::kUndefined) return ok_status();
        info.dtype = v.dtype;
        info.shape = v.shape;
        if (v.is_constant()) info.value = &v.constant;
        if (static_cast<size_t>(id) < dims_values_.size()) info.dims_value = dims_values_[static_cast<size_t>(id)];
      }
      inputs.push_back(std::move(info));
    }
    KILN_ASSIGN_OR_RETURN(std::vector<ops::ValueInfo> outs, ops::infer_node(*schema, node, std::move(inputs)));
    for (size_t i = 0; i < node.outputs.size() && i < outs.size(); ++i) {
      const ir::ValueId id = node.outputs[i];
      if (id == ir::kNoValue) continue;
      merge(graph_.value(id), outs[i]);
      if (outs[i].dims_value) dims_values_[static_cast<size_t>(id)] = std::move(outs[i].dims_value);
    }
    return ok_status();
  }

  static void merge(ir::Value& v, ops::ValueInfo& info) {
    if (info.dtype != DType::kUndefined) v.dtype = info.dtype;
    if (!info.shape.has_rank) return;
    if (v.shape.has_rank && v.shape.rank() == info.shape.rank()) {
      for (size_t k = 0; k < info.shape.dims.size(); ++k)
        if (!info.shape.dims[k].is_known()) info.shape.dims[k] = v.shape.dims[k];
    }
    v.shape = std::move(info.shape);
  }

  ir::Graph& graph_;
  const ops::OpRegistry& registry_;
  std::vector<std::optional<std::vector<ir::Dim>>> dims_values_;
};

}  // namespace

Status infer_graph_shapes(ir::Graph& graph, const ops::OpRegistry& registry) {
  GraphInferrer inferrer(graph, registry);
  return inferrer.infer_region(ir::kMainRegion);
}

}  // namespace kiln::registry
