// Arena offsets for tensors with known lifetimes (SoD² §4.4).
//
// Every intermediate tensor of a run is a block: a size, an alignment and the
// steps it is live (first..last, inclusive). Two blocks whose lifetimes
// overlap must not overlap in memory; everything else may share bytes. The
// runtime calls plan_arena() once per input-shape signature with concrete
// sizes (microseconds for a few hundred tensors), and the same module answers
// the report of `kiln run --stats`: the planned arena, the live-set lower
// bound (no placement can use less than the bytes live at the busiest step),
// the no-reuse total and a greedy best-fit allocator as the usual baseline.
//
// Pure C++ without engine dependencies or exceptions (library
// kiln_memory_arena): the runtime links it, and anything else that plans
// memory (a plugin's report, a tool) may link it without the engine. It
// lived in plugins/memplan until the engine stopped including plugins.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::memplan {

// A block occupies its size rounded up to its alignment (its slot), so the
// bytes after one block are aligned for the next of the same alignment.
struct Block {
  int64_t first = 0;   // first step the block is live
  int64_t last = 0;    // last step (inclusive); first <= last
  uint64_t size = 0;   // bytes
  uint64_t align = 1;  // the offset must be a multiple of this (a power of two)
  bool overlaps(const Block& o) const { return first <= o.last && o.first <= last; }
};

struct ArenaPlan {
  std::vector<uint64_t> offsets;  // per block
  uint64_t bytes = 0;             // arena size: max over blocks of offset + slot
  std::string strategy;           // which placement produced it
};

// The bytes live at the busiest step (each block's size rounded up to its
// alignment): a lower bound for every placement of these lifetimes.
uint64_t live_lower_bound(const std::vector<Block>& blocks);

// Every block in its own slot: the arena without any reuse.
uint64_t no_reuse_total(const std::vector<Block>& blocks);

// The usual online baseline (MNN, Nimble): walking the steps in order, blocks
// whose lifetime ended return to a free list (coalesced), and each new block
// takes the smallest free hole that holds it, or grows the arena.
ArenaPlan plan_greedy_best_fit(const std::vector<Block>& blocks);

// Places blocks one by one in `order`, each in the tightest gap left by the
// already placed blocks whose lifetimes overlap it (best fit), else on top.
ArenaPlan place_in_order(const std::vector<Block>& blocks, const std::vector<size_t>& order);

// SoD²'s planner: the blocks live at the step of peak memory first (stacked,
// largest first: that step needs exactly the lower bound), then the others in
// the order a sweep outward from the peak reaches them, forward and backward,
// each re-using a freed slot where one fits.
ArenaPlan plan_peak_first(const std::vector<Block>& blocks);

// What Kiln uses: the smallest of the peak-first plan, a largest-first plan
// and a plan that repeats peak-first on the residual peaks (see arena.cc).
ArenaPlan plan_arena(const std::vector<Block>& blocks);

// A plan's placement order as constraints that hold for any sizes: for each
// block, the live-overlapping blocks that lie below it. With new sizes (same
// lifetimes), putting each block right above the highest of those below it
// (max of their offset + slot, aligned up) is again valid, and at the sizes
// the plan was made for it is no larger than the plan. This is how an
// offset becomes an expression of the shape (symbolic.h).
struct Stacking {
  std::vector<std::vector<size_t>> below;  // per block
  std::vector<size_t> order;               // blocks by increasing offset: each after all below it
};
Stacking stacking_of(const std::vector<Block>& blocks, const ArenaPlan& plan);
ArenaPlan evaluate_stacking(const std::vector<Block>& blocks, const Stacking& stacking);

// Empty when `plan` is a valid placement of `blocks` (aligned, inside
// plan.bytes, no two live-overlapping blocks share a byte); else what is wrong.
std::string check_plan(const std::vector<Block>& blocks, const ArenaPlan& plan);

// The numbers `kiln run --stats` reports for one signature.
struct ArenaReport {
  uint64_t arena_bytes = 0;       // plan_arena
  uint64_t live_lower_bound = 0;  // live_lower_bound
  uint64_t no_reuse_bytes = 0;    // no_reuse_total
  uint64_t best_fit_bytes = 0;    // plan_greedy_best_fit
  size_t tensors = 0;
  std::string strategy;
};
ArenaReport report(const std::vector<Block>& blocks, const ArenaPlan& plan);

inline uint64_t align_up(uint64_t v, uint64_t a) { return a <= 1 ? v : (v + a - 1) / a * a; }

}  // namespace kiln::memplan
