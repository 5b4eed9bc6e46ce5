// Golden pass tests shared by the in-tree plugins (MLIR's `cse.mlir` way):
// every testdata/*.kir file holds cases separated by `// -----`. A case is a
// text-IR graph plus directives:
//   // RUN: pass-a,pass-b        passes to run through the pass manager
//   // CHECK: text               must appear in the printed result, in order
//   // CHECK-NOT: text           must not appear between the neighbouring CHECKs
//   // ERROR: text               the pipeline must fail with this in its message
//   // TARGET: key=value ...     the device the passes compile for (target_info):
//                                device_type=N (VkPhysicalDeviceType), max_image=N,
//                                compute_units=N, storage=auto|buffer|image;
//                                without it, none
// Besides the text checks, a case whose inputs all have static f32 shapes is
// executed before and after the passes with the reference executor, and the
// outputs must agree: a rewrite that prints right but computes wrong fails.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "engine/base/status.h"
#include "engine/registry/plugin_loader.h"

namespace kiln::plugin_testing {

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
  std::string target;  // the // TARGET: line's text; empty: no device
};

// Readable names in gtest's failure lines instead of a byte dump.
void PrintTo(const GoldenCase& c, std::ostream* os);

// Every case of every *.kir file in `dir`, files in name order.
std::vector<GoldenCase> load_golden_cases(const std::string& dir);

// FileCheck-style matching of `out`; an empty string on success, else what failed.
std::string match_directives(const std::string& out, const std::vector<Directive>& directives);

// Runs one case with gtest assertions: `load` registers the plugins under
// test in a fresh registry, then the case's passes run and are checked.
using LoadPlugins = std::function<Status(registry::PluginRegistry&)>;
void run_golden_case(const GoldenCase& c, const LoadPlugins& load);

// "file_3" for a parameterized test's name.
std::string golden_case_name(const ::testing::TestParamInfo<GoldenCase>& info);

}  // namespace kiln::plugin_testing
