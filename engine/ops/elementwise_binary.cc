// Elementwise ops with more than one input and numpy broadcasting: arithmetic,
// comparisons, logic, BitShift, Pow, the variadic Sum/Mean/Max/Min, Where and
// PRelu. Same-shape inputs run a flat loop; broadcasting runs contiguous rows
// (detail::for_each_broadcast_row).
//
// Integer semantics are defined everywhere C++ would leave them undefined:
// arithmetic wraps (two's complement), Div truncates toward zero, INT_MIN/-1
// wraps to INT_MIN, and an integer division by zero is an error.
#include <cmath>
#include <limits>

#include "engine/ops/elementwise_common.h"
#include "engine/ops/op_registry.h"

namespace kiln::ops::detail {
namespace {

using DimsFn = ir::Dim (*)(const ir::Dim&, const ir::Dim&);

ir::Dim dims_add(const ir::Dim& a, const ir::Dim& b) { return a + b; }
ir::Dim dims_sub(const ir::Dim& a, const ir::Dim& b) { return a - b; }
ir::Dim dims_mul(const ir::Dim& a, const ir::Dim& b) { return a * b; }
ir::Dim dims_div(const ir::Dim& a, const ir::Dim& b) {
  if (a.is_const() && b.is_const()) {
    // Constants follow the kernel exactly (truncation), so -1 in a shape
    // tensor divides like it will at run time.
    if (b.value() == 0 || (a.value() == std::numeric_limits<int64_t>::min() && b.value() == -1)) return ir::Dim();
    return ir::Dim(a.value() / b.value());
  }
  // Symbolic dims are sizes, non-negative, where truncation is floor.
  return ir::Dim::floor_div(a, b);
}

struct Plain2 {
  explicit Plain2(const ir::Node&) {}
  static std::string validate(const ir::Node&, DType) { return {}; }
  static constexpr bool kBoolOut = false;
  static constexpr bool kNonZeroDivisor = false;
  static constexpr DimsFn kDims = nullptr;
};

struct Add : Plain2 {
  using Plain2::Plain2;
  static constexpr const char* kName = "Add";
  static constexpr unsigned kTypes = kNumeric;
  static constexpr DimsFn kDims = &dims_add;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (kIsInt<C>) return wrap_add(a, b);
    else return a + b;
  }
};

struct Sub : Plain2 {
  using Plain2::Plain2;
  static constexpr const char* kName = "Sub";
  static constexpr unsigned kTypes = kNumeric;
  static constexpr DimsFn kDims = &dims_sub;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (kIsInt<C>) return wrap_sub(a, b);
    else return a - b;
  }
};

struct Mul : Plain2 {
  using Plain2::Plain2;
  static constexpr const char* kName = "Mul";
  static constexpr unsigned kTypes = kNumeric;
  static constexpr DimsFn kDims = &dims_mul;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (kIsInt<C>) return wrap_mul(a, b);
    else return a * b;
  }
};

struct Div : Plain2 {
  using Plain2::Plain2;
  static constexpr const char* kName = "Div";
  static constexpr unsigned kTypes = kNumeric;
  static constexpr bool kNonZeroDivisor = true;
  static constexpr DimsFn kDims = &dims_div;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (kIsInt<C> && std::is_signed_v<C>) {
      if (b == C(-1)) return wrap_sub(C(0), a);
    }
    return static_cast<C>(a / b);
  }
};

struct Mod : Plain2 {
  static constexpr const char* kName = "Mod";
  static constexpr unsigned kTypes = kNumeric;
  static constexpr bool kNonZeroDivisor = true;
  explicit Mod(const ir::Node& n) : Plain2(n), fmod(n.attr_int("fmod", 0) != 0) {}
  static std::string validate(const ir::Node& n, DType t) {
    const int64_t f = n.attr_int("fmod", 0);
    if (f != 0 && f != 1) return "attribute 'fmod' must be 0 or 1, got " + std::to_string(f);
    if (f == 0 && dtype_is_float(t)) return "floating-point inputs need attribute fmod=1";
    return {};
  }
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (kIsFloat<C>) {
      return std::fmod(a, b);
    } else if constexpr (std::is_unsigned_v<C>) {
      return static_cast<C>(a % b);
    } else {
      if (b == C(-1)) return C(0);
      C r = static_cast<C>(a % b);
      // Python's mod takes the divisor's sign.
      if (!fmod && r != 0 && ((r < 0) != (b < 0))) r = static_cast<C>(r + b);
      return r;
    }
  }
  bool fmod;
};

#define KILN_COMPARE_(Name, Types, expr)           \
  struct Name : Plain2 {                           \
    using Plain2::Plain2;                          \
    static constexpr const char* kName = #Name;    \
    static constexpr unsigned kTypes = Types;      \
    static constexpr bool kBoolOut = true;         \
    template <typename C>                          \
    bool operator()(C a, C b) const { return expr; } \
  };
KILN_COMPARE_(Equal, kAllTypes, a == b)
KILN_COMPARE_(Greater, kNumeric, a > b)
KILN_COMPARE_(Less, kNumeric, a < b)
KILN_COMPARE_(GreaterOrEqual, kNumeric, a >= b)
KILN_COMPARE_(LessOrEqual, kNumeric, a <= b)
#undef KILN_COMPARE_

#define KILN_LOGIC_(Name, expr)                 \
  struct Name : Plain2 {                        \
    using Plain2::Plain2;                       \
    static constexpr const char* kName = #Name; \
    static constexpr unsigned kTypes = kBoolType; \
    bool operator()(bool a, bool b) const { return expr; } \
  };
KILN_LOGIC_(And, a && b)
KILN_LOGIC_(Or, a || b)
KILN_LOGIC_(Xor, a != b)
#undef KILN_LOGIC_

struct BitShift : Plain2 {
  static constexpr const char* kName = "BitShift";
  static constexpr unsigned kTypes = kUnsignedInts;
  explicit BitShift(const ir::Node& n) : Plain2(n), left(n.attr_string("direction", "") == "LEFT") {}
  static std::string validate(const ir::Node& n, DType) {
    const std::string d = n.attr_string("direction", "");
    return d == "LEFT" || d == "RIGHT" ? "" : "attribute 'direction' must be \"LEFT\" or \"RIGHT\", got \"" + d + "\"";
  }
  template <typename C>
  C operator()(C a, C b) const {
    // Shifting by the width or more is UB in C++; every bit shifts out.
    if (b >= C(std::numeric_limits<C>::digits)) return C(0);
    return static_cast<C>(left ? a << b : a >> b);
  }
  bool left;
};

// --- generic binary inference and kernel --------------------------------------

Status broadcast_error(const InferContext& ctx, const ir::SymShape& a, const ir::SymShape& b) {
  return ctx.error("cannot broadcast input shapes " + a.to_string() + " and " + b.to_string());
}

// Small int tensors known as dims (shape arithmetic) stay known as dims.
void propagate_dims(InferContext& ctx, DimsFn fn) {
  auto a = small_input_dims(ctx, 0), b = small_input_dims(ctx, 1);
  if (!a || !b) return;
  const size_t n = std::max(a->size(), b->size());
  if ((a->size() != n && a->size() != 1) || (b->size() != n && b->size() != 1)) return;
  std::vector<ir::Dim> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = fn((*a)[a->size() == 1 ? 0 : i], (*b)[b->size() == 1 ? 0 : i]);
  ctx.set_output_dims_value(0, std::move(out));
}

template <typename Op>
Status binary_infer(InferContext& ctx) {
  KILN_RETURN_IF_ERROR(check_dtype(ctx, 0, Op::kTypes));
  KILN_RETURN_IF_ERROR(check_same_dtype(ctx, 0, 1));
  if (std::string e = Op::validate(ctx.node(), ctx.input_dtype(0)); !e.empty()) return ctx.error(e);
  auto shape = broadcast_shapes(ctx.input_shape(0), ctx.input_shape(1));
  if (!shape.ok()) return broadcast_error(ctx, ctx.input_shape(0), ctx.input_shape(1));
  ctx.set_output(0, Op::kBoolOut ? DType::kBool : ctx.input_dtype(0), std::move(shape).value());
  if constexpr (Op::kDims != nullptr) {
    if (dtype_is_integer(ctx.input_dtype(0))) propagate_dims(ctx, Op::kDims);
  }
  return ok_status();
}

// out = op(a, b) with broadcasting; false if op does not take a's dtype.
template <typename Op>
bool run_binary(const Op& op, const Tensor& a, const Tensor& b, Tensor& out) {
  bool done = false;
  visit_dtype(a.dtype(), [&]<typename T>() {
    if constexpr (type_in<T>(Op::kTypes)) {
      using O = std::conditional_t<Op::kBoolOut, bool, T>;
      if constexpr (std::is_same_v<T, Half>) {
        broadcast_binary<T, T, O>(a, b, out, [&](Half x, Half y) {
          return convert<O>(op(static_cast<float>(x), static_cast<float>(y)));
        });
      } else {
        broadcast_binary<T, T, O>(a, b, out, [&](T x, T y) -> O { return op(x, y); });
      }
      done = true;
    }
  });
  return done;
}

Status check_nonzero_divisor(const KernelContext& ctx, const Tensor& divisor) {
  if (!dtype_is_integer(divisor.dtype())) return ok_status();
  bool zero = false;
  visit_dtype(divisor.dtype(), [&]<typename T>() {
    if constexpr (kIsInt<T>) {
      for (T v : divisor.span<T>()) zero |= v == T(0);
    }
  });
  if (zero) return ctx.error("integer division by zero: input 1 (the divisor) contains 0");
  return ok_status();
}

template <typename Op>
Status binary_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if constexpr (Op::kNonZeroDivisor) KILN_RETURN_IF_ERROR(check_nonzero_divisor(ctx, b));
  KILN_ASSIGN_OR_RETURN(Tensor* out, ctx.allocate_output(0));
  if (!run_binary(Op(ctx.node()), a, b, *out))
    return ctx.error("unsupported input dtype " + std::string(dtype_name(a.dtype())));
  return ok_status();
}

template <typename Op>
void add_binary(OpRegistry& r) {
  add_op(r, OpSchema{Op::kName, "", 2, 2, 1, 1, &binary_infer<Op>, &binary_kernel<Op>}, MappingType::kOneToOne);
}

// --- Pow ----------------------------------------------------------------------
// Base and exponent dtypes may differ; the result has the base's dtype.

Status pow_infer(InferContext& ctx) {
  KILN_RETURN_IF_ERROR(check_dtype(ctx, 0, kNumeric));
  KILN_RETURN_IF_ERROR(check_dtype(ctx, 1, kNumeric));
  auto shape = broadcast_shapes(ctx.input_shape(0), ctx.input_shape(1));
  if (!shape.ok()) return broadcast_error(ctx, ctx.input_shape(0), ctx.input_shape(1));
  ctx.set_output(0, ctx.input_dtype(0), std::move(shape).value());
  return ok_status();
}

// Exact integer power with wrap-around; negative exponents truncate 1/a^-e
// toward zero like the real-valued result would.
template <typename T>
T int_pow(T base, int64_t e) {
  if (e < 0) {
    if (base == T(1)) return T(1);
    if constexpr (std::is_signed_v<T>) {
      if (base == T(-1)) return (e % 2 == 0) ? T(1) : T(-1);
    }
    return T(0);  // includes 0^negative, which has no integer value
  }
  T result = T(1);
  T b = base;
  while (e > 0) {
    if (e & 1) result = wrap_mul(result, b);
    b = wrap_mul(b, b);
    e >>= 1;
  }
  return result;
}

Status pow_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const bool int_exp = dtype_is_integer(ctx.input(1).dtype());
  KILN_ASSIGN_OR_RETURN(Tensor e, ctx.input(1).cast(int_exp ? DType::kInt64 : DType::kFloat64));
  KILN_ASSIGN_OR_RETURN(Tensor* out, ctx.allocate_output(0));
  const bool square = !int_exp && e.numel() == 1 && e.data<double>()[0] == 2.0;
  visit_dtype(a.dtype(), [&]<typename T>() {
    if constexpr (type_in<T>(kNumeric)) {
      if constexpr (kIsFloat<T>) {
        if (square) {
          // Exact in double, so rounding once gives the correctly rounded x*x.
          broadcast_binary<T, double, T>(a, e, *out, [](T x, double) {
            const double v = static_cast<double>(load(x));
            return convert<T>(v * v);
          });
        } else if (int_exp) {
          broadcast_binary<T, int64_t, T>(a, e, *out, [](T x, int64_t y) {
            return convert<T>(std::pow(static_cast<double>(load(x)), static_cast<double>(y)));
          });
        } else {
          broadcast_binary<T, double, T>(a, e, *out, [](T x, double y) {
            return convert<T>(std::pow(static_cast<double>(load(x)), y));
          });
        }
      } else if (int_exp) {
        broadcast_binary<T, int64_t, T>(a, e, *out, [](T x, int64_t y) { return int_pow(x, y); });
      } else {
        broadcast_binary<T, double, T>(a, e, *out, [](T x, double y) {
          return saturate_cast<T>(std::pow(static_cast<double>(x), y));
        });
      }
    }
  });
  return ok_status();
}

// --- variadic Sum / Mean / Max / Min --------------------------------------------
// Accumulate in double for float types (so f16/f32 sums round once) and in
// the integer type itself (wrapping) for ints.

enum class Fold { kSum, kMean, kMax, kMin };

template <Fold F>
Status variadic_infer(InferContext& ctx) {
  const unsigned types = F == Fold::kMean ? kFloatTypes : kNumeric;
  ir::SymShape shape = ctx.input_shape(0);
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) return ctx.error("input " + std::to_string(i) + " is missing");
    KILN_RETURN_IF_ERROR(check_dtype(ctx, i, types));
    KILN_RETURN_IF_ERROR(check_same_dtype(ctx, 0, i));
    auto s = broadcast_shapes(shape, ctx.input_shape(i));
    if (!s.ok())
      return ctx.error("cannot broadcast input " + std::to_string(i) + " of shape " + ctx.input_shape(i).to_string() +
                       " with the broadcast of inputs 0.." + std::to_string(i - 1) + ", " + shape.to_string());
    shape = std::move(s).value();
  }
  ctx.set_output(0, ctx.input_dtype(0), std::move(shape));
  return ok_status();
}

template <Fold F, typename A>
A fold(A acc, A v) {
  if constexpr (F == Fold::kSum || F == Fold::kMean) {
    if constexpr (kIsInt<A>) return wrap_add(acc, v);
    else return acc + v;
  } else {
    if constexpr (std::is_floating_point_v<A>) {
      if (std::isnan(acc) || std::isnan(v)) return std::numeric_limits<A>::quiet_NaN();
    }
    if constexpr (F == Fold::kMax) return v > acc ? v : acc;
    else return v < acc ? v : acc;
  }
}

template <Fold F>
Status variadic_kernel(KernelContext& ctx) {
  KILN_ASSIGN_OR_RETURN(Tensor* out, ctx.allocate_output(0));
  const Shape& shape = out->shape();
  const int64_t n = out->numel();
  visit_dtype(out->dtype(), [&]<typename T>() {
    if constexpr (type_in<T>(kNumeric)) {
      using A = std::conditional_t<kIsFloat<T>, double, T>;
      std::vector<A> acc(static_cast<size_t>(n));
      for (size_t k = 0; k < ctx.num_inputs(); ++k) {
        const Tensor& in = ctx.input(k);
        const T* p = in.data<T>();
        auto visit = [&](int64_t i, int64_t j) {
          const A v = static_cast<A>(load(p[j]));
          acc[static_cast<size_t>(i)] = k == 0 ? v : fold<F>(acc[static_cast<size_t>(i)], v);
        };
        if (in.shape() == shape) {
          for (int64_t i = 0; i < n; ++i) visit(i, i);
        } else {
          BroadcastIndexer idx(in.shape(), shape);
          for (int64_t i = 0; i < n; ++i, idx.next()) visit(i, idx.index());
        }
      }
      T* o = out->data<T>();
      const double count = static_cast<double>(ctx.num_inputs());
      for (int64_t i = 0; i < n; ++i) {
        if constexpr (F == Fold::kMean) o[i] = convert<T>(static_cast<double>(acc[static_cast<size_t>(i)]) / count);
        else o[i] = convert<T>(acc[static_cast<size_t>(i)]);
      }
    }
  });
  return ok_status();
}

// --- Where ------------------------------------------------------------------

Status where_infer(InferContext& ctx) {
  if (ctx.input_dtype(0) != DType::kBool)
    return ctx.error("input 0 (condition) must be bool, got " + std::string(dtype_name(ctx.input_dtype(0))));
  KILN_RETURN_IF_ERROR(check_same_dtype(ctx, 1, 2));
  auto s01 = broadcast_shapes(ctx.input_shape(0), ctx.input_shape(1));
  if (!s01.ok()) return broadcast_error(ctx, ctx.input_shape(0), ctx.input_shape(1));
  auto s = broadcast_shapes(*s01, ctx.input_shape(2));
  if (!s.ok())
    return ctx.error("cannot broadcast input shapes " + ctx.input_shape(0).to_string() + ", " +
                     ctx.input_shape(1).to_string() + " and " + ctx.input_shape(2).to_string());
  ctx.set_output(0, ctx.input_dtype(1), std::move(s).value());
  return ok_status();
}

Status where_kernel(KernelContext& ctx) {
  const Tensor& c = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const Tensor& y = ctx.input(2);
  KILN_ASSIGN_OR_RETURN(Tensor* out, ctx.allocate_output(0));
  visit_dtype(x.dtype(), [&]<typename T>() {
    const bool* pc = c.data<bool>();
    const T* px = x.data<T>();
    const T* py = y.data<T>();
    T* po = out->data<T>();
    for_each_broadcast_row<3>({&c.shape(), &x.shape(), &y.shape()}, out->shape(),
                              [&](int64_t o, const std::array<int64_t, 3>& off, const std::array<int64_t, 3>& step,
                                  int64_t len) {
                                for (int64_t j = 0; j < len; ++j)
                                  po[o + j] = pc[off[0] + j * step[0]] ? px[off[1] + j * step[1]]
                                                                       : py[off[2] + j * step[2]];
                              });
  });
  return ok_status();
}

// --- PRelu ------------------------------------------------------------------
// slope broadcasts to X (one way): the output always has X's shape.

Status prelu_infer(InferContext& ctx) {
  KILN_RETURN_IF_ERROR(check_dtype(ctx, 0, kFloatTypes | kSignedInts));
  KILN_RETURN_IF_ERROR(check_same_dtype(ctx, 0, 1));
  const ir::SymShape& x = ctx.input_shape(0);
  const ir::SymShape& slope = ctx.input_shape(1);
  if (!broadcasts_to(slope, x))
    return ctx.error("input 1 (slope) of shape " + slope.to_string() + " does not broadcast to input 0 of shape " +
                     x.to_string());
  ctx.set_output(0, ctx.input_dtype(0), x);
  return ok_status();
}

Status prelu_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& slope = ctx.input(1);
  KILN_ASSIGN_OR_RETURN(Tensor* out, ctx.allocate_output(0));
  visit_dtype(x.dtype(), [&]<typename T>() {
    if constexpr (type_in<T>(kFloatTypes | kSignedInts)) {
      broadcast_binary<T, T, T>(x, slope, *out, [](T a, T s) {
        const auto v = load(a);
        if constexpr (kIsInt<T>) return v < T(0) ? wrap_mul(v, s) : v;
        else return convert<T>(v < 0 ? v * load(s) : v);
      });
    }
  });
  return ok_status();
}

}  // namespace

void register_binary_ops(OpRegistry& r) {
  add_binary<Add>(r);
  add_binary<Sub>(r);
  add_binary<Mul>(r);
  add_binary<Div>(r);
  add_binary<Mod>(r);
  add_binary<Equal>(r);
  add_binary<Greater>(r);
  add_binary<Less>(r);
  add_binary<GreaterOrEqual>(r);
  add_binary<LessOrEqual>(r);
  add_binary<And>(r);
  add_binary<Or>(r);
  add_binary<Xor>(r);
  add_binary<BitShift>(r);
  add_op(r, OpSchema{"Pow", "", 2, 2, 1, 1, &pow_infer, &pow_kernel}, MappingType::kOneToOne);
  add_op(r, OpSchema{"Sum", "", 1, -1, 1, 1, &variadic_infer<Fold::kSum>, &variadic_kernel<Fold::kSum>}, MappingType::kOneToOne);
  add_op(r, OpSchema{"Mean", "", 1, -1, 1, 1, &variadic_infer<Fold::kMean>, &variadic_kernel<Fold::kMean>}, MappingType::kOneToOne);
  add_op(r, OpSchema{"Max", "", 1, -1, 1, 1, &variadic_infer<Fold::kMax>, &variadic_kernel<Fold::kMax>}, MappingType::kOneToOne);
  add_op(r, OpSchema{"Min", "", 1, -1, 1, 1, &variadic_infer<Fold::kMin>, &variadic_kernel<Fold::kMin>}, MappingType::kOneToOne);
  add_op(r, OpSchema{"Where", "", 3, 3, 1, 1, &where_infer, &where_kernel}, MappingType::kOneToOne);
  add_op(r, OpSchema{"PRelu", "", 2, 2, 1, 1, &prelu_infer, &prelu_kernel}, MappingType::kOneToOne);
}

}  // namespace kiln::ops::detail
