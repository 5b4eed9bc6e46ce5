// Balanced 2D dispatch grids (see dispatch_grid.h).
#include "planner/dispatch_grid.h"

namespace kiln::planner {

std::array<ir::Dim, 3> dispatch_grid_2d(const ir::Dim& groups, uint32_t max_x) {
  const ir::Dim rows = ir::Dim::max(ir::Dim(1), ir::Dim::ceil_div(groups, ir::Dim(static_cast<int64_t>(max_x))));
  return {ir::Dim::ceil_div(groups, rows), rows, ir::Dim(1)};
}

}  // namespace kiln::planner
