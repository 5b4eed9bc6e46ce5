// `kiln passes`: the loaded plugins, where each came from, and their passes
// with the facts they require and invalidate; then the default pipeline.
// Takes the same --plugin flags as `kiln run`; the catalogue comes from
// libkiln (kiln_plugins_describe_json).
#include <cstdio>

#include "kiln/kiln.hpp"
#include "tools/kiln/cli_args.h"
#include "tools/kiln/commands.h"
#include "tools/kiln/json_reader.h"
#include "tools/kiln/session_flags.h"

namespace kiln::cli {

namespace {

std::string fact_list(const JsonValue* facts) {
  std::string out;
  if (facts)
    for (const JsonValue& f : facts->items) out += (out.empty() ? "" : ",") + f.string;
  return out.empty() ? "-" : out;
}

std::string text(const JsonValue& v, const char* key) {
  const std::string* s = v.get_string(key);
  return s ? *s : "";
}

double number(const JsonValue& v, const char* key) {
  const double* d = v.get_number(key);
  return d ? *d : 0;
}

}  // namespace

int cmd_passes(const std::vector<std::string>& argv) {
  auto args = Args::parse(argv, {"plugin"}, {});
  if (!args.ok()) return fail(args.status());
  if (!args->positionals().empty()) return usage_error("kiln passes takes no positional arguments");
  SessionFlags flags;
  flags.set_pipeline(*args);
  kiln_session_options_t options = flags.options();
  options.log = [](void*, kiln_message_level_t, const char* message) { std::fprintf(stderr, "kiln: %s\n", message); };
  std::string json;
  if (api::Error e = api::plugins_describe_json(&options, json)) return fail(e);
  auto catalogue = parse_json(json);
  if (!catalogue.ok()) return fail(catalogue.status());
  if (const JsonValue* plugins = catalogue->get("plugins")) {
    for (const JsonValue& p : plugins->items) {
      std::printf("plugin %s %s (ABI %.0f.%.0f) from %s\n", text(p, "name").c_str(), text(p, "version").c_str(),
                  number(p, "abi_major"), number(p, "abi_minor"), text(p, "origin").c_str());
      if (const JsonValue* passes = p.get("passes"))
        for (const JsonValue& pass : passes->items)
          std::printf("  %-28s requires %-8s invalidates %-8s  %s\n", text(pass, "name").c_str(),
                      fact_list(pass.get("requires")).c_str(), fact_list(pass.get("invalidates")).c_str(),
                      text(pass, "description").c_str());
    }
  }
  std::printf("default pipeline:");
  if (const JsonValue* pipeline = catalogue->get("default_pipeline"))
    for (const JsonValue& name : pipeline->items) std::printf(" %s", name.string.c_str());
  std::printf("\n");
  return 0;
}

}  // namespace kiln::cli
