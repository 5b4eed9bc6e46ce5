// `kiln info`: the Vulkan devices Kiln can see and their capabilities, as
// text or as JSON (for benchmark records), as libkiln describes them, and
// the devices of backend plugins (OpenCL) as they list them.
// `kiln info --model [PROFILE] [--svg FILE]`: the device model `kiln tune`
// fitted (tmmodel_report.h), from PROFILE or the newest cached profile.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "engine/base/json_writer.h"
#include "kiln/kiln.hpp"
#include "tools/kiln/cli_args.h"
#include "tools/kiln/commands.h"
#include "tools/kiln/json_reader.h"
#include "tools/kiln/tmmodel_report.h"

namespace kiln::cli {

namespace {

// Where kiln tune caches profiles: <cache>/tmmodel, <cache> as the kernel
// cache's ($KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else
// $HOME/.cache/kiln); empty when none is set. The rule of
// tmmodel::profile_directory (plugins/tmmodel/model.h), which this tool,
// a client of libkiln only (tests/architecture/layering_test.py), cannot
// include; kiln_tune_short_test checks that the two agree.
std::string profile_directory() {
  const char* set[] = {std::getenv("KILN_CACHE_DIR"), std::getenv("XDG_CACHE_HOME"), std::getenv("HOME")};
  const char* suffix[] = {"/tmmodel", "/kiln/tmmodel", "/.cache/kiln/tmmodel"};
  for (int i = 0; i < 3; ++i)
    if (set[i] && *set[i]) return set[i] + std::string(suffix[i]);
  return "";
}

// The newest *.json in kiln tune's cache directory, or "" when none.
std::string newest_cached_profile() {
  const std::string dir = profile_directory();
  std::error_code ec;
  if (dir.empty() || !std::filesystem::is_directory(dir, ec)) return "";
  std::string newest;
  std::filesystem::file_time_type newest_time{};
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".json") continue;
    const auto t = entry.last_write_time(ec);
    if (!ec && (newest.empty() || t > newest_time)) {
      newest = entry.path().string();
      newest_time = t;
    }
  }
  return newest;
}

int model_report(const Args& args) {
  if (args.positionals().size() > 1) return usage_error("kiln info --model takes one profile file at most");
  std::string path = args.positionals().empty() ? newest_cached_profile() : args.positionals()[0];
  if (path.empty())
    return fail(not_found("no device profile: run `kiln tune` first (profiles are cached in " +
                          (profile_directory().empty() ? std::string("$KILN_CACHE_DIR/tmmodel")
                                                       : profile_directory()) +
                          "), or name a profile file"));
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(not_found("cannot read the profile " + path));
  std::stringstream text;
  text << in.rdbuf();
  auto profile = parse_json(text.str());
  if (!profile.ok()) return fail(invalid_argument(path + ": " + profile.status().message()));
  auto report = tmmodel_report_text(*profile);
  if (!report.ok()) return fail(invalid_argument(path + ": " + report.status().message()));
  std::printf("profile: %s\n%s", path.c_str(), report->c_str());
  if (!args.has("svg")) return 0;
  auto chart = tmmodel_report_svg(*profile);
  if (!chart.ok()) return fail(invalid_argument(path + ": " + chart.status().message()));
  const std::string out = args.get("svg");
  std::ofstream file(out, std::ios::binary);
  if (!(file << *chart) || !file.flush()) return fail(unavailable("cannot write " + out));
  std::printf("chart: %s\n", out.c_str());
  return 0;
}

}  // namespace

int cmd_info(const std::vector<std::string>& argv) {
  auto args = Args::parse(argv, {"svg"}, {"json", "model"});
  if (!args.ok()) return fail(args.status());
  if (args->has("model")) return model_report(*args);
  if (!args->positionals().empty() || args->has("svg"))
    return usage_error("kiln info takes no arguments besides --json (or --model [PROFILE] [--svg FILE])");
  const bool json = args->has("json");
  std::string devices;
  if (api::Error e = api::vulkan_devices_describe(!json, devices)) return fail(e);
  // Backend plugins (OpenCL) list their own devices.
  std::vector<std::pair<std::string, std::string>> backends;
  std::string catalogue_json;
  if (!api::plugins_describe_json(nullptr, catalogue_json)) {
    auto catalogue = parse_json(catalogue_json);
    const JsonValue* plugins = catalogue.ok() ? catalogue->get("plugins") : nullptr;
    for (const JsonValue& p : plugins ? plugins->items : std::vector<JsonValue>{}) {
      const JsonValue* backend = p.get("backend");
      const std::string* name = backend ? backend->get_string("name") : nullptr;
      const std::string* listing = backend ? backend->get_string("devices") : nullptr;
      if (name && listing) backends.emplace_back(*name, *listing);
    }
  }
  if (json) {
    JsonWriter w;
    w.begin_object().key("kiln_version").string(kiln_version_string()).members(devices);
    w.key("backend_plugins").begin_array();
    for (const auto& [name, listing] : backends)
      w.begin_object().key("name").string(name).key("devices").string(listing).end_object();
    w.end_array().end_object();
    std::printf("%s\n", w.str().c_str());
    return 0;
  }
  std::printf("kiln %s\n%s", kiln_version_string(), devices.c_str());
  if (devices.rfind("no Vulkan: ", 0) == 0) std::printf("(the reference backend still runs every model on the CPU)\n");
  for (const auto& [name, listing] : backends) std::printf("backend plugin '%s':\n%s", name.c_str(), listing.c_str());
  return 0;
}

}  // namespace kiln::cli
