// Reference CPU execution of a graph; see reference_executor.h.
#include "engine/runtime/reference_executor.h"

#include <unordered_map>

namespace kiln::runtime {

ReferenceExecutor::ReferenceExecutor(const ir::Graph& graph, const ops::OpRegistry& registry)
    : graph_(graph), registry_(registry) {}

namespace {

// Checks a run-time tensor against the declared dtype and symbolic shape of
// a graph input; symbols must bind consistently across inputs.
Status check_input(const ir::Value& v, const Tensor& t, std::map<std::string, int64_t>& bindings) {
  if (!t.defined()) return invalid_argument("input '" + v.name + "' is not set");
  if (v.dtype != DType::kUndefined && t.dtype() != v.dtype)
    return invalid_argument("input '" + v.name + "' has dtype " + std::string(dtype_name(t.dtype())) +
                            ", the model expects " + std::string(dtype_name(v.dtype)));
  if (!v.shape.has_rank) return ok_status();
  if (t.rank() != v.shape.rank())
    return invalid_argument("input '" + v.name + "' has shape " + shape_to_string(t.shape()) +
                            ", the model expects rank " + std::to_string(v.shape.rank()) + " " +
                            v.shape.to_string());
  for (size_t i = 0; i < v.shape.dims.size(); ++i) {
    const ir::Dim& d = v.shape.dims[i];
    const int64_t actual = t.shape()[i];
    if (d.is_const() && d.value() != actual)
      return invalid_argument("input '" + v.name + "' has shape " + shape_to_string(t.shape()) +
                              ", the model expects " + v.shape.to_string());
    if (d.is_symbol()) {
      auto [it, inserted] = bindings.emplace(d.symbol_name(), actual);
      if (!inserted && it->second != actual)
        return invalid_argument("input '" + v.name + "' dim " + std::to_string(i) + " ('" + d.symbol_name() +
                                "') is " + std::to_string(actual) + " but '" + d.symbol_name() +
                                "' is already " + std::to_string(it->second));
    }
  }
  return ok_status();
}

}  // namespace

StatusOr<std::vector<Tensor>> ReferenceExecutor::run(const std::vector<Tensor>& inputs) const {
  const ir::Region& main = graph_.main();
  if (inputs.size() != main.inputs.size())
    return invalid_argument("the model has " + std::to_string(main.inputs.size()) + " inputs, got " +
                            std::to_string(inputs.size()));
  std::map<std::string, int64_t> bindings;
  for (size_t i = 0; i < inputs.size(); ++i)
    KILN_RETURN_IF_ERROR(check_input(graph_.value(main.inputs[i]), inputs[i], bindings));
  std::map<ir::ValueId, Tensor> env;
  return run_region(ir::kMainRegion, inputs, env);
}

StatusOr<std::vector<Tensor>> ReferenceExecutor::run_named(const std::map<std::string, Tensor>& inputs) const {
  std::vector<Tensor> ordered;
  for (ir::ValueId id : graph_.main().inputs) {
    const std::string& name = graph_.value(id).name;
    auto it = inputs.find(name);
    if (it == inputs.end()) return invalid_argument("missing input '" + name + "'");
    ordered.push_back(it->second);
  }
  for (const auto& [name, t] : inputs) {
    bool known = false;
    for (ir::ValueId id : graph_.main().inputs) known |= graph_.value(id).name == name;
    if (!known) return invalid_argument("the model has no input named '" + name + "'");
  }
  return run(ordered);
}

StatusOr<std::vector<Tensor>> ReferenceExecutor::run_region(ir::RegionId region_id, std::vector<Tensor> region_inputs,
                                                            std::map<ir::ValueId, Tensor>& env) const {
  const ir::Region& region = graph_.region(region_id);
  if (region_inputs.size() != region.inputs.size())
    return invalid_argument("region '" + region.name + "' expects " + std::to_string(region.inputs.size()) +
                            " inputs, got " + std::to_string(region_inputs.size()));
  // Values defined in this region live in `local`; outer values are read from
  // `env` (the enclosing regions' live values), which this region never frees.
  std::map<ir::ValueId, Tensor> local;
  for (size_t i = 0; i < region.inputs.size(); ++i) local[region.inputs[i]] = std::move(region_inputs[i]);

  // Last use of each local value within this region (sub-graph reads count
  // as uses by the owning node), so intermediates are freed early.
  std::unordered_map<ir::ValueId, size_t> last_use;
  auto note_uses_in = [&](auto&& self, ir::RegionId r, size_t position) -> void {
    for (ir::NodeId nid : graph_.region(r).nodes) {
      const ir::Node& n = graph_.node(nid);
      for (ir::ValueId in : n.inputs)
        if (in != ir::kNoValue) last_use[in] = position;
      for (const auto& [k, a] : n.attrs)
        if (a.kind == ir::AttrKind::kGraph) self(self, a.region, position);
    }
    for (ir::ValueId out : graph_.region(r).outputs) last_use[out] = position;
  };
  for (size_t pos = 0; pos < region.nodes.size(); ++pos) {
    const ir::Node& n = graph_.node(region.nodes[pos]);
    for (ir::ValueId in : n.inputs)
      if (in != ir::kNoValue) last_use[in] = pos;
    for (const auto& [k, a] : n.attrs)
      if (a.kind == ir::AttrKind::kGraph) note_uses_in(note_uses_in, a.region, pos);
  }
  for (ir::ValueId out : region.outputs) last_use[out] = region.nodes.size();

  auto lookup = [&](ir::ValueId id) -> const Tensor* {
    if (auto it = local.find(id); it != local.end()) return &it->second;
    if (auto it = env.find(id); it != env.end()) return &it->second;
    const ir::Value& v = graph_.value(id);
    if (v.is_constant()) return &v.constant;
    return nullptr;
  };

  for (size_t pos = 0; pos < region.nodes.size(); ++pos) {
    const ir::Node& node = graph_.node(region.nodes[pos]);
    const ops::OpSchema* schema = registry_.find(node.domain, node.op);
    if (!schema) return unimplemented(node.describe() + ": op is not supported by the reference executor");

    std::vector<const Tensor*> in_tensors;
    std::vector<ops::ValueInfo> in_infos;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const ir::ValueId id = node.inputs[i];
      if (id == ir::kNoValue) {
        in_tensors.push_back(nullptr);
        in_infos.emplace_back();
        continue;
      }
      const Tensor* t = lookup(id);
      if (!t)
        return internal_error(node.describe() + ": input " + std::to_string(i) + " ('" + graph_.value(id).name +
                              "') has no value when the node runs");
      in_tensors.push_back(t);
      ops::ValueInfo info;
      info.dtype = t->dtype();
      info.shape = ir::SymShape::from_concrete(t->shape());
      info.value = t;
      in_infos.push_back(std::move(info));
    }
    auto inferred = ops::infer_node(*schema, node, std::move(in_infos));
    if (!inferred.ok()) return std::move(inferred).status();

    // Sub-graphs see this region's live values through a merged scope.
    std::map<ir::ValueId, Tensor> scope;
    bool has_subgraph = false;
    for (const auto& [k, a] : node.attrs) has_subgraph |= a.kind == ir::AttrKind::kGraph;
    if (has_subgraph) {
      scope = env;
      for (const auto& [id, t] : local) scope[id] = t;
    }
    ops::RegionRunner runner = [this, &scope](ir::RegionId r, std::vector<Tensor> in) {
      return run_region(r, std::move(in), scope);
    };
    ops::KernelContext ctx(node, std::move(in_tensors), std::move(inferred).value(), std::move(runner));
    KILN_RETURN_IF_ERROR(schema->kernel(ctx));

    for (size_t i = 0; i < node.outputs.size(); ++i) {
      if (node.outputs[i] == ir::kNoValue) continue;
      Tensor& out = ctx.outputs()[i];
      if (!out.defined()) return internal_error(node.describe() + ": kernel did not produce output " + std::to_string(i));
      local[node.outputs[i]] = std::move(out);
    }
    // Free values whose last use was this node.
    for (ir::ValueId in : node.inputs)
      if (in != ir::kNoValue && last_use[in] == pos) local.erase(in);
    for (ir::ValueId out : node.outputs)
      if (out != ir::kNoValue && !last_use.count(out)) local.erase(out);
  }

  std::vector<Tensor> outputs;
  for (ir::ValueId id : region.outputs) {
    const Tensor* t = lookup(id);
    if (!t) return internal_error("region '" + region.name + "' output '" + graph_.value(id).name + "' was never computed");
    outputs.push_back(*t);
  }
  return outputs;
}

}  // namespace kiln::runtime
