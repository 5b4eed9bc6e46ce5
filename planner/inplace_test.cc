// In-place reuse decisions (planner/inplace.h): an elementwise chain on
// buffers writes in place; a broadcast operand, a graph input, an input read
// later, image storage and steps or tensors of an If branch or a Loop body
// do not; a view is written over only when its source dies too; the option
// turns it off; codegen drops `restrict` only where memory is shared.
#include "planner/inplace.h"

#include <gtest/gtest.h>

#include "engine/ops/shape_inference.h"
#include "planner/execution_plan.h"
#include "planner/glsl_codegen.h"

namespace kiln::planner {
namespace {

ir::SymShape shape(Shape s) { return ir::SymShape::from_concrete(std::move(s)); }

ir::ValueId value(ir::Graph& g, const char* name, Shape s, ir::RegionId region = ir::kMainRegion) {
  return g.add_value(name, DType::kFloat32, shape(std::move(s)), region);
}

ExecutionPlan plan_of(ir::Graph& g, PlanOptions options = {}) {
  EXPECT_TRUE(ops::infer_graph_shapes(g).ok());
  auto plan = build_plan(g, TargetInfo{}, options);
  EXPECT_TRUE(plan.ok()) << plan.status().to_string();
  return plan.ok() ? std::move(plan).value() : ExecutionPlan{};
}

TensorId tensor(const ExecutionPlan& plan, ir::ValueId v) { return plan.value_tensor.at(v); }
TensorId inplace_of(const ExecutionPlan& plan, ir::ValueId v) {
  return plan.tensors[static_cast<size_t>(tensor(plan, v))].inplace_of;
}

size_t count_inplace(const ExecutionPlan& plan) {
  size_t n = 0;
  for (const PlanTensor& t : plan.tensors) n += t.inplace_of != kNoTensor;
  return n;
}

// The step whose kernel writes `v`'s tensor.
const PlanStep& writer(const ExecutionPlan& plan, ir::ValueId v) {
  for (const PlanStep& s : plan.steps)
    for (const KernelTensor& kt : s.kernel.tensors)
      if (kt.written && kt.tensor == tensor(plan, v)) return s;
  ADD_FAILURE() << "no step writes value " << v;
  return plan.steps.front();
}

// x -> Exp -> a -> Relu -> b -> Sigmoid -> c -> Neg -> y (output).
struct Chain {
  ir::Graph g;
  ir::ValueId x, a, b, c, y;
};
Chain chain() {
  Chain r;
  r.x = r.g.add_input("x", DType::kFloat32, shape({2, 3, 5}));
  r.a = value(r.g, "a", {2, 3, 5});
  r.b = value(r.g, "b", {2, 3, 5});
  r.c = value(r.g, "c", {2, 3, 5});
  r.y = value(r.g, "y", {2, 3, 5});
  r.g.add_node("Exp", {r.x}, {r.a});
  r.g.add_node("Relu", {r.a}, {r.b});
  r.g.add_node("Sigmoid", {r.b}, {r.c});
  r.g.add_node("Neg", {r.c}, {r.y});
  r.g.add_output(r.y);
  return r;
}

TEST(Inplace, ElementwiseChainWritesOverDyingInputs) {
  Chain r = chain();
  const ExecutionPlan plan = plan_of(r.g);
  // Exp reads the graph input (the host's memory); Neg writes the output.
  EXPECT_EQ(inplace_of(plan, r.a), kNoTensor);
  EXPECT_EQ(inplace_of(plan, r.b), tensor(plan, r.a));
  EXPECT_EQ(inplace_of(plan, r.c), tensor(plan, r.b));
  EXPECT_EQ(inplace_of(plan, r.y), kNoTensor);
  EXPECT_EQ(memory_root(plan, tensor(plan, r.c)), tensor(plan, r.a));
  EXPECT_EQ(data_root(plan, tensor(plan, r.c)), tensor(plan, r.c));
  EXPECT_NE(describe_plan(plan, r.g).find("inplace=%" + std::to_string(tensor(plan, r.a))), std::string::npos);

  // Relu's two bindings share memory and lose `restrict`; Neg's keep it.
  for (const KernelTensor& kt : writer(plan, r.b).kernel.tensors) EXPECT_TRUE(kt.shares_memory) << kt.name;
  auto relu = generate_glsl(writer(plan, r.b).kernel, TargetInfo{});
  ASSERT_TRUE(relu.ok()) << relu.status().to_string();
  EXPECT_EQ(relu->glsl.find("restrict"), std::string::npos) << relu->glsl;
  auto neg = generate_glsl(writer(plan, r.y).kernel, TargetInfo{});
  ASSERT_TRUE(neg.ok()) << neg.status().to_string();
  EXPECT_NE(neg->glsl.find("readonly restrict buffer"), std::string::npos) << neg->glsl;
}

TEST(Inplace, OptionOffKeepsEveryTensorInItsOwnMemory) {
  Chain r = chain();
  PlanOptions options;
  options.inplace = false;
  const ExecutionPlan plan = plan_of(r.g, options);
  EXPECT_EQ(count_inplace(plan), 0u);
  for (const PlanStep& s : plan.steps)
    for (const KernelTensor& kt : s.kernel.tensors) EXPECT_FALSE(kt.shares_memory);
}

TEST(Inplace, ImageStorageDoesNot) {
  Chain r = chain();
  PlanOptions options;
  options.storage = Storage::kImage;
  const ExecutionPlan plan = plan_of(r.g, options);
  ASSERT_EQ(plan.tensors[static_cast<size_t>(tensor(plan, r.b))].layout.storage, Storage::kImage);
  EXPECT_EQ(count_inplace(plan), 0u);
}

TEST(Inplace, NotOverGraphInputNorBroadcastOperandNorInputReadLater) {
  ir::Graph g;
  const ir::ValueId x = g.add_input("x", DType::kFloat32, shape({4, 6}));
  const ir::ValueId bx = g.add_input("bx", DType::kFloat32, shape({6}));
  const ir::ValueId r0 = value(g, "r0", {4, 6}), bias = value(g, "bias", {6}), a = value(g, "a", {4, 6});
  const ir::ValueId s = value(g, "s", {4, 6}), m = value(g, "m", {4, 6}), y = value(g, "y", {4, 6});
  g.add_node("Relu", {x}, {r0});              // over the graph input: no
  g.add_node("Exp", {bx}, {bias});            // bias dies at Add, broadcast there
  g.add_node("Exp", {r0}, {a});               // a is read by Add and Mul
  g.add_node("Add", {a, bias}, {s});          // neither a (read later) nor bias (broadcast)
  g.add_node("Mul", {s, a}, {m});             // s dies here (a too, but s is first)
  g.add_node("Tanh", {m}, {y});
  g.add_output(y);
  const ExecutionPlan plan = plan_of(g);
  EXPECT_EQ(inplace_of(plan, r0), kNoTensor);
  EXPECT_EQ(inplace_of(plan, a), tensor(plan, r0));
  EXPECT_EQ(inplace_of(plan, s), kNoTensor);
  EXPECT_EQ(inplace_of(plan, m), tensor(plan, s));
  EXPECT_EQ(inplace_of(plan, y), kNoTensor);  // an output
  // The broadcast operand is marked as such by the lowering.
  for (const KernelTensor& kt : writer(plan, s).kernel.tensors)
    if (kt.tensor == tensor(plan, bias)) {
      EXPECT_FALSE(kt.elementwise);
    }
}

// a = Exp(x) [2, 6]; v = Reshape(a) [3, 4] (a view); r = Relu(v) is written
// over v's memory, which is a's. With a read again after Relu, it is not.
TEST(Inplace, OverAViewOnlyWhenItsSourceDiesToo) {
  for (bool source_read_later : {false, true}) {
    SCOPED_TRACE(source_read_later ? "a read later" : "a dies at Relu");
    ir::Graph g;
    const ir::ValueId x = g.add_input("x", DType::kFloat32, shape({2, 6}));
    const ir::ValueId a = value(g, "a", {2, 6}), v = value(g, "v", {3, 4}), r = value(g, "r", {3, 4});
    const ir::ValueId y = value(g, "y", {3, 4});
    g.add_node("Exp", {x}, {a});
    g.add_node("Reshape", {a, g.add_constant("to", Tensor::from_vector<int64_t>({2}, {3, 4}))}, {v});
    g.add_node("Relu", {v}, {r});
    g.add_node("Neg", {r}, {y});
    g.add_output(y);
    if (source_read_later) {
      const ir::ValueId s = value(g, "s", {2, 6});
      g.add_node("Sigmoid", {a}, {s});
      g.add_output(s);
    }
    const ExecutionPlan plan = plan_of(g);
    ASSERT_EQ(plan.tensors[static_cast<size_t>(tensor(plan, v))].alias_of, tensor(plan, a));
    if (source_read_later) {
      EXPECT_EQ(inplace_of(plan, r), kNoTensor);
    } else {
      EXPECT_EQ(inplace_of(plan, r), tensor(plan, v));
      EXPECT_EQ(memory_root(plan, tensor(plan, r)), tensor(plan, a));
    }
  }
}

TEST(Inplace, NotInsideIfBranchesNorOverWhatTheyRead) {
  ir::Graph g;
  const ir::ValueId x = g.add_input("x", DType::kFloat32, shape({3, 4}));
  const ir::ValueId c = g.add_input("c", DType::kBool, shape({}));
  const ir::ValueId a = value(g, "a", {3, 4});
  g.add_node("Exp", {x}, {a});
  const ir::RegionId then_r = g.add_region(ir::kMainRegion, "then");
  const ir::ValueId t1 = value(g, "t1", {3, 4}, then_r), t2 = value(g, "t2", {3, 4}, then_r);
  const ir::ValueId t3 = value(g, "t3", {3, 4}, then_r);
  g.add_node("Relu", {a}, {t1}, {}, "t_relu", then_r);
  g.add_node("Sigmoid", {t1}, {t2}, {}, "t_sigmoid", then_r);  // would be in place outside a branch
  g.add_node("Neg", {t2}, {t3}, {}, "t_neg", then_r);
  g.add_output(t3, then_r);
  const ir::RegionId else_r = g.add_region(ir::kMainRegion, "else");
  const ir::ValueId e1 = value(g, "e1", {3, 4}, else_r);
  g.add_node("Neg", {a}, {e1}, {}, "e_neg", else_r);
  g.add_output(e1, else_r);
  const ir::ValueId out = value(g, "out", {3, 4}), y = value(g, "y", {3, 4});
  g.add_node("If", {c}, {out},
             {{"then_branch", ir::Attribute::of_graph(then_r)}, {"else_branch", ir::Attribute::of_graph(else_r)}},
             "if");
  g.add_node("Tanh", {out}, {y});
  g.add_output(y);
  const ExecutionPlan plan = plan_of(g);
  ASSERT_EQ(plan.fallback_count(), 0u) << plan.fallback_reasons[0];
  bool has_if = false;
  for (const PlanStep& s : plan.steps) has_if = has_if || s.kind == PlanStep::Kind::kIf;
  ASSERT_TRUE(has_if);
  EXPECT_EQ(count_inplace(plan), 0u) << describe_plan(plan, g);
}

TEST(Inplace, NotInsideLoopBodies) {
  ir::Graph g;
  const ir::SymShape xs = shape({2, 5});
  const ir::ValueId x = g.add_input("x", DType::kFloat32, xs);
  const ir::ValueId trip = g.add_input("m", DType::kInt64, shape({}));
  const ir::RegionId body = g.add_region(ir::kMainRegion, "body");
  g.add_input("iter", DType::kInt64, shape({}), body);
  const ir::ValueId cond_in = g.add_input("cond_in", DType::kBool, shape({}), body);
  const ir::ValueId v_in = g.add_input("v_in", DType::kFloat32, xs, body);
  const ir::ValueId v1 = value(g, "v1", {2, 5}, body), v2 = value(g, "v2", {2, 5}, body);
  const ir::ValueId v3 = value(g, "v3", {2, 5}, body);
  g.add_node("Exp", {v_in}, {v1}, {}, "b_exp", body);
  g.add_node("Sigmoid", {v1}, {v2}, {}, "b_sigmoid", body);  // would be in place outside a body
  g.add_node("Add", {v2, x}, {v3}, {}, "b_add", body);
  g.add_output(cond_in, body);
  g.add_output(v3, body);
  const ir::ValueId v = value(g, "v", {2, 5}), y = value(g, "y", {2, 5});
  g.add_node("Loop", {trip, ir::kNoValue, x}, {v}, {{"body", ir::Attribute::of_graph(body)}}, "loop");
  g.add_node("Neg", {v}, {y});
  g.add_output(y);
  const ExecutionPlan plan = plan_of(g);
  ASSERT_EQ(plan.fallback_count(), 0u) << plan.fallback_reasons[0];
  bool has_loop = false;
  for (const PlanStep& s : plan.steps) has_loop = has_loop || s.kind == PlanStep::Kind::kLoop;
  ASSERT_TRUE(has_loop);
  EXPECT_EQ(count_inplace(plan), 0u) << describe_plan(plan, g);
}

}  // namespace
}  // namespace kiln::planner
