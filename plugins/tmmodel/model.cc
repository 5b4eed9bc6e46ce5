// The latency model (see model.h).
#include "plugins/tmmodel/model.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>

namespace kiln::tmmodel {

namespace {

int floor_div(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

}  // namespace

std::vector<double> cross_block_histogram(const std::vector<Texel>& walk) {
  std::vector<double> h(kFeatureCount, 0.0);
  h[0] = 1.0;
  if (walk.size() < 2) return h;
  for (size_t i = 1; i < walk.size(); ++i) {
    const Texel a = walk[i - 1], b = walk[i];
    for (size_t s = 0; s < kBlockShapes.size(); ++s) {
      const BlockShape shape = kBlockShapes[s];
      if (floor_div(a.x, shape.width) != floor_div(b.x, shape.width)) h[1 + 2 * s] += 1;
      if (floor_div(a.y, shape.height) != floor_div(b.y, shape.height)) h[2 + 2 * s] += 1;
    }
  }
  const double steps = static_cast<double>(walk.size() - 1);
  for (int f = 1; f < kFeatureCount; ++f) h[static_cast<size_t>(f)] /= steps;
  return h;
}

const char* pattern_name(AccessPattern p) {
  switch (p) {
    case AccessPattern::kRow: return "row";
    case AccessPattern::kBlock2: return "block2";
    case AccessPattern::kBlock4: return "block4";
    case AccessPattern::kBlock8: return "block8";
  }
  return "?";
}

int reuse_distance(AccessPattern p) {
  switch (p) {
    case AccessPattern::kRow: return 1;
    case AccessPattern::kBlock2: return 2;
    case AccessPattern::kBlock4: return 4;
    case AccessPattern::kBlock8: return 8;
  }
  return 1;
}

std::vector<Texel> pattern_walk(AccessPattern p, int width, int steps) {
  std::vector<Texel> walk;
  walk.reserve(static_cast<size_t>(std::max(steps, 0)));
  const int rows = reuse_distance(p);  // rows of one band (1 for kRow)
  for (int j = 0; j < steps; ++j) {
    if (p == AccessPattern::kRow) {
      walk.push_back({j % width, j / width});
    } else {
      const int band = j / (rows * width), in_band = j % (rows * width);
      walk.push_back({in_band / rows, band * rows + in_band % rows});
    }
  }
  return walk;
}

const char* storage_name(Storage s) { return s == Storage::kImage ? "image" : "buffer"; }

double thread_latency(const std::vector<double>& beta, const std::vector<double>& h) {
  double sum = 0;
  for (size_t i = 0; i < std::min(beta.size(), h.size()); ++i) sum += beta[i] * h[i];
  return sum;
}

double warp_factor(const Profile& p, int threads, int reuse) {
  const int64_t warp = std::min(threads, 64);
  const int64_t c = std::max(p.cache_lines, 1);
  const int64_t over = warp * reuse - c;
  if (over <= 0) return 1.0;
  return std::pow(p.thrash_d, static_cast<double>((over + c - 1) / c));
}

double warps_in_flight(const Profile& p, int group_size) {
  if (p.warps_in_flight.empty()) return 1.0;
  auto it = p.warps_in_flight.lower_bound(group_size);
  if (it == p.warps_in_flight.end()) --it;
  return std::max(1.0, it->second);
}

int64_t waves(const Profile& p, int64_t work_groups, int group_size) {
  const int64_t w = std::max(p.warp_width, 1);
  const double warps = static_cast<double>(std::max<int64_t>(work_groups, 1) * ((std::max(group_size, 1) + w - 1) / w));
  return static_cast<int64_t>(std::ceil(warps / warps_in_flight(p, group_size) - 1e-9));
}

double stream_walk_latency(const Profile& p, const StreamConfig& c) {
  return thread_latency(p.beta(c.storage), cross_block_histogram(pattern_walk(c.pattern, 16, c.steps)));
}

double predict_stream_ns(const Profile& p, const StreamConfig& c, double walk_latency) {
  const double lw = walk_latency * p.stream_scale(c.storage) * warp_factor(p, c.group_size, reuse_distance(c.pattern));
  return lw * c.steps * static_cast<double>(waves(p, c.work_groups, c.group_size));
}

double predict_stream_ns(const Profile& p, const StreamConfig& c) {
  return predict_stream_ns(p, c, stream_walk_latency(p, c));
}

namespace {

std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    for (size_t k = i; k <= j; ++k) r[order[k]] = (static_cast<double>(i) + static_cast<double>(j)) / 2.0;
    i = j + 1;
  }
  return r;
}

}  // namespace

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  const size_t n = std::min(a.size(), b.size());
  if (n < 3) return 0;
  std::vector<double> ra = ranks(std::vector<double>(a.begin(), a.begin() + static_cast<long>(n)));
  std::vector<double> rb = ranks(std::vector<double>(b.begin(), b.begin() + static_cast<long>(n)));
  const double ma = std::accumulate(ra.begin(), ra.end(), 0.0) / static_cast<double>(n);
  const double mb = std::accumulate(rb.begin(), rb.end(), 0.0) / static_cast<double>(n);
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < n; ++i) {
    sab += (ra[i] - ma) * (rb[i] - mb);
    saa += (ra[i] - ma) * (ra[i] - ma);
    sbb += (rb[i] - mb) * (rb[i] - mb);
  }
  if (saa == 0 || sbb == 0) return 0;
  return sab / std::sqrt(saa * sbb);
}

std::string sanitized(const std::string& name) {
  std::string out;
  for (char ch : name) {
    const bool keep = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.';
    if (keep) out += ch;
    else if (!out.empty() && out.back() != '_') out += '_';
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out.empty() ? "device" : out;
}

std::string profile_directory() {
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v != nullptr ? std::string(v) : std::string();
  };
  std::string cache = env("KILN_CACHE_DIR");
  if (cache.empty() && !env("XDG_CACHE_HOME").empty()) cache = env("XDG_CACHE_HOME") + "/kiln";
  if (cache.empty() && !env("HOME").empty()) cache = env("HOME") + "/.cache/kiln";
  return cache.empty() ? cache : cache + "/tmmodel";
}

std::string profile_file_name(const std::string& device, const std::string& driver, const std::string& kiln_version) {
  return sanitized(device) + "-drv" + sanitized(driver) + "-kiln" + sanitized(kiln_version) + ".json";
}

}  // namespace kiln::tmmodel
