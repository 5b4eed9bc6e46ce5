// Numpy broadcasting, symbolic and concrete, shared by every op family that
// broadcasts (elementwise, Where, Expand, MatMul batch dims).
#pragma once

#include <cstdint>
#include <vector>

#include "engine/base/status.h"
#include "engine/base/tensor.h"
#include "engine/ir/dim.h"

namespace kiln::ops {

// The broadcast of two dims: equal dims, or one of them 1. Two different
// constants > 1 are an error; symbolic dims that may differ give max(a, b)
// (which is exact whenever broadcasting is legal and neither is 1).
StatusOr<ir::Dim> broadcast_dim(const ir::Dim& a, const ir::Dim& b);
// Right-aligned broadcast of shapes. Unranked in -> unranked out.
StatusOr<ir::SymShape> broadcast_shapes(const ir::SymShape& a, const ir::SymShape& b);
StatusOr<Shape> broadcast_shapes(const Shape& a, const Shape& b);

// For each output element (row-major over `out_shape`), the flat index into
// an input of shape `in_shape` broadcast to it. Computed incrementally so the
// per-element cost is O(1) amortized.
class BroadcastIndexer {
 public:
  BroadcastIndexer(const Shape& in_shape, const Shape& out_shape);
  // Flat input index of the current output element.
  int64_t index() const { return offset_; }
  // Moves to the next output element.
  void next();

 private:
  std::vector<int64_t> out_shape_;
  std::vector<int64_t> in_strides_;  // 0 on broadcast dims
  std::vector<int64_t> counter_;
  int64_t offset_ = 0;
};

}  // namespace kiln::ops
