// Tests of If, Loop and Constant (control_flow.cc) on hand-built graphs run
// by the reference executor: only the taken If branch runs, Loop carries
// values whose shape changes per iteration, stacks scan outputs, stops on
// the trip count or on the body's cond, and sub-graphs read outer values.
#include <gtest/gtest.h>

#include "engine/base/limits.h"
#include "engine/base/scoped_env.h"
#include "engine/ir/graph.h"
#include "engine/ops/op_registry.h"
#include "engine/ops/op_test_util.h"
#include "engine/runtime/reference_executor.h"

namespace kiln::ops {
namespace {

using ir::Attribute;
using ir::Dim;
using ir::SymShape;
using testing::run_op;

Tensor i64v(std::vector<int64_t> v) { return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v); }
Tensor boolean(bool b) { return Tensor::from_vector<bool>({}, {b}); }

ir::ValueId value(ir::Graph& g, const std::string& name, ir::RegionId region = ir::kMainRegion) {
  return g.add_value(name, DType::kUndefined, SymShape(), region);
}

// ------------------------------------------------------------------------ If

// x: f32[3]. then: Identity(x). else: Reshape(x, [7]), which fails on [3].
struct IfGraph {
  ir::Graph g;
  IfGraph() {
    const ir::ValueId cond = g.add_input("cond", DType::kBool, SymShape(std::vector<Dim>{}));
    const ir::ValueId x = g.add_input("x", DType::kFloat32, SymShape({3}));
    const ir::RegionId then_r = g.add_region(ir::kMainRegion, "then");
    const ir::RegionId else_r = g.add_region(ir::kMainRegion, "else");
    const ir::ValueId t = value(g, "t", then_r);
    g.add_node("Identity", {x}, {t}, {}, "then_identity", then_r);  // reads the outer x by id
    g.add_output(t, then_r);
    const ir::ValueId shape = g.add_constant("seven", i64v({7}), else_r);
    const ir::ValueId e = value(g, "e", else_r);
    g.add_node("Reshape", {x, shape}, {e}, {}, "else_reshape", else_r);
    g.add_output(e, else_r);
    const ir::ValueId y = value(g, "y");
    g.add_node("If", {cond}, {y},
               {{"then_branch", Attribute::of_graph(then_r)}, {"else_branch", Attribute::of_graph(else_r)}}, "the_if");
    g.add_output(y);
  }
};

TEST(If, RunsOnlyTheTakenBranch) {
  IfGraph ig;
  runtime::ReferenceExecutor exec(ig.g);
  Tensor x = Tensor::from_vector<float>({3}, {1, 2, 3});
  auto r = exec.run({boolean(true), x});
  ASSERT_TRUE(r.ok()) << r.status().to_string();  // the failing else branch never ran
  EXPECT_EQ((*r)[0].to_f32_vector(), (std::vector<float>{1, 2, 3}));
  r = exec.run({boolean(false), x});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("else_reshape"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("the_if"), std::string::npos) << r.status().message();
}

TEST(If, BranchesWithDifferentShapesAndBadArity) {
  ir::Graph g;
  const ir::ValueId cond = g.add_input("cond", DType::kBool, SymShape(std::vector<Dim>{}));
  const ir::RegionId then_r = g.add_region(ir::kMainRegion, "then");
  const ir::RegionId else_r = g.add_region(ir::kMainRegion, "else");
  const ir::ValueId t = value(g, "t", then_r);
  g.add_node("Constant", {}, {t}, {{"value_ints", Attribute::of_ints({1, 2, 3})}}, "c_then", then_r);
  g.add_output(t, then_r);
  const ir::ValueId e = value(g, "e", else_r);
  g.add_node("Constant", {}, {e}, {{"value_float", Attribute::of_float(0.5f)}}, "c_else", else_r);
  g.add_output(e, else_r);
  const ir::ValueId y = value(g, "y");
  g.add_node("If", {cond}, {y},
             {{"then_branch", Attribute::of_graph(then_r)}, {"else_branch", Attribute::of_graph(else_r)}}, "if");
  g.add_output(y);
  runtime::ReferenceExecutor exec(g);
  auto r = exec.run({boolean(true)});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].to_i64_vector(), (std::vector<int64_t>{1, 2, 3}));
  r = exec.run({boolean(false)});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].dtype(), DType::kFloat32);
  EXPECT_EQ((*r)[0].shape(), Shape{});
  // A branch that yields the wrong number of outputs.
  g.add_output(t, then_r);
  r = exec.run({boolean(true)});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("then_branch produced 2 outputs"), std::string::npos) << r.status().message();
}

TEST(If, MissingBranchOrBadCond) {
  auto r = run_op("If", {boolean(true)});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("then_branch"), std::string::npos);
  IfGraph ig;
  runtime::ReferenceExecutor exec(ig.g);
  // cond declared bool scalar; feeding an f32 fails at the input check.
  EXPECT_FALSE(exec.run({Tensor::scalar_f32(1.0f), Tensor::from_vector<float>({3}, {1, 2, 3})}).ok());
}

// ---------------------------------------------------------------------- Loop

// Body (iter, cond_in, acc) -> (cond_out, acc ++ [iter], scan = [iter] ++ outer).
// `acc` grows by one element per iteration; `outer` is read from the main
// region by id. cond_out is looked up in `stop_table` at `iter`.
struct LoopGraph {
  ir::Graph g;
  LoopGraph(bool with_m, bool with_cond, std::vector<bool> stop_table) {
    const ir::ValueId m = with_m ? g.add_input("M", DType::kInt64, SymShape(std::vector<Dim>{})) : ir::kNoValue;
    const ir::ValueId cond = with_cond ? g.add_input("cond", DType::kBool, SymShape(std::vector<Dim>{})) : ir::kNoValue;
    const ir::ValueId init = g.add_input("init", DType::kInt64, SymShape({Dim::symbol("n")}));
    const ir::ValueId outer = g.add_constant("outer", i64v({100}));
    const ir::RegionId body = g.add_region(ir::kMainRegion, "body");
    const ir::ValueId iter = g.add_input("iter", DType::kInt64, SymShape(std::vector<Dim>{}), body);
    const ir::ValueId cond_in = g.add_input("cond_in", DType::kBool, SymShape(std::vector<Dim>{}), body);
    const ir::ValueId acc = g.add_input("acc", DType::kInt64, SymShape({Dim()}), body);
    std::vector<bool> table = stop_table;
    const ir::ValueId table_v =
        g.add_constant("table", Tensor::from_vector<bool>({static_cast<int64_t>(table.size())}, table), body);
    const ir::ValueId cond_out = value(g, "cond_out", body);
    g.add_node("Gather", {table_v, iter}, {cond_out}, {}, "lookup", body);
    const ir::ValueId axes = g.add_constant("axes", i64v({0}), body);
    const ir::ValueId iter1 = value(g, "iter1", body);
    g.add_node("Unsqueeze", {iter, axes}, {iter1}, {}, "unsq", body);
    const ir::ValueId acc_next = value(g, "acc_next", body);
    g.add_node("Concat", {acc, iter1}, {acc_next}, {{"axis", Attribute::of_int(0)}}, "grow", body);
    const ir::ValueId scan = value(g, "scan", body);
    g.add_node("Concat", {iter1, outer}, {scan}, {{"axis", Attribute::of_int(0)}}, "scan_cat", body);
    const ir::ValueId pass = value(g, "pass", body);
    g.add_node("Identity", {cond_in}, {pass}, {}, "unused_cond_in", body);
    g.add_output(cond_out, body);
    g.add_output(acc_next, body);
    g.add_output(scan, body);
    const ir::ValueId final_acc = value(g, "final_acc");
    const ir::ValueId scans = value(g, "scans");
    g.add_node("Loop", {m, cond, init}, {final_acc, scans}, {{"body", Attribute::of_graph(body)}}, "loop");
    g.add_output(final_acc);
    g.add_output(scans);
  }
};

TEST(Loop, TripCountCarriedGrowthAndScanOutputs) {
  LoopGraph lg(true, true, {true, true, true, true, true, true});
  runtime::ReferenceExecutor exec(lg.g);
  auto r = exec.run({Tensor::scalar_i64(3), boolean(true), i64v({7})});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].to_i64_vector(), (std::vector<int64_t>{7, 0, 1, 2}));
  EXPECT_EQ((*r)[1].shape(), (Shape{3, 2}));
  EXPECT_EQ((*r)[1].to_i64_vector(), (std::vector<int64_t>{0, 100, 1, 100, 2, 100}));
}

TEST(Loop, StopsOnBodyCondAndOnInitialCond) {
  // No trip count: runs until the body's cond_out is false (after iteration 2).
  LoopGraph lg(false, true, {true, true, false, true});
  runtime::ReferenceExecutor exec(lg.g);
  auto r = exec.run({boolean(true), i64v({})});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].to_i64_vector(), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ((*r)[1].shape(), (Shape{3, 2}));
  // cond false from the start: zero iterations; carried values pass through.
  r = exec.run({boolean(false), i64v({5, 6})});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].to_i64_vector(), (std::vector<int64_t>{5, 6}));
  EXPECT_EQ((*r)[1].numel(), 0);
  // A trip count with no cond input.
  LoopGraph lm(true, false, {true, true, true});
  runtime::ReferenceExecutor exec_m(lm.g);
  r = exec_m.run({Tensor::scalar_i64(2), i64v({9})});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].to_i64_vector(), (std::vector<int64_t>{9, 0, 1}));
}

TEST(Loop, BodyErrorsNameTheIteration) {
  // The stop table has 2 entries; iteration 2 indexes past it.
  LoopGraph lg(true, false, {true, true});
  runtime::ReferenceExecutor exec(lg.g);
  auto r = exec.run({Tensor::scalar_i64(5), i64v({})});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("iteration 2"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("index 2 is out of range"), std::string::npos) << r.status().message();
}

TEST(Loop, RunawayLoopStopsAtTheIterationLimit) {
  // No trip count and a body condition that stays true: without a limit the
  // run would never end. Under KILN_MAX_LOOP_ITERATIONS=8 it fails naming
  // the node and the limit; a loop that ends within the limit still runs.
  kiln::testing::ScopedEnv limit(std::string(kMaxLoopIterationsEnv), "8");
  LoopGraph forever(false, true, std::vector<bool>(64, true));
  runtime::ReferenceExecutor exec(forever.g);
  auto r = exec.run({boolean(true), i64v({})});
  ASSERT_FALSE(r.ok());
  const std::string& m = r.status().message();
  EXPECT_NE(m.find("node 'loop' (Loop): did not end within 8 iterations"), std::string::npos) << m;
  EXPECT_NE(m.find("KILN_MAX_LOOP_ITERATIONS"), std::string::npos) << m;
  LoopGraph counted(true, false, std::vector<bool>(64, true));
  runtime::ReferenceExecutor exec_m(counted.g);
  ASSERT_FALSE(exec_m.run({Tensor::scalar_i64(9), i64v({})}).ok());
  auto eight = exec_m.run({Tensor::scalar_i64(8), i64v({})});
  ASSERT_TRUE(eight.ok()) << eight.status().to_string();
  EXPECT_EQ((*eight)[0].numel(), 8);
}

TEST(Loop, InferenceKeepsCarriedDtypes) {
  ir::Node node;
  node.op = "Loop";
  node.name = "l";
  node.attrs["body"] = Attribute::of_graph(1);
  node.inputs = {0, 0, 0};
  node.outputs = {0, 0};
  ValueInfo m, c, v;
  m.dtype = DType::kInt64;
  m.shape = SymShape(std::vector<Dim>{});
  c.dtype = DType::kBool;
  c.shape = SymShape(std::vector<Dim>{});
  v.dtype = DType::kFloat16;
  v.shape = SymShape({4});
  auto r = infer_node(*OpRegistry::builtin().find("", "Loop"), node, {m, c, v});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].dtype, DType::kFloat16);
  ValueInfo bad_m = m;
  bad_m.dtype = DType::kFloat32;
  r = infer_node(*OpRegistry::builtin().find("", "Loop"), node, {bad_m, c, v});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("M (input 0)"), std::string::npos);
  node.attrs.clear();
  EXPECT_FALSE(infer_node(*OpRegistry::builtin().find("", "Loop"), node, {m, c, v}).ok());
}

// ------------------------------------------------------------------ Constant

TEST(Constant, EveryValueAttribute) {
  Tensor t = Tensor::from_vector<int32_t>({2, 2}, {1, 2, 3, 4});
  auto r = run_op("Constant", {}, {{"value", Attribute::of_tensor(t)}});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].dtype(), DType::kInt32);
  EXPECT_EQ((*r)[0].to_i64_vector(), (std::vector<int64_t>{1, 2, 3, 4}));
  r = run_op("Constant", {}, {{"value_floats", Attribute::of_floats({1.5f, -2.0f})}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].to_f32_vector(), (std::vector<float>{1.5f, -2.0f}));
  r = run_op("Constant", {}, {{"value_int", Attribute::of_int(-7)}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].shape(), Shape{});
  EXPECT_EQ((*r)[0].get_i64(0), -7);
  r = run_op("Constant", {}, {{"value_ints", Attribute::of_ints({4, 5})}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].dtype(), DType::kInt64);
  r = run_op("Constant", {}, {{"value_float", Attribute::of_float(2.0f)}, {"value_int", Attribute::of_int(1)}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("both"), std::string::npos);
  r = run_op("Constant", {}, {});
  ASSERT_FALSE(r.ok());
  r = run_op("Constant", {}, {{"value_string", Attribute::of_string("hi")}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
}

TEST(Constant, SmallIntsAreDimsValues) {
  ir::Node node;
  node.op = "Constant";
  node.attrs["value_ints"] = Attribute::of_ints({2, -1});
  node.outputs = {0};
  auto r = infer_node(*OpRegistry::builtin().find("", "Constant"), node, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].shape.to_string(), "[2]");
  ASSERT_TRUE((*r)[0].dims_value.has_value());
  EXPECT_EQ(SymShape(*(*r)[0].dims_value).to_string(), "[2,-1]");
}

}  // namespace
}  // namespace kiln::ops
