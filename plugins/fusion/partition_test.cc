// The partitioning functions on hand-made DAGs: Eq. 1 weights, topological
// stages and affix sets (Definitions 2-3), CLUSTER's greedy merging under
// Td, legality by group shape (store views included), and the acyclicity
// check.
#include "plugins/fusion/partition.h"

#include <gtest/gtest.h>

#include <cmath>

namespace kiln::fusion {
namespace {

constexpr Role E = Role::kElementwise, A = Role::kAnchor, O = Role::kOpaque;

// Nodes with roles (shape class 0) and edges.
Dag make(const std::vector<Role>& roles, const std::vector<std::pair<int, int>>& edges) {
  Dag d;
  d.nodes.resize(roles.size());
  for (size_t i = 0; i < roles.size(); ++i) d.nodes[i].role = roles[i], d.nodes[i].shape_class = 0;
  for (auto [a, b] : edges) d.add_edge(a, b);
  for (auto& n : d.nodes)
    if (!n.preds.empty()) n.data_pred = n.preds.front();
  return d;
}

TEST(FusionWeights, EquationOne) {
  EXPECT_DOUBLE_EQ(op_weight({}), 2.0);                // c * 1 + b
  EXPECT_DOUBLE_EQ(op_weight({1, 1, 1}), 2.0);         // unit loops add nothing
  EXPECT_DOUBLE_EQ(op_weight({3, 7}, 2.0, 0.5), 2.0 * 2.0 * 3.0 + 0.5);
  // More loops and longer loops weigh more: a 7-loop Conv outweighs its
  // 4-loop output's elementwise op.
  EXPECT_GT(op_weight({1, 64, 56, 56, 64, 3, 3}), 20 * op_weight({1, 64, 56, 56}));
}

TEST(FusionStages, LongestPathAndAffixSet) {
  // 0 -> 1 -> 2 -> 3 and 0 -> 3: node 3 is at stage 4 (longest path), so
  // 0 and 3 are adjacent but not affix.
  Dag d = make({E, E, E, E}, {{0, 1}, {1, 2}, {2, 3}, {0, 3}});
  std::vector<int> id{0, 1, 2, 3};
  const std::vector<int> ts = topological_stages(d, id, 4);
  EXPECT_EQ(ts, (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(affix_set(d, id, ts, 0), (std::vector<int>{1}));
  EXPECT_EQ(affix_set(d, id, ts, 3), (std::vector<int>{2}));
  // Contracted: {1,2} is one hyper node at stage 2, node 3 at stage 3.
  std::vector<int> merged{0, 1, 1, 3};
  const std::vector<int> ts2 = topological_stages(d, merged, 4);
  EXPECT_EQ(ts2[1], 2);
  EXPECT_EQ(ts2[3], 3);
  EXPECT_EQ(affix_set(d, merged, ts2, 3), (std::vector<int>{1}));
}

TEST(FusionCluster, ChainUnderThreshold) {
  Dag d = make({A, E, E, E}, {{0, 1}, {1, 2}, {2, 3}});
  d.nodes[0].weight = 10;
  for (int i = 1; i < 4; ++i) d.nodes[static_cast<size_t>(i)].weight = 1;
  const auto all = cluster(d, 100);
  EXPECT_EQ(all, (std::vector<int>{0, 0, 0, 0}));
  EXPECT_EQ(legalize(d, all), (std::vector<std::vector<int>>{{0, 1, 2, 3}}));
  // Td = 12.5: the anchor takes two (10+1+1 < 12.5, a third would not be).
  const auto limited = cluster(d, 12.5);
  EXPECT_EQ(limited[1], limited[0]);
  EXPECT_EQ(limited[2], limited[0]);
  EXPECT_NE(limited[3], limited[0]);
}

TEST(FusionCluster, TwoAnchorsStayApart) {
  Dag d = make({A, E, A, E}, {{0, 1}, {1, 2}, {2, 3}});
  const auto groups = legalize(d, cluster(d, 1e9));
  EXPECT_EQ(groups, (std::vector<std::vector<int>>{{0, 1}, {2, 3}}));
}

TEST(FusionCluster, AffixSetPreventsTheCycle) {
  // 0 -> 1 -> 2, 0 -> 2 with 1 opaque (an outside node): 0 and 2 are
  // adjacent but grouping them would close 0 -> 1 -> 2 around the group.
  Dag d = make({E, O, E}, {{0, 1}, {1, 2}, {0, 2}});
  const auto c = cluster(d, 1e9);
  EXPECT_NE(c[0], c[2]);
  EXPECT_TRUE(legalize(d, c).empty());
  EXPECT_TRUE(is_acyclic_partition(d, c));
  EXPECT_FALSE(is_acyclic_partition(d, {0, 1, 0}));
}

TEST(FusionLegality, Shapes) {
  // (a) diamond of elementwise ops with one output.
  Dag diamond = make({E, E, E, E}, {{0, 1}, {0, 2}, {1, 3}, {2, 3}});
  EXPECT_EQ(classify(diamond, {0, 1, 2, 3}), GroupKind::kElementwise);
  // A member read outside: 1 -> 4.
  Dag leak = make({E, E, E, E, E}, {{0, 1}, {1, 2}, {1, 4}});
  EXPECT_EQ(classify(leak, {0, 1, 2}), GroupKind::kIllegal);
  EXPECT_EQ(classify(leak, {0, 1}), GroupKind::kElementwise);
  // (b) the anchor must come first.
  Dag anchored = make({E, A, E}, {{0, 1}, {1, 2}});
  EXPECT_EQ(classify(anchored, {0, 1, 2}), GroupKind::kIllegal);
  EXPECT_EQ(classify(anchored, {1, 2}), GroupKind::kAnchor);
  EXPECT_EQ(legalize(anchored, cluster(anchored, 1e9)), (std::vector<std::vector<int>>{{1, 2}}));
  // A different output shape.
  Dag shaped = make({A, E}, {{0, 1}});
  shaped.nodes[1].shape_class = 1;
  EXPECT_EQ(classify(shaped, {0, 1}), GroupKind::kIllegal);
  // An escaping intermediate (a graph output).
  Dag escaping = make({A, E}, {{0, 1}});
  escaping.nodes[0].escapes = true;
  EXPECT_EQ(classify(escaping, {0, 1}), GroupKind::kIllegal);
}

TEST(FusionLegality, DwPw) {
  // dw -> clip -> pw -> add; dw's part has another shape than pw's.
  Dag d = make({A, E, A, E}, {{0, 1}, {1, 2}, {2, 3}});
  d.nodes[0].depthwise = true;
  d.nodes[2].pointwise = true;
  d.nodes[2].shape_class = d.nodes[3].shape_class = 1;
  EXPECT_EQ(classify(d, {0, 1, 2, 3}), GroupKind::kDwPw);
  EXPECT_EQ(legalize(d, cluster(d, 1e9)), (std::vector<std::vector<int>>{{0, 1, 2, 3}}));
  // PW before DW (FCM's PWDW) is not a pair the planner fuses: a 1x1 Conv
  // -> Clip -> depthwise Conv never clusters; the depthwise Conv keeps its Clip.
  Dag pwdw = make({A, E, A, E}, {{0, 1}, {1, 2}, {2, 3}});
  pwdw.nodes[0].pointwise = true;
  pwdw.nodes[2].depthwise = true;
  EXPECT_FALSE(compatible(pwdw, {0, 1, 2}));
  EXPECT_EQ(legalize(pwdw, cluster(pwdw, 1e9)), (std::vector<std::vector<int>>{{0, 1}, {2, 3}}));
  // Not depthwise: two anchors are illegal.
  d.nodes[0].depthwise = false;
  EXPECT_EQ(classify(d, {0, 1, 2, 3}), GroupKind::kIllegal);
}

TEST(FusionBalance, Jain) {
  EXPECT_DOUBLE_EQ(jain_index({2, 2, 2}), 1.0);
  EXPECT_NEAR(jain_index({1, 0, 0, 0}), 0.25, 1e-12);
  EXPECT_EQ(jain_index({}), 0.0);
}


// Group (d): an anchor (part), a chain of store-view nodes, an elementwise
// tail of the last view's shape class.
Dag store_view_dag(const std::vector<Role>& roles, const std::vector<std::pair<int, int>>& edges,
                   const std::vector<int>& views, int view_shape = 1) {
  Dag d = make(roles, edges);
  for (int v : views) d.nodes[static_cast<size_t>(v)].store_view = true;
  // The last view and what follows it have the output's shape.
  for (size_t i = static_cast<size_t>(views.back()); i < d.nodes.size(); ++i) d.nodes[i].shape_class = view_shape;
  return d;
}

TEST(FusionLegality, StoreViews) {
  // Gemm -> Reshape -> Reshape -> Add (ViT).
  Dag vit = store_view_dag({A, O, O, E}, {{0, 1}, {1, 2}, {2, 3}}, {1, 2});
  EXPECT_EQ(classify(vit, {0, 1, 2, 3}), GroupKind::kStoreView);
  EXPECT_EQ(classify(vit, {1, 2, 3}), GroupKind::kIllegal);  // no anchor part
  EXPECT_EQ(classify(vit, {0, 1, 2}), GroupKind::kIllegal);  // no tail
  // MatMul -> Add -> Mul -> Transpose -> Add -> Relu (ConvNeXt): an anchor
  // group before the view.
  Dag convnext = store_view_dag({A, E, E, O, E, E}, {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}}, {3});
  EXPECT_EQ(classify(convnext, {0, 1, 2, 3, 4, 5}), GroupKind::kStoreView);
  EXPECT_EQ(group_kind_name(GroupKind::kStoreView), std::string("store-view"));
  // The anchor read besides the chain.
  Dag forked = store_view_dag({A, O, E, E}, {{0, 1}, {1, 2}, {0, 3}}, {1});
  EXPECT_EQ(classify(forked, {0, 1, 2}), GroupKind::kIllegal);
  // A view read outside (escaping), or by two nodes of which one is outside.
  Dag escapes = vit;
  escapes.nodes[1].escapes = true;
  EXPECT_EQ(classify(escapes, {0, 1, 2, 3}), GroupKind::kIllegal);
  // A tail node reading the anchor itself.
  Dag reads_anchor = store_view_dag({A, O, E}, {{0, 1}, {1, 2}, {0, 2}}, {1});
  EXPECT_EQ(classify(reads_anchor, {0, 1, 2}), GroupKind::kIllegal);
  // A tail of another shape than the last view's.
  Dag other_shape = vit;
  other_shape.nodes[3].shape_class = 2;
  EXPECT_EQ(classify(other_shape, {0, 1, 2, 3}), GroupKind::kIllegal);
  // Two anchors, or an anchor in the tail.
  Dag two = store_view_dag({A, O, A}, {{0, 1}, {1, 2}}, {1});
  EXPECT_EQ(classify(two, {0, 1, 2}), GroupKind::kIllegal);
  // A tail whose second node starts from outside (two sources).
  Dag two_sources = store_view_dag({A, O, E, E, E}, {{0, 1}, {1, 2}, {2, 4}, {3, 4}}, {1});
  EXPECT_EQ(classify(two_sources, {0, 1, 2, 4}), GroupKind::kStoreView);
  EXPECT_EQ(classify(two_sources, {0, 1, 2, 3, 4}), GroupKind::kIllegal);
}

}  // namespace
}  // namespace kiln::fusion
