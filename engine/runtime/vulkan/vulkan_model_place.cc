// Per signature: where every tensor lives. Lifetimes come from
// planner/memory/liveness.h, offsets from planner/memory/arena.h; this file
// turns them into device memory (the shared activation arena, images bound
// in it or in their own arena, the host's buffers) in named phases:
// collect_blocks -> choose_image_memory -> memory_plans.plan -> bind_placements
// -> place_external/place_aliases -> restore_arena.
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "planner/device_data.h"
#include "engine/runtime/vulkan/vulkan_model_impl.h"
#include "planner/memory/arena.h"
#include "planner/memory/liveness.h"
#include "platform/vulkan/barriers.h"

namespace kiln::runtime {

using planner::kAfterRun;
using planner::kBeforeRun;
using planner::PlanTensor;
using planner::Storage;

// The blocks of one signature's activation arena, before offsets: buffer
// tensors first (in `buffers` order), then image slots when images share it.
struct ArenaLayout {
  struct ImageSlot {
    size_t tensor = 0;
    uint32_t width = 0, height = 0;
    vk::ImageFormat format = vk::ImageFormat::kRGBA32F;
    VkMemoryRequirements req{};
    bool reborn = false;  // born at a dispatch: its memory is re-used (Signature::image_births)
  };
  std::vector<size_t> buffers;         // tensors placed in the activation buffer
  std::vector<memplan::Block> blocks;  // their lifetimes and sizes, then the shared images'
  std::vector<ImageSlot> images;
  size_t image_block0 = 0;          // index of the first image block (when shared)
  VkDeviceSize image_estimate = 0;  // the separate arena's first size, when images cannot share
  VkDeviceSize align = 64;          // buffers' alignment
  bool shared = false;              // images live in the activation arena
  uint32_t type_bits = ~0u;         // memory types the activation memory may use
};

Status VulkanModel::Impl::place_tensors(Signature& sig) {
  sig.place.assign(plan.tensors.size(), Placement{});
  sig.image_births.clear();
  const planner::Liveness liveness = planner::compute_liveness(plan, graph);
  ArenaLayout layout;
  KILN_RETURN_IF_ERROR(collect_blocks(sig, liveness, layout));
  KILN_RETURN_IF_ERROR(choose_image_memory(sig, liveness, layout));
  // Offsets: an earlier signature's plan evaluated at these sizes when it is
  // tight enough, else SoD²'s peak-first planner (planner/memory/
  // plan_cache.h); checked, and the numbers `kiln run --stats` reports.
  const Clock::time_point plan_start = Clock::now();
  const memplan::ArenaPlan arena = memory_plans.plan(layout.blocks);
  const double plan_ms = ms_since(plan_start);
  if (std::string bad = memplan::check_plan(layout.blocks, arena); !bad.empty())
    return internal_error("memory plan (" + arena.strategy + ") is invalid: " + bad);
  sig.memory = memplan::report(layout.blocks, arena);
  sig.memory_plan_ms = plan_ms;
  int resource = 1;
  KILN_RETURN_IF_ERROR(bind_placements(sig, liveness, layout, arena, &resource));
  place_external(sig, resource);
  place_aliases(sig);
  return restore_arena(sig);
}

// Constants point at their weights, state at the model's state buffers;
// every other root the run needs becomes a buffer block (its lifetime, its
// bytes) or an image slot.
Status VulkanModel::Impl::collect_blocks(Signature& sig, const planner::Liveness& liveness, ArenaLayout& layout) {
  layout.align = std::max<VkDeviceSize>(device.capabilities().min_storage_buffer_offset_alignment, 64);
  const uint64_t max_range = device.capabilities().max_storage_buffer_range;
  std::map<std::tuple<uint32_t, uint32_t, vk::ImageFormat>, VkMemoryRequirements> requirements;
  for (size_t t = 0; t < plan.tensors.size(); ++t) {
    const PlanTensor& pt = plan.tensors[t];
    if (!liveness.needed[t] || planner::memory_root(plan, static_cast<TensorId>(t)) != static_cast<TensorId>(t))
      continue;
    if (pt.constant.defined() || pt.origin == PlanTensor::Origin::kState) {
      // Constants and model state: their memory is the model's, not the arena's.
      const auto& held = pt.constant.defined() ? weights : state;
      auto w = held.find(static_cast<TensorId>(t));
      if (w != held.end()) {
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
      ArenaLayout::ImageSlot slot;
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
      // An image shares memory with what came before it in the run only
      // when a dispatch of this signature's own steps, outside any If branch
      // or Loop body, writes it first (without reading it): that dispatch is
      // where the command buffer discards its contents (UNDEFINED), every
      // run. Any other image (a graph input, one the host writes, one a
      // branch or body touches, a placeholder another signature writes)
      // keeps its memory for the whole run and is made GENERAL once.
      slot.reborn = liveness.born_at_dispatch(t, sig.first_step, sig.end_step);
      layout.images.push_back(slot);
      layout.image_estimate += bytes + bytes / 4 + (256 << 10);
      continue;
    }
    if (bytes > max_range)
      return unimplemented("tensor %" + std::to_string(t) + " needs " + std::to_string(bytes) +
                           " bytes, more than the device's storage-buffer range (" + std::to_string(max_range) + ")");
    memplan::Block b;
    b.first = liveness.live[t].first;
    b.last = liveness.live[t].last;
    b.size = bytes;
    b.align = layout.align;
    layout.buffers.push_back(t);
    layout.blocks.push_back(b);
  }
  return ok_status();
}

// Whether images share the activation arena (one memory type must accept
// the activation buffer and every image), and their blocks when they do.
Status VulkanModel::Impl::choose_image_memory(Signature& sig, const planner::Liveness& liveness, ArenaLayout& layout) {
  KILN_ASSIGN_OR_RETURN(const VkMemoryRequirements buffer_req, vk::MemoryArena::buffer_requirements(device, 256));
  uint32_t image_bits = ~0u;
  for (const ArenaLayout::ImageSlot& slot : layout.images) image_bits &= slot.req.memoryTypeBits;
  layout.shared = !layout.images.empty();
  sig.images_note = layout.images.empty() ? "none" : "shared";
  if (layout.shared &&
      !device.find_memory_type(buffer_req.memoryTypeBits & image_bits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT).ok()) {
    layout.shared = false;
    sig.images_note = "separate: no device-local memory type accepts both the activation buffer (memoryTypeBits " +
                      std::to_string(buffer_req.memoryTypeBits) + ") and every image (" + std::to_string(image_bits) + ")";
  }
  layout.type_bits = buffer_req.memoryTypeBits & (layout.shared ? image_bits : ~0u);
  // Images in the plan: each slot starts and ends on bufferImageGranularity,
  // so a granularity page an image touches lies wholly inside the image's
  // own slot, and no buffer range live at the same time can share it
  // (buffers need no padding for it: they never overlap a live image's slot,
  // hence never its pages).
  const VkDeviceSize granularity = std::max<VkDeviceSize>(device.capabilities().buffer_image_granularity, 1);
  sig.image_bytes = 0;
  layout.image_block0 = layout.blocks.size();
  for (const ArenaLayout::ImageSlot& slot : layout.images) {
    const VkDeviceSize slot_align = std::max({slot.req.alignment, granularity, layout.align});
    const VkDeviceSize bytes = memplan::align_up(slot.req.size, slot_align);
    sig.image_bytes += bytes;
    if (!layout.shared) continue;
    memplan::Block b;
    b.first = slot.reborn ? liveness.live[slot.tensor].first : kBeforeRun;
    b.last = slot.reborn ? liveness.live[slot.tensor].last : kAfterRun;
    b.size = bytes;
    b.align = slot_align;
    layout.blocks.push_back(b);
  }
  return ok_status();
}

// Binds the planned offsets in the depth's activation memory: the
// activation buffer, and the images there or in their own arena (numbering
// their hazard-tracking resources from *resource).
Status VulkanModel::Impl::bind_placements(Signature& sig, const planner::Liveness& liveness, const ArenaLayout& layout,
                                          const memplan::ArenaPlan& arena, int* resource) {
  const VkDeviceSize total = arena.bytes;
  for (size_t i = 0; i < layout.buffers.size(); ++i) sig.place[layout.buffers[i]].offset = arena.offsets[i];
  sig.images.clear();  // (resources go before the arena they live in)
  sig.activations.reset();
  // The activation memory every signature of this depth shares (one run at
  // a time); a continuation's parents' tensors stay live in the memories of
  // lower depths while it runs.
  KILN_ASSIGN_OR_RETURN(sig.arena,
                        activation_memory_for(sig.depth, std::max<VkDeviceSize>(total, 256), layout.type_bits));
  sig.device_bytes = 0;
  // The activation buffer spans the whole plan, images' slots included: a
  // kernel reaches it only through its own tensors' ranges, which never
  // overlap an image live at the same time.
  if (total > 0 && !layout.buffers.empty()) {
    KILN_ASSIGN_OR_RETURN(sig.activations, sig.arena->bind_buffer(0, total));
  }
  for (size_t t : layout.buffers) {
    Placement& p = sig.place[t];
    p.present = true;
    p.buffer = &sig.activations;
    p.size = device_bytes(plan.tensors[t].layout, sig.shapes[t]);
    p.resource = 0;
  }
  if (layout.shared) {
    for (size_t i = 0; i < layout.images.size(); ++i) {
      const ArenaLayout::ImageSlot& slot = layout.images[i];
      const VkDeviceSize offset = arena.offsets[layout.image_block0 + i];
      KILN_ASSIGN_OR_RETURN(vk::Image image, sig.arena->bind_image(offset, slot.width, slot.height, slot.format));
      sig.images.push_back(std::move(image));
      Placement& p = sig.place[slot.tensor];
      p.present = true;
      p.image = &sig.images.back();
      p.offset = offset;
      p.size = layout.blocks[layout.image_block0 + i].size;
      p.resource = 0;  // hazards by memory range, with the buffers it aliases
      if (slot.reborn) sig.image_births[liveness.first[slot.tensor].step].push_back(p.image);
    }
  } else if (!layout.images.empty()) {
    // Their own arena: a driver may pad an image well beyond its texel
    // bytes, so when the estimate is short the images are made again in an
    // arena twice as large.
    for (int attempt = 0;; ++attempt) {
      Status made = create_images(sig, liveness.needed, layout.image_estimate << attempt, resource);
      if (made.ok()) break;
      if (made.code() != StatusCode::kOutOfMemory || attempt == 3) return made;
      *resource = 1;
    }
    if (sig.image_arena) sig.device_bytes += sig.image_arena->capacity();
  }
  return ok_status();
}

// Zero-copy bindings: the tensor lives in a range of the host's buffer.
// Each distinct VkBuffer is one hazard-tracking resource, numbered from
// `resource`.
void VulkanModel::Impl::place_external(Signature& sig, int resource) {
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
}

// Aliases (views, in-place writes) share their root's memory.
void VulkanModel::Impl::place_aliases(Signature& sig) {
  for (size_t t = 0; t < plan.tensors.size(); ++t) {
    const TensorId root = planner::memory_root(plan, static_cast<TensorId>(t));
    if (root == static_cast<TensorId>(t)) continue;
    Placement p = sig.place[static_cast<size_t>(root)];
    if (!p.image) p.size = std::min<VkDeviceSize>(p.size, device_bytes(plan.tensors[t].layout, sig.shapes[t]));
    sig.place[t] = p;
  }
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
    barriers.push_back(vk::image_barrier(image.handle(), VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_GENERAL, 0,
                                         VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                             VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT));
  }
  // Transfer's submissions are not ordered after the model's asynchronous
  // ones, which may still use this memory.
  bool waited = false;
  auto after_submissions = [&]() -> Status {
    if (waited) return ok_status();
    waited = true;
    return submitter->wait_all();
  };
  if (!barriers.empty()) {
    KILN_RETURN_IF_ERROR(after_submissions());
    KILN_RETURN_IF_ERROR(transfer->submitter().run([&](VkCommandBuffer cmd) {
      vk::cmd_barrier(device.fn(), cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
                      VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, nullptr, barriers);
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
    KILN_RETURN_IF_ERROR(after_submissions());
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

}  // namespace kiln::runtime
