// OpenClModel: planning and kernel compilation (see opencl_model.h; the
// run is opencl_model_run.cc).
#include "plugins/opencl/opencl_model.h"

#include <map>

#include "planner/glsl_codegen.h"

namespace kiln::opencl {
namespace {

std::string node_text(const ir::Graph& graph, ir::NodeId node) {
  if (node == ir::kNoNode) return "a plan step";
  const ir::Node& n = graph.node(node);
  return "node '" + n.name + "' (" + (n.domain.empty() ? "" : n.domain + "::") + n.op + ")";
}

}  // namespace

StatusOr<std::unique_ptr<OpenClModel>> OpenClModel::compile(std::unique_ptr<ir::Graph> graph,
                                                            std::shared_ptr<ClDevice> device,
                                                            const CompileOptions& options) {
  const std::string& name = device->description().name;
  if (options.fp16) {
    if (!device->has_fp16())
      return failed_precondition("--precision fp16: the OpenCL device '" + name +
                                 "' lacks the cl_khr_fp16 extension (half-precision arithmetic); use fp32");
    return unimplemented("--precision fp16: the OpenCL backend translates fp32 kernels only (the device '" + name +
                         "' has cl_khr_fp16, but the half-precision translation is not written)");
  }
  if (options.storage == planner::Storage::kImage && !device->description().images)
    return failed_precondition("--storage image: the OpenCL device '" + name +
                               "' has no image support (CL_DEVICE_IMAGE_SUPPORT); use --storage buffer");
  auto model = std::unique_ptr<OpenClModel>(new OpenClModel);
  model->graph_ = std::move(graph);
  model->device_ = std::move(device);
  model->profile_ = options.profile;
  model->use_arena_ = options.arena;
  model->check_each_dispatch_ = options.check_each_dispatch;
  model->poison_ = options.poison;
  model->trace_path_ = options.trace;
  if (options.profile) {
    KILN_ASSIGN_OR_RETURN(model->queue_, model->device_->profiling_queue());
  } else {
    model->queue_ = model->device_->queue();
  }
  const ProgramCacheStats before = model->device_->program_stats();
  planner::PlanOptions plan_options;
  // Image storage: every float activation whose texel grid fits the
  // device's image2d limits is an image2d_t (the planner keeps the others,
  // constants and integers in buffers); per-tensor kiln.storage
  // annotations (the layout pass, --storage auto) win over it.
  plan_options.storage = options.storage;
  plan_options.precision = planner::ElemType::kF32;
  plan_options.cooperative_matrix = false;
  KILN_ASSIGN_OR_RETURN(model->plan_, planner::build_plan(*model->graph_, model->device_->target(), plan_options));
  model->liveness_ = planner::compute_liveness(model->plan_, *model->graph_);
  for (const auto& [head, end] : planner::control_ranges(model->plan_)) {
    const ir::Node& node = model->graph_->node(model->plan_.steps[head].node);
    std::vector<ir::ValueId> values = planner::subgraph_reads(*model->graph_, node);
    values.insert(values.end(), node.inputs.begin(), node.inputs.end());
    values.insert(values.end(), node.outputs.begin(), node.outputs.end());
    for (ir::ValueId v : values)
      if (const auto t = model->plan_.value_tensor.find(v); t != model->plan_.value_tensor.end())
        model->control_flow_roots_.insert(planner::memory_root(model->plan_, t->second));
  }
  KILN_RETURN_IF_ERROR(model->compile_steps());
  KILN_RETURN_IF_ERROR(model->upload_constants());
  const ProgramCacheStats after = model->device_->program_stats();
  model->program_stats_ = {after.builds - before.builds, after.disk_hits - before.disk_hits,
                           after.memory_hits - before.memory_hits, after.rejected_files - before.rejected_files,
                           after.write_failures - before.write_failures};
  return model;
}

OpenClModel::~OpenClModel() {
  for (CompiledDispatch& d : dispatches_)
    if (d.kernel) clReleaseKernel(d.kernel);
  for (auto& [root, mem] : constants_) clReleaseMemObject(mem);
  if (arena_) clReleaseMemObject(arena_);
}

Status OpenClModel::compile_steps() {
  const planner::TargetInfo target = device_->target();
  // If and Loop run on the host, sub-graphs and all (the runtime skips
  // their ranges of steps): their kernels are not compiled.
  std::map<size_t, size_t> control_end;
  for (const auto& [head, end] : planner::control_ranges(plan_)) control_end[head] = end;
  for (size_t i = 0; i < plan_.steps.size(); ++i) {
    const planner::PlanStep& step = plan_.steps[i];
    const std::string what = node_text(*graph_, step.node);
    if (const auto end = control_end.find(i); end != control_end.end()) {
      ++host_control_flow_;
      i = end->second - 1;
      continue;
    }
    if (step.kind != planner::PlanStep::Kind::kDispatch) continue;
    for (const planner::KernelTensor& t : step.kernel.tensors)
      if (t.layout.type == planner::ElemType::kF16)
        return unimplemented(what + ": kernel '" + step.kernel.name + "' binds '" + t.name +
                             "' as fp16; the OpenCL backend runs fp32 kernels only");
    const std::string kernel_what = what + ", kernel '" + step.kernel.name + "'";
    auto glsl = planner::generate_glsl(step.kernel, target);
    if (!glsl.ok()) return Status(glsl.status().code(), kernel_what + ": " + glsl.status().message());
    auto code = glsl_to_opencl(glsl->glsl, glsl->spec);
    if (!code.ok()) return Status(code.status().code(), kernel_what + ": " + code.status().message());
    if (code->bindings != step.kernel.tensors.size())
      return internal_error(kernel_what + ": the translation binds " + std::to_string(code->bindings) +
                            " buffers and images for " + std::to_string(step.kernel.tensors.size()) + " tensors");
    for (size_t b = 0; b < code->bindings; ++b)
      if (code->image_bindings[b] != (step.kernel.tensors[b].layout.storage == planner::Storage::kImage))
        return internal_error(kernel_what + ": binding " + std::to_string(b) + " ('" + step.kernel.tensors[b].name +
                              "') is " + (code->image_bindings[b] ? "an image" : "a buffer") +
                              " in the translation, not in the plan");
    KILN_ASSIGN_OR_RETURN(cl_kernel kernel, device_->create_kernel(code->source, kernel_what));
    CompiledDispatch d;
    d.step = i;
    d.kernel = kernel;
    d.push = glsl->push;
    d.groups = glsl->groups;
    code->source.clear();  // the device's program cache holds it
    d.code = std::move(code).value();
    dispatches_.push_back(std::move(d));
  }
  return ok_status();
}

Status OpenClModel::upload_constants() {
  for (size_t i = 0; i < plan_.tensors.size(); ++i) {
    const planner::PlanTensor& t = plan_.tensors[i];
    if (!t.constant.defined()) continue;
    const auto id = static_cast<planner::TensorId>(i);
    if (planner::memory_root(plan_, id) != id) continue;
    const DType device_type = t.layout.type == planner::ElemType::kI32 ? DType::kInt32 : DType::kFloat32;
    KILN_ASSIGN_OR_RETURN(Tensor data, t.constant.cast(device_type));
    cl_int rc = CL_SUCCESS;
    const size_t bytes = std::max<size_t>(data.nbytes(), 4);
    cl_mem mem = clCreateBuffer(device_->context(), CL_MEM_READ_WRITE, bytes, nullptr, &rc);
    KILN_RETURN_IF_ERROR(cl_status(rc, "allocating a constant of " + std::to_string(bytes) + " bytes"));
    constants_[id] = mem;
    constant_bytes_ += bytes;
    if (data.nbytes() > 0)
      KILN_RETURN_IF_ERROR(cl_status(clEnqueueWriteBuffer(queue_, mem, CL_TRUE, 0, data.nbytes(),
                                                          data.raw_data(), 0, nullptr, nullptr),
                                     "uploading a constant"));
  }
  return ok_status();
}

ModelStats OpenClModel::stats() const { return {dispatches_.size(), plan_.fallback_count() + host_control_flow_}; }

}  // namespace kiln::opencl
