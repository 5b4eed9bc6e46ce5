// `kiln info`: the Vulkan devices Kiln can see and their capabilities, as
// text or as JSON (for benchmark records), as libkiln describes them.
#include <cstdio>

#include "engine/base/json_writer.h"
#include "kiln/kiln.hpp"
#include "tools/kiln/cli_args.h"
#include "tools/kiln/commands.h"

namespace kiln::cli {

int cmd_info(const std::vector<std::string>& argv) {
  auto args = Args::parse(argv, {}, {"json"});
  if (!args.ok()) return fail(args.status());
  if (!args->positionals().empty()) return usage_error("kiln info takes no arguments besides --json");
  const bool json = args->has("json");
  std::string devices;
  if (api::Error e = api::vulkan_devices_describe(!json, devices)) return fail(e);
  if (json) {
    JsonWriter w;
    w.begin_object().key("kiln_version").string(kiln_version_string()).members(devices).end_object();
    std::printf("%s\n", w.str().c_str());
    return 0;
  }
  std::printf("kiln %s\n%s", kiln_version_string(), devices.c_str());
  if (devices.rfind("no Vulkan: ", 0) == 0) std::printf("(the reference backend still runs every model on the CPU)\n");
  return 0;
}

}  // namespace kiln::cli
