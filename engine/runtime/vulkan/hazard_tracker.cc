// Barrier placement by overlapping accesses (hazard_tracker.h).
#include "engine/runtime/vulkan/hazard_tracker.h"

namespace kiln::runtime {

namespace {

bool any_overlap(const std::vector<MemoryRange>& a, const std::vector<MemoryRange>& b) {
  for (const MemoryRange& x : a)
    for (const MemoryRange& y : b)
      if (x.overlaps(y)) return true;
  return false;
}

}  // namespace

bool HazardTracker::needs_barrier(const std::vector<MemoryRange>& reads, const std::vector<MemoryRange>& writes) const {
  return any_overlap(reads, writes_) || any_overlap(writes, writes_) || any_overlap(writes, reads_);
}

void HazardTracker::barrier() {
  reads_.clear();
  writes_.clear();
}

void HazardTracker::record(const std::vector<MemoryRange>& reads, const std::vector<MemoryRange>& writes) {
  reads_.insert(reads_.end(), reads.begin(), reads.end());
  writes_.insert(writes_.end(), writes.begin(), writes.end());
}

bool HazardTracker::access(const std::vector<MemoryRange>& reads, const std::vector<MemoryRange>& writes) {
  const bool hazard = needs_barrier(reads, writes);
  if (hazard) barrier();
  record(reads, writes);
  return hazard;
}

}  // namespace kiln::runtime
