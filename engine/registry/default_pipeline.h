// The standard compile pipeline: the in-tree plugins (loaded from their
// shared libraries like any third party's, or linked in when the build chose
// KILN_STATIC_PLUGINS), plugins from $KILN_PLUGIN_PATH and explicit files, and
// the default pass order. The engine session (libkiln, `kiln run`) calls it;
// --passes / --disable-pass / --plugin map onto PipelineOptions and
// PipelineSetup.
#pragma once

#include <string>
#include <vector>

#include "engine/base/status.h"
#include "engine/ir/graph.h"
#include "engine/registry/pass_manager.h"
#include "engine/registry/plugin_loader.h"

namespace kiln::registry {

struct PipelineSetup {
  std::vector<std::string> plugin_files;  // --plugin FILE (repeatable); a failure is an error
  // $KILN_PLUGIN_PATH; failures are warnings.
  bool load_environment = true;
  // Where Kiln's own plugin files are; "" searches the usual places
  // (in_tree_plugins.h). Not finding them is an error naming the places.
  std::string plugin_dir;
};

// The in-tree default pipeline's pass names, in order.
const std::vector<std::string>& default_pipeline();
// The default pipeline with `registry` loaded: the in-tree passes, then every
// pass of each third-party plugin (any name outside "kiln.*": from
// $KILN_PLUGIN_PATH, --plugin, or dropped in the plugin directory) in load
// order, so that loading a third-party plugin is enough to run it;
// --disable-pass NAME leaves one out. `integer_qdq` adds fuse-qdq before
// fold-constants (PipelineOptions::integer_qdq).
std::vector<std::string> default_pipeline(const PluginRegistry& registry, bool integer_qdq = false);

// Registers the in-tree plugins (linked-in copies first, then the files of
// the plugin directory whose names are not linked in), then the
// environment's and the given files. Errors: NOT_FOUND when no in-tree
// plugin can be found (the message lists where it looked), a given file that
// fails to load.
Status load_standard_plugins(PluginRegistry& registry, const PipelineSetup& setup, const LogFn& log);

// Runs options.passes once (or the default pipeline, minus options.disabled:
// the passes before "fusion" repeated until the graph stops shrinking, then
// the rest, the third-party plugins' passes included, once — again after
// more canonicalization only where they shrank the graph) on `graph` with
// the plugins of `registry`. On success returns the per-pass records (time,
// statistics) in the order they ran.
StatusOr<std::vector<PassRecord>> run_pipeline(const PluginRegistry& registry, ir::Graph& graph,
                                               const PipelineOptions& options);

// load_standard_plugins into a registry of its own, then run_pipeline.
StatusOr<std::vector<PassRecord>> run_default_pipeline(ir::Graph& graph, const PipelineOptions& options,
                                                       const PipelineSetup& setup = {});

}  // namespace kiln::registry
