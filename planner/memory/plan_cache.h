// Arena plans reused across input shapes.
//
// A runtime plans its arena once per input-shape signature. Signatures of
// one model differ in sizes, rarely in lifetimes, and planning anew for
// every new length would forget what worked: SoD² keeps offsets as
// expressions of the shape. ArenaPlanCache keeps each plan made so far as
// its stacking (which blocks lie below which, arena.h) per set of
// lifetimes, evaluates those at new sizes (symbolic.h's expressions at
// concrete values), and uses the smallest when it is within kSlack of the
// live-set lower bound; otherwise it plans anew (plan_arena) and keeps that
// plan as another version (at most kVersions per set of lifetimes, the
// oldest going first).
//
// Pure C++ in kiln_memory_arena, tested without a device
// (plan_cache_test.cc).
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "planner/memory/arena.h"

namespace kiln::memplan {

class ArenaPlanCache {
 public:
  static constexpr double kSlack = 1.05;
  static constexpr size_t kVersions = 4;

  // A valid plan for `blocks` (check_plan passes): an earlier version
  // evaluated at these sizes (strategy "earlier plan evaluated") when one
  // is within kSlack of live_lower_bound(blocks), else plan_arena's, which
  // becomes a version. Not thread-safe (callers hold their own lock).
  ArenaPlan plan(const std::vector<Block>& blocks);

  // Versions kept for the lifetimes and alignments of `blocks`.
  size_t versions(const std::vector<Block>& blocks) const;

 private:
  static std::string key(const std::vector<Block>& blocks);
  std::map<std::string, std::vector<Stacking>> plans_;  // by lifetimes and alignments
};

}  // namespace kiln::memplan
