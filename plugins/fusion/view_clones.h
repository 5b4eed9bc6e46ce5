// Index views shared by several fusion groups: one copy of the view chain
// per group.
//
// A data-movement node the planner reads through an index view
// (planner/fusion_views.h) costs only index arithmetic in the kernel that
// reads it, but the planner takes a view node only into a group that reads
// its output and nothing else does. A view read by several groups (torch's
// MultiheadAttention: one Transpose of the QKV projection feeding the
// Gathers of q, k and v) would stay a copy kernel; cloning it per group lets
// every group read the source through its own view. The partitioner decides
// which view nodes join which groups (a node may join several); this file
// makes the graph match: the node stays in its first group and gets a clone
// in each other one, a clone of a shared view reading the clone of its
// shared producer in the same group, and every reader of the view in a
// group is rewired to that group's copy. Written against the plugin ABI.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/kiln_plugin.hpp"

namespace kiln_fusion {

// Whether clone_shared_views can copy the node: every attribute is an int,
// float, string or a list of ints or floats.
bool can_clone(const kiln::plugin::GraphView& g, kiln_node_id_t n);

// `nodes`: the main graph's nodes in order (the partitioner's indices);
// `groups`: member indices per group, a shared view node in several;
// `group_names`: the kiln.fusion_group value of each group. Annotates every
// member of a shared node's groups that needs it — the shared node itself
// (its first group) and its clones — and rewires their readers; members in
// one group only are left to the caller. Returns the number of clones.
int64_t clone_shared_views(const kiln::plugin::GraphView& g, kiln::plugin::Rewriter& rw,
                           const std::vector<kiln_node_id_t>& nodes, const std::vector<std::vector<int>>& groups,
                           const std::vector<std::string>& group_names);

}  // namespace kiln_fusion
