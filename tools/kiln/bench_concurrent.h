// `kiln bench MODEL --concurrent N`: several runs of one compiled model in
// flight at once, checked and measured.
//
// One session with N run slots (kiln_session_options_t.max_concurrent_runs)
// is run by N threads, thread t feeding its own inputs (variant t) again and
// again. Every output is compared with a single run of the same inputs on
// the same session before the threads start. Each run's device interval
// (kiln_run_stats_t.gpu_begin_ns / gpu_end_ns: calibrated GPU timestamps on
// the host's steady clock) goes into the overlap figures below; the same
// number of runs from one thread gives the sequential baseline, whose own
// overlap should be zero (a check on the clock). On a device with one queue
// (lavapipe) runs take turns on it and the figure is near zero: reported as
// measured, never assumed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/base/status.h"
#include "kiln/kiln.hpp"
#include "tools/kiln/overlap.h"

namespace kiln::cli {


// One timed run of the concurrent phase.
struct ConcurrentRun {
  int thread = 0;
  uint32_t queue = 0;
  GpuInterval gpu;  // 0, 0 without calibrated timestamps
  double wall_ms = 0;
  double max_abs_diff = 0;  // against the thread's single-run reference
};

struct ConcurrentResult {
  int threads = 0;
  int runs_per_thread = 0;
  std::vector<uint32_t> queues;  // the distinct device queues the runs used
  double tolerance = 0;          // max |output - reference| allowed
  size_t mismatches = 0;         // runs over the tolerance
  double max_abs_diff = 0;       // over every run and output
  size_t bit_identical = 0;      // runs equal to their reference in every element
  bool timestamps = false;       // every run had a device interval
  bool within_wall = false;      // every interval inside its phase's wall interval
  double sequential_wall_ms = 0, concurrent_wall_ms = 0;  // each phase, start to end
  double sequential_runs_per_s = 0, concurrent_runs_per_s = 0;
  Overlap sequential, concurrent;  // from the intervals of each phase
  std::vector<ConcurrentRun> runs;
  int64_t wall_begin_ns = 0;       // the concurrent phase's wall interval (steady clock)
  int64_t wall_end_ns = 0;
};

// Runs the phases on `session` (made with max_concurrent_runs >= threads).
// `variants[t]` are thread t's inputs (model order). Each thread makes
// `warmup` untimed runs first (every slot records its command buffers). A
// run matches when every output element is within `relative_tolerance`
// times max(1, the references' largest magnitude) of its reference (runs
// of one kernel set may differ in the last bits where kernels add with
// atomics). Errors: a run's error, naming the thread.
Status run_concurrent(api::Session& session, const std::vector<std::vector<api::Tensor>>& variants,
                      size_t output_count, int runs_per_thread, int warmup, double relative_tolerance,
                      ConcurrentResult& out);

// The summary lines `kiln bench` prints, and the JSON object it writes.
std::string concurrent_text(const ConcurrentResult& r);
std::string concurrent_json(const ConcurrentResult& r);

}  // namespace kiln::cli
