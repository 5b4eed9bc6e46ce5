// `kiln info`: the Vulkan devices Kiln can see and their capabilities, as
// text or as JSON (for benchmark records).
#include <cstdio>

#include "kiln/kiln.h"
#include "platform/vulkan/capabilities.h"
#include "platform/vulkan/instance.h"
#include "tools/kiln/cli_args.h"
#include "tools/kiln/commands.h"

namespace kiln::cli {

int cmd_info(const std::vector<std::string>& argv) {
  auto args = Args::parse(argv, {}, {"json"});
  if (!args.ok()) return fail(args.status());
  if (!args->positionals().empty()) return usage_error("kiln info takes no arguments besides --json");
  const bool json = args->has("json");

  auto instance = vk::Instance::create();
  std::vector<vk::Capabilities> devices;
  std::string problem;
  if (!instance.ok()) {
    problem = instance.status().to_string();
  } else {
    auto physical = (*instance)->physical_devices();
    if (!physical.ok()) {
      problem = physical.status().to_string();
    } else {
      for (VkPhysicalDevice pd : *physical) {
        auto caps = vk::query_capabilities((*instance)->fn(), pd, (*instance)->api_version());
        if (!caps.ok()) return fail(caps.status());
        devices.push_back(std::move(caps).value());
      }
    }
  }

  if (json) {
    std::string out = "{\"kiln_version\": \"" + std::string(kiln_version_string()) + "\", \"vulkan_error\": ";
    out += problem.empty() ? "null" : "\"" + json_escape(problem) + "\"";
    out += ", \"devices\": [";
    for (size_t i = 0; i < devices.size(); ++i) out += (i ? ", " : "") + devices[i].to_json();
    out += "]}\n";
    std::fputs(out.c_str(), stdout);
    return 0;
  }
  std::printf("kiln %s\n", kiln_version_string());
  if (!problem.empty()) {
    std::printf("no Vulkan: %s\n(the reference backend still runs every model on the CPU)\n", problem.c_str());
    return 0;
  }
  if (devices.empty()) std::printf("no Vulkan device found\n");
  for (size_t i = 0; i < devices.size(); ++i) {
    std::printf("device %zu:\n%s\n", i, devices[i].to_text().c_str());
  }
  return 0;
}

}  // namespace kiln::cli
