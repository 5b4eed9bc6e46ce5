// Overlap of device intervals; see overlap.h.
#include "tools/kiln/overlap.h"

#include <algorithm>
#include <utility>

namespace kiln::cli {

Overlap compute_overlap(const std::vector<GpuInterval>& in) {
  // A sweep over begin (+1) and end (-1) events in time order; at equal
  // times ends first, so touching intervals never count as overlapping.
  std::vector<std::pair<int64_t, int>> events;
  Overlap o;
  int64_t summed = 0;
  for (const GpuInterval& i : in) {
    if (i.end_ns <= i.begin_ns) continue;
    events.push_back({i.begin_ns, +1});
    events.push_back({i.end_ns, -1});
    summed += i.end_ns - i.begin_ns;
  }
  std::sort(events.begin(), events.end());
  int64_t busy = 0, overlapped = 0;
  int in_flight = 0;
  for (size_t e = 0; e < events.size(); ++e) {
    if (e > 0) {
      const int64_t span = events[e].first - events[e - 1].first;
      if (in_flight >= 1) busy += span;
      if (in_flight >= 2) overlapped += span;
    }
    in_flight += events[e].second;
    o.max_in_flight = std::max(o.max_in_flight, in_flight);
  }
  o.busy_ms = static_cast<double>(busy) / 1e6;
  o.overlapped_ms = static_cast<double>(overlapped) / 1e6;
  o.summed_ms = static_cast<double>(summed) / 1e6;
  o.fraction = busy > 0 ? static_cast<double>(overlapped) / static_cast<double>(busy) : 0;
  o.mean_in_flight = busy > 0 ? static_cast<double>(summed) / static_cast<double>(busy) : 0;
  return o;
}

}  // namespace kiln::cli
