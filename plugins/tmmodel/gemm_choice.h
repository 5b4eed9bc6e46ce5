// The analytic choice of a GEMM kernel's tile (TMModel §4-5 applied to
// Kiln's tiled GEMM, planner/gemm_kernels.h): each work group computes a
// BM x BN tile of C with (BN / 4) x 16 invocations, each holding a TM x 4
// block (TM = BM / 16, 8 for 128 x 64); K advances 16 at a time, the
// group staging 16 (BM + BN) operand values from buffers into shared
// memory and every invocation reading TM + 4 of them per k.
//
// The model (Eq. 5-7, with the per-invocation access count made explicit):
//   WGs   = batch ceil(M / BM) ceil(N / BN)                    (Eq. 5)
//   L_g   = ceil(WGs / K_G), G = the tile's invocations         (Eq. 6)
//   per k: 16 (BM + BN) / G staged loads at L_w of a row walk over a
//          buffer (Eq. 1-2), and TM + 4 reads that stay in their block
//          (beta's intercept: the latency of an access that crosses none)
//   L     = L_g x K x per-k cost x the device's stream scale    (Eq. 7)
// and the tile of least L among those the device can run.
#pragma once

#include <array>
#include <cstdint>

#include "plugins/tmmodel/model.h"

namespace kiln::tmmodel {

struct GemmShape {
  int64_t batch = 1, m = 0, n = 0, k = 0;
};

struct GemmTile {
  int bm = 0, bn = 0;
};

// The planner's tile menu (plan_hints.h: 16/32/64 x 16/32/64, and 128 x 64).
inline constexpr std::array<GemmTile, 10> kGemmTiles = {
    {{16, 16}, {16, 32}, {16, 64}, {32, 16}, {32, 32}, {32, 64}, {64, 16}, {64, 32}, {64, 64}, {128, 64}}};

int tile_invocations(GemmTile t);  // (BN / 4) x 16
int64_t tile_shared_bytes(GemmTile t);  // the two staged fp32 tiles: 16 (BM + BN) x 4

// Predicted nanoseconds of the tiled GEMM `shape` with tile `t`.
double predict_gemm_ns(const Profile& p, const GemmShape& shape, GemmTile t);

struct GemmChoice {
  GemmTile tile;
  double predicted_ns = 0;
  bool ok = false;  // false: no tile fits the limits
};
// The tile of least predicted time among those with at most
// `max_invocations` invocations and `shared_bytes` of shared memory (0: no
// limit); ties go to the earlier tile of kGemmTiles.
GemmChoice choose_gemm_tile(const Profile& p, const GemmShape& shape, uint32_t max_invocations, uint64_t shared_bytes);

}  // namespace kiln::tmmodel
