// Op family 'data_movement', part 4: Resize (opset 18 form; older forms are
// rewritten by the importer).
//
// Follows the ONNX reference implementation (onnx/reference/ops/op_resize.py):
// every axis maps output coordinates to input coordinates with the
// coordinate_transformation_mode, picks n neighbours around the input
// coordinate (preferring the left one, so the fractional part is in (0, 1])
// and weights them with the mode's coefficients, with edge clamping and
// optional exclude_outside renormalisation. Linear and cubic are separable,
// so the kernel applies one axis at a time in double; nearest is a pure
// index gather and works for every dtype. align_corners divides by the
// unrounded resized length (input length x scale), as the reference and the
// ONNX backend test data do; pytorch_half_pixel's "length 1" test uses the
// integer output length.
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

enum class Mode { kNearest, kLinear, kCubic };
enum class Ctm { kHalfPixel, kHalfPixelSymmetric, kPytorchHalfPixel, kAlignCorners, kAsymmetric, kTfCropAndResize };
enum class NearestMode { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };
enum class AspectPolicy { kStretch, kNotLarger, kNotSmaller };

struct ResizeAttrs {
  Mode mode = Mode::kNearest;
  Ctm ctm = Ctm::kHalfPixel;
  NearestMode nearest = NearestMode::kRoundPreferFloor;
  AspectPolicy policy = AspectPolicy::kStretch;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  bool antialias = false;
  double extrapolation = 0.0;
  std::vector<int64_t> axes;  // normalized; all axes when not given
};

StatusOr<ResizeAttrs> parse_attrs(const ir::Node& node, int64_t rank) {
  ResizeAttrs a;
  auto bad = [&](const char* name, const std::string& v, const char* allowed) {
    return invalid_argument(node.describe() + ": " + name + " '" + v + "' is not one of " + allowed);
  };
  const std::string mode = node.attr_string("mode", "nearest");
  if (mode == "nearest") a.mode = Mode::kNearest;
  else if (mode == "linear") a.mode = Mode::kLinear;
  else if (mode == "cubic") a.mode = Mode::kCubic;
  else return bad("mode", mode, "nearest, linear, cubic");
  const std::string ctm = node.attr_string("coordinate_transformation_mode", "half_pixel");
  if (ctm == "half_pixel") a.ctm = Ctm::kHalfPixel;
  else if (ctm == "half_pixel_symmetric") a.ctm = Ctm::kHalfPixelSymmetric;
  else if (ctm == "pytorch_half_pixel") a.ctm = Ctm::kPytorchHalfPixel;
  else if (ctm == "align_corners") a.ctm = Ctm::kAlignCorners;
  else if (ctm == "asymmetric") a.ctm = Ctm::kAsymmetric;
  else if (ctm == "tf_crop_and_resize") a.ctm = Ctm::kTfCropAndResize;
  else
    return bad("coordinate_transformation_mode", ctm,
               "half_pixel, half_pixel_symmetric, pytorch_half_pixel, align_corners, asymmetric, tf_crop_and_resize");
  const std::string nearest = node.attr_string("nearest_mode", "round_prefer_floor");
  if (nearest == "round_prefer_floor") a.nearest = NearestMode::kRoundPreferFloor;
  else if (nearest == "round_prefer_ceil") a.nearest = NearestMode::kRoundPreferCeil;
  else if (nearest == "floor") a.nearest = NearestMode::kFloor;
  else if (nearest == "ceil") a.nearest = NearestMode::kCeil;
  else return bad("nearest_mode", nearest, "round_prefer_floor, round_prefer_ceil, floor, ceil");
  const std::string policy = node.attr_string("keep_aspect_ratio_policy", "stretch");
  if (policy == "stretch") a.policy = AspectPolicy::kStretch;
  else if (policy == "not_larger") a.policy = AspectPolicy::kNotLarger;
  else if (policy == "not_smaller") a.policy = AspectPolicy::kNotSmaller;
  else return bad("keep_aspect_ratio_policy", policy, "stretch, not_larger, not_smaller");
  a.cubic_a = node.attr_float("cubic_coeff_a", -0.75f);
  a.exclude_outside = node.attr_int("exclude_outside", 0) != 0;
  a.antialias = node.attr_int("antialias", 0) != 0;
  a.extrapolation = node.attr_float("extrapolation_value", 0.0f);
  if (const ir::Attribute* axes = node.attr("axes")) {
    for (int64_t x : axes->ints) {
      auto n = normalize_axis(x, rank);
      if (!n) return invalid_argument(node.describe() + ": axis " + std::to_string(x) + " is out of range for rank " + std::to_string(rank));
      if (std::find(a.axes.begin(), a.axes.end(), *n) != a.axes.end())
        return invalid_argument(node.describe() + ": axis " + std::to_string(x) + " appears more than once in axes");
      a.axes.push_back(*n);
    }
  } else {
    for (int64_t i = 0; i < rank; ++i) a.axes.push_back(i);
  }
  return a;
}

// Whether an optional 1-D input is present and non-empty (older exports pass
// an empty scales tensor next to sizes). `unknown` is set when that cannot be
// told at compile time.
bool non_empty_input(const InferContext& ctx, size_t i, bool& unknown) {
  if (!ctx.has_input(i)) return false;
  const SymShape& s = ctx.input_shape(i);
  if (!s.has_rank || s.rank() != 1 || !s.dims[0].is_const()) {
    unknown = true;
    return true;
  }
  return s.dims[0].value() > 0;
}

// Output length and coordinate scale of every axis, on concrete values.
struct AxisPlan {
  int64_t out = 0;
  double scale = 1.0;
};

StatusOr<std::vector<AxisPlan>> plan_axes(const ir::Node& node, const ResizeAttrs& a, const Shape& in,
                                          const std::vector<double>* scales, const std::vector<int64_t>* sizes) {
  std::vector<AxisPlan> plan(in.size());
  for (size_t d = 0; d < in.size(); ++d) plan[d] = {in[d], 1.0};
  const size_t n = a.axes.size();
  if (scales) {
    if (scales->size() != n)
      return invalid_argument(node.describe() + ": scales has " + std::to_string(scales->size()) + " entries, expected " +
                              std::to_string(n));
    for (size_t i = 0; i < n; ++i) {
      const double s = (*scales)[i];
      if (!(s > 0.0)) return invalid_argument(node.describe() + ": scales must be positive, got " + std::to_string(s));
      const auto d = static_cast<size_t>(a.axes[i]);
      const double out = std::floor(static_cast<double>(in[d]) * s);
      if (out > static_cast<double>(int64_t{1} << 40))
        return invalid_argument(node.describe() + ": scale " + std::to_string(s) + " makes axis " +
                                std::to_string(d) + " too large");
      plan[d] = {static_cast<int64_t>(out), s};
    }
    return plan;
  }
  if (sizes->size() != n)
    return invalid_argument(node.describe() + ": sizes has " + std::to_string(sizes->size()) + " entries, expected " +
                            std::to_string(n));
  for (size_t i = 0; i < n; ++i) {
    const auto d = static_cast<size_t>(a.axes[i]);
    if ((*sizes)[i] < 0) return invalid_argument(node.describe() + ": sizes must be non-negative");
    if (in[d] == 0 && (*sizes)[i] != 0)
      return invalid_argument(node.describe() + ": cannot resize axis " + std::to_string(d) + " of size 0 to " +
                              std::to_string((*sizes)[i]));
  }
  if (a.policy == AspectPolicy::kStretch) {
    for (size_t i = 0; i < n; ++i) {
      const auto d = static_cast<size_t>(a.axes[i]);
      plan[d] = {(*sizes)[i], in[d] ? static_cast<double>((*sizes)[i]) / static_cast<double>(in[d]) : 1.0};
    }
    return plan;
  }
  double scale = a.policy == AspectPolicy::kNotLarger ? std::numeric_limits<double>::infinity() : 0.0;
  for (size_t i = 0; i < n; ++i) {
    const auto d = static_cast<size_t>(a.axes[i]);
    if (in[d] == 0) continue;
    const double s = static_cast<double>((*sizes)[i]) / static_cast<double>(in[d]);
    scale = a.policy == AspectPolicy::kNotLarger ? std::min(scale, s) : std::max(scale, s);
  }
  for (size_t i = 0; i < n; ++i) {
    const auto d = static_cast<size_t>(a.axes[i]);
    const double out = scale * static_cast<double>(in[d]) + 0.5;
    if (!(out < static_cast<double>(int64_t{1} << 40)))
      return invalid_argument(node.describe() + ": sizes give a too large or undefined aspect-ratio scale");
    plan[d] = {static_cast<int64_t>(out), scale};
  }
  return plan;
}

// floor(d * s) over a symbolic dim, where it has an exact dim expression.
Dim scaled_dim(const Dim& d, double s) {
  constexpr double kLimit = static_cast<double>(int64_t{1} << 40);
  if (d.is_const()) {
    const double out = std::floor(static_cast<double>(d.value()) * s);
    return out < kLimit ? Dim(static_cast<int64_t>(out)) : Dim();
  }
  if (s >= 1.0 && s < kLimit && s == std::floor(s)) return d * Dim(static_cast<int64_t>(s));
  const double inv = 1.0 / s;
  if (inv < kLimit && inv == std::floor(inv) && 1.0 / inv == s) return Dim::floor_div(d, Dim(static_cast<int64_t>(inv)));
  return Dim();
}

Status infer_resize(InferContext& ctx) {
  const SymShape& in = ctx.input_shape(0);
  const DType dt = ctx.input_dtype(0);
  if (!in.has_rank) {
    KILN_RETURN_IF_ERROR(parse_attrs(ctx.node(), 0).status());
    ctx.set_output(0, dt, SymShape::unranked());
    return ok_status();
  }
  KILN_ASSIGN_OR_RETURN(ResizeAttrs a, parse_attrs(ctx.node(), in.rank()));
  if (a.mode != Mode::kNearest && (dt == DType::kBool || dt == DType::kUndefined))
    return ctx.error("linear and cubic modes need a numeric input, got " + std::string(dtype_name(dt)));
  if (ctx.has_input(2) && !dtype_is_float(ctx.input_dtype(2))) return ctx.error("scales (input 2) must be a float tensor");
  if (ctx.has_input(3) && !dtype_is_integer(ctx.input_dtype(3))) return ctx.error("sizes (input 3) must be an int64 tensor");
  if (ctx.has_input(1) && !dtype_is_float(ctx.input_dtype(1))) return ctx.error("roi (input 1) must be a float tensor");
  bool scales_unknown = false, sizes_unknown = false;
  const bool has_scales = non_empty_input(ctx, 2, scales_unknown);
  const bool has_sizes = non_empty_input(ctx, 3, sizes_unknown);
  if (has_scales && has_sizes && !scales_unknown && !sizes_unknown)
    return ctx.error("give either scales or sizes, not both");
  if (!has_scales && !has_sizes) return ctx.error("one of scales (input 2) and sizes (input 3) is required");
  // Where emptiness is not known yet, sizes wins: older exports pass an
  // empty scales tensor next to it.
  const bool use_sizes = (has_sizes && !sizes_unknown) || !(has_scales && !scales_unknown) ? has_sizes : false;
  if (a.ctm == Ctm::kTfCropAndResize && !ctx.has_input(1))
    return ctx.error("coordinate_transformation_mode tf_crop_and_resize needs roi (input 1)");
  std::vector<Dim> out = in.dims;
  auto unknown_axes = [&] {
    for (int64_t d : a.axes) out[static_cast<size_t>(d)] = Dim();
  };
  if (use_sizes) {
    auto sizes = ctx.input_as_dims(3);
    if (!sizes) {
      unknown_axes();
    } else if (sizes->size() != a.axes.size()) {
      return ctx.error("sizes has " + std::to_string(sizes->size()) + " entries, expected " + std::to_string(a.axes.size()));
    } else if (a.policy == AspectPolicy::kStretch) {
      for (size_t i = 0; i < sizes->size(); ++i) {
        const Dim& s = (*sizes)[i];
        if (s.is_const() && s.value() < 0) return ctx.error("sizes must be non-negative");
        out[static_cast<size_t>(a.axes[i])] = s;
      }
    } else {
      const bool concrete = in.is_static() && SymShape(*sizes).is_static();
      if (!concrete) {
        unknown_axes();
      } else {
        const std::vector<int64_t> concrete_sizes = SymShape(*sizes).concrete();
        KILN_ASSIGN_OR_RETURN(std::vector<AxisPlan> plan,
                              plan_axes(ctx.node(), a, in.concrete(), nullptr, &concrete_sizes));
        for (size_t d = 0; d < plan.size(); ++d) out[d] = Dim(plan[d].out);
      }
    }
  } else {
    const Tensor* scales = ctx.input_value(2);
    if (!scales) {
      unknown_axes();
    } else {
      if (!dtype_is_float(scales->dtype())) return ctx.error("scales (input 2) must be a float tensor");
      if (scales->numel() != static_cast<int64_t>(a.axes.size()))
        return ctx.error("scales has " + std::to_string(scales->numel()) + " entries, expected " +
                         std::to_string(a.axes.size()));
      for (size_t i = 0; i < a.axes.size(); ++i) {
        const double s = scales->get_f64(static_cast<int64_t>(i));
        if (!(s > 0.0)) return ctx.error("scales must be positive, got " + std::to_string(s));
        const auto d = static_cast<size_t>(a.axes[i]);
        out[d] = scaled_dim(in.dims[d], s);
      }
    }
  }
  ctx.set_output(0, dt, SymShape(std::move(out)));
  return ok_status();
}

// ----------------------------------------------------------------- kernel

double input_coordinate(const ResizeAttrs& a, double x, double scale, int64_t in_len, int64_t out_len,
                        double roi_start, double roi_end) {
  const double in = static_cast<double>(in_len), out = static_cast<double>(out_len);
  switch (a.ctm) {
    case Ctm::kHalfPixel: return (x + 0.5) / scale - 0.5;
    case Ctm::kHalfPixelSymmetric: {
      const double adjustment = out / (scale * in);
      const double offset = in / 2.0 * (1.0 - adjustment);
      return offset + (x + 0.5) / scale - 0.5;
    }
    case Ctm::kPytorchHalfPixel: return out_len > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
    // The spec's length_resized is in * scale, unrounded when scales were
    // given (and equal to out_len when sizes were).
    case Ctm::kAlignCorners: return out_len > 1 ? x * (in - 1.0) / (in * scale - 1.0) : 0.0;
    case Ctm::kAsymmetric: return x / scale;
    case Ctm::kTfCropAndResize:
      return out_len > 1 ? roi_start * (in - 1.0) + x * (roi_end - roi_start) * (in - 1.0) / (out - 1.0)
                         : 0.5 * (roi_start + roi_end) * (in - 1.0);
  }
  return 0.0;
}

double cubic_kernel(double x, double A) {
  x = std::abs(x);
  if (x <= 1.0) return ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0;
  if (x < 2.0) return ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A;
  return 0.0;
}

// Weights of the taps at offsets `first + j` from the left neighbour, for
// the fractional position `ratio` in (0, 1].
std::vector<double> coefficients(const ResizeAttrs& a, double ratio, double scale, int64_t& first) {
  std::vector<double> c;
  if (a.mode == Mode::kLinear) {
    if (!a.antialias || scale >= 1.0) {
      first = 0;
      return {1.0 - ratio, ratio};
    }
    const auto start = static_cast<int64_t>(std::floor(-1.0 / scale) + 1.0);
    const int64_t n = 2 - 2 * start;
    first = start;
    double sum = 0.0;
    for (int64_t j = 0; j < n; ++j) {
      c.push_back(std::clamp(1.0 - std::abs((static_cast<double>(start + j) - ratio) * scale), 0.0, 1.0));
      sum += c.back();
    }
    for (double& w : c) w /= sum;
    return c;
  }
  if (!a.antialias || scale >= 1.0) {
    // The reference's closed forms for the taps at -1, 0, 1, 2.
    const double A = a.cubic_a, r = ratio, s = 1.0 - ratio;
    first = -1;
    return {((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A, ((A + 2) * r - (A + 3)) * r * r + 1,
            ((A + 2) * s - (A + 3)) * s * s + 1, ((A * (s + 1) - 5 * A) * (s + 1) + 8 * A) * (s + 1) - 4 * A};
  }
  const auto start = static_cast<int64_t>(std::floor(-2.0 / scale) + 1.0);
  first = start;
  double sum = 0.0;
  for (int64_t i = start; i < 2 - start; ++i) {
    c.push_back(cubic_kernel(scale * (static_cast<double>(i) - ratio), a.cubic_a));
    sum += c.back();
  }
  for (double& w : c) w /= sum;
  return c;
}

// Per-axis sampling: for each output index, taps (input index, weight) and
// whether the point lies outside the crop (tf_crop_and_resize).
struct AxisTaps {
  int64_t n = 0;                // taps per output index
  std::vector<int64_t> index;   // out_len * n, clamped to [0, in_len)
  std::vector<double> weight;   // out_len * n
  std::vector<bool> outside;    // out_len
  bool identity = false;        // output index i reads input i with weight 1
};

AxisTaps axis_taps(const ResizeAttrs& a, int64_t in_len, const AxisPlan& p, double roi_start, double roi_end) {
  AxisTaps t;
  t.outside.assign(static_cast<size_t>(p.out), false);
  for (int64_t o = 0; o < p.out; ++o) {
    const double x = input_coordinate(a, static_cast<double>(o), p.scale, in_len, p.out, roi_start, roi_end);
    if (a.ctm == Ctm::kTfCropAndResize && (x < 0.0 || x > static_cast<double>(in_len - 1)))
      t.outside[static_cast<size_t>(o)] = true;
    // The left neighbour x0 and ratio in (0, 1]: an integral x is reached
    // from its left neighbour with ratio 1, as in the reference.
    const double fl = std::floor(x);
    const double x0 = fl == x ? x - 1.0 : fl;
    const double ratio = x - x0;
    if (a.mode == Mode::kNearest) {
      bool right = false;
      switch (a.nearest) {
        case NearestMode::kRoundPreferFloor: right = ratio > 0.5; break;
        case NearestMode::kRoundPreferCeil: right = ratio >= 0.5; break;
        case NearestMode::kFloor: right = ratio == 1.0; break;
        case NearestMode::kCeil: right = true; break;
      }
      const double pick = std::clamp(right ? x0 + 1.0 : x0, 0.0, static_cast<double>(in_len - 1));
      t.n = 1;
      t.index.push_back(static_cast<int64_t>(pick));
      t.weight.push_back(1.0);
      continue;
    }
    int64_t first = 0;
    std::vector<double> c = coefficients(a, ratio, p.scale, first);
    t.n = static_cast<int64_t>(c.size());
    const auto base = static_cast<int64_t>(x0) + first;
    if (a.exclude_outside) {
      double sum = 0.0;
      for (size_t j = 0; j < c.size(); ++j) {
        const int64_t idx = base + static_cast<int64_t>(j);
        if (idx < 0 || idx >= in_len) c[j] = 0.0;
        sum += c[j];
      }
      if (sum != 0.0)
        for (double& w : c) w /= sum;
    }
    for (size_t j = 0; j < c.size(); ++j) {
      t.index.push_back(std::clamp<int64_t>(base + static_cast<int64_t>(j), 0, in_len - 1));
      t.weight.push_back(c[j]);
    }
  }
  // An axis that samples every input point exactly once is skipped.
  t.identity = p.out == in_len;
  for (int64_t o = 0; t.identity && o < p.out; ++o) {
    double w_self = 0.0, w_other = 0.0;
    for (int64_t j = 0; j < t.n; ++j) {
      const auto k = static_cast<size_t>(o * t.n + j);
      (t.index[k] == o ? w_self : w_other) += std::abs(t.weight[k]);
    }
    t.identity = w_self == 1.0 && w_other == 0.0 && !t.outside[static_cast<size_t>(o)];
  }
  return t;
}

template <typename T>
void store_value(T* dst, double v) {
  if constexpr (std::is_same_v<T, Half>) {
    *dst = Half(static_cast<float>(v));
  } else if constexpr (std::is_floating_point_v<T>) {
    *dst = static_cast<T>(v);
  } else if constexpr (std::is_same_v<T, bool>) {
    *dst = v != 0.0;
  } else {
    // Integers round to nearest and saturate, as onnxruntime does for uint8.
    const double r = std::nearbyint(v);
    const double lo = static_cast<double>(std::numeric_limits<T>::lowest());
    const double hi = static_cast<double>(std::numeric_limits<T>::max());
    *dst = r <= lo ? std::numeric_limits<T>::lowest() : r >= hi ? std::numeric_limits<T>::max() : static_cast<T>(r);
  }
}

Status resize_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Shape& in_shape = x.shape();
  const auto rank = static_cast<size_t>(x.rank());
  KILN_ASSIGN_OR_RETURN(ResizeAttrs a, parse_attrs(ctx.node(), x.rank()));
  const bool has_scales = ctx.has_input(2) && ctx.input(2).numel() > 0;
  const bool has_sizes = ctx.has_input(3) && ctx.input(3).numel() > 0;
  if (has_scales == has_sizes) return ctx.error("give exactly one of scales (input 2) and sizes (input 3)");
  std::vector<double> scales;
  std::vector<int64_t> sizes;
  if (has_scales) {
    for (int64_t i = 0; i < ctx.input(2).numel(); ++i) scales.push_back(ctx.input(2).get_f64(i));
  } else if (has_sizes) {
    KILN_ASSIGN_OR_RETURN(sizes, read_int_tensor(ctx, 3, "sizes"));
  }
  KILN_ASSIGN_OR_RETURN(std::vector<AxisPlan> plan,
                        plan_axes(ctx.node(), a, in_shape, has_scales ? &scales : nullptr, has_sizes ? &sizes : nullptr));
  // roi per axis, [0, 1] where not given.
  std::vector<double> roi_start(rank, 0.0), roi_end(rank, 1.0);
  if (a.ctm == Ctm::kTfCropAndResize) {
    const Tensor& roi = ctx.input(1);
    const size_t n = a.axes.size();
    if (roi.numel() != static_cast<int64_t>(2 * n))
      return ctx.error("roi has " + std::to_string(roi.numel()) + " entries, expected " + std::to_string(2 * n));
    for (size_t i = 0; i < n; ++i) {
      roi_start[static_cast<size_t>(a.axes[i])] = roi.get_f64(static_cast<int64_t>(i));
      roi_end[static_cast<size_t>(a.axes[i])] = roi.get_f64(static_cast<int64_t>(n + i));
    }
  }
  Shape out_shape(rank);
  for (size_t d = 0; d < rank; ++d) out_shape[d] = plan[d].out;
  KILN_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0, x.dtype(), out_shape));
  if (out->numel() == 0) return ok_status();
  std::vector<AxisTaps> taps(rank);
  bool any_outside = false;
  for (size_t d = 0; d < rank; ++d) {
    taps[d] = axis_taps(a, in_shape[d], plan[d], roi_start[d], roi_end[d]);
    for (bool b : taps[d].outside) any_outside |= b;
  }
  const size_t elem = dtype_size(x.dtype());

  if (a.mode == Mode::kNearest) {
    // A gather: each output element copies one input element.
    const std::vector<int64_t> strides = shape_strides(in_shape);
    std::vector<int64_t> counter(rank, 0);
    auto* dst = static_cast<unsigned char*>(out->raw_data());
    const auto* src = static_cast<const unsigned char*>(x.raw_data());
    for (int64_t e = 0; e < out->numel(); ++e) {
      int64_t off = 0;
      bool outside = false;
      for (size_t d = 0; d < rank; ++d) {
        const auto o = static_cast<size_t>(counter[d]);
        off += taps[d].index[o] * strides[d];
        outside |= taps[d].outside[o];
      }
      if (outside) out->set_f64(e, a.extrapolation);
      else std::memcpy(dst + static_cast<size_t>(e) * elem, src + static_cast<size_t>(off) * elem, elem);
      for (size_t d = rank; d-- > 0;) {
        if (++counter[d] < out_shape[d]) break;
        counter[d] = 0;
      }
    }
    return ok_status();
  }

  // Linear/cubic: one separable pass per axis that is not the identity.
  std::vector<double> cur(static_cast<size_t>(x.numel()));
  for (int64_t i = 0; i < x.numel(); ++i) cur[static_cast<size_t>(i)] = x.get_f64(i);
  Shape cur_shape = in_shape;
  for (size_t d = 0; d < rank; ++d) {
    if (taps[d].identity) continue;
    int64_t outer = 1, inner = 1;
    for (size_t i = 0; i < d; ++i) outer *= cur_shape[i];
    for (size_t i = d + 1; i < rank; ++i) inner *= cur_shape[i];
    const int64_t in_len = cur_shape[d], out_len = plan[d].out, n = taps[d].n;
    std::vector<double> next(static_cast<size_t>(outer * out_len * inner), 0.0);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < out_len; ++i) {
        double* row = next.data() + (o * out_len + i) * inner;
        for (int64_t j = 0; j < n; ++j) {
          const auto k = static_cast<size_t>(i * n + j);
          const double w = taps[d].weight[k];
          if (w == 0.0) continue;
          const double* from = cur.data() + (o * in_len + taps[d].index[k]) * inner;
          for (int64_t q = 0; q < inner; ++q) row[q] += w * from[q];
        }
      }
    }
    cur = std::move(next);
    cur_shape[d] = out_len;
  }
  std::vector<int64_t> counter(rank, 0);
  visit_dtype(x.dtype(), [&]<typename T>() {
    T* dst = out->data<T>();
    for (int64_t e = 0; e < out->numel(); ++e) {
      bool outside = false;
      if (any_outside)
        for (size_t d = 0; d < rank; ++d) outside |= taps[d].outside[static_cast<size_t>(counter[d])];
      store_value<T>(dst + e, outside ? a.extrapolation : cur[static_cast<size_t>(e)]);
      if (any_outside)
        for (size_t d = rank; d-- > 0;) {
          if (++counter[d] < out_shape[d]) break;
          counter[d] = 0;
        }
    }
  });
  return ok_status();
}

}  // namespace

void register_resize_op(OpRegistry& r) { add_op(r, {"Resize", "", 1, 4, 1, 1, infer_resize, resize_kernel, {1, 2, 3}}, MappingType::kOneToMany); }

}  // namespace kiln::ops::movement
