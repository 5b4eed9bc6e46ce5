// The standard pipeline (see default_pipeline.h).
#include "engine/registry/default_pipeline.h"

#include <algorithm>

#include "engine/registry/in_tree_plugins.h"

namespace kiln::registry {

const std::vector<std::string>& default_pipeline() {
  // No-ops first so folding sees through them; shape folding feeds constant
  // folding; CSE before DCE so merged nodes' producers are collected.
  // Not here: kiln.canonicalize's fuse-qdq (static QDQ as integer kernels),
  // which pays only where the device has accelerated int8 dot products
  // (plugins/canonicalize/README.md): default_pipeline(registry, true) adds
  // it where the session chose integer kernels.
  static const std::vector<std::string> kPasses = {"remove-noops", "fold-shapes", "fold-constants",
                                                    "fuse-conv-batchnorm", "cse", "dce",
                                                    // refines the shapes the clean graph has (plugins/rdp)
                                                    "rdp",
                                                    // fusion groups on the refined shapes (plugins/fusion)
                                                    "fusion",
                                                    // buffer/image and packed axis per tensor (plugins/layout)
                                                    "layout",
                                                    // last: orders what the others left (plugins/memplan)
                                                    "memplan-order"};
  return kPasses;
}

std::vector<std::string> default_pipeline(const PluginRegistry& registry, bool integer_qdq) {
  std::vector<std::string> passes = default_pipeline();
  // Before fold-constants, which would fold the weights' DequantizeLinear
  // into float weights and hide the pattern.
  if (integer_qdq) passes.insert(std::find(passes.begin(), passes.end(), "fold-constants"), "fuse-qdq");
  for (const LoadedPlugin& p : registry.plugins()) {
    if (is_in_tree_plugin_name(p.name)) continue;  // its passes are placed above
    for (size_t i = 0; i < p.descriptor->pass_count; ++i) passes.emplace_back(p.descriptor->passes[i]->name);
  }
  return passes;
}

Status load_standard_plugins(PluginRegistry& registry, const PipelineSetup& setup, const LogFn& log) {
  for (const LinkedInPlugin& p : linked_in_plugins())
    KILN_RETURN_IF_ERROR(registry.load_static(p.query, std::string("static:") + p.name));
  const std::string dir = in_tree_plugin_dir(setup.plugin_dir);
  if (!dir.empty()) {
    // A plugin that fails here is reported, not fatal: the others still run,
    // and a pipeline naming one of its passes fails with the pass's name.
    Status s = registry.load_installed(dir);
    if (!s.ok() && log) log(KILN_LOG_WARNING, "plugin directory " + dir + ": " + s.message());
  }
  const bool any_in_tree = std::any_of(registry.plugins().begin(), registry.plugins().end(),
                                       [](const LoadedPlugin& p) { return is_in_tree_plugin_name(p.name); });
  if (!any_in_tree) {
    std::string looked;
    for (const std::string& d : in_tree_plugin_dir_candidates(setup.plugin_dir))
      looked += (looked.empty() ? "" : ", ") + d;
    return not_found("Kiln's own plugins (kiln.canonicalize, kiln.rdp, kiln.fusion, kiln.layout, kiln.memplan) were not found; looked in " +
                     (looked.empty() ? std::string("no directory") : looked) +
                     " (install Kiln with its plugins, name the directory, or build with KILN_STATIC_PLUGINS=ON)");
  }
  if (setup.load_environment) {
    Status s = registry.load_from_environment();
    if (!s.ok() && log) log(KILN_LOG_WARNING, "KILN_PLUGIN_PATH: " + s.message());
  }
  for (const std::string& file : setup.plugin_files) KILN_RETURN_IF_ERROR(registry.load_file(file));
  return ok_status();
}

StatusOr<std::vector<PassRecord>> run_default_pipeline(ir::Graph& graph, const PipelineOptions& options,
                                                       const PipelineSetup& setup) {
  PluginRegistry registry;
  KILN_RETURN_IF_ERROR(load_standard_plugins(registry, setup, options.log));
  return run_pipeline(registry, graph, options);
}

StatusOr<std::vector<PassRecord>> run_pipeline(const PluginRegistry& registry, ir::Graph& graph,
                                               const PipelineOptions& options) {
  PassManager manager(registry);
  const std::vector<std::string> passes = default_pipeline(registry, options.integer_qdq);
  manager.define_pipeline("default", passes);
  // An explicit --passes list or pipeline runs exactly once, as written.
  if (!options.passes.empty() || options.pipeline != "default") {
    KILN_RETURN_IF_ERROR(manager.run(graph, options));
    return manager.records();
  }
  // Folding one level of a shape computation exposes the next (a Shape
  // folds only once its input's shape has re-inferred as static), so the
  // canonicalization — the passes before "fusion", rdp's refinement
  // included — runs to a fixed point (it stops shrinking the graph); the
  // passes from "fusion" on then annotate what it leaves, once — again
  // after another canonicalization only if they shrank the graph (a fusion
  // pass may add nodes, views cloned per group, which canonicalizing would
  // merge back and the next fusion clone again). Running every pass in every
  // canonicalization round, as before, made swin_t's seven rounds of shape
  // folding also run fusion, layout and memplan-order seven times: its
  // pipeline took 1.07 s on lavapipe's host, now 0.69.
  const auto first_annotating = std::find(passes.begin(), passes.end(), "fusion");
  manager.define_pipeline("default.canonicalize", std::vector<std::string>(passes.begin(), first_annotating));
  manager.define_pipeline("default.annotate", std::vector<std::string>(first_annotating, passes.end()));
  PipelineOptions canonicalize = options, annotate = options;
  canonicalize.pipeline = "default.canonicalize";
  annotate.pipeline = "default.annotate";
  constexpr int kMaxRounds = 16;
  std::vector<PassRecord> records;
  const auto run = [&](const PipelineOptions& o) -> Status {
    KILN_RETURN_IF_ERROR(manager.run(graph, o));
    records.insert(records.end(), manager.records().begin(), manager.records().end());
    return ok_status();
  };
  for (int outer = 0; outer < kMaxRounds; ++outer) {
    for (int round = 0; round < kMaxRounds; ++round) {
      const size_t before = graph.num_live_nodes();
      KILN_RETURN_IF_ERROR(run(canonicalize));
      if (graph.num_live_nodes() >= before) break;
    }
    const size_t canonical = graph.num_live_nodes();
    KILN_RETURN_IF_ERROR(run(annotate));
    if (graph.num_live_nodes() >= canonical) break;
  }
  return records;
}

}  // namespace kiln::registry
