// libFuzzer target: what `kiln run` does before it touches a device — ONNX
// import, the default pass pipeline (the in-tree plugins, linked in) and
// the planner's build_plan for a target filled by hand, no Vulkan. The last
// input byte picks the storage and precision, so buffers, images and fp16
// are all planned. Any status is fine; crashes, hangs, sanitizer reports and
// a pipeline that leaves a graph the verifier rejects are findings.
#include <cstdint>

#include "engine/ir/verifier.h"
#include "engine/registry/default_pipeline.h"
#include "frontends/onnx/onnx_importer.h"
#include "planner/execution_plan.h"

namespace {

// The in-tree plugins, linked in (the fuzz build sets KILN_STATIC_PLUGINS),
// loaded once the way a session loads them.
const kiln::registry::PluginRegistry& in_tree_plugins() {
  static kiln::registry::PluginRegistry* registry = [] {
    auto* r = new kiln::registry::PluginRegistry;
    kiln::registry::PipelineSetup setup;
    setup.load_environment = false;
    if (!kiln::registry::load_standard_plugins(*r, setup, {}).ok()) __builtin_trap();
    return r;
  }();
  return *registry;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto graph = kiln::onnx::import_model_bytes(data, size, /*base_dir=*/"");
  if (!graph.ok()) return 0;
  kiln::registry::PipelineOptions pipeline;  // the default pipeline, no device
  if (!kiln::registry::run_pipeline(in_tree_plugins(), **graph, pipeline).ok()) return 0;
  // Passes commit only graphs that verify (host_api.h).
  if (!kiln::ir::verify_graph(**graph).ok()) __builtin_trap();

  const uint8_t choice = size ? data[size - 1] : 0;
  kiln::planner::TargetInfo target;  // the defaults: a Vulkan 1.1 device
  target.fp16_storage = true;
  target.subgroup_size = (choice & 4) ? 32 : 0;
  target.subgroup_arithmetic = target.subgroup_size != 0;
  kiln::planner::PlanOptions options;
  options.storage = (choice & 1) ? kiln::planner::Storage::kImage : kiln::planner::Storage::kBuffer;
  options.precision = (choice & 2) ? kiln::planner::ElemType::kF16 : kiln::planner::ElemType::kF32;
  (void)kiln::planner::build_plan(**graph, target, options);
  return 0;
}
