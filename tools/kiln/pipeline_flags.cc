// Pass-pipeline flags; see pipeline_flags.h.
#include "tools/kiln/pipeline_flags.h"

#include <cstdio>

#include "engine/registry/default_pipeline.h"

namespace kiln::cli {

StatusOr<std::vector<registry::PassRecord>> run_pipeline_from_flags(const Args& args, ir::Graph& graph) {
  const std::string passes_flag = args.get("passes");
  if (passes_flag == "none") return std::vector<registry::PassRecord>{};
  registry::PipelineOptions options;
  options.passes = registry::split_pass_list(passes_flag);
  options.disabled = args.all("disable-pass");
  options.log = [](kiln_log_level_t level, const std::string& message) {
    if (level >= KILN_LOG_WARNING) std::fprintf(stderr, "kiln: %s\n", message.c_str());
  };
  registry::PipelineSetup setup;
  setup.plugin_files = args.all("plugin");
  return registry::run_default_pipeline(graph, options, setup);
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
