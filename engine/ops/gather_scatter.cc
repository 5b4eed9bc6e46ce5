// Op family 'data_movement', part 2: indexed reads and writes.
//
// Gather, GatherElements, GatherND, ScatterND and ScatterElements. Gathers
// move whole inner slices with memcpy and are dtype-agnostic; scatters with a
// reduction do typed arithmetic (fp16 through float). Indices are checked
// against the data's extent and an out-of-range index is an error naming the
// index, never an out-of-bounds read. Gather also carries dims_value, since
// Shape->Gather is how exported models pick one dim out of a shape.
#include <algorithm>
#include <cstring>
#include <string>

#include "engine/ops/data_movement_internal.h"
#include "engine/ops/op_registry.h"

namespace kiln::ops::movement {
namespace {

using ir::Dim;
using ir::SymShape;

Status check_indices_dtype(const InferContext& ctx, size_t i) {
  const DType t = ctx.input_dtype(i);
  if (t != DType::kInt64 && t != DType::kInt32)
    return ctx.error("indices (input " + std::to_string(i) + ") must be int32 or int64, got " +
                     std::string(dtype_name(t)));
  return ok_status();
}

// Maps an index in [-n, n) to [0, n); an error names the index otherwise.
StatusOr<int64_t> checked_index(const KernelContext& ctx, int64_t idx, int64_t n, int64_t axis) {
  if (idx < -n || idx >= n)
    return ctx.error("index " + std::to_string(idx) + " is out of range for axis " + std::to_string(axis) +
                     " of size " + std::to_string(n));
  return idx < 0 ? idx + n : idx;
}

// Constant indices are checked where the node is inferred (import, passes,
// planning), so an out-of-range index is an error on every backend, as ONNX
// says, instead of a clamp on one device and an error on another at run
// time. Indices along `axis` of `data` (every index, as Gather and
// GatherElements, ScatterElements use them) must lie in [-n, n).
Status check_constant_axis_indices(const InferContext& ctx, const SymShape& data, int64_t axis) {
  const Tensor* indices = ctx.input_value(1);
  if (!indices || !data.has_rank || axis < 0 || axis >= data.rank()) return ok_status();
  const Dim& n = data.dims[static_cast<size_t>(axis)];
  if (!n.is_const()) return ok_status();
  for (int64_t i = 0; i < indices->numel(); ++i) {
    const int64_t idx = indices->get_i64(i);
    if (idx < -n.value() || idx >= n.value())
      return ctx.error("index " + std::to_string(idx) + " is out of range for axis " + std::to_string(axis) +
                       " of size " + std::to_string(n.value()) + " (indices element " + std::to_string(i) + ")");
  }
  return ok_status();
}

// ScatterND's and GatherND's index tuples: component k indexes axis
// `batch_dims + k` of data.
Status check_constant_tuple_indices(const InferContext& ctx, const SymShape& data, int64_t batch_dims) {
  const Tensor* indices = ctx.input_value(1);
  if (!indices || !data.has_rank || indices->rank() < 1) return ok_status();
  const int64_t m = indices->shape().back();
  if (m < 1 || batch_dims + m > data.rank()) return ok_status();  // the shape checks report it
  for (int64_t i = 0; i < indices->numel(); ++i) {
    const int64_t axis = batch_dims + i % m;
    const Dim& n = data.dims[static_cast<size_t>(axis)];
    const int64_t idx = indices->get_i64(i);
    if (n.is_const() && (idx < -n.value() || idx >= n.value()))
      return ctx.error("index " + std::to_string(idx) + " is out of range for axis " + std::to_string(axis) +
                       " of size " + std::to_string(n.value()) + " (indices tuple " + std::to_string(i / m) + ")");
  }
  return ok_status();
}

int64_t product(const Shape& s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= s[i];
  return p;
}

// ----------------------------------------------------------------- Gather

// Picking entries out of a known shape vector gives a known shape vector.
Status gather_dims_value(InferContext& ctx) {
  auto values = small_int_dims(ctx, 0);
  auto idx = small_int_dims(ctx, 1);
  if (!values || !idx) return ok_status();
  std::vector<Dim> picked;
  const auto n = static_cast<int64_t>(values->size());
  for (const Dim& i : *idx) {
    if (!i.is_const()) return ok_status();
    if (i.value() < -n || i.value() >= n)
      return ctx.error("index " + std::to_string(i.value()) + " is out of range for axis 0 of size " +
                       std::to_string(n));
    picked.push_back((*values)[static_cast<size_t>(i.value() < 0 ? i.value() + n : i.value())]);
  }
  ctx.set_output_dims_value(0, std::move(picked));
  return ok_status();
}

Status infer_gather(InferContext& ctx) {
  KILN_RETURN_IF_ERROR(check_indices_dtype(ctx, 1));
  const SymShape& data = ctx.input_shape(0);
  const SymShape& indices = ctx.input_shape(1);
  const DType dt = ctx.input_dtype(0);
  const int64_t axis_attr = ctx.node().attr_int("axis", 0);
  if (!data.has_rank || !indices.has_rank) {
    ctx.set_output(0, dt, SymShape::unranked());
    return ok_status();
  }
  auto axis = normalize_axis(axis_attr, data.rank());
  if (!axis)
    return ctx.error("axis " + std::to_string(axis_attr) + " is out of range for data of rank " +
                     std::to_string(data.rank()));
  const auto a = static_cast<size_t>(*axis);
  std::vector<Dim> out(data.dims.begin(), data.dims.begin() + static_cast<ptrdiff_t>(a));
  out.insert(out.end(), indices.dims.begin(), indices.dims.end());
  out.insert(out.end(), data.dims.begin() + static_cast<ptrdiff_t>(a) + 1, data.dims.end());
  if (data.rank() == 1 && indices.rank() <= 1) KILN_RETURN_IF_ERROR(gather_dims_value(ctx));
  KILN_RETURN_IF_ERROR(check_constant_axis_indices(ctx, data, *axis));
  ctx.set_output(0, dt, SymShape(std::move(out)));
  return ok_status();
}

Status gather_kernel(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const int64_t axis = *normalize_axis(ctx.node().attr_int("axis", 0), data.rank());
  const auto a = static_cast<size_t>(axis);
  const int64_t outer = product(data.shape(), 0, a);
  const int64_t n = data.dim(axis);
  const size_t inner = static_cast<size_t>(product(data.shape(), a + 1, data.shape().size())) * dtype_size(data.dtype());
  std::vector<int64_t> idx = indices.to_i64_vector();
  for (int64_t& i : idx) {
    KILN_ASSIGN_OR_RETURN(i, checked_index(ctx, i, n, axis));
  }
  KILN_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0));
  auto* dst = static_cast<unsigned char*>(out->raw_data());
  const auto* src = static_cast<const unsigned char*>(data.raw_data());
  if (inner == 0) return ok_status();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i : idx) {
      std::memcpy(dst, src + static_cast<size_t>(o * n + i) * inner, inner);
      dst += inner;
    }
  }
  return ok_status();
}

// --------------------------------------------------------- GatherElements

Status infer_gather_elements(InferContext& ctx) {
  KILN_RETURN_IF_ERROR(check_indices_dtype(ctx, 1));
  const SymShape& data = ctx.input_shape(0);
  const SymShape& indices = ctx.input_shape(1);
  if (data.has_rank && indices.has_rank) {
    if (data.rank() != indices.rank())
      return ctx.error("data has rank " + std::to_string(data.rank()) + " but indices have rank " +
                       std::to_string(indices.rank()));
    const int64_t axis_attr = ctx.node().attr_int("axis", 0);
    const auto axis = normalize_axis(axis_attr, data.rank());
    if (!axis)
      return ctx.error("axis " + std::to_string(axis_attr) + " is out of range for rank " + std::to_string(data.rank()));
    KILN_RETURN_IF_ERROR(check_constant_axis_indices(ctx, data, *axis));
  }
  ctx.set_output(0, ctx.input_dtype(0), indices);
  return ok_status();
}

Status gather_elements_kernel(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const int64_t axis = *normalize_axis(ctx.node().attr_int("axis", 0), data.rank());
  const size_t rank = static_cast<size_t>(data.rank());
  for (size_t d = 0; d < rank; ++d)
    if (static_cast<int64_t>(d) != axis && indices.shape()[d] > data.shape()[d])
      return ctx.error("indices " + shape_to_string(indices.shape()) + " exceed data " +
                       shape_to_string(data.shape()) + " on axis " + std::to_string(d));
  KILN_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0));
  const std::vector<int64_t> strides = shape_strides(data.shape());
  const size_t elem = dtype_size(data.dtype());
  const int64_t n = data.dim(axis);
  auto* dst = static_cast<unsigned char*>(out->raw_data());
  const auto* src = static_cast<const unsigned char*>(data.raw_data());
  std::vector<int64_t> counter(rank, 0);
  int64_t base = 0;  // offset from the non-axis coordinates
  for (int64_t e = 0; e < indices.numel(); ++e) {
    KILN_ASSIGN_OR_RETURN(int64_t i, checked_index(ctx, indices.get_i64(e), n, axis));
    std::memcpy(dst + static_cast<size_t>(e) * elem,
                src + static_cast<size_t>(base + i * strides[static_cast<size_t>(axis)]) * elem, elem);
    for (size_t d = rank; d-- > 0;) {
      const int64_t step = static_cast<int64_t>(d) == axis ? 0 : strides[d];
      base += step;
      if (++counter[d] < indices.shape()[d]) break;
      base -= step * counter[d];
      counter[d] = 0;
    }
  }
  return ok_status();
}

// --------------------------------------------------------------- GatherND

Status infer_gather_nd(InferContext& ctx) {
  KILN_RETURN_IF_ERROR(check_indices_dtype(ctx, 1));
  const SymShape& data = ctx.input_shape(0);
  const SymShape& indices = ctx.input_shape(1);
  const DType dt = ctx.input_dtype(0);
  const int64_t b = ctx.node().attr_int("batch_dims", 0);
  if (!data.has_rank || !indices.has_rank) {
    ctx.set_output(0, dt, SymShape::unranked());
    return ok_status();
  }
  const int64_t r = data.rank(), q = indices.rank();
  if (r < 1 || q < 1) return ctx.error("data and indices must have rank >= 1");
  if (b < 0 || b >= std::min(r, q))
    return ctx.error("batch_dims " + std::to_string(b) + " must be in [0, min(rank(data), rank(indices)))");
  for (size_t i = 0; i < static_cast<size_t>(b); ++i)
    if (data.dims[i].is_const() && indices.dims[i].is_const() && data.dims[i].value() != indices.dims[i].value())
      return ctx.error("batch dim " + std::to_string(i) + " differs between data " + data.to_string() +
                       " and indices " + indices.to_string());
  const Dim& m = indices.dims.back();
  if (!m.is_const()) {
    ctx.set_output(0, dt, SymShape::unranked());
    return ok_status();
  }
  if (m.value() < 1 || m.value() > r - b)
    return ctx.error("the last dim of indices (" + std::to_string(m.value()) + ") must be in [1, " +
                     std::to_string(r - b) + "]");
  KILN_RETURN_IF_ERROR(check_constant_tuple_indices(ctx, data, b));
  std::vector<Dim> out(indices.dims.begin(), indices.dims.end() - 1);
  out.insert(out.end(), data.dims.begin() + b + m.value(), data.dims.end());
  ctx.set_output(0, dt, SymShape(std::move(out)));
  return ok_status();
}

Status gather_nd_kernel(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const auto b = static_cast<size_t>(ctx.node().attr_int("batch_dims", 0));
  const size_t r = data.shape().size(), q = indices.shape().size();
  const auto m = static_cast<size_t>(indices.shape().back());
  const std::vector<int64_t> strides = shape_strides(data.shape());
  const int64_t batches = product(data.shape(), 0, b);
  const int64_t batch_stride = product(data.shape(), b, r);
  const int64_t tuples = product(indices.shape(), b, q - 1);
  const size_t slice = static_cast<size_t>(product(data.shape(), b + m, r)) * dtype_size(data.dtype());
  KILN_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0));
  const std::vector<int64_t> idx = indices.to_i64_vector();
  auto* dst = static_cast<unsigned char*>(out->raw_data());
  const auto* src = static_cast<const unsigned char*>(data.raw_data());
  const size_t elem = dtype_size(data.dtype());
  size_t t = 0;
  for (int64_t bi = 0; bi < batches; ++bi) {
    for (int64_t ti = 0; ti < tuples; ++ti) {
      int64_t offset = bi * batch_stride;
      for (size_t k = 0; k < m; ++k, ++t) {
        KILN_ASSIGN_OR_RETURN(int64_t i, checked_index(ctx, idx[t], data.shape()[b + k], static_cast<int64_t>(b + k)));
        offset += i * strides[b + k];
      }
      if (slice) std::memcpy(dst, src + static_cast<size_t>(offset) * elem, slice);
      dst += slice;
    }
  }
  return ok_status();
}

// --------------------------------------------------------------- Scatters

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

StatusOr<Reduction> parse_reduction(const ir::Node& node) {
  const std::string s = node.attr_string("reduction", "none");
  if (s == "none") return Reduction::kNone;
  if (s == "add") return Reduction::kAdd;
  if (s == "mul") return Reduction::kMul;
  if (s == "max") return Reduction::kMax;
  if (s == "min") return Reduction::kMin;
  return invalid_argument(node.describe() + ": unknown reduction '" + s + "' (none, add, mul, max, min)");
}

template <typename T>
T reduce_one(T a, T b, Reduction red) {
  if constexpr (std::is_same_v<T, Half>) {
    return Half(reduce_one<float>(static_cast<float>(a), static_cast<float>(b), red));
  } else if constexpr (std::is_same_v<T, bool>) {
    switch (red) {
      case Reduction::kAdd: case Reduction::kMax: return a || b;
      case Reduction::kMul: case Reduction::kMin: return a && b;
      case Reduction::kNone: return b;
    }
    return b;
  } else {
    switch (red) {
      case Reduction::kAdd: return static_cast<T>(a + b);
      case Reduction::kMul: return static_cast<T>(a * b);
      case Reduction::kMax: return std::max(a, b);
      case Reduction::kMin: return std::min(a, b);
      case Reduction::kNone: return b;
    }
    return b;
  }
}

// dst[i] = reduce(dst[i], src[i]) for n elements of dtype `dt`.
void reduce_into(void* dst, const void* src, int64_t n, DType dt, Reduction red) {
  if (red == Reduction::kNone) {
    std::memcpy(dst, src, static_cast<size_t>(n) * dtype_size(dt));
    return;
  }
  visit_dtype(dt, [&]<typename T>() {
    T* d = static_cast<T*>(dst);
    const T* s = static_cast<const T*>(src);
    for (int64_t i = 0; i < n; ++i) d[i] = reduce_one<T>(d[i], s[i], red);
  });
}

Status infer_scatter_nd(InferContext& ctx) {
  KILN_RETURN_IF_ERROR(check_indices_dtype(ctx, 1));
  KILN_RETURN_IF_ERROR(parse_reduction(ctx.node()).status());
  const SymShape& data = ctx.input_shape(0);
  const SymShape& indices = ctx.input_shape(1);
  const SymShape& updates = ctx.input_shape(2);
  if (ctx.input_dtype(2) != ctx.input_dtype(0))
    return ctx.error("updates have dtype " + std::string(dtype_name(ctx.input_dtype(2))) + ", data has " +
                     std::string(dtype_name(ctx.input_dtype(0))));
  if (indices.has_rank && indices.rank() < 1) return ctx.error("indices must have rank >= 1");
  if (data.has_rank && indices.has_rank && indices.dims.back().is_const()) {
    const int64_t m = indices.dims.back().value();
    if (m < 1 || m > data.rank())
      return ctx.error("the last dim of indices (" + std::to_string(m) + ") must be in [1, " +
                       std::to_string(data.rank()) + "]");
    std::vector<Dim> expect(indices.dims.begin(), indices.dims.end() - 1);
    expect.insert(expect.end(), data.dims.begin() + m, data.dims.end());
    if (updates.has_rank) {
      bool ok = updates.rank() == static_cast<int64_t>(expect.size());
      for (size_t i = 0; ok && i < expect.size(); ++i)
        ok = !(expect[i].is_const() && updates.dims[i].is_const() && expect[i].value() != updates.dims[i].value());
      if (!ok)
        return ctx.error("updates have shape " + updates.to_string() + ", expected " + SymShape(expect).to_string());
    }
    KILN_RETURN_IF_ERROR(check_constant_tuple_indices(ctx, data, 0));
  }
  ctx.set_output(0, ctx.input_dtype(0), data);
  return ok_status();
}

Status scatter_nd_kernel(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const Tensor& updates = ctx.input(2);
  KILN_ASSIGN_OR_RETURN(Reduction red, parse_reduction(ctx.node()));
  KILN_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0));
  if (data.nbytes()) std::memcpy(out->raw_data(), data.raw_data(), data.nbytes());
  const size_t r = data.shape().size(), q = indices.shape().size();
  const auto m = static_cast<size_t>(indices.shape().back());
  const std::vector<int64_t> strides = shape_strides(data.shape());
  const int64_t tuples = product(indices.shape(), 0, q - 1);
  const int64_t slice = product(data.shape(), m, r);
  const size_t elem = dtype_size(data.dtype());
  const std::vector<int64_t> idx = indices.to_i64_vector();
  auto* dst = static_cast<unsigned char*>(out->raw_data());
  const auto* src = static_cast<const unsigned char*>(updates.raw_data());
  for (int64_t ti = 0; ti < tuples; ++ti) {
    int64_t offset = 0;
    for (size_t k = 0; k < m; ++k) {
      KILN_ASSIGN_OR_RETURN(int64_t i, checked_index(ctx, idx[static_cast<size_t>(ti) * m + k], data.shape()[k],
                                                     static_cast<int64_t>(k)));
      offset += i * strides[k];
    }
    reduce_into(dst + static_cast<size_t>(offset) * elem, src + static_cast<size_t>(ti * slice) * elem, slice,
                data.dtype(), red);
  }
  return ok_status();
}

Status infer_scatter_elements(InferContext& ctx) {
  KILN_RETURN_IF_ERROR(check_indices_dtype(ctx, 1));
  KILN_RETURN_IF_ERROR(parse_reduction(ctx.node()).status());
  const SymShape& data = ctx.input_shape(0);
  const SymShape& indices = ctx.input_shape(1);
  const SymShape& updates = ctx.input_shape(2);
  if (ctx.input_dtype(2) != ctx.input_dtype(0))
    return ctx.error("updates have dtype " + std::string(dtype_name(ctx.input_dtype(2))) + ", data has " +
                     std::string(dtype_name(ctx.input_dtype(0))));
  if (data.has_rank && indices.has_rank) {
    if (data.rank() != indices.rank())
      return ctx.error("data has rank " + std::to_string(data.rank()) + " but indices have rank " +
                       std::to_string(indices.rank()));
    const int64_t axis_attr = ctx.node().attr_int("axis", 0);
    const auto axis = normalize_axis(axis_attr, data.rank());
    if (!axis)
      return ctx.error("axis " + std::to_string(axis_attr) + " is out of range for rank " + std::to_string(data.rank()));
    KILN_RETURN_IF_ERROR(check_constant_axis_indices(ctx, data, *axis));
  }
  if (indices.has_rank && updates.has_rank) {
    bool ok = indices.rank() == updates.rank();
    for (size_t i = 0; ok && i < indices.dims.size(); ++i)
      ok = !(indices.dims[i].is_const() && updates.dims[i].is_const() &&
             indices.dims[i].value() != updates.dims[i].value());
    if (!ok) return ctx.error("updates " + updates.to_string() + " must have the shape of indices " + indices.to_string());
  }
  ctx.set_output(0, ctx.input_dtype(0), data);
  return ok_status();
}

Status scatter_elements_kernel(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const Tensor& updates = ctx.input(2);
  KILN_ASSIGN_OR_RETURN(Reduction red, parse_reduction(ctx.node()));
  const int64_t axis = *normalize_axis(ctx.node().attr_int("axis", 0), data.rank());
  const size_t rank = static_cast<size_t>(data.rank());
  for (size_t d = 0; d < rank; ++d)
    if (static_cast<int64_t>(d) != axis && indices.shape()[d] > data.shape()[d])
      return ctx.error("indices " + shape_to_string(indices.shape()) + " exceed data " +
                       shape_to_string(data.shape()) + " on axis " + std::to_string(d));
  KILN_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0));
  if (data.nbytes()) std::memcpy(out->raw_data(), data.raw_data(), data.nbytes());
  const std::vector<int64_t> strides = shape_strides(data.shape());
  const size_t elem = dtype_size(data.dtype());
  auto* dst = static_cast<unsigned char*>(out->raw_data());
  const auto* src = static_cast<const unsigned char*>(updates.raw_data());
  std::vector<int64_t> counter(rank, 0);
  int64_t base = 0;
  for (int64_t e = 0; e < indices.numel(); ++e) {
    KILN_ASSIGN_OR_RETURN(int64_t i, checked_index(ctx, indices.get_i64(e), data.dim(axis), axis));
    reduce_into(dst + static_cast<size_t>(base + i * strides[static_cast<size_t>(axis)]) * elem,
                src + static_cast<size_t>(e) * elem, 1, data.dtype(), red);
    for (size_t d = rank; d-- > 0;) {
      const int64_t step = static_cast<int64_t>(d) == axis ? 0 : strides[d];
      base += step;
      if (++counter[d] < indices.shape()[d]) break;
      base -= step * counter[d];
      counter[d] = 0;
    }
  }
  return ok_status();
}

}  // namespace

void register_gather_scatter_ops(OpRegistry& r) {
  add_op(r, {"Gather", "", 2, 2, 1, 1, infer_gather, gather_kernel}, MappingType::kOther);
  add_op(r, {"GatherElements", "", 2, 2, 1, 1, infer_gather_elements, gather_elements_kernel}, MappingType::kOther);
  add_op(r, {"GatherND", "", 2, 2, 1, 1, infer_gather_nd, gather_nd_kernel}, MappingType::kOther);
  add_op(r, {"ScatterND", "", 3, 3, 1, 1, infer_scatter_nd, scatter_nd_kernel}, MappingType::kOther);
  add_op(r, {"ScatterElements", "", 3, 3, 1, 1, infer_scatter_elements, scatter_elements_kernel}, MappingType::kOther);
}

}  // namespace kiln::ops::movement
