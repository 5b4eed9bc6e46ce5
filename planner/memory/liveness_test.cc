// Liveness on hand-built plans, no device: dispatch chains, views and
// in-place writes (one root), graph inputs/outputs and host values, Loops
// widening what crosses their body, host steps, and which roots are born at
// a dispatch (the runtime's image re-use rule).
#include "planner/memory/liveness.h"

#include <gtest/gtest.h>

namespace kiln::planner {
namespace {

// A plan over `n` tensors and a graph for its host steps.
struct PlanBuilder {
  ExecutionPlan plan;
  ir::Graph graph;

  explicit PlanBuilder(size_t n) { plan.tensors.resize(n); }

  // A dispatch reading `reads` and writing `writes`.
  size_t dispatch(std::vector<TensorId> reads, std::vector<TensorId> writes) {
    PlanStep s;
    s.kind = PlanStep::Kind::kDispatch;
    for (TensorId t : reads) s.kernel.tensors.push_back(kernel_tensor(t, false));
    for (TensorId t : writes) s.kernel.tensors.push_back(kernel_tensor(t, true));
    plan.steps.push_back(s);
    return plan.steps.size() - 1;
  }

  // A host fallback of a node reading `ins` and making `outs` (tensors
  // given graph values of their own).
  size_t fallback(std::vector<TensorId> ins, std::vector<TensorId> outs) {
    PlanStep s;
    s.kind = PlanStep::Kind::kFallback;
    s.node = graph.add_node("Custom", values(ins), values(outs));
    plan.steps.push_back(s);
    return plan.steps.size() - 1;
  }

  // A Loop head whose body is the next `body_steps` steps.
  size_t loop(size_t body_steps, TensorId body_cond = kNoTensor) {
    PlanStep s;
    s.kind = PlanStep::Kind::kLoop;
    s.body_end = plan.steps.size() + 1 + body_steps;
    s.body_cond = body_cond;
    plan.steps.push_back(s);
    return plan.steps.size() - 1;
  }

  static KernelTensor kernel_tensor(TensorId t, bool written) {
    KernelTensor kt;
    kt.tensor = t;
    kt.written = written;
    return kt;
  }

  std::vector<ir::ValueId> values(const std::vector<TensorId>& tensors) {
    std::vector<ir::ValueId> out;
    for (TensorId t : tensors) {
      PlanTensor& pt = plan.tensors[static_cast<size_t>(t)];
      if (pt.value == ir::kNoValue) {
        pt.value = graph.add_value("t" + std::to_string(t), DType::kFloat32, ir::SymShape::from_concrete({1}));
        plan.value_tensor[pt.value] = t;
      }
      out.push_back(pt.value);
    }
    return out;
  }
};

LiveInterval iv(int64_t first, int64_t last) { return LiveInterval{first, last}; }

TEST(Liveness, ChainLivesFromWriteToLastRead) {
  PlanBuilder b(4);
  b.plan.inputs = {0};
  b.plan.outputs = {3};
  b.dispatch({0}, {1});
  b.dispatch({1}, {2});
  b.dispatch({2}, {3});
  const Liveness l = compute_liveness(b.plan, b.graph);
  EXPECT_EQ(l.live[0], iv(kBeforeRun, 0));
  EXPECT_EQ(l.live[1], iv(0, 1));
  EXPECT_EQ(l.live[2], iv(1, 2));
  EXPECT_EQ(l.live[3], iv(2, kAfterRun));
  for (size_t t = 0; t < 4; ++t) EXPECT_TRUE(l.needed[t]) << t;
}

TEST(Liveness, UnusedTensorIsNotNeeded) {
  PlanBuilder b(3);
  b.dispatch({0}, {1});
  const Liveness l = compute_liveness(b.plan, b.graph);
  EXPECT_FALSE(l.needed[2]);
  EXPECT_TRUE(l.live[2].empty());
}

TEST(Liveness, ViewsAndInPlaceWritesCountForTheirRoot) {
  PlanBuilder b(4);
  b.plan.tensors[2].alias_of = 1;    // a view of 1
  b.plan.tensors[3].inplace_of = 2;  // written over the view, hence over 1
  b.dispatch({0}, {1});              // 0
  b.dispatch({2}, {3});              // 1: in place
  b.dispatch({3}, {0});              // 2: last read of 3
  const Liveness l = compute_liveness(b.plan, b.graph);
  EXPECT_EQ(l.live[1], iv(0, 2));
  EXPECT_TRUE(l.needed[1]);
  // Non-roots keep default entries: placement only looks at roots.
  EXPECT_FALSE(l.needed[2]);
  EXPECT_FALSE(l.needed[3]);
  EXPECT_TRUE(l.live[3].empty());
}

TEST(Liveness, HostValuesTheDeviceReadsLiveTheWholeRun) {
  PlanBuilder b(3);
  b.plan.tensors[2].host_resident = true;
  b.plan.tensors[2].device_needed = true;
  b.dispatch({0, 2}, {1});
  b.dispatch({1}, {0});
  const Liveness l = compute_liveness(b.plan, b.graph);
  EXPECT_EQ(l.live[2], iv(kBeforeRun, kAfterRun));
}

TEST(Liveness, LoopWidensWhatCrossesItsBody) {
  // 0: write 1; 1: Loop, body 2..4; 2: read 1, write 2; 3: read 2, write 3;
  // 4: read 3, write 4 (condition); 5: read 1.
  PlanBuilder b(6);
  b.dispatch({0}, {1});
  b.loop(3, /*body_cond=*/4);
  b.dispatch({1}, {2});
  b.dispatch({2}, {3});
  b.dispatch({3}, {4});
  b.dispatch({1}, {5});
  const Liveness l = compute_liveness(b.plan, b.graph);
  EXPECT_EQ(l.live[1], iv(0, 5));  // read inside and after: already spans the body
  EXPECT_EQ(l.live[2], iv(2, 3));  // strictly inside the body: unchanged
  EXPECT_EQ(l.live[3], iv(3, 4));
  EXPECT_EQ(l.live[4], iv(4, 4));  // the condition, read after the body's last step
}

TEST(Liveness, LoopKeepsAValueReadFromOutsideOverTheWholeBody) {
  // 0: Loop, body 1..2; 1: read 0 (from outside); 2: write 1.
  PlanBuilder b(2);
  b.plan.inputs = {0};
  b.loop(2);
  b.dispatch({0}, {});
  b.dispatch({}, {1});
  b.plan.outputs = {1};
  const Liveness l = compute_liveness(b.plan, b.graph);
  EXPECT_EQ(l.live[0], iv(kBeforeRun, 2));  // read at 1, but the body runs again after 2
  EXPECT_EQ(l.live[1], iv(0, kAfterRun));   // written in the body, read by the graph after it
}

TEST(Liveness, HostStepsUseTheirValuesAndAreIrregular) {
  PlanBuilder b(3);
  b.dispatch({}, {0});
  b.fallback({0}, {1});
  b.dispatch({1}, {2});
  const Liveness l = compute_liveness(b.plan, b.graph);
  EXPECT_EQ(l.live[0], iv(0, 1));
  EXPECT_EQ(l.live[1], iv(1, 2));
  EXPECT_FALSE(l.first[0].read);
  EXPECT_TRUE(l.first[0].irregular);  // first touched by a dispatch, but the host reads it later
  EXPECT_TRUE(l.first[1].irregular);
  EXPECT_EQ(l.first[1].step, 1u);
  EXPECT_TRUE(l.first[1].written);
}

TEST(Liveness, BornAtDispatchOnlyForAPlainFirstWrite) {
  // 0: write 0; 1: read 0, write 1 and 2; 2: Loop, body 3; 3: write 3;
  // 4: read 3 and 1, read 2 then host step 5 reads 4.
  PlanBuilder b(5);
  b.dispatch({}, {0});
  b.dispatch({0}, {1, 2});
  b.loop(1);
  b.dispatch({}, {3});
  b.dispatch({3, 1, 2}, {});
  b.fallback({4}, {});
  b.plan.inputs = {4};
  const Liveness l = compute_liveness(b.plan, b.graph);
  EXPECT_TRUE(l.born_at_dispatch(0, 0, b.plan.steps.size()));
  EXPECT_TRUE(l.born_at_dispatch(1, 0, b.plan.steps.size()));
  EXPECT_FALSE(l.born_at_dispatch(1, 0, 1));  // its step lies past the range
  EXPECT_FALSE(l.born_at_dispatch(3, 0, b.plan.steps.size()));  // inside a body
  EXPECT_FALSE(l.born_at_dispatch(4, 0, b.plan.steps.size()));  // a graph input, read by the host
  // A tensor first read (an input of a dispatch) is not born there.
  PlanBuilder c(2);
  c.dispatch({0}, {1});
  const Liveness lc = compute_liveness(c.plan, c.graph);
  EXPECT_FALSE(lc.born_at_dispatch(0, 0, 1));
  EXPECT_TRUE(lc.born_at_dispatch(1, 0, 1));
}

TEST(Liveness, RootsWrittenInARangeOfSteps) {
  PlanBuilder b(4);
  b.plan.tensors[3].alias_of = 2;
  b.dispatch({0}, {1});
  b.fallback({1}, {3});  // writes the view: its root 2
  const std::vector<bool> all = roots_written_in(b.plan, b.graph, 0, 2);
  EXPECT_EQ(all, (std::vector<bool>{false, true, true, false}));
  const std::vector<bool> first = roots_written_in(b.plan, b.graph, 0, 1);
  EXPECT_EQ(first, (std::vector<bool>{false, true, false, false}));
  EXPECT_EQ(roots_written_in(b.plan, b.graph, 2, 9), std::vector<bool>(4, false));
}

}  // namespace
}  // namespace kiln::planner
