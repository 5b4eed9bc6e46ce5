// Device lowerings of the data-movement family: views (Reshape, Flatten,
// Squeeze, Unsqueeze, Identity, Dropout), Transpose, Concat, Split, Slice,
// Gather/GatherElements/GatherND, Expand, Tile, Pad, Resize (nearest,
// linear, cubic), DepthToSpace/SpaceToDepth, and the generators ConstantOfShape,
// EyeLike, Trilu, OneHot.
//
// Views alias their input when both are buffers of one element type (no
// kernel at all); otherwise, and for every other op, one kMap kernel per
// output computes each output element's source coordinates and reads the
// input through its accessor, so any storage works on either side.
// Everything that decides which element is read — axes, permutations, pads,
// slice starts, scales — must be known at plan time (constants, or shape
// values as symbolic dims) or be host values per run (small graph inputs:
// the kernel then takes per-axis parameters computed on the host, see
// LoweringContext::host_param); an op whose index data is only on the device
// (Gather's indices, OneHot's indices) reads it through an accessor.
// Also ScatterElements/ScatterND and CumSum, as map kernels. NonZero and
// Range (data-dependent sizes) are not lowered (host fallback).
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "engine/ops/slice_range.h"
#include "planner/glsl_codegen.h"
#include "planner/lower_util.h"
#include "planner/lowering.h"

namespace kiln::planner {
namespace {

using ir::Dim;

std::string in_name(size_t i) { return "x" + std::to_string(i); }
std::string oc(size_t k) { return "oc" + std::to_string(k); }

// Input i as dims when known at plan time. Constant tensors are read as
// int64 directly (INT64_MAX "to the end" bounds do not survive a trip
// through double).
std::optional<std::vector<Dim>> input_dims(const LoweringContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return std::nullopt;
  if (const Tensor* t = ctx.input_constant(i)) {
    if (!dtype_is_integer(t->dtype()) || t->rank() > 1) return std::nullopt;
    std::vector<Dim> d;
    for (int64_t v : t->to_i64_vector()) d.emplace_back(v);
    return d;
  }
  return ctx.input_dims_value(i);
}

// A copy kernel: output element oi is input element oi (row-major order).
void emit_copy(LoweringContext& ctx, TensorId in, size_t out) {
  std::vector<KernelTensor> t = {ctx.bind("x0", in), ctx.bind("y", ctx.output(out), true)};
  ctx.emit(map_kernel("copy", std::move(t), "v = x0_ld(oi);"));
}

// --------------------------------------------------------------------- views

Status lower_view(LoweringContext& ctx) {
  const TensorId in = ctx.input(0);
  if (!ctx.alias_output(0, in).ok()) emit_copy(ctx, in, 0);
  return ok_status();
}

Status lower_dropout(LoweringContext& ctx) {
  if (const Tensor* t = ctx.input_constant(2); t && t->numel() >= 1 && t->get_f64(0) != 0.0)
    return ctx.error("training_mode=true is not supported: Kiln runs inference only");
  if (ctx.has_input(2) && !ctx.input_constant(2)) return ctx.unsupported("training_mode is not a constant");
  KILN_RETURN_IF_ERROR(lower_view(ctx));
  if (ctx.has_output(1)) {
    // Inference keeps every element: the mask is all true.
    std::vector<KernelTensor> t = {ctx.bind("y", ctx.output(1), true)};
    ctx.emit(map_kernel("dropout_mask", std::move(t), "v = 1;"));
  }
  return ok_status();
}

// ----------------------------------------------------------------- Transpose

Status lower_transpose(LoweringContext& ctx) {
  const size_t rank = ctx.input_shape(0).size();
  std::vector<int64_t> perm = ctx.node().attr_ints("perm");
  if (!ctx.node().attr("perm"))
    for (size_t k = 0; k < rank; ++k) perm.push_back(static_cast<int64_t>(rank - 1 - k));
  if (perm.size() != rank) return ctx.error("perm does not match the input's rank");
  std::vector<std::string> c(std::max<size_t>(rank, 1), "0");
  for (size_t k = 0; k < rank; ++k) {
    if (perm[k] < 0 || perm[k] >= static_cast<int64_t>(rank)) return ctx.error("perm is not a permutation");
    c[static_cast<size_t>(perm[k])] = oc(k);  // output axis k is input axis perm[k]
  }
  std::vector<KernelTensor> t = {ctx.bind("x0", ctx.input(0)), ctx.bind("y", ctx.output(0), true)};
  ctx.emit(map_kernel("transpose", std::move(t), "v = x0_at(" + join_args(c) + ");"));
  return ok_status();
}

// -------------------------------------------------------------- Concat/Split

Status lower_concat(LoweringContext& ctx) {
  const int64_t rank = static_cast<int64_t>(ctx.output_shape(0).size());
  auto axis = normalize_axis(ctx.node().attr_int("axis", 0), rank);
  if (!axis || rank == 0) return ctx.error("axis is out of range");
  const auto a = static_cast<size_t>(*axis);
  std::vector<KernelTensor> t;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) return ctx.error("input " + std::to_string(i) + " is missing");
    t.push_back(ctx.bind(in_name(i), ctx.input(i)));
  }
  t.push_back(ctx.bind("y", ctx.output(0), true));
  // Walks the inputs along the axis, subtracting each one's extent.
  std::vector<std::string> c;
  for (size_t k = 0; k < static_cast<size_t>(rank); ++k) c.push_back(k == a ? "c" : oc(k));
  const std::string coords = join_args(c);
  const std::string da = "_D" + std::to_string(a);
  std::string body = "int c = " + oc(a) + ";\n";
  const size_t n = ctx.num_inputs();
  for (size_t i = 0; i < n; ++i) {
    const std::string x = in_name(i);
    const std::string read = "v = " + x + "_at(" + coords + ");";
    if (n == 1) body += read + "\n";
    else if (i == 0) body += "if (c < " + x + da + ") " + read + "\n";
    else if (i + 1 < n) body += "else if ((c -= " + in_name(i - 1) + da + ") < " + x + da + ") " + read + "\n";
    else body += "else { c -= " + in_name(i - 1) + da + "; " + read + " }\n";
  }
  ctx.emit(map_kernel("concat", std::move(t), body));
  return ok_status();
}

Status lower_split(LoweringContext& ctx) {
  const int64_t rank = static_cast<int64_t>(ctx.input_shape(0).size());
  auto axis = normalize_axis(ctx.node().attr_int("axis", 0), rank);
  if (!axis) return ctx.error("axis is out of range");
  const auto a = static_cast<size_t>(*axis);
  const TensorId in = ctx.input(0);
  Dim start(0);
  for (size_t i = 0; i < ctx.num_outputs(); ++i) {
    if (!ctx.has_output(i)) return ctx.unsupported("an omitted output");
    std::vector<std::string> c;
    for (size_t k = 0; k < static_cast<size_t>(rank); ++k) c.push_back(k == a ? oc(k) + " + split_start" : oc(k));
    KernelDesc d = map_kernel("split", {ctx.bind("x0", in), ctx.bind("y", ctx.output(i), true)},
                              "v = x0_at(" + join_args(c) + ");");
    d.params.push_back({"split_start", start});
    ctx.emit(std::move(d));
    start = start + ctx.output_shape(i)[a];
  }
  return ok_status();
}

// --------------------------------------------------------------------- Slice

// Axis k's clamped range of a Slice from its host inputs (starts, ends,
// axes, steps), or the whole axis when no entry names it.
StatusOr<ops::SliceRange> host_slice_range(const HostParamInputs& in, bool has_axes, bool has_steps, size_t k) {
  const int64_t rank = static_cast<int64_t>(in.shapes[0].size());
  const int64_t dim = in.shapes[0][k];
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> starts, host_ints(in, 1, "starts"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> ends, host_ints(in, 2, "ends"));
  std::vector<int64_t> axes, steps(starts.size(), 1);
  if (has_axes) {
    KILN_ASSIGN_OR_RETURN(axes, host_ints(in, 3, "axes"));
  } else {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (has_steps) {
    KILN_ASSIGN_OR_RETURN(steps, host_ints(in, 4, "steps"));
  }
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    return invalid_argument("starts, ends, axes and steps differ in length");
  for (size_t i = 0; i < axes.size(); ++i) {
    auto a = normalize_axis(axes[i], rank);
    if (!a) return invalid_argument("axis " + std::to_string(axes[i]) + " is out of range");
    if (steps[i] == 0) return invalid_argument("steps must be non-zero");
    if (*a == static_cast<int64_t>(k)) return ops::slice_concrete(starts[i], ends[i], steps[i], dim);
  }
  return ops::SliceRange{0, dim, 1};
}

// A Slice whose bounds are host values known per run: every axis reads from
// a start and with a step the host computes.
Status lower_slice_host(LoweringContext& ctx) {
  const size_t rank = ctx.input_shape(0).size();
  const bool has_axes = ctx.has_input(3), has_steps = ctx.has_input(4);
  KernelDesc d = map_kernel("slice", {ctx.bind("x0", ctx.input(0)), ctx.bind("y", ctx.output(0), true)}, "");
  std::vector<std::string> c;
  for (size_t k = 0; k < rank; ++k) {
    const std::string K = std::to_string(k);
    d.params.push_back({"slice_start" + K, ctx.host_param([=](const HostParamInputs& in) -> StatusOr<int64_t> {
                          KILN_ASSIGN_OR_RETURN(ops::SliceRange r, host_slice_range(in, has_axes, has_steps, k));
                          return r.start;
                        })});
    d.params.push_back({"slice_step" + K, ctx.host_param([=](const HostParamInputs& in) -> StatusOr<int64_t> {
                          KILN_ASSIGN_OR_RETURN(ops::SliceRange r, host_slice_range(in, has_axes, has_steps, k));
                          return r.step;
                        })});
    c.push_back("slice_start" + K + " + " + oc(k) + " * slice_step" + K);
  }
  if (c.empty()) c.push_back("0");
  d.body = "{\nv = x0_at(" + join_args(c) + ");\n}";
  ctx.emit(std::move(d));
  return ok_status();
}

Status lower_slice(LoweringContext& ctx) {
  const std::vector<Dim>& in_shape = ctx.input_shape(0);
  const auto rank = static_cast<int64_t>(in_shape.size());
  auto starts = input_dims(ctx, 1);
  const bool plan_known = starts && (!ctx.has_input(3) || constant_ints(ctx, 3)) &&
                          (!ctx.has_input(4) || constant_ints(ctx, 4));
  if (!plan_known && inputs_on_host(ctx, 1, 4)) return lower_slice_host(ctx);
  if (!starts) return ctx.unsupported("starts are not known at plan time");
  std::vector<int64_t> axes, steps(starts->size(), 1);
  if (ctx.has_input(3)) {
    auto a = constant_ints(ctx, 3);
    if (!a) return ctx.unsupported("axes are not constants");
    axes = *a;
  } else {
    for (size_t i = 0; i < starts->size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (ctx.has_input(4)) {
    auto s = constant_ints(ctx, 4);
    if (!s) return ctx.unsupported("steps are not constants");
    steps = *s;
  }
  if (axes.size() != starts->size() || steps.size() != starts->size())
    return ctx.error("starts, axes and steps differ in length");
  std::vector<std::string> c;
  for (int64_t k = 0; k < std::max<int64_t>(rank, 1); ++k) c.push_back(oc(static_cast<size_t>(k)));
  KernelDesc d = map_kernel("slice", {ctx.bind("x0", ctx.input(0)), ctx.bind("y", ctx.output(0), true)}, "");
  for (size_t i = 0; i < axes.size(); ++i) {
    auto a = normalize_axis(axes[i], rank);
    if (!a) return ctx.error("axis " + std::to_string(axes[i]) + " is out of range");
    const int64_t step = steps[i];
    if (step == 0) return ctx.error("steps must be non-zero");
    const auto k = static_cast<size_t>(*a);
    const std::string p = "slice_start" + std::to_string(k);
    d.params.push_back({p, slice_start((*starts)[i], step, in_shape[k])});
    // |step| beyond the dim reads one element; clamping keeps the literal valid.
    const int64_t st = std::clamp<int64_t>(step, -(int64_t{1} << 30), int64_t{1} << 30);
    c[k] = p + " + " + oc(k) + (st == 1 ? "" : " * " + glsl_int(st));
  }
  d.body = "{\nv = x0_at(" + join_args(c) + ");\n}";
  ctx.emit(std::move(d));
  return ok_status();
}

// -------------------------------------------------------------------- Gather

// Statements declaring `int j` = index expression `e` wrapped into [0, n).
std::string wrapped_index(const std::string& j, const std::string& e, const std::string& n) {
  return "int " + j + " = " + e + ";\n" + j + " = " + j + " < 0 ? " + j + " + " + n + " : " + j + ";\n" + j +
         " = clamp(" + j + ", 0, " + n + " - 1);\n";
}

Status lower_gather(LoweringContext& ctx) {
  const auto r = static_cast<int64_t>(ctx.input_shape(0).size());
  const size_t q = ctx.input_shape(1).size();
  auto axis = normalize_axis(ctx.node().attr_int("axis", 0), r);
  if (!axis) return ctx.error("axis is out of range");
  const auto a = static_cast<size_t>(*axis);
  const std::string n = "x0_D" + std::to_string(a);
  std::vector<KernelTensor> t = {ctx.bind("x0", ctx.input(0))};
  std::string body;
  const Tensor* ci = ctx.input_constant(1);
  if (ci && ci->numel() == 1) {
    body = wrapped_index("j", glsl_int(ci->get_i64(0)), n);  // one index: baked in
  } else {
    t.push_back(ctx.bind("x1", ctx.input(1)));
    std::vector<std::string> ic;
    for (size_t k = 0; k < q; ++k) ic.push_back(oc(a + k));
    if (ic.empty()) ic.push_back("0");
    body = wrapped_index("j", "x1_at(" + join_args(ic) + ")", n);
  }
  t.push_back(ctx.bind("y", ctx.output(0), true));
  std::vector<std::string> c;
  for (size_t k = 0; k < static_cast<size_t>(r); ++k) c.push_back(k < a ? oc(k) : k == a ? "j" : oc(k + q - 1));
  body += "v = x0_at(" + join_args(c) + ");";
  ctx.emit(map_kernel("gather", std::move(t), body));
  return ok_status();
}

Status lower_gather_elements(LoweringContext& ctx) {
  const auto r = static_cast<int64_t>(ctx.input_shape(0).size());
  auto axis = normalize_axis(ctx.node().attr_int("axis", 0), r);
  if (!axis) return ctx.error("axis is out of range");
  const auto a = static_cast<size_t>(*axis);
  std::vector<KernelTensor> t = {ctx.bind("x0", ctx.input(0)), ctx.bind("x1", ctx.input(1)),
                                 ctx.bind("y", ctx.output(0), true)};
  std::string body = wrapped_index("j", broadcast_load(t[1], t[2].shape), "x0_D" + std::to_string(a));
  std::vector<std::string> c;
  for (size_t k = 0; k < static_cast<size_t>(r); ++k) c.push_back(k == a ? "j" : oc(k));
  body += "v = x0_at(" + join_args(c) + ");";
  ctx.emit(map_kernel("gather_elements", std::move(t), body));
  return ok_status();
}

Status lower_gather_nd(LoweringContext& ctx) {
  const std::vector<Dim>& data = ctx.input_shape(0);
  const std::vector<Dim>& idx = ctx.input_shape(1);
  const size_t r = data.size(), q = idx.size();
  const int64_t b = ctx.node().attr_int("batch_dims", 0);
  if (q < 1 || !idx.back().is_const()) return ctx.unsupported("the last dim of indices is not a constant");
  const auto m = static_cast<size_t>(idx.back().value());
  if (b < 0 || static_cast<size_t>(b) + m > r) return ctx.error("indices do not fit the data's rank");
  const auto bd = static_cast<size_t>(b);
  std::vector<KernelTensor> t = {ctx.bind("x0", ctx.input(0)), ctx.bind("x1", ctx.input(1)),
                                 ctx.bind("y", ctx.output(0), true)};
  std::vector<std::string> tuple;  // indices coords of the tuple, without the last
  for (size_t k = 0; k + 1 < q; ++k) tuple.push_back(oc(k));
  std::string body;
  std::vector<std::string> c;
  for (size_t k = 0; k < bd; ++k) c.push_back(oc(k));
  for (size_t k = 0; k < m; ++k) {
    std::vector<std::string> ic = tuple;
    ic.push_back(std::to_string(k));
    const std::string j = "j" + std::to_string(k);
    body += wrapped_index(j, "x1_at(" + join_args(ic) + ")", "x0_D" + std::to_string(bd + k));
    c.push_back(j);
  }
  for (size_t k = bd + m; k < r; ++k) c.push_back(oc(q - 1 + k - bd - m));
  body += "v = x0_at(" + join_args(c) + ");";
  ctx.emit(map_kernel("gather_nd", std::move(t), body));
  return ok_status();
}

// ---------------------------------------------------------------- Expand/Tile

Status lower_expand(LoweringContext& ctx) {
  std::vector<KernelTensor> t = {ctx.bind("x0", ctx.input(0)), ctx.bind("y", ctx.output(0), true)};
  const std::string body = "v = " + broadcast_load(t[0], t[1].shape) + ";";
  ctx.emit(map_kernel("expand", std::move(t), body));
  return ok_status();
}

Status lower_tile(LoweringContext& ctx) {
  std::vector<KernelTensor> t = {ctx.bind("x0", ctx.input(0)), ctx.bind("y", ctx.output(0), true)};
  const std::vector<Dim>& in = t[0].shape;
  const std::vector<Dim>& out = t[1].shape;
  if (in.size() != out.size()) return ctx.error("repeats do not match the input's rank");
  std::vector<std::string> c;
  for (size_t k = 0; k < in.size(); ++k) {
    if (in[k].is_const() && in[k].value() == 1) c.push_back("0");
    else if (in[k].same_as(out[k])) c.push_back(oc(k));
    else c.push_back(oc(k) + " % x0_D" + std::to_string(k));
  }
  if (c.empty()) c.push_back("0");
  ctx.emit(map_kernel("tile", std::move(t), "v = x0_at(" + join_args(c) + ");"));
  return ok_status();
}

// ----------------------------------------------------------------------- Pad

Status lower_pad(LoweringContext& ctx) {
  const std::string mode = ctx.node().attr_string("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    return ctx.error("unknown mode '" + mode + "'");
  const std::vector<Dim>& in_shape = ctx.input_shape(0);
  const auto rank = static_cast<int64_t>(in_shape.size());
  auto pads = input_dims(ctx, 1);
  std::optional<std::vector<int64_t>> axes_v;
  if (ctx.has_input(3)) axes_v = constant_ints(ctx, 3);
  std::vector<Dim> begin(static_cast<size_t>(rank), Dim(0));
  if (pads && (!ctx.has_input(3) || axes_v)) {
    std::vector<int64_t> axes;
    if (axes_v) {
      for (int64_t x : *axes_v) {
        auto n = normalize_axis(x, rank);
        if (!n) return ctx.error("axis " + std::to_string(x) + " is out of range");
        axes.push_back(*n);
      }
    } else {
      for (int64_t k = 0; k < rank; ++k) axes.push_back(k);
    }
    if (pads->size() != 2 * axes.size()) return ctx.error("pads has the wrong length");
    for (size_t i = 0; i < axes.size(); ++i) begin[static_cast<size_t>(axes[i])] = (*pads)[i];
  } else if (ctx.input_on_host(1) && (!ctx.has_input(3) || ctx.input_on_host(3))) {
    // Pads (and axes) are host values per run: each axis's leading pad is
    // a parameter the host computes.
    const bool has_axes = ctx.has_input(3);
    for (size_t k = 0; k < static_cast<size_t>(rank); ++k)
      begin[k] = ctx.host_param([=](const HostParamInputs& in) -> StatusOr<int64_t> {
        KILN_ASSIGN_OR_RETURN(std::vector<int64_t> p, host_ints(in, 1, "pads"));
        std::vector<int64_t> axes;
        if (has_axes) {
          KILN_ASSIGN_OR_RETURN(axes, host_ints(in, 3, "axes"));
        } else {
          for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
        }
        if (p.size() != 2 * axes.size()) return invalid_argument("pads has the wrong length");
        for (size_t i = 0; i < axes.size(); ++i)
          if (normalize_axis(axes[i], rank) == static_cast<int64_t>(k)) return p[i];
        return int64_t{0};
      });
  } else {
    return ctx.unsupported("pads are not known at plan time");
  }
  std::vector<KernelTensor> t = {ctx.bind("x0", ctx.input(0))};
  const bool f = dtype_is_float(ctx.input_dtype(0));
  std::string fill = f ? "0.0" : "0";
  if (mode == "constant" && ctx.has_input(2)) {
    if (const Tensor* cv = ctx.input_constant(2)) {
      if (cv->numel() > 0) fill = f ? glsl_float(cv->get_f64(0)) : glsl_int(cv->get_i64(0));
    } else {
      t.push_back(ctx.bind("x2", ctx.input(2)));
      fill = "x2_ld(0)";
    }
  }
  t.push_back(ctx.bind("y", ctx.output(0), true));
  KernelDesc d = map_kernel("pad_" + mode, std::move(t), "");
  std::string body = "bool inside = true;\n";
  std::vector<std::string> c;
  for (size_t k = 0; k < static_cast<size_t>(rank); ++k) {
    if (begin[k].is_const() && begin[k].value() == 0 && in_shape[k].same_as(ctx.output_shape(0)[k])) {
      c.push_back(oc(k));
      continue;
    }
    const std::string i = "i" + std::to_string(k), n = "x0_D" + std::to_string(k);
    const std::string p = "pad_begin" + std::to_string(k);
    d.params.push_back({p, begin[k]});
    body += "int " + i + " = " + oc(k) + " - " + p + ";\n";
    if (mode == "constant") {
      body += "inside = inside && " + i + " >= 0 && " + i + " < " + n + ";\n";
    } else if (mode == "edge") {
      body += i + " = clamp(" + i + ", 0, " + n + " - 1);\n";
    } else if (mode == "wrap") {
      body += i + " = ((" + i + " % " + n + ") + " + n + ") % " + n + ";\n";
    } else {  // reflect, periodic when the pad is wider than the axis
      body += "if (" + n + " == 1) " + i + " = 0;\nelse { int p = 2 * (" + n + " - 1); " + i + " = ((" + i +
              " % p) + p) % p; if (" + i + " >= " + n + ") " + i + " = p - " + i + "; }\n";
    }
    c.push_back(i);
  }
  if (c.empty()) c.push_back("0");
  body += "v = inside ? x0_at(" + join_args(c) + ") : " + fill + ";";
  d.body = "{\n" + body + "\n}";
  ctx.emit(std::move(d));
  return ok_status();
}

// -------------------------------------------------------------------- Resize

// Resize with nearest, linear or cubic interpolation (no antialias) for the
// coordinate modes that depend only on the output position (not
// tf_crop_and_resize): each resized axis maps its output coordinate to a
// float input coordinate, picks its taps, and the taps of all axes combine.
Status lower_resize(LoweringContext& ctx) {
  const ir::Node& node = ctx.node();
  const std::string mode = node.attr_string("mode", "nearest");
  const std::string ctm = node.attr_string("coordinate_transformation_mode", "half_pixel");
  const std::string nearest = node.attr_string("nearest_mode", "round_prefer_floor");
  if (mode != "nearest" && mode != "linear" && mode != "cubic") return ctx.unsupported("mode '" + mode + "'");
  if (ctm != "half_pixel" && ctm != "half_pixel_symmetric" && ctm != "pytorch_half_pixel" && ctm != "align_corners" &&
      ctm != "asymmetric")
    return ctx.unsupported("coordinate_transformation_mode '" + ctm + "'");
  if (node.attr_string("keep_aspect_ratio_policy", "stretch") != "stretch")
    return ctx.unsupported("keep_aspect_ratio_policy other than stretch");
  if (mode != "nearest" && node.attr_int("antialias", 0) != 0) return ctx.unsupported("antialias");
  if (mode != "nearest" && !dtype_is_float(ctx.input_dtype(0))) return ctx.unsupported(mode + " resize of integers");
  const std::vector<Dim>& in = ctx.input_shape(0);
  const std::vector<Dim>& out = ctx.output_shape(0);
  const auto rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> axes;
  if (node.attr("axes")) {
    for (int64_t x : node.attr_ints("axes")) {
      auto n = normalize_axis(x, rank);
      if (!n) return ctx.error("axis " + std::to_string(x) + " is out of range");
      axes.push_back(*n);
    }
  } else {
    for (int64_t k = 0; k < rank; ++k) axes.push_back(k);
  }
  // Sizes (the output dims say everything) or constant scales.
  const bool sizes = ctx.has_input(3) && !(ctx.input_shape(3).size() == 1 && ctx.input_shape(3)[0].is_const() &&
                                           ctx.input_shape(3)[0].value() == 0);
  // Each resized axis's scale as a GLSL float expression: a literal for
  // constant scales, a host parameter (float bits) for scales given per run.
  std::vector<std::string> scale(static_cast<size_t>(rank), "1.0");
  std::vector<bool> resized(static_cast<size_t>(rank), false);
  std::vector<KernelParam> params;
  if (sizes) {
    for (int64_t a : axes) resized[static_cast<size_t>(a)] = !in[static_cast<size_t>(a)].same_as(out[static_cast<size_t>(a)]);
  } else if (const Tensor* s = ctx.input_constant(2)) {
    if (s->numel() != static_cast<int64_t>(axes.size())) return ctx.error("scales has the wrong length");
    for (size_t i = 0; i < axes.size(); ++i) {
      const double v = s->get_f64(static_cast<int64_t>(i));
      const auto k = static_cast<size_t>(axes[i]);
      scale[k] = glsl_float(v);
      resized[k] = v != 1.0;
    }
  } else if (ctx.input_on_host(2)) {
    for (size_t i = 0; i < axes.size(); ++i) {
      const auto k = static_cast<size_t>(axes[i]);
      if (in[k].same_as(out[k])) continue;
      const std::string p = "resize_scale" + std::to_string(k);
      params.push_back({p, ctx.host_param([i, n = axes.size()](const HostParamInputs& h) -> StatusOr<int64_t> {
                          const Tensor* t = h.values[2];
                          if (!t || !dtype_is_float(t->dtype())) return invalid_argument("scales must be floats on the host");
                          if (t->numel() != static_cast<int64_t>(n)) return invalid_argument("scales has the wrong length");
                          return float_param_bits(static_cast<float>(t->get_f64(static_cast<int64_t>(i))));
                        })});
      scale[k] = "intBitsToFloat(" + p + ")";
      resized[k] = true;
    }
  } else {
    return ctx.unsupported("scales are not known on the host");
  }
  std::vector<KernelTensor> t = {ctx.bind("x0", ctx.input(0)), ctx.bind("y", ctx.output(0), true)};
  std::string body;
  std::vector<size_t> interp;  // resized axes of linear/cubic (two/four taps each)
  std::vector<std::string> c;
  for (size_t k = 0; k < static_cast<size_t>(rank); ++k) {
    if (!resized[k]) {
      c.push_back(oc(k));
      continue;
    }
    const std::string K = std::to_string(k);
    const std::string fin = "float(x0_D" + K + ")", fout = "float(y_D" + K + ")", o = "float(" + oc(k) + ")";
    // (e) / scale, with scale = out / in for sizes.
    auto div_scale = [&](const std::string& e) {
      return sizes ? "(" + e + ") * " + fin + " / " + fout : "(" + e + ") / " + scale[k];
    };
    std::string x;
    if (ctm == "half_pixel" || ctm == "pytorch_half_pixel") {
      x = div_scale(o + " + 0.5") + " - 0.5";
      if (ctm == "pytorch_half_pixel") x = "(y_D" + K + " > 1 ? " + x + " : 0.0)";
    } else if (ctm == "half_pixel_symmetric") {
      x = div_scale(o + " + 0.5") + " - 0.5";
      if (!sizes) {
        const std::string adj = fout + " / (" + scale[k] + " * " + fin + ")";
        x = fin + " / 2.0 * (1.0 - " + adj + ") + " + x;
      }
    } else if (ctm == "align_corners") {
      const std::string len = sizes ? fout : fin + " * " + scale[k];
      x = "(y_D" + K + " > 1 ? " + o + " * (" + fin + " - 1.0) / (" + len + " - 1.0) : 0.0)";
    } else {  // asymmetric
      x = div_scale(o);
    }
    const std::string xv = "u" + K, l = "l" + K, r = "r" + K;
    // Left neighbour and ratio in (0, 1], as the reference picks them.
    body += "float " + xv + " = " + x + ";\nfloat " + l + " = floor(" + xv + ");\nif (" + l + " == " + xv + ") " + l +
            " -= 1.0;\nfloat " + r + " = " + xv + " - " + l + ";\n";
    const std::string last = "x0_D" + K + " - 1";
    auto K_i = [&](int j) { return "i" + K + "_" + std::to_string(j); };
    auto K_w = [&](int j) { return "w" + K + "_" + std::to_string(j); };
    if (mode == "nearest") {
      std::string right;
      if (nearest == "round_prefer_floor") right = r + " > 0.5";
      else if (nearest == "round_prefer_ceil") right = r + " >= 0.5";
      else if (nearest == "floor") right = r + " == 1.0";
      else if (nearest == "ceil") right = "true";
      else return ctx.error("unknown nearest_mode '" + nearest + "'");
      body += "int i" + K + " = clamp(int(" + l + ") + (" + right + " ? 1 : 0), 0, " + last + ");\n";
      c.push_back("i" + K);
    } else if (mode == "linear") {
      body += "int " + K_i(0) + " = clamp(int(" + l + "), 0, " + last + ");\nint " + K_i(1) + " = clamp(int(" + l +
              ") + 1, 0, " + last + ");\nfloat " + K_w(0) + " = 1.0 - " + r + ";\nfloat " + K_w(1) + " = " + r + ";\n";
      c.push_back("");
      interp.push_back(k);
    } else {  // cubic: taps at -1, 0, 1, 2 around the left neighbour
      const std::string A = glsl_float(node.attr_float("cubic_coeff_a", -0.75f));
      const std::string s1 = "(1.0 - " + r + ")";
      auto far = [&](const std::string& d) {
        return "((" + A + " * " + d + " - 5.0 * " + A + ") * " + d + " + 8.0 * " + A + ") * " + d + " - 4.0 * " + A;
      };
      auto near = [&](const std::string& d) {
        return "((" + A + " + 2.0) * " + d + " - (" + A + " + 3.0)) * " + d + " * " + d + " + 1.0";
      };
      body += "float " + K_w(0) + " = " + far("(" + r + " + 1.0)") + ";\nfloat " + K_w(1) + " = " + near(r) +
              ";\nfloat " + K_w(2) + " = " + near(s1) + ";\nfloat " + K_w(3) + " = " + far("(" + s1 + " + 1.0)") + ";\n";
      for (int j = 0; j < 4; ++j)
        body += "int " + K_i(j) + " = int(" + l + ") + " + std::to_string(j - 1) + ";\n";
      if (node.attr_int("exclude_outside", 0) != 0) {
        // Taps outside the input get no weight; the rest are renormalized.
        std::string sum;
        for (int j = 0; j < 4; ++j) {
          body += "if (" + K_i(j) + " < 0 || " + K_i(j) + " > " + last + ") " + K_w(j) + " = 0.0;\n";
          sum += (j ? " + " : "") + K_w(j);
        }
        body += "{ float sw = " + sum + "; if (sw != 0.0) { ";
        for (int j = 0; j < 4; ++j) body += K_w(j) + " /= sw; ";
        body += "} }\n";
      }
      for (int j = 0; j < 4; ++j) body += K_i(j) + " = clamp(" + K_i(j) + ", 0, " + last + ");\n";
      c.push_back("");
      interp.push_back(k);
    }
  }
  if (c.empty()) c.push_back("0");
  if (interp.empty()) {
    for (std::string& x : c)
      if (x.empty()) x = "0";
    body += "v = x0_at(" + join_args(c) + ");";
  } else {
    // Separable: the sum over every combination of the axes' taps.
    const size_t taps = mode == "linear" ? 2 : 4;
    size_t terms = 1;
    for (size_t j = 0; j < interp.size(); ++j) terms *= taps;
    if (terms > 64) return ctx.unsupported("interpolating too many axes");
    body += "float acc = 0.0;\n";
    for (size_t m = 0; m < terms; ++m) {
      std::vector<std::string> cc = c;
      std::string w;
      size_t rest = m;
      for (size_t j = 0; j < interp.size(); ++j, rest /= taps) {
        const std::string K = std::to_string(interp[j]);
        const std::string tap = std::to_string(rest % taps);
        cc[interp[j]] = "i" + K + "_" + tap;
        w += (j ? " * " : "") + ("w" + K + "_" + tap);
      }
      body += "acc += " + w + " * x0_at(" + join_args(cc) + ");\n";
    }
    body += "v = acc;";
  }
  KernelDesc d = map_kernel("resize_" + mode, std::move(t), body);
  d.params = std::move(params);
  ctx.emit(std::move(d));
  return ok_status();
}

// -------------------------------------------------- DepthToSpace/SpaceToDepth

Status lower_depth_to_space(LoweringContext& ctx) {
  const int64_t b = ctx.node().attr_int("blocksize", 0);
  if (b <= 0) return ctx.error("blocksize must be positive");
  if (ctx.input_shape(0).size() != 4) return ctx.error("input must be 4-D");
  const std::string B = std::to_string(b);
  std::vector<KernelTensor> t = {ctx.bind("x0", ctx.input(0)), ctx.bind("y", ctx.output(0), true)};
  std::string body = "int b1 = oc2 % " + B + ", b2 = oc3 % " + B + ";\n";
  if (ctx.node().attr_string("mode", "DCR") == "DCR") body += "int c = (b1 * " + B + " + b2) * y_D1 + oc1;\n";
  else body += "int c = (oc1 * " + B + " + b1) * " + B + " + b2;\n";
  body += "v = x0_at(oc0, c, oc2 / " + B + ", oc3 / " + B + ");";
  ctx.emit(map_kernel("depth_to_space", std::move(t), body));
  return ok_status();
}

Status lower_space_to_depth(LoweringContext& ctx) {
  const int64_t b = ctx.node().attr_int("blocksize", 0);
  if (b <= 0) return ctx.error("blocksize must be positive");
  if (ctx.input_shape(0).size() != 4) return ctx.error("input must be 4-D");
  const std::string B = std::to_string(b);
  std::vector<KernelTensor> t = {ctx.bind("x0", ctx.input(0)), ctx.bind("y", ctx.output(0), true)};
  const std::string body = "int c = oc1 % x0_D1, q = oc1 / x0_D1;\nv = x0_at(oc0, c, oc2 * " + B + " + q / " + B +
                           ", oc3 * " + B + " + q % " + B + ");";
  ctx.emit(map_kernel("space_to_depth", std::move(t), body));
  return ok_status();
}

// ---------------------------------------------------------------- generators

Status lower_constant_of_shape(LoweringContext& ctx) {
  const ir::Attribute* a = ctx.node().attr("value");
  std::string value = "0.0";
  if (a) {
    if (a->kind != ir::AttrKind::kTensor || a->tensor.numel() != 1) return ctx.error("value must be a one-element tensor");
    value = dtype_is_float(a->tensor.dtype()) ? glsl_float(a->tensor.get_f64(0)) : glsl_int(a->tensor.get_i64(0));
  }
  std::vector<KernelTensor> t = {ctx.bind("y", ctx.output(0), true)};
  ctx.emit(map_kernel("constant_of_shape", std::move(t), "v = " + value + ";"));
  return ok_status();
}

Status lower_eye_like(LoweringContext& ctx) {
  if (ctx.output_shape(0).size() != 2) return ctx.error("input must be 2-D");
  const int64_t k = ctx.node().attr_int("k", 0);
  std::vector<KernelTensor> t = {ctx.bind("y", ctx.output(0), true)};
  const bool f = is_float(t[0].layout.type);
  const std::string body =
      "v = oc1 - oc0 == " + glsl_int(k) + (f ? " ? 1.0 : 0.0;" : " ? 1 : 0;");
  ctx.emit(map_kernel("eye_like", std::move(t), body));
  return ok_status();
}

Status lower_trilu(LoweringContext& ctx) {
  const size_t rank = ctx.input_shape(0).size();
  if (rank < 2) return ctx.error("input must have rank >= 2");
  std::vector<KernelTensor> t = {ctx.bind("x0", ctx.input(0))};
  std::string k = "0";
  if (ctx.has_input(1)) {
    if (const Tensor* kt = ctx.input_constant(1)) {
      if (kt->numel() > 0) k = glsl_int(std::clamp<int64_t>(kt->get_i64(0), -(int64_t{1} << 30), int64_t{1} << 30));
    } else {
      t.push_back(ctx.bind("x1", ctx.input(1)));
      k = "x1_ld(0)";
    }
  }
  t.push_back(ctx.bind("y", ctx.output(0), true));
  const bool upper = ctx.node().attr_int("upper", 1) != 0;
  const bool f = is_float(t.back().layout.type);
  const std::string d = oc(rank - 1) + " - " + oc(rank - 2);
  const std::string keep = upper ? d + " >= " + k : d + " <= " + k;
  const std::string body = "v = (" + keep + ") ? " + broadcast_load(t[0], t.back().shape) + " : " + (f ? "0.0" : "0") + ";";
  ctx.emit(map_kernel("trilu", std::move(t), body));
  return ok_status();
}

Status lower_one_hot(LoweringContext& ctx) {
  const size_t in_rank = ctx.input_shape(0).size();
  auto axis = normalize_axis(ctx.node().attr_int("axis", -1), static_cast<int64_t>(in_rank) + 1);
  if (!axis) return ctx.error("axis is out of range");
  const auto a = static_cast<size_t>(*axis);
  std::vector<KernelTensor> t = {ctx.bind("x0", ctx.input(0)), ctx.bind("x2", ctx.input(2)),
                                 ctx.bind("y", ctx.output(0), true)};
  std::vector<std::string> ic;
  for (size_t k = 0; k <= in_rank; ++k)
    if (k != a) ic.push_back(oc(k));
  if (ic.empty()) ic.push_back("0");
  // The depth is the output's extent along the axis.
  const std::string depth = "y_D" + std::to_string(a);
  std::string body;
  if (is_float(t[0].layout.type))
    body = "float f = x0_at(" + join_args(ic) + ");\nint j = abs(f) < float(" + depth +
           ") + 1.0 ? int(f) : -2147483647;\n";
  else
    body = "int j = x0_at(" + join_args(ic) + ");\n";
  body += "if (j < 0) j += " + depth + ";\nv = j == " + oc(a) + " ? x2_ld(1) : x2_ld(0);";
  ctx.emit(map_kernel("one_hot", std::move(t), body));
  return ok_status();
}

// ------------------------------------------------------------------ scatters
// As map kernels over the output: each element starts from the data and
// applies, in the reference's order, every update that lands on it. The
// order makes duplicates and reductions deterministic; the cost is the
// output size times the updates that could land on one element (the
// indices' extent along the axis for ScatterElements, the tuple count for
// ScatterND), which suits the few-update scatters models contain.

// `acc = reduce(acc, u)` for the reduction attribute; empty if unknown.
std::string scatter_step(const std::string& reduction, bool is_bool) {
  if (reduction == "none") return "acc = u;";
  if (reduction == "add") return is_bool ? "acc = max(acc, u);" : "acc += u;";
  if (reduction == "mul") return is_bool ? "acc = min(acc, u);" : "acc *= u;";
  if (reduction == "max") return "acc = max(acc, u);";
  if (reduction == "min") return "acc = min(acc, u);";
  return "";
}

Status lower_scatter_elements(LoweringContext& ctx) {
  const auto r = static_cast<int64_t>(ctx.input_shape(0).size());
  auto axis = normalize_axis(ctx.node().attr_int("axis", 0), r);
  if (!axis) return ctx.error("axis is out of range");
  const auto a = static_cast<size_t>(*axis);
  const std::string step =
      scatter_step(ctx.node().attr_string("reduction", "none"), ctx.input_dtype(0) == DType::kBool);
  if (step.empty()) return ctx.error("unknown reduction");
  std::vector<KernelTensor> t = {ctx.bind("x0", ctx.input(0)), ctx.bind("x1", ctx.input(1)),
                                 ctx.bind("x2", ctx.input(2)), ctx.bind("y", ctx.output(0), true)};
  const std::string s = glsl_scalar(t[3].layout.type);
  std::string body = s + " acc = x0_ld(oi);\nbool covered = true;\n";
  std::vector<std::string> c;
  for (size_t k = 0; k < static_cast<size_t>(r); ++k) {
    c.push_back(k == a ? "k" : oc(k));
    if (k != a) body += "covered = covered && " + oc(k) + " < x1_D" + std::to_string(k) + ";\n";
  }
  const std::string n = "x0_D" + std::to_string(a);
  body += "if (covered) {\n  for (int k = 0; k < x1_D" + std::to_string(a) + "; ++k) {\n    int j = x1_at(" +
          join_args(c) + ");\n    if (j < 0) j += " + n + ";\n    if (j != " + oc(a) + ") continue;\n    " + s +
          " u = x2_at(" + join_args(c) + ");\n    " + step + "\n  }\n}\nv = acc;";
  ctx.emit(map_kernel("scatter_elements", std::move(t), body));
  return ok_status();
}

Status lower_scatter_nd(LoweringContext& ctx) {
  const std::vector<Dim>& data = ctx.input_shape(0);
  const std::vector<Dim>& idx = ctx.input_shape(1);
  const size_t r = data.size(), q = idx.size();
  if (q < 1 || !idx.back().is_const()) return ctx.unsupported("the last dim of indices is not a constant");
  const auto m = static_cast<size_t>(idx.back().value());
  if (m < 1 || m > r) return ctx.error("the last dim of indices does not fit the data's rank");
  const std::string step =
      scatter_step(ctx.node().attr_string("reduction", "none"), ctx.input_dtype(0) == DType::kBool);
  if (step.empty()) return ctx.error("unknown reduction");
  Dim tuples(1), slice(1);
  for (size_t k = 0; k + 1 < q; ++k) tuples = tuples * idx[k];
  for (size_t k = m; k < r; ++k) slice = slice * data[k];
  KernelDesc d = map_kernel("scatter_nd", {ctx.bind("x0", ctx.input(0)), ctx.bind("x1", ctx.input(1)),
                                           ctx.bind("x2", ctx.input(2)), ctx.bind("y", ctx.output(0), true)}, "");
  d.params.push_back({"scatter_tuples", tuples});
  d.params.push_back({"scatter_slice", slice});
  const std::string s = glsl_scalar(d.tensors[3].layout.type);
  // The element's offset inside one slice data[i0..im-1, ...].
  std::string rest = "0";
  for (size_t k = m; k < r; ++k) rest = k == m ? oc(k) : "(" + rest + ") * y_D" + std::to_string(k) + " + " + oc(k);
  std::string body = s + " acc = x0_ld(oi);\nint rest = " + rest + ";\nfor (int t = 0; t < scatter_tuples; ++t) {\n";
  body += "  bool hit = true;\n";
  for (size_t k = 0; k < m; ++k) {
    const std::string K = std::to_string(k);
    body += "  int j" + K + " = x1_ld(t * " + std::to_string(m) + " + " + K + ");\n  if (j" + K + " < 0) j" + K +
            " += y_D" + K + ";\n  hit = hit && j" + K + " == " + oc(k) + ";\n";
  }
  body += "  if (!hit) continue;\n  " + s + " u = x2_ld(t * scatter_slice + rest);\n  " + step + "\n}\nv = acc;";
  d.body = "{\n" + body + "\n}";
  ctx.emit(std::move(d));
  return ok_status();
}

// -------------------------------------------------------------------- CumSum
// A map kernel: each output sums its prefix (or suffix) along the axis.
// Quadratic in the axis length, which is short where models use it
// (position ids, masks).

// CumSum along an axis that is a host value per run: the axis is a
// parameter and the kernel indexes its coordinates through an array.
Status lower_cumsum_host(LoweringContext& ctx, bool exclusive, bool reverse) {
  const size_t r = ctx.input_shape(0).size();
  if (r == 0) return ctx.error("CumSum needs an input of rank >= 1");
  std::vector<KernelTensor> t = {ctx.bind("x0", ctx.input(0)), ctx.bind("y", ctx.output(0), true)};
  const std::string s = glsl_scalar(t[1].layout.type);
  KernelDesc d = map_kernel("cumsum_axis", std::move(t), "");
  d.params.push_back({"cum_axis", ctx.host_param([r](const HostParamInputs& in) -> StatusOr<int64_t> {
                        KILN_ASSIGN_OR_RETURN(std::vector<int64_t> a, host_ints(in, 1, "axis"));
                        if (a.size() != 1) return invalid_argument("axis must hold one value");
                        auto n = normalize_axis(a[0], static_cast<int64_t>(r));
                        if (!n) return invalid_argument("axis " + std::to_string(a[0]) + " is out of range");
                        return *n;
                      })});
  std::vector<std::string> oc_list, dims, c;
  for (size_t k = 0; k < r; ++k) {
    oc_list.push_back(oc(k));
    dims.push_back("x0_D" + std::to_string(k));
    c.push_back("c[" + std::to_string(k) + "]");
  }
  const std::string R = std::to_string(r);
  std::string lo, hi;
  if (!reverse) lo = "0", hi = exclusive ? "p" : "p + 1";
  else lo = exclusive ? "p + 1" : "p", hi = "n";
  d.body = "{\nint c[" + R + "] = int[" + R + "](" + join_args(oc_list) + ");\nint dims[" + R + "] = int[" + R + "](" +
           join_args(dims) + ");\nint p = c[cum_axis], n = dims[cum_axis];\n" + s + " acc = " + s +
           "(0);\nfor (int k = " + lo + "; k < " + hi + "; ++k) { c[cum_axis] = k; acc += x0_at(" + join_args(c) +
           "); }\nv = acc;\n}";
  ctx.emit(std::move(d));
  return ok_status();
}

Status lower_cumsum(LoweringContext& ctx) {
  auto axis_v = constant_ints(ctx, 1);
  if (!axis_v && ctx.input_on_host(1))
    return lower_cumsum_host(ctx, ctx.node().attr_int("exclusive", 0) != 0, ctx.node().attr_int("reverse", 0) != 0);
  if (!axis_v || axis_v->size() != 1) return ctx.unsupported("axis is not a constant");
  const auto r = static_cast<int64_t>(ctx.input_shape(0).size());
  auto axis = normalize_axis((*axis_v)[0], r);
  if (!axis) return ctx.error("axis is out of range");
  const auto a = static_cast<size_t>(*axis);
  const bool exclusive = ctx.node().attr_int("exclusive", 0) != 0;
  const bool reverse = ctx.node().attr_int("reverse", 0) != 0;
  std::vector<KernelTensor> t = {ctx.bind("x0", ctx.input(0)), ctx.bind("y", ctx.output(0), true)};
  const std::string s = glsl_scalar(t[1].layout.type);
  std::vector<std::string> c;
  for (size_t k = 0; k < static_cast<size_t>(r); ++k) c.push_back(k == a ? "k" : oc(k));
  const std::string p = oc(a), n = "x0_D" + std::to_string(a);
  std::string lo, hi;
  if (!reverse) lo = "0", hi = exclusive ? p : p + " + 1";
  else lo = exclusive ? p + " + 1" : p, hi = n;
  const std::string body = s + " acc = " + s + "(0);\nfor (int k = " + lo + "; k < " + hi + "; ++k) acc += x0_at(" +
                           join_args(c) + ");\nv = acc;";
  ctx.emit(map_kernel("cumsum", std::move(t), body));
  return ok_status();
}

}  // namespace

void register_data_movement_lowerings(LoweringRegistry& r) {
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"}) r.add("", op, lower_view);
  r.add("", "Dropout", lower_dropout);
  r.add("", "Transpose", lower_transpose);
  r.add("", "Concat", lower_concat);
  r.add("", "Split", lower_split);
  r.add("", "Slice", lower_slice);
  r.add("", "Gather", lower_gather);
  r.add("", "GatherElements", lower_gather_elements);
  r.add("", "GatherND", lower_gather_nd);
  r.add("", "Expand", lower_expand);
  r.add("", "Tile", lower_tile);
  r.add("", "Pad", lower_pad);
  r.add("", "Resize", lower_resize);
  r.add("", "DepthToSpace", lower_depth_to_space);
  r.add("", "SpaceToDepth", lower_space_to_depth);
  r.add("", "ConstantOfShape", lower_constant_of_shape);
  r.add("", "EyeLike", lower_eye_like);
  r.add("", "Trilu", lower_trilu);
  r.add("", "OneHot", lower_one_hot);
  r.add("", "ScatterElements", lower_scatter_elements);
  r.add("", "ScatterND", lower_scatter_nd);
  r.add("", "CumSum", lower_cumsum);
}

}  // namespace kiln::planner
