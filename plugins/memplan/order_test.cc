// Execution order: the segment program finds orders of lower peak than the
// given one, never raises the peak, respects dependencies and barriers.
#include "plugins/memplan/order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace kiln::memplan {
namespace {

OrderGraph::Value value(int producer, std::vector<int> consumers, uint64_t bytes, bool live_out = false) {
  OrderGraph::Value v;
  v.producer = producer;
  v.consumers = std::move(consumers);
  v.bytes = bytes;
  v.live_out = live_out;
  return v;
}

bool respects_dependencies(const OrderGraph& g, const std::vector<int>& order) {
  std::vector<size_t> pos(g.node_count);
  for (size_t k = 0; k < order.size(); ++k) pos[static_cast<size_t>(order[k])] = k;
  for (const auto& v : g.values)
    for (int c : v.consumers)
      if (v.producer >= 0 && pos[static_cast<size_t>(v.producer)] > pos[static_cast<size_t>(c)]) return false;
  return true;
}

// Every order of the nodes that respects dependencies, by brute force.
uint64_t brute_force_peak(const OrderGraph& g) {
  std::vector<int> perm(g.node_count);
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int>(i);
  uint64_t best = UINT64_MAX;
  do {
    if (respects_dependencies(g, perm)) best = std::min(best, order_peak(g, perm));
  } while (std::next_permutation(perm.begin(), perm.end()));
  return best;
}

// Two branches from one input: branch A makes a huge temporary and a small
// result, branch B a small temporary and a large result. The given order
// (A's head, B's head, A's tail, B's tail, join) holds A's huge temporary
// while B's temporary is live; finishing A first is better.
//   0: a1 = f(x) [100]   1: b1 = f(x) [10]   2: a2 = g(a1) [1]
//   3: b2 = g(b1) [50]   4: y = join(a2, b2)
OrderGraph two_branches() {
  OrderGraph g;
  g.node_count = 5;
  g.values = {value(-1, {0, 1}, 4),       value(0, {2}, 100), value(1, {3}, 10),
              value(2, {4}, 1),           value(3, {4}, 50),  value(4, {}, 1, true)};
  return g;
}

TEST(Order, ExhaustiveBeatsTheGivenOrder) {
  const OrderGraph g = two_branches();
  const std::vector<int> given = {0, 1, 2, 3, 4};
  const std::vector<int> chosen = choose_order(g);
  EXPECT_TRUE(respects_dependencies(g, chosen));
  // Given: node 1 runs with x 4 + a1 100 + b1 10 live.
  EXPECT_EQ(order_peak(g, given), 114u);
  EXPECT_EQ(order_peak(g, chosen), brute_force_peak(g));
  EXPECT_LT(order_peak(g, chosen), order_peak(g, given));
  // 0, 2, 1, 3, 4: node 2 runs with x 4 + a1 100 + a2 1; a1 dies before b1 exists.
  EXPECT_EQ(order_peak(g, chosen), 105u);
}

TEST(Order, KeepsAnOptimalGivenOrder) {
  OrderGraph g;  // a chain: only one order
  g.node_count = 4;
  g.values = {value(-1, {0}, 8), value(0, {1}, 8), value(1, {2}, 8), value(2, {3}, 8), value(3, {}, 8, true)};
  EXPECT_EQ(choose_order(g), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(order_peak(g, {0, 1, 2, 3}), 16u);
}

TEST(Order, BarriersStayInPlace) {
  OrderGraph g = two_branches();
  g.barrier = {false, false, true, false, false};  // node 2 owns a sub-graph
  const std::vector<int> chosen = choose_order(g);
  EXPECT_EQ(chosen[2], 2);
  EXPECT_TRUE(respects_dependencies(g, chosen));
  // Nodes 0 and 1 stay before the barrier, 3 and 4 after it.
  EXPECT_TRUE((chosen[0] == 0 && chosen[1] == 1) || (chosen[0] == 1 && chosen[1] == 0));
}

// Random DAGs of up to 9 nodes: the program (one segment) is optimal; with
// short segments it is valid and never worse than the given order.
TEST(Order, RandomDagsOptimalInOneSegmentNeverWorseInMany) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    OrderGraph g;
    g.node_count = 3 + rng() % 7;
    g.values.push_back(value(-1, {}, 1 + rng() % 50));
    for (size_t n = 0; n < g.node_count; ++n) {
      // Each node reads one or two earlier values and makes one or two.
      const size_t reads = 1 + rng() % 2;
      for (size_t r = 0; r < reads; ++r) g.values[rng() % g.values.size()].consumers.push_back(static_cast<int>(n));
      const size_t makes = 1 + rng() % 2;
      for (size_t m = 0; m < makes; ++m) g.values.push_back(value(static_cast<int>(n), {}, 1 + rng() % 100));
    }
    g.values.back().live_out = true;
    std::vector<int> given(g.node_count);
    for (size_t i = 0; i < given.size(); ++i) given[i] = static_cast<int>(i);
    const std::vector<int> one = choose_order(g, 12);
    ASSERT_TRUE(respects_dependencies(g, one));
    EXPECT_EQ(order_peak(g, one), brute_force_peak(g)) << "trial " << trial;
    const std::vector<int> many = choose_order(g, 3);
    ASSERT_TRUE(respects_dependencies(g, many));
    EXPECT_LE(order_peak(g, many), order_peak(g, given)) << "trial " << trial;
  }
}

}  // namespace
}  // namespace kiln::memplan
