// Checked size arithmetic, the limits and their environment overrides,
// Tensor::allocate against both, and StatusOr::value() on an error.
#include "engine/base/limits.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "engine/base/checked_math.h"
#include "engine/base/scoped_env.h"
#include "engine/base/status.h"
#include "engine/base/tensor.h"

namespace kiln {
namespace {

using testing::ScopedEnv;

TEST(CheckedMath, DetectsOverflowAtTheEdges) {
  EXPECT_EQ(checked_add(INT64_MAX - 1, 1), INT64_MAX);
  EXPECT_EQ(checked_add(INT64_MAX, 1), std::nullopt);
  EXPECT_EQ(checked_sub(INT64_MIN + 1, 1), INT64_MIN);
  EXPECT_EQ(checked_sub(INT64_MIN, 1), std::nullopt);
  EXPECT_EQ(checked_mul(int64_t{1} << 31, int64_t{1} << 31), int64_t{1} << 62);
  EXPECT_EQ(checked_mul(int64_t{1} << 32, int64_t{1} << 31), std::nullopt);
  EXPECT_EQ(checked_mul(-1, INT64_MIN), std::nullopt);
}

TEST(CheckedMath, ProductsAndByteSizes) {
  const std::vector<int64_t> small = {2, 3, 4};
  EXPECT_EQ(checked_product(small), 24);
  EXPECT_EQ(checked_product(std::vector<int64_t>{}), 1);
  EXPECT_EQ(checked_byte_size(small, 4), 96);
  // 2^40 * 3 elements fit; times 4^20 does not.
  const std::vector<int64_t> huge = {int64_t{1} << 40, 3, int64_t{1} << 40};
  EXPECT_EQ(checked_product(huge), std::nullopt);
  const std::vector<int64_t> fits_elements = {int64_t{1} << 61, 2};
  EXPECT_EQ(checked_product(fits_elements), int64_t{1} << 62);
  EXPECT_EQ(checked_byte_size(fits_elements, 4), std::nullopt);
}

TEST(Limits, DefaultsAndEnvironmentOverrides) {
  {
    ScopedEnv unset_tensor(std::string(kMaxTensorBytesEnv), "");
    ScopedEnv unset_loop(std::string(kMaxLoopIterationsEnv), "");
    auto bytes = max_tensor_bytes();
    ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
    EXPECT_GT(*bytes, int64_t{1} << 20);  // the host's memory
    EXPECT_EQ(max_loop_iterations().value(), kDefaultMaxLoopIterations);
  }
  ScopedEnv loop(std::string(kMaxLoopIterationsEnv), "12");
  EXPECT_EQ(max_loop_iterations().value(), 12);
  ScopedEnv depth(std::string(kMaxSubgraphDepthEnv), "3");
  EXPECT_EQ(max_subgraph_depth().value(), 3);
  for (const char* bad : {"0", "-5", "12abc", "lots", "99999999999999999999999999"}) {
    ScopedEnv tensor(std::string(kMaxTensorBytesEnv), bad);
    auto r = max_tensor_bytes();
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("KILN_MAX_TENSOR_BYTES='" + std::string(bad) + "'"), std::string::npos)
        << r.status().message();
  }
}

TEST(Limits, FormatBytes) {
  EXPECT_EQ(format_bytes(512), "512 bytes");
  EXPECT_EQ(format_bytes(int64_t{3} << 30), "3.0 GiB (3221225472 bytes)");
}

TEST(Limits, TensorAllocateRefusesOverflowAndTheCap) {
  // Element count times dtype size overflows int64: refused, not wrapped.
  auto overflow = Tensor::allocate(DType::kFloat32, {int64_t{1} << 31, int64_t{1} << 31, 4});
  ASSERT_FALSE(overflow.ok());
  EXPECT_EQ(overflow.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(overflow.status().message().find("overflows int64"), std::string::npos) << overflow.status().message();

  ScopedEnv cap(std::string(kMaxTensorBytesEnv), "4096");
  EXPECT_TRUE(Tensor::allocate(DType::kFloat32, {32, 32}).ok());  // exactly 4096 bytes
  auto over = Tensor::allocate(DType::kFloat32, {32, 33});
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), StatusCode::kOutOfMemory);
  const std::string& m = over.status().message();
  EXPECT_NE(m.find("a tensor of shape [32,33] (f32) needs"), std::string::npos) << m;
  EXPECT_NE(m.find("4224 bytes"), std::string::npos) << m;
  EXPECT_NE(m.find("4096"), std::string::npos) << m;
  EXPECT_NE(m.find("KILN_MAX_TENSOR_BYTES"), std::string::npos) << m;
  // What `kiln run --shape X=1099511627776x3` asks for.
  auto cli = Tensor::allocate(DType::kFloat32, {1099511627776, 3});
  ASSERT_FALSE(cli.ok());
  EXPECT_EQ(cli.status().code(), StatusCode::kOutOfMemory);
}

TEST(StatusOrDeathTest, ValueOfAnErrorStopsWithItsMessage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  StatusOr<std::vector<int>> failed = invalid_argument("tensor 'x' is too large");
  EXPECT_DEATH((void)failed.value(),
               "StatusOr::value\\(\\) on an error: INVALID_ARGUMENT: tensor 'x' is too large");
  EXPECT_DEATH((void)failed->size(), "INVALID_ARGUMENT: tensor 'x' is too large");
  StatusOr<std::vector<int>> fine = std::vector<int>{1, 2};
  EXPECT_EQ(fine.value().size(), 2u);
}

}  // namespace
}  // namespace kiln
