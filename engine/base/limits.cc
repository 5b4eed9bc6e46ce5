// Limits and their environment overrides; see limits.h.
#include "engine/base/limits.h"

#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>

namespace kiln {
namespace {

// The positive integer in environment variable `name`, `fallback` when it is
// unset or empty, an error naming the variable when it is anything else.
StatusOr<int64_t> env_limit(std::string_view name, int64_t fallback) {
  const char* text = std::getenv(std::string(name).c_str());
  if (text == nullptr || *text == '\0') return fallback;
  const std::string_view s(text);
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v <= 0)
    return invalid_argument(std::string(name) + "='" + std::string(s) + "' is not a positive integer that fits in int64");
  return v;
}

int64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  // Unknown: a sane constant rather than no limit at all.
  if (pages <= 0 || page_size <= 0) return int64_t{64} << 30;
  int64_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<int64_t>(pages), static_cast<int64_t>(page_size), &bytes))
    return INT64_MAX;
  return bytes;
}

}  // namespace

StatusOr<int64_t> max_tensor_bytes() { return env_limit(kMaxTensorBytesEnv, physical_memory_bytes()); }
StatusOr<int64_t> max_loop_iterations() { return env_limit(kMaxLoopIterationsEnv, kDefaultMaxLoopIterations); }
StatusOr<int64_t> max_subgraph_depth() { return env_limit(kMaxSubgraphDepthEnv, kDefaultMaxSubgraphDepth); }

std::string format_bytes(int64_t bytes) {
  static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " bytes";
  double v = static_cast<double>(bytes);
  int unit = -1;
  while (v >= 1024.0 && unit < 5) {
    v /= 1024.0;
    ++unit;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f %s (%lld bytes)", v, kUnits[unit], static_cast<long long>(bytes));
  return buf;
}

Status check_tensor_bytes(int64_t bytes, std::string_view what) {
  KILN_ASSIGN_OR_RETURN(const int64_t cap, max_tensor_bytes());
  if (bytes <= cap) return ok_status();
  return out_of_memory(std::string(what) + " needs " + format_bytes(bytes) + ", over the limit of " +
                       format_bytes(cap) + " for one tensor (" + std::string(kMaxTensorBytesEnv) + ")");
}

}  // namespace kiln
