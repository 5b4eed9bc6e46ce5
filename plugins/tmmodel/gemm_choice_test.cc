// The GEMM tile model (gemm_choice.h) on hand-made profiles: the trade-off
// between per-invocation work and waves of work groups, and the limits.
#include "plugins/tmmodel/gemm_choice.h"

#include <gtest/gtest.h>

namespace kiln::tmmodel {
namespace {

// Warps of 32; `warps` of them in flight for every group size.
Profile profile_with_warps_in_flight(double warps) {
  Profile p;
  p.beta_image = p.beta_buffer = {10, 5, 5, 2, 2, 1, 1, 1, 1};
  p.warp_width = 32;
  p.warps_in_flight = {{64, warps}};
  return p;
}

TEST(TmmodelGemm, TileShapes) {
  EXPECT_EQ(tile_invocations({16, 16}), 64);
  EXPECT_EQ(tile_invocations({64, 64}), 256);
  EXPECT_EQ(tile_shared_bytes({128, 64}), 16 * 192 * 4);
}

TEST(TmmodelGemm, AWideDeviceKeepsSmallGemmsInOneWaveOfSmallTiles) {
  // 2000 warps in flight: every tile of a 128 x 128 GEMM runs in one
  // wave, so the least work per invocation wins: one row of four outputs
  // (BM = 16), with the staging spread over the most invocations (BN = 64).
  const Profile p = profile_with_warps_in_flight(2000);
  GemmChoice c = choose_gemm_tile(p, {1, 128, 128, 256}, 1024, 49152);
  ASSERT_TRUE(c.ok);
  EXPECT_EQ(c.tile.bm, 16);
  EXPECT_EQ(c.tile.bn, 64);
}

TEST(TmmodelGemm, ANarrowDeviceTakesTheLargestTiles) {
  // Two warps at a time: waves dominate, and 128 x 64 needs the fewest
  // invocation-steps per output.
  const Profile p = profile_with_warps_in_flight(2);
  GemmChoice c = choose_gemm_tile(p, {1, 1024, 1024, 256}, 1024, 49152);
  ASSERT_TRUE(c.ok);
  EXPECT_EQ(c.tile.bm, 128);
  EXPECT_EQ(c.tile.bn, 64);
  // Eq. 6's waves: twice the GEMM, twice the time with the same tile.
  EXPECT_DOUBLE_EQ(predict_gemm_ns(p, {2, 1024, 1024, 256}, c.tile), 2 * c.predicted_ns);
}

TEST(TmmodelGemm, DeviceLimitsNarrowTheMenu) {
  const Profile p = profile_with_warps_in_flight(2);
  GemmChoice c = choose_gemm_tile(p, {1, 1024, 1024, 256}, 64, 0);  // 64 invocations: BN = 16 only
  ASSERT_TRUE(c.ok);
  EXPECT_EQ(c.tile.bn, 16);
  c = choose_gemm_tile(p, {1, 1024, 1024, 256}, 1024, tile_shared_bytes({32, 32}));
  ASSERT_TRUE(c.ok);
  EXPECT_LE(c.tile.bm + c.tile.bn, 64);
  EXPECT_FALSE(choose_gemm_tile(p, {1, 64, 64, 64}, 32, 0).ok);  // no tile has <= 32 invocations
}

}  // namespace
}  // namespace kiln::tmmodel
