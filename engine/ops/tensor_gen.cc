// Op family 'data_movement', part 3: ops that make tensors rather than move
// them: ConstantOfShape, Range, EyeLike, OneHot, Trilu and NonZero.
//
// Range and NonZero have data-dependent output sizes: their inference gives an
// unknown dim unless the values it depends on are known (Range over symbolic
// dims, as in `torch.arange(x.shape[1])`, gives a symbolic length), and their
// kernels size the output themselves.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "engine/ops/data_movement_internal.h"
#include "engine/ops/op_registry.h"

namespace kiln::ops::movement {
namespace {

using ir::Dim;
using ir::SymShape;

// Reads a scalar (or one-element) input as double; nullopt when unknown.
std::optional<double> scalar_value(const InferContext& ctx, size_t i) {
  const Tensor* t = ctx.input_value(i);
  if (!t || t->numel() != 1) return std::nullopt;
  return t->get_f64(0);
}

Status check_scalar(const InferContext& ctx, size_t i, const char* what) {
  const SymShape& s = ctx.input_shape(i);
  if (!s.has_rank) return ok_status();
  const bool ok = s.rank() == 0 || (s.rank() == 1 && !(s.dims[0].is_const() && s.dims[0].value() != 1));
  if (!ok) return ctx.error(std::string(what) + " (input " + std::to_string(i) + ") must be a scalar, got shape " + s.to_string());
  return ok_status();
}

// -------------------------------------------------------- ConstantOfShape

StatusOr<Tensor> constant_of_shape_value(const ir::Node& node) {
  const ir::Attribute* a = node.attr("value");
  if (!a) return Tensor::scalar_f32(0.0f);
  if (a->kind != ir::AttrKind::kTensor || a->tensor.numel() != 1)
    return invalid_argument(node.describe() + ": attribute 'value' must be a one-element tensor");
  return a->tensor;
}

Status infer_constant_of_shape(InferContext& ctx) {
  KILN_ASSIGN_OR_RETURN(Tensor value, constant_of_shape_value(ctx.node()));
  if (!dtype_is_integer(ctx.input_dtype(0))) return ctx.error("shape (input 0) must be an int64 tensor");
  const SymShape& ss = ctx.input_shape(0);
  if (ss.has_rank && ss.rank() != 1) return ctx.error("shape (input 0) must be 1-D, got " + ss.to_string());
  auto dims = ctx.input_as_dims(0);
  if (!dims) {
    ctx.set_output(0, value.dtype(),
                   ss.has_rank && ss.dims[0].is_const()
                       ? SymShape(std::vector<Dim>(static_cast<size_t>(ss.dims[0].value())))
                       : SymShape::unranked());
    return ok_status();
  }
  for (const Dim& d : *dims)
    if (d.is_const() && d.value() < 0) return ctx.error("shape " + SymShape(*dims).to_string() + " has a negative dim");
  // A small int fill (e.g. ones for an Expand shape) is a known dims value.
  if (dtype_is_integer(value.dtype()) && dims->size() <= 1) {
    const Dim n = dims->empty() ? Dim(1) : (*dims)[0];
    if (n.is_const() && n.value() <= kMaxDimsValue)
      ctx.set_output_dims_value(0, std::vector<Dim>(static_cast<size_t>(n.value()), Dim(value.get_i64(0))));
  }
  ctx.set_output(0, value.dtype(), SymShape(std::move(*dims)));
  return ok_status();
}

Status constant_of_shape_kernel(KernelContext& ctx) {
  KILN_ASSIGN_OR_RETURN(Tensor value, constant_of_shape_value(ctx.node()));
  KILN_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0));
  const size_t elem = dtype_size(value.dtype());
  auto* dst = static_cast<unsigned char*>(out->raw_data());
  for (int64_t i = 0; i < out->numel(); ++i) std::memcpy(dst + static_cast<size_t>(i) * elem, value.raw_data(), elem);
  return ok_status();
}

// ------------------------------------------------------------------ Range

bool range_dtype_ok(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat64 || t == DType::kInt16 || t == DType::kInt32 ||
         t == DType::kInt64;
}

// The element count, as onnxruntime computes it: the difference in the
// input type, the division in double. May be huge or NaN; the caller checks.
// Integer differences are taken in int64 and then wrapped to T (what
// onnxruntime's T arithmetic gives) without signed overflow; an int64
// difference that overflows is NaN, which the caller refuses.
template <typename T>
double range_count(T start, T limit, T delta) {
  if constexpr (std::is_integral_v<T>) {
    int64_t diff = 0;
    if (__builtin_sub_overflow(static_cast<int64_t>(limit), static_cast<int64_t>(start), &diff))
      return std::numeric_limits<double>::quiet_NaN();
    return std::ceil(static_cast<double>(static_cast<T>(diff)) / static_cast<double>(delta));
  } else {
    return std::ceil(static_cast<double>(static_cast<T>(limit - start)) / static_cast<double>(delta));
  }
}

StatusOr<int64_t> range_count_of(const InferContext* ictx, const KernelContext* kctx, const Tensor& start,
                                 const Tensor& limit, const Tensor& delta) {
  if (delta.get_f64(0) == 0.0) {
    const std::string msg = "delta must be non-zero";
    return ictx ? ictx->error(msg) : kctx->error(msg);
  }
  double n = 0;
  visit_dtype(start.dtype(), [&]<typename T>() {
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>)
      n = range_count<T>(start.data<T>()[0], limit.data<T>()[0], delta.data<T>()[0]);
  });
  if (std::isnan(n)) {
    const std::string msg = "limit - start overflows int64";
    return ictx ? ictx->error(msg) : kctx->error(msg);
  }
  if (!(n > 0)) return int64_t{0};
  if (n > static_cast<double>(int64_t{1} << 40)) {
    const std::string msg = "the range has " + std::to_string(n) + " elements, too many";
    return ictx ? ictx->error(msg) : kctx->error(msg);
  }
  return static_cast<int64_t>(n);
}

Status infer_range(InferContext& ctx) {
  const DType dt = ctx.input_dtype(0);
  if (!range_dtype_ok(dt))
    return ctx.error("dtype " + std::string(dtype_name(dt)) + " is not supported (float, double, int16, int32, int64)");
  static const char* kNames[] = {"start", "limit", "delta"};
  for (size_t i = 0; i < 3; ++i) {
    if (ctx.input_dtype(i) != dt)
      return ctx.error(std::string(kNames[i]) + " has dtype " + std::string(dtype_name(ctx.input_dtype(i))) +
                       ", start has " + std::string(dtype_name(dt)));
    KILN_RETURN_IF_ERROR(check_scalar(ctx, i, kNames[i]));
  }
  const Tensor *s = ctx.input_value(0), *l = ctx.input_value(1), *d = ctx.input_value(2);
  if (s && l && d && s->numel() == 1 && l->numel() == 1 && d->numel() == 1) {
    KILN_ASSIGN_OR_RETURN(int64_t n, range_count_of(&ctx, nullptr, *s, *l, *d));
    if (dtype_is_integer(dt) && n <= kMaxDimsValue) {
      std::vector<Dim> values;
      // No overflow: for int64, start + i * delta stays between start and
      // limit when i < n; narrower types have |start|, |delta| <= 2^31 and
      // n <= kMaxDimsValue.
      for (int64_t i = 0; i < n; ++i) values.emplace_back(s->get_i64(0) + i * d->get_i64(0));
      ctx.set_output_dims_value(0, std::move(values));
    }
    ctx.set_output(0, dt, SymShape({Dim(n)}));
    return ok_status();
  }
  // Symbolic: an integer range over dims, e.g. Range(0, Shape(x)[1], 1).
  Dim n;
  if (dtype_is_integer(dt)) {
    auto start = ctx.input_as_dims(0), limit = ctx.input_as_dims(1), delta = ctx.input_as_dims(2);
    if (start && limit && delta && start->size() == 1 && limit->size() == 1 && delta->size() == 1 &&
        (*delta)[0].is_const()) {
      const int64_t step = (*delta)[0].value();
      if (step == 0) return ctx.error("delta must be non-zero");
      const Dim diff = step > 0 ? (*limit)[0] - (*start)[0] : (*start)[0] - (*limit)[0];
      const Dim count = Dim::ceil_div(diff, Dim(step > 0 ? step : -step));
      // A range from 0 up to a dim is that dim long; otherwise clamp at 0.
      const bool from_zero = step > 0 && (*start)[0].is_const() && (*start)[0].value() == 0 && !(*limit)[0].is_const();
      n = from_zero ? count : Dim::max(count, Dim(0));
    }
  }
  ctx.set_output(0, dt, SymShape({n}));
  return ok_status();
}

Status range_kernel(KernelContext& ctx) {
  const Tensor &s = ctx.input(0), &l = ctx.input(1), &d = ctx.input(2);
  if (s.numel() != 1 || l.numel() != 1 || d.numel() != 1) return ctx.error("start, limit and delta must be scalars");
  KILN_ASSIGN_OR_RETURN(int64_t n, range_count_of(nullptr, &ctx, s, l, d));
  KILN_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0, s.dtype(), {n}));
  // ONNX defines the values by accumulation (x_i = x_{i-1} + delta), in the
  // input type.
  visit_dtype(s.dtype(), [&]<typename T>() {
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
      T v = s.data<T>()[0];
      const T step = d.data<T>()[0];
      // The step after the last element is not taken: it may overflow.
      // Integers step in uint64 and wrap to T, never a signed overflow.
      for (int64_t i = 0; i < n; ++i) {
        out->data<T>()[i] = v;
        if (i + 1 == n) break;
        if constexpr (std::is_integral_v<T>)
          v = static_cast<T>(static_cast<uint64_t>(v) + static_cast<uint64_t>(step));
        else
          v = static_cast<T>(v + step);
      }
    }
  });
  return ok_status();
}

// ---------------------------------------------------------------- EyeLike

StatusOr<DType> eye_like_dtype(const ir::Node& node, DType input) {
  const ir::Attribute* a = node.attr("dtype");
  if (!a) return input;
  const DType t = dtype_from_onnx(a->i);
  if (t == DType::kUndefined)
    return unimplemented(node.describe() + ": dtype " + std::to_string(a->i) + " is not supported");
  return t;
}

Status infer_eye_like(InferContext& ctx) {
  const SymShape& in = ctx.input_shape(0);
  if (in.has_rank && in.rank() != 2) return ctx.error("input must be 2-D, got " + in.to_string());
  KILN_ASSIGN_OR_RETURN(DType t, eye_like_dtype(ctx.node(), ctx.input_dtype(0)));
  ctx.set_output(0, t, in.has_rank ? in : SymShape({Dim(), Dim()}));
  return ok_status();
}

Status eye_like_kernel(KernelContext& ctx) {
  KILN_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0));
  const int64_t rows = out->dim(0), cols = out->dim(1);
  const int64_t k = std::clamp<int64_t>(ctx.node().attr_int("k", 0), -rows - 1, cols + 1);
  for (int64_t i = 0; i < rows; ++i)
    if (i + k >= 0 && i + k < cols) out->set_f64(i * cols + i + k, 1.0);
  return ok_status();
}

// ------------------------------------------------------------------ Trilu

Status infer_trilu(InferContext& ctx) {
  const SymShape& in = ctx.input_shape(0);
  if (in.has_rank && in.rank() < 2) return ctx.error("input must have rank >= 2, got " + in.to_string());
  if (ctx.has_input(1)) {
    if (!dtype_is_integer(ctx.input_dtype(1))) return ctx.error("k (input 1) must be an int64 scalar");
    KILN_RETURN_IF_ERROR(check_scalar(ctx, 1, "k"));
  }
  ctx.set_output(0, ctx.input_dtype(0), in);
  return ok_status();
}

Status trilu_kernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const bool upper = ctx.node().attr_int("upper", 1) != 0;
  KILN_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0));
  if (in.nbytes()) std::memcpy(out->raw_data(), in.raw_data(), in.nbytes());
  const int64_t rows = in.dim(in.rank() - 2), cols = in.dim(in.rank() - 1);
  // Any k beyond the matrix keeps or clears everything; clamping avoids overflow.
  const int64_t k = std::clamp<int64_t>(ctx.has_input(1) && ctx.input(1).numel() ? ctx.input(1).get_i64(0) : 0,
                                        -rows - 1, cols + 1);
  const int64_t mats = rows * cols != 0 ? in.numel() / (rows * cols) : 0;
  const size_t elem = dtype_size(in.dtype());
  auto* dst = static_cast<unsigned char*>(out->raw_data());
  // Zero bits are zero in every dtype, so clearing is a memset per row run.
  for (int64_t m = 0; m < mats; ++m) {
    for (int64_t i = 0; i < rows; ++i) {
      unsigned char* row = dst + static_cast<size_t>((m * rows + i) * cols) * elem;
      // Kept columns: j >= i + k (upper) or j <= i + k (lower).
      const int64_t edge = i + k;
      if (upper) {
        const int64_t zero_end = std::clamp<int64_t>(edge, 0, cols);
        std::memset(row, 0, static_cast<size_t>(zero_end) * elem);
      } else {
        const int64_t zero_begin = std::clamp<int64_t>(edge + 1, 0, cols);
        std::memset(row + static_cast<size_t>(zero_begin) * elem, 0, static_cast<size_t>(cols - zero_begin) * elem);
      }
    }
  }
  return ok_status();
}

// ----------------------------------------------------------------- OneHot

Status infer_one_hot(InferContext& ctx) {
  const SymShape& in = ctx.input_shape(0);
  KILN_RETURN_IF_ERROR(check_scalar(ctx, 1, "depth"));
  const SymShape& vs = ctx.input_shape(2);
  if (vs.has_rank && !(vs.rank() == 1 && !(vs.dims[0].is_const() && vs.dims[0].value() != 2)))
    return ctx.error("values (input 2) must be a 1-D tensor [off, on], got shape " + vs.to_string());
  const DType dt = ctx.input_dtype(2);
  if (!in.has_rank) {
    ctx.set_output(0, dt, SymShape::unranked());
    return ok_status();
  }
  const int64_t axis_attr = ctx.node().attr_int("axis", -1);
  auto axis = normalize_axis(axis_attr, in.rank() + 1);
  if (!axis) return ctx.error("axis " + std::to_string(axis_attr) + " is out of range for output rank " + std::to_string(in.rank() + 1));
  Dim depth;
  if (auto d = scalar_value(ctx, 1)) {
    if (!(*d >= 1.0 && *d <= static_cast<double>(int64_t{1} << 40)))
      return ctx.error("depth must be a positive count, got " + std::to_string(*d));
    depth = Dim(static_cast<int64_t>(*d));
  } else if (auto dd = ctx.input_as_dims(1); dd && dd->size() == 1) {
    depth = (*dd)[0];
  }
  std::vector<Dim> out = in.dims;
  out.insert(out.begin() + *axis, depth);
  ctx.set_output(0, dt, SymShape(std::move(out)));
  return ok_status();
}

Status one_hot_kernel(KernelContext& ctx) {
  const Tensor& indices = ctx.input(0);
  const Tensor& values = ctx.input(2);
  if (ctx.input(1).numel() != 1) return ctx.error("depth must be a scalar");
  if (values.numel() != 2) return ctx.error("values must hold exactly [off, on]");
  const auto depth = static_cast<int64_t>(ctx.input(1).get_f64(0));
  KILN_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0));
  const int64_t axis = *normalize_axis(ctx.node().attr_int("axis", -1), indices.rank() + 1);
  int64_t inner = 1;
  for (int64_t d = axis; d < indices.rank(); ++d) inner *= indices.dim(d);
  const size_t elem = dtype_size(values.dtype());
  const auto* off = static_cast<const unsigned char*>(values.raw_data());
  const unsigned char* on = off + elem;
  auto* dst = static_cast<unsigned char*>(out->raw_data());
  for (int64_t i = 0; i < out->numel(); ++i) std::memcpy(dst + static_cast<size_t>(i) * elem, off, elem);
  for (int64_t e = 0; e < indices.numel(); ++e) {
    const double f = indices.get_f64(e);
    if (!(std::abs(f) < static_cast<double>(depth) + 1.0)) continue;  // out of range (or NaN): all off
    int64_t v = static_cast<int64_t>(f);
    if (v < 0) v += depth;
    if (v < 0 || v >= depth) continue;  // ONNX: out-of-range indices give an all-off row
    const int64_t o = e / inner, in = e % inner;
    std::memcpy(dst + static_cast<size_t>((o * depth + v) * inner + in) * elem, on, elem);
  }
  return ok_status();
}

// ---------------------------------------------------------------- NonZero

Status infer_non_zero(InferContext& ctx) {
  const SymShape& in = ctx.input_shape(0);
  // onnxruntime's convention: a scalar gives one coordinate row.
  const Dim rows = in.has_rank ? Dim(std::max<int64_t>(in.rank(), 1)) : Dim();
  ctx.set_output(0, DType::kInt64, SymShape({rows, Dim()}));
  return ok_status();
}

template <typename T>
bool is_nonzero(T v) {
  if constexpr (std::is_same_v<T, Half>) return static_cast<float>(v) != 0.0f;
  else return v != T(0);
}

Status non_zero_kernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  std::vector<int64_t> flat;
  visit_dtype(in.dtype(), [&]<typename T>() {
    const T* p = in.data<T>();
    for (int64_t i = 0; i < in.numel(); ++i)
      if (is_nonzero<T>(p[i])) flat.push_back(i);
  });
  const int64_t rank = in.rank(), n = static_cast<int64_t>(flat.size());
  KILN_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0, DType::kInt64, {std::max<int64_t>(rank, 1), n}));
  int64_t* dst = out->data<int64_t>();
  const std::vector<int64_t> strides = shape_strides(in.shape());
  for (int64_t j = 0; j < n; ++j) {
    int64_t rem = flat[static_cast<size_t>(j)];
    for (int64_t d = 0; d < rank; ++d) {
      dst[d * n + j] = rem / strides[static_cast<size_t>(d)];
      rem %= strides[static_cast<size_t>(d)];
    }
  }
  return ok_status();
}

}  // namespace

void register_tensor_gen_ops(OpRegistry& r) {
  add_op(r, {"ConstantOfShape", "", 1, 1, 1, 1, infer_constant_of_shape, constant_of_shape_kernel, {0}}, MappingType::kOther);
  add_op(r, {"Range", "", 3, 3, 1, 1, infer_range, range_kernel, {0, 1, 2}}, MappingType::kOther);
  add_op(r, {"EyeLike", "", 1, 1, 1, 1, infer_eye_like, eye_like_kernel}, MappingType::kOther);
  add_op(r, {"Trilu", "", 1, 2, 1, 1, infer_trilu, trilu_kernel}, MappingType::kOneToOne);
  add_op(r, {"OneHot", "", 3, 3, 1, 1, infer_one_hot, one_hot_kernel, {1}}, MappingType::kOther);
  add_op(r, {"NonZero", "", 1, 1, 1, 1, infer_non_zero, non_zero_kernel}, MappingType::kOther);
}

}  // namespace kiln::ops::movement
