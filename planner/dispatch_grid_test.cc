// Balanced 2D dispatch grids: within the x limit, fewer than y surplus
// groups, for constant and symbolic group counts.
#include "planner/dispatch_grid.h"

#include <gtest/gtest.h>

namespace kiln::planner {
namespace {

TEST(DispatchGrid, ConstantCounts) {
  const auto grid = [](int64_t groups) {
    const std::array<ir::Dim, 3> g = dispatch_grid_2d(ir::Dim(groups), 65535);
    EXPECT_TRUE(g[0].is_const() && g[1].is_const());
    return std::make_pair(g[0].value(), g[1].value());
  };
  EXPECT_EQ(grid(0), std::make_pair(int64_t{0}, int64_t{1}));
  EXPECT_EQ(grid(1), std::make_pair(int64_t{1}, int64_t{1}));
  EXPECT_EQ(grid(65535), std::make_pair(int64_t{65535}, int64_t{1}));
  // A 64 MiB fp32 map: 65536 groups of 64 invocations, none surplus.
  EXPECT_EQ(grid(65536), std::make_pair(int64_t{32768}, int64_t{2}));
  EXPECT_EQ(grid(131072), std::make_pair(int64_t{43691}, int64_t{3}));
}

TEST(DispatchGrid, SymbolicCountsStayWithinTheLimitWithFewSurplusGroups) {
  const ir::Dim n = ir::Dim::symbol("n");
  const std::array<ir::Dim, 3> g = dispatch_grid_2d(n, 7);
  for (int64_t groups = 0; groups <= 200; ++groups) {
    const auto x = g[0].evaluate({{"n", groups}});
    const auto y = g[1].evaluate({{"n", groups}});
    ASSERT_TRUE(x.has_value() && y.has_value()) << groups;
    EXPECT_LE(*x, 7) << groups;
    EXPECT_GE(*x * *y, groups) << groups;
    EXPECT_LT(*x * *y - groups, std::max<int64_t>(*y, 1)) << groups;
  }
}

}  // namespace
}  // namespace kiln::planner
