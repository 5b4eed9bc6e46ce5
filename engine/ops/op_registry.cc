// Op registry, inference and kernel contexts; see op_registry.h.
#include "engine/ops/op_registry.h"

#include "engine/base/checked_math.h"
#include "engine/base/limits.h"
#include "engine/ops/quantization.h"

namespace kiln::ops {

std::optional<std::vector<ir::Dim>> InferContext::input_as_dims(size_t i) const {
  if (!has_input(i)) return std::nullopt;
  const ValueInfo& in = inputs_[i];
  if (in.value && dtype_is_integer(in.value->dtype()) && in.value->rank() <= 1) {
    std::vector<ir::Dim> dims;
    for (int64_t v : in.value->to_i64_vector()) dims.emplace_back(v);
    return dims;
  }
  return in.dims_value;
}

Status InferContext::error(const std::string& message) const {
  return invalid_argument(node_.describe() + ": " + message);
}

StatusOr<Tensor*> KernelContext::allocate_output(size_t i) {
  const ValueInfo& info = inferred_[i];
  if (!info.shape.is_static())
    return internal_error(node_.describe() + ": output " + std::to_string(i) + " has non-static shape " +
                          info.shape.to_string() + " at run time");
  return allocate_output(i, info.dtype, info.shape.concrete());
}

StatusOr<Tensor*> KernelContext::allocate_output(size_t i, DType dtype, Shape shape) {
  auto t = Tensor::allocate(dtype, std::move(shape));
  if (!t.ok()) return std::move(t).status().add_context(node_.describe());
  outputs_[i] = std::move(t).value();
  return &outputs_[i];
}

StatusOr<std::vector<Tensor>> KernelContext::run_region(ir::RegionId region, std::vector<Tensor> in) const {
  if (!region_runner_) return internal_error(node_.describe() + ": no sub-graph runner");
  return region_runner_(region, std::move(in));
}

Status KernelContext::error(const std::string& message) const {
  return invalid_argument(node_.describe() + ": " + message);
}

const char* mapping_type_name(MappingType type) {
  switch (type) {
    case MappingType::kUnset: return "unset";
    case MappingType::kOneToOne: return "one-to-one";
    case MappingType::kOneToMany: return "one-to-many";
    case MappingType::kManyToMany: return "many-to-many";
    case MappingType::kReorganize: return "reorganize";
    case MappingType::kShuffle: return "shuffle";
    case MappingType::kOther: return "other";
  }
  return "unset";
}

Status OpRegistry::add(OpSchema schema) {
  auto key = std::make_pair(schema.domain, schema.name);
  if (ops_.count(key)) {
    registration_errors_.push_back("op registered twice: " + schema.name);
    return internal_error(registration_errors_.back());
  }
  ops_[key] = std::make_unique<OpSchema>(std::move(schema));
  return ok_status();
}

const OpSchema* OpRegistry::find(std::string_view domain, std::string_view name) const {
  auto it = ops_.find(std::make_pair(std::string(domain), std::string(name)));
  return it == ops_.end() ? nullptr : it->second.get();
}

std::vector<const OpSchema*> OpRegistry::all() const {
  std::vector<const OpSchema*> out;
  for (const auto& [k, v] : ops_) out.push_back(v.get());
  return out;
}

const OpRegistry& OpRegistry::builtin() {
  static const OpRegistry* registry = [] {
    auto* r = new OpRegistry();
    register_elementwise_ops(*r);
    register_reduction_ops(*r);
    register_linalg_ops(*r);
    register_pooling_ops(*r);
    register_data_movement_ops(*r);
    register_control_flow_ops(*r);
    register_recurrent_ops(*r);
    register_quantization_ops(*r);
    return r;
  }();
  return *registry;
}

namespace {

// A static output shape whose byte size overflows int64 or exceeds the
// one-tensor limit is refused where it is inferred, naming the node, rather
// than accepted and failed (or wrapped) later by whichever backend runs it.
Status check_output_size(const ir::Node& node, size_t i, const ValueInfo& out) {
  if (!out.shape.is_static() || out.dtype == DType::kUndefined) return ok_status();
  const std::vector<int64_t> dims = out.shape.concrete();
  for (int64_t d : dims)
    if (d < 0) return ok_status();  // the op's own checks report negative dims
  const std::string what = node.describe() + ": output " + std::to_string(i) + " " + out.shape.to_string() + " " +
                           std::string(dtype_name(out.dtype));
  const std::optional<int64_t> bytes = checked_byte_size(dims, static_cast<int64_t>(dtype_size(out.dtype)));
  if (!bytes) return invalid_argument(what + " is too large: its byte size overflows int64");
  return check_tensor_bytes(*bytes, what);
}

}  // namespace

StatusOr<std::vector<ValueInfo>> infer_node(const OpSchema& schema, const ir::Node& node,
                                            std::vector<ValueInfo> inputs) {
  // Trailing omitted inputs do not count towards arity.
  size_t n_in = inputs.size();
  while (n_in > 0 && inputs[n_in - 1].dtype == DType::kUndefined) --n_in;
  if (static_cast<int>(n_in) < schema.min_inputs ||
      (schema.max_inputs >= 0 && static_cast<int>(n_in) > schema.max_inputs))
    return invalid_argument(node.describe() + ": expects " + std::to_string(schema.min_inputs) +
                            (schema.max_inputs == schema.min_inputs
                                 ? ""
                                 : ".." + (schema.max_inputs < 0 ? std::string("n") : std::to_string(schema.max_inputs))) +
                            " inputs, got " + std::to_string(n_in));
  const size_t n_out = node.outputs.size();
  if (static_cast<int>(n_out) < schema.min_outputs ||
      (schema.max_outputs >= 0 && static_cast<int>(n_out) > schema.max_outputs))
    return invalid_argument(node.describe() + ": expects " + std::to_string(schema.min_outputs) + ".." +
                            std::to_string(schema.max_outputs) + " outputs, got " + std::to_string(n_out));
  for (size_t i = 0; i < n_in; ++i) {
    if (inputs[i].dtype == DType::kUndefined && static_cast<int>(i) < schema.min_inputs)
      return invalid_argument(node.describe() + ": required input " + std::to_string(i) + " is missing");
  }
  InferContext ctx(node, std::move(inputs), n_out);
  KILN_RETURN_IF_ERROR(schema.infer(ctx));
  for (size_t i = 0; i < ctx.mutable_outputs().size(); ++i)
    KILN_RETURN_IF_ERROR(check_output_size(node, i, ctx.mutable_outputs()[i]));
  return std::move(ctx.mutable_outputs());
}

}  // namespace kiln::ops
