// Op family 'elementwise', unary part: activations (and Kiln's fused kiln::Silu), math functions, Clip,
// Shrink, IsNaN/IsInf; and register_elementwise_ops, which also pulls in the
// binary ops (elementwise_binary.cc) and Cast/CastLike (elementwise_cast.cc).
//
// Each unary op is a small functor over its compute type (float for f32 and
// f16, double for f64, the integer type itself for ints), so one template
// gives both the shape inference and a tight loop per dtype.
#include <cmath>
#include <numbers>

#include "engine/ops/elementwise_common.h"
#include "engine/ops/op_registry.h"

namespace kiln::ops {
namespace {

using detail::kBoolType;
using detail::kFloatTypes;
using detail::kIsFloat;
using detail::kNumeric;
using detail::kSignedInts;

// Base for functors: no attributes to validate.
struct Plain {
  explicit Plain(const ir::Node&) {}
  static std::string validate(const ir::Node&) { return {}; }
};

// --- the functors ------------------------------------------------------------
// kTypes: accepted input dtypes. kBoolOut: output is bool rather than the
// input dtype.

struct Relu : Plain {
  using Plain::Plain;
  static constexpr const char* kName = "Relu";
  static constexpr unsigned kTypes = kFloatTypes | kSignedInts;
  static constexpr bool kBoolOut = false;
  template <typename C>
  C operator()(C x) const { return x < C(0) ? C(0) : x; }
};

// Never exponentiates a large positive number.
template <typename C>
C stable_sigmoid(C x) {
  if (x >= C(0)) return C(1) / (C(1) + std::exp(-x));
  const C e = std::exp(x);
  return e / (C(1) + e);
}

struct Sigmoid : Plain {
  using Plain::Plain;
  static constexpr const char* kName = "Sigmoid";
  static constexpr unsigned kTypes = kFloatTypes;
  static constexpr bool kBoolOut = false;
  template <typename C>
  C operator()(C x) const { return stable_sigmoid(x); }
};

// kiln::Silu = x * sigmoid(x), in Kiln's own op domain: what fusion passes
// emit for that pattern (ONNX has no SiLU op). The same two steps in the same
// compute type as Sigmoid followed by Mul, so fusing changes no f32 or f64
// result; f16 rounds once instead of twice.
struct Silu : Plain {
  using Plain::Plain;
  static constexpr const char* kName = "Silu";
  static constexpr unsigned kTypes = kFloatTypes;
  static constexpr bool kBoolOut = false;
  template <typename C>
  C operator()(C x) const { return x * stable_sigmoid(x); }
};

#define KILN_FLOAT_UNARY_(Name, expr)                  \
  struct Name : Plain {                                \
    using Plain::Plain;                                \
    static constexpr const char* kName = #Name;        \
    static constexpr unsigned kTypes = kFloatTypes;    \
    static constexpr bool kBoolOut = false;            \
    template <typename C>                              \
    C operator()(C x) const { return expr; }           \
  };

KILN_FLOAT_UNARY_(Tanh, std::tanh(x))
KILN_FLOAT_UNARY_(Exp, std::exp(x))
KILN_FLOAT_UNARY_(Log, std::log(x))
KILN_FLOAT_UNARY_(Sqrt, std::sqrt(x))
KILN_FLOAT_UNARY_(Erf, std::erf(x))
KILN_FLOAT_UNARY_(Reciprocal, C(1) / x)
KILN_FLOAT_UNARY_(Floor, std::floor(x))
KILN_FLOAT_UNARY_(Ceil, std::ceil(x))
KILN_FLOAT_UNARY_(Sin, std::sin(x))
KILN_FLOAT_UNARY_(Cos, std::cos(x))
KILN_FLOAT_UNARY_(Tan, std::tan(x))
KILN_FLOAT_UNARY_(Asin, std::asin(x))
KILN_FLOAT_UNARY_(Acos, std::acos(x))
KILN_FLOAT_UNARY_(Atan, std::atan(x))
KILN_FLOAT_UNARY_(Sinh, std::sinh(x))
KILN_FLOAT_UNARY_(Cosh, std::cosh(x))
KILN_FLOAT_UNARY_(Asinh, std::asinh(x))
KILN_FLOAT_UNARY_(Acosh, std::acosh(x))
KILN_FLOAT_UNARY_(Atanh, std::atanh(x))
KILN_FLOAT_UNARY_(Softsign, x / (C(1) + std::abs(x)))
#undef KILN_FLOAT_UNARY_

// Round half to even, independent of the floating-point environment.
struct Round : Plain {
  using Plain::Plain;
  static constexpr const char* kName = "Round";
  static constexpr unsigned kTypes = kFloatTypes;
  static constexpr bool kBoolOut = false;
  template <typename C>
  C operator()(C x) const {
    const C r = std::round(x);  // half away from zero
    if (std::abs(x - std::trunc(x)) == C(0.5)) return C(2) * std::round(x / C(2));
    return r;
  }
};

struct Neg : Plain {
  using Plain::Plain;
  static constexpr const char* kName = "Neg";
  static constexpr unsigned kTypes = kFloatTypes | kSignedInts;
  static constexpr bool kBoolOut = false;
  template <typename C>
  C operator()(C x) const {
    if constexpr (kIsFloat<C>) return -x;
    else return detail::wrap_sub(C(0), x);  // -INT_MIN wraps to INT_MIN
  }
};

struct Abs : Plain {
  using Plain::Plain;
  static constexpr const char* kName = "Abs";
  static constexpr unsigned kTypes = kNumeric;
  static constexpr bool kBoolOut = false;
  template <typename C>
  C operator()(C x) const {
    if constexpr (kIsFloat<C>) return std::abs(x);
    else if constexpr (std::is_unsigned_v<C>) return x;
    else return x < C(0) ? detail::wrap_sub(C(0), x) : x;
  }
};

struct Sign : Plain {
  using Plain::Plain;
  static constexpr const char* kName = "Sign";
  static constexpr unsigned kTypes = kNumeric;
  static constexpr bool kBoolOut = false;
  template <typename C>
  C operator()(C x) const {
    if (x > C(0)) return C(1);
    if constexpr (std::is_signed_v<C> || kIsFloat<C>) {
      if (x < C(0)) return C(-1);
    }
    return x;  // 0 stays 0, NaN stays NaN
  }
};

struct Not : Plain {
  using Plain::Plain;
  static constexpr const char* kName = "Not";
  static constexpr unsigned kTypes = kBoolType;
  static constexpr bool kBoolOut = false;
  bool operator()(bool x) const { return !x; }
};

// log(1 + e^x) without overflow for large x.
template <typename C>
C softplus(C x) {
  if (x > C(0)) return x + std::log1p(std::exp(-x));
  return std::log1p(std::exp(x));
}

struct Softplus : Plain {
  using Plain::Plain;
  static constexpr const char* kName = "Softplus";
  static constexpr unsigned kTypes = kFloatTypes;
  static constexpr bool kBoolOut = false;
  template <typename C>
  C operator()(C x) const { return softplus(x); }
};

struct Mish : Plain {
  using Plain::Plain;
  static constexpr const char* kName = "Mish";
  static constexpr unsigned kTypes = kFloatTypes;
  static constexpr bool kBoolOut = false;
  template <typename C>
  C operator()(C x) const {
    return x * std::tanh(softplus(x));
  }
};

struct Elu {
  static constexpr const char* kName = "Elu";
  static constexpr unsigned kTypes = kFloatTypes;
  static constexpr bool kBoolOut = false;
  explicit Elu(const ir::Node& n) : alpha(n.attr_float("alpha", 1.0f)) {}
  static std::string validate(const ir::Node&) { return {}; }
  template <typename C>
  C operator()(C x) const { return x < C(0) ? C(alpha) * std::expm1(x) : x; }
  float alpha;
};

struct Selu {
  static constexpr const char* kName = "Selu";
  static constexpr unsigned kTypes = kFloatTypes;
  static constexpr bool kBoolOut = false;
  explicit Selu(const ir::Node& n)
      : alpha(n.attr_float("alpha", 1.67326319217681884765625f)), gamma(n.attr_float("gamma", 1.05070102214813232421875f)) {}
  static std::string validate(const ir::Node&) { return {}; }
  template <typename C>
  C operator()(C x) const { return x <= C(0) ? C(gamma) * (C(alpha) * std::exp(x) - C(alpha)) : C(gamma) * x; }
  float alpha, gamma;
};

struct Celu {
  static constexpr const char* kName = "Celu";
  static constexpr unsigned kTypes = kFloatTypes;
  static constexpr bool kBoolOut = false;
  explicit Celu(const ir::Node& n) : alpha(n.attr_float("alpha", 1.0f)) {}
  static std::string validate(const ir::Node& n) {
    return n.attr_float("alpha", 1.0f) == 0.0f ? "attribute 'alpha' must be non-zero" : "";
  }
  template <typename C>
  C operator()(C x) const {
    const C a = C(alpha);
    return std::max(C(0), x) + std::min(C(0), a * std::expm1(x / a));
  }
  float alpha;
};

struct Gelu {
  static constexpr const char* kName = "Gelu";
  static constexpr unsigned kTypes = kFloatTypes;
  static constexpr bool kBoolOut = false;
  explicit Gelu(const ir::Node& n) : tanh_approx(n.attr_string("approximate", "none") == "tanh") {}
  static std::string validate(const ir::Node& n) {
    const std::string a = n.attr_string("approximate", "none");
    return a == "none" || a == "tanh" ? "" : "attribute 'approximate' must be \"none\" or \"tanh\", got \"" + a + "\"";
  }
  template <typename C>
  C operator()(C x) const {
    if (tanh_approx) {
      const C k = C(0.7978845608028654);  // sqrt(2/pi)
      return C(0.5) * x * (C(1) + std::tanh(k * (x + C(0.044715) * x * x * x)));
    }
    return C(0.5) * x * (C(1) + std::erf(x * C(std::numbers::sqrt2 / 2)));
  }
  bool tanh_approx;
};

struct LeakyRelu {
  static constexpr const char* kName = "LeakyRelu";
  static constexpr unsigned kTypes = kFloatTypes;
  static constexpr bool kBoolOut = false;
  explicit LeakyRelu(const ir::Node& n) : alpha(n.attr_float("alpha", 0.01f)) {}
  static std::string validate(const ir::Node&) { return {}; }
  template <typename C>
  C operator()(C x) const { return x < C(0) ? C(alpha) * x : x; }
  float alpha;
};

struct HardSigmoid {
  static constexpr const char* kName = "HardSigmoid";
  static constexpr unsigned kTypes = kFloatTypes;
  static constexpr bool kBoolOut = false;
  explicit HardSigmoid(const ir::Node& n) : alpha(n.attr_float("alpha", 0.2f)), beta(n.attr_float("beta", 0.5f)) {}
  static std::string validate(const ir::Node&) { return {}; }
  template <typename C>
  C operator()(C x) const { return std::max(C(0), std::min(C(1), C(alpha) * x + C(beta))); }
  float alpha, beta;
};

struct HardSwish : Plain {
  using Plain::Plain;
  static constexpr const char* kName = "HardSwish";
  static constexpr unsigned kTypes = kFloatTypes;
  static constexpr bool kBoolOut = false;
  template <typename C>
  C operator()(C x) const { return x * std::max(C(0), std::min(C(1), x / C(6) + C(0.5))); }
};

struct ThresholdedRelu {
  static constexpr const char* kName = "ThresholdedRelu";
  static constexpr unsigned kTypes = kFloatTypes;
  static constexpr bool kBoolOut = false;
  explicit ThresholdedRelu(const ir::Node& n) : alpha(n.attr_float("alpha", 1.0f)) {}
  static std::string validate(const ir::Node&) { return {}; }
  template <typename C>
  C operator()(C x) const { return x > C(alpha) ? x : C(0); }
  float alpha;
};

struct Shrink {
  static constexpr const char* kName = "Shrink";
  static constexpr unsigned kTypes = kNumeric;
  static constexpr bool kBoolOut = false;
  explicit Shrink(const ir::Node& n) : lambd(n.attr_float("lambd", 0.5f)), bias(n.attr_float("bias", 0.0f)) {}
  static std::string validate(const ir::Node& n) {
    return n.attr_float("lambd", 0.5f) < 0.0f ? "attribute 'lambd' must be >= 0" : "";
  }
  template <typename C>
  C operator()(C x) const {
    // Compared and shifted in double so that integer inputs follow the
    // same real-valued formula, then converted back with defined rounding.
    const double v = static_cast<double>(x);
    double r = 0.0;
    if (v < -static_cast<double>(lambd)) r = v + static_cast<double>(bias);
    else if (v > static_cast<double>(lambd)) r = v - static_cast<double>(bias);
    return detail::convert<C>(r);
  }
  float lambd, bias;
};

struct IsNaN : Plain {
  using Plain::Plain;
  static constexpr const char* kName = "IsNaN";
  static constexpr unsigned kTypes = kFloatTypes;
  static constexpr bool kBoolOut = true;
  template <typename C>
  bool operator()(C x) const { return std::isnan(x); }
};

struct IsInf {
  static constexpr const char* kName = "IsInf";
  static constexpr unsigned kTypes = kFloatTypes;
  static constexpr bool kBoolOut = true;
  explicit IsInf(const ir::Node& n)
      : negative(n.attr_int("detect_negative", 1) != 0), positive(n.attr_int("detect_positive", 1) != 0) {}
  static std::string validate(const ir::Node&) { return {}; }
  template <typename C>
  bool operator()(C x) const { return std::isinf(x) && (x > C(0) ? positive : negative); }
  bool negative, positive;
};

// --- generic unary inference and kernel ---------------------------------------

template <typename Op>
Status unary_infer(InferContext& ctx) {
  KILN_RETURN_IF_ERROR(detail::check_dtype(ctx, 0, Op::kTypes));
  if (std::string e = Op::validate(ctx.node()); !e.empty()) return ctx.error(e);
  ctx.set_output(0, Op::kBoolOut ? DType::kBool : ctx.input_dtype(0), ctx.input_shape(0));
  return ok_status();
}

template <typename Op>
Status unary_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  KILN_ASSIGN_OR_RETURN(Tensor* y, ctx.allocate_output(0));
  const Op op(ctx.node());
  const int64_t n = x.numel();
  bool done = false;
  visit_dtype(x.dtype(), [&]<typename T>() {
    if constexpr (detail::type_in<T>(Op::kTypes)) {
      using O = std::conditional_t<Op::kBoolOut, bool, T>;
      const T* in = x.data<T>();
      O* out = y->data<O>();
      if constexpr (std::is_same_v<T, Half>) {
        for (int64_t i = 0; i < n; ++i) out[i] = detail::convert<O>(op(static_cast<float>(in[i])));
      } else {
        for (int64_t i = 0; i < n; ++i) out[i] = op(in[i]);
      }
      done = true;
    }
  });
  if (!done) return ctx.error("unsupported input dtype " + std::string(dtype_name(x.dtype())));
  return ok_status();
}

template <typename Op>
void add_unary(OpRegistry& r, const char* domain = "") {
  detail::add_op(r, OpSchema{Op::kName, domain, 1, 1, 1, 1, &unary_infer<Op>, &unary_kernel<Op>}, MappingType::kOneToOne);
}

// --- Clip -------------------------------------------------------------------
// min and max are optional scalar inputs of X's dtype; an omitted bound is
// the dtype's lowest/highest value. NaN inputs stay NaN.

Status clip_infer(InferContext& ctx) {
  KILN_RETURN_IF_ERROR(detail::check_dtype(ctx, 0, kNumeric));
  for (size_t i = 1; i < 3; ++i) {
    if (!ctx.has_input(i)) continue;
    KILN_RETURN_IF_ERROR(detail::check_same_dtype(ctx, 0, i));
    const ir::SymShape& s = ctx.input_shape(i);
    if (s.has_rank) {
      bool scalar = s.rank() == 0 || (s.rank() == 1 && s.dims[0].is_const() && s.dims[0].value() == 1);
      bool maybe_scalar = scalar || (s.rank() == 1 && !s.dims[0].is_const());
      if (!maybe_scalar)
        return ctx.error(std::string("input ") + (i == 1 ? "1 (min)" : "2 (max)") + " must be a scalar, got shape " +
                         s.to_string());
    }
  }
  ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
  return ok_status();
}

Status clip_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  for (size_t i = 1; i < 3; ++i)
    if (ctx.has_input(i) && ctx.input(i).numel() != 1)
      return ctx.error(std::string("input ") + (i == 1 ? "1 (min)" : "2 (max)") + " must hold one value, got shape " +
                       shape_to_string(ctx.input(i).shape()));
  KILN_ASSIGN_OR_RETURN(Tensor* y, ctx.allocate_output(0));
  const int64_t n = x.numel();
  visit_dtype(x.dtype(), [&]<typename T>() {
    if constexpr (detail::type_in<T>(kNumeric)) {
      using C = detail::compute_t<T>;
      C lo = std::numeric_limits<C>::lowest(), hi = std::numeric_limits<C>::max();
      if constexpr (kIsFloat<C>) {
        lo = -std::numeric_limits<C>::infinity();
        hi = std::numeric_limits<C>::infinity();
      }
      if (ctx.has_input(1)) lo = detail::load(ctx.input(1).data<T>()[0]);
      if (ctx.has_input(2)) hi = detail::load(ctx.input(2).data<T>()[0]);
      const T* in = x.data<T>();
      T* out = y->data<T>();
      for (int64_t i = 0; i < n; ++i) {
        C v = detail::load(in[i]);
        v = v < lo ? lo : v;
        v = v > hi ? hi : v;  // min > max gives max everywhere, like numpy.clip
        out[i] = detail::convert<T>(v);
      }
    }
  });
  return ok_status();
}

}  // namespace

void register_elementwise_ops(OpRegistry& r) {
  add_unary<Relu>(r);
  add_unary<Sigmoid>(r);
  add_unary<Tanh>(r);
  add_unary<Exp>(r);
  add_unary<Log>(r);
  add_unary<Sqrt>(r);
  add_unary<Erf>(r);
  add_unary<Neg>(r);
  add_unary<Abs>(r);
  add_unary<Reciprocal>(r);
  add_unary<Floor>(r);
  add_unary<Ceil>(r);
  add_unary<Round>(r);
  add_unary<Sin>(r);
  add_unary<Cos>(r);
  add_unary<Tan>(r);
  add_unary<Asin>(r);
  add_unary<Acos>(r);
  add_unary<Atan>(r);
  add_unary<Sinh>(r);
  add_unary<Cosh>(r);
  add_unary<Asinh>(r);
  add_unary<Acosh>(r);
  add_unary<Atanh>(r);
  add_unary<Softsign>(r);
  add_unary<Not>(r);
  add_unary<Sign>(r);
  add_unary<Softplus>(r);
  add_unary<Mish>(r);
  add_unary<Elu>(r);
  add_unary<Selu>(r);
  add_unary<Celu>(r);
  add_unary<Gelu>(r);
  add_unary<LeakyRelu>(r);
  add_unary<HardSigmoid>(r);
  add_unary<HardSwish>(r);
  add_unary<ThresholdedRelu>(r);
  add_unary<Shrink>(r);
  add_unary<IsNaN>(r);
  add_unary<IsInf>(r);
  add_unary<Silu>(r, kKilnDomain);
  detail::add_op(r, OpSchema{"Clip", "", 1, 3, 1, 1, &clip_infer, &clip_kernel}, MappingType::kOneToOne);
  detail::register_binary_ops(r);
  detail::register_cast_ops(r);
}

}  // namespace kiln::ops
