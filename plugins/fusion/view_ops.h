// The fusion plugin's view of which data-movement nodes the planner reads
// through an index view (planner/index_view.h says what the planner
// accepts; these are the same tests, through the plugin ABI). Pure
// functions of the graph; no state.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "kiln/kiln_plugin.hpp"

namespace kiln_fusion {

// Transpose, Reshape, Flatten, Squeeze, Unsqueeze, Identity, Slice, Expand,
// Gather, Concat, DepthToSpace, SpaceToDepth (default domain): the ops a
// view may be. Gather and Concat only in the forms gather_is_view and
// is_roll accept.
bool is_view_op(const kiln::plugin::GraphView& g, kiln_node_id_t n);

// Shape and Size: they read their input's dims (on the host), never its data.
bool reads_only_dims(const kiln::plugin::GraphView& g, kiln_node_id_t n);

// A constant integer tensor's elements (int64 or int32); nullopt otherwise.
std::optional<std::vector<int64_t>> constant_ints(const kiln::plugin::GraphView& g, kiln_value_id_t v);

// A Gather of a constant one-element index inside the axis of a statically
// shaped input: a Slice of one element (torch's `qkv[0]`).
bool gather_is_view(const kiln::plugin::GraphView& g, kiln_node_id_t n);

// torch.roll along one axis as exported (planner/index_view.h roll_of): a
// Concat of Slice(x, s..n) and Slice(x, 0..s) of one input along the sliced
// axis, steps 1, constant bounds, a static extent, 0 < s < n.
bool is_roll(const kiln::plugin::GraphView& g, kiln_node_id_t n);

}  // namespace kiln_fusion
