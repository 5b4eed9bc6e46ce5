// How much a set of device intervals (runs on a GPU) overlap in time: the
// figure `kiln bench --concurrent` reports (bench_concurrent.h). Pure
// arithmetic, apart from the runs that produce the intervals, so that it is
// tested on synthetic intervals (overlap_test.cc).
#pragma once

#include <cstdint>
#include <vector>

namespace kiln::cli {

// [begin_ns, end_ns) on one clock.
struct GpuInterval {
  int64_t begin_ns = 0;
  int64_t end_ns = 0;
};

// What a set of device intervals says about overlap: the time at least one
// run was on the device (the union), the time at least two were, their
// ratio, the summed interval lengths over the union (the mean number in
// flight while any was), and the most at once. Touching intervals (one ends
// where the next begins) do not overlap. Empty or zero-length input: zeros.
struct Overlap {
  double busy_ms = 0;
  double overlapped_ms = 0;
  double fraction = 0;
  double summed_ms = 0;
  double mean_in_flight = 0;
  int max_in_flight = 0;
};
Overlap compute_overlap(const std::vector<GpuInterval>& intervals);

}  // namespace kiln::cli
