// The pass manager: runs a pipeline of plugin passes over a graph.
//
// Before each pass it computes the facts the pass requires (shapes are
// re-inferred; other facts must have been provided by an earlier pass), runs
// the pass through the staging host API (host_api.h), and records the time
// and statistics. A failing required pass fails the pipeline with the pass's
// name; a failing optional pass is skipped with a warning, leaving the graph
// as it was.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/base/status.h"
#include "engine/ir/graph.h"
#include "engine/registry/host_api.h"
#include "engine/registry/plugin_loader.h"

namespace kiln::registry {

struct PipelineOptions {
  std::string pipeline = "default";    // named pipeline, used when `passes` is empty
  std::vector<std::string> passes;     // --passes a,b,c
  std::vector<std::string> disabled;   // --disable-pass NAME (repeatable)
  LogFn log;                           // warnings and plugin messages; may be empty
  // The device the pipeline compiles for, which passes read through
  // kiln_host_api_t::target_info; nullopt when it runs for none (`kiln
  // graph` without a device, the reference backend).
  std::optional<kiln_target_info_t> target;
  // Static QDQ patterns as integer kernels: the default pipeline runs
  // kiln.canonicalize's fuse-qdq (before fold-constants, which would fold the
  // weights' DequantizeLinear away). The session decides from the device
  // (runtime::choose_int8_kernels); an explicit `passes` list ignores it.
  bool integer_qdq = false;
};

struct PassRecord {
  std::string name;
  double milliseconds = 0.0;
  bool committed = false;  // the pass succeeded and its edits were applied
  bool skipped = false;    // an optional pass failed; the graph is unchanged
  std::string error;       // why it was skipped
  std::map<std::string, int64_t> statistics;
};

// Splits "a,b,c" (the --passes form) into names; empty items are dropped.
std::vector<std::string> split_pass_list(std::string_view list);

class PassManager {
 public:
  explicit PassManager(const PluginRegistry& registry) : registry_(registry) {}

  void define_pipeline(const std::string& name, std::vector<std::string> passes) { pipelines_[name] = std::move(passes); }
  const std::map<std::string, std::vector<std::string>>& pipelines() const { return pipelines_; }

  // The pass names `options` selects, checked against the registry.
  StatusOr<std::vector<std::string>> resolve(const PipelineOptions& options) const;
  // Runs the selected passes. The records of this run replace earlier ones.
  Status run(ir::Graph& graph, const PipelineOptions& options);
  const std::vector<PassRecord>& records() const { return records_; }

 private:
  const PluginRegistry& registry_;
  std::map<std::string, std::vector<std::string>> pipelines_;
  std::vector<PassRecord> records_;
};

}  // namespace kiln::registry
