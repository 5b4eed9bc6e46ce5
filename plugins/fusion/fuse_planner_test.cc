// FusePlanner's cost model (fuse_planner.h): exact estimates on a case small
// enough to count by hand, MobileNetV2's DW -> PW pairs, a pair where fusion
// loses, and the shared-memory and compute-unit constraints on the tile.
#include "plugins/fusion/fuse_planner.h"

#include <gtest/gtest.h>

namespace kiln::fusion {
namespace {

// A DW 3x3 (padding 1) then PW pair on one image, fp32.
DwPwShape pair(int64_t hw, int64_t channels, int64_t stride, int64_t out_channels, int64_t kernel = 3) {
  const int64_t out = (hw + 2 * (kernel / 2) - kernel) / stride + 1;
  return {1, channels, hw, hw, out, out, kernel, kernel, stride, stride, out_channels, 4};
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t workgroups(const DwPwShape& s, const DwPwDecision& d) {
  return s.batch * ceil_div(s.out_h * s.out_w, d.tile_m) * ceil_div(s.out_channels, d.tile_n);
}

// Counted by hand (elements, x 4 bytes). 8x8x16 -> 16 channels, 3x3 s1:
//   fused, tile 64x16 (one workgroup, one strip, no halo): depthwise input
//   16*64 = 1024 read once, output 64*16 = 1024, pointwise weights 16*16 =
//   256, depthwise weights 16*9 = 144: 2448 elements = 9792 B;
//   layer by layer, depthwise 8x8 tiles: input 1024 + output 1024 + weights
//   144 = 2192, pointwise 64x16: its input 1024 + output 1024 + weights 256 =
//   2304: 4496 elements = 17984 B.
TEST(FusePlanner, EstimatesMatchTheEquationsCountedByHand) {
  const DwPwDecision d = plan_dwpw(pair(8, 16, 1, 16), {});
  EXPECT_TRUE(d.fuse) << d.why;
  EXPECT_EQ(d.fused_bytes, 9792) << d.why;
  EXPECT_EQ(d.unfused_bytes, 17984) << d.why;
  // 64x16 and 128x64 move the same bytes; the tile that fits the problem wins.
  EXPECT_EQ(d.tile_m, 64);
  EXPECT_EQ(d.tile_n, 16);
  EXPECT_NE(d.why.find("fused 9792 B"), std::string::npos) << d.why;
  EXPECT_NE(d.why.find("layer by layer 17984 B"), std::string::npos) << d.why;
}

// The halo (Eq. 1) on strips of one output row: 16-row tiles over a 16-wide
// plane are single rows, so each of the 15 inner boundaries re-reads
// kernel - stride = 2 input rows of 16: 480 elements per channel per pass.
// Reading every input row three times costs more than the depthwise
// output's round trip, so this pair runs layer by layer.
TEST(FusePlanner, TheHaloOfRowStripsIsCountedOncePerBoundary) {
  DeviceLimits one_row;
  one_row.shared_memory_bytes = (16 + 16) * 16 * 4 + 16 * 9 * 4;  // exactly the 16x16 tile
  const DwPwShape s = pair(16, 16, 1, 16);
  const DwPwDecision d = plan_dwpw(s, one_row);
  const int64_t input = 16 * (256 + 15 * 2 * 16), output = 256 * 16;
  const int64_t weights = 16 * (16 * 16) + 16 * (16 * 9);  // per row tile: pointwise, depthwise
  EXPECT_EQ(d.fused_bytes, (input + output + weights) * 4) << d.why;
  EXPECT_NE(d.why.find("tile 16x16"), std::string::npos) << d.why;
  // Layer by layer: depthwise 16x16 tiles (input + output + weights), then
  // the GEMM (its input, output, weights once per 16-row tile).
  EXPECT_EQ(d.unfused_bytes, ((256 * 16 * 2 + 144) + (256 * 16 * 2 + 16 * 256)) * 4) << d.why;
  EXPECT_FALSE(d.fuse) << d.why;
}

struct MobileNetPair {
  const char* name;
  DwPwShape shape;
  bool fuse;
};

// MobileNetV2's depthwise convolutions and the projections after them.
// Stride-1 pairs fuse: the intermediate round trip costs more than the
// halo. Stride-2 pairs whose projection needs several column passes do not:
// each pass re-reads an input four times the depthwise output's size.
TEST(FusePlanner, MobileNetV2Pairs) {
  const MobileNetPair pairs[] = {
      {"112x112x32 -> 16", pair(112, 32, 1, 16), true},
      {"112x112x96 s2 -> 24", pair(112, 96, 2, 24), true},
      {"56x56x144 -> 24", pair(56, 144, 1, 24), true},
      {"56x56x144 s2 -> 32", pair(56, 144, 2, 32), true},
      {"28x28x192 -> 32", pair(28, 192, 1, 32), true},
      {"28x28x192 s2 -> 64", pair(28, 192, 2, 64), true},
      {"14x14x384 -> 64", pair(14, 384, 1, 64), true},
      {"14x14x384 -> 96", pair(14, 384, 1, 96), true},
      {"14x14x576 -> 96", pair(14, 576, 1, 96), true},
      {"14x14x576 s2 -> 160", pair(14, 576, 2, 160), false},
      {"7x7x960 -> 160", pair(7, 960, 1, 160), true},
      {"7x7x960 -> 320", pair(7, 960, 1, 320), true},
  };
  for (const MobileNetPair& p : pairs) {
    const DwPwDecision d = plan_dwpw(p.shape, {});
    EXPECT_EQ(d.fuse, p.fuse) << p.name << ": " << d.why;
    EXPECT_GT(d.fused_bytes, 0) << p.name;
    EXPECT_GT(d.unfused_bytes, 0) << p.name;
    EXPECT_EQ(d.fuse, d.fused_bytes < d.unfused_bytes) << p.name;
    if (d.fuse) {
      EXPECT_GT(d.tile_m, 0) << p.name;
      EXPECT_GT(d.tile_n, 0) << p.name;
    } else {
      EXPECT_EQ(d.tile_m, 0) << p.name;
      EXPECT_EQ(d.tile_n, 0) << p.name;
    }
    EXPECT_EQ(d.why.rfind(d.fuse ? "fused:" : "not fused:", 0), 0u) << d.why;
  }
  // The first pair saves what the depthwise output's round trip costs
  // beyond the halo the 128-pixel strips (a row and a bit of 112) re-read.
  const DwPwDecision first = plan_dwpw(pair(112, 32, 1, 16), {});
  EXPECT_EQ(first.tile_m, 128) << first.why;
  EXPECT_NE(first.why.find("saving"), std::string::npos) << first.why;
}

// Thousands of output channels make the fused kernel read the 7x7
// depthwise's input, halo and all, once per 64-column pass (64 times), where
// layer by layer reads the smaller depthwise output that often.
TEST(FusePlanner, FusionLosesWithManyOutputChannelsAndABigHalo) {
  const DwPwDecision d = plan_dwpw(pair(14, 256, 1, 4096, 7), {});
  EXPECT_FALSE(d.fuse) << d.why;
  EXPECT_GT(d.fused_bytes, d.unfused_bytes) << d.why;
  EXPECT_EQ(d.tile_m, 0);
  EXPECT_EQ(d.tile_n, 0);
  EXPECT_EQ(d.why.rfind("not fused:", 0), 0u) << d.why;
  EXPECT_NE(d.why.find("costing"), std::string::npos) << d.why;
}

TEST(FusePlanner, SharedMemoryLimitsTheTile) {
  // 56x56x144, stride 2, to 32 channels: 784 output pixels, 28 a row.
  const DwPwShape s = pair(56, 144, 2, 32);
  const DwPwDecision roomy = plan_dwpw(s, {});
  ASSERT_TRUE(roomy.fuse) << roomy.why;
  EXPECT_EQ(roomy.tile_m, 128) << roomy.why;
  // fp32: (tile_m + tile_n) * 16 * 4 B of GEMM stages + 16 * 9 * 4 B of
  // depthwise weights. 8 KiB leaves tile_m + tile_n <= 119: 64x32 still
  // fuses, re-reading more halo than 128-pixel strips.
  DeviceLimits small;
  small.shared_memory_bytes = 8192;
  const DwPwDecision d = plan_dwpw(s, small);
  ASSERT_TRUE(d.fuse) << d.why;
  EXPECT_EQ(d.tile_m, 64) << d.why;
  EXPECT_EQ(d.tile_n, 32) << d.why;
  EXPECT_LE((d.tile_m + d.tile_n) * 16 * 4 + 16 * 9 * 4, 8192) << d.why;
  EXPECT_GT(d.fused_bytes, roomy.fused_bytes);
  EXPECT_NE(d.why.find("of 8192 B shared memory"), std::string::npos) << d.why;

  // Smaller still: only tiles whose halo costs more than the round trip.
  DeviceLimits smaller;
  smaller.shared_memory_bytes = 4096;
  const DwPwDecision lost = plan_dwpw(pair(112, 32, 1, 16), smaller);
  EXPECT_FALSE(lost.fuse) << lost.why;
  EXPECT_TRUE(plan_dwpw(pair(112, 32, 1, 16), {}).fuse);

  // Nothing fits: never fused, and the reason names the shared memory.
  DeviceLimits tiny;
  tiny.shared_memory_bytes = 1024;
  const DwPwDecision none = plan_dwpw(s, tiny);
  EXPECT_FALSE(none.fuse);
  EXPECT_EQ(none.fused_bytes, 0);
  EXPECT_GT(none.unfused_bytes, 0);
  EXPECT_NE(none.why.find("shared memory"), std::string::npos) << none.why;
}

TEST(FusePlanner, ComputeUnitsAskForEnoughWorkgroups) {
  const DwPwShape s = pair(56, 144, 2, 32);  // 784 pixels, 32 columns
  const DwPwDecision unknown = plan_dwpw(s, {});
  ASSERT_TRUE(unknown.fuse) << unknown.why;
  EXPECT_NE(unknown.why.find("compute units unknown"), std::string::npos) << unknown.why;
  EXPECT_LT(workgroups(s, unknown), 16) << unknown.why;

  DeviceLimits some;
  some.compute_units = 16;
  const DwPwDecision d = plan_dwpw(s, some);
  ASSERT_TRUE(d.fuse) << d.why;
  EXPECT_GE(workgroups(s, d), 16) << d.why;
  EXPECT_NE(d.why.find(">= 16 compute units"), std::string::npos) << d.why;

  // Filling 256 compute units takes 16x16 tiles on 56x56 -> 24: single-row
  // strips whose halo outweighs the fusion.
  DeviceLimits big;
  big.compute_units = 256;
  const DwPwDecision lost = plan_dwpw(pair(56, 144, 1, 24), big);
  EXPECT_FALSE(lost.fuse) << lost.why;
  EXPECT_NE(lost.why.find("tile 16x16, 392 workgroups, >= 256 compute units"), std::string::npos) << lost.why;
  EXPECT_TRUE(plan_dwpw(pair(56, 144, 1, 24), {}).fuse);

  // More compute units than any tiling has workgroups: the most parallel one.
  DeviceLimits huge;
  huge.compute_units = 100000;
  const DwPwDecision most = plan_dwpw(s, huge);
  EXPECT_NE(most.why.find("tile 16x16"), std::string::npos) << most.why;
  EXPECT_NE(most.why.find("fewer than the 100000 compute units"), std::string::npos) << most.why;
}

TEST(FusePlanner, AMalformedShapeNeverFuses) {
  DwPwShape s = pair(8, 16, 1, 16);
  s.out_channels = 0;
  const DwPwDecision d = plan_dwpw(s, {});
  EXPECT_FALSE(d.fuse);
  EXPECT_NE(d.why.find("out_channels is 0"), std::string::npos) << d.why;
  s = pair(8, 16, 1, 16);
  s.stride_h = -1;
  EXPECT_FALSE(plan_dwpw(s, {}).fuse);
  // Products that would overflow are refused, not estimated.
  s = pair(8, 16, 1, 16);
  s.batch = int64_t{1} << 40;
  const DwPwDecision huge = plan_dwpw(s, {});
  EXPECT_FALSE(huge.fuse);
  EXPECT_NE(huge.why.find("too large"), std::string::npos) << huge.why;
  s = pair(8, 16, 1, 16);
  s.batch = s.channels = int64_t{1} << 30;
  EXPECT_NE(plan_dwpw(s, {}).why.find("too large"), std::string::npos);
}

// Batches multiply every term: two images cost twice one image.
TEST(FusePlanner, BatchScalesTheEstimates) {
  DwPwShape one = pair(28, 192, 1, 32), two = one;
  two.batch = 2;
  const DwPwDecision a = plan_dwpw(one, {}), b = plan_dwpw(two, {});
  EXPECT_EQ(b.fused_bytes, 2 * a.fused_bytes) << a.why << "\n" << b.why;
  EXPECT_EQ(b.unfused_bytes, 2 * a.unfused_bytes) << a.why << "\n" << b.why;
}

}  // namespace
}  // namespace kiln::fusion
