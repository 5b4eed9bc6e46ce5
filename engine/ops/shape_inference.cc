// Shape inference over a graph (see shape_inference.h).
#include "engine/ops/shape_inference.h"

#include <algorithm>
#include <utility>

namespace kiln::ops {
namespace {

void merge(ir::Value& v, ValueInfo& info) {
  if (info.dtype != DType::kUndefined) v.dtype = info.dtype;
  if (!info.shape.has_rank) return;
  if (v.shape.has_rank && v.shape.rank() == info.shape.rank()) {
    for (size_t k = 0; k < info.shape.dims.size(); ++k)
      if (!info.shape.dims[k].is_known()) info.shape.dims[k] = v.shape.dims[k];
  }
  v.shape = std::move(info.shape);
}

}  // namespace

Status ShapeInferrer::infer_region(ir::RegionId region_id) {
  // A copy: inference does not reorder nodes, but it must not hold a
  // reference into the region vector while sub-regions are visited.
  const std::vector<ir::NodeId> order = graph_.region(region_id).nodes;
  for (ir::NodeId nid : order) {
    for (const auto& [key, attr] : graph_.node(nid).attrs)
      if (attr.kind == ir::AttrKind::kGraph && attr.region != ir::kNoRegion)
        KILN_RETURN_IF_ERROR(infer_region(attr.region));
    KILN_RETURN_IF_ERROR(infer_node(nid));
  }
  return ok_status();
}

Status ShapeInferrer::infer_node(ir::NodeId nid) {
  const ir::Node& node = graph_.node(nid);
  const OpSchema* schema = registry_.find(node.domain, node.op);
  if (!schema) return ok_status();
  std::vector<ValueInfo> inputs;
  for (ir::ValueId id : node.inputs) {
    ValueInfo info;
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
  KILN_ASSIGN_OR_RETURN(std::vector<ValueInfo> outs, ops::infer_node(*schema, node, std::move(inputs)));
  for (size_t i = 0; i < node.outputs.size() && i < outs.size(); ++i) {
    const ir::ValueId id = node.outputs[i];
    if (id == ir::kNoValue) continue;
    merge(graph_.value(id), outs[i]);
    if (outs[i].dims_value) {
      if (dims_values_.size() <= static_cast<size_t>(id)) dims_values_.resize(static_cast<size_t>(id) + 1);
      dims_values_[static_cast<size_t>(id)] = std::move(outs[i].dims_value);
    }
  }
  if (node.op == "If" && node.domain.empty()) merge_if_branches(node);
  if (node.op == "Loop" && node.domain.empty()) KILN_RETURN_IF_ERROR(refine_loop(node));
  return ok_status();
}

Status ShapeInferrer::refine_loop(const ir::Node& node) {
  // Loop's inference cannot see its body, and an exporter may leave the
  // body's parameters untyped (ONNX functions expanded into a Loop do):
  // type them from the node (iteration number, condition, initial values)
  // and infer the body again; then the carried outputs take the body's
  // results where those keep the initial shape, and each scan output is
  // [iterations, ...] over the body's per-iteration value.
  const ir::Attribute* a = node.attr("body");
  if (!a || a->kind != ir::AttrKind::kGraph || a->region == ir::kNoRegion) return ok_status();
  const ir::Region& body = graph_.region(a->region);
  const size_t n = node.inputs.size() > 2 ? node.inputs.size() - 2 : 0;
  if (body.inputs.size() != 2 + n || body.outputs.size() < 1 + n) return ok_status();  // the kernel names it
  // Untyped: no dtype or no rank (the ONNX importer gives body parameters
  // the node's dtypes, not shapes).
  auto untyped = [&](ir::ValueId v) {
    return v != ir::kNoValue && (graph_.value(v).dtype == DType::kUndefined || !graph_.value(v).shape.has_rank);
  };
  auto type_from = [&](ir::ValueId v, DType dtype, const ir::SymShape& shape) {
    ir::Value& value = graph_.value(v);
    if (value.dtype == DType::kUndefined) value.dtype = dtype;
    if (!value.shape.has_rank) value.shape = shape;
  };
  if (std::any_of(body.inputs.begin(), body.inputs.end(), untyped)) {
    // A carried value may change shape per iteration: seeded with its
    // initial shape, the body must give that shape back, else the body's
    // types are restored and only the iteration number and condition stay.
    std::vector<std::pair<ir::ValueId, std::pair<DType, ir::SymShape>>> saved;
    for (size_t v = 0; v < graph_.num_values(); ++v) {
      const ir::Value& value = graph_.value(static_cast<ir::ValueId>(v));
      if (graph_.region_within(value.region, body.id)) saved.push_back({value.id, {value.dtype, value.shape}});
    }
    auto seed = [&](bool carried) {
      if (untyped(body.inputs[0])) type_from(body.inputs[0], DType::kInt64, ir::SymShape::from_concrete({}));
      if (untyped(body.inputs[1])) type_from(body.inputs[1], DType::kBool, ir::SymShape::from_concrete({}));
      for (size_t i = 0; carried && i < n; ++i)
        if (untyped(body.inputs[2 + i]) && node.inputs[2 + i] != ir::kNoValue)
          type_from(body.inputs[2 + i], graph_.value(node.inputs[2 + i]).dtype, graph_.value(node.inputs[2 + i]).shape);
      return infer_region(body.id);
    };
    KILN_RETURN_IF_ERROR(seed(true));
    bool fixed = true;
    for (size_t i = 0; i < n; ++i) {
      const ir::ValueId out = body.outputs[1 + i];
      const ir::Value& param = graph_.value(body.inputs[2 + i]);
      fixed = fixed && out != ir::kNoValue && graph_.value(out).dtype == param.dtype &&
              graph_.value(out).shape.same_as(param.shape);
    }
    if (!fixed) {
      for (auto& [id, type] : saved) {
        graph_.value(id).dtype = type.first;
        graph_.value(id).shape = type.second;
      }
      KILN_RETURN_IF_ERROR(seed(false));
    }
  }
  for (size_t i = 0; i < node.outputs.size() && 1 + i < body.outputs.size(); ++i) {
    const ir::ValueId v = node.outputs[i], b = body.outputs[1 + i];
    if (v == ir::kNoValue || b == ir::kNoValue) continue;
    ir::Value& out = graph_.value(v);
    const ir::Value& from = graph_.value(b);
    if (out.dtype == DType::kUndefined) out.dtype = from.dtype;
    if (out.shape.has_rank || !from.shape.has_rank) continue;
    if (i >= n) {
      std::vector<ir::Dim> dims = {ir::Dim()};
      dims.insert(dims.end(), from.shape.dims.begin(), from.shape.dims.end());
      out.shape = ir::SymShape(std::move(dims));
    } else if (node.inputs[2 + i] != ir::kNoValue && from.shape.same_as(graph_.value(body.inputs[2 + i]).shape) &&
               from.shape.same_as(graph_.value(node.inputs[2 + i]).shape)) {
      out.shape = from.shape;
    }
  }
  return ok_status();
}

void ShapeInferrer::merge_if_branches(const ir::Node& node) {
  // If's inference cannot see its branches; where it left an output unknown,
  // fill in what both branches agree on.
  const ir::Attribute* then_attr = node.attr("then_branch");
  const ir::Attribute* else_attr = node.attr("else_branch");
  if (!then_attr || !else_attr || then_attr->kind != ir::AttrKind::kGraph || else_attr->kind != ir::AttrKind::kGraph)
    return;
  const ir::Region& then_region = graph_.region(then_attr->region);
  const ir::Region& else_region = graph_.region(else_attr->region);
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    if (node.outputs[i] == ir::kNoValue || i >= then_region.outputs.size() || i >= else_region.outputs.size()) continue;
    const ir::Value& a = graph_.value(then_region.outputs[i]);
    const ir::Value& b = graph_.value(else_region.outputs[i]);
    ir::Value& out = graph_.value(node.outputs[i]);
    if (out.dtype == DType::kUndefined && a.dtype == b.dtype) out.dtype = a.dtype;
    if (!out.shape.has_rank && a.shape.has_rank && b.shape.has_rank && a.shape.rank() == b.shape.rank()) {
      std::vector<ir::Dim> dims;
      for (size_t k = 0; k < a.shape.dims.size(); ++k)
        dims.push_back(a.shape.dims[k].same_as(b.shape.dims[k]) ? a.shape.dims[k] : ir::Dim());
      out.shape = ir::SymShape(std::move(dims));
    }
  }
}

Status infer_graph_shapes(ir::Graph& graph, const OpRegistry& registry) {
  ShapeInferrer inferrer(graph, registry);
  return inferrer.infer_region(ir::kMainRegion);
}

}  // namespace kiln::ops
