// `kiln info`: the Vulkan devices Kiln can see and their capabilities, as
// text or as JSON (for benchmark records), as libkiln describes them, and
// the devices of backend plugins (OpenCL) as they list them.
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "engine/base/json_writer.h"
#include "kiln/kiln.hpp"
#include "tools/kiln/cli_args.h"
#include "tools/kiln/commands.h"
#include "tools/kiln/json_reader.h"

namespace kiln::cli {

int cmd_info(const std::vector<std::string>& argv) {
  auto args = Args::parse(argv, {}, {"json"});
  if (!args.ok()) return fail(args.status());
  if (!args->positionals().empty()) return usage_error("kiln info takes no arguments besides --json");
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
