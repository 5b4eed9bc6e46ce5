// Helpers shared by the elementwise, reduction and normalization kernels:
// dtype classes, the fp16-as-float compute type, defined (never UB) numeric
// conversions, ONNX dtype enums, and a broadcasting row walker.
//
// The row walker exists so that broadcasting kernels run tight inner loops:
// it coalesces the trailing dims over which every input is either fully
// present or fully broadcast, and walks the remaining outer dims with
// BroadcastIndexer, handing the kernel one contiguous run at a time.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/base/dtype.h"
#include "engine/base/tensor.h"
#include "engine/ops/broadcast.h"
#include "engine/ops/op_registry.h"

namespace kiln::ops::detail {

// --- dtype classes -----------------------------------------------------------

enum TypeMask : unsigned {
  kFloatTypes = 1u,
  kSignedInts = 2u,
  kUnsignedInts = 4u,
  kBoolType = 8u,
  kInts = kSignedInts | kUnsignedInts,
  kNumeric = kFloatTypes | kInts,
  kAllTypes = kNumeric | kBoolType,
};

template <typename T>
inline constexpr bool kIsFloat = std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, Half>;
template <typename T>
inline constexpr bool kIsInt = std::is_integral_v<T> && !std::is_same_v<T, bool>;

template <typename T>
constexpr bool type_in(unsigned mask) {
  if constexpr (kIsFloat<T>) return (mask & kFloatTypes) != 0;
  else if constexpr (std::is_same_v<T, bool>) return (mask & kBoolType) != 0;
  else if constexpr (std::is_signed_v<T>) return (mask & kSignedInts) != 0;
  else return (mask & kUnsignedInts) != 0;
}

inline bool dtype_in(DType t, unsigned mask) {
  bool r = false;
  visit_dtype(t, [&]<typename T>() { r = type_in<T>(mask); });
  return r;
}

// "float", "float or signed int", ... for error messages.
inline std::string describe_mask(unsigned mask) {
  std::vector<std::string> parts;
  if (mask & kFloatTypes) parts.push_back("float");
  if ((mask & kInts) == kInts) parts.push_back("int");
  else if (mask & kSignedInts) parts.push_back("signed int");
  else if (mask & kUnsignedInts) parts.push_back("unsigned int");
  if (mask & kBoolType) parts.push_back("bool");
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i) s += (i == 0 ? "" : i + 1 == parts.size() ? " or " : ", ") + parts[i];
  return s;
}

// An error naming the input, its dtype and what the op accepts.
inline Status check_dtype(const InferContext& ctx, size_t input, unsigned mask) {
  const DType t = ctx.input_dtype(input);
  if (dtype_in(t, mask)) return ok_status();
  return ctx.error("input " + std::to_string(input) + " has dtype " + std::string(dtype_name(t)) + "; " +
                   ctx.node().op + " accepts " + describe_mask(mask) + " tensors");
}

inline Status check_same_dtype(const InferContext& ctx, size_t a, size_t b) {
  if (ctx.input_dtype(a) == ctx.input_dtype(b)) return ok_status();
  return ctx.error("inputs " + std::to_string(a) + " and " + std::to_string(b) + " must have the same dtype, got " +
                   std::string(dtype_name(ctx.input_dtype(a))) + " and " + std::string(dtype_name(ctx.input_dtype(b))));
}

// --- compute type and conversions -------------------------------------------

// fp16 is storage only: kernels compute in float.
template <typename T>
struct ComputeType {
  using type = T;
};
template <>
struct ComputeType<Half> {
  using type = float;
};
template <typename T>
using compute_t = typename ComputeType<T>::type;

template <typename T>
inline compute_t<T> load(T v) {
  if constexpr (std::is_same_v<T, Half>) return static_cast<float>(v);
  else return v;
}

// Float -> integer with defined results: NaN -> 0, out of range saturates,
// otherwise truncation toward zero (C semantics inside the range).
template <typename I, typename F>
inline I saturate_cast(F value) {
  const double v = static_cast<double>(value);
  if (std::isnan(v)) return I(0);
  // max()+1 is a power of two, exact in double for every integer width.
  constexpr double kHi = static_cast<double>(std::numeric_limits<I>::max()) + 1.0;
  constexpr double kLo = static_cast<double>(std::numeric_limits<I>::min());
  if (v >= kHi) return std::numeric_limits<I>::max();
  if (v <= kLo) return std::numeric_limits<I>::min();
  return static_cast<I>(v);
}

// Any supported element type -> any other, with ONNX Cast semantics: ints
// wrap modulo 2^n (two's complement), floats to ints saturate (NaN -> 0),
// anything to bool is value != 0, fp16 goes through float.
template <typename To, typename From>
inline To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<From, Half>) {
    return convert<To>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, Half>) {
    return Half(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (kIsInt<To> && kIsFloat<From>) {
    return saturate_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

// Wrapping integer arithmetic (signed overflow is UB in C++; ONNX models
// expect two's complement wrap-around like the hardware does).
template <typename T>
inline T wrap_add(T a, T b) {
  return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
template <typename T>
inline T wrap_sub(T a, T b) {
  return static_cast<T>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
template <typename T>
inline T wrap_mul(T a, T b) {
  return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

// --- broadcasting rows ------------------------------------------------------

// Walks `out` (the broadcast of N input shapes) in contiguous runs. For each
// run, calls f(out_offset, in_offsets, in_steps, length): input k's elements
// for the run are at in_offsets[k] + j * in_steps[k] (step 1 or 0).
template <size_t N, typename F>
void for_each_broadcast_row(const std::array<const Shape*, N>& ins, const Shape& out, F&& f) {
  const size_t rank = out.size();
  if (shape_numel(out) == 0) return;
  std::array<Shape, N> aligned;
  for (size_t k = 0; k < N; ++k) {
    aligned[k].assign(rank - ins[k]->size(), 1);
    aligned[k].insert(aligned[k].end(), ins[k]->begin(), ins[k]->end());
  }
  // Coalesce the longest suffix over which each input is consistently full
  // (its dim equals out's) or broadcast (its dim is 1). Size-1 dims fit both.
  std::array<int, N> pattern;  // -1 undecided, 0 broadcast, 1 full
  pattern.fill(-1);
  size_t split = rank;
  int64_t inner = 1;
  while (split > 0) {
    const size_t d = split - 1;
    if (out[d] != 1) {
      std::array<int, N> next = pattern;
      bool ok = true;
      for (size_t k = 0; k < N && ok; ++k) {
        const int p = aligned[k][d] == out[d] ? 1 : 0;
        if (next[k] == -1) next[k] = p;
        else ok = next[k] == p;
      }
      if (!ok) break;
      pattern = next;
      inner *= out[d];
    }
    split = d;
  }
  const Shape outer_out(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(split));
  std::vector<BroadcastIndexer> indexers;
  indexers.reserve(N);
  std::array<int64_t, N> steps;
  for (size_t k = 0; k < N; ++k) {
    indexers.emplace_back(Shape(aligned[k].begin(), aligned[k].begin() + static_cast<std::ptrdiff_t>(split)), outer_out);
    steps[k] = pattern[k] == 0 ? 0 : 1;
  }
  const int64_t rows = shape_numel(outer_out);
  std::array<int64_t, N> offsets;
  for (int64_t r = 0; r < rows; ++r) {
    for (size_t k = 0; k < N; ++k) {
      offsets[k] = indexers[k].index() * (steps[k] ? inner : 1);
      indexers[k].next();
    }
    f(r * inner, offsets, steps, inner);
  }
}

// out[i] = f(a[.], b[.]) over the broadcast of a and b; `out` is allocated
// with the broadcast shape. f takes the stored element types.
template <typename TA, typename TB, typename TO, typename F>
void broadcast_binary(const Tensor& a, const Tensor& b, Tensor& out, F f) {
  const TA* pa = a.data<TA>();
  const TB* pb = b.data<TB>();
  TO* po = out.data<TO>();
  if (a.shape() == b.shape()) {
    const int64_t n = out.numel();
    for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], pb[i]);
    return;
  }
  for_each_broadcast_row<2>({&a.shape(), &b.shape()}, out.shape(),
                            [&](int64_t o, const std::array<int64_t, 2>& off, const std::array<int64_t, 2>& step,
                                int64_t len) {
                              const TA* ra = pa + off[0];
                              const TB* rb = pb + off[1];
                              TO* ro = po + o;
                              if (step[0] && step[1]) {
                                for (int64_t j = 0; j < len; ++j) ro[j] = f(ra[j], rb[j]);
                              } else if (step[0]) {
                                const TB s = *rb;
                                for (int64_t j = 0; j < len; ++j) ro[j] = f(ra[j], s);
                              } else if (step[1]) {
                                const TA s = *ra;
                                for (int64_t j = 0; j < len; ++j) ro[j] = f(s, rb[j]);
                              } else {
                                const TO v = f(*ra, *rb);
                                for (int64_t j = 0; j < len; ++j) ro[j] = v;
                              }
                            });
}

// Elements of `t` (any dtype) broadcast to `shape`, as doubles. For the
// per-channel / per-feature parameters of normalization ops.
inline std::vector<double> expand_as_f64(const Tensor& t, const Shape& shape) {
  std::vector<double> out(static_cast<size_t>(shape_numel(shape)));
  BroadcastIndexer idx(t.shape(), shape);
  for (size_t i = 0; i < out.size(); ++i, idx.next()) out[i] = t.get_f64(idx.index());
  return out;
}

// Whether `from` broadcasts to `to` one way (the result has `to`'s shape).
// Only a pair of different constants (neither 1 in `from`) or a higher rank
// rules it out; symbolic dims are given the benefit of the doubt.
inline bool broadcasts_to(const ir::SymShape& from, const ir::SymShape& to) {
  if (!from.has_rank || !to.has_rank) return true;
  if (from.rank() > to.rank()) return false;
  for (int64_t i = 1; i <= from.rank(); ++i) {
    const ir::Dim& f = from.dims[static_cast<size_t>(from.rank() - i)];
    const ir::Dim& t = to.dims[static_cast<size_t>(to.rank() - i)];
    if (f.is_const() && t.is_const() && f.value() != 1 && f.value() != t.value()) return false;
  }
  return true;
}

// Input i as symbolic dims (InferContext::input_as_dims) when it is small
// enough to be shape data. Large int tensors (token ids, indices) are skipped
// before any conversion, so run-time inference stays cheap.
inline std::optional<std::vector<ir::Dim>> small_input_dims(const InferContext& ctx, size_t i) {
  constexpr int64_t kMaxDims = 64;
  if (const Tensor* t = ctx.input_value(i); t && t->numel() > kMaxDims) return std::nullopt;
  auto dims = ctx.input_as_dims(i);
  if (dims && static_cast<int64_t>(dims->size()) > kMaxDims) return std::nullopt;
  return dims;
}

// Normalizes an axis in [-rank, rank) to [0, rank); false if out of range.
inline bool normalize_axis(int64_t& axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return false;
  if (axis < 0) axis += rank;
  return true;
}

// A tensor viewed as [outer, n, inner] around one axis.
struct AxisSplit {
  int64_t outer = 1, n = 1, inner = 1;
};
inline AxisSplit split_at_axis(const Shape& shape, int64_t axis) {
  AxisSplit s;
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i) {
    const int64_t d = shape[static_cast<size_t>(i)];
    if (i < axis) s.outer *= d;
    else if (i == axis) s.n = d;
    else s.inner *= d;
  }
  return s;
}

// Registers a schema. register_*_ops return void, so a duplicate (a wiring
// bug: two families claiming one op) cannot be reported from here; the
// first registration wins, and elementwise_test checks that no other family
// registers an elementwise or reduction op.
inline void add_op(OpRegistry& r, OpSchema schema, MappingType mapping) {
  schema.mapping = mapping;
  Status s = r.add(std::move(schema));
  (void)s;
}

// Implemented in elementwise_binary.cc / elementwise_cast.cc.
void register_binary_ops(OpRegistry& r);
void register_cast_ops(OpRegistry& r);

}  // namespace kiln::ops::detail
