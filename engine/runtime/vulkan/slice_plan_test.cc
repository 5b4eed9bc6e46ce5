// slice_plan.h: slices respect the budget and the count limit, always make
// progress, and a budget above the whole run gives one slice; the rate model
// orders device classes and follows the roofline.
#include "engine/runtime/vulkan/slice_plan.h"

#include <gtest/gtest.h>

namespace kiln::runtime {
namespace {

// The slices of a whole run, as [first, end) pairs.
std::vector<std::pair<size_t, size_t>> slices(const std::vector<double>& cost, double budget, uint32_t max) {
  std::vector<std::pair<size_t, size_t>> out;
  for (size_t first = 0; first < cost.size();) {
    const size_t end = slice_end(cost, first, budget, max);
    out.emplace_back(first, end);
    first = end;
  }
  return out;
}

using Slices = std::vector<std::pair<size_t, size_t>>;

TEST(SlicePlan, PacksDispatchesUpToTheBudget) {
  const std::vector<double> cost{3, 4, 2, 6, 1, 1};
  EXPECT_EQ(slices(cost, 7, 0), (Slices{{0, 2}, {2, 3}, {3, 5}, {5, 6}}));
  EXPECT_EQ(slices(cost, 9, 0), (Slices{{0, 3}, {3, 6}}));
}

TEST(SlicePlan, ADispatchOverTheBudgetIsASliceOfItsOwn) {
  const std::vector<double> cost{1, 50, 1, 1};
  EXPECT_EQ(slices(cost, 5, 0), (Slices{{0, 1}, {1, 2}, {2, 4}}));
  // A budget below every dispatch: one dispatch per slice, never none.
  EXPECT_EQ(slices(cost, 0.5, 0), (Slices{{0, 1}, {1, 2}, {2, 3}, {3, 4}}));
}

TEST(SlicePlan, CountLimitAndNoTimeLimit) {
  const std::vector<double> cost{1, 1, 1, 1, 1};
  EXPECT_EQ(slices(cost, 0, 2), (Slices{{0, 2}, {2, 4}, {4, 5}}));
  EXPECT_EQ(slices(cost, 100, 3), (Slices{{0, 3}, {3, 5}}));  // the count binds first
  EXPECT_EQ(slices(cost, 2, 3), (Slices{{0, 2}, {2, 4}, {4, 5}}));  // the budget binds first
  // A budget above the whole run: one slice with everything.
  EXPECT_EQ(slices(cost, 1e12, 0), (Slices{{0, 5}}));
  EXPECT_EQ(slice_end(cost, 4, 1e12, 0), 5u);
}

TEST(SlicePlan, RateModelIsARoofline) {
  const DeviceRates gpu = device_rates(DeviceClass::kDiscreteGpu);
  const DeviceRates cpu = device_rates(DeviceClass::kCpu);
  // 1 GFLOP over 1 MB is compute-bound on both; 1 KFLOP over 100 MB is memory-bound.
  EXPECT_DOUBLE_EQ(modelled_dispatch_us(gpu, 1000000000, 1000000), gpu.dispatch_us + 1e9 / gpu.flops_per_us);
  EXPECT_DOUBLE_EQ(modelled_dispatch_us(cpu, 1000, 100000000), cpu.dispatch_us + 1e8 / cpu.bytes_per_us);
  EXPECT_DOUBLE_EQ(modelled_dispatch_us(gpu, 0, 0), gpu.dispatch_us);
  EXPECT_LT(modelled_dispatch_us(gpu, 1000000000, 1000000), modelled_dispatch_us(cpu, 1000000000, 1000000));
  const DeviceRates igpu = device_rates(DeviceClass::kIntegratedGpu);
  EXPECT_LT(modelled_dispatch_us(gpu, 1000000000, 1000000), modelled_dispatch_us(igpu, 1000000000, 1000000));
  EXPECT_LT(modelled_dispatch_us(igpu, 1000000000, 1000000), modelled_dispatch_us(cpu, 1000000000, 1000000));
}

}  // namespace
}  // namespace kiln::runtime
