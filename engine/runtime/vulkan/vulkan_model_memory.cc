// VulkanModel: one activation memory for every input-shape signature (and
// one per depth of sub-graph boundaries for their continuations), and a
// bounded cache of recorded signatures.
//
// Each signature's arena plan (planner/memory/arena.h) is made for its own shapes,
// but the memory it is bound in is the run slot's: a user who feeds a new
// sentence length every call holds the largest plan seen, not one arena per
// length (and not one sized for a maximum shape). Runs take turns on it (the
// slot's mutex; each slot has activation memory of its own), so any two of
// its signatures may overlap in it; what a signature keeps there from run to
// run (host values kernels bind, images made GENERAL once) is written again
// when another signature ran in between (restore_arena).

#include <algorithm>
#include <functional>
#include <iterator>
#include <string>

#include "engine/runtime/vulkan/vulkan_model_impl.h"

namespace kiln::runtime {

namespace {

using Family = std::map<std::string, std::unique_ptr<Signature>>;

// Calls f(family, it) for every signature of `depth` in the tree under
// `family` (signatures of depth `at`); f returns the next iterator.
template <typename F>
void for_each_at_depth(Family& family, size_t at, size_t depth, const F& f) {
  for (auto it = family.begin(); it != family.end();) {
    if (at == depth) {
      it = f(family, it);
      continue;
    }
    for_each_at_depth(it->second->continuations, at + 1, depth, f);
    ++it;
  }
}

}  // namespace

StatusOr<std::shared_ptr<vk::MemoryArena>> VulkanModel::Impl::activation_memory_for(size_t depth, VkDeviceSize bytes,
                                                                                    uint32_t type_bits) {
  if (activation_memory.size() <= depth) {
    activation_memory.resize(depth + 1);
    memory_owner.resize(depth + 1, nullptr);
  }
  std::shared_ptr<vk::MemoryArena>& memory = activation_memory[depth];
  if (memory && memory->capacity() >= bytes && ((type_bits >> memory->memory_type_index()) & 1u)) return memory;
  // Grow (or change type): the signatures bound to the old memory go (with
  // their continuations), and with them the last reference to it (their
  // resources are destroyed first: a Signature's are declared after its
  // arena). None is in flight: the one being made is not in the tree yet,
  // and its parents are of lower depths.
  if (memory) {
    const vk::MemoryArena* old = memory.get();
    for_each_at_depth(signatures, 0, depth, [&](Family& family, Family::iterator it) {
      if (it->second->arena.get() != old) return std::next(it);
      release(*it->second);
      return family.erase(it);
    });
  }
  memory.reset();
  // The new size is the plan's, plus an eighth for slightly larger shapes
  // later: each growth makes the others record again, so it stays rare.
  // Under a memory limit the slack gives way first.
  VkDeviceSize capacity = bytes + bytes / 8 + (64 << 10);
  if (options.device_memory_limit != 0) {
    const uint64_t held = memory_use().total + other_slots_bytes();
    if (held + bytes <= options.device_memory_limit)
      capacity = std::min<VkDeviceSize>(capacity, options.device_memory_limit - held);
    KILN_RETURN_IF_ERROR(check_memory_limit(capacity, "the activations of these input shapes"));
  }
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<vk::MemoryArena> made, vk::MemoryArena::create(device, capacity, type_bits));
  memory = std::move(made);
  return memory;
}

DeviceMemoryUse VulkanModel::Impl::memory_use() const {
  DeviceMemoryUse use;
  // Weights (shared by the slots) and this slot's model state.
  use.weights = (weights_arena ? weights_arena->capacity() : 0) + (state_arena ? state_arena->capacity() : 0);
  for (const auto& memory : activation_memory) use.activations += memory ? memory->capacity() : 0;
  std::function<uint64_t(const Signature&)> held = [&](const Signature& s) {
    uint64_t bytes = s.device_bytes;
    for (const auto& [key, next] : s.continuations) bytes += held(*next);
    return bytes;
  };
  for (const auto& [key, s] : signatures) use.staging += held(*s);
  use.total = use.weights + use.activations + use.staging;
  use.limit = options.device_memory_limit;
  return use;
}

Status VulkanModel::Impl::check_memory_limit(uint64_t extra, const std::string& what) const {
  const uint64_t limit = options.device_memory_limit;
  if (limit == 0) return ok_status();
  const DeviceMemoryUse use = memory_use();
  const uint64_t others = other_slots_bytes();
  if (use.total + others + extra <= limit) return ok_status();
  return out_of_memory(what + " need " + std::to_string(extra) + " bytes of device memory; with the " +
                       std::to_string(use.total + others) + " bytes the model holds (weights " +
                       std::to_string(use.weights) + ", activations " + std::to_string(use.activations) +
                       ", staging " + std::to_string(use.staging) +
                       (others ? ", other run slots " + std::to_string(others) : std::string()) +
                       ") that passes its limit of " + std::to_string(limit) + " bytes (device_memory_limit)");
}

void VulkanModel::Impl::release(Signature& sig) {
  keep_ticket_outputs(sig);  // a completed submission's outputs outlive its signature
  for (Segment& seg : sig.segments) {
    for (RecordedDispatch& d : seg.dispatches) descriptors->free(d.sets);
    seg.dispatches.clear();
    submitter->release(seg.cmd);
    seg.cmd = VK_NULL_HANDLE;
  }
  sig.host_commands = HostCommands{};  // its descriptor sets were just freed
  if (sig.host_secondary != VK_NULL_HANDLE) secondaries->free(sig.host_secondary);
  sig.host_secondary = VK_NULL_HANDLE;
  for (ImageConversion& c : sig.image_conversions) descriptors->free(c.sets);
  sig.image_conversions.clear();
  for (const Signature*& owner : memory_owner)
    if (owner == &sig) owner = nullptr;
  if (sliced && sliced->sig == &sig) sliced->sig = nullptr;  // interrupts the sliced run (record_slice)
  // A later record with those bindings checks them again.
  std::erase_if(host_checks, [&](const HostRecordCheck& c) { return c.sig == &sig; });
  for (auto& [key, next] : sig.continuations) release(*next);
}

void VulkanModel::Impl::evict_signatures(Family& family, const Signature* keep) {
  for (const std::string& key : lru_victims(family, options.max_signatures, keep)) {
    auto it = family.find(key);
    release(*it->second);
    family.erase(it);
  }
}

}  // namespace kiln::runtime
