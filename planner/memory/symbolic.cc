// Arena offsets as dims (symbolic.h).
#include "planner/memory/symbolic.h"

namespace kiln::memplan {

namespace {

ir::Dim align_dim(const ir::Dim& v, uint64_t align) {
  if (align <= 1) return v;
  const ir::Dim a(static_cast<int64_t>(align));
  return ir::Dim::ceil_div(v, a) * a;
}

}  // namespace

SymbolicArena symbolic_offsets(const std::vector<Block>& blocks, const std::vector<ir::Dim>& sizes,
                               const Stacking& stacking) {
  SymbolicArena out;
  out.offsets.assign(blocks.size(), ir::Dim(0));
  std::vector<ir::Dim> slot(blocks.size());
  for (size_t i = 0; i < blocks.size(); ++i) slot[i] = align_dim(sizes[i], blocks[i].align);
  out.bytes = ir::Dim(0);
  for (size_t i : stacking.order) {
    ir::Dim top(0);
    for (size_t j : stacking.below[i]) top = ir::Dim::max(top, out.offsets[j] + slot[j]);
    out.offsets[i] = align_dim(top, blocks[i].align);
    out.bytes = ir::Dim::max(out.bytes, out.offsets[i] + slot[i]);
  }
  return out;
}

}  // namespace kiln::memplan
