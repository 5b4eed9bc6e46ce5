// `kiln graph`: the graph after the pass pipeline as Graphviz or as Kiln's
// text IR, both written by libkiln (kiln_session_graph).
#include <cstdio>
#include <fstream>

#include "kiln/kiln.hpp"
#include "tools/kiln/cli_args.h"
#include "tools/kiln/commands.h"
#include "tools/kiln/session_flags.h"

namespace kiln::cli {

namespace {

// "" or the error.
std::string write_text(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return "";
  }
  std::ofstream f(path, std::ios::binary);
  if (!f) return "NOT_FOUND: cannot write '" + path + "'";
  f << text;
  return f ? "" : "DATA_LOSS: short write to '" + path + "'";
}

}  // namespace

int cmd_graph(const std::vector<std::string>& argv) {
  std::vector<std::string> value_flags = {"dot", "text", "int8-dot"};
  value_flags.insert(value_flags.end(), kPipelineValueFlags.begin(), kPipelineValueFlags.end());
  auto args = Args::parse(argv, value_flags, {"full-constants"});
  if (!args.ok()) return fail(args.status());
  if (args->positionals().size() != 1) return usage_error("kiln graph MODEL --dot FILE: expected exactly one MODEL");
  if (!args->has("dot") && !args->has("text")) return usage_error("kiln graph: give --dot FILE and/or --text FILE");
  api::Model model;
  if (api::Error e = api::Model::load(args->positionals()[0], model)) return fail(e);
  // The graph after the pass pipeline, so plugins' effects are visible
  // (--passes none shows the graph as imported). The reference backend
  // compiles nothing worth the wait.
  SessionFlags flags;
  flags.set_pipeline(*args);
  kiln_session_options_t options = flags.options();
  options.backend = KILN_BACKEND_REFERENCE;
  // No device here, so static QDQ stays the float graph unless --int8-dot on
  // shows what a device with accelerated int8 dot products runs.
  const std::string int8_dot = args->get("int8-dot", "auto");
  if (int8_dot != "auto" && int8_dot != "on" && int8_dot != "off")
    return usage_error("kiln graph: --int8-dot must be auto, on or off, got '" + int8_dot + "'");
  options.int8_kernels = int8_dot == "on" ? KILN_INT8_KERNELS_ON : int8_dot == "off" ? KILN_INT8_KERNELS_OFF : KILN_INT8_KERNELS_AUTO;
  api::Session session;
  if (api::Error e = api::Session::create(model, options, session)) return fail(e);
  for (const char* flag : {"dot", "text"}) {
    if (!args->has(flag)) continue;
    std::string text;
    const uint32_t graph_flags = args->has("full-constants") ? KILN_GRAPH_FULL_CONSTANTS : 0u;
    if (api::Error e = session.graph(flag[0] == 'd' ? KILN_GRAPH_DOT : KILN_GRAPH_TEXT, graph_flags, text))
      return fail(e);
    if (std::string error = write_text(args->get(flag), text); !error.empty()) {
      std::fprintf(stderr, "kiln: %s\n", error.c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace kiln::cli
