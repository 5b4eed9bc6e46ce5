// Golden tests for kiln.canonicalize: every testdata/*.kir file holds cases
// separated by `// -----`. A case is a text-IR graph plus directives:
//   // RUN: pass-a,pass-b        passes to run through the pass manager
//   // CHECK: text               must appear in the printed result, in order
//   // CHECK-NOT: text           must not appear between the neighbouring CHECKs
//   // ERROR: text               the pipeline must fail with this in its message
// Besides the text checks, a case whose inputs all have static f32 shapes is
// executed before and after the passes with the reference executor, and the
// outputs must agree: a rewrite that prints right but computes wrong fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <dirent.h>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "engine/ir/text.h"
#include "engine/registry/default_pipeline.h"
#include "engine/registry/pass_manager.h"
#include "engine/runtime/reference_executor.h"
#include "plugins/canonicalize/canonicalize.h"

namespace kiln::registry {
namespace {

struct Directive {
  enum Kind { kCheck, kCheckNot } kind;
  std::string text;
};

struct GoldenCase {
  std::string file;
  int index = 0;
  int line = 0;
  std::string graph_text;
  std::vector<std::string> passes;
  std::vector<Directive> directives;
  std::string expect_error;
};

// Readable names in gtest's failure lines instead of a byte dump.
void PrintTo(const GoldenCase& c, std::ostream* os) { *os << c.file << ":" << c.line; }

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

std::vector<GoldenCase> load_cases() {
  std::vector<GoldenCase> cases;
  std::vector<std::string> files;
  if (DIR* d = opendir(KILN_CANONICALIZE_TESTDATA)) {
    while (const dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 4 && n.compare(n.size() - 4, 4, ".kir") == 0) files.push_back(n);
    }
    closedir(d);
  }
  std::sort(files.begin(), files.end());
  for (const std::string& f : files) {
    std::ifstream in(std::string(KILN_CANONICALIZE_TESTDATA) + "/" + f);
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
      else if (take(t, "// RUN:", rest)) c.passes = split_pass_list(rest);
      else if (take(t, "// CHECK-NOT:", rest)) c.directives.push_back({Directive::kCheckNot, rest});
      else if (take(t, "// CHECK:", rest)) c.directives.push_back({Directive::kCheck, rest});
      else if (take(t, "// ERROR:", rest)) c.expect_error = rest;
      else if (t.rfind("//", 0) == 0) continue;
      else c.graph_text += line + "\n";
    }
    flush();
  }
  return cases;
}

// FileCheck-style matching; returns an empty string on success.
std::string match(const std::string& out, const std::vector<Directive>& directives) {
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

class CanonicalizeGolden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(CanonicalizeGolden, Matches) {
  const GoldenCase& c = GetParam();
  SCOPED_TRACE(c.file + ":" + std::to_string(c.line));
  PluginRegistry reg;
  Status loaded = reg.load_static(kiln_canonicalize_plugin_query, "static:kiln.canonicalize");
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  auto parsed = ir::parse_graph(c.graph_text);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  ir::Graph& graph = **parsed;
  const ir::Graph original = graph;
  PassManager pm(reg);
  PipelineOptions options;
  options.passes = c.passes;
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
  const std::string err = match(out, c.directives);
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

std::string case_name(const ::testing::TestParamInfo<GoldenCase>& info) {
  std::string n = info.param.file.substr(0, info.param.file.size() - 4) + "_" + std::to_string(info.param.index);
  for (char& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(Testdata, CanonicalizeGolden, ::testing::ValuesIn(load_cases()), case_name);

TEST(CanonicalizeGoldenFiles, Found) { EXPECT_GE(load_cases().size(), 10u); }

// The same plugin built as a shared library loads through dlopen; loading
// both the static and the shared copy is refused by name.
TEST(CanonicalizeShared, LoadsAndRuns) {
  PluginRegistry reg;
  Status s = reg.load_file(KILN_CANONICALIZE_SO);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(reg.plugins().size(), 1u);
  EXPECT_EQ(reg.plugins()[0].name, "kiln.canonicalize");
  EXPECT_NE(reg.find_pass("fold-constants"), nullptr);
  Status dup = reg.load_static(kiln_canonicalize_plugin_query, "static:kiln.canonicalize");
  EXPECT_FALSE(dup.ok());

  auto g = ir::parse_graph(R"(graph @g opset 17 {
  input %x : f32[2]
  %i = Identity(%x) : f32[2]
  %y = Relu(%i) : f32[2]
  return %y
}
)");
  ASSERT_TRUE(g.ok());
  PassManager pm(reg);
  PipelineOptions options;
  options.passes = {"remove-noops"};
  ASSERT_TRUE(pm.run(**g, options).ok());
  EXPECT_EQ(ir::print_graph(**g).find("Identity"), std::string::npos);
  EXPECT_EQ(pm.records()[0].statistics.at("noops-removed"), 1);
}

constexpr const char* kSmallModel = R"(graph @g opset 17 {
  input %x : f32[2]
  %i = Identity(%x) : f32[2]
  %dead = Exp(%i) : f32[2]
  %y = Relu(%i) : f32[2]
  return %y
}
)";

TEST(DefaultPipeline, RunsEveryPassInOrder) {
  auto g = ir::parse_graph(kSmallModel);
  ASSERT_TRUE(g.ok());
  PipelineOptions options;
  PipelineSetup setup;
  setup.load_environment = false;
  auto records = run_default_pipeline(**g, options, setup);
  ASSERT_TRUE(records.ok()) << records.status().message();
  // The default pipeline repeats until the graph stops shrinking: whole
  // rounds, each in the default order.
  const size_t n = default_pipeline().size();
  ASSERT_GE(records->size(), n);
  ASSERT_EQ(records->size() % n, 0u);
  for (size_t i = 0; i < records->size(); ++i) {
    EXPECT_EQ((*records)[i].name, default_pipeline()[i % n]);
    EXPECT_TRUE((*records)[i].committed);
  }
  const std::string out = ir::print_graph(**g);
  EXPECT_EQ(out.find("Identity"), std::string::npos) << out;
  EXPECT_EQ(out.find("Exp"), std::string::npos) << out;
}

TEST(DefaultPipeline, DisableAndSelect) {
  auto g = ir::parse_graph(kSmallModel);
  ASSERT_TRUE(g.ok());
  PipelineOptions options;
  options.disabled = {"remove-noops", "dce"};
  PipelineSetup setup;
  setup.load_environment = false;
  auto records = run_default_pipeline(**g, options, setup);
  ASSERT_TRUE(records.ok()) << records.status().message();
  EXPECT_EQ(records->size(), default_pipeline().size() - 2);
  const std::string out = ir::print_graph(**g);
  EXPECT_NE(out.find("Identity"), std::string::npos) << out;
  EXPECT_NE(out.find("Exp"), std::string::npos) << out;

  options.disabled.clear();
  options.passes = {"dce"};
  records = run_default_pipeline(**g, options, setup);
  ASSERT_TRUE(records.ok());
  EXPECT_EQ(ir::print_graph(**g).find("Exp"), std::string::npos);
}

TEST(DefaultPipeline, BadPluginFileIsAnError) {
  auto g = ir::parse_graph(kSmallModel);
  ASSERT_TRUE(g.ok());
  PipelineSetup setup;
  setup.load_environment = false;
  setup.plugin_files = {"/nonexistent/libacme.so"};
  auto records = run_default_pipeline(**g, PipelineOptions(), setup);
  ASSERT_FALSE(records.ok());
  EXPECT_NE(records.status().message().find("/nonexistent/libacme.so"), std::string::npos);
}

}  // namespace
}  // namespace kiln::registry
