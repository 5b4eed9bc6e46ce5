// Cast and CastLike. Conversions never hit C++ undefined behaviour: ints
// wrap modulo 2^n, float -> int truncates toward zero and saturates at the
// target's range with NaN -> 0, anything -> bool is "!= 0" (detail::convert).
// Casting a shape-like int tensor to int32/int64 keeps its symbolic dims.
#include "engine/ops/elementwise_common.h"
#include "engine/ops/op_registry.h"

namespace kiln::ops::detail {
namespace {

Status cast_to(InferContext& ctx, DType to) {
  ctx.set_output(0, to, ctx.input_shape(0));
  if ((to == DType::kInt64 || to == DType::kInt32) && dtype_is_integer(ctx.input_dtype(0))) {
    // A dims value holds sizes far inside int32's range.
    if (auto dims = small_input_dims(ctx, 0)) ctx.set_output_dims_value(0, std::move(*dims));
  }
  return ok_status();
}

Status cast_infer(InferContext& ctx) {
  const ir::Attribute* to = ctx.node().attr("to");
  if (!to || to->kind != ir::AttrKind::kInt) return ctx.error("missing int attribute 'to'");
  const DType t = dtype_from_onnx(to->i);
  if (t == DType::kUndefined)
    return unimplemented(ctx.node().describe() + ": cast to ONNX dtype " + std::to_string(to->i) +
                         " is not supported (supported: float, double, float16, int8..int64, uint8..uint64, bool)");
  return cast_to(ctx, t);
}

Status castlike_infer(InferContext& ctx) { return cast_to(ctx, ctx.input_dtype(1)); }

Status cast_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  KILN_ASSIGN_OR_RETURN(Tensor* y, ctx.allocate_output(0));
  const int64_t n = x.numel();
  if (x.dtype() == y->dtype()) {
    if (x.nbytes()) std::memcpy(y->raw_data(), x.raw_data(), x.nbytes());
    return ok_status();
  }
  visit_dtype(x.dtype(), [&]<typename From>() {
    visit_dtype(y->dtype(), [&]<typename To>() {
      const From* in = x.data<From>();
      To* out = y->data<To>();
      for (int64_t i = 0; i < n; ++i) out[i] = convert<To>(in[i]);
    });
  });
  return ok_status();
}

}  // namespace

void register_cast_ops(OpRegistry& r) {
  add_op(r, OpSchema{"Cast", "", 1, 1, 1, 1, &cast_infer, &cast_kernel}, MappingType::kOneToOne);
  add_op(r, OpSchema{"CastLike", "", 2, 2, 1, 1, &castlike_infer, &cast_kernel}, MappingType::kOneToOne);
}

}  // namespace kiln::ops::detail
