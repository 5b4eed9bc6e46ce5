// AGO's weighted, cycle-free graph partitioning (ago.txt §IV-A/B) with
// DNNFusion's legality by mapping type, over an abstract DAG: the pass
// (fusion.cc) builds the DAG from the graph it reads through the plugin ABI,
// tests build it by hand. No ABI, no exceptions, no allocation beyond the
// STL; deterministic (ties go to the lower node index).
//
//   1. op_weight: Eq. 1, w = c * prod_l log2(1 + s_l) + b over the op's loop
//      nest (loops and their extents, from the value dims).
//   2. cluster: Algorithm 1 CLUSTER. Every groupable node starts as its own
//      hyper node in Cand; the heaviest in Cand merges with the lightest
//      member of its affix set (Definition 3: adjacent hyper nodes whose
//      topological stage differs by exactly one, on the contracted graph)
//      whose combined weight stays under Td and whose union may still become
//      a legal group; otherwise it leaves Cand. Theorem 1: such a merge never
//      creates a cycle.
//   3. legalize: each cluster is cut into single-sink cones (every member's
//      output read only by the cone, except the sink's), each trimmed from
//      its topologically first member until classify accepts it. Disjoint
//      single-sink cones never form a cycle either (see partition.cc), and
//      is_acyclic_partition checks the result anyway.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::fusion {

// What a node may be in a fusion group.
enum class Role : uint8_t {
  kOpaque,       // never grouped (host-run, control flow, other mapping types, several outputs ...)
  kElementwise,  // one-to-one or one-to-many (broadcast)
  kAnchor,       // many-to-many (Conv, MatMul, pooling, reductions, Softmax, norms)
};

// The shapes of group the planner realises as one kernel.
enum class GroupKind : uint8_t {
  kIllegal,
  kElementwise,  // (a) elementwise DAG, one output
  kAnchor,       // (b) one anchor, then elementwise nodes fed by it
  kDwPw,         // (c) depthwise Conv -> elementwise -> 1x1 Conv -> elementwise
  // (d) MatMul -> scale/mask -> Softmax -> MatMul (attention_pattern.h):
  // found before clustering, never by classify.
  kAttention,
  kStoreView,    // (e) an anchor (or a (b) group) -> view chain -> elementwise (classify_store_view)
  // (f) a MatMul or Gemm (or a (b) group it heads) -> LayerNormalization of
  // its output over the last axis, which may be read outside too
  // (planner/fusion_row_norm.h): made after clustering (fusion.cc
  // add_row_norms), never by classify.
  kRowNorm,
  // (g) two 1x1 Convs -> Add of their outputs -> elementwise (a ResNet
  // block's last conv and its projection shortcut; planner/
  // fusion_conv_sum.h): made after clustering (fusion.cc add_conv_sums),
  // never by classify.
  kConvSum,
  // (h) a depthwise Conv -> view nodes -> LayerNormalization (ConvNeXt's
  // block opening; planner/fusion_dw_norm.h): made after clustering
  // (fusion.cc add_dw_norms), never by classify.
  kDwNorm,
  // (i) GlobalAveragePool -> a 1x1 Conv's (b) group -> a 1x1 Conv's (b)
  // group (squeeze-and-excitation; planner/fusion_squeeze_excite.h): made
  // after clustering (fusion.cc add_squeeze_excites), never by classify.
  kSqueezeExcite,
  // (j) Mul by one value per channel -> a 1x1 Conv's (b) group (the
  // squeeze-excite scale; planner/fusion_scaled_conv.h): made after
  // clustering (fusion.cc add_scaled_convs), never by classify.
  kScaledConv,
  // (k) LayerNormalization (and its view prologues) -> a MatMul's (b)
  // group (a pre-norm block's norm -> first Linear; planner/
  // fusion_norm_gemm.h): made after clustering (fusion.cc add_norm_gemms),
  // never by classify.
  kNormGemm,
};
const char* group_kind_name(GroupKind kind);

struct DagNode {
  std::vector<int> preds;  // producers of its inputs (and sub-graph captures), deduplicated
  std::vector<int> succs;  // consumers of its outputs, deduplicated
  double weight = 1.0;
  Role role = Role::kOpaque;
  bool depthwise = false;  // a Conv with group == in channels == out channels
  bool pointwise = false;  // a 1x1, stride-1, unpadded, group-1 Conv
  // A 1x1, unpadded, group-1 Conv of any stride with a constant weight
  // (either side of a conv sum, group (g)).
  bool unpadded_1x1 = false;
  int data_pred = -1;      // producer of input 0 (-1: none in the DAG)
  int shape_class = -1;    // equal ids <=> equal output dims (expressions) and dtype
  bool escapes = false;    // its output is a graph output or read inside a sub-graph
  // A data-movement node an anchor may store through (a bijection of
  // coordinates: Transpose, Reshape, Flatten, Squeeze, Unsqueeze, a Slice
  // keeping the shape with unit steps). Opaque otherwise; its shape_class
  // is set all the same.
  bool store_view = false;
};

// Nodes in a topological order (every pred has a lower index).
struct Dag {
  std::vector<DagNode> nodes;
  // Adds the edge from -> to (once).
  void add_edge(int from, int to);
};

// Eq. 1 over the extents of the op's loops; an extent < 1 counts as 1.
double op_weight(const std::vector<int64_t>& loop_extents, double slope = 1.0, double bias = 1.0);

// Topological stage (Definition 2: longest path from a root, roots at 1) of
// every hyper node of the graph contracted by `cluster_of` (node -> cluster
// id in [0, clusters)); -1 entries for clusters with no node. Requires the
// contracted graph to be acyclic.
std::vector<int> topological_stages(const Dag& dag, const std::vector<int>& cluster_of, int clusters);

// Clusters adjacent to `cluster` in the contracted graph whose stage differs
// by exactly one (Definition 3), ascending.
std::vector<int> affix_set(const Dag& dag, const std::vector<int>& cluster_of, const std::vector<int>& stages,
                           int cluster);

// Whether `members` (any order) may still grow into a legal group: no opaque
// node; at most one anchor, or a depthwise Conv and a later pointwise one; no
// elementwise node before the first anchor (in DAG order); at most one
// output shape class (two with the DW/PW pair).
bool compatible(const Dag& dag, const std::vector<int>& members);

// Group (d), planner/fusion_store_views.h: `members` (ascending) are an
// anchor part (a lone anchor, or an (b) group), then store-view nodes, each
// the only reader of the node before (the first of the anchor part's
// sink), none escaping, then a tail of elementwise nodes of the last view's
// shape class, the first reading the last view and nothing else of the
// group, each other reading the tail — or no tail, when the last view is
// read by no node (a graph output only). kStoreView or kIllegal.
GroupKind classify_store_view(const Dag& dag, const std::vector<int>& members);

// Which legal group `members` (ascending, the last is the sink) is, if any.
// Every member but the sink has its output read only by members (and not
// escaping); intermediates have the sink's shape class (in a DW/PW group,
// the depthwise part has the depthwise Conv's); see GroupKind.
GroupKind classify(const Dag& dag, const std::vector<int>& members);

// Algorithm 1 CLUSTER under weight threshold `td`: the cluster id of every
// node (opaque nodes stay alone).
std::vector<int> cluster(const Dag& dag, double td);

// Cuts each cluster into legal groups (ascending members, two or more each),
// ordered by their first node.
std::vector<std::vector<int>> legalize(const Dag& dag, const std::vector<int>& cluster_of);

// Definition 1 on the partition given by `group_of` (node -> group id; a
// node of its own may have any unique id): true when the contracted graph
// has no cycle.
bool is_acyclic_partition(const Dag& dag, const std::vector<int>& group_of);

// Jain's fairness index of `weights` (1 = perfectly balanced; 0 for none).
double jain_index(const std::vector<double>& weights);

}  // namespace kiln::fusion
