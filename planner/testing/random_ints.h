// Random integer tensors for the lowering tests (planner/*_test.cc), beside
// op_check.h's random_tensor for floats.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "engine/base/tensor.h"

namespace kiln::planner::testing {

// A tensor of dtype T holding random integers in [lo, hi], fixed by `seed`.
template <typename T>
Tensor random_ints(const Shape& shape, uint64_t seed, int64_t lo, int64_t hi) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> dist(lo, hi);
  std::vector<T> v(static_cast<size_t>(shape_numel(shape)));
  for (T& x : v) x = static_cast<T>(dist(rng));
  return Tensor::from_vector<T>(shape, v);
}

}  // namespace kiln::planner::testing
