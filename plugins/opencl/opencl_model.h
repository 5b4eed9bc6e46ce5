// A graph compiled for an OpenCL device: the planner's ExecutionPlan (the
// same one Vulkan runs, planned for buffer or image storage and fp32 with
// the portable kernels), every dispatch's GLSL translated to OpenCL C
// (glsl_to_opencl.h) and built at compile time, run on the device's
// in-order queue.
//
// A run binds the plan's symbols from the input shapes (and from the
// shapes of values the host computes), places the buffers of the plan's
// memory roots whose sizes the input shapes give in one allocation (the
// model's arena: memplan's plan_arena over their lifetimes, planner/memory,
// as the Vulkan runtime places them; each root a sub-buffer of it), gives
// every other root its own buffer (sizes known only mid-run, model state)
// or image2d (image-stored tensors, cl_image.h), uploads
// inputs and host values where a kernel reads them, evaluates host steps
// and host fallbacks with the reference kernels (as the Vulkan runtime
// does), enqueues the dispatches and downloads the
// outputs. If and Loop run on the host with the reference executor (their
// sub-graphs included), reading what they need from the device.
//
// Thread-safety: run() is serialized per device (ClDevice::run_mutex).
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "engine/base/status.h"
#include "engine/base/tensor.h"
#include "engine/ir/graph.h"
#include "planner/execution_plan.h"
#include "planner/memory/liveness.h"
#include "plugins/opencl/cl_device.h"
#include "plugins/opencl/glsl_to_opencl.h"

namespace kiln::opencl {

struct CompiledDispatch {
  size_t step = 0;
  cl_kernel kernel = nullptr;
  TranslatedKernel code;                // argument layout (the source is in the device's cache)
  std::vector<ir::Dim> push;            // push-constant values, evaluated per run
  std::array<ir::Dim, 3> groups;
};

// What the session asks for (kiln_backend_options_t).
struct CompileOptions {
  bool fp16 = false;           // --precision fp16
  // --storage: kBuffer (buffer, and auto without annotations) or kImage
  // (every float activation an image2d_t where it fits).
  planner::Storage storage = planner::Storage::kBuffer;
  bool profile = false;        // per-kernel device times on every run
  // Driver debugging (opencl_plugin.cc reads them from the environment):
  // `arena` false gives every buffer root its own buffer instead of a
  // sub-buffer of the run's arena (KILN_OPENCL_ARENA=off);
  // `check_each_dispatch` waits for every kernel and names the first that
  // fails on the device (KILN_OPENCL_CHECK=1).
  bool arena = true;
  bool check_each_dispatch = false;
  // Activation buffers filled with NaN before every run
  // (KILN_OPENCL_POISON=1): reads of memory no kernel wrote show as NaN.
  bool poison = false;
  // Appends a line per tensor each dispatch writes (its sums) to this file
  // (KILN_OPENCL_TRACE=FILE): where two devices' runs of one plan diverge.
  std::string trace;
};

// One dispatch of a run: its time on the device (profiled models) and the
// memory it moves (each tensor it binds, whole: a roofline count, as the
// Vulkan runtime's) and its FLOPs for the run's shapes.
struct KernelTime {
  std::string kernel, node;
  double ms = -1;
  uint64_t bytes_read = 0, bytes_written = 0, flops = 0;
};

// What one run did.
struct RunReport {
  double device_ms = -1;  // profiled: first kernel start to last kernel end
  uint32_t dispatches = 0, fallbacks = 0;
  uint64_t bytes_read = 0, bytes_written = 0;  // summed over the dispatches
  uint32_t fused_dispatches = 0;               // of the dispatches, fused kernels ("fused...", or '+' in the name)
  std::vector<KernelTime> kernels;             // profiled: one per dispatch, in order
  // Buffer memory: the roots placed in the model's arena and its planned
  // size, what those roots would take in a buffer each, and the roots that
  // got their own buffer (sizes known only mid-run, model state).
  uint32_t arena_roots = 0, separate_roots = 0;
  uint64_t arena_bytes = 0, no_reuse_bytes = 0, separate_bytes = 0;
  // What the model holds in buffers after the run: its constants and the
  // arena (both kept across runs); images not counted.
  uint64_t device_bytes = 0;
};

struct ModelStats {
  size_t dispatches = 0;  // kernels compiled (dispatches outside If/Loop)
  size_t fallbacks = 0;   // nodes the reference kernels run (If/Loop included)
};

class OpenClModel {
 public:
  // Takes the graph (shapes inferred). Errors: kUnimplemented naming the
  // node and op for what the backend cannot run (a kernel whose
  // translation does not build); kFailedPrecondition for fp16 on a device
  // without cl_khr_fp16 and for image storage on one without images; the
  // planner's errors.
  static StatusOr<std::unique_ptr<OpenClModel>> compile(std::unique_ptr<ir::Graph> graph,
                                                        std::shared_ptr<ClDevice> device,
                                                        const CompileOptions& options = {});
  ~OpenClModel();

  const ir::Graph& graph() const { return *graph_; }
  const planner::ExecutionPlan& plan() const { return plan_; }
  ModelStats stats() const;
  const std::string& device_name() const { return device_->description().name; }
  // What the device's program cache did while this model compiled.
  const ProgramCacheStats& program_stats() const { return program_stats_; }
  // Inputs in graph input order; outputs in graph output order. `report`
  // may be null.
  StatusOr<std::vector<Tensor>> run(const std::vector<Tensor>& inputs, RunReport* report = nullptr) const;

 private:
  OpenClModel() = default;
  Status compile_steps();
  Status upload_constants();

  std::unique_ptr<ir::Graph> graph_;
  std::shared_ptr<ClDevice> device_;
  planner::ExecutionPlan plan_;
  std::vector<CompiledDispatch> dispatches_;       // in step order
  std::map<planner::TensorId, cl_mem> constants_;  // uploaded once, by memory root
  planner::Liveness liveness_;                     // the roots' lifetimes, for the arena
  // The roots of every value an If or Loop reads or makes: they stay out of
  // the arena (opencl_model_run.cc, place_arena).
  std::set<planner::TensorId> control_flow_roots_;
  // The runs' buffer arena (opencl_model_run.cc): grown to the largest plan
  // a run needed; written only under the device's run_mutex.
  mutable cl_mem arena_ = nullptr;
  mutable uint64_t arena_capacity_ = 0;
  uint64_t constant_bytes_ = 0;  // the constants' buffers
  size_t host_control_flow_ = 0;                   // If/Loop nodes run on the host
  cl_command_queue queue_ = nullptr;               // the device's queue, or its profiling queue
  bool profile_ = false;
  bool use_arena_ = true;
  bool check_each_dispatch_ = false;
  bool poison_ = false;
  std::string trace_path_;
  ProgramCacheStats program_stats_;
};

}  // namespace kiln::opencl
