// VulkanModel: one activation memory for every input-shape signature, and a
// bounded cache of recorded signatures.
//
// Each signature's arena plan (plugins/memplan) is made for its own shapes,
// but the memory it is bound in is the model's: a user who feeds a new
// sentence length every call holds the largest plan seen, not one arena per
// length (and not one sized for a maximum shape). Runs take turns on it (the
// model's mutex), so any two signatures may overlap in it; what a signature
// keeps there from run to run (host values kernels bind, images made GENERAL
// once) is written again when another signature ran in between
// (restore_arena).

#include <algorithm>

#include "engine/runtime/vulkan/vulkan_model_impl.h"

namespace kiln::runtime {

StatusOr<std::shared_ptr<vk::MemoryArena>> VulkanModel::Impl::activation_memory_for(VkDeviceSize bytes,
                                                                                    uint32_t type_bits) {
  if (activation_memory && activation_memory->capacity() >= bytes &&
      ((type_bits >> activation_memory->memory_type_index()) & 1u))
    return activation_memory;
  // Grow (or change type): the signatures bound to the old memory go, and
  // with them the last reference to it (their resources are destroyed
  // first: a Signature's resources are declared after its arena).
  for (auto it = signatures.begin(); it != signatures.end();) {
    if (it->second->arena != activation_memory) {
      ++it;
      continue;
    }
    release(*it->second);
    it = signatures.erase(it);
  }
  memory_owner = nullptr;
  activation_memory.reset();
  // The new size is the plan's, plus a little headroom for slightly larger
  // shapes later; each growth makes the others re-record, so it is rare.
  const VkDeviceSize capacity = bytes + bytes / 8 + (64 << 10);
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<vk::MemoryArena> made, vk::MemoryArena::create(device, capacity, type_bits));
  activation_memory = std::move(made);
  return activation_memory;
}

void VulkanModel::Impl::release(Signature& sig) {
  for (Segment& seg : sig.segments) {
    for (RecordedDispatch& d : seg.dispatches) descriptors->free(d.sets);
    seg.dispatches.clear();
    submitter->release(seg.cmd);
    seg.cmd = VK_NULL_HANDLE;
  }
  for (auto& [key, next] : sig.continuations) release(*next);
}

void VulkanModel::Impl::evict_signatures(const Signature* keep) {
  const size_t limit = std::max<size_t>(options.max_signatures, 1);
  while (signatures.size() > limit) {
    auto oldest = signatures.end();
    for (auto it = signatures.begin(); it != signatures.end(); ++it)
      if (it->second.get() != keep && (oldest == signatures.end() || it->second->last_run < oldest->second->last_run))
        oldest = it;
    if (oldest == signatures.end()) return;
    release(*oldest->second);
    if (memory_owner == oldest->second.get()) memory_owner = nullptr;
    signatures.erase(oldest);
  }
}

}  // namespace kiln::runtime
