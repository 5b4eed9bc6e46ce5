// Op family 'data_movement', part 1: views and strided copies.
//
// Reshape, Flatten, Squeeze, Unsqueeze, Identity and Dropout are views: their
// kernels share the input's storage. Transpose, Expand, Tile, DepthToSpace
// and SpaceToDepth are each one strided copy (see strided_copy, defined here
// with the other helpers of data_movement_internal.h), which is
// dtype-agnostic. Shape and Size start the shape-computation chains of
// exported models; the views that can carry a small int tensor (Reshape,
// Squeeze, Unsqueeze, Identity) propagate its symbolic dims_value so those
// chains resolve at compile time. The rest of the family lives in
// slice_concat.cc, gather_scatter.cc, tensor_gen.cc, pad.cc and resize.cc;
// register_data_movement_ops registers them all.
#include <algorithm>
#include <cassert>
#include <cstring>
#include <optional>
#include <string>

#include "engine/base/checked_math.h"
#include "engine/ops/broadcast.h"
#include "engine/ops/data_movement_internal.h"
#include "engine/ops/op_registry.h"

namespace kiln::ops {
namespace movement {

using ir::Dim;
using ir::SymShape;

void add_op(OpRegistry& r, OpSchema schema, MappingType mapping) {
  schema.mapping = mapping;
  Status s = r.add(std::move(schema));
  assert(s.ok() && "data-movement op registered twice");
  (void)s;
}

std::optional<int64_t> normalize_axis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

Dim dims_product(const std::vector<Dim>& dims) {
  Dim p(1);
  for (const Dim& d : dims) p = p * d;
  return p;
}

std::optional<std::vector<Dim>> small_int_dims(const InferContext& ctx, size_t i) {
  if (!ctx.has_input(i) || !dtype_is_integer(ctx.input_dtype(i))) return std::nullopt;
  const SymShape& s = ctx.input_shape(i);
  if (s.has_rank) {
    if (s.rank() > 1) return std::nullopt;
    if (s.rank() == 1 && s.dims[0].is_const() && s.dims[0].value() > kMaxDimsValue) return std::nullopt;
  }
  if (const Tensor* t = ctx.input_value(i); t && t->numel() > kMaxDimsValue) return std::nullopt;
  auto dims = ctx.input_as_dims(i);
  if (dims && static_cast<int64_t>(dims->size()) > kMaxDimsValue) return std::nullopt;
  return dims;
}

StatusOr<Shape> static_output_shape(const KernelContext& ctx, size_t i) {
  const SymShape& s = ctx.inferred_output(i).shape;
  if (!s.is_static())
    return internal_error(ctx.node().describe() + ": output " + std::to_string(i) + " has non-static shape " +
                          s.to_string() + " at run time");
  return s.concrete();
}

namespace {

template <typename T>
void copy_strided_run(unsigned char* dst, const unsigned char* src, int64_t n, int64_t stride) {
  T* d = reinterpret_cast<T*>(dst);
  const T* s = reinterpret_cast<const T*>(src);
  for (int64_t i = 0; i < n; ++i) d[i] = s[i * stride];
}

}  // namespace

void strided_copy(void* dst, const void* src, size_t elem_size, const Shape& shape,
                  const std::vector<int64_t>& strides, int64_t offset) {
  if (shape_numel(shape) == 0) return;
  // Drop size-1 dims and merge dims that are contiguous in the source, so
  // that e.g. a Slice of inner rows becomes one long memcpy.
  std::vector<int64_t> dims, st;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) continue;
    if (!dims.empty() && st.back() == strides[i] * shape[i]) {
      dims.back() *= shape[i];
      st.back() = strides[i];
      continue;
    }
    dims.push_back(shape[i]);
    st.push_back(strides[i]);
  }
  auto* out = static_cast<unsigned char*>(dst);
  const auto* in = static_cast<const unsigned char*>(src);
  const auto esz = static_cast<int64_t>(elem_size);
  if (dims.empty()) {
    std::memcpy(out, in + offset * esz, elem_size);
    return;
  }
  const size_t k = dims.size() - 1;
  const int64_t n = dims[k], s = st[k];
  std::vector<int64_t> counter(k, 0);
  int64_t src_off = offset;
  while (true) {
    const unsigned char* from = in + src_off * esz;
    if (s == 1) {
      std::memcpy(out, from, static_cast<size_t>(n * esz));
    } else {
      switch (elem_size) {
        case 1: copy_strided_run<uint8_t>(out, from, n, s); break;
        case 2: copy_strided_run<uint16_t>(out, from, n, s); break;
        case 4: copy_strided_run<uint32_t>(out, from, n, s); break;
        case 8: copy_strided_run<uint64_t>(out, from, n, s); break;
        default:
          for (int64_t i = 0; i < n; ++i) std::memcpy(out + i * esz, from + i * s * esz, elem_size);
      }
    }
    out += n * esz;
    // Advance the outer multi-index like an odometer.
    size_t d = k;
    while (true) {
      if (d == 0) return;
      --d;
      src_off += st[d];
      if (++counter[d] < dims[d]) break;
      src_off -= st[d] * dims[d];
      counter[d] = 0;
    }
  }
}

void permute_copy(void* dst, const Tensor& src, const Shape& src_shape, const std::vector<int64_t>& perm) {
  const std::vector<int64_t> in_strides = shape_strides(src_shape);
  Shape out_shape(perm.size());
  std::vector<int64_t> strides(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) {
    out_shape[k] = src_shape[static_cast<size_t>(perm[k])];
    strides[k] = in_strides[static_cast<size_t>(perm[k])];
  }
  strided_copy(dst, src.raw_data(), dtype_size(src.dtype()), out_shape, strides, 0);
}

StatusOr<std::vector<int64_t>> read_int_tensor(const KernelContext& ctx, size_t input, const char* what) {
  const Tensor& t = ctx.input(input);
  if (!dtype_is_integer(t.dtype()))
    return ctx.error(std::string(what) + " (input " + std::to_string(input) + ") must be an integer tensor, got " +
                     std::string(dtype_name(t.dtype())));
  return t.to_i64_vector();
}

namespace {

// Propagates the input's dims_value to output 0 of a view op whose output
// holds the same elements in the same order (Reshape, Squeeze, Identity...).
void propagate_same_elements(InferContext& ctx, const SymShape& out_shape) {
  if (out_shape.has_rank && out_shape.rank() > 1) return;
  if (auto dims = small_int_dims(ctx, 0)) ctx.set_output_dims_value(0, std::move(*dims));
}

// The kernel of every view op: output 0 shares the input's storage.
Status view_kernel(KernelContext& ctx) {
  KILN_ASSIGN_OR_RETURN(Shape shape, static_output_shape(ctx, 0));
  auto t = ctx.input(0).reshaped(std::move(shape));
  if (!t.ok()) return ctx.error(t.status().message());
  ctx.set_output(0, std::move(t).value());
  return ok_status();
}

// ---------------------------------------------------------------- Reshape

// The -1 of a Reshape: numel(input) / product(other target dims), with the
// factors the two sides share cancelled symbolically first, so that e.g.
// [b, s, 768] -> [b, s, 12, -1] gives 64 rather than (b*s*768)/(b*s*12).
// A constant product past int64 gives an unknown dim, as Dim's own
// arithmetic does (found by fuzz_rewriter: 6049382595061729 * 77777777).
Dim infer_minus_one(const std::vector<Dim>& in, const std::vector<Dim>& others) {
  int64_t const_in = 1, const_other = 1;
  std::vector<Dim> sym_in, sym_other;
  for (const Dim& d : in) {
    if (d.is_unknown() || (d.is_const() && d.value() < 0)) return Dim();  // a negative dim is no size
    if (!d.is_const()) {
      sym_in.push_back(d);
      continue;
    }
    const std::optional<int64_t> p = checked_mul(const_in, d.value());
    if (!p) return Dim();
    const_in = *p;
  }
  for (const Dim& d : others) {
    if (d.is_unknown() || (d.is_const() && d.value() < 0)) return Dim();
    if (d.is_const()) {
      const std::optional<int64_t> p = checked_mul(const_other, d.value());
      if (!p) return Dim();
      const_other = *p;
      continue;
    }
    auto it = std::find_if(sym_in.begin(), sym_in.end(), [&](const Dim& x) { return x.same_as(d); });
    if (it != sym_in.end()) sym_in.erase(it);
    else sym_other.push_back(d);
  }
  if (const_other == 0) return Dim();
  if (sym_other.empty() && const_in % const_other == 0) return dims_product(sym_in) * Dim(const_in / const_other);
  return Dim::floor_div(dims_product(sym_in) * Dim(const_in), dims_product(sym_other) * Dim(const_other));
}

// A static shape's element count, or nullopt when it overflows int64 (a
// model may declare any dims; found by fuzz_onnx_import).
// nullopt for a negative dim too (no size: the text IR accepts one, and
// INT64_MIN % -1 would trap below).
std::optional<int64_t> reshape_element_count(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return std::nullopt;
  return n;
}

Status infer_reshape(InferContext& ctx) {
  const SymShape& in = ctx.input_shape(0);
  const DType dt = ctx.input_dtype(0);
  const bool allowzero = ctx.node().attr_int("allowzero", 0) != 0;
  if (!dtype_is_integer(ctx.input_dtype(1)))
    return ctx.error("shape (input 1) must be an int64 tensor, got " + std::string(dtype_name(ctx.input_dtype(1))));
  const SymShape& shape_shape = ctx.input_shape(1);
  if (shape_shape.has_rank && shape_shape.rank() != 1)
    return ctx.error("shape (input 1) must be 1-D, got shape " + shape_shape.to_string());
  auto target = ctx.input_as_dims(1);
  if (!target) {
    if (shape_shape.has_rank && shape_shape.dims[0].is_const())
      ctx.set_output(0, dt, SymShape(std::vector<Dim>(static_cast<size_t>(shape_shape.dims[0].value()))));
    else
      ctx.set_output(0, dt, SymShape::unranked());
    return ok_status();
  }
  std::vector<Dim> out(target->size());
  int64_t minus_one = -1;
  bool has_zero = false;
  for (size_t k = 0; k < target->size(); ++k) {
    const Dim& d = (*target)[k];
    if (!d.is_const()) {
      out[k] = d;
      continue;
    }
    const int64_t v = d.value();
    if (v == -1) {
      if (minus_one >= 0)
        return ctx.error("target shape " + dims_string(*target) + " has more than one -1");
      minus_one = static_cast<int64_t>(k);
    } else if (v < -1) {
      return ctx.error("target shape " + dims_string(*target) + " has invalid dim " + std::to_string(v));
    } else if (v == 0 && !allowzero) {
      if (in.has_rank && static_cast<int64_t>(k) >= in.rank())
        return ctx.error("target dim " + std::to_string(k) + " is 0 (copy the input dim) but the input " +
                         in.to_string() + " has only " + std::to_string(in.rank()) + " dims");
      out[k] = in.has_rank ? in.dims[k] : Dim();
    } else {
      has_zero |= v == 0;
      out[k] = Dim(v);
    }
  }
  if (allowzero && has_zero && minus_one >= 0)
    return ctx.error("target shape " + dims_string(*target) + " has both 0 and -1 with allowzero=1");
  if (minus_one >= 0) {
    std::vector<Dim> others;
    for (size_t k = 0; k < out.size(); ++k)
      if (static_cast<int64_t>(k) != minus_one) others.push_back(out[k]);
    if (!in.has_rank) {
      out[static_cast<size_t>(minus_one)] = Dim();
    } else if (in.is_static() && SymShape(others).is_static()) {
      const std::optional<int64_t> total = reshape_element_count(in.concrete());
      const std::optional<int64_t> rest = reshape_element_count(SymShape(others).concrete());
      if (!total || !rest) return ctx.error("cannot reshape " + in.to_string() + " to " + dims_string(*target) +
                                            ": a dim is negative or the element count overflows int64");
      if (*rest == 0 || *total % *rest != 0)
        return ctx.error("cannot reshape " + in.to_string() + " to " + dims_string(*target));
      out[static_cast<size_t>(minus_one)] = Dim(*total / *rest);
    } else {
      out[static_cast<size_t>(minus_one)] = infer_minus_one(in.dims, others);
    }
  } else if (in.is_static() && SymShape(out).is_static()) {
    const std::optional<int64_t> have = reshape_element_count(in.concrete());
    const std::optional<int64_t> want = reshape_element_count(SymShape(out).concrete());
    if (!have || !want || *have != *want)
      return ctx.error("cannot reshape " + in.to_string() + " (" +
                       (have ? std::to_string(*have) : std::string("no valid count of")) + " elements) to " +
                       SymShape(out).to_string() + (want ? "" : ": its element count overflows int64"));
  }
  SymShape result(std::move(out));
  propagate_same_elements(ctx, result);
  ctx.set_output(0, dt, std::move(result));
  return ok_status();
}

// ---------------------------------------------------------------- Flatten

Status infer_flatten(InferContext& ctx) {
  const SymShape& in = ctx.input_shape(0);
  const int64_t axis = ctx.node().attr_int("axis", 1);
  if (!in.has_rank) {
    ctx.set_output(0, ctx.input_dtype(0), SymShape({Dim(), Dim()}));
    return ok_status();
  }
  const int64_t r = in.rank();
  if (axis < -r || axis > r)
    return ctx.error("axis " + std::to_string(axis) + " is out of range for input of rank " + std::to_string(r));
  const auto a = static_cast<size_t>(axis < 0 ? axis + r : axis);
  std::vector<Dim> outer(in.dims.begin(), in.dims.begin() + static_cast<ptrdiff_t>(a));
  std::vector<Dim> inner(in.dims.begin() + static_cast<ptrdiff_t>(a), in.dims.end());
  ctx.set_output(0, ctx.input_dtype(0), SymShape({dims_product(outer), dims_product(inner)}));
  return ok_status();
}

// ------------------------------------------------------- Squeeze/Unsqueeze

// Reads and normalizes a constant axes list against `rank`; a duplicate or
// out-of-range axis is an error.
StatusOr<std::vector<int64_t>> normalize_axes(const InferContext& ctx, const std::vector<Dim>& axes, int64_t rank) {
  std::vector<int64_t> out;
  for (const Dim& d : axes) {
    if (!d.is_const()) return ctx.error("axes must be constants, got " + dims_string(axes));
    auto a = normalize_axis(d.value(), rank);
    if (!a)
      return ctx.error("axis " + std::to_string(d.value()) + " is out of range for rank " + std::to_string(rank));
    if (std::find(out.begin(), out.end(), *a) != out.end())
      return ctx.error("axis " + std::to_string(d.value()) + " appears more than once in axes " + dims_string(axes));
    out.push_back(*a);
  }
  return out;
}

Status infer_squeeze(InferContext& ctx) {
  const SymShape& in = ctx.input_shape(0);
  const DType dt = ctx.input_dtype(0);
  if (ctx.has_input(1) && !dtype_is_integer(ctx.input_dtype(1))) return ctx.error("axes (input 1) must be an int64 tensor");
  std::vector<Dim> out;
  auto axes = ctx.input_as_dims(1);
  // An empty axes tensor means "not given", as in onnxruntime.
  if (!ctx.has_input(1) || (axes && axes->empty())) {
    if (!in.has_rank) {
      ctx.set_output(0, dt, SymShape::unranked());
      return ok_status();
    }
    for (const Dim& d : in.dims) {
      if (!d.is_const()) {  // a symbolic dim might be 1 at run time
        ctx.set_output(0, dt, SymShape::unranked());
        return ok_status();
      }
      if (d.value() != 1) out.push_back(d);
    }
  } else {
    const bool axes_const = axes && std::all_of(axes->begin(), axes->end(), [](const Dim& d) { return d.is_const(); });
    if (!in.has_rank || !axes_const) {
      const SymShape& as = ctx.input_shape(1);
      const int64_t k = axes ? static_cast<int64_t>(axes->size())
                             : (as.has_rank && as.rank() == 1 && as.dims[0].is_const() ? as.dims[0].value() : -1);
      if (in.has_rank && k >= 0 && k <= in.rank())
        ctx.set_output(0, dt, SymShape(std::vector<Dim>(static_cast<size_t>(in.rank() - k))));
      else
        ctx.set_output(0, dt, SymShape::unranked());
      return ok_status();
    }
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> norm, normalize_axes(ctx, *axes, in.rank()));
    for (int64_t a : norm) {
      const Dim& d = in.dims[static_cast<size_t>(a)];
      if (d.is_const() && d.value() != 1)
        return ctx.error("cannot squeeze axis " + std::to_string(a) + " of size " + std::to_string(d.value()) +
                         " (input " + in.to_string() + ")");
    }
    for (int64_t i = 0; i < in.rank(); ++i)
      if (std::find(norm.begin(), norm.end(), i) == norm.end()) out.push_back(in.dims[static_cast<size_t>(i)]);
  }
  SymShape result(std::move(out));
  propagate_same_elements(ctx, result);
  ctx.set_output(0, dt, std::move(result));
  return ok_status();
}

Status infer_unsqueeze(InferContext& ctx) {
  const SymShape& in = ctx.input_shape(0);
  const DType dt = ctx.input_dtype(0);
  if (!dtype_is_integer(ctx.input_dtype(1))) return ctx.error("axes (input 1) must be an int64 tensor");
  auto axes = ctx.input_as_dims(1);
  if (!in.has_rank || !axes) {
    const SymShape& as = ctx.input_shape(1);
    if (in.has_rank && as.has_rank && as.rank() == 1 && as.dims[0].is_const())
      ctx.set_output(0, dt, SymShape(std::vector<Dim>(static_cast<size_t>(in.rank() + as.dims[0].value()))));
    else
      ctx.set_output(0, dt, SymShape::unranked());
    return ok_status();
  }
  const int64_t out_rank = in.rank() + static_cast<int64_t>(axes->size());
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> norm, normalize_axes(ctx, *axes, out_rank));
  std::vector<Dim> out;
  size_t next = 0;
  for (int64_t i = 0; i < out_rank; ++i) {
    if (std::find(norm.begin(), norm.end(), i) != norm.end()) out.emplace_back(1);
    else out.push_back(in.dims[next++]);
  }
  SymShape result(std::move(out));
  propagate_same_elements(ctx, result);
  ctx.set_output(0, dt, std::move(result));
  return ok_status();
}

// ------------------------------------------------------- Identity/Dropout

Status infer_identity(InferContext& ctx) {
  propagate_same_elements(ctx, ctx.input_shape(0));
  ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
  return ok_status();
}

Status identity_kernel(KernelContext& ctx) {
  ctx.set_output(0, ctx.input(0));
  return ok_status();
}

Status infer_dropout(InferContext& ctx) {
  if (const Tensor* t = ctx.input_value(2); t && t->numel() >= 1 && t->get_f64(0) != 0.0)
    return ctx.error("training_mode=true is not supported: Kiln runs inference only");
  if (const Tensor* r = ctx.input_value(1); r && r->numel() >= 1) {
    const double ratio = r->get_f64(0);
    if (!(ratio >= 0.0 && ratio < 1.0)) return ctx.error("ratio must be in [0, 1), got " + std::to_string(ratio));
  }
  ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
  if (ctx.num_outputs() > 1) ctx.set_output(1, DType::kBool, ctx.input_shape(0));
  return ok_status();
}

Status dropout_kernel(KernelContext& ctx) {
  if (ctx.has_input(2) && ctx.input(2).numel() >= 1 && ctx.input(2).get_f64(0) != 0.0)
    return ctx.error("training_mode=true is not supported: Kiln runs inference only");
  ctx.set_output(0, ctx.input(0));
  if (ctx.num_outputs() > 1) {
    KILN_ASSIGN_OR_RETURN(Tensor * mask, ctx.allocate_output(1, DType::kBool, ctx.input(0).shape()));
    if (mask->numel()) std::memset(mask->raw_data(), 1, static_cast<size_t>(mask->numel()));
  }
  return ok_status();
}

// ------------------------------------------------------------ Shape/Size

// Shape's [start, end) after ONNX's clamping.
std::pair<int64_t, int64_t> shape_range(const ir::Node& node, int64_t rank) {
  int64_t start = node.attr_int("start", 0);
  int64_t end = node.attr_int("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  return {start, std::max(start, end)};
}

Status infer_shape(InferContext& ctx) {
  const SymShape& in = ctx.input_shape(0);
  if (!in.has_rank) {
    ctx.set_output(0, DType::kInt64, SymShape({Dim()}));
    return ok_status();
  }
  auto [start, end] = shape_range(ctx.node(), in.rank());
  std::vector<Dim> dims(in.dims.begin() + start, in.dims.begin() + end);
  ctx.set_output(0, DType::kInt64, SymShape({Dim(end - start)}));
  ctx.set_output_dims_value(0, std::move(dims));
  return ok_status();
}

Status shape_kernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  auto [start, end] = shape_range(ctx.node(), in.rank());
  KILN_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0, DType::kInt64, {end - start}));
  for (int64_t i = start; i < end; ++i) out->data<int64_t>()[i - start] = in.dim(i);
  return ok_status();
}

Status infer_size(InferContext& ctx) {
  ctx.set_output(0, DType::kInt64, SymShape(std::vector<Dim>{}));
  if (ctx.input_shape(0).has_rank) ctx.set_output_dims_value(0, {dims_product(ctx.input_shape(0).dims)});
  return ok_status();
}

Status size_kernel(KernelContext& ctx) {
  KILN_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0, DType::kInt64, {}));
  out->data<int64_t>()[0] = ctx.input(0).numel();
  return ok_status();
}

// -------------------------------------------------------------- Transpose

StatusOr<std::vector<int64_t>> transpose_perm(const ir::Node& node, int64_t rank) {
  std::vector<int64_t> perm;
  if (!node.attr("perm")) {
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
    return perm;
  }
  perm = node.attr_ints("perm");
  if (static_cast<int64_t>(perm.size()) != rank)
    return invalid_argument(node.describe() + ": perm has " + std::to_string(perm.size()) +
                            " entries but the input has rank " + std::to_string(rank));
  std::vector<bool> seen(perm.size(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[static_cast<size_t>(p)])
      return invalid_argument(node.describe() + ": perm " + shape_to_string(perm) + " is not a permutation of 0.." +
                              std::to_string(rank - 1));
    seen[static_cast<size_t>(p)] = true;
  }
  return perm;
}

Status infer_transpose(InferContext& ctx) {
  const SymShape& in = ctx.input_shape(0);
  if (!in.has_rank) {
    const ir::Attribute* p = ctx.node().attr("perm");
    ctx.set_output(0, ctx.input_dtype(0),
                   p ? SymShape(std::vector<Dim>(p->ints.size())) : SymShape::unranked());
    return ok_status();
  }
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> perm, transpose_perm(ctx.node(), in.rank()));
  std::vector<Dim> out;
  for (int64_t p : perm) out.push_back(in.dims[static_cast<size_t>(p)]);
  ctx.set_output(0, ctx.input_dtype(0), SymShape(std::move(out)));
  return ok_status();
}

Status transpose_kernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> perm, transpose_perm(ctx.node(), in.rank()));
  KILN_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0));
  permute_copy(out->raw_data(), in, in.shape(), perm);
  return ok_status();
}

// ----------------------------------------------------------------- Expand

Status infer_expand(InferContext& ctx) {
  const DType dt = ctx.input_dtype(0);
  if (!dtype_is_integer(ctx.input_dtype(1))) return ctx.error("shape (input 1) must be an int64 tensor");
  const SymShape& ss = ctx.input_shape(1);
  if (ss.has_rank && ss.rank() != 1) return ctx.error("shape (input 1) must be 1-D, got " + ss.to_string());
  auto target = ctx.input_as_dims(1);
  if (!target) {
    const SymShape& in = ctx.input_shape(0);
    if (in.has_rank && ss.has_rank && ss.dims[0].is_const())
      ctx.set_output(0, dt, SymShape(std::vector<Dim>(static_cast<size_t>(std::max(in.rank(), ss.dims[0].value())))));
    else
      ctx.set_output(0, dt, SymShape::unranked());
    return ok_status();
  }
  for (const Dim& d : *target)
    if (d.is_const() && d.value() < 0) return ctx.error("shape " + dims_string(*target) + " has a negative dim");
  auto out = broadcast_shapes(ctx.input_shape(0), SymShape(*target));
  if (!out.ok()) return ctx.error(out.status().message());
  ctx.set_output(0, dt, std::move(out).value());
  return ok_status();
}

Status expand_kernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  KILN_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0));
  const size_t r = static_cast<size_t>(out->rank()), off = r - static_cast<size_t>(in.rank());
  const std::vector<int64_t> in_strides = shape_strides(in.shape());
  std::vector<int64_t> strides(r, 0);
  for (size_t i = 0; i < in_strides.size(); ++i) strides[i + off] = in.shape()[i] == 1 ? 0 : in_strides[i];
  strided_copy(out->raw_data(), in.raw_data(), dtype_size(in.dtype()), out->shape(), strides, 0);
  return ok_status();
}

// ------------------------------------------------------------------- Tile

Status infer_tile(InferContext& ctx) {
  const SymShape& in = ctx.input_shape(0);
  const DType dt = ctx.input_dtype(0);
  if (!dtype_is_integer(ctx.input_dtype(1))) return ctx.error("repeats (input 1) must be an int64 tensor");
  auto reps = ctx.input_as_dims(1);
  if (!in.has_rank) {
    ctx.set_output(0, dt, reps ? SymShape(std::vector<Dim>(reps->size())) : SymShape::unranked());
    return ok_status();
  }
  if (!reps) {
    ctx.set_output(0, dt, SymShape(std::vector<Dim>(static_cast<size_t>(in.rank()))));
    return ok_status();
  }
  if (static_cast<int64_t>(reps->size()) != in.rank())
    return ctx.error("repeats has " + std::to_string(reps->size()) + " entries but the input has rank " +
                     std::to_string(in.rank()));
  std::vector<Dim> out;
  for (size_t i = 0; i < reps->size(); ++i) {
    const Dim& rep = (*reps)[i];
    if (rep.is_const() && rep.value() < 0) return ctx.error("repeats " + dims_string(*reps) + " has a negative entry");
    if (rep.is_const() && in.dims[i].is_const() && !checked_mul(in.dims[i].value(), rep.value()))
      return ctx.error("repeats " + dims_string(*reps) + " make axis " + std::to_string(i) + " of " +
                       in.to_string() + " overflow int64");
    out.push_back(in.dims[i] * rep);
  }
  ctx.set_output(0, dt, SymShape(std::move(out)));
  return ok_status();
}

Status tile_kernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  KILN_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> reps, read_int_tensor(ctx, 1, "repeats"));
  // Output viewed as [r0, d0, r1, d1, ...] reading the input with stride 0
  // over each repeat.
  const std::vector<int64_t> in_strides = shape_strides(in.shape());
  Shape shape;
  std::vector<int64_t> strides;
  for (size_t i = 0; i < reps.size(); ++i) {
    shape.push_back(reps[i]);
    strides.push_back(0);
    shape.push_back(in.shape()[i]);
    strides.push_back(in_strides[i]);
  }
  strided_copy(out->raw_data(), in.raw_data(), dtype_size(in.dtype()), shape, strides, 0);
  return ok_status();
}

// ------------------------------------------------ DepthToSpace/SpaceToDepth

StatusOr<int64_t> blocksize(const InferContext& ctx) {
  const ir::Attribute* b = ctx.node().attr("blocksize");
  if (!b) return ctx.error("attribute 'blocksize' is required");
  if (b->i <= 0 || b->i > (int64_t{1} << 20))
    return ctx.error("blocksize must be in [1, 2^20], got " + std::to_string(b->i));
  return b->i;
}

Status infer_depth_to_space(InferContext& ctx) {
  const SymShape& in = ctx.input_shape(0);
  KILN_ASSIGN_OR_RETURN(int64_t b, blocksize(ctx));
  const std::string mode = ctx.node().attr_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") return ctx.error("mode must be DCR or CRD, got '" + mode + "'");
  if (!in.has_rank) {
    ctx.set_output(0, ctx.input_dtype(0), SymShape(std::vector<Dim>(4)));
    return ok_status();
  }
  if (in.rank() != 4) return ctx.error("input must be 4-D [N,C,H,W], got " + in.to_string());
  const Dim& c = in.dims[1];
  if (c.is_const() && c.value() % (b * b) != 0)
    return ctx.error("channels " + std::to_string(c.value()) + " are not divisible by blocksize^2 = " +
                     std::to_string(b * b));
  ctx.set_output(0, ctx.input_dtype(0),
                 SymShape({in.dims[0], Dim::floor_div(c, Dim(b * b)), in.dims[2] * Dim(b), in.dims[3] * Dim(b)}));
  return ok_status();
}

Status depth_to_space_kernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const int64_t b = ctx.node().attr_int("blocksize", 1);
  const int64_t n = in.dim(0), c = in.dim(1) / (b * b), h = in.dim(2), w = in.dim(3);
  KILN_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0));
  if (ctx.node().attr_string("mode", "DCR") == "DCR")
    permute_copy(out->raw_data(), in, {n, b, b, c, h, w}, {0, 3, 4, 1, 5, 2});
  else
    permute_copy(out->raw_data(), in, {n, c, b, b, h, w}, {0, 1, 4, 2, 5, 3});
  return ok_status();
}

Status infer_space_to_depth(InferContext& ctx) {
  const SymShape& in = ctx.input_shape(0);
  KILN_ASSIGN_OR_RETURN(int64_t b, blocksize(ctx));
  if (!in.has_rank) {
    ctx.set_output(0, ctx.input_dtype(0), SymShape(std::vector<Dim>(4)));
    return ok_status();
  }
  if (in.rank() != 4) return ctx.error("input must be 4-D [N,C,H,W], got " + in.to_string());
  for (size_t i = 2; i < 4; ++i)
    if (in.dims[i].is_const() && in.dims[i].value() % b != 0)
      return ctx.error("spatial dim " + std::to_string(in.dims[i].value()) + " is not divisible by blocksize " +
                       std::to_string(b));
  ctx.set_output(0, ctx.input_dtype(0),
                 SymShape({in.dims[0], in.dims[1] * Dim(b * b), Dim::floor_div(in.dims[2], Dim(b)),
                           Dim::floor_div(in.dims[3], Dim(b))}));
  return ok_status();
}

Status space_to_depth_kernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const int64_t b = ctx.node().attr_int("blocksize", 1);
  KILN_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0));
  permute_copy(out->raw_data(), in, {in.dim(0), in.dim(1), in.dim(2) / b, b, in.dim(3) / b, b}, {0, 3, 5, 1, 2, 4});
  return ok_status();
}

}  // namespace
}  // namespace movement

void register_data_movement_ops(OpRegistry& r) {
  using namespace movement;
  add_op(r, {"Reshape", "", 2, 2, 1, 1, infer_reshape, view_kernel, {1}}, MappingType::kReorganize);
  add_op(r, {"Flatten", "", 1, 1, 1, 1, infer_flatten, view_kernel}, MappingType::kReorganize);
  add_op(r, {"Squeeze", "", 1, 2, 1, 1, infer_squeeze, view_kernel, {1}}, MappingType::kReorganize);
  add_op(r, {"Unsqueeze", "", 2, 2, 1, 1, infer_unsqueeze, view_kernel, {1}}, MappingType::kReorganize);
  add_op(r, {"Identity", "", 1, 1, 1, 1, infer_identity, identity_kernel}, MappingType::kOneToOne);
  add_op(r, {"Dropout", "", 1, 3, 1, 2, infer_dropout, dropout_kernel}, MappingType::kOneToOne);
  add_op(r, {"Shape", "", 1, 1, 1, 1, infer_shape, shape_kernel}, MappingType::kOther);
  add_op(r, {"Size", "", 1, 1, 1, 1, infer_size, size_kernel}, MappingType::kOther);
  add_op(r, {"Transpose", "", 1, 1, 1, 1, infer_transpose, transpose_kernel}, MappingType::kShuffle);
  add_op(r, {"Expand", "", 2, 2, 1, 1, infer_expand, expand_kernel, {1}}, MappingType::kOneToMany);
  add_op(r, {"Tile", "", 2, 2, 1, 1, infer_tile, tile_kernel, {1}}, MappingType::kOneToMany);
  add_op(r, {"DepthToSpace", "", 1, 1, 1, 1, infer_depth_to_space, depth_to_space_kernel}, MappingType::kShuffle);
  add_op(r, {"SpaceToDepth", "", 1, 1, 1, 1, infer_space_to_depth, space_to_depth_kernel}, MappingType::kShuffle);
  register_slice_concat_ops(r);
  register_gather_scatter_ops(r);
  register_tensor_gen_ops(r);
  register_pad_op(r);
  register_resize_op(r);
}

}  // namespace kiln::ops
