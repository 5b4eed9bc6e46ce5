// Op family 'control_flow': If, Loop and Constant.
//
// If and Loop hold sub-graphs as regions of the same Graph (graph.h); their
// kernels run them through KernelContext::run_region, so a sub-graph sees the
// enclosing scope's values by id. If runs only the taken branch: the other
// may well be invalid for this input (that is often why the model branches).
// Shape inference sees only the node, not its regions, so it cannot look
// into the branches: If's outputs and Loop's scan outputs are left unranked
// for the compiler's region-aware propagation to refine, and the kernels size
// them from what the sub-graph actually produced.
#include <cassert>
#include <cstring>
#include <limits>
#include <string>

#include "engine/base/limits.h"
#include "engine/ops/op_registry.h"

namespace kiln::ops {
namespace {

using ir::Dim;
using ir::SymShape;

void add_op(OpRegistry& r, OpSchema schema, MappingType mapping) {
  schema.mapping = mapping;
  Status s = r.add(std::move(schema));
  assert(s.ok() && "control-flow op registered twice");
  (void)s;
}

StatusOr<ir::RegionId> graph_attr(const ir::Node& node, const char* name) {
  const ir::Attribute* a = node.attr(name);
  if (!a || a->kind != ir::AttrKind::kGraph || a->region == ir::kNoRegion)
    return invalid_argument(node.describe() + ": graph attribute '" + name + "' is required");
  return a->region;
}

// A scalar (or one-element) input of the given dtype, when its shape is known.
Status check_scalar_input(const InferContext& ctx, size_t i, DType want, const char* what) {
  if (!ctx.has_input(i)) return ok_status();
  if (ctx.input_dtype(i) != want)
    return ctx.error(std::string(what) + " (input " + std::to_string(i) + ") must be " +
                     std::string(dtype_name(want)) + ", got " + std::string(dtype_name(ctx.input_dtype(i))));
  const SymShape& s = ctx.input_shape(i);
  if (s.is_static() && shape_numel(s.concrete()) != 1)
    return ctx.error(std::string(what) + " (input " + std::to_string(i) + ") must have one element, got shape " +
                     s.to_string());
  return ok_status();
}

// --------------------------------------------------------------------- If

Status infer_if(InferContext& ctx) {
  KILN_RETURN_IF_ERROR(check_scalar_input(ctx, 0, DType::kBool, "cond"));
  KILN_RETURN_IF_ERROR(graph_attr(ctx.node(), "then_branch").status());
  KILN_RETURN_IF_ERROR(graph_attr(ctx.node(), "else_branch").status());
  for (size_t i = 0; i < ctx.num_outputs(); ++i) ctx.set_output(i, DType::kUndefined, SymShape::unranked());
  return ok_status();
}

Status if_kernel(KernelContext& ctx) {
  const Tensor& cond = ctx.input(0);
  if (cond.numel() != 1) return ctx.error("cond must have one element, got shape " + shape_to_string(cond.shape()));
  const bool taken = cond.get_f64(0) != 0.0;
  const char* branch = taken ? "then_branch" : "else_branch";
  KILN_ASSIGN_OR_RETURN(ir::RegionId region, graph_attr(ctx.node(), branch));
  auto outs = ctx.run_region(region, {});
  if (!outs.ok()) return std::move(outs).status().add_context(ctx.node().describe() + " " + branch);
  if (outs->size() != ctx.num_outputs())
    return ctx.error(std::string(branch) + " produced " + std::to_string(outs->size()) + " outputs but the node has " +
                     std::to_string(ctx.num_outputs()));
  for (size_t i = 0; i < outs->size(); ++i) ctx.set_output(i, std::move((*outs)[i]));
  return ok_status();
}

// ------------------------------------------------------------------- Loop

// Inputs: M (optional trip count), cond (optional), v_initial...
// Body: (iter_num, cond_in, v...) -> (cond_out, v..., scan...).
// Outputs: v_final..., scan outputs stacked along a new axis 0.
Status infer_loop(InferContext& ctx) {
  KILN_RETURN_IF_ERROR(graph_attr(ctx.node(), "body").status());
  KILN_RETURN_IF_ERROR(check_scalar_input(ctx, 0, DType::kInt64, "M"));
  KILN_RETURN_IF_ERROR(check_scalar_input(ctx, 1, DType::kBool, "cond"));
  const size_t n = ctx.num_inputs() > 2 ? ctx.num_inputs() - 2 : 0;
  if (ctx.num_outputs() < n)
    return ctx.error("has " + std::to_string(n) + " loop-carried inputs but only " +
                     std::to_string(ctx.num_outputs()) + " outputs");
  for (size_t i = 0; i < n; ++i) {
    if (!ctx.has_input(2 + i)) return ctx.error("loop-carried input " + std::to_string(2 + i) + " is missing");
    // A loop-carried value keeps its dtype; its shape may change per iteration.
    ctx.set_output(i, ctx.input_dtype(2 + i), SymShape::unranked());
  }
  for (size_t i = n; i < ctx.num_outputs(); ++i) ctx.set_output(i, DType::kUndefined, SymShape::unranked());
  return ok_status();
}

Status loop_kernel(KernelContext& ctx) {
  KILN_ASSIGN_OR_RETURN(ir::RegionId body, graph_attr(ctx.node(), "body"));
  const size_t n = ctx.num_inputs() > 2 ? ctx.num_inputs() - 2 : 0;
  const size_t k = ctx.num_outputs() - n;
  int64_t trip_count = std::numeric_limits<int64_t>::max();
  if (ctx.has_input(0)) {
    if (ctx.input(0).numel() != 1) return ctx.error("M must be a scalar");
    trip_count = ctx.input(0).get_i64(0);
  }
  bool cond = true;
  if (ctx.has_input(1)) {
    if (ctx.input(1).numel() != 1) return ctx.error("cond must be a scalar");
    cond = ctx.input(1).get_f64(0) != 0.0;
  }
  std::vector<Tensor> carried;
  for (size_t i = 0; i < n; ++i) carried.push_back(ctx.input(2 + i));
  std::vector<std::vector<Tensor>> scans(k);
  KILN_ASSIGN_OR_RETURN(const int64_t max_iterations, max_loop_iterations());
  for (int64_t it = 0; it < trip_count && cond; ++it) {
    if (it == max_iterations)
      return ctx.error("did not end within " + std::to_string(max_iterations) + " iterations (the limit, " +
                       std::string(kMaxLoopIterationsEnv) + "); trip count " +
                       (ctx.has_input(0) ? std::to_string(trip_count) : std::string("none")));
    std::vector<Tensor> args;
    args.push_back(Tensor::scalar_i64(it));
    args.push_back(Tensor::from_vector<bool>({}, {cond}));
    for (Tensor& t : carried) args.push_back(std::move(t));
    auto outs = ctx.run_region(body, std::move(args));
    if (!outs.ok())
      return std::move(outs).status().add_context(ctx.node().describe() + " body, iteration " + std::to_string(it));
    if (outs->size() != 1 + n + k)
      return ctx.error("body produced " + std::to_string(outs->size()) + " outputs, expected " +
                       std::to_string(1 + n + k) + " (cond, " + std::to_string(n) + " loop-carried, " +
                       std::to_string(k) + " scan)");
    const Tensor& c = (*outs)[0];
    if (c.numel() != 1) return ctx.error("body's cond output must be a scalar, got shape " + shape_to_string(c.shape()));
    cond = c.get_f64(0) != 0.0;
    for (size_t i = 0; i < n; ++i) carried[i] = std::move((*outs)[1 + i]);
    for (size_t i = 0; i < k; ++i) scans[i].push_back(std::move((*outs)[1 + n + i]));
  }
  for (size_t i = 0; i < n; ++i) ctx.set_output(i, std::move(carried[i]));
  for (size_t i = 0; i < k; ++i) {
    const std::vector<Tensor>& parts = scans[i];
    if (parts.empty()) {
      // Zero iterations: the body's declared element type and shape are not
      // visible here, so the scan output is an empty 1-D tensor of the
      // inferred dtype (float when unknown).
      const DType dt = ctx.inferred_output(n + i).dtype;
      KILN_RETURN_IF_ERROR(ctx.allocate_output(n + i, dt == DType::kUndefined ? DType::kFloat32 : dt, {0}).status());
      continue;
    }
    const Tensor& first = parts[0];
    for (size_t j = 1; j < parts.size(); ++j)
      if (parts[j].dtype() != first.dtype() || parts[j].shape() != first.shape())
        return ctx.error("scan output " + std::to_string(i) + " is " + std::string(dtype_name(parts[j].dtype())) + " " +
                         shape_to_string(parts[j].shape()) + " at iteration " + std::to_string(j) + " but " +
                         std::string(dtype_name(first.dtype())) + " " + shape_to_string(first.shape()) +
                         " at iteration 0");
    Shape shape = first.shape();
    shape.insert(shape.begin(), static_cast<int64_t>(parts.size()));
    KILN_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(n + i, first.dtype(), shape));
    auto* dst = static_cast<unsigned char*>(out->raw_data());
    for (const Tensor& p : parts) {
      if (p.nbytes()) std::memcpy(dst, p.raw_data(), p.nbytes());
      dst += p.nbytes();
    }
  }
  return ok_status();
}

// --------------------------------------------------------------- Constant

StatusOr<Tensor> constant_value(const ir::Node& node) {
  const ir::Attribute* found = nullptr;
  std::string found_name;
  for (const auto& [name, a] : node.attrs) {
    if (name.rfind("value", 0) != 0 && name != "sparse_value") continue;
    if (found) return invalid_argument(node.describe() + ": has both '" + found_name + "' and '" + name + "'");
    found = &a;
    found_name = name;
  }
  if (!found) return invalid_argument(node.describe() + ": needs one of value, value_float(s), value_int(s)");
  if (found_name == "value") {
    if (found->kind != ir::AttrKind::kTensor || !found->tensor.defined())
      return invalid_argument(node.describe() + ": attribute 'value' must be a tensor");
    return found->tensor;
  }
  if (found_name == "value_float") return Tensor::scalar_f32(found->f);
  if (found_name == "value_int") return Tensor::scalar_i64(found->i);
  if (found_name == "value_floats")
    return Tensor::from_vector<float>({static_cast<int64_t>(found->floats.size())}, found->floats);
  if (found_name == "value_ints")
    return Tensor::from_vector<int64_t>({static_cast<int64_t>(found->ints.size())}, found->ints);
  return unimplemented(node.describe() + ": attribute '" + found_name + "' is not supported (no string or sparse tensors)");
}

Status infer_constant(InferContext& ctx) {
  KILN_ASSIGN_OR_RETURN(Tensor t, constant_value(ctx.node()));
  ctx.set_output(0, t.dtype(), SymShape::from_concrete(t.shape()));
  // A small int constant is a known dims value, for shape computations.
  if (dtype_is_integer(t.dtype()) && t.rank() <= 1 && t.numel() <= 64) {
    std::vector<Dim> dims;
    for (int64_t v : t.to_i64_vector()) dims.emplace_back(v);
    ctx.set_output_dims_value(0, std::move(dims));
  }
  return ok_status();
}

Status constant_kernel(KernelContext& ctx) {
  KILN_ASSIGN_OR_RETURN(Tensor t, constant_value(ctx.node()));
  ctx.set_output(0, std::move(t));
  return ok_status();
}

}  // namespace

void register_control_flow_ops(OpRegistry& r) {
  add_op(r, {"If", "", 1, 1, 0, -1, infer_if, if_kernel}, MappingType::kOther);
  add_op(r, {"Loop", "", 0, -1, 0, -1, infer_loop, loop_kernel}, MappingType::kOther);
  add_op(r, {"Constant", "", 0, 0, 1, 1, infer_constant, constant_kernel}, MappingType::kOther);
}

}  // namespace kiln::ops
