// Op family 'data_movement', part 2: Concat, Split and Slice.
//
// All three move contiguous runs: Concat copies each input's rows into its
// slot of every output row, Split and Slice are strided copies of a window
// of the input (negative Slice steps are negative strides). Their shape
// inference carries dims_value, since Slice/Concat of Shape outputs is how
// exported models build target shapes, and computes symbolic Slice lengths
// with ONNX's clamping expressed over dims.
#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

#include "engine/ops/data_movement_internal.h"
#include "engine/ops/slice_range.h"
#include "engine/ops/op_registry.h"

namespace kiln::ops::movement {
namespace {

using ops::SliceRange;
using ops::slice_concrete;

using ir::Dim;
using ir::SymShape;

// ----------------------------------------------------------------- Concat

// Two dims that must be equal: a constant wins over a symbol, a known dim
// over an unknown one.
StatusOr<Dim> unify_dims(const InferContext& ctx, const Dim& a, const Dim& b, size_t input, size_t axis) {
  if (a.is_const() && b.is_const() && a.value() != b.value())
    return ctx.error("input " + std::to_string(input) + " has size " + std::to_string(b.value()) + " on axis " +
                     std::to_string(axis) + ", input 0 has " + std::to_string(a.value()));
  if (a.is_const() || b.is_unknown()) return a;
  return b;
}

Status infer_concat(InferContext& ctx) {
  const ir::Attribute* axis_attr = ctx.node().attr("axis");
  if (!axis_attr) return ctx.error("attribute 'axis' is required");
  const DType dt = ctx.input_dtype(0);
  int64_t rank = -1;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) return ctx.error("input " + std::to_string(i) + " is missing");
    if (ctx.input_dtype(i) != dt)
      return ctx.error("input " + std::to_string(i) + " has dtype " + std::string(dtype_name(ctx.input_dtype(i))) +
                       ", input 0 has " + std::string(dtype_name(dt)));
    const SymShape& s = ctx.input_shape(i);
    if (!s.has_rank) continue;
    if (rank >= 0 && s.rank() != rank)
      return ctx.error("input " + std::to_string(i) + " has rank " + std::to_string(s.rank()) + ", expected " +
                       std::to_string(rank));
    rank = s.rank();
  }
  if (rank < 0) {
    ctx.set_output(0, dt, SymShape::unranked());
    return ok_status();
  }
  auto axis = normalize_axis(axis_attr->i, rank);
  if (!axis) return ctx.error("axis " + std::to_string(axis_attr->i) + " is out of range for rank " + std::to_string(rank));
  std::vector<Dim> out;
  bool first = true;
  Dim sum(0);
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const SymShape& s = ctx.input_shape(i);
    if (!s.has_rank) {
      sum = Dim();
      continue;
    }
    if (first) {
      out = s.dims;
      first = false;
    } else {
      for (size_t d = 0; d < out.size(); ++d) {
        if (static_cast<int64_t>(d) == *axis) continue;
        KILN_ASSIGN_OR_RETURN(out[d], unify_dims(ctx, out[d], s.dims[d], i, d));
      }
    }
    sum = sum + s.dims[static_cast<size_t>(*axis)];
  }
  out[static_cast<size_t>(*axis)] = sum;
  if (rank == 1) {
    std::vector<Dim> values;
    bool known = true;
    for (size_t i = 0; i < ctx.num_inputs() && known; ++i) {
      auto v = small_int_dims(ctx, i);
      if (!v) known = false;
      else values.insert(values.end(), v->begin(), v->end());
    }
    if (known && static_cast<int64_t>(values.size()) <= kMaxDimsValue) ctx.set_output_dims_value(0, std::move(values));
  }
  ctx.set_output(0, dt, SymShape(std::move(out)));
  return ok_status();
}

Status concat_kernel(KernelContext& ctx) {
  KILN_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0));
  const int64_t rank = out->rank();
  const auto axis = static_cast<size_t>(*normalize_axis(ctx.node().attr_int("axis", 0), rank));
  const size_t elem = dtype_size(out->dtype());
  int64_t outer = 1;
  for (size_t d = 0; d < axis; ++d) outer *= out->shape()[d];
  const int64_t out_row = out->numel() / std::max<int64_t>(outer, 1) * static_cast<int64_t>(elem);
  auto* dst = static_cast<unsigned char*>(out->raw_data());
  int64_t row_offset = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor& in = ctx.input(i);
    const int64_t in_row = outer ? in.numel() / std::max<int64_t>(outer, 1) * static_cast<int64_t>(elem) : 0;
    const auto* src = static_cast<const unsigned char*>(in.raw_data());
    if (in_row > 0)
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(dst + o * out_row + row_offset, src + o * in_row, static_cast<size_t>(in_row));
    row_offset += in_row;
  }
  return ok_status();
}

// ------------------------------------------------------------------ Split

// The output sizes along the split axis; unknown dims where not computable.
StatusOr<std::vector<Dim>> split_sizes(const InferContext& ctx, const Dim& dim) {
  const size_t n = ctx.num_outputs();
  const ir::Attribute* num_outputs = ctx.node().attr("num_outputs");
  if (ctx.has_input(1)) {
    if (num_outputs) return ctx.error("give either the 'split' input or the 'num_outputs' attribute, not both");
    if (!dtype_is_integer(ctx.input_dtype(1))) return ctx.error("split (input 1) must be an int64 tensor");
    auto split = ctx.input_as_dims(1);
    if (!split) return std::vector<Dim>(n);
    if (split->size() != n)
      return ctx.error("split has " + std::to_string(split->size()) + " entries but the node has " +
                       std::to_string(n) + " outputs");
    Dim total(0);
    for (const Dim& d : *split) {
      if (d.is_const() && d.value() < 0) return ctx.error("split " + dims_string(*split) + " has a negative size");
      total = total + d;
    }
    if (dim.is_const() && total.is_const() && dim.value() != total.value())
      return ctx.error("split " + dims_string(*split) + " sums to " + std::to_string(total.value()) +
                       " but the axis has size " + std::to_string(dim.value()));
    return *split;
  }
  const auto count = static_cast<int64_t>(n);
  if (count == 0) return ctx.error("needs at least one output");
  if (num_outputs) {
    if (num_outputs->i != count)
      return ctx.error("num_outputs is " + std::to_string(num_outputs->i) + " but the node has " +
                       std::to_string(n) + " outputs");
    const Dim chunk = Dim::ceil_div(dim, Dim(count));
    const Dim last = dim - chunk * Dim(count - 1);
    if (last.is_const() && last.value() < 0)
      return ctx.error("cannot split an axis of size " + dim.to_string() + " into " + std::to_string(n) + " outputs");
    std::vector<Dim> sizes(n, chunk);
    sizes.back() = last;
    return sizes;
  }
  if (dim.is_const() && dim.value() % count != 0)
    return ctx.error("cannot split an axis of size " + std::to_string(dim.value()) + " evenly into " +
                     std::to_string(n) + " outputs");
  return std::vector<Dim>(n, Dim::floor_div(dim, Dim(count)));
}

Status infer_split(InferContext& ctx) {
  const SymShape& in = ctx.input_shape(0);
  const DType dt = ctx.input_dtype(0);
  if (!in.has_rank) {
    for (size_t i = 0; i < ctx.num_outputs(); ++i) ctx.set_output(i, dt, SymShape::unranked());
    return ok_status();
  }
  const int64_t axis_attr = ctx.node().attr_int("axis", 0);
  auto axis = normalize_axis(axis_attr, in.rank());
  if (!axis) return ctx.error("axis " + std::to_string(axis_attr) + " is out of range for rank " + std::to_string(in.rank()));
  KILN_ASSIGN_OR_RETURN(std::vector<Dim> sizes, split_sizes(ctx, in.dims[static_cast<size_t>(*axis)]));
  for (size_t i = 0; i < ctx.num_outputs(); ++i) {
    std::vector<Dim> dims = in.dims;
    dims[static_cast<size_t>(*axis)] = sizes[i];
    ctx.set_output(i, dt, SymShape(std::move(dims)));
  }
  return ok_status();
}

Status split_kernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const auto axis = static_cast<size_t>(*normalize_axis(ctx.node().attr_int("axis", 0), in.rank()));
  const std::vector<int64_t> strides = shape_strides(in.shape());
  int64_t start = 0;
  for (size_t i = 0; i < ctx.num_outputs(); ++i) {
    KILN_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(i));
    strided_copy(out->raw_data(), in.raw_data(), dtype_size(in.dtype()), out->shape(), strides,
                 start * strides[axis]);
    start += out->shape()[axis];
  }
  return ok_status();
}

// ------------------------------------------------------------------ Slice

// max(x, 0) for a dim that may already be known non-negative.
Dim non_negative(const Dim& x) {
  if (x.is_symbol()) return x;
  if (x.is_expr() && x.op() == Dim::Op::kMax && x.rhs().is_const() && x.rhs().value() >= 0) return x;
  return Dim::max(x, Dim(0));
}

// The same clamping over a symbolic dim; unknown where it cannot be expressed.
// Bounds beyond +-2^31 stand for "to the end", as PyTorch exports them.
Dim slice_len_symbolic(const Dim& start, const Dim& end, int64_t step, const Dim& dim) {
  constexpr int64_t kHuge = std::numeric_limits<int32_t>::max();
  if (start.is_const() && end.is_const() && dim.is_const())
    return Dim(slice_concrete(start.value(), end.value(), step, dim.value()).len);
  step = std::clamp<int64_t>(step, -kHuge, kHuge);  // no dim is larger
  auto clamp_bound = [&](const Dim& v, int64_t lo_off, bool is_end) -> Dim {
    // Clamps v to [lo, dim + lo_off] where lo = -1 for a negative-step end, else 0.
    const int64_t lo = (step < 0 && is_end) ? -1 : 0;
    const Dim hi = dim + Dim(lo_off);
    if (!v.is_const()) return v.same_as(dim) ? hi : Dim();
    const int64_t x = v.value();
    if (x >= kHuge) return hi;
    if (x <= -kHuge) return Dim(lo);
    if (x >= 0) return x == 0 && lo == 0 ? Dim(0) : Dim::min(Dim(x), hi);
    return lo == 0 ? non_negative(dim + Dim(x)) : Dim::max(dim + Dim(x), Dim(lo));
  };
  if (step > 0) {
    // With end' in [0, dim], max(end' - min(s, dim), 0) = max(end' - s, 0)
    // for s >= 0, so a non-negative start needs no clamping.
    const Dim e = clamp_bound(end, 0, true);
    Dim s;
    if (start.is_const() && start.value() >= 0) s = start.value() >= kHuge ? dim : Dim(start.value());
    else s = clamp_bound(start, 0, false);
    const Dim diff = s.is_const() && s.value() == 0 ? e : non_negative(e - s);
    return step == 1 ? diff : Dim::ceil_div(diff, Dim(step));
  }
  const Dim s = clamp_bound(start, -1, false), e = clamp_bound(end, -1, true);
  return Dim::ceil_div(non_negative(s - e), Dim(-step));
}

struct SliceParams {
  std::vector<Dim> starts, ends;
  std::vector<int64_t> axes, steps;
};

// Reads starts/ends/axes/steps. Returns nullopt (not an error) when some of
// them are unknown; `axes_known` says whether at least the axes are.
StatusOr<std::optional<SliceParams>> slice_params(const InferContext& ctx, int64_t rank, bool& axes_known,
                                                  std::vector<int64_t>& axes_out) {
  auto starts = ctx.input_as_dims(1);
  auto ends = ctx.input_as_dims(2);
  const size_t k = starts ? starts->size() : ends ? ends->size() : 0;
  std::vector<Dim> axes_dims;
  axes_known = true;
  if (ctx.has_input(3)) {
    auto a = ctx.input_as_dims(3);
    if (!a) axes_known = false;
    else axes_dims = *a;
  } else if (starts || ends) {
    for (size_t i = 0; i < k; ++i) axes_dims.emplace_back(static_cast<int64_t>(i));
  } else {
    axes_known = false;
  }
  if (axes_known) {
    std::vector<int64_t> norm;
    for (const Dim& d : axes_dims) {
      if (!d.is_const()) {
        axes_known = false;
        break;
      }
      auto a = normalize_axis(d.value(), rank);
      if (!a) return ctx.error("axis " + std::to_string(d.value()) + " is out of range for rank " + std::to_string(rank));
      if (std::find(norm.begin(), norm.end(), *a) != norm.end())
        return ctx.error("axis " + std::to_string(d.value()) + " appears more than once in axes");
      norm.push_back(*a);
    }
    if (axes_known) axes_out = norm;
  }
  std::vector<int64_t> steps;
  if (ctx.has_input(4)) {
    auto s = ctx.input_as_dims(4);
    if (!s) return std::optional<SliceParams>();
    for (const Dim& d : *s) {
      if (!d.is_const()) return std::optional<SliceParams>();
      if (d.value() == 0) return ctx.error("steps must be non-zero");
      steps.push_back(d.value());
    }
  }
  if (!starts || !ends || !axes_known) return std::optional<SliceParams>();
  if (ends->size() != k || axes_out.size() != k || (ctx.has_input(4) && steps.size() != k))
    return ctx.error("starts, ends, axes and steps must have the same length, got " + std::to_string(k) + ", " +
                     std::to_string(ends->size()) + ", " + std::to_string(axes_out.size()) + ", " +
                     std::to_string(ctx.has_input(4) ? steps.size() : k));
  if (!ctx.has_input(4)) steps.assign(k, 1);
  return std::optional<SliceParams>(SliceParams{*starts, *ends, axes_out, steps});
}

Status infer_slice(InferContext& ctx) {
  const SymShape& in = ctx.input_shape(0);
  const DType dt = ctx.input_dtype(0);
  for (size_t i = 1; i < 5; ++i)
    if (ctx.has_input(i) && !dtype_is_integer(ctx.input_dtype(i)))
      return ctx.error("input " + std::to_string(i) + " must be an int32/int64 tensor");
  if (!in.has_rank) {
    ctx.set_output(0, dt, SymShape::unranked());
    return ok_status();
  }
  bool axes_known = false;
  std::vector<int64_t> axes;
  KILN_ASSIGN_OR_RETURN(std::optional<SliceParams> p, slice_params(ctx, in.rank(), axes_known, axes));
  std::vector<Dim> out = in.dims;
  if (!p) {
    if (!axes_known) out.assign(out.size(), Dim());
    else
      for (int64_t a : axes) out[static_cast<size_t>(a)] = Dim();
    ctx.set_output(0, dt, SymShape(std::move(out)));
    return ok_status();
  }
  bool all_const = true;
  for (size_t i = 0; i < p->axes.size(); ++i) {
    const auto a = static_cast<size_t>(p->axes[i]);
    out[a] = slice_len_symbolic(p->starts[i], p->ends[i], p->steps[i], in.dims[a]);
    all_const &= p->starts[i].is_const() && p->ends[i].is_const();
  }
  // A slice of a known shape vector is a known shape vector.
  if (in.rank() == 1 && all_const) {
    if (auto v = small_int_dims(ctx, 0)) {
      const auto n = static_cast<int64_t>(v->size());
      SliceRange r{0, n, 1};
      if (!p->axes.empty()) r = slice_concrete(p->starts[0].value(), p->ends[0].value(), p->steps[0], n);
      std::vector<Dim> values;
      for (int64_t i = 0; i < r.len; ++i) values.push_back((*v)[static_cast<size_t>(r.start + i * r.step)]);
      ctx.set_output_dims_value(0, std::move(values));
    }
  }
  ctx.set_output(0, dt, SymShape(std::move(out)));
  return ok_status();
}

Status slice_kernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const int64_t rank = in.rank();
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> starts, read_int_tensor(ctx, 1, "starts"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> ends, read_int_tensor(ctx, 2, "ends"));
  std::vector<int64_t> axes, steps(starts.size(), 1);
  if (ctx.has_input(3)) {
    KILN_ASSIGN_OR_RETURN(axes, read_int_tensor(ctx, 3, "axes"));
  } else {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (ctx.has_input(4)) {
    KILN_ASSIGN_OR_RETURN(steps, read_int_tensor(ctx, 4, "steps"));
  }
  Shape shape = in.shape();
  const std::vector<int64_t> in_strides = shape_strides(in.shape());
  std::vector<int64_t> strides = in_strides;
  int64_t offset = 0;
  for (size_t i = 0; i < axes.size(); ++i) {
    const auto a = static_cast<size_t>(*normalize_axis(axes[i], rank));  // validated by inference
    const SliceRange r = slice_concrete(starts[i], ends[i], steps[i], in.dim(static_cast<int64_t>(a)));
    shape[a] = r.len;
    strides[a] = in_strides[a] * r.step;
    if (r.len > 0) offset += r.start * in_strides[a];
  }
  KILN_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0, in.dtype(), shape));
  strided_copy(out->raw_data(), in.raw_data(), dtype_size(in.dtype()), shape, strides, offset);
  return ok_status();
}

}  // namespace

void register_slice_concat_ops(OpRegistry& r) {
  add_op(r, {"Concat", "", 1, -1, 1, 1, infer_concat, concat_kernel}, MappingType::kReorganize);
  add_op(r, {"Split", "", 1, 2, 1, -1, infer_split, split_kernel, {1}}, MappingType::kReorganize);
  add_op(r, {"Slice", "", 3, 5, 1, 1, infer_slice, slice_kernel, {1, 2, 3, 4}}, MappingType::kOther);
}

}  // namespace kiln::ops::movement
