// How long a wait for a submission polls before it blocks (Submitter::wait).
//
// A blocking wait (vkWaitSemaphores) can wake 0.05-0.15 ms after the GPU
// finished on an H100/H200 — a quarter of mobilenet_v2's run — so a wait
// first polls the semaphore. By default the poll lasts a little longer than
// the submissions have been taking (a model's runs take about the same time
// each), between kMinAutoSpin and kMaxAutoSpin: short runs never block and
// a long one burns at most kMaxAutoSpin of a core. A host may fix the bound
// instead (0: block at once, e.g. a game that needs the core).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace kiln::vk {

// The spin setting that means "follow the submissions' durations".
inline constexpr std::chrono::microseconds kAutoSpin{-1};
inline constexpr std::chrono::microseconds kMinAutoSpin{200};
inline constexpr std::chrono::microseconds kMaxAutoSpin{10000};
// Before any submission was timed.
inline constexpr std::chrono::microseconds kFirstAutoSpin{2000};

// The automatic spin after submissions took `last` from submit to observed
// completion (0: none timed yet): 1.5x that, within [kMinAutoSpin, kMaxAutoSpin].
inline std::chrono::nanoseconds auto_spin(std::chrono::nanoseconds last) {
  if (last.count() <= 0) return kFirstAutoSpin;
  return std::clamp<std::chrono::nanoseconds>(last * 3 / 2, kMinAutoSpin, kMaxAutoSpin);
}

// The poll bound of a wait with `timeout_ns` (UINT64_MAX: forever) and the
// `spin` chosen: the spin, cut to the timeout when that is shorter, never
// negative. UINT64_MAX does not fit std::chrono::nanoseconds (int64):
// converted naively it reads as -1 ns and the wait never polled.
inline std::chrono::nanoseconds wait_spin_bound(std::chrono::nanoseconds spin, uint64_t timeout_ns) {
  const std::chrono::nanoseconds s = std::max(spin, std::chrono::nanoseconds(0));
  if (timeout_ns >= static_cast<uint64_t>(s.count())) return s;
  return std::chrono::nanoseconds(static_cast<int64_t>(timeout_ns));
}

}  // namespace kiln::vk
