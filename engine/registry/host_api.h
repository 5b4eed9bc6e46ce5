// The host side of the plugin ABI: kiln_host_api_t over an ir::Graph.
//
// A pass runs against a working copy of the graph; the view and the rewriter
// both refer to that copy, so a pass sees its own edits. The caller's graph is
// replaced only when the pass succeeds, every rewriter call succeeded, and the
// copy verifies and re-infers its shapes — otherwise it is left untouched.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "engine/base/status.h"
#include "engine/ir/graph.h"
#include "kiln/kiln_plugin.h"

namespace kiln::registry {

using LogFn = std::function<void(kiln_log_level_t level, const std::string& message)>;

// The function table handed to plugins. Static; valid for the process.
const kiln_host_api_t* host_api();

struct PassRunResult {
  bool committed = false;
  std::map<std::string, int64_t> statistics;
};

// Runs `pass` on `graph` and commits its edits if everything checks out.
// Errors name the pass: its own status, a failed rewriter call, a verifier
// or shape-inference failure of the edited graph. `log` receives the
// plugin's log messages (may be empty). `target`: the device the pipeline
// compiles for, which the pass reads through kiln_host_api_t::target_info
// (null: none; borrowed for the call).
StatusOr<PassRunResult> run_pass(const kiln_pass_t& pass, ir::Graph& graph, const LogFn& log,
                                 const kiln_target_info_t* target = nullptr);

// Calls `fn` with the host table and a read-only view of a copy of `graph`
// (a backend plugin's compile reads the graph through it), valid during the
// call. Returns `fn`'s status converted, prefixed with `what`.
using GraphViewFn = std::function<kiln_plugin_status_t*(const kiln_host_api_t*, const kiln_graph_t*)>;
Status with_graph_view(const ir::Graph& graph, const LogFn& log, const std::string& what, const GraphViewFn& fn);

// Converts and frees a plugin status (NULL is OK), prefixing `what`.
Status take_plugin_status(kiln_plugin_status_t* status, const std::string& what);

}  // namespace kiln::registry
