// A tiny fork-join runner for compile work: shader compilation and pipeline
// creation are independent per kernel and CPU-bound (shaderc, the driver's
// shader compiler), so a plan's distinct kernels spread over cores.
//
// No persistent pool: a batch starts its threads and joins them before
// returning, so nothing outlives the call and no job can touch freed state.
#pragma once

#include <cstddef>
#include <functional>

namespace kiln::vk {

// Compile threads when nothing says otherwise: $KILN_COMPILE_THREADS when it
// holds a positive integer, else the hardware's threads capped at
// kMaxDefaultCompileThreads (past that, extra threads mostly fight over
// memory bandwidth and the driver's locks).
inline constexpr unsigned kMaxDefaultCompileThreads = 16;
unsigned default_compile_threads();

// `requested` when positive, else default_compile_threads(); never 0.
unsigned resolve_compile_threads(unsigned requested);

// Runs job(i) for every i in [0, count) on min(threads, count) threads, the
// calling thread among them, and returns when all have finished. Jobs are
// taken in index order. When stop() turns true (checked before each job is
// taken) the jobs not yet taken are skipped; a job already taken always
// runs, so every job with a lower index than one that ran has run too.
// Returns how many threads ran jobs. `job` must not throw.
unsigned parallel_jobs(size_t count, unsigned threads, const std::function<void(size_t)>& job,
                       const std::function<bool()>& stop = {});

}  // namespace kiln::vk
