// Softmax-like and normalization ops (registered by register_reduction_ops):
// Softmax, LogSoftmax, Hardmax (opset 13: one axis, default -1),
// LayerNormalization, BatchNormalization (inference only),
// InstanceNormalization, GroupNormalization, LpNormalization.
//
// Statistics are computed in double with two passes (mean, then squared
// deviations), which is exact enough to serve as the oracle for fp16/fp32
// backends that use one-pass or Welford schemes.
#include <cmath>
#include <limits>

#include "engine/ops/elementwise_common.h"
#include "engine/ops/op_registry.h"

namespace kiln::ops::detail {
namespace {

Status axis_error(const InferContext& ctx, int64_t axis, int64_t rank) {
  return ctx.error("axis " + std::to_string(axis) + " is out of range for an input of rank " + std::to_string(rank));
}

// Reads element i of a float tensor of type T as double.
template <typename T>
double ld(const T* p, int64_t i) {
  return static_cast<double>(load(p[i]));
}

// --- Softmax / LogSoftmax / Hardmax --------------------------------------------

enum class Soft { kSoftmax, kLogSoftmax, kHardmax };

Status softmax_infer(InferContext& ctx) {
  KILN_RETURN_IF_ERROR(check_dtype(ctx, 0, kFloatTypes));
  const ir::SymShape& in = ctx.input_shape(0);
  if (in.has_rank) {
    int64_t axis = ctx.node().attr_int("axis", -1);
    // A scalar has nothing to normalize over; ONNX requires rank >= 1.
    if (!normalize_axis(axis, in.rank())) return axis_error(ctx, ctx.node().attr_int("axis", -1), in.rank());
  }
  ctx.set_output(0, ctx.input_dtype(0), in);
  return ok_status();
}

template <Soft S>
Status softmax_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  int64_t axis = ctx.node().attr_int("axis", -1);
  normalize_axis(axis, x.rank());
  KILN_ASSIGN_OR_RETURN(Tensor* y, ctx.allocate_output(0));
  const AxisSplit s = split_at_axis(x.shape(), axis);
  visit_dtype(x.dtype(), [&]<typename T>() {
    if constexpr (kIsFloat<T>) {
      const T* in = x.data<T>();
      T* out = y->data<T>();
      std::vector<double> e(static_cast<size_t>(s.n));
      for (int64_t o = 0; o < s.outer; ++o) {
        for (int64_t i = 0; i < s.inner; ++i) {
          const int64_t base = o * s.n * s.inner + i;
          double m = -std::numeric_limits<double>::infinity();
          int64_t arg = 0;
          bool nan = false;
          for (int64_t r = 0; r < s.n; ++r) {
            const double v = ld(in, base + r * s.inner);
            nan |= std::isnan(v);
            if (v > m) {
              m = v;
              arg = r;
            }
          }
          if constexpr (S == Soft::kHardmax) {
            for (int64_t r = 0; r < s.n; ++r) out[base + r * s.inner] = convert<T>(r == arg ? 1.0 : 0.0);
            continue;
          }
          double sum = 0.0;
          for (int64_t r = 0; r < s.n; ++r) {
            e[static_cast<size_t>(r)] = std::exp(ld(in, base + r * s.inner) - m);
            sum += e[static_cast<size_t>(r)];
          }
          const double log_sum = std::log(sum);
          for (int64_t r = 0; r < s.n; ++r) {
            double v = S == Soft::kSoftmax ? e[static_cast<size_t>(r)] / sum : ld(in, base + r * s.inner) - m - log_sum;
            if (nan) v = std::numeric_limits<double>::quiet_NaN();
            out[base + r * s.inner] = convert<T>(v);
          }
        }
      }
    }
  });
  return ok_status();
}

// --- shared helpers for the normalization ops -------------------------------------

// Checks that input `i` is absent or a vector of `channels` elements.
Status check_channel_vector(const InferContext& ctx, size_t i, const ir::Dim& channels, const char* what) {
  if (!ctx.has_input(i)) return ok_status();
  KILN_RETURN_IF_ERROR(check_dtype(ctx, i, kFloatTypes));
  const ir::SymShape& s = ctx.input_shape(i);
  if (!s.has_rank) return ok_status();
  if (s.rank() != 1)
    return ctx.error("input " + std::to_string(i) + " (" + what + ") must be 1-D, got shape " + s.to_string());
  if (s.dims[0].is_const() && channels.is_const() && s.dims[0].value() != channels.value())
    return ctx.error("input " + std::to_string(i) + " (" + what + ") has " + s.dims[0].to_string() +
                     " elements, the input has " + channels.to_string() + " channels");
  return ok_status();
}

// X of shape [N, C, ...]: rank >= 2.
Status check_nc_input(const InferContext& ctx) {
  KILN_RETURN_IF_ERROR(check_dtype(ctx, 0, kFloatTypes));
  const ir::SymShape& x = ctx.input_shape(0);
  if (x.has_rank && x.rank() < 2)
    return ctx.error("input 0 must have shape [N, C, ...], got " + x.to_string());
  return ok_status();
}

ir::Dim channels_of(const InferContext& ctx) {
  const ir::SymShape& x = ctx.input_shape(0);
  return x.has_rank ? x.dims[1] : ir::Dim();
}

// Mean and 1/sqrt(var + eps) of n values read through `at`, in two passes.
template <typename F>
std::pair<double, double> moments(int64_t n, double eps, F&& at) {
  double sum = 0.0;
  for (int64_t j = 0; j < n; ++j) sum += at(j);
  const double mean = sum / static_cast<double>(n);
  double sq = 0.0;
  for (int64_t j = 0; j < n; ++j) {
    const double d = at(j) - mean;
    sq += d * d;
  }
  return {mean, 1.0 / std::sqrt(sq / static_cast<double>(n) + eps)};
}

// --- LayerNormalization ----------------------------------------------------------

Status layernorm_infer(InferContext& ctx) {
  KILN_RETURN_IF_ERROR(check_dtype(ctx, 0, kFloatTypes));
  KILN_RETURN_IF_ERROR(check_dtype(ctx, 1, kFloatTypes));
  if (ctx.has_input(2)) KILN_RETURN_IF_ERROR(check_dtype(ctx, 2, kFloatTypes));
  const int64_t stash = ctx.node().attr_int("stash_type", 1);
  const DType stat_dtype = dtype_from_onnx(stash);
  if (!dtype_is_float(stat_dtype))
    return ctx.error("attribute 'stash_type' = " + std::to_string(stash) + " is not a supported float dtype");
  const ir::SymShape& x = ctx.input_shape(0);
  ir::SymShape stats = ir::SymShape::unranked();
  if (x.has_rank) {
    int64_t axis = ctx.node().attr_int("axis", -1);
    if (!normalize_axis(axis, x.rank())) return axis_error(ctx, ctx.node().attr_int("axis", -1), x.rank());
    for (size_t i = 1; i < 3; ++i) {
      if (ctx.has_input(i) && !broadcasts_to(ctx.input_shape(i), x))
        return ctx.error("input " + std::to_string(i) + (i == 1 ? " (scale)" : " (bias)") + " of shape " +
                         ctx.input_shape(i).to_string() + " does not broadcast to input 0 of shape " + x.to_string());
    }
    std::vector<ir::Dim> dims = x.dims;
    for (size_t i = static_cast<size_t>(axis); i < dims.size(); ++i) dims[i] = ir::Dim(1);
    stats = ir::SymShape(std::move(dims));
  }
  ctx.set_output(0, ctx.input_dtype(0), x);
  for (size_t i = 1; i < ctx.num_outputs(); ++i) ctx.set_output(i, stat_dtype, stats);
  return ok_status();
}

// A parameter (scale/bias) laid out per normalized row when it only varies
// over the normalized dims (the usual case), else expanded to X's full shape.
struct RowParam {
  std::vector<double> values;
  bool full = false;  // indexed by the flat X index rather than the row offset
  double at(int64_t row, int64_t n, int64_t j) const {
    return values[static_cast<size_t>(full ? row * n + j : j)];
  }
};

StatusOr<RowParam> row_param(const Tensor& t, const Shape& x_shape, int64_t axis) {
  Shape s = t.shape();
  const size_t norm_rank = x_shape.size() - static_cast<size_t>(axis);
  while (s.size() > norm_rank && s.front() == 1) s.erase(s.begin());
  RowParam p;
  if (s.size() <= norm_rank) {
    KILN_ASSIGN_OR_RETURN(Tensor view, t.reshaped(s));
    p.values = expand_as_f64(view, Shape(x_shape.begin() + axis, x_shape.end()));
  } else {
    p.values = expand_as_f64(t, x_shape);
    p.full = true;
  }
  return p;
}

Status layernorm_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  int64_t axis = ctx.node().attr_int("axis", -1);
  normalize_axis(axis, x.rank());
  const double eps = ctx.node().attr_float("epsilon", 1e-5f);
  KILN_ASSIGN_OR_RETURN(RowParam scale, row_param(ctx.input(1), x.shape(), axis));
  RowParam bias;
  if (ctx.has_input(2)) {
    KILN_ASSIGN_OR_RETURN(bias, row_param(ctx.input(2), x.shape(), axis));
  }
  std::vector<Tensor*> outs;
  for (size_t i = 0; i < ctx.num_outputs(); ++i) {
    if (ctx.node().outputs[i] == ir::kNoValue && i > 0) {
      outs.push_back(nullptr);
      continue;
    }
    KILN_ASSIGN_OR_RETURN(Tensor* t, ctx.allocate_output(i));
    outs.push_back(t);
  }
  int64_t rows = 1, n = 1;
  for (int64_t i = 0; i < x.rank(); ++i) (i < axis ? rows : n) *= x.dim(i);
  visit_dtype(x.dtype(), [&]<typename T>() {
    if constexpr (kIsFloat<T>) {
      const T* in = x.data<T>();
      T* out = outs[0]->data<T>();
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t base = r * n;
        const auto [mean, inv] = moments(n, eps, [&](int64_t j) { return ld(in, base + j); });
        for (int64_t j = 0; j < n; ++j) {
          double v = (ld(in, base + j) - mean) * inv * scale.at(r, n, j);
          if (!bias.values.empty()) v += bias.at(r, n, j);
          out[base + j] = convert<T>(v);
        }
        if (outs.size() > 1 && outs[1]) outs[1]->set_f64(r, mean);
        if (outs.size() > 2 && outs[2]) outs[2]->set_f64(r, inv);
      }
    }
  });
  return ok_status();
}

// --- BatchNormalization (inference) -------------------------------------------------

Status batchnorm_infer(InferContext& ctx) {
  if (ctx.node().attr_int("training_mode", 0) != 0)
    return unimplemented(ctx.node().describe() + ": training_mode=1 is not supported (inference only)");
  for (size_t i = 1; i < ctx.num_outputs(); ++i)
    if (ctx.node().outputs[i] != ir::kNoValue)
      return unimplemented(ctx.node().describe() + ": output " + std::to_string(i) +
                           " (running mean/var) exists only in training mode, which is not supported");
  KILN_RETURN_IF_ERROR(check_nc_input(ctx));
  const ir::Dim c = channels_of(ctx);
  const char* names[] = {"", "scale", "B", "input_mean", "input_var"};
  for (size_t i = 1; i < 5; ++i) KILN_RETURN_IF_ERROR(check_channel_vector(ctx, i, c, names[i]));
  ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
  for (size_t i = 1; i < ctx.num_outputs(); ++i) ctx.set_output(i, ctx.input_dtype(0), ir::SymShape({c}));
  return ok_status();
}

Status batchnorm_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const double eps = ctx.node().attr_float("epsilon", 1e-5f);
  const int64_t n = x.dim(0), c = x.dim(1);
  const int64_t spatial = c == 0 ? 0 : x.numel() / std::max<int64_t>(1, n * c);
  // y = x * a + b with a = scale / sqrt(var + eps), b = B - mean * a.
  std::vector<double> a(static_cast<size_t>(c)), b(static_cast<size_t>(c));
  for (int64_t k = 0; k < c; ++k) {
    a[static_cast<size_t>(k)] = ctx.input(1).get_f64(k) / std::sqrt(ctx.input(4).get_f64(k) + eps);
    b[static_cast<size_t>(k)] = ctx.input(2).get_f64(k) - ctx.input(3).get_f64(k) * a[static_cast<size_t>(k)];
  }
  KILN_ASSIGN_OR_RETURN(Tensor* y, ctx.allocate_output(0));
  visit_dtype(x.dtype(), [&]<typename T>() {
    if constexpr (kIsFloat<T>) {
      const T* in = x.data<T>();
      T* out = y->data<T>();
      for (int64_t i = 0; i < n * c; ++i) {
        const double ak = a[static_cast<size_t>(i % c)], bk = b[static_cast<size_t>(i % c)];
        for (int64_t j = i * spatial; j < (i + 1) * spatial; ++j) out[j] = convert<T>(ld(in, j) * ak + bk);
      }
    }
  });
  return ok_status();
}

// --- InstanceNormalization / GroupNormalization -------------------------------------

Status instancenorm_infer(InferContext& ctx) {
  KILN_RETURN_IF_ERROR(check_nc_input(ctx));
  const ir::Dim c = channels_of(ctx);
  KILN_RETURN_IF_ERROR(check_channel_vector(ctx, 1, c, "scale"));
  KILN_RETURN_IF_ERROR(check_channel_vector(ctx, 2, c, "B"));
  ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
  return ok_status();
}

Status groupnorm_infer(InferContext& ctx) {
  KILN_RETURN_IF_ERROR(check_nc_input(ctx));
  const ir::Attribute* g = ctx.node().attr("num_groups");
  if (!g || g->kind != ir::AttrKind::kInt || g->i <= 0) return ctx.error("needs a positive int attribute 'num_groups'");
  const ir::Dim c = channels_of(ctx);
  if (c.is_const() && c.value() % g->i != 0)
    return ctx.error(std::to_string(c.value()) + " channels do not split into num_groups=" + std::to_string(g->i));
  // Opset 18 has per-group scale/bias; opset 21 per-channel. Both are accepted.
  for (size_t i = 1; i < 3; ++i) {
    const ir::SymShape& s = ctx.input_shape(i);
    KILN_RETURN_IF_ERROR(check_dtype(ctx, i, kFloatTypes));
    if (!s.has_rank) continue;
    const bool ok = s.rank() == 1 && (!s.dims[0].is_const() || s.dims[0].value() == g->i ||
                                      (c.is_const() && s.dims[0].value() == c.value()) || !c.is_const());
    if (!ok)
      return ctx.error("input " + std::to_string(i) + (i == 1 ? " (scale)" : " (bias)") + " must have num_groups (" +
                       std::to_string(g->i) + ") or C elements, got shape " + s.to_string());
  }
  ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
  return ok_status();
}

// Normalizes X [N, C, ...] over groups of channels (InstanceNormalization is
// groups == C); scale/bias are per channel or per group.
Status group_normalize(KernelContext& ctx, int64_t groups) {
  const Tensor& x = ctx.input(0);
  const double eps = ctx.node().attr_float("epsilon", 1e-5f);
  const int64_t n = x.dim(0), c = x.dim(1);
  if (groups <= 0 || c % groups != 0)
    return ctx.error(std::to_string(c) + " channels do not split into " + std::to_string(groups) + " groups");
  KILN_ASSIGN_OR_RETURN(Tensor* y, ctx.allocate_output(0));
  if (x.numel() == 0) return ok_status();
  const int64_t spatial = x.numel() / (n * c);
  const Tensor& scale = ctx.input(1);
  const Tensor& bias = ctx.input(2);
  if (scale.numel() != c && scale.numel() != groups)
    return ctx.error("input 1 (scale) has " + std::to_string(scale.numel()) + " elements, expected " + std::to_string(c));
  if (bias.numel() != c && bias.numel() != groups)
    return ctx.error("input 2 (bias) has " + std::to_string(bias.numel()) + " elements, expected " + std::to_string(c));
  const int64_t per_group = c / groups;
  visit_dtype(x.dtype(), [&]<typename T>() {
    if constexpr (kIsFloat<T>) {
      const T* in = x.data<T>();
      T* out = y->data<T>();
      const int64_t len = per_group * spatial;
      for (int64_t i = 0; i < n * groups; ++i) {
        const int64_t base = i * len;
        const auto [mean, inv] = moments(len, eps, [&](int64_t j) { return ld(in, base + j); });
        const int64_t g = i % groups;
        for (int64_t ch = 0; ch < per_group; ++ch) {
          const int64_t k = g * per_group + ch;  // channel index
          const double sk = scale.get_f64(scale.numel() == c ? k : g);
          const double bk = bias.get_f64(bias.numel() == c ? k : g);
          for (int64_t j = 0; j < spatial; ++j) {
            const int64_t at = base + ch * spatial + j;
            out[at] = convert<T>((ld(in, at) - mean) * inv * sk + bk);
          }
        }
      }
    }
  });
  return ok_status();
}

Status instancenorm_kernel(KernelContext& ctx) {
  const int64_t c = ctx.input(0).dim(1);
  return group_normalize(ctx, c == 0 ? 1 : c);
}
Status groupnorm_kernel(KernelContext& ctx) { return group_normalize(ctx, ctx.node().attr_int("num_groups", 1)); }

// --- LpNormalization ---------------------------------------------------------------

Status lpnorm_infer(InferContext& ctx) {
  KILN_RETURN_IF_ERROR(check_dtype(ctx, 0, kFloatTypes));
  const int64_t p = ctx.node().attr_int("p", 2);
  if (p != 1 && p != 2) return ctx.error("attribute 'p' must be 1 or 2, got " + std::to_string(p));
  const ir::SymShape& in = ctx.input_shape(0);
  if (in.has_rank) {
    int64_t axis = ctx.node().attr_int("axis", -1);
    if (!normalize_axis(axis, in.rank())) return axis_error(ctx, ctx.node().attr_int("axis", -1), in.rank());
  }
  ctx.set_output(0, ctx.input_dtype(0), in);
  return ok_status();
}

Status lpnorm_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  int64_t axis = ctx.node().attr_int("axis", -1);
  normalize_axis(axis, x.rank());
  const bool l1 = ctx.node().attr_int("p", 2) == 1;
  KILN_ASSIGN_OR_RETURN(Tensor* y, ctx.allocate_output(0));
  const AxisSplit s = split_at_axis(x.shape(), axis);
  visit_dtype(x.dtype(), [&]<typename T>() {
    if constexpr (kIsFloat<T>) {
      const T* in = x.data<T>();
      T* out = y->data<T>();
      for (int64_t o = 0; o < s.outer; ++o) {
        for (int64_t i = 0; i < s.inner; ++i) {
          const int64_t base = o * s.n * s.inner + i;
          double norm = 0.0;
          for (int64_t r = 0; r < s.n; ++r) {
            const double v = ld(in, base + r * s.inner);
            norm += l1 ? std::abs(v) : v * v;
          }
          if (!l1) norm = std::sqrt(norm);
          // A zero vector stays zero rather than becoming 0/0 = NaN.
          const double scale = norm == 0.0 ? 0.0 : 1.0 / norm;
          for (int64_t r = 0; r < s.n; ++r)
            out[base + r * s.inner] = convert<T>(ld(in, base + r * s.inner) * scale);
        }
      }
    }
  });
  return ok_status();
}

}  // namespace

void register_normalization_ops(OpRegistry& r) {
  add_op(r, OpSchema{"Softmax", "", 1, 1, 1, 1, &softmax_infer, &softmax_kernel<Soft::kSoftmax>}, MappingType::kManyToMany);
  add_op(r, OpSchema{"LogSoftmax", "", 1, 1, 1, 1, &softmax_infer, &softmax_kernel<Soft::kLogSoftmax>}, MappingType::kManyToMany);
  add_op(r, OpSchema{"Hardmax", "", 1, 1, 1, 1, &softmax_infer, &softmax_kernel<Soft::kHardmax>}, MappingType::kManyToMany);
  add_op(r, OpSchema{"LayerNormalization", "", 2, 3, 1, 3, &layernorm_infer, &layernorm_kernel}, MappingType::kManyToMany);
  add_op(r, OpSchema{"BatchNormalization", "", 5, 5, 1, 3, &batchnorm_infer, &batchnorm_kernel}, MappingType::kManyToMany);
  add_op(r, OpSchema{"InstanceNormalization", "", 3, 3, 1, 1, &instancenorm_infer, &instancenorm_kernel}, MappingType::kManyToMany);
  add_op(r, OpSchema{"GroupNormalization", "", 3, 3, 1, 1, &groupnorm_infer, &groupnorm_kernel}, MappingType::kManyToMany);
  add_op(r, OpSchema{"LpNormalization", "", 1, 1, 1, 1, &lpnorm_infer, &lpnorm_kernel}, MappingType::kManyToMany);
}

}  // namespace kiln::ops::detail
