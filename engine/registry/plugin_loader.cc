// Plugin loading and descriptor validation (see plugin_loader.h).
#include "engine/registry/plugin_loader.h"

#include "engine/base/file_checks.h"

#include <dirent.h>
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <set>

// Where the build puts the installed plugins relative to the installed
// executables (see cmake/KilnInstall.cmake); the default is the usual layout.
#ifndef KILN_PLUGIN_DIR_FROM_BINDIR
#define KILN_PLUGIN_DIR_FROM_BINDIR "../lib/kiln/plugins"
#endif

namespace kiln::registry {
namespace {

// Sizes of the 1.0 layouts. A plugin built against 1.0 has at least these;
// later minors only append, so these constants never change.
constexpr size_t kPluginLayout10 = sizeof(kiln_plugin_t);
constexpr size_t kPassLayout10 = sizeof(kiln_pass_t);

std::string version_string(uint32_t v) {
  return std::to_string(KILN_PLUGIN_ABI_VERSION_MAJOR(v)) + "." + std::to_string(KILN_PLUGIN_ABI_VERSION_MINOR(v));
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

PluginRegistry::~PluginRegistry() {
  for (auto it = plugins_.rbegin(); it != plugins_.rend(); ++it)
    if (it->handle) dlclose(it->handle);
}

Status PluginRegistry::load_file(const std::string& path) { return load_file_impl(path, false); }

Status PluginRegistry::load_file_impl(const std::string& path, bool keep_linked_in) {
  // dlopen of a FIFO blocks and of a device reads without end: a path is
  // checked first (a bare name is left to dlopen's library search).
  if (path.find('/') != std::string::npos) {
    Status file = check_regular_file(path, "plugin");
    if (!file.ok()) return file;
  }
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* err = dlerror();
    return not_found("plugin '" + path + "' cannot be loaded: " + (err ? err : "dlopen failed"));
  }
  dlerror();
  void* sym = dlsym(handle, "kiln_plugin_query");
  if (!sym) {
    // dlerror's string does not survive dlclose: copy it first.
    const char* err = dlerror();
    const std::string reason = err ? err : "symbol not found";
    dlclose(handle);
    return invalid_argument("plugin '" + path + "' refused: it exports no kiln_plugin_query (" + reason + ")");
  }
  auto query = reinterpret_cast<kiln_plugin_query_fn>(sym);
  const kiln_plugin_t* descriptor = query(KILN_PLUGIN_ABI_VERSION);
  if (keep_linked_in && descriptor && descriptor->struct_size >= kPluginLayout10 && descriptor->name) {
    for (const LoadedPlugin& p : plugins_) {
      if (p.handle == nullptr && p.name == descriptor->name) {
        dlclose(handle);
        return ok_status();
      }
    }
  }
  Status s = add(descriptor, path, handle);
  if (!s.ok()) dlclose(handle);
  return s;
}

Status PluginRegistry::load_static(kiln_plugin_query_fn query, const std::string& origin) {
  if (!query) return invalid_argument("plugin '" + origin + "' refused: no query function");
  return add(query(KILN_PLUGIN_ABI_VERSION), origin, nullptr);
}

Status PluginRegistry::add(const kiln_plugin_t* d, const std::string& origin, void* handle) {
  const std::string host = version_string(KILN_PLUGIN_ABI_VERSION);
  if (!d)
    return failed_precondition("plugin '" + origin + "' refused: kiln_plugin_query returned NULL (it speaks no ABI " +
                               "this Kiln, ABI " + host + ", accepts)");
  if (d->struct_size < kPluginLayout10)
    return invalid_argument("plugin '" + origin + "' refused: descriptor struct_size " +
                            std::to_string(d->struct_size) + " is smaller than the 1.0 layout " +
                            std::to_string(kPluginLayout10));
  const std::string label = d->name && *d->name ? std::string(d->name) : origin;
  const uint32_t v = d->abi_version;
  if (KILN_PLUGIN_ABI_VERSION_MAJOR(v) != KILN_PLUGIN_ABI_MAJOR ||
      KILN_PLUGIN_ABI_VERSION_MINOR(v) > KILN_PLUGIN_ABI_MINOR)
    return failed_precondition("plugin '" + label + "' (" + origin + ") speaks ABI " + version_string(v) +
                               ", this Kiln speaks " + host);
  if (!d->name || !*d->name) return invalid_argument("plugin '" + origin + "' refused: it has no name");
  for (const LoadedPlugin& p : plugins_)
    if (p.name == d->name)
      return invalid_argument("plugin '" + label + "' (" + origin + ") refused: a plugin of that name is already " +
                              "loaded from " + p.origin);
  if (d->pass_count > 0 && !d->passes)
    return invalid_argument("plugin '" + label + "' refused: pass_count is " + std::to_string(d->pass_count) +
                            " but passes is NULL");
  std::set<std::string> names;
  for (size_t i = 0; i < d->pass_count; ++i) {
    const kiln_pass_t* p = d->passes[i];
    const std::string where = "plugin '" + label + "' refused: pass " + std::to_string(i);
    if (!p) return invalid_argument(where + " is NULL");
    if (p->struct_size < kPassLayout10)
      return invalid_argument(where + ": struct_size " + std::to_string(p->struct_size) +
                              " is smaller than the 1.0 layout " + std::to_string(kPassLayout10));
    if (!p->name || !*p->name) return invalid_argument(where + " has an empty name");
    if (!p->run) return invalid_argument(where + " ('" + p->name + "') has no run function");
    if (!names.insert(p->name).second || find_pass(p->name))
      return invalid_argument(where + ": pass name '" + p->name + "' is not unique");
  }
  LoadedPlugin loaded;
  loaded.name = d->name;
  loaded.version = d->version ? d->version : "";
  loaded.origin = origin;
  loaded.descriptor = d;
  loaded.handle = handle;
  KILN_ASSIGN_OR_RETURN(loaded.backend, backend_of(*d, label));
  if (loaded.backend && find_backend(loaded.backend->name))
    return invalid_argument("plugin '" + label + "' refused: a backend named '" + loaded.backend->name +
                            "' is already loaded");
  plugins_.push_back(std::move(loaded));
  return ok_status();
}

StatusOr<const kiln_backend_v1_t*> PluginRegistry::backend_of(const kiln_plugin_t& d, const std::string& label) {
  if (!KILN_PLUGIN_HAS_FIELD(&d, kiln_plugin_t, get_interface) || !d.get_interface) return nullptr;
  const auto* b = static_cast<const kiln_backend_v1_t*>(d.get_interface(KILN_INTERFACE_BACKEND_V1));
  if (!b) return nullptr;
  const std::string where = "plugin '" + label + "' refused: its " + KILN_INTERFACE_BACKEND_V1;
  if (!KILN_PLUGIN_HAS_FIELD(b, kiln_backend_v1_t, destroy))
    return invalid_argument(where + " struct_size " + std::to_string(b->struct_size) + " is too small");
  if (!b->name || !*b->name) return invalid_argument(where + " has no name");
  if (!b->compile || !b->run || !b->destroy) return invalid_argument(where + " lacks compile, run or destroy");
  return b;
}

const kiln_backend_v1_t* PluginRegistry::find_backend(std::string_view name) const {
  for (const LoadedPlugin& p : plugins_)
    if (p.backend && name == p.backend->name) return p.backend;
  return nullptr;
}

void PluginRegistry::load_directory(const std::string& dir, bool keep_linked_in, std::string& errors) {
  DIR* dp = opendir(dir.c_str());
  if (!dp) {
    errors += (errors.empty() ? "" : "; ") + std::string("plugin directory '") + dir + "' cannot be read";
    return;
  }
  std::vector<std::string> files;
  while (const dirent* e = readdir(dp)) {
    std::string name = e->d_name;
    if (ends_with(name, ".so")) files.push_back(dir + "/" + name);
  }
  closedir(dp);
  std::sort(files.begin(), files.end());
  for (const std::string& f : files) {
    Status s = load_file_impl(f, keep_linked_in);
    if (!s.ok()) errors += (errors.empty() ? "" : "; ") + s.message();
  }
}

Status PluginRegistry::load_search_path(std::string_view dirs) {
  std::string errors;
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string_view::npos) end = dirs.size();
    const std::string dir(dirs.substr(start, end - start));
    start = end + 1;
    if (!dir.empty()) load_directory(dir, false, errors);
  }
  if (!errors.empty()) return invalid_argument(errors);
  return ok_status();
}

Status PluginRegistry::load_from_environment() {
  const char* path = std::getenv("KILN_PLUGIN_PATH");
  if (!path || !*path) return ok_status();
  return load_search_path(path);
}

Status PluginRegistry::load_installed(const std::string& dir) {
  struct stat st;
  if (dir.empty() || stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return ok_status();
  std::string errors;
  load_directory(dir, true, errors);
  if (!errors.empty()) return invalid_argument(errors);
  return ok_status();
}

std::string PluginRegistry::installed_plugin_dir() {
  // /proc/self/exe names the running program even when it was started
  // through a symlink or a relative path.
  std::string exe(4096, '\0');
  const ssize_t n = readlink("/proc/self/exe", exe.data(), exe.size());
  if (n <= 0 || static_cast<size_t>(n) >= exe.size()) return {};
  exe.resize(static_cast<size_t>(n));
  const size_t slash = exe.rfind('/');
  if (slash == std::string::npos) return {};
  const std::string dir = exe.substr(0, slash) + "/" + KILN_PLUGIN_DIR_FROM_BINDIR;
  // Without the "bin/.." detour, for `kiln passes` and error messages.
  char* resolved = realpath(dir.c_str(), nullptr);
  if (!resolved) return dir;
  std::string out = resolved;
  std::free(resolved);
  return out;
}

const kiln_pass_t* PluginRegistry::find_pass(std::string_view name) const {
  for (const LoadedPlugin& p : plugins_)
    for (size_t i = 0; i < p.descriptor->pass_count; ++i)
      if (name == p.descriptor->passes[i]->name) return p.descriptor->passes[i];
  return nullptr;
}

std::vector<const kiln_pass_t*> PluginRegistry::passes() const {
  std::vector<const kiln_pass_t*> out;
  for (const LoadedPlugin& p : plugins_)
    for (size_t i = 0; i < p.descriptor->pass_count; ++i) out.push_back(p.descriptor->passes[i]);
  return out;
}

}  // namespace kiln::registry
