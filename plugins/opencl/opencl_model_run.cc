// OpenClModel::run (see opencl_model.h): one run's symbol bindings, host
// values and device buffers and images.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <utility>

#include "engine/ops/op_registry.h"
#include "engine/runtime/reference_executor.h"
#include "planner/index_view.h"
#include "planner/memory/arena.h"
#include "plugins/opencl/cl_image.h"
#include "plugins/opencl/opencl_model.h"

namespace kiln::opencl {
namespace {

using planner::PlanStep;
using planner::PlanTensor;
using planner::TensorId;

// The engine's rule for a fused kernel (runtime::is_fused_kernel, which the
// plugin's layering keeps out of reach): the planner's fusion groups
// ("fused_...") and kernels that name their parts with '+' ("matmul+add").
bool is_fused_kernel(const std::string& name) {
  return name.rfind("fused", 0) == 0 || name.find('+') != std::string::npos;
}

DType device_dtype(const PlanTensor& t) {
  return t.layout.type == planner::ElemType::kI32 ? DType::kInt32 : DType::kFloat32;
}

// Where a tensor's memory is: its buffer or image, and for a buffer the
// byte offset where the tensor starts (a root placed in the arena; kernels
// take the offset as an argument, glsl_to_opencl.h).
struct DeviceMemory {
  cl_mem mem = nullptr;
  uint64_t offset = 0;
};

// The model's buffer arena, which runs grow (under the device's run mutex).
struct ArenaMemory {
  cl_mem& buffer;
  uint64_t& capacity;
};

// How the model runs (CompileOptions): profiled, the arena used, every
// dispatch waited for and checked.
struct RunFlags {
  bool profile = false;
  bool arena = true;
  bool check_each_dispatch = false;
  bool poison = false;  // activation memory filled with NaN before the run
  std::FILE* trace = nullptr;  // a line per tensor each dispatch writes
};

class Run {
 public:
  // `queue`: the model's (a profiling queue when `flags.profile`).
  Run(const ir::Graph& graph, const planner::ExecutionPlan& plan, ClDevice& device, cl_command_queue queue,
      RunFlags flags, const std::map<TensorId, cl_mem>& constants, const planner::Liveness& liveness,
      const std::set<TensorId>& control_flow_roots, ArenaMemory arena)
      : graph_(graph), plan_(plan), device_(device), queue_(queue), flags_(flags),
        constants_(constants), liveness_(liveness), control_flow_roots_(control_flow_roots), arena_(arena) {}
  ~Run() {
    for (auto& [root, mem] : buffers_) clReleaseMemObject(mem);
    for (const Timed& t : timed_)
      if (t.event) clReleaseEvent(t.event);
  }

  // Counts, and for a profiled model each kernel's time from its event (the
  // queue must be finished).
  Status report(RunReport& out) const {
    out = RunReport{};
    out.dispatches = dispatches_;
    out.fallbacks = fallbacks_;
    out.arena_roots = static_cast<uint32_t>(regions_.size());
    out.arena_bytes = arena_bytes_;
    out.no_reuse_bytes = no_reuse_bytes_;
    out.separate_roots = separate_roots_;
    out.separate_bytes = separate_bytes_;
    for (const Timed& t : timed_) {
      out.bytes_read += t.traffic.bytes_read;
      out.bytes_written += t.traffic.bytes_written;
      if (is_fused_kernel(t.traffic.kernel)) ++out.fused_dispatches;
    }
    if (!flags_.profile) return ok_status();
    cl_ulong first = 0, last = 0;
    for (const Timed& t : timed_) {
      cl_ulong start = 0, end = 0;
      KILN_RETURN_IF_ERROR(cl_status(
          clGetEventProfilingInfo(t.event, CL_PROFILING_COMMAND_START, sizeof start, &start, nullptr), "profiling"));
      KILN_RETURN_IF_ERROR(
          cl_status(clGetEventProfilingInfo(t.event, CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr), "profiling"));
      if (out.kernels.empty() || start < first) first = start;
      last = std::max(last, end);
      KernelTime k = t.traffic;
      k.ms = static_cast<double>(end - start) * 1e-6;
      out.kernels.push_back(std::move(k));
    }
    out.device_ms = timed_.empty() ? 0.0 : static_cast<double>(last - first) * 1e-6;
    return ok_status();
  }

  Status set_inputs(const std::vector<Tensor>& inputs) {
    if (inputs.size() != plan_.inputs.size())
      return invalid_argument("expected " + std::to_string(plan_.inputs.size()) + " inputs, got " +
                              std::to_string(inputs.size()));
    for (size_t i = 0; i < inputs.size(); ++i) {
      const TensorId id = plan_.inputs[i];
      const PlanTensor& t = plan_.tensors[static_cast<size_t>(id)];
      const std::string name = "input " + std::to_string(i) + " ('" + graph_.value(t.value).name + "')";
      if (!inputs[i].defined()) return invalid_argument(name + " is missing");
      if (inputs[i].dtype() != t.dtype)
        return invalid_argument(name + " has dtype " + std::string(dtype_name(inputs[i].dtype())) + ", the model takes " +
                                std::string(dtype_name(t.dtype)));
      KILN_RETURN_IF_ERROR(bind_shape(id, inputs[i].shape(), name));
      host_[id] = inputs[i];
    }
    return ok_status();
  }

  // Places the buffer roots whose sizes the input shapes give (set_inputs
  // first) in the model's arena by their lifetimes (memplan::plan_arena),
  // growing it when this run needs more; kernels address each at its
  // offset (no sub-buffers: NVIDIA's driver crashed releasing them). Roots sized only mid-run, model state (zero-filled per
  // run), constants and images keep their own memory; so does every root
  // when the plan exceeds the device's largest allocation, and every value
  // an If or Loop reads or makes: this backend runs them whole on the host
  // at their first step, where the plan's lifetimes (made for control flow
  // on the device: a Loop's carried values die at their copies into the
  // body) do not hold.
  Status place_arena() {
    if (!flags_.arena) return ok_status();
    const uint64_t align = 256;  // any element type's alignment, and whole cache lines
    std::vector<memplan::Block> blocks;
    std::vector<TensorId> roots;
    for (size_t t = 0; t < plan_.tensors.size(); ++t) {
      const TensorId id = static_cast<TensorId>(t);
      const PlanTensor& pt = tensor(id);
      if (!liveness_.needed[t] || liveness_.live[t].empty() || planner::memory_root(plan_, id) != id) continue;
      if (pt.constant.defined() || constants_.count(id) || pt.origin == PlanTensor::Origin::kState || is_image(id))
        continue;
      if (pt.host_resident && !pt.device_needed) continue;
      if (control_flow_roots_.count(id)) continue;
      auto shape = concrete_shape(id);
      if (!shape.ok()) continue;  // sized mid-run: its own buffer
      blocks.push_back({liveness_.live[t].first, liveness_.live[t].last, root_bytes(id, *shape), align});
      roots.push_back(id);
    }
    if (blocks.empty()) return ok_status();
    const memplan::ArenaPlan placed = memplan::plan_arena(blocks);
    if (placed.bytes > device_.description().max_alloc) return ok_status();
    if (placed.bytes > arena_.capacity) {
      if (arena_.buffer) clReleaseMemObject(arena_.buffer);
      arena_.buffer = nullptr;
      arena_.capacity = 0;
      cl_int rc = CL_SUCCESS;
      cl_mem mem = clCreateBuffer(device_.context(), CL_MEM_READ_WRITE, placed.bytes, nullptr, &rc);
      KILN_RETURN_IF_ERROR(cl_status(rc, "allocating the " + std::to_string(placed.bytes) + "-byte buffer arena"));
      arena_.buffer = mem;
      arena_.capacity = placed.bytes;
    }
    for (size_t i = 0; i < roots.size(); ++i) regions_[roots[i]] = {placed.offsets[i], blocks[i].size};
    arena_bytes_ = placed.bytes;
    if (flags_.poison) KILN_RETURN_IF_ERROR(fill_nan(arena_.buffer, placed.bytes));
    no_reuse_bytes_ = memplan::no_reuse_total(blocks);
    return ok_status();
  }

  // A dispatch, or a node on the host: a host step, a fallback, or an If or
  // Loop with everything in it (the caller skips its branches' or body's steps).
  Status run_step(const PlanStep& step, const CompiledDispatch* dispatch) {
    if (step.kind == PlanStep::Kind::kDispatch) {
      if (!dispatch) return internal_error("step of kernel '" + step.kernel.name + "' was not compiled");
      return run_dispatch(step, *dispatch);
    }
    if (step.kind != PlanStep::Kind::kHost) ++fallbacks_;
    return run_on_host(step.node);
  }

  StatusOr<std::vector<Tensor>> outputs() {
    std::vector<Tensor> out;
    for (TensorId id : plan_.outputs) {
      KILN_ASSIGN_OR_RETURN(Tensor t, host_value(id));
      out.push_back(std::move(t));
    }
    return out;
  }

 private:
  const PlanTensor& tensor(TensorId id) const { return plan_.tensors[static_cast<size_t>(id)]; }

  std::string tensor_name(TensorId id) const {
    const PlanTensor& t = tensor(id);
    return t.value != ir::kNoValue ? "'" + graph_.value(t.value).name + "'" : "plan tensor " + std::to_string(id);
  }

  // Binds the symbols of `id`'s plan shape from a concrete shape, and checks
  // the rest.
  Status bind_shape(TensorId id, const Shape& shape, const std::string& what) {
    const std::vector<ir::Dim>& dims = tensor(id).shape;
    if (dims.size() != shape.size())
      return invalid_argument(what + " has rank " + std::to_string(shape.size()) + ", expected " +
                              std::to_string(dims.size()));
    for (size_t k = 0; k < dims.size(); ++k) {
      if (dims[k].is_symbol() && !bindings_.count(dims[k].symbol_name())) bindings_[dims[k].symbol_name()] = shape[k];
      const std::optional<int64_t> want = dims[k].evaluate(bindings_);
      if (want && *want != shape[k])
        return invalid_argument(what + " has dim " + std::to_string(k) + " = " + std::to_string(shape[k]) +
                                ", expected " + dims[k].to_string() + " = " + std::to_string(*want));
    }
    return ok_status();
  }

  StatusOr<Shape> concrete_shape(TensorId id) const {
    Shape shape;
    for (const ir::Dim& d : tensor(id).shape) {
      const std::optional<int64_t> v = d.evaluate(bindings_);
      if (!v || *v < 0)
        return unimplemented("the shape of " + tensor_name(id) + " (dim " + d.to_string() +
                             ") depends on values the OpenCL backend does not compute on the host yet");
      shape.push_back(*v);
    }
    return shape;
  }

  bool is_image(TensorId id) const { return tensor(id).layout.storage == planner::Storage::kImage; }

  // A buffer root's bytes for `shape` (at least 4: no zero-sized buffer).
  uint64_t root_bytes(TensorId id, const Shape& shape) const {
    return std::max<uint64_t>(4, static_cast<uint64_t>(shape_numel(shape)) * planner::elem_bytes(tensor(id).layout.type));
  }

  // The buffer (and offset), or the image of an image-stored tensor,
  // holding `id`'s memory root (allocated on first use).
  StatusOr<DeviceMemory> memory(TensorId id) {
    const TensorId root = planner::memory_root(plan_, id);
    // Only buffers alias or are written in place (LoweringContext::alias_output,
    // planner/inplace.cc): an image is its own root.
    if (is_image(id) != is_image(root))
      return internal_error(tensor_name(id) + " and its memory root " + tensor_name(root) +
                            " differ in storage (image and buffer)");
    if (const auto c = constants_.find(root); c != constants_.end()) return DeviceMemory{c->second};
    if (const auto b = buffers_.find(root); b != buffers_.end()) return DeviceMemory{b->second};
    if (const auto r = regions_.find(root); r != regions_.end()) return DeviceMemory{arena_.buffer, r->second.first};
    KILN_ASSIGN_OR_RETURN(Shape shape, concrete_shape(root));
    if (is_image(root)) {
      KILN_ASSIGN_OR_RETURN(cl_mem image, create_tensor_image(device_, tensor(root).layout, shape, tensor_name(root)));
      buffers_[root] = image;
      if (tensor(root).origin == PlanTensor::Origin::kState) {
        const cl_float4 zero = {{0, 0, 0, 0}};
        const ImageSize size = tensor_image_size(tensor(root).layout, shape);
        const size_t origin[3] = {0, 0, 0}, region[3] = {size.width, size.height, 1};
        KILN_RETURN_IF_ERROR(cl_status(clEnqueueFillImage(queue_, image, &zero, origin, region, 0, nullptr, nullptr),
                                       "zero-filling"));
      }
      return DeviceMemory{image};
    }
    cl_int rc = CL_SUCCESS;
    const size_t bytes = root_bytes(root, shape);
    cl_mem mem = clCreateBuffer(device_.context(), CL_MEM_READ_WRITE, bytes, nullptr, &rc);
    KILN_RETURN_IF_ERROR(cl_status(rc, "allocating " + std::to_string(bytes) + " bytes for " + tensor_name(root)));
    buffers_[root] = mem;
    ++separate_roots_;
    if (flags_.poison && tensor(root).origin != PlanTensor::Origin::kState) KILN_RETURN_IF_ERROR(fill_nan(mem, bytes));
    separate_bytes_ += bytes;
    if (tensor(root).origin == PlanTensor::Origin::kState) {
      const cl_int zero = 0;
      KILN_RETURN_IF_ERROR(cl_status(
          clEnqueueFillBuffer(queue_, mem, &zero, sizeof zero, 0, bytes, 0, nullptr, nullptr), "zero-filling"));
    }
    return DeviceMemory{mem};
  }

  // Fills `bytes` of `mem` with quiet NaNs (KILN_OPENCL_POISON): a kernel
  // that reads memory no kernel wrote then shows as NaN in the outputs
  // instead of as whatever the allocation held.
  Status fill_nan(cl_mem mem, uint64_t bytes) {
    const cl_uint nan = 0x7fc00000u;
    return cl_status(clEnqueueFillBuffer(queue_, mem, &nan, sizeof nan, 0, bytes / sizeof nan * sizeof nan, 0, nullptr,
                                         nullptr),
                     "filling a buffer with NaN");
  }

  // Uploads a host value a kernel reads (once per run).
  Status ensure_on_device(TensorId id) {
    const TensorId data = planner::data_root(plan_, id);
    if (uploaded_.count(data)) return ok_status();
    const auto h = host_.find(data);
    if (h == host_.end()) return ok_status();  // device data, or a constant uploaded at compile time
    KILN_ASSIGN_OR_RETURN(Tensor converted, h->second.cast(device_dtype(tensor(data))));
    KILN_ASSIGN_OR_RETURN(DeviceMemory mem, memory(data));
    if (is_image(data)) {
      KILN_RETURN_IF_ERROR(upload_tensor_image(queue_, mem.mem, tensor(data).layout, converted, tensor_name(data)));
    } else if (converted.nbytes() > 0)
      KILN_RETURN_IF_ERROR(cl_status(clEnqueueWriteBuffer(queue_, mem.mem, CL_TRUE, mem.offset, converted.nbytes(),
                                                          converted.raw_data(), 0, nullptr, nullptr),
                                     "uploading " + tensor_name(data)));
    uploaded_.insert(data);
    return ok_status();
  }

  // The value of a plan tensor on the host, downloading device data.
  StatusOr<Tensor> host_value(TensorId id) {
    const TensorId data = planner::data_root(plan_, id);
    KILN_ASSIGN_OR_RETURN(Shape shape, concrete_shape(id));
    const PlanTensor& t = tensor(id);
    Tensor found;
    if (const auto h = host_.find(data); h != host_.end()) found = h->second;
    else if (tensor(data).constant.defined()) found = tensor(data).constant;
    if (found.defined()) {
      if (found.shape() == shape && found.dtype() == t.dtype) return found;
      KILN_ASSIGN_OR_RETURN(Tensor cast, found.cast(t.dtype));
      return cast.reshaped(shape);
    }
    KILN_ASSIGN_OR_RETURN(DeviceMemory mem, memory(id));
    if (is_image(id)) {
      KILN_ASSIGN_OR_RETURN(Tensor device, download_tensor_image(queue_, mem.mem, t.layout, DType::kFloat32, shape,
                                                                 tensor_name(id)));
      return device.cast(t.dtype);
    }
    KILN_ASSIGN_OR_RETURN(Tensor device, Tensor::allocate(device_dtype(t), shape));
    if (device.nbytes() > 0)
      KILN_RETURN_IF_ERROR(cl_status(clEnqueueReadBuffer(queue_, mem.mem, CL_TRUE, mem.offset, device.nbytes(),
                                                         device.raw_data(), 0, nullptr, nullptr),
                                     "downloading " + tensor_name(id)));
    return device.cast(t.dtype);
  }

  StatusOr<Tensor> value_on_host(ir::ValueId v) {
    if (const auto it = plan_.value_tensor.find(v); it != plan_.value_tensor.end()) return host_value(it->second);
    if (graph_.value(v).is_constant()) return graph_.value(v).constant;
    return internal_error("value '" + graph_.value(v).name + "' has no plan tensor");
  }

  // A host step (shape arithmetic) or a host fallback: the node's reference
  // kernel on its inputs' host values.
  Status run_on_host(ir::NodeId node_id) {
    const ir::Node& node = graph_.node(node_id);
    const ops::OpSchema* schema = ops::OpRegistry::builtin().find(node.domain, node.op);
    if (!schema) return unimplemented(node.describe() + ": no reference kernel to run it on the host");
    std::vector<Tensor> values(node.inputs.size());
    std::vector<const Tensor*> pointers(node.inputs.size(), nullptr);
    std::vector<ops::ValueInfo> infos(node.inputs.size());
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (node.inputs[i] == ir::kNoValue) continue;
      KILN_ASSIGN_OR_RETURN(values[i], value_on_host(node.inputs[i]));
      pointers[i] = &values[i];
      infos[i].dtype = values[i].dtype();
      infos[i].shape = ir::SymShape::from_concrete(values[i].shape());
      infos[i].value = &values[i];
    }
    KILN_ASSIGN_OR_RETURN(std::vector<ops::ValueInfo> inferred, ops::infer_node(*schema, node, std::move(infos)));
    // If and Loop run their sub-graphs on the reference executor, seeing
    // the enclosing values they read from the host.
    std::map<ir::ValueId, Tensor> env;
    for (ir::ValueId v : planner::subgraph_reads(graph_, node)) {
      const bool known = plan_.value_tensor.count(v) || graph_.value(v).is_constant();
      if (!known) continue;  // the sub-graph's own value
      KILN_ASSIGN_OR_RETURN(env[v], value_on_host(v));
    }
    const runtime::ReferenceExecutor executor(graph_);
    ops::RegionRunner runner = [&](ir::RegionId region, std::vector<Tensor> in) {
      return executor.run_region(region, std::move(in), env);
    };
    ops::KernelContext ctx(node, pointers, std::move(inferred), runner);
    KILN_RETURN_IF_ERROR(schema->kernel(ctx));
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      const auto it = plan_.value_tensor.find(node.outputs[i]);
      if (node.outputs[i] == ir::kNoValue || it == plan_.value_tensor.end()) continue;
      Tensor& out = ctx.outputs()[i];
      if (!out.defined()) return internal_error(node.describe() + ": no output " + std::to_string(i));
      KILN_RETURN_IF_ERROR(bind_shape(it->second, out.shape(), node.describe() + " output " + std::to_string(i)));
      host_[planner::data_root(plan_, it->second)] = std::move(out);
    }
    return ok_status();
  }

  // The host parameters of `node`'s kernels (planner::HostParam).
  Status bind_host_params(ir::NodeId node_id) {
    for (const planner::HostParam& p : plan_.host_params) {
      if (p.node != node_id || bindings_.count(p.symbol)) continue;
      const ir::Node& node = graph_.node(node_id);
      planner::HostParamInputs in;
      std::vector<Tensor> values;
      values.reserve(node.inputs.size());
      for (ir::ValueId v : node.inputs) {
        if (v == ir::kNoValue) {
          in.shapes.emplace_back();
          in.values.push_back(nullptr);
          continue;
        }
        const auto it = plan_.value_tensor.find(v);
        const bool on_host = graph_.value(v).is_constant() ||
                             (it != plan_.value_tensor.end() && host_.count(planner::data_root(plan_, it->second)));
        if (on_host) {
          KILN_ASSIGN_OR_RETURN(Tensor t, value_on_host(v));
          values.push_back(std::move(t));
          in.shapes.push_back(values.back().shape());
          in.values.push_back(&values.back());
        } else {
          if (it == plan_.value_tensor.end()) return internal_error("value '" + graph_.value(v).name + "' has no plan tensor");
          KILN_ASSIGN_OR_RETURN(Shape shape, concrete_shape(it->second));
          in.shapes.push_back(std::move(shape));
          in.values.push_back(nullptr);
        }
      }
      auto value = p.fn(in);
      if (!value.ok()) return Status(value.status().code(), node.describe() + ": " + value.status().message());
      bindings_[p.symbol] = *value;
    }
    return ok_status();
  }

  Status run_dispatch(const PlanStep& step, const CompiledDispatch& d) {
    KILN_RETURN_IF_ERROR(bind_host_params(step.node));
    const std::vector<planner::KernelTensor>& tensors = step.kernel.tensors;
    for (size_t b = 0; b < tensors.size(); ++b) {
      if (!tensors[b].written) KILN_RETURN_IF_ERROR(ensure_on_device(tensors[b].tensor));
      KILN_ASSIGN_OR_RETURN(DeviceMemory mem, memory(tensors[b].tensor));
      KILN_RETURN_IF_ERROR(cl_status(clSetKernelArg(d.kernel, static_cast<cl_uint>(b), sizeof(cl_mem), &mem.mem),
                                     "kernel '" + step.kernel.name + "' argument " + std::to_string(b)));
      if (b < d.code.offset_args.size() && d.code.offset_args[b] >= 0) {
        const cl_ulong offset = mem.offset;
        KILN_RETURN_IF_ERROR(cl_status(clSetKernelArg(d.kernel, static_cast<cl_uint>(d.code.offset_args[b]),
                                                      sizeof offset, &offset),
                                       "kernel '" + step.kernel.name + "' argument " + std::to_string(b) + "'s offset"));
      }
    }
    if (d.code.has_push) {
      std::vector<cl_int> push;
      for (const ir::Dim& dim : d.push) {
        const std::optional<int64_t> v = dim.evaluate(bindings_);
        if (!v) return unimplemented("kernel '" + step.kernel.name + "': parameter " + dim.to_string() + " is unbound");
        push.push_back(static_cast<cl_int>(*v));
      }
      KILN_RETURN_IF_ERROR(cl_status(clSetKernelArg(d.kernel, static_cast<cl_uint>(tensors.size()),
                                                    push.size() * sizeof(cl_int), push.data()),
                                     "kernel '" + step.kernel.name + "' parameters"));
    }
    size_t global[3];
    size_t local[3];
    for (int k = 0; k < 3; ++k) {
      const std::optional<int64_t> g = d.groups[k].evaluate(bindings_);
      if (!g) return unimplemented("kernel '" + step.kernel.name + "': grid " + d.groups[k].to_string() + " is unbound");
      if (*g <= 0) return ok_status();  // nothing to do
      local[k] = d.code.local_size[k];
      global[k] = static_cast<size_t>(*g) * local[k];
    }
    if (d.code.requires_exact_grid) {
      std::optional<int64_t> want;
      for (const planner::KernelParam& p : step.kernel.params)
        if (p.name == "KILN_GROUPS") want = p.value.evaluate(bindings_);
      const size_t launched = global[0] / local[0] * (global[1] / local[1]) * (global[2] / local[2]);
      if (!want || static_cast<size_t>(*want) != launched)
        return internal_error("kernel '" + step.kernel.name + "' needs a grid of exactly KILN_GROUPS workgroups, got " +
                              std::to_string(launched));
    }
    cl_event event = nullptr;
    KILN_RETURN_IF_ERROR(
        cl_status(clEnqueueNDRangeKernel(queue_, d.kernel, 3, nullptr, global, local, 0, nullptr, flags_.profile ? &event : nullptr),
                  graph_.node(step.node).describe() + ": kernel '" + step.kernel.name + "'"));
    ++dispatches_;
    const ir::Node& node = graph_.node(step.node);
    if (flags_.check_each_dispatch)
      KILN_RETURN_IF_ERROR(cl_status(clFinish(queue_), node.describe() + ": kernel '" + step.kernel.name +
                                                           "' (dispatch " + std::to_string(dispatches_) +
                                                           ") failed on the device"));
    timed_.push_back(Timed{event, traffic(step.kernel)});
    timed_.back().traffic.kernel = step.kernel.name;
    timed_.back().traffic.node = node.name.empty() ? node.op : node.name;
    if (flags_.trace) KILN_RETURN_IF_ERROR(trace_outputs(step));
    return ok_status();
  }

  // KILN_OPENCL_TRACE: each tensor the dispatch wrote, downloaded, as one
  // line of sums. Two devices running the same plan (KILN_OPENCL_COMPUTE_UNITS
  // makes PoCL plan as a GPU does) diverge first at the faulty kernel.
  Status trace_outputs(const PlanStep& step) {
    KILN_RETURN_IF_ERROR(cl_status(clFinish(queue_), "kernel '" + step.kernel.name + "'"));
    for (const planner::KernelTensor& kt : step.kernel.tensors) {
      if (!kt.written) continue;
      KILN_ASSIGN_OR_RETURN(Tensor t, host_value(kt.tensor));
      KILN_ASSIGN_OR_RETURN(Tensor f, t.cast(DType::kFloat64));
      double sum = 0, abs_sum = 0, max_abs = 0;
      int64_t nans = 0;
      const double* v = f.data<double>();
      for (int64_t i = 0; i < f.numel(); ++i) {
        if (std::isnan(v[i])) {
          ++nans;
          continue;
        }
        sum += v[i];
        abs_sum += std::fabs(v[i]);
        max_abs = std::max(max_abs, std::fabs(v[i]));
      }
      std::fprintf(flags_.trace, "%u %s %s %lld %.9g %.9g %.9g %lld\n", dispatches_, step.kernel.name.c_str(),
                   kt.name.c_str(), static_cast<long long>(f.numel()), sum, abs_sum, max_abs,
                   static_cast<long long>(nans));
    }
    std::fflush(flags_.trace);
    return ok_status();
  }

  // The bytes a dispatch moves (each bound tensor once, whole, as the Vulkan
  // runtime counts them) and its FLOPs, for this run's shapes.
  KernelTime traffic(const planner::KernelDesc& k) const {
    KernelTime out;
    for (const planner::KernelTensor& t : k.tensors) {
      // A tensor read through an index view binds its source.
      const std::vector<ir::Dim>& shape = t.view ? t.view->source_shape : t.shape;
      uint64_t elements = 1;
      for (const ir::Dim& d : shape) {
        const std::optional<int64_t> v = d.evaluate(bindings_);
        elements *= v ? static_cast<uint64_t>(std::max<int64_t>(*v, 0)) : 0;
      }
      (t.written ? out.bytes_written : out.bytes_read) += elements * planner::elem_bytes(t.layout.type);
    }
    const std::optional<int64_t> flops = k.flops.evaluate(bindings_);
    out.flops = flops && *flops > 0 ? static_cast<uint64_t>(*flops) : 0;
    return out;
  }

  // A dispatch of this run: its profiling event (profiled models) and traffic.
  struct Timed {
    cl_event event;
    KernelTime traffic;
  };

  const ir::Graph& graph_;
  const planner::ExecutionPlan& plan_;
  ClDevice& device_;
  cl_command_queue queue_;
  RunFlags flags_;
  const std::map<TensorId, cl_mem>& constants_;
  const planner::Liveness& liveness_;
  const std::set<TensorId>& control_flow_roots_;
  ArenaMemory arena_;
  std::map<TensorId, std::pair<uint64_t, uint64_t>> regions_;  // arena roots: offset, bytes
  uint64_t arena_bytes_ = 0, no_reuse_bytes_ = 0, separate_bytes_ = 0;
  uint32_t separate_roots_ = 0;
  uint32_t dispatches_ = 0, fallbacks_ = 0;
  std::vector<Timed> timed_;  // every dispatch (events: profiled models only)
  std::map<std::string, int64_t> bindings_;
  std::map<TensorId, Tensor> host_;  // by data root
  std::set<TensorId> uploaded_;
  std::map<TensorId, cl_mem> buffers_;
};

}  // namespace

StatusOr<std::vector<Tensor>> OpenClModel::run(const std::vector<Tensor>& inputs, RunReport* report) const {
  std::lock_guard<std::mutex> lock(device_->run_mutex());
  RunFlags flags{profile_, use_arena_, check_each_dispatch_, poison_};
  // A trace file for this run (opened per run: several runs append).
  struct TraceFile {
    std::FILE* f = nullptr;
    ~TraceFile() {
      if (f) std::fclose(f);
    }
  } trace;
  if (!trace_path_.empty()) {
    trace.f = std::fopen(trace_path_.c_str(), "a");
    if (!trace.f) return not_found("KILN_OPENCL_TRACE: cannot write '" + trace_path_ + "'");
    flags.trace = trace.f;
  }
  Run run(*graph_, plan_, *device_, queue_, flags, constants_, liveness_, control_flow_roots_,
          ArenaMemory{arena_, arena_capacity_});
  // The queue finished before `run` releases its buffers (declared after
  // it, so destroyed first), on every way out: an early error return leaves
  // enqueued kernels that still use them.
  struct FinishQueue {
    cl_command_queue queue;
    ~FinishQueue() { clFinish(queue); }
  };
  const FinishQueue finish_first{queue_};
  KILN_RETURN_IF_ERROR(run.set_inputs(inputs));
  KILN_RETURN_IF_ERROR(run.place_arena());
  std::map<size_t, const CompiledDispatch*> by_step;
  for (const CompiledDispatch& d : dispatches_) by_step[d.step] = &d;
  std::map<size_t, size_t> control_end;  // If/Loop head -> the step after its range
  for (const auto& [head, end] : planner::control_ranges(plan_)) control_end[head] = end;
  for (size_t i = 0; i < plan_.steps.size(); ++i) {
    const auto d = by_step.find(i);
    KILN_RETURN_IF_ERROR(run.run_step(plan_.steps[i], d == by_step.end() ? nullptr : d->second));
    if (const auto end = control_end.find(i); end != control_end.end()) i = end->second - 1;
  }
  auto outputs = run.outputs();
  clFinish(queue_);
  if (report && outputs.ok()) {
    KILN_RETURN_IF_ERROR(run.report(*report));
    report->device_bytes = constant_bytes_ + arena_capacity_;
  }
  return outputs;
}

}  // namespace kiln::opencl
