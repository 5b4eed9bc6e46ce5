// Loads plugins (shared libraries or linked-in query functions) and checks
// that what they describe is something this host can run.
//
// Everything the host reads from a plugin goes through the same validation,
// whether the plugin came from dlopen or from a static registration, so the
// in-tree plugins exercise exactly the ABI third parties use.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/base/status.h"
#include "kiln/kiln_plugin.h"

namespace kiln::registry {

struct LoadedPlugin {
  std::string name;
  std::string version;
  std::string origin;  // file path, or "static:<name>" for linked-in plugins
  const kiln_plugin_t* descriptor = nullptr;
  void* handle = nullptr;  // dlopen handle; null for static plugins
  // The backend it offers through get_interface(KILN_INTERFACE_BACKEND_V1), or null.
  const kiln_backend_v1_t* backend = nullptr;
};

class PluginRegistry {
 public:
  PluginRegistry() = default;
  ~PluginRegistry();
  PluginRegistry(const PluginRegistry&) = delete;
  PluginRegistry& operator=(const PluginRegistry&) = delete;

  // dlopens `path`, finds kiln_plugin_query and registers what it returns.
  Status load_file(const std::string& path);
  // Registers a linked-in plugin through its query function.
  Status load_static(kiln_plugin_query_fn query, const std::string& origin);
  // Loads every *.so (sorted by name) in each directory of a colon-separated
  // list. Good plugins are kept even when others fail; the error lists every
  // failure.
  Status load_search_path(std::string_view dirs);
  // load_search_path($KILN_PLUGIN_PATH); OK when the variable is unset.
  Status load_from_environment();
  // Loads every *.so in `dir` like load_search_path, with two differences
  // that fit the directory an installed Kiln ships its plugins in: a missing
  // directory is not an error (a build tree has none), and a plugin whose
  // name is already registered from a linked-in copy is skipped, since the
  // in-tree plugins are installed both linked into the tools and as files
  // for other hosts.
  Status load_installed(const std::string& dir);
  // The plugin directory of an installed Kiln relative to the running
  // program: <directory of the executable>/KILN_PLUGIN_DIR_FROM_BINDIR
  // (../lib/kiln/plugins for the usual layout). Empty if the executable's
  // path cannot be read.
  static std::string installed_plugin_dir();

  const std::vector<LoadedPlugin>& plugins() const { return plugins_; }
  // The pass with this name, or null.
  const kiln_pass_t* find_pass(std::string_view name) const;
  // Every pass of every plugin, in load order.
  std::vector<const kiln_pass_t*> passes() const;
  // The backend of this name a loaded plugin offers, or null.
  const kiln_backend_v1_t* find_backend(std::string_view name) const;

 private:
  Status add(const kiln_plugin_t* descriptor, const std::string& origin, void* handle);
  // The descriptor's checked backend interface, null when it offers none.
  static StatusOr<const kiln_backend_v1_t*> backend_of(const kiln_plugin_t& d, const std::string& label);
  // load_file; with keep_linked_in, a plugin named like a linked-in one is
  // unloaded again and OK is returned.
  Status load_file_impl(const std::string& path, bool keep_linked_in);
  // Loads the *.so files of one directory, appending failures to `errors`.
  void load_directory(const std::string& dir, bool keep_linked_in, std::string& errors);

  std::vector<LoadedPlugin> plugins_;
};

}  // namespace kiln::registry
