// Packing of the dot-product path's constant operand; see gemm_int8_pack.h.
#include "planner/gemm_int8_pack.h"

#include <vector>

namespace kiln::planner {

std::optional<PackedInt8Operand> pack_int8_operand(int64_t groups, int64_t k, int64_t n,
                                                   const std::function<int64_t(int64_t, int64_t, int64_t)>& value) {
  const int64_t kwords = (k + 3) / 4;
  std::vector<int32_t> words(static_cast<size_t>(groups * kwords * n), 0);
  std::vector<int32_t> colsum(static_cast<size_t>(groups * n), 0);
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t kk = 0; kk < k; ++kk)
      for (int64_t nn = 0; nn < n; ++nn) {
        const int64_t v = value(g, kk, nn);
        if (v < -128 || v > 127) return std::nullopt;
        // The byte's bits through uint32 (shifting a negative int is not portable).
        const uint32_t byte = static_cast<uint32_t>(v) & 0xffu;
        int32_t& w = words[static_cast<size_t>((g * kwords + kk / 4) * n + nn)];
        w = static_cast<int32_t>(static_cast<uint32_t>(w) | (byte << (8 * (kk % 4))));
        colsum[static_cast<size_t>(g * n + nn)] += static_cast<int32_t>(v);
      }
  return PackedInt8Operand{Tensor::from_vector<int32_t>({groups, kwords, n}, words),
                           Tensor::from_vector<int32_t>({groups, n}, colsum)};
}

}  // namespace kiln::planner
