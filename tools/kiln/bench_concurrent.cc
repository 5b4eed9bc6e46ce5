// `kiln bench --concurrent N`; see bench_concurrent.h.
#include "tools/kiln/bench_concurrent.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "engine/base/json_writer.h"

namespace kiln::cli {
namespace {

using Clock = std::chrono::steady_clock;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// A calibration's deviation and rounding may put a stamp a little outside
// the host's bracket; more than this is a wrong clock.
constexpr int64_t kWallSlackNs = 50'000;

Status api_status(const api::Error& e) {
  return e ? Status(static_cast<StatusCode>(e.code()), e.message()) : Status();
}

std::vector<const api::Tensor*> pointers(const std::vector<api::Tensor>& inputs) {
  std::vector<const api::Tensor*> p;
  for (const api::Tensor& t : inputs) p.push_back(&t);
  return p;
}

// max |a - b| over every output (NaN is the worst), and whether all are
// equal element for element; a shape or count mismatch is infinite.
std::pair<double, bool> compare(const std::vector<api::Tensor>& got, const std::vector<api::Tensor>& want) {
  if (got.size() != want.size()) return {INFINITY, false};
  double worst = 0;
  bool identical = true;
  for (size_t o = 0; o < got.size(); ++o) {
    if (got[o].shape() != want[o].shape()) return {INFINITY, false};
    for (size_t i = 0, n = want[o].numel(); i < n; ++i) {
      const double a = got[o].get_f64(i), b = want[o].get_f64(i);
      if (std::isnan(a) && std::isnan(b)) continue;  // NaN where the reference has NaN: equal
      if (a != b) identical = false;
      const double d = std::fabs(a - b);
      worst = std::isnan(d) ? INFINITY : std::max(worst, d);
    }
  }
  return {worst, identical};
}

// One phase: `threads` threads, thread t running variant t `runs` times
// (sequential: threads = 1, cycling through the variants). Returns each
// run's record and the phase's wall interval.
struct Phase {
  std::vector<ConcurrentRun> runs;
  int64_t wall_begin_ns = 0, wall_end_ns = 0;
};

Status run_phase(api::Session& session, const std::vector<std::vector<api::Tensor>>& variants,
                 const std::vector<std::vector<api::Tensor>>& references, size_t output_count, int threads,
                 int runs_per_thread, bool cycle, Phase& phase, ConcurrentResult* check) {
  std::mutex mutex;  // guards phase.runs, first_error and check
  Status first_error;
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  auto body = [&](int thread) {
    ready.fetch_add(1);
    while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
    for (int i = 0; i < runs_per_thread; ++i) {
      const size_t v = cycle ? static_cast<size_t>(i) % variants.size() : static_cast<size_t>(thread);
      kiln_run_stats_t stats{};
      std::vector<api::Tensor> outputs;
      const auto t0 = Clock::now();
      api::Error e = session.run(pointers(variants[v]), output_count, outputs, &stats);
      const double wall = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      std::lock_guard<std::mutex> lock(mutex);
      if (e) {
        if (first_error.ok())
          first_error = api_status(e).add_context("thread " + std::to_string(thread) + ", run " + std::to_string(i));
        return;
      }
      ConcurrentRun run;
      run.thread = thread;
      run.queue = stats.queue;
      run.gpu = {stats.gpu_begin_ns, stats.gpu_end_ns};
      run.wall_ms = wall;
      const auto [diff, identical] = compare(outputs, references[v]);
      run.max_abs_diff = diff;
      if (check) {
        check->max_abs_diff = std::max(check->max_abs_diff, diff);
        if (!(diff <= check->tolerance)) ++check->mismatches;
        if (identical) ++check->bit_identical;
      }
      phase.runs.push_back(run);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(body, t);
  while (ready.load() < threads) std::this_thread::yield();
  phase.wall_begin_ns = now_ns();
  go.store(true, std::memory_order_release);
  for (std::thread& t : pool) t.join();
  phase.wall_end_ns = now_ns();
  return first_error;
}

std::vector<GpuInterval> intervals(const Phase& phase) {
  std::vector<GpuInterval> out;
  for (const ConcurrentRun& r : phase.runs)
    if (r.gpu.begin_ns != 0) out.push_back(r.gpu);
  return out;
}

bool inside(const Phase& phase) {
  for (const ConcurrentRun& r : phase.runs)
    if (r.gpu.begin_ns > r.gpu.end_ns || r.gpu.begin_ns < phase.wall_begin_ns - kWallSlackNs ||
        r.gpu.end_ns > phase.wall_end_ns + kWallSlackNs)
      return false;
  return true;
}

double per_second(size_t runs, int64_t begin_ns, int64_t end_ns) {
  return end_ns > begin_ns ? static_cast<double>(runs) * 1e9 / static_cast<double>(end_ns - begin_ns) : 0;
}

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}

}  // namespace

Status run_concurrent(api::Session& session, const std::vector<std::vector<api::Tensor>>& variants,
                      size_t output_count, int runs_per_thread, int warmup, double relative_tolerance,
                      ConcurrentResult& out) {
  const int threads = static_cast<int>(variants.size());
  if (threads < 1 || runs_per_thread < 1) return invalid_argument("--concurrent needs at least one thread and run");
  out = ConcurrentResult{};
  out.threads = threads;
  out.runs_per_thread = runs_per_thread;
  // The references: one run of each variant, alone.
  std::vector<std::vector<api::Tensor>> references(variants.size());
  double magnitude = 1;
  for (size_t v = 0; v < variants.size(); ++v) {
    if (api::Error e = session.run(pointers(variants[v]), output_count, references[v]))
      return api_status(e).add_context("the single-run reference of input variant " + std::to_string(v));
    for (const api::Tensor& t : references[v])
      for (size_t i = 0, n = t.numel(); i < n; ++i)
        if (std::isfinite(t.get_f64(i))) magnitude = std::max(magnitude, std::fabs(t.get_f64(i)));
  }
  out.tolerance = relative_tolerance * magnitude;
  // Warm-up with every thread at once, so that each slot has recorded.
  Phase warm;
  if (warmup > 0)
    KILN_RETURN_IF_ERROR(run_phase(session, variants, references, output_count, threads, warmup, false, warm, nullptr));
  Phase sequential, concurrent;
  KILN_RETURN_IF_ERROR(run_phase(session, variants, references, output_count, 1, threads * runs_per_thread, true,
                                 sequential, &out));
  KILN_RETURN_IF_ERROR(
      run_phase(session, variants, references, output_count, threads, runs_per_thread, false, concurrent, &out));
  out.sequential_wall_ms = static_cast<double>(sequential.wall_end_ns - sequential.wall_begin_ns) / 1e6;
  out.concurrent_wall_ms = static_cast<double>(concurrent.wall_end_ns - concurrent.wall_begin_ns) / 1e6;
  out.sequential_runs_per_s = per_second(sequential.runs.size(), sequential.wall_begin_ns, sequential.wall_end_ns);
  out.concurrent_runs_per_s = per_second(concurrent.runs.size(), concurrent.wall_begin_ns, concurrent.wall_end_ns);
  const std::vector<GpuInterval> seq = intervals(sequential), conc = intervals(concurrent);
  out.timestamps = seq.size() == sequential.runs.size() && conc.size() == concurrent.runs.size() && !conc.empty();
  out.within_wall = out.timestamps && inside(sequential) && inside(concurrent);
  out.sequential = compute_overlap(seq);
  out.concurrent = compute_overlap(conc);
  std::set<uint32_t> queues;
  for (const ConcurrentRun& r : concurrent.runs) queues.insert(r.queue);
  out.queues.assign(queues.begin(), queues.end());
  out.runs = std::move(concurrent.runs);
  // In device order (the threads recorded them in completion order).
  std::stable_sort(out.runs.begin(), out.runs.end(),
                   [](const ConcurrentRun& a, const ConcurrentRun& b) { return a.gpu.begin_ns < b.gpu.begin_ns; });
  out.wall_begin_ns = concurrent.wall_begin_ns;
  out.wall_end_ns = concurrent.wall_end_ns;
  return Status();
}

std::string concurrent_text(const ConcurrentResult& r) {
  std::string s = "  concurrent: " + std::to_string(r.threads) + " threads x " + std::to_string(r.runs_per_thread) +
                  " runs on " + std::to_string(r.queues.size()) + " device queue(s); outputs vs single runs: ";
  s += r.mismatches == 0 ? "all match" : std::to_string(r.mismatches) + " MISMATCH";
  s += " (max|d| " + fmt("%.3g", r.max_abs_diff) + ", " + std::to_string(r.bit_identical) + "/" +
       std::to_string(2 * r.runs.size()) + " bit-identical)\n";
  s += "  throughput: sequential " + fmt("%.1f", r.sequential_runs_per_s) + " runs/s, concurrent " +
       fmt("%.1f", r.concurrent_runs_per_s) + " runs/s (" +
       fmt("%.2f", r.sequential_runs_per_s > 0 ? r.concurrent_runs_per_s / r.sequential_runs_per_s : 0) + "x)\n";
  if (!r.timestamps) return s + "  device overlap: not measured (no calibrated GPU timestamps on this device)\n";
  s += "  device overlap: >=2 runs in flight " + fmt("%.1f", 100 * r.concurrent.fraction) + "% of " +
       fmt("%.3f", r.concurrent.busy_ms) + " ms busy (mean in flight " + fmt("%.2f", r.concurrent.mean_in_flight) +
       ", max " + std::to_string(r.concurrent.max_in_flight) + "); sequential phase " +
       fmt("%.1f", 100 * r.sequential.fraction) + "%" +
       (r.within_wall ? "" : "; WARNING: intervals outside the wall-clock bracket") + "\n";
  return s;
}

std::string concurrent_json(const ConcurrentResult& r) {
  JsonWriter w;
  auto overlap = [&](const Overlap& o) {
    w.begin_object().key("busy_ms").number(o.busy_ms).key("overlapped_ms").number(o.overlapped_ms);
    w.key("fraction").number(o.fraction).key("summed_ms").number(o.summed_ms);
    w.key("mean_in_flight").number(o.mean_in_flight).key("max_in_flight").number(o.max_in_flight).end_object();
  };
  w.begin_object().key("threads").number(r.threads).key("runs_per_thread").number(r.runs_per_thread);
  w.key("queues").begin_array();
  for (uint32_t q : r.queues) w.number(q);
  w.end_array();
  w.key("tolerance").number(r.tolerance).key("mismatches").number(static_cast<uint64_t>(r.mismatches));
  w.key("max_abs_diff").number(std::isfinite(r.max_abs_diff) ? r.max_abs_diff : -1.0);
  w.key("bit_identical_runs").number(static_cast<uint64_t>(r.bit_identical));
  w.key("timestamps").boolean(r.timestamps).key("within_wall").boolean(r.within_wall);
  w.newline().key("sequential").begin_object().key("wall_ms").number(r.sequential_wall_ms);
  w.key("runs_per_s").number(r.sequential_runs_per_s).key("overlap"), overlap(r.sequential);
  w.end_object();
  w.newline().key("concurrent").begin_object().key("wall_ms").number(r.concurrent_wall_ms);
  w.key("runs_per_s").number(r.concurrent_runs_per_s).key("overlap"), overlap(r.concurrent);
  w.end_object();
  w.newline().key("speedup").number(r.sequential_runs_per_s > 0 ? r.concurrent_runs_per_s / r.sequential_runs_per_s : 0);
  // Each concurrent run in device order: thread, queue, and its device
  // interval relative to the phase's start (ms), for a timeline plot.
  w.newline().key("runs").begin_array();
  for (const ConcurrentRun& run : r.runs) {
    w.newline().begin_object().key("thread").number(run.thread).key("queue").number(run.queue);
    const bool known = run.gpu.begin_ns != 0;
    w.key("gpu_begin_ms").number(known ? static_cast<double>(run.gpu.begin_ns - r.wall_begin_ns) / 1e6 : -1.0);
    w.key("gpu_end_ms").number(known ? static_cast<double>(run.gpu.end_ns - r.wall_begin_ns) / 1e6 : -1.0);
    w.key("wall_ms").number(run.wall_ms).end_object();
  }
  w.newline().end_array().end_object();
  return w.take();
}

}  // namespace kiln::cli
