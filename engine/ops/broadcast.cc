// Numpy broadcasting; see broadcast.h.
#include "engine/ops/broadcast.h"

namespace kiln::ops {

StatusOr<ir::Dim> broadcast_dim(const ir::Dim& a, const ir::Dim& b) {
  if (a.is_const() && a.value() == 1) return b;
  if (b.is_const() && b.value() == 1) return a;
  if (a.same_as(b)) return a;
  if (a.is_const() && b.is_const())
    return invalid_argument("cannot broadcast dims " + a.to_string() + " and " + b.to_string());
  if (a.is_unknown() || b.is_unknown()) return ir::Dim();
  // A constant other than 1 decides: the symbolic dim must be 1 or equal to it.
  if (a.is_const()) return a;
  if (b.is_const()) return b;
  return ir::Dim::max(a, b);
}

StatusOr<ir::SymShape> broadcast_shapes(const ir::SymShape& a, const ir::SymShape& b) {
  if (!a.has_rank || !b.has_rank) return ir::SymShape::unranked();
  const size_t rank = std::max(a.dims.size(), b.dims.size());
  std::vector<ir::Dim> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const size_t ai = i + a.dims.size(), bi = i + b.dims.size();
    const ir::Dim da = ai >= rank ? a.dims[ai - rank] : ir::Dim(1);
    const ir::Dim db = bi >= rank ? b.dims[bi - rank] : ir::Dim(1);
    auto d = broadcast_dim(da, db);
    if (!d.ok())
      return invalid_argument("cannot broadcast shapes " + a.to_string() + " and " + b.to_string());
    out[i] = *d;
  }
  return ir::SymShape(std::move(out));
}

StatusOr<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const size_t ai = i + a.size(), bi = i + b.size();
    const int64_t da = ai >= rank ? a[ai - rank] : 1;
    const int64_t db = bi >= rank ? b[bi - rank] : 1;
    if (da != db && da != 1 && db != 1)
      return invalid_argument("cannot broadcast shapes " + shape_to_string(a) + " and " + shape_to_string(b));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

BroadcastIndexer::BroadcastIndexer(const Shape& in_shape, const Shape& out_shape)
    : out_shape_(out_shape), in_strides_(out_shape.size(), 0), counter_(out_shape.size(), 0) {
  const size_t rank = out_shape.size();
  const size_t offset = rank - in_shape.size();
  int64_t stride = 1;
  for (size_t i = in_shape.size(); i-- > 0;) {
    in_strides_[i + offset] = in_shape[i] == 1 ? 0 : stride;
    stride *= in_shape[i];
  }
}

void BroadcastIndexer::next() {
  for (size_t i = out_shape_.size(); i-- > 0;) {
    offset_ += in_strides_[i];
    if (++counter_[i] < out_shape_[i]) return;
    offset_ -= in_strides_[i] * counter_[i];
    counter_[i] = 0;
  }
}

}  // namespace kiln::ops
