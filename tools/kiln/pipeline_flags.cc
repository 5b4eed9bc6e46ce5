// Pass-pipeline flags; see pipeline_flags.h.
#include "tools/kiln/pipeline_flags.h"

#include <cstdio>

#include "engine/registry/default_pipeline.h"

namespace kiln::cli {

Status configure_pipeline(const Args& args, session::SessionOptions& options) {
  const std::string passes_flag = args.get("passes");
  options.run_passes = passes_flag != "none";
  // "default" (or no flag) is the default pipeline, as in the C API.
  if (passes_flag != "default") options.pipeline.passes = registry::split_pass_list(passes_flag);
  options.pipeline.disabled = args.all("disable-pass");
  options.pipeline.log = [](kiln_log_level_t level, const std::string& message) {
    if (level >= KILN_LOG_WARNING) std::fprintf(stderr, "kiln: %s\n", message.c_str());
  };
  options.plugins.plugin_files = args.all("plugin");
  return ok_status();
}

StatusOr<std::vector<registry::PassRecord>> run_pipeline_from_flags(const Args& args, ir::Graph& graph) {
  session::SessionOptions options;
  KILN_RETURN_IF_ERROR(configure_pipeline(args, options));
  if (!options.run_passes) return std::vector<registry::PassRecord>{};
  return registry::run_default_pipeline(graph, options.pipeline, options.plugins);
}

std::string pass_records_json(const std::vector<registry::PassRecord>& records, const std::string& indent) {
  std::string out = "[";
  for (size_t i = 0; i < records.size(); ++i) {
    const registry::PassRecord& r = records[i];
    out += std::string(i ? "," : "") + "\n" + indent + "  {\"name\": \"" + json_escape(r.name) + "\", \"ms\": " +
           std::to_string(r.milliseconds) + ", \"committed\": " + (r.committed ? "true" : "false") +
           ", \"skipped\": " + (r.skipped ? "true" : "false") + ", \"statistics\": {";
    bool first = true;
    for (const auto& [key, value] : r.statistics) {
      out += std::string(first ? "" : ", ") + "\"" + json_escape(key) + "\": " + std::to_string(value);
      first = false;
    }
    out += "}}";
  }
  return out + "\n" + indent + "]";
}

}  // namespace kiln::cli
