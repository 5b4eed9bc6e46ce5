// `kiln tune ...`: runs kiln-tune (tools/tune), TMModel's device
// characterization. It is a program of its own because it drives the Vulkan
// device directly, and this tool links no engine code (engine_free_test.sh).
// Looked up beside this executable (installed) or in the build tree's
// tools/tune; the arguments pass through unchanged.
//
// `kiln tune --exhaustive MODEL --profile P [...]` runs the exhaustive-search
// baseline instead (plugins/tmmodel/exhaustive.py, through python3), with
// this executable as the kiln it benchmarks with.
#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "tools/kiln/commands.h"

// The baseline script: in the source tree (a build-tree kiln) and installed
// beside the plugins' data (CMake sets both).
#ifndef KILN_TMMODEL_EXHAUSTIVE_SOURCE
#define KILN_TMMODEL_EXHAUSTIVE_SOURCE ""
#endif
#ifndef KILN_TMMODEL_EXHAUSTIVE_FROM_BINDIR
#define KILN_TMMODEL_EXHAUSTIVE_FROM_BINDIR "../share/kiln/tmmodel_exhaustive.py"
#endif

namespace kiln::cli {

namespace {

int exec_or_fail(const std::string& path, std::vector<std::string> args) {
  std::vector<char*> ptrs;
  for (std::string& a : args) ptrs.push_back(a.data());
  ptrs.push_back(nullptr);
  execv(path.c_str(), ptrs.data());
  return fail(unavailable("cannot run " + path + ": " + std::strerror(errno)));
}

int run_exhaustive(const std::string& self, const std::string& dir, const std::vector<std::string>& argv) {
  std::string script;
  for (const std::string& path : {dir + "/" + KILN_TMMODEL_EXHAUSTIVE_FROM_BINDIR, std::string(KILN_TMMODEL_EXHAUSTIVE_SOURCE)})
    if (!path.empty() && access(path.c_str(), R_OK) == 0) {
      script = path;
      break;
    }
  if (script.empty()) return fail(not_found("the exhaustive-search script (tmmodel_exhaustive.py) was not found"));
  if (argv.size() < 2) return usage_error("kiln tune --exhaustive MODEL --profile PROFILE.json [--repeat N] [--json OUT]");
  std::vector<std::string> args = {"python3", script, self};
  args.insert(args.end(), argv.begin() + 1, argv.end());
  for (const char* python : {"/usr/bin/python3", "/usr/local/bin/python3"})
    if (access(python, X_OK) == 0) return exec_or_fail(python, args);
  return fail(not_found("kiln tune --exhaustive needs python3 (looked in /usr/bin and /usr/local/bin)"));
}

}  // namespace

int cmd_tune(const std::vector<std::string>& argv) {
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  std::string dir = ".";
  if (n > 0) {
    self[n] = '\0';
    dir = self;
    dir = dir.substr(0, dir.rfind('/'));
  }
  if (!argv.empty() && argv[0] == "--exhaustive") return run_exhaustive(n > 0 ? self : "kiln", dir, argv);
  std::vector<std::string> tried;
  for (const std::string& path : {dir + "/kiln-tune", dir + "/../tune/kiln-tune"}) {
    tried.push_back(path);
    if (access(path.c_str(), X_OK) != 0) continue;
    std::vector<std::string> args = {"kiln-tune"};
    args.insert(args.end(), argv.begin(), argv.end());
    return exec_or_fail(path, args);
  }
  return fail(not_found("kiln-tune was not found (looked for " + tried[0] + " and " + tried[1] +
                        "); build or install it with the kiln tool"));
}

}  // namespace kiln::cli
