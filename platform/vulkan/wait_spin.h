// How long a wait for a submission polls before it blocks (Submitter::wait).
#pragma once

#include <chrono>
#include <cstdint>

namespace kiln::vk {

// The poll bound of a wait with `timeout_ns` (UINT64_MAX: forever) and the
// configured `spin`: the spin, cut to the timeout when that is shorter,
// never negative. UINT64_MAX does not fit std::chrono::nanoseconds (int64):
// converted naively it reads as -1 ns and the wait would never poll.
inline std::chrono::nanoseconds wait_spin_bound(std::chrono::microseconds spin, uint64_t timeout_ns) {
  const std::chrono::nanoseconds s = spin.count() > 0 ? std::chrono::nanoseconds(spin) : std::chrono::nanoseconds(0);
  if (timeout_ns >= static_cast<uint64_t>(s.count())) return s;
  return std::chrono::nanoseconds(static_cast<int64_t>(timeout_ns));
}

}  // namespace kiln::vk
