// The golden-test harness shared by the in-tree plugins; see golden_harness.h.
#include "plugins/testing/golden_harness.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <dirent.h>
#include <fstream>
#include <optional>
#include <sstream>

#include "engine/ir/text.h"
#include "engine/registry/pass_manager.h"
#include "engine/runtime/reference_executor.h"

namespace kiln::plugin_testing {
namespace {

std::string trim(std::string s) {
  s.erase(0, s.find_first_not_of(" \t"));
  s.erase(s.find_last_not_of(" \t\r") + 1);
  return s;
}

bool take(const std::string& line, const char* prefix, std::string& rest) {
  const std::string p = prefix;
  if (line.rfind(p, 0) != 0) return false;
  rest = trim(line.substr(p.size()));
  return true;
}

// Deterministic inputs for every main-graph input, if all are static f32.
std::optional<std::vector<Tensor>> make_inputs(const ir::Graph& g) {
  std::vector<Tensor> inputs;
  for (ir::ValueId id : g.main().inputs) {
    const ir::Value& v = g.value(id);
    if (v.dtype != DType::kFloat32 || !v.shape.is_static()) return std::nullopt;
    auto t = Tensor::allocate(DType::kFloat32, v.shape.concrete());
    if (!t.ok()) return std::nullopt;
    float* p = t->data<float>();
    for (int64_t i = 0; i < t->numel(); ++i) p[i] = static_cast<float>(std::sin(0.7 * static_cast<double>(i) + 0.3));
    inputs.push_back(std::move(*t));
  }
  return inputs;
}

}  // namespace

void PrintTo(const GoldenCase& c, std::ostream* os) { *os << c.file << ":" << c.line; }

std::vector<GoldenCase> load_golden_cases(const std::string& dir) {
  std::vector<GoldenCase> cases;
  std::vector<std::string> files;
  if (DIR* d = opendir(dir.c_str())) {
    while (const dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 4 && n.compare(n.size() - 4, 4, ".kir") == 0) files.push_back(n);
    }
    closedir(d);
  }
  std::sort(files.begin(), files.end());
  for (const std::string& f : files) {
    std::ifstream in(dir + "/" + f);
    GoldenCase c;
    c.file = f;
    c.line = 1;
    std::string line;
    int lineno = 0;
    auto flush = [&] {
      if (!trim(c.graph_text).empty()) cases.push_back(c);
      const int next = static_cast<int>(c.index) + 1;
      c = GoldenCase();
      c.file = f;
      c.index = next;
      c.line = lineno + 1;
    };
    while (std::getline(in, line)) {
      ++lineno;
      const std::string t = trim(line);
      std::string rest;
      if (t == "// -----") flush();
      else if (take(t, "// RUN:", rest)) c.passes = registry::split_pass_list(rest);
      else if (take(t, "// CHECK-NOT:", rest)) c.directives.push_back({Directive::kCheckNot, rest});
      else if (take(t, "// CHECK:", rest)) c.directives.push_back({Directive::kCheck, rest});
      else if (take(t, "// ERROR:", rest)) c.expect_error = rest;
      else if (take(t, "// TARGET:", rest)) c.target = rest;
      else if (t.rfind("//", 0) == 0) continue;
      else c.graph_text += line + "\n";
    }
    flush();
  }
  return cases;
}

std::string match_directives(const std::string& out, const std::vector<Directive>& directives) {
  size_t pos = 0;
  std::vector<std::string> pending_not;
  auto check_nots = [&](size_t end) -> std::string {
    for (const std::string& n : pending_not) {
      size_t at = out.find(n, pos);
      if (at != std::string::npos && at < end) return "CHECK-NOT: '" + n + "' found";
    }
    pending_not.clear();
    return "";
  };
  for (const Directive& d : directives) {
    if (d.kind == Directive::kCheckNot) {
      pending_not.push_back(d.text);
      continue;
    }
    size_t at = out.find(d.text, pos);
    if (at == std::string::npos) return "CHECK: '" + d.text + "' not found (in order)";
    if (std::string e = check_nots(at); !e.empty()) return e;
    pos = at + d.text.size();
  }
  return check_nots(out.size());
}

namespace {

// The // TARGET: line as target_info reports it; an unknown key fails the case.
std::optional<kiln_target_info_t> parse_target(const std::string& text) {
  if (trim(text).empty()) return std::nullopt;
  kiln_target_info_t t{};
  t.struct_size = sizeof(t);
  t.max_image_dimension_2d = 16384;
  t.storage_mode = KILN_STORAGE_MODE_AUTO;
  std::istringstream in(text);
  std::string item;
  while (in >> item) {
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq), value = eq == std::string::npos ? "" : item.substr(eq + 1);
    if (key == "device_type") t.device_type = std::stoi(value);
    else if (key == "max_image") t.max_image_dimension_2d = static_cast<uint32_t>(std::stoul(value));
    else if (key == "compute_units") t.compute_units = static_cast<uint32_t>(std::stoul(value));
    else if (key == "storage" && value == "auto") t.storage_mode = KILN_STORAGE_MODE_AUTO;
    else if (key == "storage" && value == "buffer") t.storage_mode = KILN_STORAGE_MODE_BUFFER;
    else if (key == "storage" && value == "image") t.storage_mode = KILN_STORAGE_MODE_IMAGE;
    else ADD_FAILURE() << "unknown TARGET item '" << item << "'";
  }
  return t;
}

}  // namespace

void run_golden_case(const GoldenCase& c, const LoadPlugins& load) {
  SCOPED_TRACE(c.file + ":" + std::to_string(c.line));
  registry::PluginRegistry reg;
  Status loaded = load(reg);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  auto parsed = ir::parse_graph(c.graph_text);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  ir::Graph& graph = **parsed;
  const ir::Graph original = graph;
  registry::PassManager pm(reg);
  registry::PipelineOptions options;
  options.passes = c.passes;
  options.target = parse_target(c.target);
  std::vector<std::string> warnings;
  options.log = [&](kiln_log_level_t level, const std::string& m) {
    if (level >= KILN_LOG_WARNING) warnings.push_back(m);
  };
  ASSERT_FALSE(c.passes.empty()) << "case has no // RUN: line";
  Status s = pm.run(graph, options);
  if (!c.expect_error.empty()) {
    ASSERT_FALSE(s.ok()) << "expected an error containing '" << c.expect_error << "'";
    EXPECT_NE(s.message().find(c.expect_error), std::string::npos) << s.message();
    return;
  }
  ASSERT_TRUE(s.ok()) << s.message();
  for (const std::string& w : warnings) ADD_FAILURE() << "warning: " << w;
  ir::PrintOptions print;
  print.print_locations = false;
  const std::string out = ir::print_graph(graph, print);
  const std::string err = match_directives(out, c.directives);
  EXPECT_TRUE(err.empty()) << err << "\n--- output ---\n" << out;
  // The printed result parses back.
  auto reparsed = ir::parse_graph(ir::print_graph(graph));
  EXPECT_TRUE(reparsed.ok()) << reparsed.status().message();

  if (auto inputs = make_inputs(original)) {
    auto want = runtime::ReferenceExecutor(original).run(*inputs);
    auto got = runtime::ReferenceExecutor(graph).run(*inputs);
    ASSERT_TRUE(want.ok()) << want.status().message();
    ASSERT_TRUE(got.ok()) << got.status().message();
    ASSERT_EQ(want->size(), got->size());
    for (size_t i = 0; i < want->size(); ++i) {
      ASSERT_EQ((*want)[i].shape(), (*got)[i].shape());
      ASSERT_EQ((*want)[i].dtype(), (*got)[i].dtype());
      for (int64_t k = 0; k < (*want)[i].numel(); ++k)
        ASSERT_NEAR((*want)[i].get_f64(k), (*got)[i].get_f64(k), 1e-4 + 1e-4 * std::fabs((*want)[i].get_f64(k)))
            << "output " << i << " element " << k;
    }
  }
}

std::string golden_case_name(const ::testing::TestParamInfo<GoldenCase>& info) {
  std::string n = info.param.file.substr(0, info.param.file.size() - 4) + "_" + std::to_string(info.param.index);
  for (char& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
}

}  // namespace kiln::plugin_testing
