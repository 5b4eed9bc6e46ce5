// If on the device (planner/control_flow.h, vulkan_model_control_flow.cc):
// a condition computed on the GPU from the input picks the branch; only the
// taken branch's kernels run (counted and profiled), results match the
// reference executor for inputs taking each branch, nested Ifs work, and
// an If whose branches disagree on a shape is sized from the taken branch;
// Loops run their body per iteration, read the iteration number from a
// device counter and write scan outputs row by row.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "engine/base/limits.h"
#include "engine/base/scoped_env.h"
#include "engine/ops/shape_inference.h"
#include "engine/runtime/reference_executor.h"
#include "engine/runtime/vulkan/vulkan_model.h"
#include "engine/runtime/vulkan/vulkan_model_test_fixture.h"
#include "planner/lowering.h"
#include "planner/plan_hints.h"

namespace kiln::runtime {
namespace {

using planner::PlanStep;

using testing::add_sum_is_positive;

// Profiled, so that the tests can see which branch's kernels ran.
class VulkanControlFlowTest : public testing::VulkanModelTest {
 protected:
  VulkanControlFlowTest() { options_.profile = true; }
};

Tensor filled(const Shape& shape, float offset) {
  Tensor t = Tensor::allocate(DType::kFloat32, shape).value();
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = offset + 0.25f * static_cast<float>(i % 5);
  return t;
}

ir::ValueId scalar(ir::Graph& g, const char* name, float v, ir::RegionId region = ir::kMainRegion) {
  return g.add_constant(name, Tensor::scalar_f32(v), region);
}

std::map<std::string, ir::Attribute> branches(ir::RegionId then_r, ir::RegionId else_r) {
  return {{"then_branch", ir::Attribute::of_graph(then_r)}, {"else_branch", ir::Attribute::of_graph(else_r)}};
}

// cond = ReduceSum(x) > 0 (on the device); w = x * x outside the If.
//   then: (x * 2) + w            (reads the outer-scope w)
//   else: |x - 3|, or with `nested`: If(ReduceMax(x) > -1.5) then x * 10 else w
// y = If + x; outputs y and the If's output.
ir::Graph if_graph(bool nested) {
  ir::Graph g;
  const ir::SymShape xs({ir::Dim(2), ir::Dim::symbol("n")});
  const ir::SymShape scalar_shape = ir::SymShape::from_concrete({});
  ir::ValueId x = g.add_input("x", DType::kFloat32, xs);
  ir::ValueId cond = add_sum_is_positive(g, x);
  ir::ValueId w = g.add_value("w", DType::kFloat32, xs);
  g.add_node("Mul", {x, x}, {w}, {}, "square");

  const ir::RegionId then_r = g.add_region(ir::kMainRegion, "then");
  ir::ValueId t1 = g.add_value("t1", DType::kFloat32, xs, then_r);
  ir::ValueId t2 = g.add_value("t2", DType::kFloat32, xs, then_r);
  g.add_node("Mul", {x, scalar(g, "two", 2.0f, then_r)}, {t1}, {}, "then_mul", then_r);
  g.add_node("Add", {t1, w}, {t2}, {}, "then_add", then_r);
  g.add_output(t2, then_r);

  const ir::RegionId else_r = g.add_region(ir::kMainRegion, "else");
  ir::ValueId e2 = g.add_value("e2", DType::kFloat32, xs, else_r);
  if (!nested) {
    ir::ValueId e1 = g.add_value("e1", DType::kFloat32, xs, else_r);
    g.add_node("Sub", {x, scalar(g, "three", 3.0f, else_r)}, {e1}, {}, "else_sub", else_r);
    g.add_node("Abs", {e1}, {e2}, {}, "else_abs", else_r);
  } else {
    ir::ValueId mx = g.add_value("mx", DType::kFloat32, scalar_shape, else_r);
    ir::ValueId c2 = g.add_value("c2", DType::kBool, scalar_shape, else_r);
    g.add_node("ReduceMax", {x}, {mx}, {{"keepdims", ir::Attribute::of_int(0)}}, "else_max", else_r);
    g.add_node("Greater", {mx, scalar(g, "limit", -1.5f, else_r)}, {c2}, {}, "else_cond", else_r);
    const ir::RegionId inner_then = g.add_region(else_r, "inner_then");
    ir::ValueId i1 = g.add_value("i1", DType::kFloat32, xs, inner_then);
    g.add_node("Mul", {x, scalar(g, "ten", 10.0f, inner_then)}, {i1}, {}, "inner_then_mul", inner_then);
    g.add_output(i1, inner_then);
    // The inner else branch computes nothing: it passes the outer w on
    // (the If then copies it into its output).
    const ir::RegionId inner_else = g.add_region(else_r, "inner_else");
    g.add_output(w, inner_else);
    g.add_node("If", {c2}, {e2},
               branches(inner_then, inner_else), "inner_if", else_r);
  }
  g.add_output(e2, else_r);

  ir::ValueId out = g.add_value("out", DType::kUndefined, ir::SymShape::unranked());
  ir::ValueId y = g.add_value("y", DType::kFloat32, xs);
  g.add_node("If", {cond}, {out},
             branches(then_r, else_r), "if");
  g.add_node("Add", {out, x}, {y}, {}, "after");
  g.add_output(y);
  g.add_output(out);
  return g;
}

void expect_near(const std::vector<Tensor>& want, const std::vector<Tensor>& got) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t j = 0; j < want.size(); ++j) {
    ASSERT_EQ(want[j].shape(), got[j].shape()) << "output " << j;
    for (int64_t i = 0; i < want[j].numel(); ++i)
      ASSERT_NEAR(want[j].get_f64(i), got[j].get_f64(i), 1e-4) << "output " << j << " element " << i;
  }
}

// Runs `model` on `in` and expects the reference's outputs; the run's
// statistics go to `stats` and its outputs, if asked for, to `out`. Call
// it through ASSERT_NO_FATAL_FAILURE: a failed run ends the test.
void run_matching_reference(VulkanModel& model, const ReferenceExecutor& reference, const std::vector<Tensor>& in,
                            VulkanRunStats& stats, std::vector<Tensor>* out = nullptr) {
  auto want = reference.run(in);
  ASSERT_TRUE(want.ok()) << want.status().to_string();
  auto got = model.run(in, &stats);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  expect_near(*want, *got);
  if (out) *out = std::move(*got);
}

// Dispatch steps of the plan outside the given step ranges (the untaken
// branches), i.e. what a run taking the other branches submits.
uint32_t dispatches_outside(const planner::ExecutionPlan& plan, const std::vector<std::pair<size_t, size_t>>& skip) {
  uint32_t n = 0;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    bool skipped = false;
    for (const auto& [b, e] : skip) skipped = skipped || (s >= b && s < e);
    if (!skipped && plan.steps[s].kind == PlanStep::Kind::kDispatch) ++n;
  }
  return n;
}

std::vector<size_t> if_steps(const planner::ExecutionPlan& plan) {
  std::vector<size_t> out;
  for (size_t s = 0; s < plan.steps.size(); ++s)
    if (plan.steps[s].kind == PlanStep::Kind::kIf) out.push_back(s);
  return out;
}

size_t kernels_named(const planner::ExecutionPlan& plan, const std::string& name) {
  size_t n = 0;
  for (const PlanStep& s : plan.steps) n += s.kind == PlanStep::Kind::kDispatch && s.kernel.name == name;
  return n;
}

// Whether the profile shows a kernel of a node whose name starts with `prefix`.
bool ran(const VulkanRunStats& stats, const std::string& prefix) {
  for (const KernelTiming& k : stats.kernels)
    if (k.node.rfind(prefix, 0) == 0) return true;
  return false;
}

TEST_F(VulkanControlFlowTest, OnlyTheTakenBranchRuns) {
  ir::Graph g = if_graph(/*nested=*/false);
  ASSERT_TRUE(ops::infer_graph_shapes(g).ok());
  ReferenceExecutor reference(g);
  for_each_storage(g, [&](VulkanModel& model) {
    const planner::ExecutionPlan& plan = model.plan();
    EXPECT_EQ(plan.fallback_count(), 0u);
    // Both branches compute their result straight into the If's output.
    EXPECT_EQ(kernels_named(plan, "if_output"), 0u);
    const std::vector<size_t> ifs = if_steps(plan);
    ASSERT_EQ(ifs.size(), 1u);
    const PlanStep& step = plan.steps[ifs[0]];
    const uint32_t then_dispatches = dispatches_outside(plan, {{step.then_end, step.else_end}});
    const uint32_t else_dispatches = dispatches_outside(plan, {{ifs[0] + 1, step.then_end}});
    // Positive sum, negative sum, positive again (the same signature: no re-recording).
    const float offsets[] = {1.0f, -4.0f, 0.5f};
    for (size_t r = 0; r < 3; ++r) {
      const bool then_taken = offsets[r] > 0;
      VulkanRunStats stats;
      ASSERT_NO_FATAL_FAILURE(run_matching_reference(model, reference, {filled({2, 7}, offsets[r])}, stats));
      EXPECT_EQ(stats.fallbacks, 0u);
      EXPECT_EQ(stats.recorded, r == 0);
      ASSERT_EQ(stats.branches.size(), 1u);
      EXPECT_EQ(stats.branches[0].node, "if");
      EXPECT_EQ(stats.branches[0].then_branch, then_taken) << "run " << r;
      EXPECT_EQ(stats.dispatches, then_taken ? then_dispatches : else_dispatches) << "run " << r;
      if (stats.gpu_ms >= 0) {
        EXPECT_EQ(ran(stats, "then_"), then_taken) << "run " << r;
        EXPECT_EQ(ran(stats, "else_"), !then_taken) << "run " << r;
        EXPECT_TRUE(ran(stats, "after"));
      }
    }
    // Another n: a new signature, recorded, nothing compiled.
    VulkanRunStats stats;
    ASSERT_NO_FATAL_FAILURE(run_matching_reference(model, reference, {filled({2, 3}, -1.0f)}, stats));
    EXPECT_TRUE(stats.recorded);
    EXPECT_EQ(stats.shader_compiles, 0u);
    ASSERT_EQ(stats.branches.size(), 1u);
    EXPECT_FALSE(stats.branches[0].then_branch);
  });
}

TEST_F(VulkanControlFlowTest, NestedIfRunsOnTheDevice) {
  ir::Graph g = if_graph(/*nested=*/true);
  ASSERT_TRUE(ops::infer_graph_shapes(g).ok());
  ReferenceExecutor reference(g);
  for_each_storage(g, [&](VulkanModel& model) {
    EXPECT_EQ(model.plan().fallback_count(), 0u);
    EXPECT_EQ(if_steps(model.plan()).size(), 2u);
    // The outer value w passed on by the inner else branch is copied.
    EXPECT_EQ(kernels_named(model.plan(), "if_output"), 1u);
    // then; else -> inner then (max > -1.5); else -> inner else.
    struct Case {
      float offset;
      std::vector<bool> taken;
    };
    const Case cases[] = {{1.0f, {true}}, {-1.2f, {false, true}}, {-4.0f, {false, false}}};
    for (const Case& c : cases) {
      VulkanRunStats stats;
      ASSERT_NO_FATAL_FAILURE(run_matching_reference(model, reference, {filled({2, 5}, c.offset)}, stats));
      ASSERT_EQ(stats.branches.size(), c.taken.size()) << "offset " << c.offset;
      for (size_t i = 0; i < c.taken.size(); ++i) EXPECT_EQ(stats.branches[i].then_branch, c.taken[i]);
      if (stats.gpu_ms >= 0) {
        EXPECT_EQ(ran(stats, "inner_then"), c.taken.size() == 2 && c.taken[1]);
        EXPECT_EQ(ran(stats, "then_"), c.taken[0]);
      }
    }
  });
}

// A condition that is a host value (a small bool input, part of the shape
// signature) is decided when the signature is recorded: only the taken
// branch is recorded, in line with the rest.
TEST_F(VulkanControlFlowTest, HostConditionIsDecidedWhenRecording) {
  ir::Graph g;
  const ir::SymShape xs = ir::SymShape::from_concrete({3, 4});
  ir::ValueId c = g.add_input("c", DType::kBool, ir::SymShape::from_concrete({}));
  ir::ValueId x = g.add_input("x", DType::kFloat32, xs);
  const ir::RegionId then_r = g.add_region(ir::kMainRegion, "then");
  ir::ValueId a = g.add_value("a", DType::kFloat32, xs, then_r);
  g.add_node("Neg", {x}, {a}, {}, "then_neg", then_r);
  g.add_output(a, then_r);
  const ir::RegionId else_r = g.add_region(ir::kMainRegion, "else");
  ir::ValueId b = g.add_value("b", DType::kFloat32, xs, else_r);
  g.add_node("Mul", {x, x}, {b}, {}, "else_square", else_r);
  g.add_output(b, else_r);
  ir::ValueId out = g.add_value("out", DType::kUndefined, ir::SymShape::unranked());
  ir::ValueId y = g.add_value("y", DType::kFloat32, xs);
  g.add_node("If", {c}, {out},
             branches(then_r, else_r), "if");
  g.add_node("Relu", {out}, {y}, {}, "after");
  g.add_output(y);
  ASSERT_TRUE(ops::infer_graph_shapes(g).ok());
  ReferenceExecutor reference(g);
  for_each_storage(g, [&](VulkanModel& model) {
    EXPECT_EQ(model.plan().fallback_count(), 0u);
    ASSERT_EQ(if_steps(model.plan()).size(), 1u);
    for (bool cv : {true, false, true}) {
      const std::vector<Tensor> in = {Tensor::from_vector<bool>({}, {cv}), filled({3, 4}, -1.0f)};
      VulkanRunStats stats;
      ASSERT_NO_FATAL_FAILURE(run_matching_reference(model, reference, in, stats));
      ASSERT_EQ(stats.branches.size(), 1u);
      EXPECT_EQ(stats.branches[0].then_branch, cv);
      EXPECT_EQ(stats.dispatches, 2u);  // the taken branch's kernel and Relu
      if (stats.gpu_ms >= 0) {
        EXPECT_EQ(ran(stats, "then_"), cv);
        EXPECT_EQ(ran(stats, "else_"), !cv);
      }
    }
  });
}

// Host fallbacks around and inside an If: lowerings for elementwise ops and
// reductions only, so Identity runs on the host. The condition then comes
// from a fallback (read back by a download, no segment computes it), and a
// fallback inside the then branch splits that branch into two segments,
// both skipped when the else branch is taken.
TEST_F(VulkanControlFlowTest, FallbacksAroundAndInsideTheBranches) {
  static const planner::LoweringRegistry* lowerings = [] {
    auto* r = new planner::LoweringRegistry();
    planner::register_elementwise_lowerings(*r);
    planner::register_reduction_lowerings(*r);
    return r;
  }();
  ir::Graph g;
  const ir::SymShape xs = ir::SymShape::from_concrete({2, 6});
  ir::ValueId x = g.add_input("x", DType::kFloat32, xs);
  ir::ValueId gt = add_sum_is_positive(g, x, "gt");
  ir::ValueId cond = g.add_value("cond", DType::kBool, ir::SymShape::from_concrete({}));
  g.add_node("Identity", {gt}, {cond}, {}, "cond");
  const ir::RegionId then_r = g.add_region(ir::kMainRegion, "then");
  ir::ValueId t1 = g.add_value("t1", DType::kFloat32, xs, then_r);
  ir::ValueId t2 = g.add_value("t2", DType::kFloat32, xs, then_r);
  ir::ValueId t3 = g.add_value("t3", DType::kFloat32, xs, then_r);
  g.add_node("Mul", {x, scalar(g, "two", 2.0f, then_r)}, {t1}, {}, "then_mul", then_r);
  g.add_node("Identity", {t1}, {t2}, {}, "then_identity", then_r);
  g.add_node("Add", {t2, x}, {t3}, {}, "then_add", then_r);
  g.add_output(t3, then_r);
  const ir::RegionId else_r = g.add_region(ir::kMainRegion, "else");
  ir::ValueId e1 = g.add_value("e1", DType::kFloat32, xs, else_r);
  g.add_node("Abs", {x}, {e1}, {}, "else_abs", else_r);
  g.add_output(e1, else_r);
  ir::ValueId out = g.add_value("out", DType::kUndefined, ir::SymShape::unranked());
  ir::ValueId y = g.add_value("y", DType::kFloat32, xs);
  g.add_node("If", {cond}, {out}, branches(then_r, else_r), "if");
  g.add_node("Add", {out, x}, {y}, {}, "after");
  g.add_output(y);
  ASSERT_TRUE(ops::infer_graph_shapes(g).ok());
  ReferenceExecutor reference(g);
  options_.lowerings = lowerings;
  for_each_storage(g, [&](VulkanModel& model) {
    EXPECT_EQ(model.plan().fallback_count(), 2u);
    for (float offset : {1.0f, -3.0f, 2.0f, -1.0f}) {
      const bool then_taken = offset > 0;
      VulkanRunStats stats;
      ASSERT_NO_FATAL_FAILURE(run_matching_reference(model, reference, {filled({2, 6}, offset)}, stats));
      ASSERT_EQ(stats.branches.size(), 1u);
      EXPECT_EQ(stats.branches[0].then_branch, then_taken);
      EXPECT_EQ(stats.fallbacks, then_taken ? 2u : 1u);
      if (stats.gpu_ms >= 0) {
        EXPECT_EQ(ran(stats, "then_"), then_taken);
        EXPECT_EQ(ran(stats, "else_"), !then_taken);
      }
    }
  });
}

// Dispatch steps before a Loop, in its body, and after it.
struct LoopCounts {
  uint32_t before = 0, body = 0, after = 0;
};
LoopCounts loop_counts(const planner::ExecutionPlan& plan) {
  LoopCounts c;
  size_t loop = SIZE_MAX, end = 0;
  for (size_t s = 0; s < plan.steps.size(); ++s)
    if (plan.steps[s].kind == PlanStep::Kind::kLoop) {
      loop = s;
      end = plan.steps[s].body_end;
    }
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    if (plan.steps[s].kind != PlanStep::Kind::kDispatch) continue;
    (s < loop ? c.before : s < end ? c.body : c.after)++;
  }
  return c;
}

// for i < M: (y, a) = (0.5 * y + x, y)   (x from the outer scope; the body
// passes its parameter y on as the next a: a swap through a temporary)
// z = y + a; outputs z and y.
TEST_F(VulkanControlFlowTest, LoopWithTripCountRunsItsBodyMTimes) {
  ir::Graph g;
  const ir::SymShape xs({ir::Dim(2), ir::Dim::symbol("n")});
  const ir::SymShape scalar_shape = ir::SymShape::from_concrete({});
  ir::ValueId x = g.add_input("x", DType::kFloat32, xs);
  ir::ValueId m = g.add_input("m", DType::kInt64, scalar_shape);
  const ir::RegionId body = g.add_region(ir::kMainRegion, "body");
  ir::ValueId iter = g.add_input("iter", DType::kInt64, scalar_shape, body);
  ir::ValueId cond_in = g.add_input("cond_in", DType::kBool, scalar_shape, body);
  ir::ValueId y_in = g.add_input("y_in", DType::kFloat32, xs, body);
  ir::ValueId a_in = g.add_input("a_in", DType::kFloat32, xs, body);
  (void)iter;
  (void)a_in;
  ir::ValueId half = g.add_value("half", DType::kFloat32, xs, body);
  ir::ValueId y_out = g.add_value("y_out", DType::kFloat32, xs, body);
  g.add_node("Mul", {y_in, scalar(g, "k", 0.5f, body)}, {half}, {}, "body_mul", body);
  g.add_node("Add", {half, x}, {y_out}, {}, "body_add", body);
  g.add_output(cond_in, body);
  g.add_output(y_out, body);
  g.add_output(y_in, body);
  ir::ValueId y = g.add_value("y", DType::kFloat32, xs);
  ir::ValueId a = g.add_value("a", DType::kFloat32, xs);
  ir::ValueId z = g.add_value("z", DType::kFloat32, xs);
  g.add_node("Loop", {m, ir::kNoValue, x, x}, {y, a}, {{"body", ir::Attribute::of_graph(body)}}, "loop");
  g.add_node("Add", {y, a}, {z}, {}, "after");
  g.add_output(z);
  g.add_output(y);
  ASSERT_TRUE(ops::infer_graph_shapes(g).ok());
  ReferenceExecutor reference(g);
  for_each_storage(g, [&](VulkanModel& model) {
    const planner::ExecutionPlan& plan = model.plan();
    ASSERT_EQ(plan.fallback_count(), 0u) << plan.fallback_reasons[0];
    // The body passes y_in on as the next a while y_out becomes the next y:
    // both go through temporaries (2 copies each).
    EXPECT_EQ(kernels_named(plan, "loop_carry"), 4u);
    const LoopCounts c = loop_counts(plan);
    for (int64_t iterations : {3, 0, 1, 5, 3}) {
      const std::vector<Tensor> in = {filled({2, 5}, -1.0f), Tensor::scalar_i64(iterations)};
      VulkanRunStats stats;
      ASSERT_NO_FATAL_FAILURE(run_matching_reference(model, reference, in, stats));
      EXPECT_EQ(stats.fallbacks, 0u);
      EXPECT_EQ(stats.dispatches, c.before + static_cast<uint32_t>(iterations) * c.body + c.after)
          << iterations << " iterations";
      ASSERT_EQ(stats.loops.size(), 1u);
      EXPECT_EQ(stats.loops[0].node, "loop");
      EXPECT_EQ(stats.loops[0].iterations, iterations);
    }
  });
}

// for i < M: y = MatMul(y, W), with the MatMul split along K and its slices
// added by the tile kernel's last workgroup (kiln.kernel splitk_reduce=
// fused): the body is recorded once and submitted per iteration, so the
// arrival counters (model state) must be back at zero after every
// iteration and every run.
TEST_F(VulkanControlFlowTest, LoopBodyWithSplitKFixupGemm) {
  ir::Graph g;
  const ir::SymShape ys = ir::SymShape::from_concrete({20, 600});
  const ir::SymShape scalar_shape = ir::SymShape::from_concrete({});
  ir::ValueId y0 = g.add_input("y0", DType::kFloat32, ys);
  ir::ValueId m = g.add_input("m", DType::kInt64, scalar_shape);
  Tensor w = Tensor::allocate(DType::kFloat32, {600, 600}).value();
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = static_cast<float>((i * 7 + i / 600 * 3) % 11 - 5) / 600.0f;
  ir::ValueId wv = g.add_constant("w", w);
  const ir::RegionId body = g.add_region(ir::kMainRegion, "body");
  (void)g.add_input("iter", DType::kInt64, scalar_shape, body);
  ir::ValueId cond_in = g.add_input("cond_in", DType::kBool, scalar_shape, body);
  ir::ValueId y_in = g.add_input("y_in", DType::kFloat32, ys, body);
  ir::ValueId y_out = g.add_value("y_out", DType::kFloat32, ys, body);
  const ir::NodeId mm = g.add_node("MatMul", {y_in, wv}, {y_out}, {}, "body_matmul", body);
  g.node(mm).annotations[planner::kKernelKey] = "split_k=4,splitk_reduce=fused";
  g.add_output(cond_in, body);
  g.add_output(y_out, body);
  ir::ValueId y = g.add_value("y", DType::kFloat32, ys);
  g.add_node("Loop", {m, ir::kNoValue, y0}, {y}, {{"body", ir::Attribute::of_graph(body)}}, "loop");
  g.add_output(y);
  ASSERT_TRUE(ops::infer_graph_shapes(g).ok());
  ReferenceExecutor reference(g);
  for_each_storage(g, [&](VulkanModel& model) {
    const planner::ExecutionPlan& plan = model.plan();
    ASSERT_EQ(plan.fallback_count(), 0u) << plan.fallback_reasons[0];
    EXPECT_EQ(kernels_named(plan, "matmul_splitk_fixup_tile32x64"), 1u);
    EXPECT_EQ(kernels_named(plan, "matmul_splitk_reduce"), 0u);
    for (int64_t iterations : {3, 1, 4, 3}) {
      const std::vector<Tensor> in = {filled({20, 600}, -0.5f), Tensor::scalar_i64(iterations)};
      VulkanRunStats stats;
      ASSERT_NO_FATAL_FAILURE(run_matching_reference(model, reference, in, stats));
      ASSERT_EQ(stats.loops.size(), 1u);
      EXPECT_EQ(stats.loops[0].iterations, iterations);
    }
  });
}

// while sum(y) < 100: y = 2 * y   (the condition computed on the device,
// read back after every iteration; no trip count)
TEST_F(VulkanControlFlowTest, WhileLoopReadsItsConditionFromTheDevice) {
  ir::Graph g;
  const ir::SymShape xs = ir::SymShape::from_concrete({3, 4});
  const ir::SymShape scalar_shape = ir::SymShape::from_concrete({});
  ir::ValueId x = g.add_input("x", DType::kFloat32, xs);
  ir::ValueId c = g.add_input("c", DType::kBool, scalar_shape);
  const ir::RegionId body = g.add_region(ir::kMainRegion, "body");
  g.add_input("iter", DType::kInt64, scalar_shape, body);
  g.add_input("cond_in", DType::kBool, scalar_shape, body);
  ir::ValueId y_in = g.add_input("y_in", DType::kFloat32, xs, body);
  ir::ValueId y_out = g.add_value("y_out", DType::kFloat32, xs, body);
  ir::ValueId sum = g.add_value("sum", DType::kFloat32, scalar_shape, body);
  ir::ValueId more = g.add_value("more", DType::kBool, scalar_shape, body);
  g.add_node("Mul", {y_in, scalar(g, "two", 2.0f, body)}, {y_out}, {}, "body_double", body);
  g.add_node("ReduceSum", {y_out}, {sum}, {{"keepdims", ir::Attribute::of_int(0)}}, "body_sum", body);
  g.add_node("Less", {sum, scalar(g, "limit", 100.0f, body)}, {more}, {}, "body_less", body);
  g.add_output(more, body);
  g.add_output(y_out, body);
  ir::ValueId y = g.add_value("y", DType::kFloat32, xs);
  g.add_node("Loop", {ir::kNoValue, c, x}, {y}, {{"body", ir::Attribute::of_graph(body)}}, "loop");
  g.add_output(y);
  ASSERT_TRUE(ops::infer_graph_shapes(g).ok());
  ReferenceExecutor reference(g);
  auto model = compile(g, planner::Storage::kBuffer);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const planner::ExecutionPlan& plan = (*model)->plan();
  ASSERT_EQ(plan.fallback_count(), 0u) << plan.fallback_reasons[0];
  const LoopCounts counts = loop_counts(plan);
  // x sums to 12 * offset + 6: the body runs until 2^k of that reaches 100.
  const std::pair<float, bool> cases[] = {{0.5f, true}, {4.0f, true}, {0.5f, false}, {20.0f, true}};
  for (const auto& [offset, start] : cases) {
    const Tensor xv = filled({3, 4}, offset);
    double total = 0;
    for (int64_t i = 0; i < xv.numel(); ++i) total += xv.get_f64(i);
    uint32_t iterations = 0;
    if (start)
      do {
        total *= 2;
        ++iterations;
      } while (total < 100);
    VulkanRunStats stats;
    ASSERT_NO_FATAL_FAILURE(
        run_matching_reference(**model, reference, {xv, Tensor::from_vector<bool>({}, {start})}, stats));
    EXPECT_EQ(stats.dispatches, counts.before + iterations * counts.body + counts.after) << "offset " << offset;
    ASSERT_EQ(stats.loops.size(), 1u);
    EXPECT_EQ(stats.loops[0].iterations, static_cast<int64_t>(iterations)) << "offset " << offset;
  }
  // The iteration limit holds on the device as on the reference: offset 0.5
  // (x sums to 12) needs 4 iterations, refused under a limit of 3 with the
  // node named; the model runs again afterwards.
  {
    kiln::testing::ScopedEnv limit(std::string(kMaxLoopIterationsEnv), "3");
    const std::vector<Tensor> in = {filled({3, 4}, 0.5f), Tensor::from_vector<bool>({}, {true})};
    auto refused = (*model)->run(in);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("node 'loop' (Loop): did not end within 3 iterations"),
              std::string::npos)
        << refused.status().to_string();
    EXPECT_FALSE(reference.run(in).ok());
  }
  VulkanRunStats again;
  ASSERT_NO_FATAL_FAILURE(
      run_matching_reference(**model, reference, {filled({3, 4}, 0.5f), Tensor::from_vector<bool>({}, {true})}, again));
  EXPECT_EQ(again.loops[0].iterations, 4);
}

// The body reads the iteration number i (a device counter) and has scan
// outputs:  for i < M: v += i; f = x * float(i)   scans f ([M, 2, 3]) and v
// ([M, 1]); outputs v, the scans. Recorded once per trip count, the body's
// kernels read i from the device: no fallback, no compile after compile().
TEST_F(VulkanControlFlowTest, LoopReadsTheIterationNumberAndScansOnTheDevice) {
  ir::Graph g;
  const ir::SymShape scalar_shape = ir::SymShape::from_concrete({});
  const ir::SymShape xs = ir::SymShape::from_concrete({2, 3});
  const ir::SymShape vs = ir::SymShape::from_concrete({1});
  ir::ValueId m = g.add_input("m", DType::kInt64, scalar_shape);
  ir::ValueId x = g.add_input("x", DType::kFloat32, xs);
  ir::ValueId v0 = g.add_input("v0", DType::kInt64, vs);
  const ir::RegionId body = g.add_region(ir::kMainRegion, "body");
  ir::ValueId iter = g.add_input("iter", DType::kInt64, scalar_shape, body);
  ir::ValueId cond_in = g.add_input("cond_in", DType::kBool, scalar_shape, body);
  ir::ValueId v_in = g.add_input("v_in", DType::kInt64, vs, body);
  ir::ValueId v_out = g.add_value("v_out", DType::kInt64, vs, body);
  ir::ValueId fi = g.add_value("fi", DType::kFloat32, scalar_shape, body);
  ir::ValueId f = g.add_value("f", DType::kFloat32, xs, body);
  g.add_node("Add", {v_in, iter}, {v_out}, {}, "body_add", body);
  g.add_node("Cast", {iter}, {fi}, {{"to", ir::Attribute::of_int(1)}}, "body_cast", body);
  g.add_node("Mul", {x, fi}, {f}, {}, "body_mul", body);
  g.add_output(cond_in, body);
  g.add_output(v_out, body);
  g.add_output(f, body);
  g.add_output(v_out, body);
  ir::ValueId v = g.add_value("v", DType::kInt64, vs);
  ir::ValueId fs = g.add_value("fs", DType::kUndefined, ir::SymShape::unranked());
  ir::ValueId vss = g.add_value("vs", DType::kUndefined, ir::SymShape::unranked());
  g.add_node("Loop", {m, ir::kNoValue, v0}, {v, fs, vss}, {{"body", ir::Attribute::of_graph(body)}}, "loop");
  g.add_output(v);
  g.add_output(fs);
  g.add_output(vss);
  ASSERT_TRUE(ops::infer_graph_shapes(g).ok());
  // Shape inference gives the scan outputs [iterations, ...].
  ASSERT_EQ(g.value(fs).shape.rank(), 3u);
  EXPECT_EQ(g.value(fs).dtype, DType::kFloat32);
  ASSERT_EQ(g.value(vss).shape.rank(), 2u);
  ReferenceExecutor reference(g);
  const Tensor xv = filled({2, 3}, -1.0f);
  const Tensor v0v = Tensor::from_vector<int64_t>({1}, {7});
  for_each_storage(g, [&](VulkanModel& model) {
    const planner::ExecutionPlan& plan = model.plan();
    ASSERT_EQ(plan.fallback_count(), 0u) << plan.fallback_reasons[0];
    EXPECT_EQ(kernels_named(plan, "loop_scan"), 2u);
    EXPECT_EQ(kernels_named(plan, "loop_iteration_next"), 1u);
    const LoopCounts c = loop_counts(plan);
    for (int64_t iterations : {3, 0, 1, 5, 3}) {
      SCOPED_TRACE(std::to_string(iterations) + " iterations");
      const std::vector<Tensor> in = {Tensor::scalar_i64(iterations), xv, v0v};
      VulkanRunStats stats;
      if (iterations == 0) {
        // The reference Loop kernel cannot see the body's shapes when it
        // does not run it (it gives [0]); ONNX's scan output is [0, ...].
        auto got = model.run(in, &stats);
        ASSERT_TRUE(got.ok()) << got.status().to_string();
        EXPECT_EQ((*got)[0].get_i64(0), 7);
        EXPECT_EQ((*got)[1].shape(), (Shape{0, 2, 3}));
        EXPECT_EQ((*got)[2].shape(), (Shape{0, 1}));
      } else {
        ASSERT_NO_FATAL_FAILURE(run_matching_reference(model, reference, in, stats));
      }
      EXPECT_EQ(stats.fallbacks, 0u);
      EXPECT_EQ(stats.shader_compiles, 0u);
      EXPECT_EQ(stats.dispatches, c.before + static_cast<uint32_t>(iterations) * c.body + c.after);
      ASSERT_EQ(stats.loops.size(), 1u);
      EXPECT_EQ(stats.loops[0].iterations, iterations);
    }
  });
}

// A body that reads the iteration number as shape data (the Slice bounds
// of ONNX's loop11 test) cannot be sized once: a host fallback, saying why.
TEST_F(VulkanControlFlowTest, LoopReadingTheIterationNumberAsShapeDataFallsBack) {
  ir::Graph g;
  const ir::SymShape scalar_shape = ir::SymShape::from_concrete({});
  const ir::SymShape one = ir::SymShape::from_concrete({1});
  ir::ValueId m = g.add_input("m", DType::kInt64, scalar_shape);
  ir::ValueId x = g.add_input("x", DType::kFloat32, ir::SymShape::from_concrete({5}));
  ir::ValueId y = g.add_input("y", DType::kFloat32, one);
  const ir::RegionId body = g.add_region(ir::kMainRegion, "body");
  ir::ValueId iter = g.add_input("iter", DType::kInt64, scalar_shape, body);
  ir::ValueId cond_in = g.add_input("cond_in", DType::kBool, scalar_shape, body);
  ir::ValueId y_in = g.add_input("y_in", DType::kFloat32, one, body);
  ir::ValueId end = g.add_value("end", DType::kInt64, scalar_shape, body);
  ir::ValueId starts = g.add_value("starts", DType::kInt64, one, body);
  ir::ValueId ends = g.add_value("ends", DType::kInt64, one, body);
  ir::ValueId slice = g.add_value("slice", DType::kFloat32, ir::SymShape({ir::Dim()}), body);
  ir::ValueId y_out = g.add_value("y_out", DType::kFloat32, one, body);
  ir::ValueId axes = g.add_constant("axes", Tensor::from_vector<int64_t>({1}, {0}), body);
  g.add_node("Add", {iter, g.add_constant("one", Tensor::scalar_i64(1), body)}, {end}, {}, "body_end", body);
  g.add_node("Unsqueeze", {iter, axes}, {starts}, {}, "body_starts", body);
  g.add_node("Unsqueeze", {end, axes}, {ends}, {}, "body_ends", body);
  g.add_node("Slice", {x, starts, ends}, {slice}, {}, "body_slice", body);
  g.add_node("Add", {y_in, slice}, {y_out}, {}, "body_add", body);
  g.add_output(cond_in, body);
  g.add_output(y_out, body);
  ir::ValueId out = g.add_value("out", DType::kFloat32, one);
  g.add_node("Loop", {m, ir::kNoValue, y}, {out}, {{"body", ir::Attribute::of_graph(body)}}, "loop");
  g.add_output(out);
  auto model = compile(g, planner::Storage::kBuffer);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  ASSERT_EQ((*model)->plan().fallback_count(), 1u);
  EXPECT_NE((*model)->plan().fallback_reasons[0].find("reads the iteration number as shape data"), std::string::npos)
      << (*model)->plan().fallback_reasons[0];
  // It still runs (on the host) and is right.
  ReferenceExecutor reference(g);
  const std::vector<Tensor> in = {Tensor::scalar_i64(4), filled({5}, 1.0f), filled({1}, 0.0f)};
  VulkanRunStats stats;
  ASSERT_NO_FATAL_FAILURE(run_matching_reference(**model, reference, in, stats));
  EXPECT_EQ(stats.fallbacks, 1u);
}

// Branches with different output shapes and a host condition: the If runs
// on the device, its output sized from the branch the condition takes (a
// device-computed condition is vulkan_dynamic_shape_test's BranchDependentIf).
TEST_F(VulkanControlFlowTest, BranchDependentShapeTakesTheTakenBranchShape) {
  ir::Graph g;
  ir::ValueId c = g.add_input("c", DType::kBool, ir::SymShape::from_concrete({}));
  ir::ValueId x = g.add_input("x", DType::kFloat32, ir::SymShape::from_concrete({4}));
  const ir::RegionId then_r = g.add_region(ir::kMainRegion, "then");
  ir::ValueId a = g.add_value("a", DType::kFloat32, ir::SymShape::from_concrete({4}), then_r);
  g.add_node("Neg", {x}, {a}, {}, "then_neg", then_r);
  g.add_output(a, then_r);
  const ir::RegionId else_r = g.add_region(ir::kMainRegion, "else");
  g.add_output(g.add_constant("b", Tensor::from_vector<float>({2}, {1.0f, 2.0f}), else_r), else_r);
  ir::ValueId out = g.add_value("out", DType::kFloat32, ir::SymShape({ir::Dim::symbol("len")}));
  ir::ValueId y = g.add_value("y", DType::kFloat32, ir::SymShape({ir::Dim::symbol("len")}));
  g.add_node("If", {c}, {out},
             branches(then_r, else_r), "if");
  g.add_node("Relu", {out}, {y}, {}, "after");
  g.add_output(y);
  ReferenceExecutor reference(g);
  const Tensor x_value = Tensor::from_vector<float>({4}, {1.0f, -2.0f, 3.0f, -4.0f});
  for_each_storage(g, [&](VulkanModel& model) {
    EXPECT_EQ(model.plan().fallback_count(), 0u);
    EXPECT_EQ(if_steps(model.plan()).size(), 1u);
    for (bool taken : {true, false, true}) {
      const std::vector<Tensor> in = {Tensor::from_vector<bool>({}, {taken}), x_value};
      VulkanRunStats stats;
      std::vector<Tensor> got;
      ASSERT_NO_FATAL_FAILURE(run_matching_reference(model, reference, in, stats, &got));
      EXPECT_EQ(got[0].shape(), (Shape{taken ? 4 : 2}));
      ASSERT_EQ(stats.branches.size(), 1u);
      EXPECT_EQ(stats.branches[0].then_branch, taken);
    }
  });
}

// A NonZero inside a branch sizes what follows it from tensor values, which
// the runtime does only between main-graph steps: the If runs on the host
// (saying why) instead of failing at run time, correct for both branches.
//   cond = ReduceSum(x) > 0; then: Shape(NonZero(x > 0.5)) ([2]: 1, count);
//   else: the constant [7, 7]; y = If + 1.
TEST_F(VulkanControlFlowTest, NonZeroInABranchKeepsTheIfOnTheHost) {
  ir::Graph g;
  const ir::SymShape xs = ir::SymShape::from_concrete({6});
  const ir::SymShape two = ir::SymShape::from_concrete({2});
  ir::ValueId x = g.add_input("x", DType::kFloat32, xs);
  ir::ValueId cond = add_sum_is_positive(g, x);
  const ir::RegionId then_r = g.add_region(ir::kMainRegion, "then");
  ir::ValueId gt = g.add_value("gt", DType::kBool, xs, then_r);
  ir::ValueId nz = g.add_value("nz", DType::kInt64, ir::SymShape({ir::Dim(1), ir::Dim()}), then_r);
  ir::ValueId shape = g.add_value("shape", DType::kInt64, two, then_r);
  g.add_node("Greater", {x, scalar(g, "half", 0.5f, then_r)}, {gt}, {}, "then_gt", then_r);
  g.add_node("NonZero", {gt}, {nz}, {}, "then_nonzero", then_r);
  g.add_node("Shape", {nz}, {shape}, {}, "then_shape", then_r);
  g.add_output(shape, then_r);
  const ir::RegionId else_r = g.add_region(ir::kMainRegion, "else");
  g.add_output(g.add_constant("sevens", Tensor::from_vector<int64_t>({2}, {7, 7}), else_r), else_r);
  ir::ValueId out = g.add_value("out", DType::kInt64, two);
  ir::ValueId y = g.add_value("y", DType::kInt64, two);
  g.add_node("If", {cond}, {out}, branches(then_r, else_r), "if");
  g.add_node("Add", {out, g.add_constant("one", Tensor::scalar_i64(1))}, {y}, {}, "after");
  g.add_output(y);
  ASSERT_TRUE(ops::infer_graph_shapes(g).ok());
  ReferenceExecutor reference(g);
  for_each_storage(g, [&](VulkanModel& model) {
    const planner::ExecutionPlan& plan = model.plan();
    ASSERT_GE(plan.fallback_count(), 1u);
    bool said = false;
    for (const std::string& why : plan.fallback_reasons) said = said || why.find("then_nonzero") != std::string::npos;
    EXPECT_TRUE(said) << plan.fallback_reasons[0];
    for (float offset : {1.0f, -3.0f, 0.3f, -1.0f}) {
      VulkanRunStats stats;
      ASSERT_NO_FATAL_FAILURE(run_matching_reference(model, reference, {filled({6}, offset)}, stats));
    }
  });
}

}  // namespace
}  // namespace kiln::runtime
