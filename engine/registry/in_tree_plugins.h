// Kiln's own optimization plugins (canonicalize, rdp, fusion, memplan, ...): where the
// host finds them. They are ordinary plugins, loaded by default from their
// shared libraries through the same loader and ABI a third party's plugin
// uses; an embedder who wants one self-contained binary configures the build
// with KILN_STATIC_PLUGINS=ON and they are linked in instead (a generated
// table, so no engine code names a plugin).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/kiln_plugin.h"

namespace kiln::registry {

struct LinkedInPlugin {
  const char* name;  // "kiln.rdp"
  kiln_plugin_query_fn query;
};

// The in-tree plugins linked into this binary: empty unless the build was
// configured with KILN_STATIC_PLUGINS=ON.
std::span<const LinkedInPlugin> linked_in_plugins();

// True for plugin names in Kiln's own namespace ("kiln.*"). Their passes are
// placed by the default pipeline's order; a third party's plugin carries its
// vendor's prefix and its passes are appended (style.md: pass names).
bool is_in_tree_plugin_name(std::string_view plugin_name);

// The directories the in-tree plugin files may live in, most specific first:
// `override_dir` when not empty; beside the module that holds this code
// (<libdir>/kiln/plugins next to libkiln.so, <bindir>/../lib/kiln/plugins
// for a program linking the engine); the build tree's plugin directory.
std::vector<std::string> in_tree_plugin_dir_candidates(const std::string& override_dir = {});

// The first candidate that exists, or "" when none does.
std::string in_tree_plugin_dir(const std::string& override_dir = {});

}  // namespace kiln::registry
