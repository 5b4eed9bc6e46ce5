// Per signature: where every tensor lives, and the recorded command buffers
// with the barriers the hazards need.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "engine/runtime/vulkan/device_data.h"
#include "engine/runtime/vulkan/vulkan_model_impl.h"
#include "planner/memory/arena.h"

namespace kiln::runtime {

using planner::PlanStep;
using planner::PlanTensor;
using planner::Storage;

namespace {

constexpr int64_t kBeforeRun = -1;
constexpr int64_t kAfterRun = INT64_MAX;

// The tensor whose memory `t` uses: views' sources and in-place writes'
// inputs share it (their lifetimes merge into one block).
TensorId root_of(const planner::ExecutionPlan& plan, TensorId t) { return planner::memory_root(plan, t); }

struct Interval {
  int64_t first = kAfterRun;
  int64_t last = kBeforeRun;
  void touch(int64_t s) {
    first = std::min(first, s);
    last = std::max(last, s);
  }
};

// A Loop's body runs again and again: a tensor it shares with the steps
// around it (a value it reads from outside, a carried parameter) must keep
// its memory over the whole body, not only up to the body's last use of it
// in step order; so must the body's condition, read after the body's end.
void extend_over_loops(const planner::ExecutionPlan& plan, std::vector<Interval>& live) {
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const PlanStep& step = plan.steps[s];
    if (step.kind != PlanStep::Kind::kLoop || step.body_end <= s + 1) continue;
    const int64_t first = static_cast<int64_t>(s), last = static_cast<int64_t>(step.body_end) - 1;
    for (Interval& iv : live) {
      const bool touches = iv.first <= last && iv.last >= first;
      const bool inside = iv.first > first && iv.last <= last;
      if (touches && !inside) {
        iv.touch(first);
        iv.touch(last);
      }
    }
    if (step.body_cond != planner::kNoTensor) live[static_cast<size_t>(root_of(plan, step.body_cond))].touch(last);
  }
}

// A memory range one dispatch reads or writes, for hazard tracking.
struct Access {
  int resource = 0;
  VkDeviceSize begin = 0, end = 0;
  bool overlaps(const Access& o) const { return resource == o.resource && begin < o.end && o.begin < end; }
};

}  // namespace

memplan::ArenaPlan VulkanModel::Impl::plan_offsets(const std::vector<memplan::Block>& blocks) {
  // Signatures of one plan differ in sizes, rarely in lifetimes (an If
  // decided on the host, a boundary): the plans are kept by lifetimes.
  std::string key;
  for (const memplan::Block& b : blocks)
    key += std::to_string(b.first) + ":" + std::to_string(b.last) + ":" + std::to_string(b.align) + ";";
  std::vector<memplan::Stacking>& versions = memory_plans[key];
  const uint64_t bound = memplan::live_lower_bound(blocks);
  memplan::ArenaPlan best;
  for (const memplan::Stacking& stacking : versions) {
    memplan::ArenaPlan evaluated = memplan::evaluate_stacking(blocks, stacking);
    if (best.offsets.empty() || evaluated.bytes < best.bytes) best = std::move(evaluated);
  }
  if (!best.offsets.empty() && static_cast<double>(best.bytes) <= kPlanSlack * static_cast<double>(bound)) {
    best.strategy = "earlier plan evaluated";
    return best;
  }
  memplan::ArenaPlan planned = memplan::plan_arena(blocks);
  if (versions.size() == kPlanVersions) versions.erase(versions.begin());
  versions.push_back(memplan::stacking_of(blocks, planned));
  return planned;
}

Status VulkanModel::Impl::place_tensors(Signature& sig) {
  const size_t n = plan.tensors.size();
  sig.place.assign(n, Placement{});
  sig.image_births.clear();
  std::vector<bool> needed(n, false);
  std::vector<Interval> live(n);
  // What an image's memory may be re-used under needs to know how each root
  // is first touched, and whether the host or a branch/body touches it.
  constexpr size_t kUntouched = SIZE_MAX;
  std::vector<size_t> first_step(n, kUntouched);
  std::vector<bool> first_written(n, false), first_read(n, false), irregular(n, false);
  const std::vector<std::pair<size_t, size_t>> ranges = planner::control_ranges(plan);
  auto in_control = [&](size_t s) {  // strictly inside a branch or body
    for (const auto& [head, end] : ranges)
      if (s > head && s < end) return true;
    return false;
  };
  auto use = [&](TensorId t, int64_t step) {
    const TensorId r = root_of(plan, t);
    needed[static_cast<size_t>(r)] = true;
    live[static_cast<size_t>(r)].touch(step);
  };
  auto touch = [&](TensorId t, size_t s, bool written, bool host) {
    const size_t r = static_cast<size_t>(root_of(plan, t));
    if (first_step[r] == kUntouched) first_step[r] = s;
    if (first_step[r] == s) (written ? first_written[r] : first_read[r]) = true;
    if (host || in_control(s)) irregular[r] = true;
  };
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const PlanStep& step = plan.steps[s];
    if (step.kind == PlanStep::Kind::kDispatch) {
      for (const planner::KernelTensor& kt : step.kernel.tensors) {
        use(kt.tensor, static_cast<int64_t>(s));
        touch(kt.tensor, s, kt.written, false);
      }
    } else if (step.kind == PlanStep::Kind::kFallback || step.kind == PlanStep::Kind::kIf) {
      // A fallback reads and writes its values at its step; an If reads its
      // condition there (its branches' steps touch the rest).
      const ir::Node& node = graph.node(step.node);
      auto use_value = [&](ir::ValueId v) {
        auto it = v == ir::kNoValue ? plan.value_tensor.end() : plan.value_tensor.find(v);
        if (it == plan.value_tensor.end()) return;
        use(it->second, static_cast<int64_t>(s));
        touch(it->second, s, true, true);
      };
      for (ir::ValueId v : node.inputs) use_value(v);
      for (ir::ValueId v : node.outputs) use_value(v);
      // A host fallback's sub-graphs read values of the enclosing graph
      // too (by id, not as inputs): they stay live up to its step.
      if (step.kind == PlanStep::Kind::kFallback)
        for (ir::ValueId v : planner::subgraph_reads(graph, node)) use_value(v);
      if (step.kind == PlanStep::Kind::kIf && step.cond != planner::kNoTensor) {
        use(step.cond, static_cast<int64_t>(s));
        touch(step.cond, s, false, true);
      }
    } else if (step.kind == PlanStep::Kind::kLoop) {
      // A device trip count or initial condition is read (back) here.
      for (TensorId t : {step.trip, step.cond}) {
        if (t == planner::kNoTensor || plan.tensors[static_cast<size_t>(t)].host_resident ||
            plan.tensors[static_cast<size_t>(t)].constant.defined())
          continue;
        use(t, static_cast<int64_t>(s));
        touch(t, s, false, true);
      }
    }
  }
  for (TensorId t : plan.inputs) use(t, kBeforeRun);
  for (TensorId t : plan.outputs) use(t, kAfterRun);
  for (size_t t = 0; t < n; ++t)
    if (plan.tensors[t].host_resident && plan.tensors[t].device_needed) {
      use(static_cast<TensorId>(t), kBeforeRun);
      use(static_cast<TensorId>(t), kAfterRun);
    }
  // After the graph's inputs and outputs: a Loop's scan output that only
  // the graph outputs read is written in the body and live past it.
  extend_over_loops(plan, live);
  // An image shares memory with what came before it in the run only when a
  // dispatch of this signature's own steps, outside any If branch or Loop
  // body, writes it first (without reading it): that dispatch is where the
  // command buffer discards its contents (UNDEFINED), every run. Any other
  // image (a graph input, one the host writes, one a branch or body touches,
  // a placeholder another signature writes) keeps its memory for the whole
  // run and is made GENERAL once, as before.
  auto reborn = [&](size_t t) {
    const size_t s = first_step[t];
    return s != kUntouched && first_written[t] && !first_read[t] && !irregular[t] && s >= sig.first_step &&
           s < sig.end_step && live[t].first == static_cast<int64_t>(s);
  };

  const VkDeviceSize align = std::max<VkDeviceSize>(device.capabilities().min_storage_buffer_offset_alignment, 64);
  const VkDeviceSize granularity = std::max<VkDeviceSize>(device.capabilities().buffer_image_granularity, 1);
  const uint64_t max_range = device.capabilities().max_storage_buffer_range;
  std::vector<size_t> buffers;         // tensors placed in the activation buffer
  std::vector<memplan::Block> blocks;  // their lifetimes and sizes
  struct ImageSlot {
    size_t tensor = 0;
    uint32_t width = 0, height = 0;
    vk::ImageFormat format = vk::ImageFormat::kRGBA32F;
    VkMemoryRequirements req{};
    bool reborn = false;
  };
  std::vector<ImageSlot> images;
  std::map<std::tuple<uint32_t, uint32_t, vk::ImageFormat>, VkMemoryRequirements> requirements;
  VkDeviceSize image_estimate = 0;  // the separate arena's first size, when images cannot share
  for (size_t t = 0; t < n; ++t) {
    const PlanTensor& pt = plan.tensors[t];
    if (!needed[t] || root_of(plan, static_cast<TensorId>(t)) != static_cast<TensorId>(t)) continue;
    if (pt.constant.defined()) {
      auto w = weights.find(static_cast<TensorId>(t));
      if (w != weights.end()) {
        Placement& p = sig.place[t];
        p.present = true;
        p.buffer = &w->second;
        p.size = w->second.size();
        p.resource = -1;
      }
      continue;
    }
    if (pt.host_resident && !pt.device_needed) continue;
    if (sig.external.count(static_cast<TensorId>(t))) continue;  // lives in the host's buffer
    const VkDeviceSize bytes = std::max<VkDeviceSize>(device_bytes(pt.layout, sig.shapes[t]), 16);
    if (pt.layout.storage == Storage::kImage) {
      ImageSlot slot;
      slot.tensor = t;
      image_size(pt.layout, sig.shapes[t], &slot.width, &slot.height);
      const uint32_t limit = device.capabilities().max_image_dimension_2d;
      if (slot.width > limit || slot.height > limit)
        return unimplemented("tensor %" + std::to_string(t) + " needs a " + std::to_string(slot.width) + "x" +
                             std::to_string(slot.height) + " image, beyond the device's limit of " +
                             std::to_string(limit) + "; use --storage buffer for these shapes");
      slot.format = pt.layout.type == planner::ElemType::kF16 ? vk::ImageFormat::kRGBA16F : vk::ImageFormat::kRGBA32F;
      // The driver's size and alignment, not the texel bytes: it may pad
      // (asked once per extent and format).
      const auto key = std::make_tuple(slot.width, slot.height, slot.format);
      auto known = requirements.find(key);
      if (known == requirements.end()) {
        KILN_ASSIGN_OR_RETURN(const VkMemoryRequirements req,
                              vk::MemoryArena::image_requirements(device, slot.width, slot.height, slot.format));
        known = requirements.emplace(key, req).first;
      }
      slot.req = known->second;
      slot.reborn = reborn(t);
      images.push_back(slot);
      image_estimate += bytes + bytes / 4 + (256 << 10);
      continue;
    }
    if (bytes > max_range)
      return unimplemented("tensor %" + std::to_string(t) + " needs " + std::to_string(bytes) +
                           " bytes, more than the device's storage-buffer range (" + std::to_string(max_range) + ")");
    memplan::Block b;
    b.first = live[t].first;
    b.last = live[t].last;
    b.size = bytes;
    b.align = align;
    buffers.push_back(t);
    blocks.push_back(b);
  }
  // One memory for buffers and images needs a memory type every one of them
  // accepts (the activation buffer's and each image's memoryTypeBits).
  KILN_ASSIGN_OR_RETURN(const VkMemoryRequirements buffer_req, vk::MemoryArena::buffer_requirements(device, 256));
  uint32_t image_bits = ~0u;
  for (const ImageSlot& slot : images) image_bits &= slot.req.memoryTypeBits;
  bool shared = !images.empty();
  sig.images_note = images.empty() ? "none" : "shared";
  if (shared && !device.find_memory_type(buffer_req.memoryTypeBits & image_bits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT).ok()) {
    shared = false;
    sig.images_note = "separate: no device-local memory type accepts both the activation buffer (memoryTypeBits " +
                      std::to_string(buffer_req.memoryTypeBits) + ") and every image (" + std::to_string(image_bits) + ")";
  }
  // Images in the plan: each slot starts and ends on bufferImageGranularity,
  // so a granularity page an image touches lies wholly inside the image's
  // own slot, and no buffer range live at the same time can share it
  // (buffers need no padding for it: they never overlap a live image's slot,
  // hence never its pages).
  sig.image_bytes = 0;
  const size_t image_block0 = blocks.size();
  for (const ImageSlot& slot : images) {
    const VkDeviceSize slot_align = std::max({slot.req.alignment, granularity, align});
    const VkDeviceSize bytes = memplan::align_up(slot.req.size, slot_align);
    sig.image_bytes += bytes;
    if (!shared) continue;
    memplan::Block b;
    b.first = slot.reborn ? live[slot.tensor].first : kBeforeRun;
    b.last = slot.reborn ? live[slot.tensor].last : kAfterRun;
    b.size = bytes;
    b.align = slot_align;
    blocks.push_back(b);
  }
  // Offsets: an earlier signature's plan evaluated at these sizes when it is
  // tight enough, else SoD²'s peak-first planner (memplan arena.h); checked,
  // and the numbers `kiln run --stats` reports.
  const Clock::time_point plan_start = Clock::now();
  const memplan::ArenaPlan arena = plan_offsets(blocks);
  const double plan_ms = ms_since(plan_start);
  if (std::string bad = memplan::check_plan(blocks, arena); !bad.empty())
    return internal_error("memory plan (" + arena.strategy + ") is invalid: " + bad);
  sig.memory = memplan::report(blocks, arena);
  sig.memory_plan_ms = plan_ms;
  const VkDeviceSize total = arena.bytes;
  for (size_t i = 0; i < buffers.size(); ++i) sig.place[buffers[i]].offset = arena.offsets[i];
  sig.images.clear();  // (resources go before the arena they live in)
  sig.activations.reset();
  const uint32_t type_bits = buffer_req.memoryTypeBits & (shared ? image_bits : ~0u);
  // The activation memory every signature of this depth shares (one run at
  // a time); a continuation's parents' tensors stay live in the memories of
  // lower depths while it runs.
  KILN_ASSIGN_OR_RETURN(sig.arena, activation_memory_for(sig.depth, std::max<VkDeviceSize>(total, 256), type_bits));
  sig.device_bytes = 0;
  // The activation buffer spans the whole plan, images' slots included: a
  // kernel reaches it only through its own tensors' ranges, which never
  // overlap an image live at the same time.
  if (total > 0 && !buffers.empty()) {
    KILN_ASSIGN_OR_RETURN(sig.activations, sig.arena->bind_buffer(0, total));
  }
  for (size_t t : buffers) {
    Placement& p = sig.place[t];
    p.present = true;
    p.buffer = &sig.activations;
    p.size = device_bytes(plan.tensors[t].layout, sig.shapes[t]);
    p.resource = 0;
  }
  int resource = 1;
  if (shared) {
    for (size_t i = 0; i < images.size(); ++i) {
      const ImageSlot& slot = images[i];
      const VkDeviceSize offset = arena.offsets[image_block0 + i];
      KILN_ASSIGN_OR_RETURN(vk::Image image, sig.arena->bind_image(offset, slot.width, slot.height, slot.format));
      sig.images.push_back(std::move(image));
      Placement& p = sig.place[slot.tensor];
      p.present = true;
      p.image = &sig.images.back();
      p.offset = offset;
      p.size = blocks[image_block0 + i].size;
      p.resource = 0;  // hazards by memory range, with the buffers it aliases
      if (slot.reborn) sig.image_births[first_step[slot.tensor]].push_back(p.image);
    }
  } else if (!images.empty()) {
    // Their own arena: a driver may pad an image well beyond its texel
    // bytes, so when the estimate is short the images are made again in an
    // arena twice as large.
    for (int attempt = 0;; ++attempt) {
      Status made = create_images(sig, needed, image_estimate << attempt, &resource);
      if (made.ok()) break;
      if (made.code() != StatusCode::kOutOfMemory || attempt == 3) return made;
      resource = 1;
    }
    if (sig.image_arena) sig.device_bytes += sig.image_arena->capacity();
  }
  // Zero-copy bindings: the tensor lives in a range of the host's buffer.
  // Each distinct VkBuffer is one hazard-tracking resource.
  std::map<VkBuffer, int> external_resource;
  for (auto& [t, b] : sig.external) {
    auto [it, inserted] = external_resource.emplace(b.buffer, resource);
    if (inserted) ++resource;
    sig.external_buffers.push_back(vk::Buffer::borrow(b.buffer, b.offset + b.size));
    Placement& p = sig.place[static_cast<size_t>(t)];
    p.present = true;
    p.buffer = &sig.external_buffers.back();
    p.offset = b.offset;
    p.size = device_bytes(plan.tensors[static_cast<size_t>(t)].layout, sig.shapes[static_cast<size_t>(t)]);
    p.resource = it->second;
  }
  // Aliases (views, in-place writes) share their root's memory.
  for (size_t t = 0; t < n; ++t) {
    if (root_of(plan, static_cast<TensorId>(t)) == static_cast<TensorId>(t)) continue;
    Placement p = sig.place[static_cast<size_t>(root_of(plan, static_cast<TensorId>(t)))];
    if (!p.image) p.size = std::min<VkDeviceSize>(p.size, device_bytes(plan.tensors[t].layout, sig.shapes[t]));
    sig.place[t] = p;
  }
  return restore_arena(sig);
}

Status VulkanModel::Impl::restore_arena(Signature& sig) {
  const size_t n = plan.tensors.size();
  memory_owner.at(sig.depth) = &sig;
  // Images that keep their memory for the whole run start in GENERAL now
  // (their contents are written before any read); the others are made
  // GENERAL by each run's command buffer, at their first write.
  std::set<const vk::Image*> reborn_images;
  for (const auto& [step, born] : sig.image_births) reborn_images.insert(born.begin(), born.end());
  std::vector<VkImageMemoryBarrier> barriers;
  for (vk::Image& image : sig.images) {
    if (reborn_images.count(&image)) continue;
    VkImageMemoryBarrier b{VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER};
    b.srcAccessMask = 0;
    b.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                      VK_ACCESS_TRANSFER_WRITE_BIT;
    b.oldLayout = VK_IMAGE_LAYOUT_UNDEFINED;
    b.newLayout = VK_IMAGE_LAYOUT_GENERAL;
    b.srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
    b.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
    b.image = image.handle();
    b.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
    barriers.push_back(b);
  }
  if (!barriers.empty()) {
    KILN_RETURN_IF_ERROR(transfer->submitter().run([&](VkCommandBuffer cmd) {
      device.fn().vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
                                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0,
                                       nullptr, 0, nullptr, static_cast<uint32_t>(barriers.size()), barriers.data());
      return ok_status();
    }));
  }
  // The layout Transfer assumes for host reads: GENERAL, once written.
  for (vk::Image& image : sig.images) image.set_layout(VK_IMAGE_LAYOUT_GENERAL);
  // Host values some kernel binds: the same for every run of the signature.
  for (size_t t = 0; t < n; ++t) {
    const PlanTensor& pt = plan.tensors[t];
    if (!pt.host_resident || !pt.device_needed) continue;
    // Not known yet, or placed only as a one-element stand-in: a value past
    // this signature's sub-graph boundary, which a continuation writes.
    auto value = sig.host_values.find(pt.value);
    if (value == sig.host_values.end() || !sig.place[t].present ||
        sig.place[t].size < device_bytes(pt.layout, value->second.shape()))
      continue;
    KILN_RETURN_IF_ERROR(write_tensor(sig, static_cast<TensorId>(t), value->second));
  }
  return ok_status();
}

// Creates every image tensor's image in sig.image_arena (made here with
// `capacity` bytes); numbers their hazard-tracking resources from *resource.
Status VulkanModel::Impl::create_images(Signature& sig, const std::vector<bool>& needed, VkDeviceSize capacity,
                                        int* resource) {
  for (Placement& p : sig.place)
    if (p.image) p = Placement{};
  sig.images.clear();
  sig.image_arena.reset();
  bool any = false;
  for (size_t t = 0; t < plan.tensors.size(); ++t)
    any = any || (needed[t] && plan.tensors[t].layout.storage == Storage::kImage);
  if (!any) return ok_status();
  KILN_ASSIGN_OR_RETURN(sig.image_arena, vk::MemoryArena::create(device, capacity + (1 << 20)));
  const size_t n = plan.tensors.size();
  for (size_t t = 0; t < n; ++t) {
    const PlanTensor& pt = plan.tensors[t];
    if (!needed[t] || pt.alias_of != planner::kNoTensor || pt.constant.defined()) continue;
    if (pt.host_resident && !pt.device_needed) continue;
    if (pt.layout.storage != Storage::kImage) continue;
    uint32_t w = 0, h = 0;
    image_size(pt.layout, sig.shapes[t], &w, &h);
    const uint32_t limit = device.capabilities().max_image_dimension_2d;
    if (w > limit || h > limit)
      return unimplemented("tensor %" + std::to_string(t) + " needs a " + std::to_string(w) + "x" + std::to_string(h) +
                           " image, beyond the device's limit of " + std::to_string(limit) +
                           "; use --storage buffer for these shapes");
    KILN_ASSIGN_OR_RETURN(vk::Image image, sig.image_arena->create_image(
                                               w, h, pt.layout.type == planner::ElemType::kF16 ? vk::ImageFormat::kRGBA16F
                                                                                            : vk::ImageFormat::kRGBA32F));
    sig.images.push_back(std::move(image));
    Placement& p = sig.place[t];
    p.present = true;
    p.image = &sig.images.back();
    p.size = device_bytes(pt.layout, sig.shapes[t]);
    p.resource = (*resource)++;
  }
  return ok_status();
}

Status VulkanModel::Impl::record(Signature& sig) {
  const VolkDeviceTable& fn = device.fn();
  // Split into segments at host fallbacks and Ifs, and where each branch
  // of an If starts and ends (a run submits the taken branch only). An If
  // whose condition is a host value is decided now, for the signature: only
  // its taken branch is recorded, in line, with no split.
  std::map<size_t, bool> decided;
  std::set<size_t> branch_bounds;
  // Only the signature's own steps: a sub-graph boundary (find_boundary)
  // never lies inside an If's or a Loop's range.
  for (size_t s = sig.first_step; s < sig.end_step; ++s) {
    const PlanStep& step = plan.steps[s];
    if (step.kind == PlanStep::Kind::kLoop) branch_bounds.insert(step.body_end);
    if (step.kind != PlanStep::Kind::kIf) continue;
    KILN_ASSIGN_OR_RETURN(const std::optional<bool> known, host_condition(sig, s));
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
    const PlanStep& step = plan.steps[s];
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
    const planner::GeneratedKernel& k = kernels[s];
    RecordedDispatch d;
    d.step = s;
    for (size_t i = 0; i < 3; ++i) {
      auto g = k.groups[i].evaluate(sig.bindings);
      if (!g || *g < 0) return internal_error("kernel '" + k.name + "': unbound dispatch size " + k.groups[i].to_string());
      if (*g > static_cast<int64_t>(device.capabilities().max_compute_work_group_count[i]))
        return unimplemented("kernel '" + k.name + "' needs " + std::to_string(*g) + " workgroups in dimension " +
                             std::to_string(i) + ", above the device limit");
      d.groups[i] = static_cast<uint32_t>(*g);
    }
    if (d.groups[0] == 0 || d.groups[1] == 0 || d.groups[2] == 0) continue;  // empty tensor: nothing to do
    const vk::ComputePipeline& pipeline = *pipelines[s];
    std::vector<int32_t> push;
    for (const ir::Dim& p : k.push) {
      auto v = p.evaluate(sig.bindings);
      if (!v) return internal_error("kernel '" + k.name + "': unbound parameter " + p.to_string());
      push.push_back(static_cast<int32_t>(*v));
    }
    d.push.assign(pipeline.reflection().push_constant_size, std::byte{0});
    if (!push.empty() && !d.push.empty())
      std::memcpy(d.push.data(), push.data(), std::min(d.push.size(), push.size() * sizeof(int32_t)));
    KILN_ASSIGN_OR_RETURN(d.sets, descriptors->allocate(pipeline));
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
    KILN_RETURN_IF_ERROR(vk::write_descriptors(pipeline, d.sets, resources));
    sig.segments.back().dispatches.push_back(std::move(d));
    ++sig.dispatches;
  }

  // Each Loop's body: the segments after its own, up to its body's end; the
  // last one decides whether the body runs again (by the body's condition).
  for (size_t k = 0; k < sig.segments.size(); ++k) {
    if (sig.segments[k].loop_step == SIZE_MAX) continue;
    const PlanStep& step = plan.steps[sig.segments[k].loop_step];
    size_t last = k;
    while (last + 1 < sig.segments.size() && sig.segments[last + 1].first_step < step.body_end) ++last;
    if (last == k) continue;
    sig.loop_bodies[sig.segments[k].loop_step] = {k + 1, last};
    // (A body ending in an empty If keeps that If's condition there; the
    // body's is then downloaded.)
    if (sig.segments[last].if_step == SIZE_MAX) sig.segments[last].condition = step.body_cond;
  }
  KILN_RETURN_IF_ERROR(plan_staging(sig));
  KILN_RETURN_IF_ERROR(plan_condition_copies(sig));
  Segment* first = nullptr;
  Segment* last = nullptr;
  for (Segment& seg : sig.segments)
    if (!seg.dispatches.empty()) {
      if (!first) first = &seg;
      last = &seg;
    }

  for (Segment& seg : sig.segments) {
    if (seg.dispatches.empty()) continue;
    if (device.timestamp_valid_bits() != 0) {
      const uint32_t count = options.profile ? static_cast<uint32_t>(seg.dispatches.size()) + 1 : 2;
      auto ts = vk::TimestampQueries::create(device, count);
      if (ts.ok()) seg.timestamps = std::move(ts).value();
    }
    KILN_ASSIGN_OR_RETURN(seg.cmd, submitter->allocate());
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    KILN_RETURN_IF_ERROR(device.check(fn.vkBeginCommandBuffer(seg.cmd, &begin), "vkBeginCommandBuffer"));
    if (seg.timestamps) {
      seg.timestamps->reset(seg.cmd);
      (void)seg.timestamps->write(seg.cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT);
    }
    if (&seg == first) record_input_copies(sig, seg.cmd);
    if (!sig.external.empty()) {
      // The host's buffers: what earlier commands on the queue wrote (the
      // host's own uploads or render passes) is visible to the kernels.
      VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
      mb.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT;
      mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
      fn.vkCmdPipelineBarrier(seg.cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1,
                              &mb, 0, nullptr, 0, nullptr);
    }
    // Barriers only where this dispatch reads what an earlier one wrote since
    // the last barrier, or writes what one read or wrote. A dispatch writing
    // in place reads and writes one range: its own accesses are never
    // compared with each other (no barrier inside a dispatch), and later
    // ones see its write as a write of that range.
    std::vector<Access> reads, writes;
    Status status = ok_status();
    for (size_t i = 0; i < seg.dispatches.size() && status.ok(); ++i) {
      const RecordedDispatch& d = seg.dispatches[i];
      const PlanStep& step = plan.steps[d.step];
      std::vector<Access> r, w;
      for (const planner::KernelTensor& kt : step.kernel.tensors) {
        const Placement& p = sig.place[static_cast<size_t>(kt.tensor)];
        if (p.resource < 0) continue;  // constants never change during a run
        const Access a{p.resource, p.offset, p.offset + std::max<VkDeviceSize>(p.size, 1)};
        (kt.written ? w : r).push_back(a);
      }
      bool hazard = false;
      for (const Access& a : r)
        for (const Access& b : writes) hazard = hazard || a.overlaps(b);
      for (const Access& a : w) {
        for (const Access& b : writes) hazard = hazard || a.overlaps(b);
        for (const Access& b : reads) hazard = hazard || a.overlaps(b);
      }
      if (auto born = sig.image_births.find(d.step); born != sig.image_births.end()) {
        // Images whose memory earlier tensors of this run (or the previous
        // run) used: UNDEFINED -> GENERAL here, after every earlier access
        // in the queue (the execution and memory dependency covers the
        // previous users' reads and writes, in this command buffer and the
        // earlier submissions), and before this first write.
        std::vector<VkImageMemoryBarrier> to_general;
        for (const vk::Image* image : born->second) {
          VkImageMemoryBarrier b{VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER};
          b.srcAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                            VK_ACCESS_TRANSFER_WRITE_BIT;
          b.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
          b.oldLayout = VK_IMAGE_LAYOUT_UNDEFINED;
          b.newLayout = VK_IMAGE_LAYOUT_GENERAL;
          b.srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
          b.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
          b.image = image->handle();
          b.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
          to_general.push_back(b);
        }
        VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
        mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT |
                           VK_ACCESS_TRANSFER_READ_BIT;
        mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
        fn.vkCmdPipelineBarrier(seg.cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                                VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, nullptr,
                                static_cast<uint32_t>(to_general.size()), to_general.data());
        reads.clear();
        writes.clear();
        hazard = false;  // this barrier orders everything before it
      }
      if (hazard) {
        VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
        mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT;
        mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
        fn.vkCmdPipelineBarrier(seg.cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1,
                                &mb, 0, nullptr, 0, nullptr);
        reads.clear();
        writes.clear();
      }
      reads.insert(reads.end(), r.begin(), r.end());
      writes.insert(writes.end(), w.begin(), w.end());
      status = vk::record_dispatch(seg.cmd, *pipelines[d.step], d.sets, d.push, d.groups);
      if (status.ok() && seg.timestamps && options.profile)
        (void)seg.timestamps->write(seg.cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT);
    }
    if (status.ok() && !sig.external.empty()) {
      // ...and what the kernels wrote is visible to later commands on the
      // queue and, after the run's wait, to the host.
      VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
      mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
      mb.dstAccessMask = VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT | VK_ACCESS_HOST_READ_BIT;
      fn.vkCmdPipelineBarrier(seg.cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                              VK_PIPELINE_STAGE_ALL_COMMANDS_BIT | VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr,
                              0, nullptr);
    }
    if (status.ok() && seg.condition_copied) record_condition_copy(sig, seg, seg.cmd);
    if (status.ok() && &seg == last) record_output_copies(sig, seg.cmd);
    if (status.ok() && seg.timestamps && !options.profile)
      (void)seg.timestamps->write(seg.cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT);
    const VkResult end = fn.vkEndCommandBuffer(seg.cmd);
    KILN_RETURN_IF_ERROR(status);
    KILN_RETURN_IF_ERROR(device.check(end, "vkEndCommandBuffer"));
  }
  return ok_status();
}

// Which inputs and outputs travel through the staging buffer, and where.
Status VulkanModel::Impl::plan_staging(Signature& sig) {
  sig.staged_inputs.assign(plan.inputs.size(), {});
  sig.staged_outputs.assign(plan.outputs.size(), {});
  // Inputs ride in the first command buffer unless a host fallback reads them
  // before it; outputs in the last unless a fallback runs after it.
  size_t first = SIZE_MAX, last = SIZE_MAX;
  for (size_t i = 0; i < sig.segments.size(); ++i)
    if (!sig.segments[i].dispatches.empty()) {
      if (first == SIZE_MAX) first = i;
      last = i;
    }
  if (first == SIZE_MAX) return ok_status();
  bool fallback_before = false, fallback_after = false;
  for (size_t i = 0; i < sig.segments.size(); ++i)
    if (sig.segments[i].fallback_step != SIZE_MAX) {
      if (i < first) fallback_before = true;
      if (i >= last) fallback_after = true;
    }
  // Past a sub-graph boundary the inputs are in place already; before one,
  // the outputs are not made yet.
  if (sig.first_step != 0) fallback_before = true;
  if (sig.end_step != plan.steps.size()) fallback_after = true;
  // A segment inside an If's branch or a Loop's body may run no time (or
  // many): the copies ride elsewhere.
  for (const PlanStep& step : plan.steps) {
    if (step.kind != PlanStep::Kind::kIf && step.kind != PlanStep::Kind::kLoop) continue;
    const size_t head = static_cast<size_t>(&step - plan.steps.data());
    const size_t end = step.kind == PlanStep::Kind::kIf ? step.else_end : step.body_end;
    auto in_branch = [&](size_t seg) {
      return sig.segments[seg].first_step > head && sig.segments[seg].first_step < end;
    };
    if (in_branch(first)) fallback_before = true;
    if (in_branch(last)) fallback_after = true;
  }
  VkDeviceSize total = 0;
  auto stage = [&](TensorId t, Signature::Staged* out) {
    const TensorId root = root_of(plan, t);
    const Placement& p = sig.place[static_cast<size_t>(t)];
    const PlanTensor& pt = plan.tensors[static_cast<size_t>(t)];
    if (!p.present || p.resource < 0 || sig.external.count(root) || pt.host_resident) return;
    if (shape_numel(sig.shapes[static_cast<size_t>(t)]) == 0) return;
    if (p.image && pt.alias_of != planner::kNoTensor) return;
    out->tensor = t;
    out->offset = total;
    out->bytes = device_bytes(pt.layout, sig.shapes[static_cast<size_t>(t)]);
    total += (out->bytes + 255) / 256 * 256;
  };
  if (!fallback_before)
    for (size_t i = 0; i < plan.inputs.size(); ++i) stage(plan.inputs[i], &sig.staged_inputs[i]);
  for (size_t i = 0; i < plan.outputs.size() && !fallback_after; ++i) {
    // An output that is also an input or another output is read back once
    // through Transfer instead (a rare graph that forwards its input).
    bool duplicate = std::count(plan.outputs.begin(), plan.outputs.end(), plan.outputs[i]) > 1 ||
                     std::count(plan.inputs.begin(), plan.inputs.end(), plan.outputs[i]) > 0;
    if (!duplicate) stage(plan.outputs[i], &sig.staged_outputs[i]);
  }
  if (total == 0) return ok_status();
  KILN_ASSIGN_OR_RETURN(sig.staging, vk::HostBuffer::create(device, total));
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
    VkImageMemoryBarrier b{VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER};
    b.srcAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                      VK_ACCESS_TRANSFER_WRITE_BIT;
    b.dstAccessMask = to_device ? VK_ACCESS_TRANSFER_WRITE_BIT : VK_ACCESS_TRANSFER_READ_BIT;
    b.oldLayout = VK_IMAGE_LAYOUT_GENERAL;
    b.newLayout = copy_layout;
    b.srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
    b.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
    b.image = p.image->handle();
    b.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
    fn.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                            VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0, nullptr, 0, nullptr, 1, &b);
    VkBufferImageCopy region{};
    region.bufferOffset = staging_offset;
    region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
    region.imageExtent = {p.image->width(), p.image->height(), 1};
    if (to_device) fn.vkCmdCopyBufferToImage(cmd, staging, p.image->handle(), copy_layout, 1, &region);
    else fn.vkCmdCopyImageToBuffer(cmd, p.image->handle(), copy_layout, staging, 1, &region);
    b.srcAccessMask = b.dstAccessMask;
    b.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT;
    b.oldLayout = copy_layout;
    b.newLayout = VK_IMAGE_LAYOUT_GENERAL;
    fn.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0, nullptr, 0,
                            nullptr, 1, &b);
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

void VulkanModel::Impl::record_input_copies(Signature& sig, VkCommandBuffer cmd) {
  if (!sig.staging) return;
  const VolkDeviceTable& fn = device.fn();
  // The previous run's kernels and copies are done with this memory (the
  // host waited for them); order the copies after them and make the host's
  // writes to the staging buffer visible.
  VkMemoryBarrier before{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  before.srcAccessMask = VK_ACCESS_HOST_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                         VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  before.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  fn.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                          VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &before, 0, nullptr, 0, nullptr);
  for (const Signature::Staged& s : sig.staged_inputs)
    if (s.tensor != planner::kNoTensor)
      copy_region(fn, cmd, sig.place[static_cast<size_t>(s.tensor)], sig.staging->handle(), s.offset, s.bytes, true);
  VkMemoryBarrier after{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  after.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  after.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  fn.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &after, 0,
                          nullptr, 0, nullptr);
}

void VulkanModel::Impl::record_output_copies(Signature& sig, VkCommandBuffer cmd) {
  if (!sig.staging) return;
  const VolkDeviceTable& fn = device.fn();
  VkMemoryBarrier before{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  before.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  before.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
  fn.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &before, 0,
                          nullptr, 0, nullptr);
  for (const Signature::Staged& s : sig.staged_outputs)
    if (s.tensor != planner::kNoTensor)
      copy_region(fn, cmd, sig.place[static_cast<size_t>(s.tensor)], sig.staging->handle(), s.offset, s.bytes, false);
  VkMemoryBarrier after{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  after.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  after.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  fn.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &after, 0, nullptr, 0,
                          nullptr);
}

}  // namespace kiln::runtime
