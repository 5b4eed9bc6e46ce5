// Arena placement strategies and the numbers they are judged by (arena.h).
#include "planner/memory/arena.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <numeric>
#include <queue>

namespace kiln::memplan {

namespace {

uint64_t slot(const Block& b) { return align_up(b.size, b.align); }

// last - first in uint64: a block live for the whole run spans kBeforeRun (-1)
// to kAfterRun (INT64_MAX), a difference that overflows int64.
uint64_t lifetime(const Block& b) { return static_cast<uint64_t>(b.last) - static_cast<uint64_t>(b.first); }

// Live bytes per distinct step, in step order, as (step, bytes) pairs: a
// sweep where a block counts from its first step through its last.
std::vector<std::pair<int64_t, uint64_t>> live_profile(const std::vector<Block>& blocks) {
  // +size at first, -size after last; removals at a step sort after additions
  // so a block ending where another starts still counts at that step.
  struct Event {
    int64_t step;
    int kind;  // 0 add, 1 remove (after the step)
    uint64_t bytes;
  };
  std::vector<Event> events;
  events.reserve(blocks.size() * 2);
  for (const Block& b : blocks) {
    events.push_back({b.first, 0, slot(b)});
    events.push_back({b.last, 1, slot(b)});
  }
  std::sort(events.begin(), events.end(),
            [](const Event& a, const Event& b) { return a.step != b.step ? a.step < b.step : a.kind < b.kind; });
  std::vector<std::pair<int64_t, uint64_t>> profile;
  uint64_t live = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i].kind == 0) live += events[i].bytes;
    // The bytes at a step are what is live after its additions, before its removals.
    const bool last_add = events[i].kind == 0 && (i + 1 == events.size() || events[i + 1].step != events[i].step ||
                                                  events[i + 1].kind != 0);
    if (last_add) profile.push_back({events[i].step, live});
    if (events[i].kind == 1) live -= events[i].bytes;
  }
  return profile;
}

// Unplaced blocks in order of placement for the SoD² sweep from step `peak`.
std::vector<size_t> outward_order(const std::vector<Block>& blocks, const std::vector<size_t>& candidates,
                                  int64_t peak) {
  // Distance of a block from the peak: 0 if live there, else how many steps a
  // sweep must walk (forward or backward) before it becomes live.
  auto distance = [&](const Block& b) -> uint64_t {
    if (b.first <= peak && peak <= b.last) return 0;
    // In uint64: steps span kBeforeRun (-1) to kAfterRun (INT64_MAX), whose
    // int64 difference overflows; the true distance always fits in uint64.
    return b.first > peak ? static_cast<uint64_t>(b.first) - static_cast<uint64_t>(peak)
                          : static_cast<uint64_t>(peak) - static_cast<uint64_t>(b.last);
  };
  std::vector<size_t> order = candidates;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const uint64_t da = distance(blocks[a]), db = distance(blocks[b]);
    if (da != db) return da < db;
    return slot(blocks[a]) > slot(blocks[b]);
  });
  return order;
}

}  // namespace

uint64_t live_lower_bound(const std::vector<Block>& blocks) {
  uint64_t best = 0;
  for (const auto& [step, bytes] : live_profile(blocks)) best = std::max(best, bytes);
  return best;
}

uint64_t no_reuse_total(const std::vector<Block>& blocks) {
  uint64_t top = 0;
  for (const Block& b : blocks) top = align_up(top, b.align) + slot(b);
  return top;
}

ArenaPlan place_in_order(const std::vector<Block>& blocks, const std::vector<size_t>& order) {
  ArenaPlan plan;
  plan.offsets.assign(blocks.size(), 0);
  std::vector<size_t> placed;
  placed.reserve(order.size());
  std::vector<std::pair<uint64_t, uint64_t>> busy;
  for (size_t i : order) {
    const Block& b = blocks[i];
    busy.clear();
    const uint64_t size = slot(b);
    for (size_t j : placed)
      if (blocks[j].overlaps(b)) busy.push_back({plan.offsets[j], plan.offsets[j] + slot(blocks[j])});
    std::sort(busy.begin(), busy.end());
    // Best fit: the smallest gap between busy ranges that holds the block;
    // the space above everything only when no gap does.
    uint64_t cursor = 0;
    uint64_t best_offset = 0, best_gap = UINT64_MAX;
    for (const auto& [lo, hi] : busy) {
      const uint64_t start = align_up(cursor, b.align);
      if (lo > start && lo - start >= size && lo - cursor < best_gap) {
        best_gap = lo - cursor;
        best_offset = start;
      }
      cursor = std::max(cursor, hi);
    }
    plan.offsets[i] = best_gap != UINT64_MAX ? best_offset : align_up(cursor, b.align);
    plan.bytes = std::max(plan.bytes, plan.offsets[i] + size);
    placed.push_back(i);
  }
  return plan;
}

ArenaPlan plan_greedy_best_fit(const std::vector<Block>& blocks) {
  ArenaPlan plan;
  plan.strategy = "greedy-best-fit";
  plan.offsets.assign(blocks.size(), 0);
  std::vector<size_t> by_first(blocks.size());
  std::iota(by_first.begin(), by_first.end(), size_t{0});
  std::stable_sort(by_first.begin(), by_first.end(),
                   [&](size_t a, size_t b) { return blocks[a].first < blocks[b].first; });
  std::map<uint64_t, uint64_t> holes;  // offset -> size, coalesced, below the high-water mark
  uint64_t top = 0;
  auto release = [&](uint64_t off, uint64_t size) {
    auto [it, ok] = holes.emplace(off, size);
    (void)ok;
    auto next = std::next(it);
    if (next != holes.end() && it->first + it->second == next->first) {
      it->second += next->second;
      holes.erase(next);
    }
    if (it != holes.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second == it->first) {
        prev->second += it->second;
        holes.erase(it);
      }
    }
  };
  using Active = std::pair<int64_t, size_t>;  // (last step, block)
  std::priority_queue<Active, std::vector<Active>, std::greater<>> active;
  for (size_t i : by_first) {
    const Block& b = blocks[i];
    const uint64_t size = slot(b);
    while (!active.empty() && active.top().first < b.first) {
      const size_t j = active.top().second;
      active.pop();
      release(plan.offsets[j], slot(blocks[j]));
    }
    auto best = holes.end();
    for (auto it = holes.begin(); it != holes.end(); ++it) {
      const uint64_t start = align_up(it->first, b.align);
      if (start + size > it->first + it->second) continue;
      if (best == holes.end() || it->second < best->second) best = it;
    }
    uint64_t off;
    if (best != holes.end()) {
      off = align_up(best->first, b.align);
    } else if (!holes.empty() && std::prev(holes.end())->first + std::prev(holes.end())->second == top) {
      best = std::prev(holes.end());  // the top hole grows the arena
      off = align_up(best->first, b.align);
    } else {
      off = align_up(top, b.align);
    }
    if (best != holes.end()) {
      const uint64_t h_off = best->first, h_end = best->first + best->second;
      holes.erase(best);
      if (off > h_off) holes.emplace(h_off, off - h_off);
      if (off + size < h_end) holes.emplace(off + size, h_end - off - size);
    }
    plan.offsets[i] = off;
    top = std::max(top, off + size);
    active.push({b.last, i});
  }
  plan.bytes = top;
  return plan;
}

namespace {

// The peak step of `blocks` (the first of equal ones when `last_of_ties` is
// false) and the blocks live there, largest first.
int64_t peak_step(const std::vector<Block>& blocks, bool last_of_ties) {
  int64_t peak = 0;
  uint64_t most = 0;
  bool any = false;
  for (const auto& [step, bytes] : live_profile(blocks))
    if (!any || bytes > most || (last_of_ties && bytes == most)) most = bytes, peak = step, any = true;
  return peak;
}

std::vector<size_t> peak_first_order(const std::vector<Block>& blocks) {
  std::vector<size_t> all(blocks.size());
  std::iota(all.begin(), all.end(), size_t{0});
  return outward_order(blocks, all, peak_step(blocks, false));
}

// Peak-first applied again and again: the blocks live at the step with the
// most bytes not yet ordered, then those of the next such step, and so on.
std::vector<size_t> residual_peaks_order(const std::vector<Block>& blocks) {
  std::vector<bool> done(blocks.size(), false);
  std::vector<size_t> order;
  while (order.size() < blocks.size()) {
    std::vector<Block> rest;
    std::vector<size_t> index;
    for (size_t i = 0; i < blocks.size(); ++i)
      if (!done[i]) rest.push_back(blocks[i]), index.push_back(i);
    const int64_t peak = peak_step(rest, true);
    std::vector<size_t> at_peak;
    for (size_t k = 0; k < rest.size(); ++k)
      if (rest[k].first <= peak && peak <= rest[k].last) at_peak.push_back(k);
    std::stable_sort(at_peak.begin(), at_peak.end(), [&](size_t a, size_t b) { return slot(rest[a]) > slot(rest[b]); });
    for (size_t k : at_peak) {
      order.push_back(index[k]);
      done[index[k]] = true;
    }
  }
  return order;
}

// TFLite's greedy by size: largest first, longer lifetimes first among equals.
std::vector<size_t> largest_first_order(const std::vector<Block>& blocks) {
  std::vector<size_t> order(blocks.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (slot(blocks[a]) != slot(blocks[b])) return slot(blocks[a]) > slot(blocks[b]);
    return lifetime(blocks[a]) > lifetime(blocks[b]);
  });
  return order;
}

// Squeaky-wheel refinement: the blocks that end above the lower bound were
// placed too late; move them to the front of the order and place again.
// Keeps the best plan seen; stops at the bound or after `rounds`.
ArenaPlan refine(const std::vector<Block>& blocks, std::vector<size_t> order, uint64_t bound, int rounds,
                 const char* strategy) {
  ArenaPlan best = place_in_order(blocks, order);
  best.strategy = strategy;
  ArenaPlan plan = best;
  for (int round = 0; round < rounds && best.bytes > bound; ++round) {
    std::vector<size_t> front, back;
    for (size_t i : order) (plan.offsets[i] + slot(blocks[i]) > bound ? front : back).push_back(i);
    if (front.empty() || back.empty()) break;
    order = front;
    order.insert(order.end(), back.begin(), back.end());
    plan = place_in_order(blocks, order);
    if (plan.bytes < best.bytes) {
      best = plan;
      best.strategy = std::string(strategy) + "+refined";
    }
  }
  return best;
}

}  // namespace

ArenaPlan plan_peak_first(const std::vector<Block>& blocks) {
  ArenaPlan plan = place_in_order(blocks, peak_first_order(blocks));
  plan.strategy = "peak-first";
  return plan;
}

ArenaPlan plan_arena(const std::vector<Block>& blocks) {
  const uint64_t bound = live_lower_bound(blocks);
  constexpr int kRounds = 16;
  ArenaPlan best = refine(blocks, peak_first_order(blocks), bound, kRounds, "peak-first");
  if (best.bytes <= bound) return best;
  const std::pair<std::vector<size_t> (*)(const std::vector<Block>&), const char*> others[] = {
      {&residual_peaks_order, "residual-peaks"}, {&largest_first_order, "largest-first"}};
  for (const auto& [order_of, name] : others) {
    ArenaPlan p = refine(blocks, order_of(blocks), bound, kRounds, name);
    if (p.bytes < best.bytes) best = std::move(p);
    if (best.bytes <= bound) return best;
  }
  // The online baseline sometimes wins: its plan is a placement too.
  if (ArenaPlan p = plan_greedy_best_fit(blocks); p.bytes < best.bytes) best = std::move(p);
  // Still above the bound: random orders, refined, within a budget of
  // placements that keeps large graphs in milliseconds (each placement
  // costs about n^2 overlap tests). Seeded, so a plan is reproducible.
  const size_t n = std::max<size_t>(blocks.size(), 1);
  const size_t budget = std::min<size_t>(256, std::max<size_t>(8, size_t{40'000'000} / (n * n)));
  std::vector<size_t> order(blocks.size());
  std::iota(order.begin(), order.end(), size_t{0});
  uint64_t state = 0x9e3779b97f4a7c15ull;
  auto next = [&state]() {  // splitmix64: same sequence on every platform
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  constexpr int kRandomRounds = 4;
  for (size_t used = 0; used + kRandomRounds + 1 <= budget && best.bytes > bound; used += kRandomRounds + 1) {
    for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[next() % i]);
    ArenaPlan p = refine(blocks, order, bound, kRandomRounds, "random");
    if (p.bytes < best.bytes) best = std::move(p);
  }
  return best;
}

Stacking stacking_of(const std::vector<Block>& blocks, const ArenaPlan& plan) {
  Stacking st;
  st.below.resize(blocks.size());
  st.order.resize(blocks.size());
  std::iota(st.order.begin(), st.order.end(), size_t{0});
  std::stable_sort(st.order.begin(), st.order.end(),
                   [&](size_t a, size_t b) { return plan.offsets[a] < plan.offsets[b]; });
  for (size_t x = 0; x < st.order.size(); ++x)
    for (size_t y = 0; y < x; ++y) {
      const size_t i = st.order[x], j = st.order[y];
      // j is below i (j's offset is not above i's, and they may not overlap).
      if (blocks[i].overlaps(blocks[j])) st.below[i].push_back(j);
    }
  return st;
}

ArenaPlan evaluate_stacking(const std::vector<Block>& blocks, const Stacking& stacking) {
  ArenaPlan plan;
  plan.strategy = "stacking";
  plan.offsets.assign(blocks.size(), 0);
  for (size_t i : stacking.order) {
    uint64_t top = 0;
    for (size_t j : stacking.below[i]) top = std::max(top, plan.offsets[j] + slot(blocks[j]));
    plan.offsets[i] = align_up(top, blocks[i].align);
    plan.bytes = std::max(plan.bytes, plan.offsets[i] + slot(blocks[i]));
  }
  return plan;
}

std::string check_plan(const std::vector<Block>& blocks, const ArenaPlan& plan) {
  if (plan.offsets.size() != blocks.size()) return "plan has " + std::to_string(plan.offsets.size()) +
                                                   " offsets for " + std::to_string(blocks.size()) + " blocks";
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (blocks[i].align > 1 && plan.offsets[i] % blocks[i].align != 0)
      return "block " + std::to_string(i) + " at " + std::to_string(plan.offsets[i]) + " is not aligned to " +
             std::to_string(blocks[i].align);
    if (plan.offsets[i] + blocks[i].size > plan.bytes)
      return "block " + std::to_string(i) + " ends past the arena (" + std::to_string(plan.bytes) + " bytes)";
  }
  // Sweep in offset order: only blocks whose ranges overlap need a lifetime check.
  std::vector<size_t> by_offset(blocks.size());
  std::iota(by_offset.begin(), by_offset.end(), size_t{0});
  std::sort(by_offset.begin(), by_offset.end(), [&](size_t a, size_t b) { return plan.offsets[a] < plan.offsets[b]; });
  for (size_t x = 0; x < by_offset.size(); ++x) {
    const size_t i = by_offset[x];
    for (size_t y = x + 1; y < by_offset.size(); ++y) {
      const size_t j = by_offset[y];
      if (plan.offsets[j] >= plan.offsets[i] + blocks[i].size) break;
      if (blocks[i].size > 0 && blocks[j].size > 0 && blocks[i].overlaps(blocks[j]))
        return "blocks " + std::to_string(i) + " and " + std::to_string(j) + " are live together and overlap at " +
               std::to_string(plan.offsets[j]);
    }
  }
  return {};
}

ArenaReport report(const std::vector<Block>& blocks, const ArenaPlan& plan) {
  ArenaReport r;
  r.arena_bytes = plan.bytes;
  r.live_lower_bound = live_lower_bound(blocks);
  r.no_reuse_bytes = no_reuse_total(blocks);
  r.best_fit_bytes = plan_greedy_best_fit(blocks).bytes;
  r.tensors = blocks.size();
  r.strategy = plan.strategy;
  return r;
}

}  // namespace kiln::memplan
