// Slicing a run by its dispatches' estimated cost (slice_plan.h).
#include "engine/runtime/vulkan/slice_plan.h"

#include <algorithm>

namespace kiln::runtime {

DeviceRates device_rates(DeviceClass device) {
  switch (device) {
    case DeviceClass::kDiscreteGpu: return {20e12 / 1e6, 500e9 / 1e6, 4};
    case DeviceClass::kCpu: return {50e9 / 1e6, 10e9 / 1e6, 20};
    case DeviceClass::kIntegratedGpu:
    case DeviceClass::kOther: break;
  }
  return {2e12 / 1e6, 60e9 / 1e6, 8};
}

double modelled_dispatch_us(const DeviceRates& rates, uint64_t flops, uint64_t bytes) {
  return rates.dispatch_us + std::max(static_cast<double>(flops) / rates.flops_per_us,
                                      static_cast<double>(bytes) / rates.bytes_per_us);
}

size_t slice_end(const std::vector<double>& cost_us, size_t first, double budget_us, uint32_t max_dispatches) {
  size_t end = first + 1;  // at least one dispatch, whatever it costs
  double spent = cost_us[first];
  while (end < cost_us.size()) {
    if (max_dispatches != 0 && end - first >= max_dispatches) break;
    if (budget_us > 0 && spent + cost_us[end] > budget_us) break;
    spent += cost_us[end];
    ++end;
  }
  return end;
}

}  // namespace kiln::runtime
