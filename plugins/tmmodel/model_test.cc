// The model's arithmetic (model.h): histograms, access patterns, the warp
// and work-group levels, Spearman, and the profile's JSON round trip.
#include "plugins/tmmodel/model.h"

#include <gtest/gtest.h>

#include <cmath>

namespace kiln::tmmodel {
namespace {

TEST(TmmodelModel, CrossBlockHistogramCountsCrossingsPerAccess) {
  // (0,0) -> (3,0) stays in every block; -> (4,0) leaves the 4-wide line;
  // -> (4,4) changes row (leaves the 1-high line); -> (8,8) leaves the line
  // and the 8x8 block both ways.
  std::vector<double> h = cross_block_histogram({{0, 0}, {3, 0}, {4, 0}, {4, 4}, {8, 8}});
  ASSERT_EQ(h.size(), static_cast<size_t>(kFeatureCount));
  EXPECT_EQ(h[0], 1.0);
  EXPECT_DOUBLE_EQ(h[1], 2.0 / 4);  // 4x1 along x
  EXPECT_DOUBLE_EQ(h[2], 2.0 / 4);  // 4x1 along y: every row change
  EXPECT_DOUBLE_EQ(h[3], 1.0 / 4);  // 8x8 along x
  EXPECT_DOUBLE_EQ(h[4], 1.0 / 4);  // 8x8 along y
  EXPECT_EQ(h[5], 0.0);             // 16x16 never crossed
  EXPECT_EQ(h[8], 0.0);
  // Negative coordinates floor, so -1 and 0 are different blocks.
  EXPECT_EQ(cross_block_histogram({{-1, 0}, {0, 0}})[1], 1.0);
  EXPECT_EQ(cross_block_histogram({{5, 5}}), (std::vector<double>{1, 0, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(TmmodelModel, PatternWalksFollowFigure3) {
  std::vector<Texel> row = pattern_walk(AccessPattern::kRow, 4, 6);
  EXPECT_EQ(row[3].x, 3);
  EXPECT_EQ(row[4].x, 0);
  EXPECT_EQ(row[4].y, 1);
  // Block-2: down two rows, then the next column; a band of 2 x width.
  std::vector<Texel> b2 = pattern_walk(AccessPattern::kBlock2, 4, 10);
  EXPECT_EQ(b2[1].x, 0);
  EXPECT_EQ(b2[1].y, 1);
  EXPECT_EQ(b2[2].x, 1);
  EXPECT_EQ(b2[2].y, 0);
  EXPECT_EQ(b2[8].x, 0);
  EXPECT_EQ(b2[8].y, 2);
  EXPECT_EQ(reuse_distance(AccessPattern::kBlock4), 4);
  // Blocked walks cross 4x1 lines less often along x than the row walk.
  const double row_x = cross_block_histogram(pattern_walk(AccessPattern::kRow, 16, 128))[1];
  const double b4_x = cross_block_histogram(pattern_walk(AccessPattern::kBlock4, 16, 128))[1];
  EXPECT_LT(b4_x, row_x);
}

TEST(TmmodelModel, WarpAndGroupLevels) {
  Profile p;
  p.cache_lines = 64;
  p.thrash_d = 2.0;
  EXPECT_EQ(warp_factor(p, 32, 2), 1.0);   // 64 lines: fits
  EXPECT_EQ(warp_factor(p, 64, 2), 2.0);   // 128: one cache over
  EXPECT_EQ(warp_factor(p, 256, 4), 8.0);  // |W| = 64: 256 lines, 3 over
  p.warp_width = 32;
  EXPECT_EQ(waves(p, 10, 64), 20);  // no measurements: one warp at a time
  p.warps_in_flight = {{64, 8.0}, {256, 4.0}};
  EXPECT_EQ(waves(p, 10, 64), 3);   // 20 warps, 8 at a time
  EXPECT_EQ(waves(p, 8, 64), 2);
  EXPECT_EQ(waves(p, 1, 256), 2);   // one group's 8 warps, 4 at a time: serial within the group
  EXPECT_EQ(waves(p, 1, 16), 1);    // a partial warp is one warp
  EXPECT_DOUBLE_EQ(warps_in_flight(p, 128), 4.0);  // the next measured size up
  EXPECT_DOUBLE_EQ(warps_in_flight(p, 512), 4.0);  // above every measurement: the largest
  // Eq. 7 is the walk's L_t times the levels above it: with L_t given (what
  // the fit caches per run) the prediction is the same, and linear in it.
  p.beta_buffer = {3, 1, 2, 0.5, 0.5, 0.25, 0.25, 0.1, 0.1};
  p.stream_scale_buffer = 1.5;
  const StreamConfig c{Storage::kBuffer, AccessPattern::kBlock4, 64, 10, 128};
  const double lt = stream_walk_latency(p, c);
  EXPECT_GT(lt, 3.0);  // the intercept plus some crossings
  EXPECT_DOUBLE_EQ(predict_stream_ns(p, c, lt), predict_stream_ns(p, c));
  EXPECT_DOUBLE_EQ(predict_stream_ns(p, c, 2 * lt), 2 * predict_stream_ns(p, c));
  EXPECT_DOUBLE_EQ(predict_stream_ns(p, c, lt), lt * 1.5 * warp_factor(p, 64, 4) * 128 * 3);
}

TEST(TmmodelModel, Spearman) {
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
  EXPECT_EQ(spearman({1, 2}, {1, 2}), 0.0);
  EXPECT_EQ(spearman({1, 1, 1}, {1, 2, 3}), 0.0);
  EXPECT_NEAR(spearman({1, 2, 3, 4, 5}, {1, 3, 2, 4, 5}), 0.9, 1e-12);
}

Profile sample_profile() {
  Profile p;
  p.device_name = "Test \"GPU\"";
  p.driver_version = "1.2";
  p.kiln_version = "0.2.0";
  p.subgroup_size = 32;
  p.beta_image = {2, 1, 1, 0.5, 0.5, 0.25, 0.25, 0.1, 0.1};
  p.beta_buffer = {1, 2, 2, 1, 1, 0.5, 0.5, 0.2, 0.2};
  p.thrash_d = 1.5;
  p.cache_lines = 128;
  p.warp_width = 16;
  p.warps_in_flight = {{64, 8}, {256, 2}};
  p.spearman_image = 0.8;
  return p;
}

TEST(TmmodelModel, ProfileJsonRoundTrip) {
  const Profile p = sample_profile();
  std::string error;
  auto back = parse_profile("{\"format\": \"x\", \"model\": " + profile_model_json(p, 0) + "}", &error);
  ASSERT_TRUE(back.has_value()) << error;
  EXPECT_EQ(back->device_name, p.device_name);
  EXPECT_EQ(back->beta_buffer, p.beta_buffer);
  EXPECT_EQ(back->cache_lines, 128);
  EXPECT_EQ(back->warps_in_flight, p.warps_in_flight);
  EXPECT_EQ(back->warp_width, 16);
  EXPECT_DOUBLE_EQ(back->spearman_image, 0.8);
  StreamConfig c{Storage::kImage, AccessPattern::kBlock4, 256, 5, 128};
  EXPECT_DOUBLE_EQ(predict_stream_ns(*back, c), predict_stream_ns(p, c));
}

TEST(TmmodelModel, BadProfilesSayWhy) {
  std::string error;
  EXPECT_FALSE(parse_profile("{", &error).has_value());
  EXPECT_NE(error.find("offset"), std::string::npos) << error;
  EXPECT_FALSE(parse_profile("{\"model\": 3}", &error).has_value());
  EXPECT_NE(error.find("model"), std::string::npos);
  std::string text = "{\"model\": " + profile_model_json(sample_profile(), 0) + "}";
  std::string short_beta = text;
  short_beta.replace(short_beta.find("[2, "), 4, "[");
  EXPECT_FALSE(parse_profile(short_beta, &error).has_value());
  EXPECT_NE(error.find("beta_image_ns"), std::string::npos) << error;
  std::string bad_d = text;
  bad_d.replace(bad_d.find("\"thrash_d\": 1.5"), 15, "\"thrash_d\": -1");
  EXPECT_FALSE(parse_profile(bad_d, &error).has_value());
  EXPECT_NE(error.find("thrash_d"), std::string::npos) << error;
}

TEST(TmmodelModel, CacheFileNames) {
  EXPECT_EQ(sanitized("llvmpipe (LLVM 15.0.6, 256 bits)"), "llvmpipe_LLVM_15.0.6_256_bits");
  EXPECT_EQ(sanitized("///"), "device");
  EXPECT_EQ(profile_file_name("NVIDIA H100", "535.1", "0.2.0"), "NVIDIA_H100-drv535.1-kiln0.2.0.json");
}

}  // namespace
}  // namespace kiln::tmmodel
