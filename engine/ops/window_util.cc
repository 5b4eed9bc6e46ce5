// Sliding-window attributes and output sizes; see window_util.h.
#include "engine/ops/window_util.h"

#include <string>

namespace kiln::ops {

namespace {

// The largest kernel size, stride, dilation or pad accepted. Far beyond any
// real window, and small enough that (kernel - 1) * dilation + pads cannot
// overflow int64 nor the shaders' 32-bit geometry: a model asking for more
// is refused here rather than given a wrapped output size.
constexpr int64_t kMaxWindowValue = INT32_MAX;

Status attr_error(const ir::Node& node, const std::string& message) {
  return invalid_argument(node.describe() + ": " + message);
}

// Reads an INTS attribute of `count` values, or `fallback` repeated.
StatusOr<std::vector<int64_t>> read_per_axis(const ir::Node& node, const char* name, size_t count, int64_t fallback,
                                             int64_t min_value) {
  std::vector<int64_t> v = node.attr_ints(name, std::vector<int64_t>(count, fallback));
  if (v.size() != count)
    return attr_error(node, std::string(name) + " has " + std::to_string(v.size()) + " values, expected " +
                                std::to_string(count) + " (one per spatial axis)");
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] < min_value)
      return attr_error(node, std::string(name) + "[" + std::to_string(i) + "] = " + std::to_string(v[i]) +
                                  (min_value > 0 ? " must be positive" : " must be non-negative"));
    if (v[i] > kMaxWindowValue)
      return attr_error(node, std::string(name) + "[" + std::to_string(i) + "] = " + std::to_string(v[i]) +
                                  " is larger than the limit of " + std::to_string(kMaxWindowValue));
  }
  return v;
}

// in + c without building "(in+0)" or "(in+-3)".
ir::Dim add_const(const ir::Dim& in, int64_t c) {
  if (c >= 0) return in + ir::Dim(c);
  return in - ir::Dim(-c);
}

}  // namespace

StatusOr<WindowAttrs> read_window_attrs(const ir::Node& node, size_t spatial, bool kernel_required) {
  WindowAttrs w;
  const std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET" || auto_pad.empty()) {
    w.auto_pad = AutoPad::kNotSet;
  } else if (auto_pad == "SAME_UPPER") {
    w.auto_pad = AutoPad::kSameUpper;
  } else if (auto_pad == "SAME_LOWER") {
    w.auto_pad = AutoPad::kSameLower;
  } else if (auto_pad == "VALID") {
    w.auto_pad = AutoPad::kValid;
  } else {
    return attr_error(node, "unknown auto_pad '" + auto_pad + "' (expected NOTSET, SAME_UPPER, SAME_LOWER or VALID)");
  }

  if (node.attr("kernel_shape")) {
    KILN_ASSIGN_OR_RETURN(w.kernel, read_per_axis(node, "kernel_shape", spatial, 1, 1));
  } else if (kernel_required) {
    return attr_error(node, "the kernel_shape attribute is required");
  }
  KILN_ASSIGN_OR_RETURN(w.strides, read_per_axis(node, "strides", spatial, 1, 1));
  KILN_ASSIGN_OR_RETURN(w.dilations, read_per_axis(node, "dilations", spatial, 1, 1));
  std::vector<int64_t> pads = node.attr_ints("pads", std::vector<int64_t>(2 * spatial, 0));
  if (pads.size() != 2 * spatial)
    return attr_error(node, "pads has " + std::to_string(pads.size()) + " values, expected " +
                                std::to_string(2 * spatial) + " (begin and end for each spatial axis)");
  for (size_t i = 0; i < pads.size(); ++i) {
    if (pads[i] < 0)
      return attr_error(node, "pads[" + std::to_string(i) + "] = " + std::to_string(pads[i]) + " must be non-negative");
    if (pads[i] > kMaxWindowValue)
      return attr_error(node, "pads[" + std::to_string(i) + "] = " + std::to_string(pads[i]) +
                                  " is larger than the limit of " + std::to_string(kMaxWindowValue));
  }
  // With auto_pad set, explicit pads are ignored (exporters often write zeros).
  if (w.auto_pad != AutoPad::kNotSet) pads.assign(2 * spatial, 0);
  w.pads = std::move(pads);
  w.ceil_mode = node.attr_int("ceil_mode", 0) != 0;
  return w;
}

ir::Dim dilated_kernel(const ir::Dim& kernel, int64_t dilation) {
  // Dim arithmetic folds constants with overflow checks: a kernel taken from
  // a weight's huge declared shape gives an unknown size, never a wrapped one.
  return (kernel - ir::Dim(1)) * ir::Dim(dilation) + ir::Dim(1);
}

ir::Dim window_output_dim(const WindowAttrs& w, size_t axis, const ir::Dim& in, const ir::Dim& kernel) {
  const size_t n = w.strides.size();
  const int64_t stride = w.strides[axis];
  if (w.auto_pad == AutoPad::kSameUpper || w.auto_pad == AutoPad::kSameLower)
    return ir::Dim::ceil_div(in, ir::Dim(stride));
  const int64_t pb = w.pads[axis], pe = w.pads[axis + n];
  const ir::Dim eff = dilated_kernel(kernel, w.dilations[axis]);
  // pb + pe <= 2 * kMaxWindowValue, so neither this sum nor the difference
  // with a constant (non-negative) eff overflows.
  const ir::Dim span = eff.is_const() ? add_const(in, pb + pe - eff.value()) : add_const(in, pb + pe) - eff;
  if (!w.ceil_mode) return ir::Dim::floor_div(span, ir::Dim(stride)) + ir::Dim(1);
  // The last window must start inside the input or the begin padding.
  const ir::Dim ceil_out = ir::Dim::ceil_div(span, ir::Dim(stride)) + ir::Dim(1);
  const ir::Dim start_limit = ir::Dim::floor_div(add_const(in, pb - 1), ir::Dim(stride)) + ir::Dim(1);
  return ir::Dim::min(ceil_out, start_limit);
}

std::pair<int64_t, int64_t> window_pads(const WindowAttrs& w, size_t axis, int64_t in, int64_t kernel) {
  const size_t n = w.strides.size();
  if (w.auto_pad == AutoPad::kSameUpper || w.auto_pad == AutoPad::kSameLower) {
    const int64_t stride = w.strides[axis];
    const int64_t out = ceil_div_i64(in, stride);
    const int64_t eff = (kernel - 1) * w.dilations[axis] + 1;
    const int64_t total = std::max<int64_t>(0, (out - 1) * stride + eff - in);
    if (w.auto_pad == AutoPad::kSameUpper) return {total / 2, total - total / 2};
    return {total - total / 2, total / 2};
  }
  return {w.pads[axis], w.pads[axis + n]};
}

StatusOr<Geometry3> make_geometry3(const std::vector<int64_t>& in, const std::vector<int64_t>& out,
                                   const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                                   const std::vector<int64_t>& dilations, const std::vector<int64_t>& pad_begin,
                                   const std::vector<int64_t>& pad_end) {
  const size_t n = in.size();
  if (n == 0 || n > 3)
    return unimplemented("sliding windows over " + std::to_string(n) + " spatial axes are not supported (1 to 3)");
  Geometry3 g;
  const size_t off = 3 - n;
  for (size_t i = 0; i < n; ++i) {
    g.in[off + i] = in[i];
    g.out[off + i] = out[i];
    g.kernel[off + i] = kernel[i];
    g.stride[off + i] = strides[i];
    g.dilation[off + i] = dilations[i];
    g.pad_begin[off + i] = pad_begin[i];
    g.pad_end[off + i] = pad_end[i];
  }
  return g;
}

}  // namespace kiln::ops
