// Op family 'reduction': Reduce* (axes as input 1, opset 18), ArgMax/ArgMin,
// CumSum and TopK; register_reduction_ops also adds the softmax and
// normalization ops from normalization.cc.
//
// Float reductions accumulate in double and round once; integer ones
// accumulate in 64 bits with wrap-around. A reduction over an empty set
// gives the op's identity (0 for sums, 1 for Prod, -inf/lowest for Max,
// +inf/highest for Min, NaN for a float Mean, 0 for an integer Mean).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "engine/ops/elementwise_common.h"
#include "engine/ops/op_registry.h"

namespace kiln::ops {
namespace detail {
void register_normalization_ops(OpRegistry& r);  // normalization.cc
}  // namespace detail

namespace {

using detail::AxisSplit;
using detail::convert;
using detail::kIsFloat;
using detail::kIsInt;
using detail::kNumeric;
using detail::load;

// --- axes -------------------------------------------------------------------

// Which dims a Reduce* node reduces, from the raw axes list (nullopt if not
// known during symbolic inference). `noop` is set when the node is an
// identity (empty axes with noop_with_empty_axes=1).
StatusOr<std::vector<bool>> resolve_axes(const ir::Node& node, const std::vector<int64_t>& axes, int64_t rank,
                                         bool& noop) {
  noop = false;
  std::vector<bool> mask(static_cast<size_t>(rank), false);
  if (axes.empty()) {
    if (node.attr_int("noop_with_empty_axes", 0) != 0) noop = true;
    else std::fill(mask.begin(), mask.end(), true);
    return mask;
  }
  for (int64_t a : axes) {
    int64_t axis = a;
    if (!detail::normalize_axis(axis, rank))
      return invalid_argument(node.describe() + ": axis " + std::to_string(a) + " is out of range for an input of rank " +
                              std::to_string(rank));
    if (mask[static_cast<size_t>(axis)])
      return invalid_argument(node.describe() + ": axis " + std::to_string(a) + " is repeated in axes");
    mask[static_cast<size_t>(axis)] = true;
  }
  return mask;
}

// The axes list at inference time: input 1, else the pre-opset-18 'axes'
// attribute, else empty. nullopt when input 1 exists but is not known.
std::optional<std::vector<int64_t>> infer_axes_list(const InferContext& ctx) {
  if (ctx.has_input(1)) {
    auto dims = ctx.input_as_dims(1);
    if (!dims) return std::nullopt;
    std::vector<int64_t> axes;
    for (const ir::Dim& d : *dims) {
      if (!d.is_const()) return std::nullopt;
      axes.push_back(d.value());
    }
    return axes;
  }
  return ctx.node().attr_ints("axes");
}

std::vector<int64_t> kernel_axes_list(const KernelContext& ctx) {
  if (ctx.has_input(1)) return ctx.input(1).to_i64_vector();
  return ctx.node().attr_ints("axes");
}

// --- Reduce* -------------------------------------------------------------------

enum class Red { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSumExp, kSumSquare };

Status reduce_infer(InferContext& ctx) {
  KILN_RETURN_IF_ERROR(detail::check_dtype(ctx, 0, kNumeric));
  if (ctx.has_input(1) && !dtype_is_integer(ctx.input_dtype(1)))
    return ctx.error("input 1 (axes) must be an integer tensor, got " + std::string(dtype_name(ctx.input_dtype(1))));
  const bool keepdims = ctx.node().attr_int("keepdims", 1) != 0;
  const ir::SymShape& in = ctx.input_shape(0);
  const DType dtype = ctx.input_dtype(0);
  auto axes = infer_axes_list(ctx);
  if (!in.has_rank) {
    ctx.set_output(0, dtype, ir::SymShape::unranked());
    return ok_status();
  }
  if (!axes) {
    // Which dims go is unknown; with keepdims the rank survives and dims
    // that are already 1 stay 1.
    if (!keepdims) {
      // Axes are distinct (resolve_axes rejects repeats), so n of them
      // remove n dims; which ones is unknown.
      const ir::SymShape& axes_shape = ctx.input_shape(1);
      const bool n_known = axes_shape.has_rank && axes_shape.rank() == 1 && axes_shape.dims[0].is_const() &&
                           axes_shape.dims[0].value() >= 1 && axes_shape.dims[0].value() <= in.rank();
      ctx.set_output(0, dtype,
                     n_known ? ir::SymShape(std::vector<ir::Dim>(static_cast<size_t>(in.rank() - axes_shape.dims[0].value())))
                             : ir::SymShape::unranked());
      return ok_status();
    }
    std::vector<ir::Dim> dims;
    for (const ir::Dim& d : in.dims) dims.push_back(d.is_const() && d.value() == 1 ? d : ir::Dim());
    ctx.set_output(0, dtype, ir::SymShape(std::move(dims)));
    return ok_status();
  }
  bool noop = false;
  KILN_ASSIGN_OR_RETURN(std::vector<bool> mask, resolve_axes(ctx.node(), *axes, in.rank(), noop));
  if (noop) {
    ctx.set_output(0, dtype, in);
    return ok_status();
  }
  std::vector<ir::Dim> dims;
  for (size_t i = 0; i < mask.size(); ++i) {
    if (!mask[i]) dims.push_back(in.dims[i]);
    else if (keepdims) dims.emplace_back(1);
  }
  ctx.set_output(0, dtype, ir::SymShape(std::move(dims)));
  return ok_status();
}

// Calls f(out_index, in_index) for every input element, where out_index is
// the flat index of the element it reduces into (in the keepdims layout).
// Contiguous reduced axes (the common case: last axis, spatial dims) run as
// an [outer, reduced, inner] loop nest; other patterns use BroadcastIndexer.
template <typename F>
void for_each_reduce(const Shape& shape, const std::vector<bool>& mask, F&& f) {
  // Size-1 dims do not matter; look for one run of reduced dims among the rest.
  std::vector<std::pair<int64_t, bool>> dims;
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] != 1) dims.emplace_back(shape[i], mask[i]);
  size_t begin = 0;
  while (begin < dims.size() && !dims[begin].second) ++begin;
  size_t end = begin;
  while (end < dims.size() && dims[end].second) ++end;
  bool contiguous = true;
  for (size_t j = end; j < dims.size(); ++j) contiguous &= !dims[j].second;
  if (contiguous) {
    int64_t outer = 1, red = 1, inner = 1;
    for (size_t j = 0; j < dims.size(); ++j) (j < begin ? outer : j < end ? red : inner) *= dims[j].first;
    int64_t in = 0;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t r = 0; r < red; ++r)
        for (int64_t i = 0; i < inner; ++i) f(o * inner + i, in++);
    return;
  }
  Shape kept = shape;
  for (size_t i = 0; i < shape.size(); ++i)
    if (mask[i]) kept[i] = 1;
  BroadcastIndexer idx(kept, shape);
  const int64_t n = shape_numel(shape);
  for (int64_t i = 0; i < n; ++i, idx.next()) f(idx.index(), i);
}

template <Red R, typename A>
A reduce_init() {
  if constexpr (R == Red::kProd) return A(1);
  else if constexpr (R == Red::kMax) return std::is_floating_point_v<A> ? -std::numeric_limits<A>::infinity()
                                                                      : std::numeric_limits<A>::lowest();
  else if constexpr (R == Red::kMin) return std::is_floating_point_v<A> ? std::numeric_limits<A>::infinity()
                                                                      : std::numeric_limits<A>::max();
  else if constexpr (R == Red::kLogSumExp) return -std::numeric_limits<A>::infinity();  // pass 1 is a max
  else return A(0);
}

template <typename A>
A add_a(A a, A b) {
  if constexpr (kIsInt<A>) return detail::wrap_add(a, b);
  else return a + b;
}
template <typename A>
A mul_a(A a, A b) {
  if constexpr (kIsInt<A>) return detail::wrap_mul(a, b);
  else return a * b;
}

template <Red R, typename A>
A reduce_step(A acc, A v) {
  if constexpr (R == Red::kSum || R == Red::kMean) {
    return add_a(acc, v);
  } else if constexpr (R == Red::kProd) {
    return mul_a(acc, v);
  } else if constexpr (R == Red::kL1) {
    if constexpr (std::is_unsigned_v<A>) return add_a(acc, v);
    else if constexpr (std::is_floating_point_v<A>) return acc + std::abs(v);
    else return add_a(acc, v < A(0) ? detail::wrap_sub(A(0), v) : v);
  } else if constexpr (R == Red::kL2 || R == Red::kSumSquare) {
    return add_a(acc, mul_a(v, v));
  } else if constexpr (R == Red::kMax || R == Red::kLogSumExp) {
    if constexpr (std::is_floating_point_v<A>) {
      if (std::isnan(v) || std::isnan(acc)) return std::numeric_limits<A>::quiet_NaN();
    }
    return v > acc ? v : acc;
  } else {
    if constexpr (std::is_floating_point_v<A>) {
      if (std::isnan(v) || std::isnan(acc)) return std::numeric_limits<A>::quiet_NaN();
    }
    return v < acc ? v : acc;
  }
}

template <Red R>
Status reduce_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  KILN_ASSIGN_OR_RETURN(Tensor* y, ctx.allocate_output(0));
  bool noop = false;
  KILN_ASSIGN_OR_RETURN(std::vector<bool> mask, resolve_axes(ctx.node(), kernel_axes_list(ctx), x.rank(), noop));
  if (noop) {
    if (x.nbytes()) std::memcpy(y->raw_data(), x.raw_data(), x.nbytes());
    return ok_status();
  }
  int64_t count = 1;
  for (size_t i = 0; i < mask.size(); ++i)
    if (mask[i]) count *= x.shape()[i];
  const size_t out_n = static_cast<size_t>(y->numel());
  visit_dtype(x.dtype(), [&]<typename T>() {
    if constexpr (detail::type_in<T>(kNumeric)) {
      // Max/Min stay in T for ints; sums and products widen to 64 bits.
      using IntAcc = std::conditional_t<R == Red::kMax || R == Red::kMin, T,
                                        std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;
      using A = std::conditional_t<kIsFloat<T> || R == Red::kLogSumExp, double, IntAcc>;
      const T* in = x.data<T>();
      std::vector<A> acc(out_n, reduce_init<R, A>());
      for_each_reduce(x.shape(), mask, [&](int64_t o, int64_t i) {
        acc[static_cast<size_t>(o)] = reduce_step<R>(acc[static_cast<size_t>(o)], static_cast<A>(load(in[i])));
      });
      T* out = y->data<T>();
      if constexpr (R == Red::kLogSumExp) {
        // Pass 2: sum of exp(x - max), so large inputs do not overflow.
        std::vector<double> sum(out_n, 0.0);
        for_each_reduce(x.shape(), mask, [&](int64_t o, int64_t i) {
          const double m = acc[static_cast<size_t>(o)];
          if (std::isfinite(m)) sum[static_cast<size_t>(o)] += std::exp(static_cast<double>(load(in[i])) - m);
        });
        for (size_t o = 0; o < out_n; ++o) {
          const double m = acc[o];
          out[o] = convert<T>(std::isfinite(m) ? m + std::log(sum[o]) : m);
        }
      } else {
        for (size_t o = 0; o < out_n; ++o) {
          if constexpr (R == Red::kMean) {
            if constexpr (kIsFloat<T>) out[o] = convert<T>(acc[o] / static_cast<double>(count));
            else out[o] = count == 0 ? T(0) : static_cast<T>(acc[o] / static_cast<A>(count));
          } else if constexpr (R == Red::kL2) {
            out[o] = convert<T>(std::sqrt(static_cast<double>(acc[o])));
          } else {
            out[o] = convert<T>(acc[o]);
          }
        }
      }
    }
  });
  return ok_status();
}

// --- ArgMax / ArgMin -------------------------------------------------------------

Status arg_infer(InferContext& ctx) {
  KILN_RETURN_IF_ERROR(detail::check_dtype(ctx, 0, kNumeric));
  const ir::SymShape& in = ctx.input_shape(0);
  if (!in.has_rank) {
    ctx.set_output(0, DType::kInt64, ir::SymShape::unranked());
    return ok_status();
  }
  int64_t axis = ctx.node().attr_int("axis", 0);
  if (!detail::normalize_axis(axis, in.rank()))
    return ctx.error("axis " + std::to_string(ctx.node().attr_int("axis", 0)) + " is out of range for an input of rank " +
                     std::to_string(in.rank()));
  const ir::Dim& d = in.dims[static_cast<size_t>(axis)];
  if (d.is_const() && d.value() == 0) return ctx.error("cannot take " + ctx.node().op + " over an empty axis");
  std::vector<ir::Dim> dims = in.dims;
  if (ctx.node().attr_int("keepdims", 1) != 0) dims[static_cast<size_t>(axis)] = ir::Dim(1);
  else dims.erase(dims.begin() + axis);
  ctx.set_output(0, DType::kInt64, ir::SymShape(std::move(dims)));
  return ok_status();
}

// NaN counts as the extreme value (numpy's argmax/argmin), first one wins.
template <bool kMax, typename C>
bool arg_better(C v, C best) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(best)) return false;
    if (std::isnan(v)) return true;
  }
  return kMax ? v > best : v < best;
}
template <typename C>
bool arg_equal(C v, C best) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(v) && std::isnan(best)) return true;
  }
  return v == best;
}

template <bool kMax>
Status arg_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  int64_t axis = ctx.node().attr_int("axis", 0);
  detail::normalize_axis(axis, x.rank());
  const bool last = ctx.node().attr_int("select_last_index", 0) != 0;
  KILN_ASSIGN_OR_RETURN(Tensor* y, ctx.allocate_output(0));
  const AxisSplit s = detail::split_at_axis(x.shape(), axis);
  if (s.n == 0) return ctx.error("cannot take " + ctx.node().op + " over an empty axis");
  int64_t* out = y->data<int64_t>();
  visit_dtype(x.dtype(), [&]<typename T>() {
    if constexpr (detail::type_in<T>(kNumeric)) {
      const T* in = x.data<T>();
      for (int64_t o = 0; o < s.outer; ++o) {
        for (int64_t i = 0; i < s.inner; ++i) {
          const T* p = in + o * s.n * s.inner + i;
          auto best = load(p[0]);
          int64_t best_index = 0;
          for (int64_t r = 1; r < s.n; ++r) {
            const auto v = load(p[r * s.inner]);
            if (arg_better<kMax>(v, best) || (last && arg_equal(v, best))) {
              best = v;
              best_index = r;
            }
          }
          out[o * s.inner + i] = best_index;
        }
      }
    }
  });
  return ok_status();
}

// --- CumSum -------------------------------------------------------------------

Status cumsum_infer(InferContext& ctx) {
  KILN_RETURN_IF_ERROR(detail::check_dtype(ctx, 0, kNumeric));
  if (!dtype_is_integer(ctx.input_dtype(1)))
    return ctx.error("input 1 (axis) must be an integer tensor, got " + std::string(dtype_name(ctx.input_dtype(1))));
  const ir::SymShape& in = ctx.input_shape(0);
  if (auto axis = ctx.input_as_dims(1); axis && in.has_rank) {
    if (axis->size() != 1) return ctx.error("input 1 (axis) must hold one value, got " + std::to_string(axis->size()));
    if ((*axis)[0].is_const()) {
      int64_t a = (*axis)[0].value();
      if (!detail::normalize_axis(a, in.rank()))
        return ctx.error("axis " + std::to_string((*axis)[0].value()) + " is out of range for an input of rank " +
                         std::to_string(in.rank()));
    }
  }
  ctx.set_output(0, ctx.input_dtype(0), in);
  return ok_status();
}

Status cumsum_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& axis_t = ctx.input(1);
  if (axis_t.numel() != 1) return ctx.error("input 1 (axis) must hold one value");
  int64_t axis = axis_t.get_i64(0);
  if (!detail::normalize_axis(axis, x.rank()))
    return ctx.error("axis " + std::to_string(axis_t.get_i64(0)) + " is out of range for an input of rank " +
                     std::to_string(x.rank()));
  const bool exclusive = ctx.node().attr_int("exclusive", 0) != 0;
  const bool reverse = ctx.node().attr_int("reverse", 0) != 0;
  KILN_ASSIGN_OR_RETURN(Tensor* y, ctx.allocate_output(0));
  const AxisSplit s = detail::split_at_axis(x.shape(), axis);
  visit_dtype(x.dtype(), [&]<typename T>() {
    if constexpr (detail::type_in<T>(kNumeric)) {
      using A = std::conditional_t<kIsFloat<T>, double, T>;
      const T* in = x.data<T>();
      T* out = y->data<T>();
      for (int64_t o = 0; o < s.outer; ++o) {
        for (int64_t i = 0; i < s.inner; ++i) {
          A acc = A(0);
          for (int64_t k = 0; k < s.n; ++k) {
            const int64_t r = reverse ? s.n - 1 - k : k;
            const int64_t at = (o * s.n + r) * s.inner + i;
            const A v = static_cast<A>(load(in[at]));
            if (!exclusive) acc = add_a(acc, v);
            out[at] = convert<T>(acc);
            if (exclusive) acc = add_a(acc, v);
          }
        }
      }
    }
  });
  return ok_status();
}

// --- TopK -------------------------------------------------------------------

Status topk_infer(InferContext& ctx) {
  KILN_RETURN_IF_ERROR(detail::check_dtype(ctx, 0, kNumeric));
  if (ctx.input_dtype(1) != DType::kInt64)
    return ctx.error("input 1 (K) must be int64, got " + std::string(dtype_name(ctx.input_dtype(1))));
  const ir::SymShape& in = ctx.input_shape(0);
  if (!in.has_rank) {
    ctx.set_output(0, ctx.input_dtype(0), ir::SymShape::unranked());
    ctx.set_output(1, DType::kInt64, ir::SymShape::unranked());
    return ok_status();
  }
  int64_t axis = ctx.node().attr_int("axis", -1);
  if (!detail::normalize_axis(axis, in.rank()))
    return ctx.error("axis " + std::to_string(ctx.node().attr_int("axis", -1)) + " is out of range for an input of rank " +
                     std::to_string(in.rank()));
  ir::Dim k;
  if (auto kd = ctx.input_as_dims(1)) {
    if (kd->size() != 1) return ctx.error("input 1 (K) must hold one value, got " + std::to_string(kd->size()));
    k = (*kd)[0];
    const ir::Dim& n = in.dims[static_cast<size_t>(axis)];
    if (k.is_const() && (k.value() < 0 || (n.is_const() && k.value() > n.value())))
      return ctx.error("K = " + std::to_string(k.value()) + " is out of range for axis " + std::to_string(axis) +
                       " of size " + n.to_string());
  }
  std::vector<ir::Dim> dims = in.dims;
  dims[static_cast<size_t>(axis)] = k;
  ctx.set_output(0, ctx.input_dtype(0), ir::SymShape(dims));
  ctx.set_output(1, DType::kInt64, ir::SymShape(std::move(dims)));
  return ok_status();
}

Status topk_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  int64_t axis = ctx.node().attr_int("axis", -1);
  detail::normalize_axis(axis, x.rank());
  const bool largest = ctx.node().attr_int("largest", 1) != 0;
  const AxisSplit s = detail::split_at_axis(x.shape(), axis);
  const int64_t k = ctx.input(1).numel() == 1 ? ctx.input(1).get_i64(0) : -1;
  if (k < 0 || k > s.n) return ctx.error("K must be one value in [0, " + std::to_string(s.n) + "]");
  KILN_ASSIGN_OR_RETURN(Tensor* values, ctx.allocate_output(0));
  KILN_ASSIGN_OR_RETURN(Tensor* indices, ctx.allocate_output(1));
  visit_dtype(x.dtype(), [&]<typename T>() {
    if constexpr (detail::type_in<T>(kNumeric)) {
      using C = detail::compute_t<T>;
      const T* in = x.data<T>();
      T* vo = values->data<T>();
      int64_t* io = indices->data<int64_t>();
      std::vector<int64_t> order(static_cast<size_t>(s.n));
      for (int64_t o = 0; o < s.outer; ++o) {
        for (int64_t i = 0; i < s.inner; ++i) {
          const T* p = in + o * s.n * s.inner + i;
          auto at = [&](int64_t r) { return load(p[r * s.inner]); };
          // A strict weak order: NaN above everything, ties by lower index.
          auto before = [&](int64_t a, int64_t b) {
            const C va = at(a), vb = at(b);
            bool a_nan = false, b_nan = false;
            if constexpr (std::is_floating_point_v<C>) {
              a_nan = std::isnan(va);
              b_nan = std::isnan(vb);
            }
            if (a_nan || b_nan) {
              if (a_nan && b_nan) return a < b;
              return largest ? a_nan : b_nan;
            }
            if (va != vb) return largest ? va > vb : va < vb;
            return a < b;
          };
          std::iota(order.begin(), order.end(), int64_t{0});
          std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
          for (int64_t j = 0; j < k; ++j) {
            const int64_t dst = (o * k + j) * s.inner + i;
            vo[dst] = p[order[static_cast<size_t>(j)] * s.inner];
            io[dst] = order[static_cast<size_t>(j)];
          }
        }
      }
    }
  });
  return ok_status();
}

template <Red R>
void add_reduce(OpRegistry& r, const char* name) {
  detail::add_op(r, OpSchema{name, "", 1, 2, 1, 1, &reduce_infer, &reduce_kernel<R>, {1}}, MappingType::kManyToMany);
}

}  // namespace

void register_reduction_ops(OpRegistry& r) {
  add_reduce<Red::kSum>(r, "ReduceSum");
  add_reduce<Red::kMean>(r, "ReduceMean");
  add_reduce<Red::kMax>(r, "ReduceMax");
  add_reduce<Red::kMin>(r, "ReduceMin");
  add_reduce<Red::kProd>(r, "ReduceProd");
  add_reduce<Red::kL1>(r, "ReduceL1");
  add_reduce<Red::kL2>(r, "ReduceL2");
  add_reduce<Red::kLogSumExp>(r, "ReduceLogSumExp");
  add_reduce<Red::kSumSquare>(r, "ReduceSumSquare");
  detail::add_op(r, OpSchema{"ArgMax", "", 1, 1, 1, 1, &arg_infer, &arg_kernel<true>}, MappingType::kManyToMany);
  detail::add_op(r, OpSchema{"ArgMin", "", 1, 1, 1, 1, &arg_infer, &arg_kernel<false>}, MappingType::kManyToMany);
  detail::add_op(r, OpSchema{"CumSum", "", 2, 2, 1, 1, &cumsum_infer, &cumsum_kernel, {1}}, MappingType::kManyToMany);
  detail::add_op(r, OpSchema{"TopK", "", 2, 2, 2, 2, &topk_infer, &topk_kernel, {1}}, MappingType::kManyToMany);
  detail::register_normalization_ops(r);
}

}  // namespace kiln::ops
