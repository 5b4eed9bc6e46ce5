// Op family 'data_movement', part 5: Pad (opset 18: pads, constant_value and
// axes are inputs; modes constant, reflect, edge, wrap).
//
// Each axis gets a table mapping output index -> input index (or "constant"),
// built with numpy.pad's semantics, which the ONNX reference uses: reflect
// and wrap repeat periodically when a pad is wider than the axis, and
// negative pads crop. The copy then walks output rows with those tables, so
// the kernel is dtype-agnostic.
#include <algorithm>
#include <cstring>
#include <string>

#include "engine/base/checked_math.h"
#include "engine/ops/data_movement_internal.h"
#include "engine/ops/op_registry.h"

namespace kiln::ops::movement {
namespace {

using ir::Dim;
using ir::SymShape;

enum class PadMode { kConstant, kReflect, kEdge, kWrap };

StatusOr<PadMode> pad_mode(const ir::Node& node) {
  const std::string m = node.attr_string("mode", "constant");
  if (m == "constant") return PadMode::kConstant;
  if (m == "reflect") return PadMode::kReflect;
  if (m == "edge") return PadMode::kEdge;
  if (m == "wrap") return PadMode::kWrap;
  return invalid_argument(node.describe() + ": mode '" + m + "' is not one of constant, reflect, edge, wrap");
}

Status infer_pad(InferContext& ctx) {
  KILN_RETURN_IF_ERROR(pad_mode(ctx.node()).status());
  const SymShape& in = ctx.input_shape(0);
  const DType dt = ctx.input_dtype(0);
  if (!dtype_is_integer(ctx.input_dtype(1))) return ctx.error("pads (input 1) must be an int64 tensor");
  if (ctx.has_input(2) && ctx.input_dtype(2) != dt)
    return ctx.error("constant_value has dtype " + std::string(dtype_name(ctx.input_dtype(2))) + ", data has " +
                     std::string(dtype_name(dt)));
  if (!in.has_rank) {
    ctx.set_output(0, dt, SymShape::unranked());
    return ok_status();
  }
  const int64_t r = in.rank();
  std::vector<int64_t> axes;
  if (ctx.has_input(3)) {
    if (!dtype_is_integer(ctx.input_dtype(3))) return ctx.error("axes (input 3) must be an int64 tensor");
    auto a = ctx.input_as_dims(3);
    if (!a) {
      ctx.set_output(0, dt, SymShape(std::vector<Dim>(static_cast<size_t>(r))));
      return ok_status();
    }
    for (const Dim& d : *a) {
      if (!d.is_const()) return ctx.error("axes must be constants");
      auto n = normalize_axis(d.value(), r);
      if (!n) return ctx.error("axis " + std::to_string(d.value()) + " is out of range for rank " + std::to_string(r));
      if (std::find(axes.begin(), axes.end(), *n) != axes.end())
        return ctx.error("axis " + std::to_string(d.value()) + " appears more than once in axes");
      axes.push_back(*n);
    }
  } else {
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  }
  std::vector<Dim> out = in.dims;
  auto pads = ctx.input_as_dims(1);
  if (!pads) {
    for (int64_t a : axes) out[static_cast<size_t>(a)] = Dim();
    ctx.set_output(0, dt, SymShape(std::move(out)));
    return ok_status();
  }
  const size_t n = axes.size();
  if (pads->size() != 2 * n)
    return ctx.error("pads has " + std::to_string(pads->size()) + " entries, expected " + std::to_string(2 * n) +
                     " (begin and end for each of " + std::to_string(n) + " axes)");
  for (size_t i = 0; i < n; ++i) {
    const auto a = static_cast<size_t>(axes[i]);
    const Dim &begin = (*pads)[i], &end = (*pads)[i + n];
    if (in.dims[a].is_const() && begin.is_const() && end.is_const()) {
      // Dim arithmetic turns an overflow into an unknown dim; a constant
      // pad that overflows is the model's error, said here by name.
      const std::optional<int64_t> sum = checked_add(in.dims[a].value(), begin.value());
      if (!sum || !checked_add(*sum, end.value()))
        return ctx.error("pads " + SymShape(*pads).to_string() + " overflow axis " + std::to_string(a) + " of " +
                         in.to_string());
    }
    out[a] = in.dims[a] + begin + end;
    if (out[a].is_const() && out[a].value() < 0)
      return ctx.error("pads " + SymShape(*pads).to_string() + " make axis " + std::to_string(a) + " of " +
                       in.to_string() + " negative");
  }
  ctx.set_output(0, dt, SymShape(std::move(out)));
  return ok_status();
}

// Input index for output index `o` of an axis of length `len` padded by
// `begin` in front; -1 means "the constant".
int64_t source_index(int64_t o, int64_t begin, int64_t len, PadMode mode) {
  const int64_t i = o - begin;
  if (i >= 0 && i < len) return i;
  switch (mode) {
    case PadMode::kConstant: return -1;
    case PadMode::kEdge: return i < 0 ? 0 : len - 1;
    case PadMode::kWrap: return ((i % len) + len) % len;
    case PadMode::kReflect: {
      if (len == 1) return 0;
      const int64_t period = 2 * (len - 1);
      const int64_t m = ((i % period) + period) % period;
      return m < len ? m : period - m;
    }
  }
  return -1;
}

Status pad_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  KILN_ASSIGN_OR_RETURN(PadMode mode, pad_mode(ctx.node()));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> pads, read_int_tensor(ctx, 1, "pads"));
  const auto rank = static_cast<size_t>(x.rank());
  std::vector<int64_t> axes;
  if (ctx.has_input(3)) {
    KILN_ASSIGN_OR_RETURN(axes, read_int_tensor(ctx, 3, "axes"));
    for (int64_t& a : axes) a = *normalize_axis(a, x.rank());  // validated by inference
  } else {
    for (size_t i = 0; i < rank; ++i) axes.push_back(static_cast<int64_t>(i));
  }
  std::vector<int64_t> begin(rank, 0);
  for (size_t i = 0; i < axes.size(); ++i) begin[static_cast<size_t>(axes[i])] = pads[i];
  KILN_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0));
  const Shape& out_shape = out->shape();
  const size_t elem = dtype_size(x.dtype());
  // The constant's bytes (zero unless constant_value is given).
  std::vector<unsigned char> fill(elem, 0);
  if (mode == PadMode::kConstant && ctx.has_input(2) && ctx.input(2).numel() > 0) {
    if (ctx.input(2).numel() != 1) return ctx.error("constant_value must be a scalar");
    std::memcpy(fill.data(), ctx.input(2).raw_data(), elem);
  }
  if (out->numel() == 0) return ok_status();
  std::vector<std::vector<int64_t>> map(rank);
  for (size_t d = 0; d < rank; ++d) {
    if (x.shape()[d] == 0 && mode != PadMode::kConstant)
      return ctx.error("cannot pad axis " + std::to_string(d) + " of size 0 in mode '" +
                       ctx.node().attr_string("mode", "constant") + "'");
    for (int64_t o = 0; o < out_shape[d]; ++o) map[d].push_back(source_index(o, begin[d], x.shape()[d], mode));
  }
  auto* dst = static_cast<unsigned char*>(out->raw_data());
  const auto* src = static_cast<const unsigned char*>(x.raw_data());
  if (rank == 0) {
    std::memcpy(dst, src, elem);
    return ok_status();
  }
  const std::vector<int64_t> strides = shape_strides(x.shape());
  const size_t last = rank - 1;
  const std::vector<int64_t>& inner_map = map[last];
  std::vector<int64_t> counter(last, 0);
  while (true) {
    int64_t base = 0;
    bool constant_row = false;
    for (size_t d = 0; d < last; ++d) {
      const int64_t s = map[d][static_cast<size_t>(counter[d])];
      if (s < 0) constant_row = true;
      base += s * strides[d];
    }
    for (int64_t j = 0; j < out_shape[last]; ++j, dst += elem) {
      const int64_t s = constant_row ? -1 : inner_map[static_cast<size_t>(j)];
      std::memcpy(dst, s < 0 ? fill.data() : src + static_cast<size_t>(base + s) * elem, elem);
    }
    size_t d = last;
    while (true) {
      if (d == 0) return ok_status();
      --d;
      if (++counter[d] < out_shape[d]) break;
      counter[d] = 0;
    }
  }
}

}  // namespace

void register_pad_op(OpRegistry& r) { add_op(r, {"Pad", "", 2, 4, 1, 1, infer_pad, pad_kernel, {1, 3}}, MappingType::kOther); }

}  // namespace kiln::ops::movement
