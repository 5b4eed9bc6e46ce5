// Pipeline resolution, fact bookkeeping and per-pass execution.
#include "engine/registry/pass_manager.h"

#include <algorithm>
#include <chrono>

#include "engine/ir/verifier.h"
#include "engine/ops/shape_inference.h"

namespace kiln::registry {
namespace {

std::string fact_names(uint32_t facts) {
  static const std::pair<uint32_t, const char*> kNames[] = {
      {KILN_FACT_SHAPES, "shapes"},
      {KILN_FACT_LAYOUTS, "layouts"},
      {KILN_FACT_FUSION_GROUPS, "fusion-groups"},
      {KILN_FACT_KERNEL_CONFIGS, "kernel-configs"},
      {KILN_FACT_MEMORY_PLAN, "memory-plan"},
  };
  std::string out;
  for (const auto& [bit, name] : kNames)
    if (facts & bit) out += (out.empty() ? "" : ", ") + std::string(name);
  if (facts & ~uint32_t{0x1f}) out += (out.empty() ? "" : ", ") + std::string("unknown facts");
  return out;
}

}  // namespace

std::vector<std::string> split_pass_list(std::string_view list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string_view::npos) end = list.size();
    std::string item(list.substr(start, end - start));
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(std::move(item));
    start = end + 1;
  }
  return out;
}

StatusOr<std::vector<std::string>> PassManager::resolve(const PipelineOptions& options) const {
  std::vector<std::string> names = options.passes;
  if (names.empty()) {
    auto it = pipelines_.find(options.pipeline);
    if (it == pipelines_.end()) return not_found("no pipeline named '" + options.pipeline + "'");
    names = it->second;
  }
  for (const std::string& n : names)
    if (!registry_.find_pass(n)) return not_found("unknown pass '" + n + "' (see `kiln passes`)");
  for (const std::string& d : options.disabled)
    if (!registry_.find_pass(d)) return not_found("--disable-pass: unknown pass '" + d + "'");
  names.erase(std::remove_if(names.begin(), names.end(),
                             [&](const std::string& n) {
                               return std::find(options.disabled.begin(), options.disabled.end(), n) !=
                                      options.disabled.end();
                             }),
              names.end());
  return names;
}

Status PassManager::run(ir::Graph& graph, const PipelineOptions& options) {
  records_.clear();
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> names, resolve(options));
  KILN_RETURN_IF_ERROR_CTX(ir::verify_graph(graph), "graph before the first pass");
  auto warn = [&](const std::string& message) {
    if (options.log) options.log(KILN_LOG_WARNING, message);
  };
  uint32_t valid = 0;
  for (const std::string& name : names) {
    const kiln_pass_t& pass = *registry_.find_pass(name);
    PassRecord record;
    record.name = name;
    const auto start = std::chrono::steady_clock::now();
    Status status = ok_status();
    uint32_t missing = pass.requires_facts & ~valid;
    if (missing & KILN_FACT_SHAPES) {
      status = ops::infer_graph_shapes(graph);
      if (status.ok()) {
        valid |= KILN_FACT_SHAPES;
        missing &= ~uint32_t{KILN_FACT_SHAPES};
      }
    }
    if (status.ok() && missing)
      status = failed_precondition("requires " + fact_names(missing) + ", which no earlier pass provides");
    if (status.ok()) {
      auto result = run_pass(pass, graph, options.log, options.target ? &*options.target : nullptr);
      if (result.ok()) {
        record.committed = true;
        record.statistics = std::move(result->statistics);
        // A commit re-infers shapes, so they are valid whatever the pass says.
        valid = ((valid & ~pass.invalidates_facts) | pass.provides_facts) | KILN_FACT_SHAPES;
      } else {
        status = result.status();
      }
    }
    record.milliseconds =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (!status.ok()) {
      if (pass.required) {
        records_.push_back(std::move(record));
        std::string message = status.message();
        if (message.find("'" + name + "'") == std::string::npos) message = "pass '" + name + "': " + message;
        return Status(status.code(), message);
      }
      record.skipped = true;
      record.error = status.message();
      warn("optional pass '" + name + "' skipped: " + status.message());
    }
    records_.push_back(std::move(record));
  }
  return ok_status();
}

}  // namespace kiln::registry
