// The standard compile pipeline: the in-tree plugins (linked in, registered
// through the same ABI as any .so), plugins from $KILN_PLUGIN_PATH and
// explicit files, and the default pass order. This is what `kiln compile`
// and the session API call; --passes / --disable-pass / --plugin map onto
// PipelineOptions and PipelineSetup.
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
  // The installed plugin directory (PluginRegistry::installed_plugin_dir)
  // and $KILN_PLUGIN_PATH; failures are warnings.
  bool load_environment = true;
};

// The in-tree default pipeline's pass names, in order.
const std::vector<std::string>& default_pipeline();
// The default pipeline with `registry` loaded: the in-tree passes, then every
// pass of each plugin loaded from a file (installed directory,
// $KILN_PLUGIN_PATH, --plugin) in load order, so that loading a third-party
// plugin is enough to run it; --disable-pass NAME leaves one out.
std::vector<std::string> default_pipeline(const PluginRegistry& registry);

// Registers the in-tree plugins, then the environment's and the given files.
Status load_standard_plugins(PluginRegistry& registry, const PipelineSetup& setup, const LogFn& log);

// Runs options.passes (or the default pipeline, minus options.disabled) on
// `graph`. On success returns the per-pass records (time, statistics).
StatusOr<std::vector<PassRecord>> run_default_pipeline(ir::Graph& graph, const PipelineOptions& options,
                                                       const PipelineSetup& setup = {});

}  // namespace kiln::registry
