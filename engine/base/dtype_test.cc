// fp16 conversions: the bulk (F16C) path rounds exactly like the scalar one.
#include "engine/base/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace kiln {
namespace {

TEST(HalfConversion, BulkMatchesScalarIncludingEdgeCases) {
  std::vector<float> values = {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 65520.0f, 1e6f, 6.1e-5f, 5.96e-8f, 2.98e-8f, 1e-9f,
                               std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                               1.0009765625f /* halfway between two halves */, 1.00048828125f};
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-70000.0f, 70000.0f);
  std::uniform_int_distribution<int> exp(-30, 16);
  for (int i = 0; i < 5000; ++i) values.push_back(dist(rng) * std::ldexp(1.0f, exp(rng)) / 65536.0f);
  values.push_back(std::numeric_limits<float>::quiet_NaN());
  std::vector<uint16_t> bulk(values.size());
  floats_to_halves(values.data(), bulk.data(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::isnan(values[i])) {
      EXPECT_TRUE(std::isnan(half_to_float(bulk[i])));
      continue;
    }
    EXPECT_EQ(bulk[i], float_to_half(values[i])) << values[i];
  }
  std::vector<float> back(values.size());
  halves_to_floats(bulk.data(), back.data(), bulk.size());
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::isnan(values[i])) continue;
    EXPECT_EQ(back[i], half_to_float(bulk[i]));
  }
}

}  // namespace
}  // namespace kiln
