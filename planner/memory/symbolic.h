// Arena offsets as expressions of the input shape (SoD² §4.4, "offsets are
// symbolic where shapes are").
//
// A plan made at one shape fixes which live-overlapping tensors lie below
// which (arena.h Stacking). Each offset is then the max over the tensors
// below it of (their offset + their slot), aligned up — an ir::Dim built
// with Dim::max and Dim::ceil_div — valid for every shape, and equal to the
// plan (or lower) at the shape it was made for.
//
// The runtime does not use these expressions today: a plan made per
// signature with concrete sizes costs microseconds to a millisecond and
// stays within 1.05x of the bound at every shape, while a stacking fixed at
// one shape loosens as tensors grow at different rates (attention scores
// grow with seq², the rest with seq); see README.md. They serve planning
// ahead of a shape (sizes for a range of shapes, a bound per symbol) and are
// tested to be valid at every shape.
#pragma once

#include <vector>

#include "engine/ir/dim.h"
#include "planner/memory/arena.h"

namespace kiln::memplan {

// Offsets and the arena size as expressions: `sizes[i]` is block i's size
// in bytes as a dim, `blocks` give lifetimes and alignments (their sizes are
// not read), `stacking` comes from a plan of the same blocks at some shape.
struct SymbolicArena {
  std::vector<ir::Dim> offsets;
  ir::Dim bytes;
};
SymbolicArena symbolic_offsets(const std::vector<Block>& blocks, const std::vector<ir::Dim>& sizes,
                               const Stacking& stacking);

}  // namespace kiln::memplan
