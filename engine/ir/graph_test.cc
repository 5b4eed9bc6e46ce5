// Tests for the graph arena and the verifier.
#include "engine/ir/graph.h"

#include <gtest/gtest.h>

#include "engine/ir/verifier.h"

namespace kiln::ir {
namespace {

// x -> Relu -> y, with a constant added.
std::unique_ptr<Graph> small_graph() {
  auto g = std::make_unique<Graph>();
  ValueId x = g->add_input("x", DType::kFloat32, SymShape({Dim(1), Dim::symbol("n")}));
  ValueId c = g->add_constant("c", Tensor::from_vector<float>({1}, {2.0f}));
  ValueId s = g->add_value("s", DType::kFloat32, SymShape({Dim(1), Dim::symbol("n")}));
  ValueId y = g->add_value("y", DType::kFloat32, SymShape({Dim(1), Dim::symbol("n")}));
  g->add_node("Add", {x, c}, {s}, {}, "add0");
  g->add_node("Relu", {s}, {y}, {}, "relu0");
  g->add_output(y);
  return g;
}

TEST(GraphTest, BuildAndVerify) {
  auto g = small_graph();
  EXPECT_TRUE(verify_graph(*g).ok()) << verify_graph(*g).to_string();
  EXPECT_EQ(g->num_live_nodes(), 2u);
  EXPECT_EQ(g->value(g->find_value("y")).producer, 1);
  EXPECT_EQ(g->constants().size(), 1u);
}

TEST(GraphTest, VerifierRejectsUseBeforeDefinition) {
  auto g = small_graph();
  // Swap the two nodes: Relu now reads 's' before Add defines it.
  std::swap(g->main().nodes[0], g->main().nodes[1]);
  Status s = verify_graph(*g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("relu0"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("not defined before its use"), std::string::npos) << s.message();
}

TEST(GraphTest, VerifierRejectsDoubleDefinitionAndBadOutputs) {
  auto g = small_graph();
  ValueId s = g->find_value("s");
  g->add_node("Relu", {g->find_value("x")}, {s}, {}, "dup");
  EXPECT_FALSE(verify_graph(*g).ok());

  auto g2 = small_graph();
  ValueId ghost = g2->add_value("ghost", DType::kFloat32, SymShape());
  g2->add_output(ghost);
  Status st = verify_graph(*g2);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("ghost"), std::string::npos);
}

TEST(GraphTest, EraseKeepsIdsStable) {
  auto g = small_graph();
  g->erase_node(1);
  EXPECT_EQ(g->num_live_nodes(), 1u);
  EXPECT_TRUE(g->node(1).erased);
  // y is now undefined but still returned: the verifier must say so.
  EXPECT_FALSE(verify_graph(*g).ok());
}

TEST(GraphTest, SubgraphsSeeOuterValues) {
  Graph g;
  ValueId cond = g.add_input("cond", DType::kBool, SymShape(std::vector<Dim>{}));
  ValueId x = g.add_input("x", DType::kFloat32, SymShape({Dim(2)}));
  RegionId then_r = g.add_region(kMainRegion, "then");
  ValueId t = g.add_value("t", DType::kFloat32, SymShape({Dim(2)}), then_r);
  g.add_node("Relu", {x}, {t}, {}, "inner", then_r);
  g.add_output(t, then_r);
  RegionId else_r = g.add_region(kMainRegion, "else");
  g.add_output(x, else_r);
  ValueId y = g.add_value("y", DType::kFloat32, SymShape({Dim(2)}));
  g.add_node("If", {cond}, {y}, {{"then_branch", Attribute::of_graph(then_r)}, {"else_branch", Attribute::of_graph(else_r)}}, "if0");
  g.add_output(y);
  EXPECT_TRUE(verify_graph(g).ok()) << verify_graph(g).to_string();
  EXPECT_EQ(g.region(then_r).owner, 1);
  // A value of the then-branch is not visible in the else-branch.
  g.region(else_r).outputs[0] = t;
  EXPECT_FALSE(verify_graph(g).ok());
}

}  // namespace
}  // namespace kiln::ir
