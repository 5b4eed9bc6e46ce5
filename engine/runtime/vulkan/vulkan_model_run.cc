// VulkanModel runs: per input-shape signature, concrete shapes, memory
// placement and recorded command buffers; then submit and read back.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <set>
#include <utility>

#include "engine/runtime/reference_executor.h"
#include "engine/runtime/vulkan/control_flow_executor.h"
#include "planner/device_data.h"
#include "engine/runtime/vulkan/recorder.h"
#include "engine/runtime/vulkan/vulkan_model_impl.h"

namespace kiln::runtime {

using planner::PlanStep;
using planner::PlanTensor;
using planner::Storage;


VulkanModel::Impl::~Impl() {
  (void)device.wait_idle();
  for (auto& [key, sig] : signatures) release(*sig);
}

const std::vector<std::string>& VulkanModel::Impl::label_names() {
  if (label_names_.size() == plan.steps.size() || !options.debug_labels.enabled()) return label_names_;
  label_names_.assign(plan.steps.size(), "");
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    if (plan.steps[s].kind != PlanStep::Kind::kDispatch) continue;
    const std::string& node = graph.node(plan.steps[s].node).name;
    label_names_[s] = node.empty() || node == kernels[s].name ? kernels[s].name : node + " (" + kernels[s].name + ")";
  }
  return label_names_;
}

Status VulkanModel::Impl::record(Signature& sig) {
  Recorder recorder(device, plan, kernels, pipelines, *descriptors, *submitter, options.profile, options.debug_labels,
                    label_names(), [this](const Signature& s, size_t step) { return host_condition(s, step); });
  return recorder.record(sig);
}

StatusOr<Signature*> VulkanModel::Impl::signature_for(const std::vector<InputSpec>& inputs,
                                                      const DeviceBindings& bindings, bool* created) {
  *created = false;
  std::vector<bool> host_resident;
  std::vector<std::string> names;
  for (size_t i = 0; i < inputs.size(); ++i) {
    host_resident.push_back(plan.tensors[static_cast<size_t>(plan.inputs[i])].host_resident);
    names.push_back(graph.value(graph.main().inputs[i]).name);
  }
  KILN_ASSIGN_OR_RETURN(const std::string key, signature_key(inputs, host_resident, names, bindings));
  auto it = signatures.find(key);
  if (it != signatures.end()) return it->second.get();
  // Recording may evict signatures or grow the memory earlier asynchronous
  // submissions still use: they finish first.
  KILN_RETURN_IF_ERROR(submitter->wait_all());
  auto sig = std::make_unique<Signature>();
  Status made = evaluate_shapes(inputs, *sig);
  if (made.ok()) made = find_boundary(*sig);
  if (made.ok()) made = resolve_bindings(bindings, *sig);
  // With a sub-graph boundary, this signature places only what it writes.
  if (made.ok()) made = sig->boundary.step == SIZE_MAX ? place_tensors(*sig) : place_phase(*sig);
  if (made.ok()) made = prepare_image_conversions(*sig);
  if (made.ok()) made = record(*sig);
  if (made.ok()) made = check_memory_limit(sig->device_bytes, "the staging memory of these input shapes");
  if (!made.ok()) {
    release(*sig);
    return made;
  }
  *created = true;
  Signature* raw = sig.get();
  signatures.emplace(key, std::move(sig));
  evict_signatures(signatures, raw);
  return raw;
}

StatusOr<std::vector<Tensor>> VulkanModel::Impl::run(const std::vector<Tensor>& inputs,
                                                     const DeviceBindings& bindings, VulkanRunStats* stats) {
  const auto t0 = Clock::now();
  KILN_RETURN_IF_ERROR(device.status());
  KILN_ASSIGN_OR_RETURN(const std::vector<InputSpec> specs, input_specs(inputs, bindings));
  const vk::KernelCacheStats cache_before = cache.stats();
  Signature* sig = nullptr;
  bool created = false;
  // One run at a time: root signatures share the activation memory.
  std::lock_guard<std::mutex> lock(mutex);
  // After the asynchronous submissions (vulkan_model_async.cc): this run's
  // uploads and downloads go around the model's timeline.
  KILN_RETURN_IF_ERROR(submitter->wait_all());
  KILN_ASSIGN_OR_RETURN(sig, signature_for(specs, bindings, &created));
  sig->last_run = ++runs;
  keep_ticket_outputs(*sig);  // its staging memory is about to be reused
  if (!owns_memory(*sig)) KILN_RETURN_IF_ERROR(restore_arena(*sig));
  KILN_RETURN_IF_ERROR(upload_inputs(*sig, inputs));

  VulkanRunStats ran;
  KILN_RETURN_IF_ERROR(run_segments(*sig, ran));
  // Past each sub-graph boundary, the continuation for what it materialized.
  while (sig->boundary.step != SIZE_MAX) {
    bool made = false;
    KILN_ASSIGN_OR_RETURN(sig, cross_boundary(*sig, specs, bindings, &made, ran));
    created = created || made;
    sig->last_run = runs;
    VulkanRunStats more;
    KILN_RETURN_IF_ERROR(run_segments(*sig, more));
    ran.gpu_ms = ran.gpu_ms < 0 || more.gpu_ms < 0 ? -1 : ran.gpu_ms + more.gpu_ms;
    if (ran.gpu_begin_ns == 0) ran.gpu_begin_ns = more.gpu_begin_ns;
    if (more.gpu_end_ns != 0) ran.gpu_end_ns = more.gpu_end_ns;
    ran.dispatches += more.dispatches;
    ran.fused_dispatches += more.fused_dispatches;
    ran.bytes_read += more.bytes_read;
    ran.bytes_written += more.bytes_written;
    ran.fallbacks += more.fallbacks;
    for (auto& k : more.kernels) ran.kernels.push_back(std::move(k));
    for (auto& b : more.branches) ran.branches.push_back(std::move(b));
    for (auto& l : more.loops) ran.loops.push_back(std::move(l));
  }
  KILN_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, download_outputs(*sig, bindings));
  if (stats) {
    ran.wall_ms = ms_since(t0);
    ran.recorded = created;
    ran.shader_compiles = cache.stats().compiles - cache_before.compiles;
    fill_run_stats(*sig, ran, *stats);
  }
  return outputs;
}

// Checks the inputs against the graph (count, bound or given, dtype, rank,
// static dims) and gives each one's dtype and shape.
StatusOr<std::vector<InputSpec>> VulkanModel::Impl::input_specs(const std::vector<Tensor>& inputs,
                                                                const DeviceBindings& bindings) const {
  const ir::Region& main = graph.main();
  if (inputs.size() != main.inputs.size())
    return invalid_argument("the model takes " + std::to_string(main.inputs.size()) + " inputs, got " +
                            std::to_string(inputs.size()));
  for (const auto& [name, b] : bindings) KILN_RETURN_IF_ERROR(io_tensor(name).status());
  std::vector<InputSpec> specs(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::Value& v = graph.value(main.inputs[i]);
    auto bound = bindings.find(v.name);
    if (bound != bindings.end()) {
      if (inputs[i].defined())
        return invalid_argument("input '" + v.name + "' is bound to a device buffer; pass no tensor for it");
      specs[i] = {v.dtype, bound->second.shape};
    } else {
      if (!inputs[i].defined()) return invalid_argument("input '" + v.name + "' is missing");
      specs[i] = {inputs[i].dtype(), inputs[i].shape(), &inputs[i]};
    }
    if (specs[i].dtype != v.dtype)
      return invalid_argument("input '" + v.name + "' must be " + std::string(dtype_name(v.dtype)) + ", got " +
                              std::string(dtype_name(specs[i].dtype)));
    if (v.shape.has_rank) {
      if (specs[i].shape.size() != v.shape.dims.size())
        return invalid_argument("input '" + v.name + "' must have rank " + std::to_string(v.shape.dims.size()) +
                                " (shape " + v.shape.to_string() + "), got " + shape_to_string(specs[i].shape));
      bool match = true;
      for (size_t k = 0; match && k < v.shape.dims.size(); ++k)
        match = !v.shape.dims[k].is_const() || v.shape.dims[k].value() == specs[i].shape[k];
      if (!match)
        return invalid_argument("input '" + v.name + "' must have shape " + v.shape.to_string() + ", got " +
                                shape_to_string(specs[i].shape));
    }
  }
  return specs;
}

// The given inputs into the staging buffer (the first command buffer copies
// them in) or, when not staged, through Transfer.
Status VulkanModel::Impl::upload_inputs(Signature& sig, const std::vector<Tensor>& inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) continue;
    const Signature::Staged& staged = sig.staged_inputs[i];
    if (staged.tensor == planner::kNoTensor) {
      KILN_RETURN_IF_ERROR(write_tensor(sig, plan.inputs[i], inputs[i]));
      continue;
    }
    const PlanTensor& t = plan.tensors[static_cast<size_t>(staged.tensor)];
    std::vector<std::byte> bytes = to_device(inputs[i], t.layout);
    std::memcpy(sig.staging->data() + staged.offset, bytes.data(), std::min<size_t>(bytes.size(), staged.bytes));
  }
  if (sig.staging) KILN_RETURN_IF_ERROR(sig.staging->flush());
  return ok_status();
}

// The outputs, from the staging buffer (the last command buffer copied them
// there) or through Transfer; outputs bound to the host's buffers are empty.
StatusOr<std::vector<Tensor>> VulkanModel::Impl::download_outputs(Signature& sig, const DeviceBindings& bindings) {
  const ir::Region& main = graph.main();
  std::vector<Tensor> outputs;
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    if (bindings.count(graph.value(main.outputs[i]).name)) {
      outputs.emplace_back();  // the host reads its own buffer
      continue;
    }
    const Signature::Staged& staged = sig.staged_outputs[i];
    if (staged.tensor != planner::kNoTensor) {
      if (i == 0 || sig.staged_outputs[i - 1].tensor == planner::kNoTensor)
        KILN_RETURN_IF_ERROR(sig.staging->invalidate());
      const PlanTensor& t = plan.tensors[static_cast<size_t>(staged.tensor)];
      KILN_ASSIGN_OR_RETURN(Tensor out, from_device(sig.staging->data() + staged.offset, staged.bytes, t.layout,
                                                    t.dtype, sig.shapes[static_cast<size_t>(staged.tensor)]));
      outputs.push_back(std::move(out));
      continue;
    }
    KILN_ASSIGN_OR_RETURN(Tensor t, read_tensor(sig, plan.outputs[i]));
    outputs.push_back(std::move(t));
  }
  return outputs;
}

// `stats` from what the run did (`ran`: its timings, counts, kernels,
// branches and loops, wall time, recorded, shader compiles) and what the
// model holds now (`sig` is the last signature run: its memory plan).
void VulkanModel::Impl::fill_run_stats(const Signature& sig, VulkanRunStats& ran, VulkanRunStats& stats) const {
  stats.wall_ms = ran.wall_ms;
  stats.gpu_ms = ran.gpu_ms;
  // An interval needs both ends (a continuation without timestamps loses it).
  const bool interval = ran.gpu_begin_ns != 0 && ran.gpu_end_ns >= ran.gpu_begin_ns;
  stats.gpu_begin_ns = interval ? ran.gpu_begin_ns : 0;
  stats.gpu_end_ns = interval ? ran.gpu_end_ns : 0;
  stats.queue = submitter->queue_index();
  stats.dispatches = ran.dispatches;
  stats.fused_dispatches = ran.fused_dispatches;
  stats.bytes_read = ran.bytes_read;
  stats.bytes_written = ran.bytes_written;
  stats.branches = std::move(ran.branches);
  stats.loops = std::move(ran.loops);
  stats.host_steps = 0;
  for (const PlanStep& s : plan.steps)
    if (s.kind == PlanStep::Kind::kHost) ++stats.host_steps;
  stats.fallbacks = ran.fallbacks;
  stats.recorded = ran.recorded;
  stats.shader_compiles = ran.shader_compiles;
  stats.activation_bytes = 0;
  for (const auto& memory : activation_memory) stats.activation_bytes += memory ? memory->capacity() : 0;
  stats.signatures = static_cast<uint32_t>(signatures.size());
  stats.device_bytes = (weights_arena ? weights_arena->capacity() : 0) + stats.activation_bytes;
  std::function<uint64_t(const Signature&)> held = [&](const Signature& s) {
    uint64_t bytes = s.device_bytes;
    for (const auto& [key, next] : s.continuations) bytes += held(*next);
    return bytes;
  };
  for (const auto& [key, s] : signatures) stats.device_bytes += held(*s);
  stats.memory = {sig.memory.arena_bytes, sig.memory.live_lower_bound, sig.memory.no_reuse_bytes,
                  sig.memory.best_fit_bytes, sig.memory_plan_ms, sig.image_bytes, sig.images_note,
                  sig.memory.strategy};
  stats.kernels = std::move(ran.kernels);
}

Status VulkanModel::Impl::run_segments(Signature& sig, VulkanRunStats& out) {
  ControlFlowExecutor::Hooks hooks;
  hooks.run_fallback = [this](Signature& s, size_t step) { return run_fallback(s, step); };
  hooks.read_condition = [this](Signature& s, const Segment* seg, TensorId cond, ir::NodeId node) {
    return read_condition(s, seg, cond, node);
  };
  hooks.loop_input = [this](Signature& s, TensorId t) { return loop_input(s, t); };
  ControlFlowExecutor executor(plan, graph, *submitter, options.profile, std::move(hooks));
  return executor.run(sig, out);
}

StatusOr<Tensor> VulkanModel::Impl::read_tensor(Signature& sig, TensorId id) {
  const PlanTensor& t = plan.tensors[static_cast<size_t>(id)];
  if (t.origin == PlanTensor::Origin::kValue) {
    auto hv = sig.host_values.find(t.value);
    if (hv != sig.host_values.end()) return hv->second;
    if (t.constant.defined()) return t.constant;
  }
  const Placement& p = sig.place[static_cast<size_t>(id)];
  const Shape& shape = sig.shapes[static_cast<size_t>(id)];
  if (shape_numel(shape) == 0) return Tensor::allocate(t.dtype, shape);
  if (!p.present) return internal_error("tensor %" + std::to_string(id) + " has no device memory");
  std::vector<std::byte> bytes(device_bytes(t.layout, shape));
  if (p.image) KILN_RETURN_IF_ERROR(transfer->download(*p.image, bytes.data(), bytes.size()));
  else KILN_RETURN_IF_ERROR(transfer->download(*p.buffer, bytes.data(), bytes.size(), p.offset));
  return from_device(bytes.data(), bytes.size(), t.layout, t.dtype, shape);
}

Status VulkanModel::Impl::write_tensor(Signature& sig, TensorId id, const Tensor& value) {
  const PlanTensor& t = plan.tensors[static_cast<size_t>(id)];
  const Placement& p = sig.place[static_cast<size_t>(id)];
  if (!p.present || value.numel() == 0) return ok_status();  // nothing on the device reads it
  std::vector<std::byte> bytes = to_device(value, t.layout);
  if (p.image) return transfer->upload(*p.image, bytes.data(), bytes.size());
  return transfer->upload(*p.buffer, bytes.data(), bytes.size(), p.offset);
}

Status VulkanModel::Impl::run_fallback(Signature& sig, size_t step_index) {
  const ir::Node& node = graph.node(plan.steps[step_index].node);
  KILN_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, fallback_outputs(sig, step_index));
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    if (node.outputs[i] == ir::kNoValue) continue;
    const TensorId id = plan.value_tensor.at(node.outputs[i]);
    if (outputs[i].shape() != sig.shapes[static_cast<size_t>(id)])
      return internal_error(node.describe() + ": host fallback produced another shape than planned");
    KILN_RETURN_IF_ERROR(write_tensor(sig, id, outputs[i]));
  }
  return ok_status();
}

StatusOr<std::vector<Tensor>> VulkanModel::Impl::fallback_outputs(Signature& sig, size_t step_index) {
  const PlanStep& step = plan.steps[step_index];
  const ir::Node& node = graph.node(step.node);
  const ops::OpSchema* schema = ops::OpRegistry::builtin().find(node.domain, node.op);
  std::vector<Tensor> held;
  held.reserve(node.inputs.size());
  std::vector<const Tensor*> ptrs;
  std::vector<ops::ValueInfo> in;
  for (ir::ValueId v : node.inputs) {
    if (v == ir::kNoValue) {
      ptrs.push_back(nullptr);
      in.emplace_back();
      continue;
    }
    KILN_ASSIGN_OR_RETURN(Tensor t, read_tensor(sig, plan.value_tensor.at(v)));
    held.push_back(std::move(t));
    ops::ValueInfo info;
    info.dtype = held.back().dtype();
    info.shape = ir::SymShape::from_concrete(held.back().shape());
    info.value = &held.back();
    ptrs.push_back(&held.back());
    in.push_back(std::move(info));
  }
  KILN_ASSIGN_OR_RETURN(std::vector<ops::ValueInfo> outs, ops::infer_node(*schema, node, in));
  // An If or Loop on the host runs its sub-graphs with the reference
  // executor, reading the enclosing graph's values it needs from `env`.
  std::map<ir::ValueId, Tensor> env;
  const ReferenceExecutor host(graph);
  ops::RegionRunner runner;
  if (std::any_of(node.attrs.begin(), node.attrs.end(),
                  [](const auto& a) { return a.second.kind == ir::AttrKind::kGraph; })) {
    KILN_RETURN_IF_ERROR(host_region_env(sig, step_index, env));
    runner = [&](ir::RegionId region, std::vector<Tensor> region_inputs) {
      return host.run_region(region, std::move(region_inputs), env);
    };
  }
  ops::KernelContext ctx(node, ptrs, outs, runner);
  Status ran = schema->kernel(ctx);
  if (!ran.ok()) return ran.add_context(node.describe());
  std::vector<Tensor> outputs = std::move(ctx.outputs());
  if (outputs.size() < node.outputs.size())
    return internal_error(node.describe() + ": host fallback made too few outputs");
  return outputs;
}

StatusOr<TensorId> VulkanModel::Impl::io_tensor(const std::string& name) const {
  const ir::Region& main = graph.main();
  for (size_t i = 0; i < main.inputs.size(); ++i)
    if (graph.value(main.inputs[i]).name == name) return plan.inputs[i];
  for (size_t i = 0; i < main.outputs.size(); ++i)
    if (graph.value(main.outputs[i]).name == name) return plan.outputs[i];
  std::string ins, outs;
  for (ir::ValueId v : main.inputs) ins += (ins.empty() ? "" : ", ") + graph.value(v).name;
  for (ir::ValueId v : main.outputs) outs += (outs.empty() ? "" : ", ") + graph.value(v).name;
  return not_found("the model has no input or output named '" + name + "' (inputs: " + ins + "; outputs: " + outs +
                   ")");
}

Status VulkanModel::Impl::resolve_bindings(const DeviceBindings& bindings, Signature& sig) const {
  const VkDeviceSize align = std::max<VkDeviceSize>(device.capabilities().min_storage_buffer_offset_alignment, 1);
  struct Range {
    VkBuffer buffer;
    VkDeviceSize begin, end;
    std::string name;
  };
  std::vector<Range> ranges;
  std::map<TensorId, std::string> owner;  // root tensor -> the first name bound to it
  for (const auto& [name, b] : bindings) {
    if (b.image.image != VK_NULL_HANDLE) {  // converted from or into a host image (vulkan_model_images.cc)
      KILN_RETURN_IF_ERROR(resolve_image_binding(name, b.image, sig));
      continue;
    }
    KILN_ASSIGN_OR_RETURN(TensorId id, io_tensor(name));
    const std::string what = "'" + name + "'";
    if (b.buffer == VK_NULL_HANDLE) return invalid_argument("the buffer bound to " + what + " is VK_NULL_HANDLE");
    if (b.offset % align != 0)
      return invalid_argument("the range bound to " + what + " starts at offset " + std::to_string(b.offset) +
                              ", not a multiple of the device's minStorageBufferOffsetAlignment (" +
                              std::to_string(align) + ")");
    // Outputs may share memory with another tensor (Reshape, Identity): the
    // memory's owner, the alias root, is what lives in the host's buffer.
    TensorId root = id;
    while (plan.tensors[static_cast<size_t>(root)].alias_of != planner::kNoTensor)
      root = plan.tensors[static_cast<size_t>(root)].alias_of;
    const PlanTensor& t = plan.tensors[static_cast<size_t>(id)];
    const PlanTensor& rt = plan.tensors[static_cast<size_t>(root)];
    if (t.layout.storage == Storage::kImage || rt.layout.storage == Storage::kImage)
      return failed_precondition(what + " is stored in an image in this plan; only buffer-stored tensors can live in "
                                        "a Vulkan buffer (use buffer storage)");
    if (t.constant.defined() || rt.constant.defined())
      return failed_precondition(what + " is a constant of the model; it cannot be bound to a buffer");
    if (t.host_resident || rt.host_resident)
      return failed_precondition(what + " is computed on the host (shape arithmetic); it cannot be bound to a buffer");
    const VkDeviceSize need = std::max(device_bytes(t.layout, sig.shapes[static_cast<size_t>(id)]),
                                       device_bytes(rt.layout, sig.shapes[static_cast<size_t>(root)]));
    if (need > b.size)
      return invalid_argument(what + " needs " + std::to_string(need) + " bytes (shape " +
                              shape_to_string(sig.shapes[static_cast<size_t>(id)]) + " of " +
                              planner::elem_type_name(t.layout.type) + "), the bound range has " +
                              std::to_string(b.size));
    auto [it, inserted] = sig.external.emplace(root, b);
    if (!inserted) {
      if (it->second.buffer != b.buffer || it->second.offset != b.offset)
        return failed_precondition(what + " shares device memory with '" + owner[root] +
                                   "' in this plan; bind both to the same range, or only one of them");
      continue;
    }
    owner[root] = name;
    for (const Range& r : ranges)
      if (r.buffer == b.buffer && b.offset < r.end && r.begin < b.offset + need)
        return invalid_argument("the ranges bound to " + what + " and '" + r.name + "' overlap in one buffer");
    ranges.push_back({b.buffer, b.offset, b.offset + need, name});
  }
  return ok_status();
}

void VulkanModel::Impl::forget_buffer(VkBuffer buffer) {
  std::lock_guard<std::mutex> lock(mutex);
  // Asynchronous submissions may still use it; a failed wait means a lost
  // device, which no longer runs anything.
  (void)submitter->wait_all();
  for (auto it = signatures.begin(); it != signatures.end();) {
    Signature& sig = *it->second;
    const bool uses = std::any_of(sig.external.begin(), sig.external.end(),
                                  [&](const auto& e) { return e.second.buffer == buffer; });
    if (!uses) {
      ++it;
      continue;
    }
    // Not in flight: runs hold `mutex`, submissions were waited for.
    release(sig);
    it = signatures.erase(it);
  }
}

StatusOr<planner::DeviceLayout> VulkanModel::io_layout(const std::string& name) const {
  KILN_ASSIGN_OR_RETURN(TensorId id, slots_[0]->io_tensor(name));
  return slots_[0]->plan.tensors[static_cast<size_t>(id)].layout;
}

}  // namespace kiln::runtime
