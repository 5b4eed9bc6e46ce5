// Plan-time packing of a constant integer GEMM operand for the dot-product
// path (gemm_int.h, shaders/gemm_int8_dot.comp): B' = B - zero point as
// int8, four k to an int32 word (byte j of word kw is k = 4 kw + j, zero
// past K), plus the sum over k of B' per column, which the kernel uses to
// take A's zero point out once per element.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include "engine/base/tensor.h"

namespace kiln::planner {

struct PackedInt8Operand {
  Tensor words;   // int32 [groups, ceil(K / 4), N]
  Tensor colsum;  // int32 [groups, N]
};

// Packs `groups` operands of K x N whose values value(g, k, n) (B minus
// its zero point) the caller computes; nullopt when any value lies outside
// int8's [-128, 127] (a uint8 weight above 127 with zero point 0, say),
// which the dot products cannot take.
std::optional<PackedInt8Operand> pack_int8_operand(int64_t groups, int64_t k, int64_t n,
                                                   const std::function<int64_t(int64_t, int64_t, int64_t)>& value);

}  // namespace kiln::planner
