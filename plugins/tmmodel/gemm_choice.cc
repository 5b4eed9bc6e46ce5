// The GEMM tile model (see gemm_choice.h).
#include "plugins/tmmodel/gemm_choice.h"

#include <algorithm>

namespace kiln::tmmodel {

namespace {

constexpr int kTileK = 16;  // BK of planner/gemm_kernels.cc

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

int tile_invocations(GemmTile t) { return t.bn / 4 * 16; }

int64_t tile_shared_bytes(GemmTile t) { return int64_t{kTileK} * (t.bm + t.bn) * 4; }

double predict_gemm_ns(const Profile& p, const GemmShape& s, GemmTile t) {
  const int g = tile_invocations(t);
  const int tm = t.bm == 128 ? 8 : t.bm / 16;
  const int64_t groups = std::max<int64_t>(s.batch, 1) * ceil_div(std::max<int64_t>(s.m, 1), t.bm) *
                         ceil_div(std::max<int64_t>(s.n, 1), t.bn);
  // A staging invocation walks its operand rows: the row pattern's L_t.
  static const std::vector<double> kRowHistogram = cross_block_histogram(pattern_walk(AccessPattern::kRow, 16, 64));
  const double staged = std::max(thread_latency(p.beta_buffer, kRowHistogram), 1e-3) * warp_factor(p, g, 1);
  const double resident = std::max(p.beta_buffer.empty() ? 0.0 : p.beta_buffer[0], 1e-3);
  const double per_k = double(t.bm + t.bn) / g * staged + (tm + 4) * resident;
  return static_cast<double>(waves(p, groups, g)) * static_cast<double>(std::max<int64_t>(s.k, 1)) * per_k *
         p.stream_scale_buffer;
}

GemmChoice choose_gemm_tile(const Profile& p, const GemmShape& shape, uint32_t max_invocations, uint64_t shared_bytes) {
  GemmChoice best;
  for (GemmTile t : kGemmTiles) {
    if (max_invocations != 0 && static_cast<uint32_t>(tile_invocations(t)) > max_invocations) continue;
    if (shared_bytes != 0 && static_cast<uint64_t>(tile_shared_bytes(t)) > shared_bytes) continue;
    const double ns = predict_gemm_ns(p, shape, t);
    if (!best.ok || ns < best.predicted_ns * (1 - 1e-9)) best = {t, ns, true};
  }
  return best;
}

}  // namespace kiln::tmmodel
