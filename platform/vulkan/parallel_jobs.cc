// The fork-join job runner; see parallel_jobs.h.
#include "platform/vulkan/parallel_jobs.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

namespace kiln::vk {

unsigned default_compile_threads() {
  if (const char* env = std::getenv("KILN_COMPILE_THREADS"); env != nullptr && *env != '\0') {
    char* end = nullptr;
    const long n = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && n > 0) return static_cast<unsigned>(std::min<long>(n, 1024));
  }
  const unsigned hw = std::thread::hardware_concurrency();  // 0 when unknown
  return std::clamp(hw, 1u, kMaxDefaultCompileThreads);
}

unsigned resolve_compile_threads(unsigned requested) { return requested > 0 ? requested : default_compile_threads(); }

namespace {

struct Batch {
  size_t count = 0;
  const std::function<void(size_t)>* job = nullptr;
  const std::function<bool()>* stop = nullptr;
  std::atomic<size_t> next{0};

  void work() {
    for (;;) {
      if (*stop && (*stop)()) return;
      const size_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= count) return;
      (*job)(i);
    }
  }
};

void* run_worker(void* batch) {
  static_cast<Batch*>(batch)->work();
  return nullptr;
}

}  // namespace

unsigned parallel_jobs(size_t count, unsigned threads, const std::function<void(size_t)>& job,
                       const std::function<bool()>& stop) {
  if (count == 0) return 0;
  const unsigned wanted = static_cast<unsigned>(std::min<size_t>(std::max(threads, 1u), count));
  Batch batch;
  batch.count = count;
  batch.job = &job;
  batch.stop = &stop;
  // pthreads rather than std::thread: a thread that cannot start (resource
  // limits) means fewer workers, not an exception in a no-exceptions build.
  std::vector<pthread_t> helpers;
  helpers.reserve(wanted - 1);
  for (unsigned t = 1; t < wanted; ++t) {
    pthread_t thread;
    if (pthread_create(&thread, nullptr, run_worker, &batch) != 0) break;
    helpers.push_back(thread);
  }
  batch.work();
  for (pthread_t thread : helpers) pthread_join(thread, nullptr);
  return static_cast<unsigned>(helpers.size()) + 1;
}

}  // namespace kiln::vk
