// The pass-pipeline flags shared by `kiln run` and `kiln graph`:
// --passes a,b,c|none, --disable-pass NAME (repeatable), --plugin FILE.
#pragma once

#include <string>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/registry/pass_manager.h"
#include "engine/session/session.h"
#include "tools/kiln/cli_args.h"

namespace kiln::cli {

inline const std::vector<std::string> kPipelineValueFlags = {"passes", "disable-pass", "plugin"};

// Sets the session's pipeline from the flags (none for --passes none), with
// plugin warnings printed to stderr.
Status configure_pipeline(const Args& args, session::SessionOptions& options);

// Runs the pipeline the flags select on `graph` (nothing for --passes none),
// printing plugin warnings to stderr. Returns the per-pass records.
StatusOr<std::vector<registry::PassRecord>> run_pipeline_from_flags(const Args& args, ir::Graph& graph);

// The records as a JSON array (for --stats).
std::string pass_records_json(const std::vector<registry::PassRecord>& records, const std::string& indent);

}  // namespace kiln::cli
