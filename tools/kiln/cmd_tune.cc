// `kiln tune ...`: runs kiln-tune (tools/tune), TMModel's device
// characterization. It is a program of its own because it drives the Vulkan
// device directly, and this tool links no engine code (engine_free_test.sh).
// Looked up beside this executable (installed) or in the build tree's
// tools/tune; the arguments pass through unchanged.
#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "tools/kiln/commands.h"

namespace kiln::cli {

int cmd_tune(const std::vector<std::string>& argv) {
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  std::string dir = ".";
  if (n > 0) {
    self[n] = '\0';
    dir = self;
    dir = dir.substr(0, dir.rfind('/'));
  }
  std::vector<std::string> tried;
  for (const std::string& path : {dir + "/kiln-tune", dir + "/../tune/kiln-tune"}) {
    tried.push_back(path);
    if (access(path.c_str(), X_OK) != 0) continue;
    std::vector<char*> args;
    std::string name = "kiln-tune";
    args.push_back(name.data());
    std::vector<std::string> copy = argv;
    for (std::string& a : copy) args.push_back(a.data());
    args.push_back(nullptr);
    execv(path.c_str(), args.data());
    return fail(unavailable("cannot run " + path + ": " + std::strerror(errno)));
  }
  return fail(not_found("kiln-tune was not found (looked for " + tried[0] + " and " + tried[1] +
                        "); build or install it with the kiln tool"));
}

}  // namespace kiln::cli
