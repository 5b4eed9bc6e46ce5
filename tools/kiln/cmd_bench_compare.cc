// `kiln bench compare FILE.json... [--out DIR] [--baseline N]`: puts several
// benchmark documents side by side — a ratio table on stdout, and
// compare.md (table, environments, commands) plus compare.svg (grouped bar
// chart) next to the first document or in --out.
//
// A "series" is one configuration that was measured: a whole
// kiln-bench-cli-v1 document (`kiln bench`: one device, precision and
// storage), or the records of one (engine, precision, storage) of a
// kiln-bench-v1 document (bench/kiln_runner.py, bench/torch_peer.py), so
// Kiln and PyTorch runs of the same machine compare directly. Models are the
// rows; the ratio is series median / baseline median (above 1 = slower).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "tools/kiln/cli_args.h"
#include "tools/kiln/commands.h"
#include "tools/kiln/json_reader.h"
#include "tools/kiln/svg.h"

namespace kiln::cli {
namespace {

struct Point {
  double median = 0, p10 = 0, p90 = 0;
  std::optional<double> gpu_median;
  bool noisy = false;
};

struct Series {
  std::string label;
  std::string configuration;  // the label before it was made unique: same value = same setup measured twice
  std::string file;     // the path given
  std::string schema;
  std::string command;  // how the document was produced
  std::vector<std::pair<std::string, std::string>> environment;  // flattened key: value
  std::vector<std::string> models;                               // in document order
  std::map<std::string, Point> points;                           // ok models only
  std::map<std::string, std::string> errors;                     // failed models: why
};

// ---- reading -----------------------------------------------------------------

std::string scalar_text(const JsonValue& v) {
  switch (v.kind) {
    case JsonValue::Kind::kNull: return "null";
    case JsonValue::Kind::kBool: return v.boolean ? "true" : "false";
    case JsonValue::Kind::kNumber: {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%.10g", v.number);
      return buf;
    }
    case JsonValue::Kind::kString: return v.string;
    default: return "";
  }
}

// Nested objects become "a.b: value"; arrays of scalars are joined.
void flatten(const JsonValue& v, const std::string& prefix, std::vector<std::pair<std::string, std::string>>& out) {
  if (v.is_object()) {
    for (const auto& [k, m] : v.members) flatten(m, prefix.empty() ? k : prefix + "." + k, out);
  } else if (v.is_array()) {
    std::string joined;
    for (const JsonValue& item : v.items)
      joined += (joined.empty() ? "" : ", ") + (item.is_object() || item.is_array() ? "{...}" : scalar_text(item));
    out.emplace_back(prefix, "[" + joined + "]");
  } else {
    out.emplace_back(prefix, scalar_text(v));
  }
}

// A `{median_ms, p10_ms, p90_ms}` holder (kiln-bench-cli-v1 "wall", or a
// kiln-bench-v1 record) as a Point; nullopt when a number is missing.
std::optional<Point> read_stats(const JsonValue* v) {
  if (!v) return std::nullopt;
  const double* median = v->get_number("median_ms");
  const double* p10 = v->get_number("p10_ms");
  const double* p90 = v->get_number("p90_ms");
  if (!median || !p10 || !p90) return std::nullopt;
  Point p;
  p.median = *median;
  p.p10 = *p10;
  p.p90 = *p90;
  const JsonValue* noisy = v->get("noisy");
  p.noisy = noisy && noisy->kind == JsonValue::Kind::kBool && noisy->boolean;
  return p;
}

StatusOr<Series> read_cli_v1(const JsonValue& doc, const std::string& path) {
  Series s;
  s.file = path;
  s.schema = "kiln-bench-cli-v1";
  const JsonValue* env = doc.get("environment");
  const JsonValue* models = doc.get("models");
  if (!env || !env->is_object()) return invalid_argument(path + ": no \"environment\" object");
  if (!models || !models->is_array()) return invalid_argument(path + ": no \"models\" array");
  flatten(*env, "", s.environment);
  if (const JsonValue* cmd = doc.get("command"); cmd && cmd->is_array()) {
    for (const JsonValue& a : cmd->items) s.command += (s.command.empty() ? "" : " ") + scalar_text(a);
  }
  const JsonValue* device = env->get("device");
  const std::string* backend = env->get_string("backend");
  std::string label = device && device->get_string("name") ? *device->get_string("name")
                                                           : (backend ? *backend : std::string("unknown"));
  for (const char* key : {"precision", "storage"})
    if (const std::string* v = env->get_string(key)) label += " " + *v;
  if (backend && *backend == "reference") label = "cpu (reference)";
  // A peer's document (bench/README.md "Peers") names its engine as the
  // backend; its device, if any, is the one Kiln ran on beside it.
  const std::string* tool = doc.get_string("tool");
  if (tool && *tool != "kiln bench" && backend) {
    label = *backend;
    if (const std::string* v = env->get_string("precision")) label += " " + *v;
  }
  s.label = label;
  for (size_t i = 0; i < models->items.size(); ++i) {
    const JsonValue& m = models->items[i];
    const std::string* name = m.get_string("model");
    if (!name) return invalid_argument(path + ": models[" + std::to_string(i) + "] has no \"model\" name");
    if (std::find(s.models.begin(), s.models.end(), *name) == s.models.end()) s.models.push_back(*name);
    const std::string* status = m.get_string("status");
    std::optional<Point> p = read_stats(m.get("wall"));
    if (!status || *status != "ok" || !p) {
      const std::string* err = m.get_string("error");
      s.errors[*name] = err ? *err : "no timing";
      continue;
    }
    if (std::optional<Point> gpu = read_stats(m.get("gpu"))) p->gpu_median = gpu->median;
    if (const JsonValue* noisy = m.get("noisy"); noisy && noisy->kind == JsonValue::Kind::kBool)
      p->noisy = noisy->boolean;
    s.points[*name] = *p;
  }
  return s;
}

// kiln-bench-v1 (bench/README.md): one series per (engine, precision,
// storage) in the order they first appear.
StatusOr<std::vector<Series>> read_peer_v1(const JsonValue& doc, const std::string& path) {
  const JsonValue* records = doc.get("records");
  if (!records || !records->is_array()) return invalid_argument(path + ": no \"records\" array");
  std::vector<std::pair<std::string, std::string>> environment;
  if (const JsonValue* host = doc.get("host")) flatten(*host, "", environment);
  if (const std::string* tool = doc.get_string("tool")) environment.insert(environment.begin(), {"tool", *tool});
  std::vector<Series> out;
  for (size_t i = 0; i < records->items.size(); ++i) {
    const JsonValue& r = records->items[i];
    const std::string* engine = r.get_string("engine");
    const std::string* model = r.get_string("model");
    if (!engine || !model)
      return invalid_argument(path + ": records[" + std::to_string(i) + "] lacks \"engine\" or \"model\"");
    std::string label = *engine;
    if (const std::string* p = r.get_string("precision")) label += " " + *p;
    const std::string* storage = r.get_string("storage");
    if (storage && engine->find(*storage) == std::string::npos) label += " " + *storage;
    auto it = std::find_if(out.begin(), out.end(), [&](const Series& s) { return s.label == label; });
    if (it == out.end()) {
      Series s;
      s.label = label;
      s.file = path;
      s.schema = "kiln-bench-v1";
      s.environment = environment;
      if (const std::string* device = r.get_string("device")) s.environment.emplace_back("device", *device);
      if (const std::string* cmd = doc.get_string("command")) s.command = *cmd;
      out.push_back(std::move(s));
      it = out.end() - 1;
    }
    if (std::find(it->models.begin(), it->models.end(), *model) == it->models.end()) it->models.push_back(*model);
    const std::string* status = r.get_string("status");
    std::optional<Point> p = read_stats(&r);
    if (!status || *status != "ok" || !p) {
      const std::string* err = r.get_string("error");
      it->errors[*model] = err ? *err : (status ? *status : "no timing");
      continue;
    }
    if (std::optional<Point> gpu = read_stats(r.get("gpu"))) p->gpu_median = gpu->median;
    // The peer schema has no noisy flag; apply kiln bench's rule.
    p->noisy = p->median > 0 && (p->p90 - p->p10) / p->median > 0.25;
    it->points[*model] = *p;
  }
  return out;
}

StatusOr<std::vector<Series>> read_document(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found(path + ": cannot open");
  std::stringstream buf;
  buf << in.rdbuf();
  auto doc = parse_json(buf.str());
  if (!doc.ok()) return invalid_argument(path + ": not valid JSON: " + doc.status().message());
  const std::string* schema = doc->get_string("schema");
  if (!schema) return invalid_argument(path + ": no \"schema\" field (expected kiln-bench-cli-v1 or kiln-bench-v1)");
  if (*schema == "kiln-bench-cli-v1") {
    KILN_ASSIGN_OR_RETURN(Series s, read_cli_v1(*doc, path));
    return std::vector<Series>{std::move(s)};
  }
  if (*schema == "kiln-bench-v1") return read_peer_v1(*doc, path);
  return invalid_argument(path + ": unknown schema '" + *schema + "' (expected kiln-bench-cli-v1 or kiln-bench-v1)");
}

// ---- formatting --------------------------------------------------------------

using svg::fmt;
using svg::xml_escape;

// Milliseconds with four significant digits: 0.001234 (a CPU add) and
// 16.63 (a transformer) both stay readable; no exponents.
std::string fmt(double v) { return std::fabs(v) >= 1000 ? fmt(v, "%.0f") : fmt(v, "%.4g"); }

std::optional<double> ratio(const Series& s, const Series& base, const std::string& model) {
  auto a = s.points.find(model), b = base.points.find(model);
  if (a == s.points.end() || b == base.points.end() || b->second.median <= 0) return std::nullopt;
  return a->second.median / b->second.median;
}

std::string md_escape(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c == '\n' ? ' ' : c);
  return out;
}

void print_table(const std::vector<Series>& series, const std::vector<std::string>& models, size_t base) {
  std::printf("series (ratio = median / median of [%zu]; above 1 = slower):\n", base + 1);
  for (size_t i = 0; i < series.size(); ++i)
    std::printf("  [%zu] %s  (%s)%s\n", i + 1, series[i].label.c_str(), series[i].file.c_str(),
                i == base ? "  baseline" : "");
  std::printf("%-24s %-5s %11s %21s %11s %8s  %s\n", "model", "ser", "median_ms", "p10-p90_ms", "gpu_ms", "ratio",
              "flags");
  for (const std::string& m : models) {
    for (size_t i = 0; i < series.size(); ++i) {
      const std::string name = i == 0 ? m : "";
      const std::string tag = "[" + std::to_string(i + 1) + "]";
      auto p = series[i].points.find(m);
      if (p == series[i].points.end()) {
        auto e = series[i].errors.find(m);
        std::printf("%-24s %-5s %11s %21s %11s %8s  %s\n", name.c_str(), tag.c_str(), "-", "-", "-", "-",
                    e == series[i].errors.end() ? "not measured" : "failed");
        continue;
      }
      const Point& pt = p->second;
      const std::optional<double> r = ratio(series[i], series[base], m);
      std::printf("%-24s %-5s %11s %21s %11s %8s  %s\n", name.c_str(), tag.c_str(), fmt(pt.median).c_str(),
                  (fmt(pt.p10) + "-" + fmt(pt.p90)).c_str(), pt.gpu_median ? fmt(*pt.gpu_median).c_str() : "-",
                  r ? (fmt(*r, "%.2f") + "x").c_str() : "-", pt.noisy ? "noisy" : "");
    }
  }
}

// Repeated runs of one configuration (same device, precision and storage,
// or same peer engine): per model, whether the two runs agree within the
// spread they report — their p10–p90 intervals overlap — and how far apart
// the medians are. Empty when no configuration was measured twice.
std::string agreement_markdown(const std::vector<Series>& series, const std::vector<std::string>& models) {
  std::string md;
  for (size_t i = 0; i < series.size(); ++i) {
    for (size_t j = i + 1; j < series.size(); ++j) {
      if (series[i].configuration != series[j].configuration) continue;
      size_t agree = 0, both = 0;
      std::string rows;
      for (const std::string& m : models) {
        auto a = series[i].points.find(m), b = series[j].points.find(m);
        if (a == series[i].points.end() || b == series[j].points.end()) continue;
        const Point& x = a->second;
        const Point& y = b->second;
        const bool overlap = x.p10 <= y.p90 && y.p10 <= x.p90;
        both += 1;
        agree += overlap ? 1 : 0;
        rows += "| " + md_escape(m) + " | " + fmt(x.median) + " (" + fmt(x.p10) + "–" + fmt(x.p90) + ") | " +
                fmt(y.median) + " (" + fmt(y.p10) + "–" + fmt(y.p90) + ") | " +
                fmt(100.0 * (y.median - x.median) / x.median, "%+.1f") + "% | " + (overlap ? "yes" : "**no**") +
                " |\n";
      }
      if (both == 0) continue;
      md += "\n## Run to run: [" + std::to_string(i + 1) + "] vs [" + std::to_string(j + 1) + "]\n\n" +
            md_escape(series[i].configuration) + " measured twice; the runs agree on a model when their p10–p90 " +
            "intervals overlap: **" + std::to_string(agree) + " of " + std::to_string(both) + "** do.\n\n" +
            "| model | [" + std::to_string(i + 1) + "] median (p10–p90) ms | [" + std::to_string(j + 1) +
            "] median (p10–p90) ms | Δ median | agree |\n|---|---:|---:|---:|---|\n" + rows;
    }
  }
  return md;
}

std::string markdown(const std::vector<Series>& series, const std::vector<std::string>& models, size_t base) {
  std::string md = "# kiln bench compare\n\n";
  md += "Median latency per model and series, ms, with p10–p90 and the GPU time where timestamps were taken. Ratio = the series' median wall time / "
        "the baseline's (**[" + std::to_string(base + 1) + "] " + md_escape(series[base].label) +
        "**); above 1 is slower. *noisy*: (p90 − p10) / median > 0.25 — measure again before citing.\n\n";
  md += "![median latency per model](compare.svg)\n\n";
  md += "| model | series | median ms | p10–p90 ms | GPU ms | ratio | |\n|---|---|---:|---:|---:|---:|---|\n";
  for (const std::string& m : models) {
    for (size_t i = 0; i < series.size(); ++i) {
      const std::string tag = "[" + std::to_string(i + 1) + "] " + md_escape(series[i].label);
      auto p = series[i].points.find(m);
      if (p == series[i].points.end()) {
        auto e = series[i].errors.find(m);
        md += "| " + md_escape(m) + " | " + tag + " | – | – | – | – | " +
              (e == series[i].errors.end() ? std::string("not measured") : "failed: " + md_escape(e->second)) +
              " |\n";
        continue;
      }
      const Point& pt = p->second;
      const std::optional<double> r = ratio(series[i], series[base], m);
      md += "| " + md_escape(m) + " | " + tag + " | " + fmt(pt.median) + " | " + fmt(pt.p10) + "–" + fmt(pt.p90) +
            " | " + (pt.gpu_median ? fmt(*pt.gpu_median) : "–") + " | " + (r ? fmt(*r, "%.2f") + "×" : "–") +
            " | " + (pt.noisy ? "*noisy*" : "") + " |\n";
    }
  }
  md += agreement_markdown(series, models);
  md += "\n## Environments\n";
  for (size_t i = 0; i < series.size(); ++i) {
    md += "\n### [" + std::to_string(i + 1) + "] " + md_escape(series[i].label) + "\n\n";
    md += "- file: `" + series[i].file + "` (" + series[i].schema + ")\n";
    for (const auto& [k, v] : series[i].environment) md += "- " + md_escape(k) + ": " + md_escape(v) + "\n";
  }
  md += "\n## Commands\n\n";
  std::vector<std::string> seen;
  for (const Series& s : series) {
    if (std::find(seen.begin(), seen.end(), s.file) != seen.end()) continue;
    seen.push_back(s.file);
    md += "`" + s.file + "`:\n\n```sh\n" + (s.command.empty() ? "(not recorded)" : s.command) + "\n```\n\n";
  }
  return md;
}

// A "nice" axis step (1, 2 or 5 times a power of ten) giving about 5 ticks.

std::string bars_svg(const std::vector<Series>& series, const std::vector<std::string>& models) {
  const double bar = std::clamp(480.0 / static_cast<double>(models.size() * series.size()), 8.0, 36.0);
  const double gap = bar * 1.2, left = 70, top = 50, plot_h = 300;
  const double group_w = bar * static_cast<double>(series.size());
  const double plot_w = std::max(300.0, static_cast<double>(models.size()) * (group_w + gap) + gap);
  const double legend_h = 18.0 * static_cast<double>(series.size()) + 10;
  const double width = left + plot_w + 20, height = top + plot_h + 90 + legend_h;
  double ymax = 0;
  for (const Series& s : series)
    for (const auto& [m, p] : s.points) ymax = std::max({ymax, p.p90, p.median});
  if (ymax <= 0) ymax = 1;
  const double step = svg::nice_step(ymax * 1.05);
  const double ytop = std::ceil(ymax * 1.05 / step) * step;
  auto y = [&](double v) { return top + plot_h - plot_h * std::clamp(v, 0.0, ytop) / ytop; };

  std::string o = svg::open(width, height);
  o += "<text x=\"" + fmt(width / 2, "%.1f") +
       "\" y=\"24\" text-anchor=\"middle\" font-size=\"16\">Median latency per model (ms), whiskers p10–p90</text>\n";
  // Axes, grid and y ticks.
  for (double t = 0; t <= ytop + step / 2; t += step) {
    o += "<line x1=\"" + fmt(left, "%.1f") + "\" x2=\"" + fmt(left + plot_w, "%.1f") + "\" y1=\"" + fmt(y(t), "%.1f") +
         "\" y2=\"" + fmt(y(t), "%.1f") + "\" stroke=\"#ddd\"/>\n";
    o += "<text x=\"" + fmt(left - 6, "%.1f") + "\" y=\"" + fmt(y(t) + 4, "%.1f") + "\" text-anchor=\"end\">" +
         fmt(t, "%g") + "</text>\n";
  }
  o += "<line x1=\"" + fmt(left, "%.1f") + "\" x2=\"" + fmt(left, "%.1f") + "\" y1=\"" + fmt(top, "%.1f") +
       "\" y2=\"" + fmt(top + plot_h, "%.1f") + "\" stroke=\"black\"/>\n";
  o += "<line x1=\"" + fmt(left, "%.1f") + "\" x2=\"" + fmt(left + plot_w, "%.1f") + "\" y1=\"" +
       fmt(top + plot_h, "%.1f") + "\" y2=\"" + fmt(top + plot_h, "%.1f") + "\" stroke=\"black\"/>\n";
  o += "<text transform=\"translate(18," + fmt(top + plot_h / 2, "%.1f") +
       ") rotate(-90)\" text-anchor=\"middle\">median latency (ms)</text>\n";
  // Bars: one group per model, one bar per series that measured it.
  for (size_t mi = 0; mi < models.size(); ++mi) {
    const double gx = left + gap + static_cast<double>(mi) * (group_w + gap);
    for (size_t si = 0; si < series.size(); ++si) {
      auto p = series[si].points.find(models[mi]);
      if (p == series[si].points.end()) continue;
      const Point& pt = p->second;
      const double x = gx + static_cast<double>(si) * bar, cx = x + bar / 2;
      // At least one pixel: a series 1000x faster than another still shows
      // a bar (its hover title holds the number).
      const double bar_h = std::max(1.0, top + plot_h - y(pt.median));
      o += "<rect class=\"bar\" x=\"" + fmt(x, "%.1f") + "\" y=\"" + fmt(top + plot_h - bar_h, "%.1f") +
           "\" width=\"" + fmt(bar - 1, "%.1f") + "\" height=\"" + fmt(bar_h, "%.1f") + "\" fill=\"" +
           svg::colour(si) + "\"><title>" + xml_escape(models[mi] + " — " + series[si].label + ": " +
                                                        fmt(pt.median) + " ms (p10 " + fmt(pt.p10) + ", p90 " +
                                                        fmt(pt.p90) + ")" + (pt.noisy ? ", noisy" : "")) +
           "</title></rect>\n";
      const std::string ys = fmt(y(pt.p10), "%.1f"), ye = fmt(y(pt.p90), "%.1f");
      const std::string cs = fmt(cx, "%.1f"), l = fmt(cx - bar / 4, "%.1f"), r = fmt(cx + bar / 4, "%.1f");
      o += "<g class=\"whisker\" stroke=\"#333\"><line x1=\"" + cs + "\" x2=\"" + cs + "\" y1=\"" + ys + "\" y2=\"" +
           ye + "\"/><line x1=\"" + l + "\" x2=\"" + r + "\" y1=\"" + ys + "\" y2=\"" + ys + "\"/><line x1=\"" + l +
           "\" x2=\"" + r + "\" y1=\"" + ye + "\" y2=\"" + ye + "\"/></g>\n";
    }
    const double lx = gx + group_w / 2, ly = top + plot_h + 14;
    o += "<text transform=\"translate(" + fmt(lx, "%.1f") + "," + fmt(ly, "%.1f") +
         ") rotate(-25)\" text-anchor=\"end\">" + xml_escape(models[mi]) + "</text>\n";
  }
  o += "<text x=\"" + fmt(left + plot_w / 2, "%.1f") + "\" y=\"" + fmt(top + plot_h + 78, "%.1f") +
       "\" text-anchor=\"middle\">model</text>\n";
  // Legend.
  for (size_t si = 0; si < series.size(); ++si) {
    const double ly = top + plot_h + 92 + 18.0 * static_cast<double>(si);
    o += "<rect class=\"legend\" x=\"" + fmt(left, "%.1f") + "\" y=\"" + fmt(ly, "%.1f") +
         "\" width=\"12\" height=\"12\" fill=\"" + svg::colour(si) + "\"/>\n";
    o += "<text x=\"" + fmt(left + 18, "%.1f") + "\" y=\"" + fmt(ly + 10, "%.1f") + "\">[" + std::to_string(si + 1) +
         "] " + xml_escape(series[si].label) + "</text>\n";
  }
  return o + svg::close();
}

Status write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (out) out << text;
  if (!out) return permission_denied("cannot write '" + path.string() + "'");
  return ok_status();
}

}  // namespace

int cmd_bench_compare(const std::vector<std::string>& argv) {
  auto args = Args::parse(argv, {"out", "baseline"}, {});
  if (!args.ok()) return fail(args.status());
  if (args->positionals().empty())
    return usage_error("kiln bench compare FILE.json... [--out DIR] [--baseline N]: no FILE given");
  std::vector<Series> series;
  for (const std::string& path : args->positionals()) {
    auto read = read_document(path);
    if (!read.ok()) return fail(read.status());
    for (Series& s : *read) series.push_back(std::move(s));
  }
  if (series.empty()) return fail(invalid_argument("the documents hold no series"));
  for (Series& s : series) s.configuration = s.label;
  // Same label twice (e.g. two runs on one device): say which file each is.
  for (Series& s : series) {
    const size_t same = static_cast<size_t>(
        std::count_if(series.begin(), series.end(), [&](const Series& o) { return o.configuration == s.configuration; }));
    if (same > 1) s.label += " — " + std::filesystem::path(s.file).filename().string();
  }
  for (size_t i = 0; i < series.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (series[i].label == series[j].label) series[i].label += " #" + std::to_string(i + 1);

  size_t base = 0;
  if (args->has("baseline")) {
    const std::string v = args->get("baseline");
    char* end = nullptr;
    const long n = std::strtol(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || n < 1 || static_cast<size_t>(n) > series.size())
      return fail(invalid_argument("--baseline expects a series number from 1 to " + std::to_string(series.size()) +
                                   ", got '" + v + "'"));
    base = static_cast<size_t>(n - 1);
  }

  // Rows: every model any series names, in first-seen order.
  std::vector<std::string> models;
  for (const Series& s : series)
    for (const std::string& m : s.models)
      if (std::find(models.begin(), models.end(), m) == models.end()) models.push_back(m);
  std::string files;
  for (const std::string& p : args->positionals()) files += (files.empty() ? "" : ", ") + p;
  if (std::all_of(series.begin(), series.end(), [](const Series& s) { return s.points.empty(); }))
    return fail(invalid_argument("no model was measured successfully in " + files));
  if (series.size() > 1) {
    const bool common = std::any_of(models.begin(), models.end(), [&](const std::string& m) {
      return std::count_if(series.begin(), series.end(), [&](const Series& s) { return s.points.count(m) > 0; }) >= 2;
    });
    if (!common) {
      return fail(invalid_argument("no common models: no model was measured successfully in two of the series (" +
                                   files + ")"));
    }
  }

  print_table(series, models, base);
  std::fflush(stdout);  // the table before the "wrote" line when both go to one terminal
  std::filesystem::path dir = args->has("out") ? std::filesystem::path(args->get("out"))
                                               : std::filesystem::path(args->positionals()[0]).parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return fail(permission_denied("--out: cannot create '" + dir.string() + "': " + ec.message()));
  if (Status s = write_text(dir / "compare.md", markdown(series, models, base)); !s.ok()) return fail(s);
  if (Status s = write_text(dir / "compare.svg", bars_svg(series, models)); !s.ok()) return fail(s);
  std::fprintf(stderr, "kiln: wrote %s and %s\n", (dir / "compare.md").string().c_str(),
               (dir / "compare.svg").string().c_str());
  return 0;
}

}  // namespace kiln::cli
