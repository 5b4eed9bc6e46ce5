// Least-squares fitting of the model (see fit.h).
#include "tools/tune/fit.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

namespace kiln::tune {

namespace {

using tmmodel::Storage;

std::vector<size_t> indices_of(const std::vector<ChaseRun>& runs, Storage s) {
  std::vector<size_t> out;
  for (size_t i = 0; i < runs.size(); ++i)
    if (runs[i].storage == s) out.push_back(i);
  return out;
}


int64_t exponent(int group_size, int reuse, int cache_lines) {
  const int64_t over = int64_t{std::min(group_size, 64)} * reuse - cache_lines;
  return over <= 0 ? 0 : (over + cache_lines - 1) / cache_lines;
}

// Warp level (Eq. 2) on `warp_runs` (the fewest work groups):
// log(t / (steps L_t waves)) = log c0_storage + e(C) log D, C by search;
// waves are 1 until the work-group level has been fitted once.
// `walk_latency`: each run's L_t (tmmodel::stream_walk_latency).
void fit_warp_level(tmmodel::Profile& p, const std::vector<StreamRun>& stream, const std::vector<double>& walk_latency,
                    const std::vector<size_t>& warp_runs, bool with_waves) {
  double best_sse = INFINITY;
  for (int c = 1 << 14; c >= 1; c /= 2) {
    std::vector<std::vector<double>> x;
    std::vector<double> y;
    bool any_thrash = false;
    for (size_t i : warp_runs) {
      const tmmodel::StreamConfig& cfg = stream[i].config;
      const int64_t e = exponent(cfg.group_size, tmmodel::reuse_distance(cfg.pattern), c);
      any_thrash = any_thrash || e > 0;
      x.push_back({cfg.storage == Storage::kImage ? 1.0 : 0.0, cfg.storage == Storage::kBuffer ? 1.0 : 0.0,
                   static_cast<double>(e)});
      const double w = with_waves ? static_cast<double>(tmmodel::waves(p, cfg.work_groups, cfg.group_size)) : 1.0;
      // L_t kept positive: a fitted beta can predict <= 0 for a pattern far
      // outside the chases.
      y.push_back(std::log(stream[i].ns / (cfg.steps * std::max(walk_latency[i], 1e-3) * w)));
    }
    std::vector<double> b = {0, 0, 0};
    if (any_thrash) {
      auto solved = least_squares(x, y, 0.0);
      if (solved.ok()) b = *solved;
    }
    if (!any_thrash || b[2] < 0) {  // no thrashing seen, or a speed-up: D = 1
      double sum[2] = {0, 0}, count[2] = {0, 0};
      for (size_t r = 0; r < x.size(); ++r) {
        const int k = x[r][0] > 0 ? 0 : 1;
        sum[k] += y[r];
        count[k] += 1;
      }
      b = {count[0] ? sum[0] / count[0] : 0.0, count[1] ? sum[1] / count[1] : 0.0, 0.0};
    }
    double sse = 0;
    for (size_t r = 0; r < x.size(); ++r) {
      const double e = y[r] - (b[0] * x[r][0] + b[1] * x[r][1] + b[2] * x[r][2]);
      sse += e * e;
    }
    if (sse < best_sse - 1e-9) {  // ties keep the larger cache
      best_sse = sse;
      p.cache_lines = c;
      p.stream_scale_image = std::exp(b[0]);
      p.stream_scale_buffer = std::exp(b[1]);
      p.thrash_d = std::exp(b[2]);
    }
  }

}

// Work-group level (Eq. 6): per G, the K_G (warps in flight) whose waves
// best explain the training runs (least squares on log time, the levels
// below fixed).
void fit_group_level(tmmodel::Profile& p, const std::vector<StreamRun>& stream,
                     const std::vector<double>& walk_latency) {
  std::map<int, std::vector<size_t>> by_group;
  int64_t most = 1;  // warps of the largest run
  const int64_t w = std::max(p.warp_width, 1);
  for (size_t i = 0; i < stream.size(); ++i) {
    if (!held_out(i)) by_group[stream[i].config.group_size].push_back(i);
    most = std::max(most, stream[i].config.work_groups * ((stream[i].config.group_size + w - 1) / w));
  }
  for (const auto& [g, runs] : by_group) {
    double best = INFINITY;
    int64_t best_k = 1;
    for (int64_t k = 1; k <= 2 * most; ++k) {
      p.warps_in_flight[g] = static_cast<double>(k);
      double sse = 0;
      for (size_t i : runs) {
        const double e =
            std::log(stream[i].ns) - std::log(tmmodel::predict_stream_ns(p, stream[i].config, walk_latency[i]));
        sse += e * e;
      }
      if (sse < best - 1e-9) best = sse, best_k = k;  // ties keep the fewer
    }
    p.warps_in_flight[g] = static_cast<double>(best_k);
  }

}

}  // namespace

StatusOr<std::vector<double>> least_squares(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
                                            double ridge) {
  if (x.empty() || x.size() != y.size() || x[0].empty()) return invalid_argument("least squares needs rows and values");
  const size_t n = x[0].size();
  for (const auto& row : x)
    if (row.size() != n) return invalid_argument("least squares rows differ in length");
  // Normal equations (X^T X + ridge) b = X^T y, by Gaussian elimination
  // with partial pivoting: the systems here have at most a dozen unknowns.
  std::vector<std::vector<double>> a(n, std::vector<double>(n + 1, 0.0));
  for (size_t r = 0; r < x.size(); ++r)
    for (size_t i = 0; i < n; ++i) {
      for (size_t j = 0; j < n; ++j) a[i][j] += x[r][i] * x[r][j];
      a[i][n] += x[r][i] * y[r];
    }
  for (size_t i = 1; i < n; ++i) a[i][i] += ridge;
  for (size_t c = 0; c < n; ++c) {
    size_t pivot = c;
    for (size_t r = c + 1; r < n; ++r)
      if (std::fabs(a[r][c]) > std::fabs(a[pivot][c])) pivot = r;
    if (std::fabs(a[pivot][c]) < 1e-12) return failed_precondition("least squares: the features are linearly dependent");
    std::swap(a[c], a[pivot]);
    for (size_t r = 0; r < n; ++r) {
      if (r == c) continue;
      const double f = a[r][c] / a[c][c];
      for (size_t k = c; k <= n; ++k) a[r][k] -= f * a[c][k];
    }
  }
  std::vector<double> b(n);
  for (size_t i = 0; i < n; ++i) b[i] = a[i][n] / a[i][i];
  return b;
}

StatusOr<Fit> fit_profile(const std::vector<ChaseRun>& chase, const std::vector<StreamRun>& stream,
                          tmmodel::Profile identity) {
  Fit fit;
  fit.profile = std::move(identity);
  tmmodel::Profile& p = fit.profile;

  // Thread level (Eq. 1): latency per access against the walk's histogram.
  std::vector<double> pooled_pred, pooled_meas;
  for (Storage s : {Storage::kImage, Storage::kBuffer}) {
    const std::vector<size_t> idx = indices_of(chase, s);
    std::vector<std::vector<double>> x;
    std::vector<double> y;
    std::vector<std::vector<double>> h(idx.size());
    for (size_t k = 0; k < idx.size(); ++k) {
      h[k] = tmmodel::cross_block_histogram(chase[idx[k]].walk);
      if (held_out(k)) continue;
      x.push_back(h[k]);
      y.push_back(chase[idx[k]].ns_per_access);
    }
    if (x.size() < static_cast<size_t>(tmmodel::kFeatureCount))
      return invalid_argument(std::string("too few ") + tmmodel::storage_name(s) + " chase runs to fit " +
                              std::to_string(tmmodel::kFeatureCount) + " weights");
    // A light ridge: the crossing fractions of nested block shapes are
    // strongly correlated, and short runs have few samples per weight.
    KILN_ASSIGN_OR_RETURN(std::vector<double> beta, least_squares(x, y, 0.05 * static_cast<double>(x.size())));
    (s == Storage::kImage ? p.beta_image : p.beta_buffer) = beta;
    std::vector<Prediction>& out = s == Storage::kImage ? fit.chase_image : fit.chase_buffer;
    std::vector<double> pred, meas;
    for (size_t k = 0; k < idx.size(); ++k) {
      out.push_back({tmmodel::thread_latency(beta, h[k]), chase[idx[k]].ns_per_access, held_out(k)});
      if (held_out(k)) pred.push_back(out.back().predicted), meas.push_back(out.back().measured);
    }
    (s == Storage::kImage ? p.spearman_image : p.spearman_buffer) = tmmodel::spearman(pred, meas);
    pooled_pred.insert(pooled_pred.end(), pred.begin(), pred.end());
    pooled_meas.insert(pooled_meas.end(), meas.begin(), meas.end());
  }
  p.spearman_thread = tmmodel::spearman(pooled_pred, pooled_meas);

  // Warp and work-group levels, alternately: each one's fit holds the
  // other's parameters (the runs of one work group of 256 already take
  // several waves on a device with few warps in flight).
  if (stream.empty()) return invalid_argument("no stream runs to fit the warp and work-group levels");
  int64_t fewest = stream[0].config.work_groups;
  for (const StreamRun& r : stream) fewest = std::min(fewest, r.config.work_groups);
  std::vector<size_t> warp_runs;
  for (size_t i = 0; i < stream.size(); ++i)
    if (!held_out(i) && stream[i].config.work_groups == fewest) warp_runs.push_back(i);
  if (warp_runs.size() < 4) return invalid_argument("too few single-work-group stream runs to fit the warp level");
  // The thread level is fixed from here: each run's walk latency once, not
  // per trial (with hundreds of work groups on a big GPU the group level's
  // trials are thousands, and a walk's histogram costs more than the rest).
  std::vector<double> walk_latency(stream.size());
  for (size_t i = 0; i < stream.size(); ++i) walk_latency[i] = tmmodel::stream_walk_latency(p, stream[i].config);
  for (int round = 0; round < 3; ++round) {
    fit_warp_level(p, stream, walk_latency, warp_runs, round > 0);
    fit_group_level(p, stream, walk_latency);
  }

  std::vector<double> pred, meas;
  for (size_t i = 0; i < stream.size(); ++i) {
    fit.stream.push_back({tmmodel::predict_stream_ns(p, stream[i].config), stream[i].ns, held_out(i)});
    if (held_out(i)) pred.push_back(fit.stream.back().predicted), meas.push_back(stream[i].ns);
  }
  p.spearman_integrated = tmmodel::spearman(pred, meas);
  return fit;
}

}  // namespace kiln::tune
