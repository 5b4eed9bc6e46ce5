// Recorder (recorder.h): a signature's command buffers, in named phases
// (segment_steps -> link_loop_bodies -> plan_staging ->
// plan_condition_copies -> record_segment), with barriers only where
// HazardTracker finds a hazard, and the staged input, output and condition
// copies. Placement, which it records against, is vulkan_model_place.cc.
#include "engine/runtime/vulkan/recorder.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <set>

#include "planner/device_data.h"
#include "engine/runtime/vulkan/hazard_tracker.h"
#include "platform/vulkan/barriers.h"

namespace kiln::runtime {

using planner::PlanStep;
using planner::PlanTensor;
using planner::Storage;

namespace {

// Accesses of every pass over a command buffer's memory besides the kernels'
// own (copies in and out, earlier submissions): what an image's rebirth
// barrier orders before it.
constexpr VkAccessFlags kAllShaderTransfer = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                             VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
constexpr VkAccessFlags kShaderAccess = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;

}  // namespace

Status Recorder::record(Signature& sig) {
  KILN_RETURN_IF_ERROR(segment_steps(sig));
  link_loop_bodies(sig);
  KILN_RETURN_IF_ERROR(plan_staging(sig));
  KILN_RETURN_IF_ERROR(plan_condition_copies(sig));
  if (!sig.image_conversions.empty()) {
    const IoSegments io = io_segments(sig);
    if (io.first == SIZE_MAX)
      return failed_precondition("no kernel of this run is on the device, so nothing converts its image bindings");
    if (io.host_before || io.host_after)
      return failed_precondition("image bindings need a run whose first and last kernels start and end it on the "
                                 "device; this one runs steps on the host (or decides Ifs and Loops there) before "
                                 "its first or after its last kernel");
  }
  Segment* first = nullptr;
  Segment* last = nullptr;
  for (Segment& seg : sig.segments)
    if (!seg.dispatches.empty()) {
      if (!first) first = &seg;
      last = &seg;
    }
  for (Segment& seg : sig.segments) {
    if (seg.dispatches.empty()) continue;
    KILN_RETURN_IF_ERROR(record_segment(sig, seg, &seg == first, &seg == last));
  }
  return ok_status();
}

// Splits the signature's steps into segments at host fallbacks and Ifs, and
// where each branch of an If starts and ends (a run submits the taken branch
// only), and prepares every dispatch (sizes, push constants, descriptors).
// An If whose condition is a host value is decided now, for the signature:
// only its taken branch is recorded, in line, with no split.
Status Recorder::segment_steps(Signature& sig) {
  std::map<size_t, bool> decided;
  std::set<size_t> branch_bounds;
  // Only the signature's own steps: a sub-graph boundary (find_boundary)
  // never lies inside an If's or a Loop's range.
  for (size_t s = sig.first_step; s < sig.end_step; ++s) {
    const PlanStep& step = plan_.steps[s];
    if (step.kind == PlanStep::Kind::kLoop) branch_bounds.insert(step.body_end);
    if (step.kind != PlanStep::Kind::kIf) continue;
    KILN_ASSIGN_OR_RETURN(const std::optional<bool> known, host_condition_(sig, s));
    if (known) {
      decided[s] = *known;
      continue;
    }
    branch_bounds.insert(step.then_end);
    branch_bounds.insert(step.else_end);
  }
  auto start_segment = [&](size_t first_step) {
    sig.segments.emplace_back();
    sig.segments.back().first_step = first_step;
  };
  start_segment(sig.first_step);
  std::map<size_t, size_t> skip_to;  // a decided If's then range ends: past its else range
  for (size_t s = sig.first_step; s < sig.end_step; ++s) {
    for (auto j = skip_to.find(s); j != skip_to.end(); j = skip_to.find(s)) {
      s = j->second;
      skip_to.erase(j);
    }
    if (s >= sig.end_step) break;
    const PlanStep& step = plan_.steps[s];
    if (auto d = decided.find(s); d != decided.end()) {
      sig.segments.back().decided_ifs.push_back({s, d->second});
      if (d->second) {
        if (step.then_end < step.else_end) skip_to[step.then_end] = step.else_end;
      } else {
        s = step.then_end - 1;  // the else range is next
      }
      continue;
    }
    if (branch_bounds.count(s) && sig.segments.back().first_step != s) start_segment(s);
    if (step.kind == PlanStep::Kind::kFallback || step.kind == PlanStep::Kind::kIf ||
        step.kind == PlanStep::Kind::kLoop) {
      Segment& seg = sig.segments.back();
      if (step.kind == PlanStep::Kind::kFallback) seg.fallback_step = s;
      if (step.kind == PlanStep::Kind::kLoop) seg.loop_step = s;
      if (step.kind == PlanStep::Kind::kIf) {
        seg.if_step = s;
        seg.condition = step.cond;
      }
      start_segment(s + 1);
      continue;
    }
    if (step.kind != PlanStep::Kind::kDispatch) continue;
    RecordedDispatch d;
    bool empty = false;
    KILN_RETURN_IF_ERROR(prepare_dispatch(sig, s, d, &empty));
    if (empty) continue;  // empty tensor: nothing to do
    sig.segments.back().dispatches.push_back(std::move(d));
    ++sig.dispatches;
  }
  return ok_status();
}

// Dispatch step `s` at the signature's sizes: workgroup counts, push
// constants, and descriptor sets pointing at its tensors' placements. Sets
// *empty (and prepares nothing more) when a workgroup count is zero.
Status Recorder::prepare_dispatch(Signature& sig, size_t s, RecordedDispatch& d, bool* empty) {
  const PlanStep& step = plan_.steps[s];
  const planner::GeneratedKernel& k = kernels_[s];
  d.step = s;
  for (size_t i = 0; i < 3; ++i) {
    auto g = k.groups[i].evaluate(sig.bindings);
    if (!g || *g < 0) return internal_error("kernel '" + k.name + "': unbound dispatch size " + k.groups[i].to_string());
    if (*g > static_cast<int64_t>(device_.capabilities().max_compute_work_group_count[i]))
      return unimplemented("kernel '" + k.name + "' needs " + std::to_string(*g) + " workgroups in dimension " +
                           std::to_string(i) + ", above the device limit");
    d.groups[i] = static_cast<uint32_t>(*g);
  }
  *empty = d.groups[0] == 0 || d.groups[1] == 0 || d.groups[2] == 0;
  if (*empty) return ok_status();
  const vk::ComputePipeline& pipeline = *pipelines_[s];
  std::vector<int32_t> push;
  for (const ir::Dim& p : k.push) {
    auto v = p.evaluate(sig.bindings);
    if (!v) return internal_error("kernel '" + k.name + "': unbound parameter " + p.to_string());
    push.push_back(static_cast<int32_t>(*v));
  }
  d.push.assign(pipeline.reflection().push_constant_size, std::byte{0});
  if (!push.empty() && !d.push.empty())
    std::memcpy(d.push.data(), push.data(), std::min(d.push.size(), push.size() * sizeof(int32_t)));
  KILN_ASSIGN_OR_RETURN(d.sets, descriptors_.allocate(pipeline));
  std::vector<vk::DescriptorResource> resources;
  for (size_t b = 0; b < step.kernel.tensors.size(); ++b) {
    if (!pipeline.reflection().find(0, static_cast<uint32_t>(b))) continue;  // optimized away
    const TensorId t = step.kernel.tensors[b].tensor;
    const Placement& p = sig.place[static_cast<size_t>(t)];
    if (!p.present) return internal_error("kernel '" + k.name + "' binds tensor %" + std::to_string(t) + " with no memory");
    vk::DescriptorResource r;
    r.binding = static_cast<uint32_t>(b);
    if (p.image) {
      r.image = p.image;
    } else {
      r.buffer = p.buffer;
      r.offset = p.offset;
      r.range = std::max<VkDeviceSize>(p.size, 4);
    }
    resources.push_back(r);
  }
  return vk::write_descriptors(pipeline, d.sets, resources);
}

// Each Loop's body: the segments after its own, up to its body's end; the
// last one decides whether the body runs again (by the body's condition).
void Recorder::link_loop_bodies(Signature& sig) {
  for (size_t k = 0; k < sig.segments.size(); ++k) {
    if (sig.segments[k].loop_step == SIZE_MAX) continue;
    const PlanStep& step = plan_.steps[sig.segments[k].loop_step];
    size_t last = k;
    while (last + 1 < sig.segments.size() && sig.segments[last + 1].first_step < step.body_end) ++last;
    if (last == k) continue;
    sig.loop_bodies[sig.segments[k].loop_step] = {k + 1, last};
    // (A body ending in an empty If keeps that If's condition there; the
    // body's is then downloaded.)
    if (sig.segments[last].if_step == SIZE_MAX) sig.segments[last].condition = step.body_cond;
  }
}

// The memory ranges dispatch step `s` reads and writes (constants, which
// never change during a run, left out).
void Recorder::dispatch_ranges(const Signature& sig, size_t s, std::vector<MemoryRange>& reads,
                                        std::vector<MemoryRange>& writes) const {
  for (const planner::KernelTensor& kt : plan_.steps[s].kernel.tensors) {
    const Placement& p = sig.place[static_cast<size_t>(kt.tensor)];
    if (p.resource < 0) continue;
    const MemoryRange a{p.resource, p.offset, p.offset + std::max<VkDeviceSize>(p.size, 1)};
    (kt.written ? writes : reads).push_back(a);
  }
}

// One segment's command buffer: the input copies (first segment), the
// dispatches with barriers where HazardTracker finds a hazard and image
// rebirths, the condition copy, the output copies (last segment) and
// timestamps.
Status Recorder::record_segment(Signature& sig, Segment& seg, bool first, bool last) {
  const VolkDeviceTable& fn = device_.fn();
  if (device_.timestamp_valid_bits() != 0) {
    const uint32_t count = profile_ ? static_cast<uint32_t>(seg.dispatches.size()) + 1 : 2;
    auto ts = vk::TimestampQueries::create(device_, count);
    if (ts.ok()) seg.timestamps = std::move(ts).value();
  }
  KILN_ASSIGN_OR_RETURN(seg.cmd, submitter_.allocate());
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  // Asynchronous runs submit it again while earlier submissions are pending.
  begin.flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT;
  KILN_RETURN_IF_ERROR(device_.check(fn.vkBeginCommandBuffer(seg.cmd, &begin), "vkBeginCommandBuffer"));
  if (seg.timestamps) seg.timestamps->reset(seg.cmd);
  // Unprofiled, two stamps bracket the whole segment, copies included. The
  // first is bottom-of-pipe: written once every earlier command on the
  // queue is done (the entry barrier waits for them anyway), so that the
  // segment's time and a run's start (RunStats::gpu_begin_ns) exclude
  // waiting behind other work; a top-of-pipe stamp could be written while
  // another run on the same queue still executes.
  if (seg.timestamps && !profile_) (void)seg.timestamps->write(seg.cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT);
  if (first) record_input_copies(sig, seg.cmd);
  // Profiled, the first kernel's time starts when the input copies are done
  // (a bottom-of-pipe stamp waits for every earlier command), so that a
  // kernel's time is its own and not the upload's.
  if (seg.timestamps && profile_) (void)seg.timestamps->write(seg.cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT);
  // Every kernel runs after what earlier commands on the queue wrote: the
  // host's uploads or render passes into bound buffers, and work of this
  // model the host recorded into its own command buffers (record_into),
  // which shares this memory.
  record_entry_barrier(seg.cmd);
  plan_barriers(sig, seg);
  Status status = first ? record_image_inputs(sig, seg.cmd) : ok_status();
  if (status.ok()) status = record_dispatches(sig, seg, seg.cmd, profile_ ? seg.timestamps.get() : nullptr);
  if (status.ok() && last) status = record_image_outputs(sig, seg.cmd);
  if (status.ok() && (!sig.external.empty() || !sig.image_conversions.empty())) record_exit_barrier(seg.cmd);
  if (status.ok() && seg.condition_copied) record_condition_copy(sig, seg, seg.cmd);
  if (status.ok() && last) record_output_copies(sig, seg.cmd);
  if (status.ok() && seg.timestamps && !profile_)
    (void)seg.timestamps->write(seg.cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT);
  const VkResult end = fn.vkEndCommandBuffer(seg.cmd);
  KILN_RETURN_IF_ERROR(status);
  return device_.check(end, "vkEndCommandBuffer");
}

void Recorder::record_entry_barrier(VkCommandBuffer cmd) {
  vk::cmd_memory_barrier(device_.fn(), cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                         VK_ACCESS_MEMORY_WRITE_BIT, kShaderAccess);
}

// What the kernels wrote is visible to later commands on the queue and,
// after a wait for the submission, to the host.
void Recorder::record_exit_barrier(VkCommandBuffer cmd) {
  vk::cmd_memory_barrier(device_.fn(), cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                         VK_PIPELINE_STAGE_ALL_COMMANDS_BIT | VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                         VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT | VK_ACCESS_HOST_READ_BIT);
}

Status Recorder::record_into(Signature& sig, VkCommandBuffer cmd) {
  return record_slice_into(sig, cmd, 0, sig.dispatches);
}

// The host's recordings replay sig.host_commands: the segments' dispatches
// with the barriers plan_barriers gave them, and between segments (each was
// planned on its own, as its own command buffer) a compute barrier.
Status Recorder::build_host_commands(Signature& sig) {
  if (sig.host_commands.built) return ok_status();
  // Images born mid-run need layout transitions that the flat commands do
  // not carry; host_recordable refuses image-stored plans.
  if (!sig.image_births.empty())
    return internal_error("a run with image tensors cannot be recorded into the host's command buffer");
  HostCommands commands;
  bool first_segment = true;
  for (const Segment& seg : sig.segments) {
    for (size_t i = 0; i < seg.dispatches.size(); ++i) {
      const RecordedDispatch& d = seg.dispatches[i];
      const vk::ComputePipeline& pipeline = *pipelines_[d.step];
      HostDispatch h;
      h.pipeline = pipeline.handle();
      h.layout = pipeline.layout();
      h.groups[0] = d.groups[0];
      h.groups[1] = d.groups[1];
      h.groups[2] = d.groups[2];
      h.step = static_cast<uint32_t>(d.step);
      h.planned_barrier = d.barrier_before;
      h.segment_start = i == 0 && !first_segment;
      commands.add(h, d.sets, d.push);
    }
    if (!seg.dispatches.empty()) first_segment = false;
  }
  if (commands.dispatches.size() != sig.dispatches)
    return internal_error("the signature counts " + std::to_string(sig.dispatches) + " dispatches, its segments hold " +
                          std::to_string(commands.dispatches.size()));
  commands.built = true;
  sig.host_commands = std::move(commands);
  return ok_status();
}

// A slice that starts mid-segment follows the entry barrier, which orders
// everything before it, so the barriers planned within the segment stay
// sufficient.
Status Recorder::record_slice_into(Signature& sig, VkCommandBuffer cmd, size_t first, size_t end) {
  KILN_RETURN_IF_ERROR(build_host_commands(sig));
  const size_t all = sig.host_commands.dispatches.size();
  if (end > all || (first >= end && all != 0))  // (a run of no dispatch records only the barriers)
    return internal_error("slice [" + std::to_string(first) + ", " + std::to_string(end) + ") of a run of " +
                          std::to_string(all) + " dispatches");
  record_entry_barrier(cmd);
  if (first == 0) KILN_RETURN_IF_ERROR(record_image_inputs(sig, cmd));
  sig.host_commands.record(device_.fn(), cmd, first, end, labels_, label_names_);
  if (end == all) KILN_RETURN_IF_ERROR(record_image_outputs(sig, cmd));
  record_exit_barrier(cmd);
  return ok_status();
}

// A barrier before each dispatch that has a hazard with those since the
// last barrier; an image first written by a dispatch gets its layout
// transition there, a barrier that orders everything before it too.
void Recorder::plan_barriers(Signature& sig, Segment& seg) {
  HazardTracker hazards;
  std::vector<MemoryRange> reads, writes;
  for (RecordedDispatch& d : seg.dispatches) {
    reads.clear();
    writes.clear();
    dispatch_ranges(sig, d.step, reads, writes);
    d.barrier_before = hazards.needs_barrier(reads, writes);
    if (sig.image_births.count(d.step) != 0) {
      hazards.barrier();
      d.barrier_before = false;  // the images' barrier (record_dispatches) orders everything before it
    } else if (d.barrier_before) {
      hazards.barrier();
    }
    hazards.record(reads, writes);
  }
}

// The segment's dispatches into its own command buffer `cmd`, each after
// the barrier plan_barriers gave it; a timestamp after each when
// `timestamps` is given. (The host's command buffers get them from
// sig.host_commands instead: record_slice_into.)
Status Recorder::record_dispatches(Signature& sig, const Segment& seg, VkCommandBuffer cmd,
                                   vk::TimestampQueries* timestamps) {
  const VolkDeviceTable& fn = device_.fn();
  for (const RecordedDispatch& d : seg.dispatches) {
    if (auto born = sig.image_births.find(d.step); born != sig.image_births.end()) {
      // Images whose memory earlier tensors of this run (or the previous
      // run) used: UNDEFINED -> GENERAL here, after every earlier access
      // in the queue (the execution and memory dependency covers the
      // previous users' reads and writes, in this command buffer and the
      // earlier submissions), and before this first write.
      std::vector<VkImageMemoryBarrier> to_general;
      for (const vk::Image* image : born->second)
        to_general.push_back(vk::image_barrier(image->handle(), VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_GENERAL,
                                               kAllShaderTransfer, kShaderAccess));
      const VkMemoryBarrier mb = vk::memory_barrier(kAllShaderTransfer, kShaderAccess);
      vk::cmd_barrier(fn, cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                      VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, &mb, to_general);
    }
    if (d.barrier_before) {
      vk::cmd_memory_barrier(fn, cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                             VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT, kShaderAccess);
    }
    if (labels_.enabled()) labels_.open(cmd, label_names_.at(d.step).c_str());
    const Status recorded = vk::record_dispatch(cmd, *pipelines_[d.step], d.sets, d.push, d.groups);
    labels_.close(cmd);
    KILN_RETURN_IF_ERROR(recorded);
    if (timestamps) (void)timestamps->write(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT);
  }
  return ok_status();
}

Recorder::IoSegments Recorder::io_segments(const Signature& sig) const {
  IoSegments io;
  for (size_t i = 0; i < sig.segments.size(); ++i)
    if (!sig.segments[i].dispatches.empty()) {
      if (io.first == SIZE_MAX) io.first = i;
      io.last = i;
    }
  if (io.first == SIZE_MAX) return io;
  for (size_t i = 0; i < sig.segments.size(); ++i)
    if (sig.segments[i].fallback_step != SIZE_MAX) {
      if (i < io.first) io.host_before = true;
      if (i >= io.last) io.host_after = true;
    }
  // Past a sub-graph boundary the inputs are in place already; before one,
  // the outputs are not made yet.
  if (sig.first_step != 0) io.host_before = true;
  if (sig.end_step != plan_.steps.size()) io.host_after = true;
  // A segment inside an If's branch or a Loop's body may run no time (or
  // many): the copies ride elsewhere.
  for (const PlanStep& step : plan_.steps) {
    if (step.kind != PlanStep::Kind::kIf && step.kind != PlanStep::Kind::kLoop) continue;
    const size_t head = static_cast<size_t>(&step - plan_.steps.data());
    const size_t end = step.kind == PlanStep::Kind::kIf ? step.else_end : step.body_end;
    auto in_branch = [&](size_t seg) {
      return sig.segments[seg].first_step > head && sig.segments[seg].first_step < end;
    };
    if (in_branch(io.first)) io.host_before = true;
    if (in_branch(io.last)) io.host_after = true;
  }
  return io;
}

Status Recorder::record_image_inputs(const Signature& sig, VkCommandBuffer cmd) {
  if (std::none_of(sig.image_conversions.begin(), sig.image_conversions.end(),
                   [](const ImageConversion& c) { return c.to_tensor && c.pipeline; }))
    return ok_status();
  KILN_RETURN_IF_ERROR(record_image_conversions(cmd, sig.image_conversions, true));
  // The kernels read what the conversions wrote (the entry barrier before
  // them made the host's image visible).
  vk::cmd_memory_barrier(device_.fn(), cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                         VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT, kShaderAccess);
  return ok_status();
}

Status Recorder::record_image_outputs(const Signature& sig, VkCommandBuffer cmd) {
  if (std::none_of(sig.image_conversions.begin(), sig.image_conversions.end(),
                   [](const ImageConversion& c) { return !c.to_tensor; }))
    return ok_status();
  // The conversions read what the kernels wrote; the exit barrier after
  // them makes the host's image visible to later commands.
  vk::cmd_memory_barrier(device_.fn(), cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                         VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT, kShaderAccess);
  return record_image_conversions(cmd, sig.image_conversions, false);
}

// Which inputs and outputs travel through the staging buffer, and where.
Status Recorder::plan_staging(Signature& sig) {
  sig.staged_inputs.assign(plan_.inputs.size(), {});
  sig.staged_outputs.assign(plan_.outputs.size(), {});
  // Inputs ride in the first command buffer unless a host fallback reads them
  // before it; outputs in the last unless a fallback runs after it.
  const IoSegments io = io_segments(sig);
  if (io.first == SIZE_MAX) return ok_status();
  const bool fallback_before = io.host_before, fallback_after = io.host_after;
  VkDeviceSize total = 0;
  auto stage = [&](TensorId t, Signature::Staged* out) {
    const TensorId root = planner::memory_root(plan_, t);
    const Placement& p = sig.place[static_cast<size_t>(t)];
    const PlanTensor& pt = plan_.tensors[static_cast<size_t>(t)];
    if (!p.present || p.resource < 0 || sig.external.count(root) || pt.host_resident) return;
    if (sig.image_tensors.count(t)) return;  // converted from or into a host image
    if (shape_numel(sig.shapes[static_cast<size_t>(t)]) == 0) return;
    if (p.image && pt.alias_of != planner::kNoTensor) return;
    out->tensor = t;
    out->offset = total;
    out->bytes = device_bytes(pt.layout, sig.shapes[static_cast<size_t>(t)]);
    total += (out->bytes + 255) / 256 * 256;
  };
  if (!fallback_before)
    for (size_t i = 0; i < plan_.inputs.size(); ++i) stage(plan_.inputs[i], &sig.staged_inputs[i]);
  for (size_t i = 0; i < plan_.outputs.size() && !fallback_after; ++i) {
    // An output that is also an input or another output is read back once
    // through Transfer instead (a rare graph that forwards its input).
    bool duplicate = std::count(plan_.outputs.begin(), plan_.outputs.end(), plan_.outputs[i]) > 1 ||
                     std::count(plan_.inputs.begin(), plan_.inputs.end(), plan_.outputs[i]) > 0;
    if (!duplicate) stage(plan_.outputs[i], &sig.staged_outputs[i]);
  }
  if (total == 0) return ok_status();
  KILN_ASSIGN_OR_RETURN(sig.staging, vk::HostBuffer::create(device_, total));
  sig.device_bytes += total;
  return ok_status();
}

namespace {

void copy_region(const VolkDeviceTable& fn, VkCommandBuffer cmd, const Placement& p, VkBuffer staging,
                 VkDeviceSize staging_offset, VkDeviceSize bytes, bool to_device) {
  if (p.image) {
    // Copies use the transfer-optimal layouts; kernels use GENERAL.
    const VkImageLayout copy_layout =
        to_device ? VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL : VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
    const VkAccessFlags copy_access = to_device ? VK_ACCESS_TRANSFER_WRITE_BIT : VK_ACCESS_TRANSFER_READ_BIT;
    vk::cmd_barrier(fn, cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                    VK_PIPELINE_STAGE_TRANSFER_BIT, nullptr,
                    {vk::image_barrier(p.image->handle(), VK_IMAGE_LAYOUT_GENERAL, copy_layout, kAllShaderTransfer,
                                       copy_access)});
    VkBufferImageCopy region{};
    region.bufferOffset = staging_offset;
    region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
    region.imageExtent = {p.image->width(), p.image->height(), 1};
    if (to_device) fn.vkCmdCopyBufferToImage(cmd, staging, p.image->handle(), copy_layout, 1, &region);
    else fn.vkCmdCopyImageToBuffer(cmd, p.image->handle(), copy_layout, staging, 1, &region);
    vk::cmd_barrier(fn, cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                    VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, nullptr,
                    {vk::image_barrier(p.image->handle(), copy_layout, VK_IMAGE_LAYOUT_GENERAL, copy_access,
                                       kShaderAccess | VK_ACCESS_TRANSFER_READ_BIT)});
    return;
  }
  VkBufferCopy region{};
  region.size = bytes;
  if (to_device) {
    region.srcOffset = staging_offset;
    region.dstOffset = p.offset;
    fn.vkCmdCopyBuffer(cmd, staging, p.buffer->handle(), 1, &region);
  } else {
    region.srcOffset = p.offset;
    region.dstOffset = staging_offset;
    fn.vkCmdCopyBuffer(cmd, p.buffer->handle(), staging, 1, &region);
  }
}

}  // namespace

void Recorder::record_input_copies(Signature& sig, VkCommandBuffer cmd) {
  if (!sig.staging) return;
  const VolkDeviceTable& fn = device_.fn();
  // The previous run's kernels and copies are done with this memory (the
  // host waited for them); order the copies after them and make the host's
  // writes to the staging buffer visible.
  vk::cmd_memory_barrier(fn, cmd,
                         VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_HOST_WRITE_BIT | kAllShaderTransfer,
                         VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
  for (const Signature::Staged& s : sig.staged_inputs)
    if (s.tensor != planner::kNoTensor)
      copy_region(fn, cmd, sig.place[static_cast<size_t>(s.tensor)], sig.staging->handle(), s.offset, s.bytes, true);
  vk::cmd_memory_barrier(fn, cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                         VK_ACCESS_TRANSFER_WRITE_BIT, kShaderAccess);
}

void Recorder::record_output_copies(Signature& sig, VkCommandBuffer cmd) {
  if (!sig.staging) return;
  const VolkDeviceTable& fn = device_.fn();
  vk::cmd_memory_barrier(fn, cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_ACCESS_SHADER_WRITE_BIT, VK_ACCESS_TRANSFER_READ_BIT);
  for (const Signature::Staged& s : sig.staged_outputs)
    if (s.tensor != planner::kNoTensor)
      copy_region(fn, cmd, sig.place[static_cast<size_t>(s.tensor)], sig.staging->handle(), s.offset, s.bytes, false);
  vk::cmd_memory_barrier(fn, cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                         VK_ACCESS_TRANSFER_WRITE_BIT, VK_ACCESS_HOST_READ_BIT);
}

Status Recorder::plan_condition_copies(Signature& sig) {
  VkDeviceSize total = 0;
  for (Segment& seg : sig.segments) {
    if (seg.condition == planner::kNoTensor || seg.dispatches.empty() || seg.fallback_step != SIZE_MAX) continue;
    const TensorId cond = seg.condition;
    const PlanTensor& t = plan_.tensors[static_cast<size_t>(cond)];
    const Placement& p = sig.place[static_cast<size_t>(cond)];
    // Host values and constants are read on the host; images (never a bool
    // in practice) through a download.
    if (t.host_resident || t.constant.defined() || !p.present || p.image || p.resource < 0) continue;
    if (shape_numel(sig.shapes[static_cast<size_t>(cond)]) != 1) continue;  // read_condition names the error
    seg.condition_copied = true;
    seg.condition_offset = total;
    total += 256;
  }
  if (total == 0) return ok_status();
  KILN_ASSIGN_OR_RETURN(sig.conditions, vk::HostBuffer::create(device_, total));
  sig.device_bytes += total;
  return ok_status();
}

void Recorder::record_condition_copy(Signature& sig, Segment& seg, VkCommandBuffer cmd) {
  const VolkDeviceTable& fn = device_.fn();
  const TensorId cond = seg.condition;
  const Placement& p = sig.place[static_cast<size_t>(cond)];
  vk::cmd_memory_barrier(fn, cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                         VK_ACCESS_TRANSFER_READ_BIT);
  VkBufferCopy region{};
  region.srcOffset = p.offset;
  region.dstOffset = seg.condition_offset;
  region.size = device_bytes(plan_.tensors[static_cast<size_t>(cond)].layout, sig.shapes[static_cast<size_t>(cond)]);
  fn.vkCmdCopyBuffer(cmd, p.buffer->handle(), sig.conditions->handle(), 1, &region);
  vk::cmd_memory_barrier(fn, cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                         VK_ACCESS_TRANSFER_WRITE_BIT, VK_ACCESS_HOST_READ_BIT);
}

}  // namespace kiln::runtime
