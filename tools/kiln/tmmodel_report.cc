// `kiln info --model`'s report of a TMModel profile (tmmodel_report.h).
#include "tools/kiln/tmmodel_report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "tools/kiln/svg.h"

namespace kiln::cli {

namespace {

using svg::fmt;
using svg::xml_escape;

struct Point {
  double x = 0, y = 0;
  bool hollow = false;  // held out of the fit
};

// One series of a panel: measured points, and the model's prediction at
// the same x as a line (none for a scatter of measured against predicted).
struct Series {
  std::string label;
  const char* colour = "#000000";
  bool dashed = false;
  std::vector<Point> measured;
  std::vector<Point> predicted;
};

struct Panel {
  std::string title, x_label, y_label;
  bool log2_x = false;
  bool diagonal = false;  // y = x, and both axes share the range
  std::vector<Series> series;
};

struct Range {
  double lo = 0, hi = 1, step = 0.2;
};

Range zero_based(double max) {
  if (!(max > 0)) max = 1;
  Range r;
  r.step = svg::nice_step(max * 1.05);
  r.hi = std::ceil(max * 1.05 / r.step) * r.step;
  return r;
}

std::string line(double x1, double y1, double x2, double y2, const std::string& attrs) {
  return "<line x1=\"" + fmt(x1, "%.1f") + "\" y1=\"" + fmt(y1, "%.1f") + "\" x2=\"" + fmt(x2, "%.1f") + "\" y2=\"" +
         fmt(y2, "%.1f") + "\" " + attrs + "/>\n";
}

std::string text(double x, double y, const std::string& anchor, const std::string& s, const std::string& extra = "") {
  return "<text x=\"" + fmt(x, "%.1f") + "\" y=\"" + fmt(y, "%.1f") + "\" text-anchor=\"" + anchor + "\"" + extra +
         ">" + xml_escape(s) + "</text>\n";
}

// A panel in the box (left, top, width, plot_height): axes with a grid,
// the series, and a legend under the x label. Returns the SVG and, in
// *legend_bottom, where the legend ends.
std::string draw_panel(const Panel& p, double left, double top, double width, double height, double* legend_bottom) {
  double xmin = INFINITY, xmax = 0, ymax = 0;
  for (const Series& s : p.series)
    for (const std::vector<Point>* pts : {&s.measured, &s.predicted})
      for (const Point& pt : *pts) {
        xmin = std::min(xmin, pt.x);
        xmax = std::max(xmax, pt.x);
        ymax = std::max(ymax, pt.y);
      }
  if (p.diagonal) ymax = xmax = std::max(xmax, ymax);
  const Range yr = zero_based(ymax);
  Range xr = p.diagonal ? yr : zero_based(xmax);
  if (p.log2_x) {
    xr.lo = std::floor(std::log2(std::max(1.0, xmin)));
    xr.hi = std::max(xr.lo + 1, std::ceil(std::log2(std::max(1.0, xmax))));
    xr.step = 1;
  }
  auto X = [&](double v) {
    const double u = p.log2_x ? std::log2(std::max(1.0, v)) : v;
    return left + width * (u - xr.lo) / (xr.hi - xr.lo);
  };
  auto Y = [&](double v) { return top + height - height * std::clamp(v, 0.0, yr.hi) / yr.hi; };

  std::string o = "<g class=\"panel\">\n";
  o += text(left + width / 2, top - 10, "middle", p.title, " font-size=\"13\" font-weight=\"bold\"");
  // Grid lines by an integer count (about five a range; the ranges are
  // finite, tmmodel_report_svg checks the values).
  const int y_lines = static_cast<int>(std::lround(yr.hi / yr.step));
  for (int i = 0; i <= y_lines; ++i) {
    const double t = i * yr.step;
    o += line(left, Y(t), left + width, Y(t), "stroke=\"#e4e4e4\"");
    o += text(left - 5, Y(t) + 4, "end", fmt(t, "%g"));
  }
  const int x_lines = static_cast<int>(std::lround((xr.hi - xr.lo) / xr.step));
  for (int i = 0; i <= x_lines; ++i) {
    const double t = xr.lo + i * xr.step;
    const double x = p.log2_x ? left + width * (t - xr.lo) / (xr.hi - xr.lo) : X(t);
    o += line(x, top, x, top + height, "stroke=\"#f0f0f0\"");
    o += text(x, top + height + 15, "middle", fmt(p.log2_x ? std::exp2(t) : t, "%g"));
  }
  o += line(left, top, left, top + height, "stroke=\"black\"");
  o += line(left, top + height, left + width, top + height, "stroke=\"black\"");
  o += text(left + width / 2, top + height + 32, "middle", p.x_label);
  o += "<text transform=\"translate(" + fmt(left - 42, "%.1f") + "," + fmt(top + height / 2, "%.1f") +
       ") rotate(-90)\" text-anchor=\"middle\">" + xml_escape(p.y_label) + "</text>\n";
  if (p.diagonal) o += line(X(0), Y(0), X(xr.hi), Y(yr.hi), "stroke=\"#888\" stroke-dasharray=\"4 3\"");
  const std::string dash = " stroke-dasharray=\"6 3\"";
  for (const Series& s : p.series) {
    if (s.predicted.size() > 1) {
      std::string pts;
      for (const Point& pt : s.predicted) pts += fmt(X(pt.x), "%.1f") + "," + fmt(Y(pt.y), "%.1f") + " ";
      o += "<polyline class=\"predicted\" fill=\"none\" stroke=\"" + std::string(s.colour) + "\" stroke-width=\"1.5\"" +
           (s.dashed ? dash : "") + " points=\"" + pts + "\"/>\n";
    }
    for (const Point& pt : s.measured)
      o += "<circle class=\"measured\" cx=\"" + fmt(X(pt.x), "%.1f") + "\" cy=\"" + fmt(Y(pt.y), "%.1f") +
           "\" r=\"2.6\" " +
           (pt.hollow ? "fill=\"white\" stroke=\"" + std::string(s.colour) + "\"" : "fill=\"" + std::string(s.colour) + "\"") +
           "/>\n";
  }
  // Legend under the axis label: two columns when the labels are short.
  size_t longest = 0;
  for (const Series& s : p.series) longest = std::max(longest, s.label.size());
  const size_t columns = longest <= 20 ? 2 : 1;
  double y = top + height + 50;
  for (size_t i = 0; i < p.series.size(); ++i) {
    const double x = left + (i % columns ? width / 2 : 0);
    const double ly = y + 16.0 * static_cast<double>(i / columns);
    o += line(x, ly - 4, x + 22, ly - 4,
              "stroke=\"" + std::string(p.series[i].colour) + "\" stroke-width=\"2\"" + (p.series[i].dashed ? dash : ""));
    o += text(x + 28, ly, "start", p.series[i].label);
  }
  *legend_bottom = y + 16.0 * static_cast<double>((p.series.size() + columns - 1) / columns);
  return o + "</g>\n";
}

// A measurement the chart can place: finite, not negative, below 1e12 ns
// (and a count that fits an int).
bool plausible(double v) { return std::isfinite(v) && v >= 0 && v < 1e12; }

// measurements.chase_<storage>: [[predicted, measured, held_out], ...].
StatusOr<Series> chase_series(const JsonValue& measurements, const std::string& storage, size_t index) {
  const JsonValue* runs = measurements.get("chase_" + storage);
  if (!runs || !runs->is_array()) return invalid_argument("the profile has no measurements.chase_" + storage);
  Series s;
  s.label = storage;
  s.colour = svg::colour(index);
  for (const JsonValue& r : runs->items) {
    if (!r.is_array() || r.items.size() != 3 || !r.items[0].is_number() || !r.items[1].is_number() ||
        !plausible(r.items[0].number) || !plausible(r.items[1].number))
      return invalid_argument("measurements.chase_" + storage +
                              " holds an entry that is not [predicted, measured, held_out] with finite ns below 1e12");
    s.measured.push_back({r.items[0].number, r.items[1].number, r.items[2].is_number() && r.items[2].number != 0});
  }
  return s;
}

struct StreamRun {
  std::string storage, pattern;
  int group_size = 0, work_groups = 0;
  double per_access_ns = 0, predicted_per_access_ns = 0;
  bool held_out = false;
};

StatusOr<std::vector<StreamRun>> stream_runs(const JsonValue& measurements) {
  const JsonValue* runs = measurements.get("stream");
  if (!runs || !runs->is_array()) return invalid_argument("the profile has no measurements.stream");
  std::vector<StreamRun> out;
  for (const JsonValue& r : runs->items) {
    const std::string* storage = r.get_string("storage");
    const std::string* pattern = r.get_string("pattern");
    const double* g = r.get_number("group_size");
    const double* wgs = r.get_number("work_groups");
    const double* steps = r.get_number("steps");
    const double* ns = r.get_number("ns");
    const double* predicted = r.get_number("predicted_ns");
    if (!storage || !pattern || !g || !wgs || !steps || !ns || !predicted || !(*steps >= 1) ||
        !plausible(*g) || !plausible(*wgs) || *g > 1e9 || *wgs > 1e9 || !plausible(*steps) || !plausible(*ns) ||
        !plausible(*predicted))
      return invalid_argument("measurements.stream holds a run without storage, pattern, group_size and "
                              "work_groups (positive counts), steps >= 1, and ns and predicted_ns (finite, below "
                              "1e12)");
    const JsonValue* held = r.get("held_out");
    out.push_back({*storage, *pattern, static_cast<int>(*g), static_cast<int>(*wgs), *ns / *steps, *predicted / *steps,
                   held && held->boolean});
  }
  return out;
}

std::string numbers(const JsonValue* v) {
  std::string s;
  if (!v || !v->is_array()) return "?";
  for (const JsonValue& x : v->items) s += (s.empty() ? "" : " ") + fmt(x.number, "%.3g");
  return s;
}

std::string number(const JsonValue& model, const char* key, const char* format = "%.3g") {
  const double* v = model.get_number(key);
  return v ? fmt(*v, format) : "?";
}

}  // namespace

StatusOr<std::string> tmmodel_report_text(const JsonValue& profile) {
  const std::string* format = profile.get_string("format");
  if (!format || *format != "kiln-tmmodel-profile-v1")
    return invalid_argument("not a kiln tune profile (\"format\" is not \"kiln-tmmodel-profile-v1\")");
  const JsonValue* model = profile.get("model");
  if (!model || !model->is_object()) return invalid_argument("the profile has no \"model\" object");
  auto str = [&](const char* key) {
    const std::string* s = model->get_string(key);
    return s ? *s : std::string("?");
  };
  std::string warps;
  if (const JsonValue* w = model->get("warps_in_flight"); w && w->is_object())
    for (const auto& [g, n] : w->members) warps += " G=" + g + ":" + fmt(n.number, "%g");
  const std::string* mode = profile.get_string("mode");
  const double* seconds = profile.get_number("tuning_seconds");
  std::string o = "device model (TMModel, kiln tune";
  o += (mode ? " --" + *mode : std::string()) + "): " + str("device") + " (" + str("driver") + "), kiln " +
       str("kiln") + (seconds ? ", tuned in " + fmt(*seconds, "%.1f") + " s" : std::string()) + "\n";
  o += "  beta_image (ns; 1, then x/y crossings of 4x1 8x8 16x16 64x64): " + numbers(model->get("beta_image_ns")) + "\n";
  o += "  beta_buffer (ns; 1, then x/y crossings of 4x1 8x8 16x16 64x64): " + numbers(model->get("beta_buffer_ns")) +
       "\n";
  o += "  thrash D " + number(*model, "thrash_d") + " over C = " + number(*model, "cache_lines", "%.0f") +
       " lines; stream scale image " + number(*model, "stream_scale_image") + " buffer " +
       number(*model, "stream_scale_buffer") + "\n";
  o += "  warps of " + number(*model, "warp_width", "%.0f") + " in flight:" + (warps.empty() ? " ?" : warps) + "\n";
  o += "  held-out Spearman: thread " + number(*model, "spearman_thread") + " (image " +
       number(*model, "spearman_image") + ", buffer " + number(*model, "spearman_buffer") + "), integrated " +
       number(*model, "spearman_integrated") + "\n";
  return o;
}

StatusOr<std::string> tmmodel_report_svg(const JsonValue& profile) {
  KILN_ASSIGN_OR_RETURN(const std::string summary, tmmodel_report_text(profile));
  const JsonValue* measurements = profile.get("measurements");
  if (!measurements || !measurements->is_object())
    return invalid_argument("the profile has no measurements to chart (a fixture, or not written by kiln tune)");

  Panel chase{"Pointer chase (thread level, Eq. 1)", "predicted ns per access", "measured ns per access", false, true, {}};
  for (const char* storage : {"image", "buffer"}) {
    KILN_ASSIGN_OR_RETURN(Series s, chase_series(*measurements, storage, chase.series.size()));
    s.label += " (" + std::to_string(s.measured.size()) + " runs; hollow: held out)";
    chase.series.push_back(std::move(s));
  }

  KILN_ASSIGN_OR_RETURN(const std::vector<StreamRun> runs, stream_runs(*measurements));
  if (runs.empty()) return invalid_argument("measurements.stream is empty");
  if (std::none_of(runs.begin(), runs.end(), [](const StreamRun& r) { return r.work_groups == 1; }))
    return invalid_argument("measurements.stream has no run of one work group (the warp level's)");
  std::vector<std::string> patterns;  // in the profile's order
  std::set<int> groups;
  for (const StreamRun& r : runs) {
    if (std::find(patterns.begin(), patterns.end(), r.pattern) == patterns.end()) patterns.push_back(r.pattern);
    groups.insert(r.group_size);
  }
  // One series per key, points in increasing x.
  auto series_of = [&](auto key_of, auto x_of, auto keep, auto style) {
    std::map<std::string, Series> by_key;
    std::vector<std::string> order;
    for (const StreamRun& r : runs) {
      if (!keep(r)) continue;
      const std::string key = key_of(r);
      auto [it, fresh] = by_key.try_emplace(key);
      if (fresh) {
        order.push_back(key);
        it->second.label = key;
        style(r, it->second);
      }
      it->second.measured.push_back({x_of(r), r.per_access_ns, r.held_out});
      it->second.predicted.push_back({x_of(r), r.predicted_per_access_ns, false});
    }
    std::vector<Series> out;
    for (const std::string& k : order) {
      Series s = std::move(by_key[k]);
      auto by_x = [](const Point& a, const Point& b) { return a.x < b.x; };
      std::sort(s.measured.begin(), s.measured.end(), by_x);
      std::sort(s.predicted.begin(), s.predicted.end(), by_x);
      out.push_back(std::move(s));
    }
    return out;
  };
  auto pattern_index = [&](const std::string& p) {
    return static_cast<size_t>(std::find(patterns.begin(), patterns.end(), p) - patterns.begin());
  };
  Panel warp{"One work group of G (warp level, Eq. 2)", "work-group size G (invocations)", "ns per access", true, false,
             series_of([](const StreamRun& r) { return r.storage + " " + r.pattern; },
                       [](const StreamRun& r) { return static_cast<double>(r.group_size); },
                       [](const StreamRun& r) { return r.work_groups == 1; },
                       [&](const StreamRun& r, Series& s) {
                         s.colour = svg::colour(pattern_index(r.pattern));
                         s.dashed = r.storage == "buffer";
                       })};
  const std::string pattern = patterns.front();
  Panel waves{"Work groups of G, " + pattern + " pattern (Eq. 4-7)", "work groups", "ns per access", false, false,
              series_of([](const StreamRun& r) { return r.storage + " G=" + std::to_string(r.group_size); },
                        [](const StreamRun& r) { return static_cast<double>(r.work_groups); },
                        [&](const StreamRun& r) { return r.pattern == pattern; },
                        [&](const StreamRun& r, Series& s) {
                          s.colour = svg::colour(static_cast<size_t>(
                              std::distance(groups.begin(), groups.find(r.group_size))));
                          s.dashed = r.storage == "buffer";
                        })};

  const double panel_w = 300, panel_h = 260, left = 70, gap = 90, top = 84;
  const double width = left + 3 * panel_w + 2 * gap + 30;
  std::string body;
  double bottom = 0;
  const Panel* panels[] = {&chase, &warp, &waves};
  for (size_t i = 0; i < 3; ++i) {
    double legend_bottom = 0;
    body += draw_panel(*panels[i], left + static_cast<double>(i) * (panel_w + gap), top, panel_w, panel_h,
                       &legend_bottom);
    bottom = std::max(bottom, legend_bottom);
  }
  std::string o = svg::open(width, bottom + 20);
  // The summary's first line is the title; the last (the fit's quality)
  // the subtitle.
  const std::string title = summary.substr(0, summary.find('\n'));
  std::string quality = summary.substr(0, summary.size() - 1);
  quality = quality.substr(quality.rfind('\n') + 1);
  o += text(width / 2, 24, "middle", title, " font-size=\"15\"");
  o += text(width / 2, 44, "middle", quality.substr(quality.find_first_not_of(' ')) +
                                        "; points measured, lines predicted, dashed: buffer");
  return o + body + svg::close();
}

}  // namespace kiln::cli
