// A run split into slices that each fit a frame's GPU budget (issue 17, "a
// frame budget"): what each dispatch is expected to cost, and where the
// next slice ends. Pure arithmetic over per-dispatch estimates, with no
// device and no model, so the rules (at least one dispatch per slice, the
// budget and the count limit, the rate model) are unit-tested on their own
// (slice_plan_test.cc); VulkanModel::record_slice applies them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln::runtime {

// What kind of device runs the work: the rate model's only input.
enum class DeviceClass { kDiscreteGpu, kIntegratedGpu, kCpu, kOther };

// A roofline for one device class: a dispatch costs its fixed overhead
// plus the larger of its FLOPs at `flops_per_us` and its global memory
// traffic at `bytes_per_us`. Deliberately round numbers for a mid-range
// device of each class (a discrete GPU: 20 TFLOP/s, 500 GB/s, 4 us per
// dispatch; an integrated one: 2 TFLOP/s, 60 GB/s, 8 us; a CPU
// implementation such as lavapipe: 50 GFLOP/s, 10 GB/s, 20 us): an order
// of magnitude, used only until a profiled run measured the kernels.
struct DeviceRates {
  double flops_per_us = 0;
  double bytes_per_us = 0;
  double dispatch_us = 0;
};
DeviceRates device_rates(DeviceClass device);

// The modelled time of one dispatch of `flops` FLOPs moving `bytes` bytes.
double modelled_dispatch_us(const DeviceRates& rates, uint64_t flops, uint64_t bytes);

// The end (one past the last dispatch) of the slice that starts at dispatch
// `first` of a run whose dispatches cost `cost_us` each: dispatches are
// added while the slice's summed cost stays within `budget_us` (<= 0: no
// time limit) and its count within `max_dispatches` (0: no count limit).
// A slice always holds at least one dispatch (one that alone exceeds the
// budget makes a slice of its own), so a run always progresses. Requires
// first < cost_us.size().
size_t slice_end(const std::vector<double>& cost_us, size_t first, double budget_us, uint32_t max_dispatches);

}  // namespace kiln::runtime
