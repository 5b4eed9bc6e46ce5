// Value-dependent output shapes (vulkan_model_dynamic_shape.cc): a NonZero,
// a Range whose limit the GPU computes and a Reshape whose shape the GPU
// computes each end a signature at a sub-graph boundary; the rest of the
// plan is sized from what the boundary materialized, recorded once per
// materialized shape, and matches the reference executor. A repeat of the
// same values records nothing; nothing compiles after compile().
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/ops/shape_inference.h"
#include "engine/runtime/reference_executor.h"
#include "engine/runtime/vulkan/vulkan_model.h"
#include "engine/runtime/vulkan/vulkan_model_test_fixture.h"

namespace kiln::runtime {
namespace {

using planner::PlanStep;

using VulkanDynamicShapeTest = testing::VulkanModelTest;

const ir::SymShape kScalar = ir::SymShape::from_concrete({});
const ir::SymShape kUnknown1 = ir::SymShape({ir::Dim()});
const ir::SymShape kUnknown2 = ir::SymShape({ir::Dim(), ir::Dim()});

void expect_same(const std::vector<Tensor>& want, const std::vector<Tensor>& got, const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  for (size_t j = 0; j < want.size(); ++j) {
    ASSERT_EQ(want[j].shape(), got[j].shape()) << what << " output " << j;
    for (int64_t i = 0; i < want[j].numel(); ++i)
      ASSERT_NEAR(want[j].get_f64(i), got[j].get_f64(i), 1e-5 * std::max(1.0, std::abs(want[j].get_f64(i))))
          << what << " output " << j << " element " << i;
  }
}

// Runs `model` on each input set in turn, comparing with the reference;
// `recorded[i]` says whether run i must record (a new shape signature or
// a new materialized shape).
void run_cases(const ir::Graph& g, VulkanModel& model, const std::vector<std::vector<Tensor>>& cases,
               const std::vector<bool>& recorded) {
  ReferenceExecutor reference(g);
  for (size_t r = 0; r < cases.size(); ++r) {
    const std::string what = "run " + std::to_string(r);
    auto want = reference.run(cases[r]);
    ASSERT_TRUE(want.ok()) << want.status().to_string();
    VulkanRunStats stats;
    auto got = model.run(cases[r], &stats);
    ASSERT_TRUE(got.ok()) << what << ": " << got.status().to_string();
    expect_same(*want, *got, what);
    EXPECT_EQ(stats.recorded, recorded[r]) << what;
    EXPECT_EQ(stats.shader_compiles, 0u) << what;
  }
}

size_t steps_of(const planner::ExecutionPlan& plan, PlanStep::Kind kind) {
  size_t n = 0;
  for (const PlanStep& s : plan.steps) n += s.kind == kind;
  return n;
}

// y = Relu(x - 0.5); idx = Transpose(NonZero(y)) ([count, 2]);
// out = GatherND(x, idx) * 2 * count ([count]; the count as a host value
// from Shape(idx), bound by the Mul's kernel); also outputs idx.
ir::Graph nonzero_graph() {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", DType::kFloat32, ir::SymShape::from_concrete({2, 40}));
  ir::ValueId half = g.add_constant("half", Tensor::scalar_f32(0.5f));
  ir::ValueId two = g.add_constant("two", Tensor::scalar_f32(2.0f));
  ir::ValueId d = g.add_value("d", DType::kFloat32, ir::SymShape::from_concrete({2, 40}));
  ir::ValueId y = g.add_value("y", DType::kFloat32, ir::SymShape::from_concrete({2, 40}));
  ir::ValueId nz = g.add_value("nz", DType::kInt64, kUnknown2);
  ir::ValueId idx = g.add_value("idx", DType::kInt64, kUnknown2);
  ir::ValueId picked = g.add_value("picked", DType::kFloat32, kUnknown1);
  ir::ValueId out = g.add_value("out", DType::kFloat32, kUnknown1);
  g.add_node("Sub", {x, half}, {d}, {}, "sub");
  g.add_node("Relu", {d}, {y}, {}, "relu");
  g.add_node("NonZero", {y}, {nz}, {}, "nonzero");
  g.add_node("Transpose", {nz}, {idx}, {}, "transpose");
  g.add_node("GatherND", {x, idx}, {picked}, {}, "gather");
  ir::ValueId shape = g.add_value("shape", DType::kInt64, ir::SymShape::from_concrete({2}));
  ir::ValueId count = g.add_value("count", DType::kInt64, kScalar);
  ir::ValueId countf = g.add_value("countf", DType::kFloat32, kScalar);
  ir::ValueId doubled = g.add_value("doubled", DType::kFloat32, kUnknown1);
  g.add_node("Shape", {idx}, {shape}, {}, "shape");
  g.add_node("Gather", {shape, g.add_constant("first", Tensor::scalar_i64(0))}, {count}, {}, "count");
  g.add_node("Cast", {count}, {countf}, {{"to", ir::Attribute::of_int(1)}}, "countf");  // to: ONNX FLOAT
  g.add_node("Mul", {picked, two}, {doubled}, {}, "double");
  g.add_node("Mul", {doubled, countf}, {out}, {}, "scale");
  g.add_output(out);
  g.add_output(idx);
  return g;
}

// x with `count` elements above 0.5 (at scattered places).
Tensor with_count(int count) {
  Tensor t = Tensor::allocate(DType::kFloat32, {2, 40}).value();
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = 0.1f * static_cast<float>(i % 4);
  for (int c = 0; c < count; ++c) t.data<float>()[(c * 37 + 11) % 80] = 1.0f + static_cast<float>(c);
  return t;
}

TEST_F(VulkanDynamicShapeTest, NonZeroSizesItsConsumers) {
  ir::Graph g = nonzero_graph();
  ASSERT_TRUE(ops::infer_graph_shapes(g).ok());
  for_each_storage(g, [&](VulkanModel& model) {
    // NonZero runs on the host; everything else on the device.
    EXPECT_EQ(model.plan().fallback_count(), 1u);
    EXPECT_GE(model.plan().dispatch_count(), 5u);
    EXPECT_EQ(steps_of(model.plan(), PlanStep::Kind::kHost), 3u);  // Shape, Gather, Cast of the count
    // Counts 3, 0, 5, then 3 and 0 again: those two record nothing.
    run_cases(g, model, {{with_count(3)}, {with_count(0)}, {with_count(5)}, {with_count(3)}, {with_count(0)}},
              {true, true, true, false, false});
    // The same count at other places: the continuation is reused, values differ.
    Tensor moved = with_count(0);
    moved.data<float>()[79] = 7.0f;
    moved.data<float>()[0] = 3.0f;
    moved.data<float>()[41] = 2.0f;
    run_cases(g, model, {{moved}}, {false});
  });
}

// Each NonZero count is a continuation; they share one activation memory
// (their depth's) and at most max_signatures stay recorded per parent.
TEST_F(VulkanDynamicShapeTest, ContinuationsShareMemoryAndStayBounded) {
  options_.max_signatures = 3;
  ir::Graph g = nonzero_graph();
  ASSERT_TRUE(ops::infer_graph_shapes(g).ok());
  for_each_storage(g, [&](VulkanModel& model) {
    // 7 makes a fourth continuation: 5 (least recently run) goes; 11 then
    // drops 9, and 5 comes back recorded anew (dropping 2).
    const int counts[] = {5, 9, 5, 9, 2, 7, 11, 5, 11};
    const bool recorded[] = {true, true, false, false, true, true, true, true, false};
    ReferenceExecutor reference(g);
    uint64_t memory_after_11 = 0;
    for (size_t r = 0; r < std::size(counts); ++r) {
      const std::string what = "run " + std::to_string(r) + " (count " + std::to_string(counts[r]) + ")";
      const std::vector<Tensor> in = {with_count(counts[r])};
      VulkanRunStats stats;
      auto got = model.run(in, &stats);
      ASSERT_TRUE(got.ok()) << what << ": " << got.status().to_string();
      expect_same(reference.run(in).value(), *got, what);
      EXPECT_EQ(stats.recorded, recorded[r]) << what;
      EXPECT_EQ(stats.shader_compiles, 0u) << what;
      // The largest count sized the memories; later counts fit in them.
      if (counts[r] == 11 && memory_after_11 == 0) memory_after_11 = stats.activation_bytes;
      if (memory_after_11) {
        EXPECT_EQ(stats.activation_bytes, memory_after_11) << what;
      }
    }
  });
}

// n = ReduceMax(k) on the device; r = Range(0, n, 1) (host, at the boundary);
// out = Gather(table, r) ([n, 3]) and rf = Cast(r) + Cast(r) ([n]).
TEST_F(VulkanDynamicShapeTest, RangeOverADeviceValue) {
  ir::Graph g;
  ir::ValueId k = g.add_input("k", DType::kInt64, ir::SymShape::from_concrete({100}));
  ir::ValueId table = g.add_input("table", DType::kFloat32, ir::SymShape::from_concrete({20, 3}));
  ir::ValueId n = g.add_value("n", DType::kInt64, kScalar);
  ir::ValueId r = g.add_value("r", DType::kInt64, kUnknown1);
  ir::ValueId rows = g.add_value("rows", DType::kFloat32, kUnknown2);
  ir::ValueId rf = g.add_value("rf", DType::kFloat32, kUnknown1);
  ir::ValueId sum = g.add_value("sum", DType::kFloat32, kUnknown1);
  g.add_node("ReduceMax", {k}, {n}, {{"keepdims", ir::Attribute::of_int(0)}}, "max");
  g.add_node("Range", {g.add_constant("zero", Tensor::scalar_i64(0)), n, g.add_constant("one", Tensor::scalar_i64(1))},
             {r}, {}, "range");
  g.add_node("Gather", {table, r}, {rows}, {{"axis", ir::Attribute::of_int(0)}}, "gather");
  g.add_node("Cast", {r}, {rf}, {{"to", ir::Attribute::of_int(1)}}, "cast");  // to: ONNX FLOAT
  g.add_node("Add", {rf, rf}, {sum}, {}, "add");
  g.add_output(rows);
  g.add_output(sum);
  ASSERT_TRUE(ops::infer_graph_shapes(g).ok());
  auto ks = [](int64_t max) {
    std::vector<int64_t> v(100);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>(i % 5) - 3;
    v[37] = max;
    return Tensor::from_vector<int64_t>({100}, v);
  };
  Tensor tab = Tensor::allocate(DType::kFloat32, {20, 3}).value();
  for (int64_t i = 0; i < tab.numel(); ++i) tab.data<float>()[i] = 0.5f * static_cast<float>(i) - 3.0f;
  for_each_storage(g, [&](VulkanModel& model) {
    EXPECT_EQ(model.plan().fallback_count(), 1u);  // the Range
    // Limits 7, 12, -2 (an empty range), 7 again.
    run_cases(g, model, {{ks(7), tab}, {ks(12), tab}, {ks(-2), tab}, {ks(7), tab}}, {true, true, true, false});
  });
}

// shape = Concat(ReduceMax(k, keepdims), [-1]) on the device;
// y = Reshape(x, shape) ([m, 24/m]); s = ReduceSum(y, axis 1) ([m]).
TEST_F(VulkanDynamicShapeTest, ReshapeToADeviceComputedShape) {
  ir::Graph g;
  ir::ValueId k = g.add_input("k", DType::kInt64, ir::SymShape::from_concrete({80}));
  ir::ValueId x = g.add_input("x", DType::kFloat32, ir::SymShape::from_concrete({24}));
  ir::ValueId m = g.add_value("m", DType::kInt64, ir::SymShape::from_concrete({1}));
  ir::ValueId shape = g.add_value("shape", DType::kInt64, ir::SymShape::from_concrete({2}));
  ir::ValueId y = g.add_value("y", DType::kFloat32, kUnknown2);
  ir::ValueId s = g.add_value("s", DType::kFloat32, kUnknown1);
  ir::ValueId e = g.add_value("e", DType::kFloat32, kUnknown2);
  g.add_node("ReduceMax", {k}, {m}, {{"keepdims", ir::Attribute::of_int(1)}}, "max");
  g.add_node("Concat", {m, g.add_constant("rest", Tensor::from_vector<int64_t>({1}, {-1}))}, {shape},
             {{"axis", ir::Attribute::of_int(0)}}, "concat");
  g.add_node("Reshape", {x, shape}, {y}, {}, "reshape");
  g.add_node("ReduceSum", {y, g.add_constant("axes", Tensor::from_vector<int64_t>({1}, {1}))}, {s},
             {{"keepdims", ir::Attribute::of_int(0)}}, "sum");
  g.add_node("Exp", {y}, {e}, {}, "exp");
  g.add_output(s);
  g.add_output(e);
  ASSERT_TRUE(ops::infer_graph_shapes(g).ok());
  auto ks = [](int64_t rows) {
    std::vector<int64_t> v(80, 1);
    v[50] = rows;
    return Tensor::from_vector<int64_t>({80}, v);
  };
  Tensor xs = Tensor::allocate(DType::kFloat32, {24}).value();
  for (int64_t i = 0; i < xs.numel(); ++i) xs.data<float>()[i] = 0.1f * static_cast<float>(i) - 1.0f;
  for_each_storage(g, [&](VulkanModel& model) {
    EXPECT_EQ(model.plan().fallback_count(), 0u);  // all on the device; only the shape comes back
    EXPECT_EQ(steps_of(model.plan(), PlanStep::Kind::kHost), 0u);
    run_cases(g, model, {{ks(2), xs}, {ks(6), xs}, {ks(3), xs}, {ks(2), xs}, {ks(6), xs}},
              {true, true, true, false, false});
    // A shape that does not fit: a clear error, and the model still runs.
    VulkanRunStats stats;
    auto bad = model.run({ks(5), xs}, &stats);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("reshape"), std::string::npos) << bad.status().to_string();
    run_cases(g, model, {{ks(4), xs}}, {true});
  });
}

// Two boundaries in one run: NonZero's count sizes a Range's limit, which
// the device computes from it (ReduceMax over the NonZero output + 1).
TEST_F(VulkanDynamicShapeTest, BoundariesChain) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", DType::kFloat32, ir::SymShape::from_concrete({70}));
  ir::ValueId nz = g.add_value("nz", DType::kInt64, kUnknown2);
  ir::ValueId last = g.add_value("last", DType::kInt64, kScalar);
  ir::ValueId limit = g.add_value("limit", DType::kInt64, kScalar);
  ir::ValueId r = g.add_value("r", DType::kInt64, kUnknown1);
  ir::ValueId rf = g.add_value("rf", DType::kFloat32, kUnknown1);
  g.add_node("NonZero", {x}, {nz}, {}, "nonzero");
  g.add_node("ReduceMax", {nz}, {last}, {{"keepdims", ir::Attribute::of_int(0)}}, "max");
  g.add_node("Add", {last, g.add_constant("one", Tensor::scalar_i64(1))}, {limit}, {}, "plus_one");
  g.add_node("Range",
             {g.add_constant("zero", Tensor::scalar_i64(0)), limit, g.add_constant("step", Tensor::scalar_i64(1))}, {r},
             {}, "range");
  g.add_node("Cast", {r}, {rf}, {{"to", ir::Attribute::of_int(1)}}, "cast");  // to: ONNX FLOAT
  g.add_output(rf);
  ASSERT_TRUE(ops::infer_graph_shapes(g).ok());
  auto xs = [](std::vector<int> at) {
    Tensor t = Tensor::allocate(DType::kFloat32, {70}).value();
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = 0.0f;
    for (int i : at) t.data<float>()[i] = 1.0f;
    return t;
  };
  auto model = compile(g, planner::Storage::kBuffer);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  // Last non-zero at 9 (2 of them), at 30, at 9 again (1 of them: another
  // NonZero count, so another continuation, whose Range is new too).
  run_cases(g, **model, {{xs({2, 9})}, {xs({30})}, {xs({2, 9})}, {xs({9})}}, {true, true, false, true});
}

// An If whose branches give different shapes, its condition computed on the
// device: the If is a boundary that reads the condition back; the
// continuation records only the taken branch and sizes the consumer from it.
//   cond = ReduceSum(x) > 0; then: x * 3 ([6]); else: Slice(x, 1, 3) ([2]);
//   y = Exp(If) ([6] or [2]).
TEST_F(VulkanDynamicShapeTest, BranchDependentIf) {
  ir::Graph g;
  const ir::SymShape xs = ir::SymShape::from_concrete({6});
  ir::ValueId x = g.add_input("x", DType::kFloat32, xs);
  ir::ValueId cond = testing::add_sum_is_positive(g, x);
  const ir::RegionId then_r = g.add_region(ir::kMainRegion, "then");
  ir::ValueId t = g.add_value("t", DType::kFloat32, xs, then_r);
  g.add_node("Mul", {x, g.add_constant("three", Tensor::scalar_f32(3.0f), then_r)}, {t}, {}, "then_mul", then_r);
  g.add_output(t, then_r);
  const ir::RegionId else_r = g.add_region(ir::kMainRegion, "else");
  ir::ValueId e = g.add_value("e", DType::kFloat32, ir::SymShape::from_concrete({2}), else_r);
  g.add_node("Slice",
             {x, g.add_constant("starts", Tensor::from_vector<int64_t>({1}, {1}), else_r),
              g.add_constant("ends", Tensor::from_vector<int64_t>({1}, {3}), else_r)},
             {e}, {}, "else_slice", else_r);
  g.add_output(e, else_r);
  ir::ValueId out = g.add_value("out", DType::kUndefined, ir::SymShape::unranked());
  ir::ValueId y = g.add_value("y", DType::kFloat32, kUnknown1);
  g.add_node("If", {cond}, {out},
             {{"then_branch", ir::Attribute::of_graph(then_r)}, {"else_branch", ir::Attribute::of_graph(else_r)}},
             "if");
  g.add_node("Exp", {out}, {y}, {}, "exp");
  g.add_output(y);
  ASSERT_TRUE(ops::infer_graph_shapes(g).ok());
  auto xv = [](float offset) {
    return Tensor::from_vector<float>({6}, {offset, 0.5f, -0.25f, 0.75f, offset, -1.0f});
  };
  for_each_storage(g, [&](VulkanModel& model) {
    EXPECT_EQ(model.plan().fallback_count(), 0u);
    ASSERT_EQ(steps_of(model.plan(), PlanStep::Kind::kIf), 1u);
    run_cases(g, model, {{xv(2.0f)}, {xv(-3.0f)}, {xv(1.0f)}, {xv(-2.0f)}}, {true, true, false, false});
    VulkanRunStats stats;
    ASSERT_TRUE(model.run({xv(-3.0f)}, &stats).ok());
    ASSERT_EQ(stats.branches.size(), 1u);
    EXPECT_FALSE(stats.branches[0].then_branch);
  });
}

// w = x * x; Loop(m): y += w, scan y  -> y [4], ys [m, 4];
// z = Relu(ys - 5) ([m, 4]); after = y + w. The body reads w (computed on
// the device) from the enclosing graph; `early_exit` adds the body
// condition sum(y) < 30, computed on the device.
ir::Graph scan_loop_graph(bool early_exit) {
  ir::Graph g;
  const ir::SymShape xs = ir::SymShape::from_concrete({4});
  ir::ValueId x = g.add_input("x", DType::kFloat32, xs);
  ir::ValueId m = g.add_input("m", DType::kInt64, kScalar);
  ir::ValueId w = g.add_value("w", DType::kFloat32, xs);
  g.add_node("Mul", {x, x}, {w}, {}, "square");
  const ir::RegionId body = g.add_region(ir::kMainRegion, "body");
  g.add_input("iter", DType::kInt64, kScalar, body);
  ir::ValueId cond_in = g.add_input("cond_in", DType::kBool, kScalar, body);
  ir::ValueId y_in = g.add_input("y_in", DType::kFloat32, xs, body);
  ir::ValueId y_out = g.add_value("y_out", DType::kFloat32, xs, body);
  ir::ValueId scan = g.add_value("scan", DType::kFloat32, xs, body);
  g.add_node("Add", {y_in, w}, {y_out}, {}, "body_add", body);
  g.add_node("Identity", {y_out}, {scan}, {}, "body_scan", body);
  ir::ValueId cond_out = cond_in;
  if (early_exit) {
    ir::ValueId sum = g.add_value("sum", DType::kFloat32, kScalar, body);
    cond_out = g.add_value("more", DType::kBool, kScalar, body);
    g.add_node("ReduceSum", {y_out}, {sum}, {{"keepdims", ir::Attribute::of_int(0)}}, "body_sum", body);
    g.add_node("Less", {sum, g.add_constant("limit", Tensor::scalar_f32(30.0f), body)}, {cond_out}, {}, "body_less",
               body);
  }
  g.add_output(cond_out, body);
  g.add_output(y_out, body);
  g.add_output(scan, body);
  ir::ValueId y = g.add_value("y", DType::kFloat32, xs);
  ir::ValueId ys = g.add_value("ys", DType::kFloat32, ir::SymShape({ir::Dim(), ir::Dim(4)}));
  g.add_node("Loop", {m, ir::kNoValue, x}, {y, ys}, {{"body", ir::Attribute::of_graph(body)}}, "loop");
  ir::ValueId shifted = g.add_value("shifted", DType::kFloat32, ir::SymShape({ir::Dim(), ir::Dim(4)}));
  ir::ValueId z = g.add_value("z", DType::kFloat32, ir::SymShape({ir::Dim(), ir::Dim(4)}));
  ir::ValueId after = g.add_value("after", DType::kFloat32, xs);
  g.add_node("Sub", {ys, g.add_constant("five", Tensor::scalar_f32(5.0f))}, {shifted}, {}, "shift");
  g.add_node("Relu", {shifted}, {z}, {}, "relu");
  g.add_node("Add", {y, w}, {after}, {}, "after");
  g.add_output(z);
  g.add_output(after);
  return g;
}

// With a host trip count and no early exit, the scan output's length is
// known before the run: the Loop runs on the device, its body writing row
// i of ys (at i * 4, the row from the device iteration counter); ys and
// its consumers are sized with the signature (no boundary).
TEST_F(VulkanDynamicShapeTest, LoopWithScanOutputRunsOnTheDevice) {
  ir::Graph g = scan_loop_graph(false);
  ASSERT_TRUE(ops::infer_graph_shapes(g).ok());
  const Tensor xv = Tensor::from_vector<float>({4}, {1.0f, -2.0f, 0.5f, 3.0f});
  for_each_storage(g, [&](VulkanModel& model) {
    ASSERT_EQ(model.plan().fallback_count(), 0u) << model.plan().fallback_reasons[0];
    EXPECT_EQ(steps_of(model.plan(), PlanStep::Kind::kLoop), 1u);
    // The trip count is a host value: each count is its own signature.
    run_cases(g, model,
              {{xv, Tensor::scalar_i64(3)}, {xv, Tensor::scalar_i64(1)}, {xv, Tensor::scalar_i64(5)},
               {xv, Tensor::scalar_i64(3)}},
              {true, true, true, false});
    // Zero iterations: z is [0, 4] (the reference kernel, which cannot see
    // the body's shapes when it does not run it, gives [0]).
    VulkanRunStats stats;
    auto got = model.run({xv, Tensor::scalar_i64(0)}, &stats);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    EXPECT_EQ((*got)[0].shape(), (Shape{0, 4}));
    for (int64_t i = 0; i < 4; ++i) EXPECT_FLOAT_EQ((*got)[1].get_f64(i), xv.get_f64(i) + xv.get_f64(i) * xv.get_f64(i));  // y = x
    EXPECT_EQ(stats.shader_compiles, 0u);
    ASSERT_EQ(stats.loops.size(), 1u);
    EXPECT_EQ(stats.loops[0].iterations, 0);
  });
}

// An early exit the device computes leaves the scan length unknown until
// the run: the Loop stays a host fallback (the reference executor runs its
// body), its outputs' shapes come from running it, at a boundary.
TEST_F(VulkanDynamicShapeTest, EarlyExitLoopWithScanOutputRunsOnTheHost) {
  ir::Graph g = scan_loop_graph(true);
  ASSERT_TRUE(ops::infer_graph_shapes(g).ok());
  const Tensor xv = Tensor::from_vector<float>({4}, {1.0f, -2.0f, 0.5f, 3.0f});  // sum(w) = 14.25
  for_each_storage(g, [&](VulkanModel& model) {
    ASSERT_EQ(model.plan().fallback_count(), 1u);
    EXPECT_NE(model.plan().fallback_reasons[0].find("early exit"), std::string::npos)
        << model.plan().fallback_reasons[0];
    // m = 5 ends after 3 iterations (sum 42.75), m = 2 after 2.
    run_cases(g, model, {{xv, Tensor::scalar_i64(5)}, {xv, Tensor::scalar_i64(2)}, {xv, Tensor::scalar_i64(5)}},
              {true, true, false});
  });
}

// ONNX's Range expanded into a Loop (the range_*_expanded node tests):
// n = max(ceil((limit - start) / delta), 0) and its condition n > 0 are
// computed on the device; the Loop carries prev += delta and scans prev.
// Both are read back at a sub-graph boundary before the loop, which then
// runs on the device with its scan output sized [n]: no fallback, one
// continuation per trip count.
TEST_F(VulkanDynamicShapeTest, LoopWithADeviceTripCountScansOnTheDevice) {
  ir::Graph g;
  ir::ValueId start = g.add_input("start", DType::kFloat32, kScalar);
  ir::ValueId limit = g.add_input("limit", DType::kFloat32, kScalar);
  ir::ValueId delta = g.add_input("delta", DType::kFloat32, kScalar);
  const char* names[] = {"diff", "ratio", "ceil", "relu"};
  ir::ValueId v[4];
  for (int i = 0; i < 4; ++i) v[i] = g.add_value(names[i], DType::kFloat32, kScalar);
  g.add_node("Sub", {limit, start}, {v[0]}, {}, "sub");
  g.add_node("Div", {v[0], delta}, {v[1]}, {}, "div");
  g.add_node("Ceil", {v[1]}, {v[2]}, {}, "ceil");
  g.add_node("Relu", {v[2]}, {v[3]}, {}, "relu");
  ir::ValueId trip = g.add_value("trip", DType::kInt64, kScalar);
  ir::ValueId go = g.add_value("go", DType::kBool, kScalar);
  g.add_node("Cast", {v[3]}, {trip}, {{"to", ir::Attribute::of_int(7)}}, "to_int");
  g.add_node("Cast", {v[3]}, {go}, {{"to", ir::Attribute::of_int(9)}}, "to_bool");
  const ir::RegionId body = g.add_region(ir::kMainRegion, "body");
  // Untyped parameters, as ONNX's function expansion leaves them: shape
  // inference types them from the node.
  g.add_input("i", DType::kUndefined, ir::SymShape::unranked(), body);
  ir::ValueId cond_in = g.add_input("cond", DType::kUndefined, ir::SymShape::unranked(), body);
  ir::ValueId prev = g.add_input("prev", DType::kUndefined, ir::SymShape::unranked(), body);
  ir::ValueId cond_out = g.add_value("cond_out", DType::kUndefined, ir::SymShape::unranked(), body);
  ir::ValueId current = g.add_value("current", DType::kUndefined, ir::SymShape::unranked(), body);
  ir::ValueId range = g.add_value("range", DType::kUndefined, ir::SymShape::unranked(), body);
  g.add_node("Identity", {cond_in}, {cond_out}, {}, "body_cond", body);
  g.add_node("Add", {prev, delta}, {current}, {}, "body_add", body);
  g.add_node("Identity", {prev}, {range}, {}, "body_range", body);
  g.add_output(cond_out, body);
  g.add_output(current, body);
  g.add_output(range, body);
  ir::ValueId last = g.add_value("last", DType::kUndefined, ir::SymShape::unranked());
  ir::ValueId out = g.add_value("out", DType::kUndefined, ir::SymShape::unranked());
  g.add_node("Loop", {trip, go, start}, {last, out}, {{"body", ir::Attribute::of_graph(body)}}, "loop");
  g.add_output(out);
  ASSERT_TRUE(ops::infer_graph_shapes(g).ok());
  ASSERT_TRUE(g.value(out).shape.has_rank);
  EXPECT_EQ(g.value(out).shape.rank(), 1u);
  auto f = [](float x) { return Tensor::scalar_f32(x); };
  for_each_storage(g, [&](VulkanModel& model) {
    ASSERT_EQ(model.plan().fallback_count(), 0u) << model.plan().fallback_reasons[0];
    // 4 values, 2, none (limit below start: the condition is false), 4 again.
    run_cases(g, model,
              {{f(0.0f), f(10.0f), f(3.0f)},
               {f(1.0f), f(2.0f), f(0.5f)},
               {f(5.0f), f(1.0f), f(1.0f)},
               {f(0.0f), f(10.0f), f(3.0f)}},
              {true, true, true, false});
  });
}

}  // namespace
}  // namespace kiln::runtime
