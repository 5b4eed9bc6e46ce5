// The dispatch grid of a kernel that numbers its workgroups linearly.
//
// A kernel needing more workgroups than the device's x limit
// (maxComputeWorkGroupCount[0], 65535 on many GPUs) is dispatched as y rows
// of x groups and numbers them gx + gy * gl_NumWorkGroups.x, returning from
// groups past its count. Filling x to the limit and rounding y up launched up
// to a whole row of empty groups: 65536 groups (a 64 MiB fp32 map) became
// 2 x 65535, half of them empty. Balanced rows leave fewer than y surplus
// groups.
#pragma once

#include <array>
#include <cstdint>

#include "engine/ir/dim.h"

namespace kiln::planner {

// {x, y, 1} with y = ceil(groups / max_x) (at least 1) and x = ceil(groups / y):
// x <= max_x and x * y - groups < y. Symbolic `groups` gives expressions
// evaluated per run; 0 groups gives an empty grid.
std::array<ir::Dim, 3> dispatch_grid_2d(const ir::Dim& groups, uint32_t max_x);

}  // namespace kiln::planner
