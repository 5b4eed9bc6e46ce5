// Where the in-tree plugin files live (see in_tree_plugins.h).
#include "engine/registry/in_tree_plugins.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>

// Relative paths from the installed library and executable directories to
// the plugin directory, and the build tree's plugin directory; CMake sets
// them (cmake/KilnInstall.cmake, engine/registry/CMakeLists.txt).
#ifndef KILN_PLUGIN_DIR_FROM_LIBDIR
#define KILN_PLUGIN_DIR_FROM_LIBDIR "kiln/plugins"
#endif
#ifndef KILN_PLUGIN_DIR_FROM_BINDIR
#define KILN_PLUGIN_DIR_FROM_BINDIR "../lib/kiln/plugins"
#endif
#ifndef KILN_BUILD_PLUGIN_DIR
#define KILN_BUILD_PLUGIN_DIR ""
#endif

namespace kiln::registry {
namespace {

bool is_directory(const std::string& path) {
  struct stat st;
  return !path.empty() && stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string normalized(const std::string& path) {
  char* resolved = realpath(path.c_str(), nullptr);
  if (!resolved) return path;
  std::string out = resolved;
  std::free(resolved);
  return out;
}

// The file of the shared object or program this function was linked into:
// libkiln.so for embedders, the executable for programs that link the
// engine statically (tests).
std::string this_module_path() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&this_module_path), &info) == 0 || !info.dli_fname) return {};
  return normalized(info.dli_fname);
}

bool is_shared_object(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string file = slash == std::string::npos ? path : path.substr(slash + 1);
  return file.find(".so") != std::string::npos;
}

}  // namespace

bool is_in_tree_plugin_name(std::string_view plugin_name) { return plugin_name.substr(0, 5) == "kiln."; }

std::vector<std::string> in_tree_plugin_dir_candidates(const std::string& override_dir) {
  std::vector<std::string> dirs;
  if (!override_dir.empty()) dirs.push_back(override_dir);
  const std::string module = this_module_path();
  const size_t slash = module.rfind('/');
  if (slash != std::string::npos) {
    const std::string dir = module.substr(0, slash);
    dirs.push_back(normalized(dir + "/" + (is_shared_object(module) ? KILN_PLUGIN_DIR_FROM_LIBDIR
                                                                     : KILN_PLUGIN_DIR_FROM_BINDIR)));
  }
  if (*KILN_BUILD_PLUGIN_DIR) dirs.push_back(KILN_BUILD_PLUGIN_DIR);
  return dirs;
}

std::string in_tree_plugin_dir(const std::string& override_dir) {
  for (const std::string& dir : in_tree_plugin_dir_candidates(override_dir))
    if (is_directory(dir)) return dir;
  return {};
}

}  // namespace kiln::registry
