// ONNX Slice's clamping of one axis on concrete values, shared by the
// reference kernel and by device lowerings that compute their slice
// parameters on the host per run (planner/lower_data_movement.cc).
#pragma once

#include <algorithm>
#include <cstdint>

namespace kiln::ops {

struct SliceRange {
  int64_t start = 0;
  int64_t len = 0;
  int64_t step = 1;  // |step| capped at dim + 1, which takes the same elements
};

inline SliceRange slice_concrete(int64_t start, int64_t end, int64_t step, int64_t dim) {
  step = std::clamp<int64_t>(step, -(dim + 1), dim + 1);
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  int64_t len;
  if (step > 0) {
    start = std::min(std::max<int64_t>(start, 0), dim);
    end = std::min(std::max<int64_t>(end, 0), dim);
    len = end > start ? (end - start - 1) / step + 1 : 0;
  } else {
    start = std::min(std::max<int64_t>(start, 0), dim - 1);
    end = std::min(std::max<int64_t>(end, -1), dim - 1);
    len = start > end ? (start - end - 1) / -step + 1 : 0;
  }
  return {start, len, step};
}

}  // namespace kiln::ops
