// Arena plans by lifetimes, evaluated at new sizes (plan_cache.h).
#include "planner/memory/plan_cache.h"

#include <utility>

namespace kiln::memplan {

std::string ArenaPlanCache::key(const std::vector<Block>& blocks) {
  std::string key;
  for (const Block& b : blocks)
    key += std::to_string(b.first) + ":" + std::to_string(b.last) + ":" + std::to_string(b.align) + ";";
  return key;
}

ArenaPlan ArenaPlanCache::plan(const std::vector<Block>& blocks) {
  std::vector<Stacking>& versions = plans_[key(blocks)];
  const uint64_t bound = live_lower_bound(blocks);
  ArenaPlan best;
  for (const Stacking& stacking : versions) {
    ArenaPlan evaluated = evaluate_stacking(blocks, stacking);
    if (best.offsets.empty() || evaluated.bytes < best.bytes) best = std::move(evaluated);
  }
  if (!best.offsets.empty() && static_cast<double>(best.bytes) <= kSlack * static_cast<double>(bound)) {
    best.strategy = "earlier plan evaluated";
    return best;
  }
  ArenaPlan planned = plan_arena(blocks);
  if (versions.size() == kVersions) versions.erase(versions.begin());
  versions.push_back(stacking_of(blocks, planned));
  return planned;
}

size_t ArenaPlanCache::versions(const std::vector<Block>& blocks) const {
  auto it = plans_.find(key(blocks));
  return it == plans_.end() ? 0 : it->second.size();
}

}  // namespace kiln::memplan
