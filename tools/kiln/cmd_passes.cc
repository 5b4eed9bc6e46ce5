// `kiln passes`: the loaded plugins, where each came from, and their passes
// with the facts they require, provide and invalidate; then the default
// pipeline. Takes the same --plugin flags as `kiln run`.
#include <cstdio>

#include "engine/registry/default_pipeline.h"
#include "tools/kiln/cli_args.h"
#include "tools/kiln/commands.h"

namespace kiln::cli {

namespace {

std::string facts_to_string(uint32_t facts) {
  static const std::pair<uint32_t, const char*> kNames[] = {
      {KILN_FACT_SHAPES, "shapes"},           {KILN_FACT_LAYOUTS, "layouts"},
      {KILN_FACT_FUSION_GROUPS, "fusion-groups"}, {KILN_FACT_KERNEL_CONFIGS, "kernel-configs"},
      {KILN_FACT_MEMORY_PLAN, "memory-plan"}};
  std::string out;
  for (const auto& [bit, name] : kNames)
    if (facts & bit) out += (out.empty() ? "" : ",") + std::string(name);
  return out.empty() ? "-" : out;
}

}  // namespace

int cmd_passes(const std::vector<std::string>& argv) {
  auto args = Args::parse(argv, {"plugin"}, {});
  if (!args.ok()) return fail(args.status());
  if (!args->positionals().empty()) return usage_error("kiln passes takes no positional arguments");
  registry::PluginRegistry reg;
  registry::PipelineSetup setup;
  setup.plugin_files = args->all("plugin");
  Status s = registry::load_standard_plugins(reg, setup, [](kiln_log_level_t, const std::string& message) {
    std::fprintf(stderr, "kiln: %s\n", message.c_str());
  });
  if (!s.ok()) return fail(s);
  for (const registry::LoadedPlugin& p : reg.plugins()) {
    std::printf("plugin %s %s (ABI %u.%u) from %s\n", p.name.c_str(), p.version.c_str(),
                KILN_PLUGIN_ABI_VERSION_MAJOR(p.descriptor->abi_version),
                KILN_PLUGIN_ABI_VERSION_MINOR(p.descriptor->abi_version), p.origin.c_str());
    for (size_t i = 0; i < p.descriptor->pass_count; ++i) {
      const kiln_pass_t* pass = p.descriptor->passes[i];
      std::printf("  %-28s requires %-8s invalidates %-8s  %s\n", pass->name,
                  facts_to_string(pass->requires_facts).c_str(), facts_to_string(pass->invalidates_facts).c_str(),
                  pass->description ? pass->description : "");
    }
  }
  std::printf("default pipeline:");
  for (const std::string& name : registry::default_pipeline(reg)) std::printf(" %s", name.c_str());
  std::printf("\n");
  return 0;
}

}  // namespace kiln::cli
