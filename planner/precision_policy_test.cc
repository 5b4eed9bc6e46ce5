// The fp16 precision policy (precision_policy.h): which tensors of a small
// residual network stay fp32 in an fp16 plan, and that the kernels bind them
// so (the re-packed conv weights included).
#include "planner/precision_policy.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "planner/execution_plan.h"
#include "planner/testing/op_check.h"

namespace kiln::planner {
namespace {

using testing::random_tensor;

ir::Attribute ints(std::vector<int64_t> v) { return ir::Attribute::of_ints(std::move(v)); }

std::vector<ir::Dim> dims(std::vector<ir::Dim> d) { return d; }

TEST(PrecisionPolicy, WeightNoLargerThanOneOutputImage) {
  const ir::Dim h = ir::Dim::symbol("h");
  // 8*8*3*3 = 576 weights: fp32 against 8*16*16 = 2048 outputs a image
  // (the batch does not count), fp16 against 8*2*2 = 32.
  EXPECT_TRUE(conv_weights_stay_f32(dims({8, 8, 3, 3}), dims({ir::Dim::symbol("n"), 8, 16, 16})));
  EXPECT_FALSE(conv_weights_stay_f32(dims({8, 8, 3, 3}), dims({64, 8, 2, 2})));
  EXPECT_TRUE(conv_weights_stay_f32(dims({8, 8, 3, 3}), dims({1, 8, 8, 9})));    // 576 = 576
  EXPECT_FALSE(conv_weights_stay_f32(dims({8, 8, 3, 3}), dims({1, 8, 8, 8})));   // 576 > 512
  // A symbolic image size counts as 1 x 1: the cost is not known small.
  EXPECT_FALSE(conv_weights_stay_f32(dims({8, 8, 3, 3}), dims({1, 8, h, h})));
  EXPECT_TRUE(conv_weights_stay_f32(dims({8, 1, 3, 3}), dims({1, 8, h, 16})));  // depthwise: 72 <= 128
}

// x -> conv_a (3x3, bias) -> Relu -> conv_b (1x1) -> Add x -> conv_c (3x3/2,
// bias) -> y. conv_a and conv_b have fewer weights than output elements,
// conv_c more (32*8*9 = 2304 > 32*8*8 = 2048).
struct Residual {
  ir::Graph g;
  ir::ValueId x, wa, ba, wb, s, wc, bc, y;
};

Residual residual_graph() {
  Residual r;
  ir::Graph& g = r.g;
  r.x = g.add_input("x", DType::kFloat32, ir::SymShape::from_concrete({1, 8, 16, 16}));
  r.wa = g.add_constant("wa", random_tensor({8, 8, 3, 3}, 1));
  r.ba = g.add_constant("ba", random_tensor({8}, 2));
  r.wb = g.add_constant("wb", random_tensor({8, 8, 1, 1}, 3));
  r.wc = g.add_constant("wc", random_tensor({32, 8, 3, 3}, 4));
  r.bc = g.add_constant("bc", random_tensor({32}, 5));
  const auto value = [&](const char* name, Shape shape) {
    return g.add_value(name, DType::kFloat32, ir::SymShape::from_concrete(shape));
  };
  const ir::ValueId a = value("a", {1, 8, 16, 16}), ar = value("ar", {1, 8, 16, 16}), b = value("b", {1, 8, 16, 16});
  r.s = value("s", {1, 8, 16, 16});
  r.y = value("y", {1, 32, 8, 8});
  g.add_node("Conv", {r.x, r.wa, r.ba}, {a}, {{"pads", ints({1, 1, 1, 1})}}, "conv_a");
  g.add_node("Relu", {a}, {ar});
  g.add_node("Conv", {ar, r.wb}, {b}, {}, "conv_b");
  g.add_node("Add", {b, r.x}, {r.s});
  g.add_node("Conv", {r.s, r.wc, r.bc}, {r.y}, {{"pads", ints({1, 1, 1, 1})}, {"strides", ints({2, 2})}}, "conv_c");
  g.add_output(r.y);
  return r;
}

TEST(PrecisionPolicy, KeepsEarlyConvWeightsF32) {
  Residual r = residual_graph();
  std::vector<std::vector<ir::Dim>> shapes;
  for (size_t i = 0; i < r.g.num_values(); ++i) shapes.push_back(r.g.value(static_cast<ir::ValueId>(i)).shape.dims);
  const std::vector<ElemType> f16 = choose_float_types(r.g, shapes, ElemType::kF16);
  for (ir::ValueId v : {r.wa, r.ba, r.wb}) EXPECT_EQ(f16[v], ElemType::kF32) << r.g.value(v).name;
  for (ir::ValueId v : {r.x, r.s, r.wc, r.bc, r.y}) EXPECT_EQ(f16[v], ElemType::kF16) << r.g.value(v).name;
  // An fp32 plan has nothing to keep.
  for (ElemType t : choose_float_types(r.g, shapes, ElemType::kF32)) EXPECT_EQ(t, ElemType::kF32);
}

// x -> Relu -> r -> QuantizeLinear -> q (uint8); r stays fp32 in an fp16
// plan (it is rounded to quantization steps next), x and the scale do not
// change; the quantize kernel reads r as fp32.
TEST(PrecisionPolicy, KeepsTheInputOfQuantizeLinearF32) {
  ir::Graph g;
  const ir::ValueId x = g.add_input("x", DType::kFloat32, ir::SymShape::from_concrete({2, 40}));
  const ir::ValueId r = g.add_value("r", DType::kFloat32, ir::SymShape::from_concrete({2, 40}));
  const ir::ValueId s = g.add_constant("s", Tensor::from_vector<float>({}, {0.05f}));
  const ir::ValueId q = g.add_value("q", DType::kUInt8, ir::SymShape::from_concrete({2, 40}));
  g.add_node("Relu", {x}, {r});
  g.add_node("QuantizeLinear", {r, s}, {q});
  g.add_output(q);
  std::vector<std::vector<ir::Dim>> shapes;
  for (size_t i = 0; i < g.num_values(); ++i) shapes.push_back(g.value(static_cast<ir::ValueId>(i)).shape.dims);
  const std::vector<ElemType> f16 = choose_float_types(g, shapes, ElemType::kF16);
  EXPECT_EQ(f16[r], ElemType::kF32);
  EXPECT_EQ(f16[x], ElemType::kF16);

  PlanOptions options;
  options.precision = ElemType::kF16;
  TargetInfo target;
  target.fp16_storage = true;
  auto plan = build_plan(g, target, options);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  bool found = false;
  for (const PlanStep& step : plan->steps) {
    if (step.kind != PlanStep::Kind::kDispatch || step.kernel.name != "quantize_linear") continue;
    found = true;
    EXPECT_EQ(step.kernel.tensors[0].layout.type, ElemType::kF32);
  }
  EXPECT_TRUE(found);
}

// In the plan: conv_a's and conv_b's kernels bind fp32 weights (conv_a's
// bias too), conv_c's fp16 ones, and every activation is fp16.
TEST(PrecisionPolicy, PlanBindsPolicyTypes) {
  Residual r = residual_graph();
  TargetInfo target;
  target.fp16_storage = true;
  for (Storage storage : {Storage::kBuffer, Storage::kImage}) {
    PlanOptions options;
    options.precision = ElemType::kF16;
    options.storage = storage;
    auto plan = build_plan(r.g, target, options);
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    const std::string listing = describe_plan(*plan, r.g);
    std::map<std::string, int> convs;
    for (const PlanStep& step : plan->steps) {
      ASSERT_EQ(step.kind, PlanStep::Kind::kDispatch) << listing;
      const ir::Node& node = r.g.node(step.node);
      if (node.op != "Conv") continue;
      const ElemType want = node.name == "conv_c" ? ElemType::kF16 : ElemType::kF32;
      for (const KernelTensor& t : step.kernel.tensors) {
        if (t.name == "W" || t.name == "Bias") {
          EXPECT_EQ(t.layout.type, want) << node.name << " " << t.name << "\n" << listing;
        }
        if (t.name == "X" || t.name == "Y") {
          EXPECT_EQ(t.layout.type, ElemType::kF16) << node.name << " " << t.name;
        }
        if (t.name == "W") ++convs[node.name];
      }
    }
    EXPECT_EQ(convs.size(), 3u) << listing;
    for (ir::ValueId v : {r.x, r.s, r.y})
      EXPECT_EQ(plan->tensors[static_cast<size_t>(plan->value_tensor.at(v))].layout.type, ElemType::kF16);
  }
}

}  // namespace
}  // namespace kiln::planner
