// Differential tests of the elementwise lowerings (lower_elementwise.cc)
// against the reference executor, in every backend config (check_op).
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "engine/ops/op_registry.h"
#include "engine/runtime/reference_executor.h"
#include "engine/runtime/vulkan/vulkan_model.h"
#include "planner/lower_util.h"
#include "planner/testing/op_check.h"
#include "planner/testing/random_ints.h"
#include "platform/vulkan/vk_test_env.h"

namespace kiln::planner {
namespace {

using testing::check_op;
using testing::OpCheck;
using testing::random_ints;
using testing::random_tensor;

class LowerElementwise : public vk::testing::VulkanTest {};

ir::Attribute f_attr(float v) { return ir::Attribute::of_float(v); }
ir::Attribute i_attr(int64_t v) { return ir::Attribute::of_int(v); }
ir::Attribute s_attr(std::string v) { return ir::Attribute::of_string(std::move(v)); }

Tensor random_bools(const Shape& shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<bool> v(static_cast<size_t>(shape_numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = (rng() & 1) != 0;
  return Tensor::from_vector<bool>(shape, v);
}

OpCheck unary(const std::string& op, Tensor x, std::map<std::string, ir::Attribute> attrs = {}) {
  OpCheck c;
  c.op = op;
  c.inputs = {std::move(x)};
  c.attrs = std::move(attrs);
  c.tol_f32 = 1e-5;
  return c;
}

OpCheck binary(const std::string& op, Tensor a, Tensor b) {
  OpCheck c;
  c.op = op;
  c.inputs = {std::move(a), std::move(b)};
  c.tol_f32 = 1e-5;
  return c;
}

TEST_F(LowerElementwise, UnaryMathOnOddShapes) {
  struct Case {
    const char* op;
    float lo, hi;
  };
  const Case cases[] = {
      {"Relu", -2, 2},      {"Sigmoid", -8, 8},   {"Tanh", -4, 4},      {"Exp", -2, 2},       {"Log", 0.1f, 4},
      {"Sqrt", 0, 4},       {"Erf", -3, 3},       {"Neg", -2, 2},       {"Abs", -2, 2},       {"Reciprocal", 0.5f, 2},
      {"Floor", -3, 3},     {"Ceil", -3, 3},      {"Round", -3, 3},     {"Sin", -3, 3},       {"Cos", -3, 3},
      {"Tan", -1, 1},       {"Asin", -0.9f, 0.9f}, {"Acos", -0.9f, 0.9f}, {"Atan", -3, 3},    {"Sinh", -2, 2},
      {"Cosh", -2, 2},      {"Asinh", -2, 2},     {"Acosh", 1.1f, 3},   {"Atanh", -0.9f, 0.9f}, {"Softsign", -3, 3},
      {"Sign", -2, 2},      {"Softplus", -5, 5},  {"Mish", -3, 3},      {"HardSwish", -5, 5}, {"Gelu", -3, 3},
  };
  // The sweep runs the two configs that differ most (buffer reads by linear
  // index in f32, image reads by coordinates in f16); the other tests cover
  // all four.
  std::vector<testing::BackendConfig> configs = {{Storage::kBuffer, ElemType::kF32}};
  for (const testing::BackendConfig& c : testing::all_backend_configs())
    if (c.storage == Storage::kImage && c.precision == ElemType::kF16) configs.push_back(c);
  uint64_t seed = 1;
  for (const Case& k : cases) {
    SCOPED_TRACE(k.op);
    OpCheck c = unary(k.op, random_tensor({2, 3, 7}, seed++, k.lo, k.hi));
    c.configs = configs;
    EXPECT_TRUE(check_op(c));
  }
}

TEST_F(LowerElementwise, RoundHalvesToEven) {
  EXPECT_TRUE(check_op(unary("Round", Tensor::from_vector<float>({6}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.4f}))));
}

TEST_F(LowerElementwise, ActivationsWithAttributes) {
  const Tensor x = random_tensor({3, 5}, 7, -3, 3);
  EXPECT_TRUE(check_op(unary("Elu", x, {{"alpha", f_attr(0.7f)}})));
  EXPECT_TRUE(check_op(unary("Selu", x)));
  EXPECT_TRUE(check_op(unary("Celu", x, {{"alpha", f_attr(1.5f)}})));
  EXPECT_TRUE(check_op(unary("LeakyRelu", x, {{"alpha", f_attr(0.1f)}})));
  EXPECT_TRUE(check_op(unary("HardSigmoid", x, {{"alpha", f_attr(0.25f)}, {"beta", f_attr(0.4f)}})));
  EXPECT_TRUE(check_op(unary("ThresholdedRelu", x, {{"alpha", f_attr(0.5f)}})));
  EXPECT_TRUE(check_op(unary("Shrink", x, {{"lambd", f_attr(0.8f)}, {"bias", f_attr(0.3f)}})));
  EXPECT_TRUE(check_op(unary("Gelu", x, {{"approximate", s_attr("tanh")}})));
  OpCheck silu = unary("Silu", random_tensor({4, 9}, 8, -6, 6));
  silu.domain = "kiln";
  EXPECT_TRUE(check_op(silu));
}

TEST_F(LowerElementwise, NanAndInfinityTests) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = Tensor::from_vector<float>({6}, {1.0f, nan, inf, -inf, 0.0f, -2.0f});
  EXPECT_TRUE(check_op(unary("IsNaN", x)));
  EXPECT_TRUE(check_op(unary("IsInf", x)));
  EXPECT_TRUE(check_op(unary("IsInf", x, {{"detect_negative", i_attr(0)}})));
  EXPECT_TRUE(check_op(unary("Relu", x)));
}

TEST_F(LowerElementwise, IntegerUnary) {
  const Tensor x = random_ints<int32_t>({5, 3}, 3, -50, 50);
  for (const char* op : {"Relu", "Neg", "Abs", "Sign"}) {
    SCOPED_TRACE(op);
    EXPECT_TRUE(check_op(unary(op, x)));
  }
  EXPECT_TRUE(check_op(unary("Abs", Tensor::from_vector<int8_t>({3}, {-3, 4, -128}))));
  EXPECT_TRUE(check_op(unary("Not", random_bools({7}, 4))));
}

TEST_F(LowerElementwise, BinaryBroadcasting) {
  struct Shapes {
    Shape a, b;
  };
  const Shapes shapes[] = {
      {{}, {}},               {{2, 3, 5}, {2, 3, 5}}, {{2, 3, 5}, {5}},       {{2, 1, 5}, {3, 1}},          {{}, {7}},
      {{6}, {}},              {{4, 1}, {1, 3}},       {{2, 1, 3, 1, 5}, {1, 4, 1, 2, 1}}, {{1, 8, 3, 3}, {8, 1, 1}},
  };
  uint64_t seed = 100;
  for (const Shapes& s : shapes) {
    SCOPED_TRACE(shape_to_string(s.a) + " + " + shape_to_string(s.b));
    const Tensor a = random_tensor(s.a, seed++);
    const Tensor b = random_tensor(s.b, seed++);
    EXPECT_TRUE(check_op(binary("Add", a, b)));
  }
}

TEST_F(LowerElementwise, BinaryFloatOps) {
  const Tensor a = random_tensor({3, 7}, 11, -3, 3), b = random_tensor({3, 7}, 12, 0.5f, 2);
  for (const char* op : {"Sub", "Div", "Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual"}) {
    SCOPED_TRACE(op);
    EXPECT_TRUE(check_op(binary(op, a, b)));
  }
  OpCheck mod = binary("Mod", a, random_tensor({7}, 13, 0.5f, 2));
  mod.attrs["fmod"] = i_attr(1);
  EXPECT_TRUE(check_op(mod));
  // One-element constants are baked into the kernel as literals.
  for (const char* op : {"Div", "Sub", "Greater"}) {
    SCOPED_TRACE(std::string(op) + " by a constant");
    OpCheck c = binary(op, a, Tensor::from_vector<float>({1}, {0.37f}));
    c.constant_inputs = {1};
    EXPECT_TRUE(check_op(c));
  }
  OpCheck square = binary("Pow", a, Tensor::from_vector<float>({}, {2.0f}));
  square.constant_inputs = {1};
  EXPECT_TRUE(check_op(square));
  OpCheck isub = binary("Sub", Tensor::from_vector<int64_t>({}, {10}), Tensor::from_vector<int64_t>({3}, {1, -2, 30}));
  isub.constant_inputs = {0};
  EXPECT_TRUE(check_op(isub));
  // Equality needs equal values to be meaningful.
  EXPECT_TRUE(check_op(binary("Equal", Tensor::from_vector<float>({4}, {1, 2, 3, 4}),
                              Tensor::from_vector<float>({4}, {1, 0, 3, 5}))));
}

TEST_F(LowerElementwise, Pow) {
  const Tensor base = random_tensor({2, 9}, 21, 0.1f, 2);
  EXPECT_TRUE(check_op(binary("Pow", base, random_tensor({9}, 22, -2, 2))));
  EXPECT_TRUE(check_op(binary("Pow", random_tensor({2, 9}, 23, -2, 2), Tensor::from_vector<float>({}, {2}))));
  EXPECT_TRUE(check_op(binary("Pow", random_tensor({2, 9}, 24, -2, 2), Tensor::from_vector<int64_t>({}, {3}))));
  EXPECT_TRUE(check_op(binary("Pow", Tensor::from_vector<int32_t>({4}, {2, 3, -2, 2}),
                              Tensor::from_vector<int64_t>({4}, {10, 0, 3, -1}))));
}

TEST_F(LowerElementwise, IntegerBinary) {
  const Tensor a = random_ints<int32_t>({4, 5}, 31, -100, 100);
  const Tensor b = Tensor::from_vector<int32_t>({5}, {3, -7, 1, -1, 9});
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Mod", "Greater", "Equal"}) {
    SCOPED_TRACE(op);
    EXPECT_TRUE(check_op(binary(op, a, b)));
  }
  OpCheck fmod = binary("Mod", a, b);
  fmod.attrs["fmod"] = i_attr(1);
  EXPECT_TRUE(check_op(fmod));
  EXPECT_TRUE(check_op(binary("Add", random_ints<int64_t>({3, 1}, 32, -1000, 1000),
                              random_ints<int64_t>({4}, 33, -1000, 1000))));
  // uint8 wraps at 8 bits.
  EXPECT_TRUE(check_op(binary("Mul", Tensor::from_vector<uint8_t>({3}, {200, 7, 16}),
                              Tensor::from_vector<uint8_t>({3}, {2, 3, 16}))));
  OpCheck shift = binary("BitShift", Tensor::from_vector<uint8_t>({3}, {1, 128, 255}),
                         Tensor::from_vector<uint8_t>({3}, {1, 1, 8}));
  shift.attrs["direction"] = s_attr("LEFT");
  EXPECT_TRUE(check_op(shift));
  shift.attrs["direction"] = s_attr("RIGHT");
  EXPECT_TRUE(check_op(shift));
}

TEST_F(LowerElementwise, Logic) {
  const Tensor a = random_bools({3, 4}, 41), b = random_bools({4}, 42);
  for (const char* op : {"And", "Or", "Xor", "Equal"}) {
    SCOPED_TRACE(op);
    EXPECT_TRUE(check_op(binary(op, a, b)));
  }
}

TEST_F(LowerElementwise, VariadicAndWhere) {
  for (const char* op : {"Max", "Min", "Sum", "Mean"}) {
    SCOPED_TRACE(op);
    OpCheck c;
    c.op = op;
    c.inputs = {random_tensor({2, 3, 5}, 51), random_tensor({5}, 52), random_tensor({2, 1, 1}, 53)};
    EXPECT_TRUE(check_op(c));
  }
  OpCheck one;
  one.op = "Sum";
  one.inputs = {random_tensor({9}, 54)};
  EXPECT_TRUE(check_op(one));
  OpCheck imax;
  imax.op = "Max";
  imax.inputs = {random_ints<int64_t>({2, 5}, 55, -9, 9), random_ints<int64_t>({5}, 56, -9, 9)};
  EXPECT_TRUE(check_op(imax));
  OpCheck where;
  where.op = "Where";
  where.inputs = {random_bools({2, 1, 5}, 57), random_tensor({3, 5}, 58), random_tensor({}, 59)};
  EXPECT_TRUE(check_op(where));
  where.inputs = {random_bools({4}, 60), random_ints<int64_t>({4}, 61, -5, 5), random_ints<int64_t>({1}, 62, -5, 5)};
  EXPECT_TRUE(check_op(where));
  where.constant_inputs = {2};  // a literal fill, as masked_fill exports it
  where.inputs = {random_bools({2, 5}, 63), random_tensor({2, 5}, 64), Tensor::from_vector<float>({}, {-1e4f})};
  EXPECT_TRUE(check_op(where));
}

TEST_F(LowerElementwise, PReluAndClip) {
  EXPECT_TRUE(check_op(binary("PRelu", random_tensor({1, 6, 3, 5}, 71), random_tensor({6, 1, 1}, 72))));
  EXPECT_TRUE(check_op(binary("PRelu", random_tensor({2, 7}, 73), random_tensor({7}, 74))));
  OpCheck clip;
  clip.op = "Clip";
  clip.inputs = {random_tensor({2, 3, 5}, 75, -2, 2), Tensor::from_vector<float>({}, {-0.5f}),
                 Tensor::from_vector<float>({}, {0.75f})};
  clip.constant_inputs = {1, 2};
  EXPECT_TRUE(check_op(clip));
  clip.inputs[1] = Tensor();  // only a max
  EXPECT_TRUE(check_op(clip));
  clip.inputs = {random_tensor({2, 3, 5}, 76, -2, 2), Tensor::from_vector<float>({}, {0.0f}),
                 Tensor::from_vector<float>({}, {6.0f})};
  clip.constant_inputs = {};  // bounds on the device (ReLU6 fed by other nodes)
  EXPECT_TRUE(check_op(clip));
  clip.inputs = {random_ints<int32_t>({9}, 77, -20, 20), Tensor::from_vector<int32_t>({}, {-5}),
                 Tensor::from_vector<int32_t>({}, {5})};
  clip.constant_inputs = {1, 2};
  EXPECT_TRUE(check_op(clip));
}

TEST_F(LowerElementwise, Cast) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor f = Tensor::from_vector<float>({8}, {1.7f, -1.7f, 0.0f, 300.0f, -300.0f, nan, 2e4f, 0.2f});
  // ONNX dtype numbers: 1 float, 2 uint8, 3 int8, 6 int32, 7 int64, 9 bool, 10 float16.
  for (int64_t to : {2, 3, 6, 7, 9, 10}) {
    SCOPED_TRACE(to);
    OpCheck c = unary("Cast", f, {{"to", i_attr(to)}});
    c.tol_f32 = 1e-3;  // float16 rounding
    EXPECT_TRUE(check_op(c));
  }
  const Tensor i = Tensor::from_vector<int64_t>({5}, {0, 5, -1, 300, -129});
  for (int64_t to : {1, 3, 6, 9}) {
    SCOPED_TRACE(to);
    EXPECT_TRUE(check_op(unary("Cast", i, {{"to", i_attr(to)}})));
  }
  EXPECT_TRUE(check_op(unary("Cast", random_bools({2, 3}, 81), {{"to", i_attr(1)}})));
  EXPECT_TRUE(check_op(unary("Cast", random_tensor({3, 5}, 82, -9, 9), {{"to", i_attr(1)}})));
  OpCheck like = binary("CastLike", random_tensor({6}, 83, -9, 9), Tensor::from_vector<int64_t>({}, {0}));
  EXPECT_TRUE(check_op(like));
}

// The text helpers other lowerings share (lower_util.h).
TEST(LowerUtil, Literals) {
  EXPECT_EQ(glsl_float(3.0), "3.0");
  EXPECT_EQ(glsl_float(0.1), "0.100000001");
  EXPECT_EQ(glsl_float(1e20), "1.00000002e+20");
  EXPECT_EQ(glsl_float(std::numeric_limits<double>::infinity()), "uintBitsToFloat(0x7f800000u)");
  EXPECT_EQ(glsl_int(-3), "(-3)");
  EXPECT_EQ(glsl_int(std::numeric_limits<int64_t>::min()), "(-2147483647 - 1)");
  EXPECT_EQ(glsl_int(std::numeric_limits<int64_t>::max()), "2147483647");
  EXPECT_EQ(coord_list(0), "oc0");
  EXPECT_EQ(coord_list(3), "oc0, oc1, oc2");
}

TEST(LowerUtil, BroadcastCoordinatesOnSymbolicDims) {
  const ir::Dim n = ir::Dim::symbol("n"), m = ir::Dim::symbol("m");
  // Same symbol passes through, a constant 1 reads 0, an undecided dim selects at run time.
  EXPECT_EQ(join_args(broadcast_coords("x", {n, ir::Dim(1), m}, {ir::Dim(2), n, ir::Dim(4), ir::Dim(5)})),
            "oc1, 0, (x_D2 == 1 ? 0 : oc3)");
  EXPECT_EQ(join_args(broadcast_coords("x", {}, {n})), "0");
  KernelTensor t;
  t.name = "a";
  t.shape = {n, ir::Dim(3)};
  EXPECT_EQ(broadcast_load(t, {n, ir::Dim(3)}), "a_ld(oi)");
  t.layout.storage = Storage::kImage;
  EXPECT_EQ(broadcast_load(t, {n, ir::Dim(3)}), "a_at(oc0, oc1)");
}

// A chain over symbolic dims, where broadcasting is decided at run time:
// a [n, m] + b [n, 5] -> Transpose -> Concat with itself -> Slice -> Where.
TEST_F(LowerElementwise, SymbolicDimsAcrossRuns) {
  ir::Graph g;
  const ir::Dim n = ir::Dim::symbol("n"), m = ir::Dim::symbol("m");
  const ir::ValueId a = g.add_input("a", DType::kFloat32, ir::SymShape({n, m}));
  const ir::ValueId b = g.add_input("b", DType::kFloat32, ir::SymShape({n, ir::Dim(5)}));
  auto value = [&](const char* name) { return g.add_value(name, DType::kUndefined, ir::SymShape()); };
  const ir::ValueId s = value("s"), t = value("t"), u = value("u"), w = value("w"), c = value("c"), y = value("y");
  const ir::ValueId starts = g.add_constant("starts", Tensor::from_vector<int64_t>({1}, {1}));
  const ir::ValueId ends = g.add_constant("ends", Tensor::from_vector<int64_t>({1}, {std::numeric_limits<int64_t>::max()}));
  const ir::ValueId axes = g.add_constant("axes", Tensor::from_vector<int64_t>({1}, {1}));
  const ir::ValueId zero = g.add_constant("zero", Tensor::from_vector<float>({}, {0.0f}));
  g.add_node("Add", {a, b}, {s});
  g.add_node("Transpose", {s}, {t});
  g.add_node("Concat", {t, t}, {u}, {{"axis", i_attr(1)}});
  g.add_node("Slice", {u, starts, ends, axes}, {w});
  g.add_node("Greater", {w, zero}, {c});
  g.add_node("Where", {c, w, zero}, {y});
  g.add_output(y);
  for (ir::NodeId id : g.main().nodes) {
    const ir::Node& node = g.node(id);
    std::vector<ops::ValueInfo> infos;
    for (ir::ValueId v : node.inputs) {
      ops::ValueInfo info;
      info.dtype = g.value(v).dtype;
      info.shape = g.value(v).shape;
      if (g.value(v).is_constant()) info.value = &g.value(v).constant;
      infos.push_back(info);
    }
    auto out = ops::infer_node(*ops::OpRegistry::builtin().find("", node.op), node, infos);
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    g.value(node.outputs[0]).dtype = (*out)[0].dtype;
    g.value(node.outputs[0]).shape = (*out)[0].shape;
  }
  runtime::ReferenceExecutor reference(g);
  for (Storage storage : {Storage::kBuffer, Storage::kImage}) {
    runtime::VulkanModelOptions options;
    options.plan.storage = storage;
    auto model = runtime::VulkanModel::compile(device(), *vk::testing::test_kernel_cache(), g, options);
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    EXPECT_EQ((*model)->plan().fallback_count(), 0u);
    uint64_t seed = 900;
    for (int64_t rows : {2, 3}) {
      for (int64_t cols : {1, 5}) {
        SCOPED_TRACE(std::string(storage_name(storage)) + " n=" + std::to_string(rows) + " m=" + std::to_string(cols));
        const std::vector<Tensor> in = {random_tensor({rows, cols}, seed++), random_tensor({rows, 5}, seed++)};
        auto want = reference.run(in);
        auto got = (*model)->run(in);
        ASSERT_TRUE(want.ok()) << want.status().to_string();
        ASSERT_TRUE(got.ok()) << got.status().to_string();
        ASSERT_EQ((*want)[0].shape(), (*got)[0].shape());
        for (int64_t i = 0; i < (*want)[0].numel(); ++i)
          ASSERT_NEAR((*want)[0].get_f64(i), (*got)[0].get_f64(i), 1e-6) << "element " << i;
      }
    }
  }
}

}  // namespace
}  // namespace kiln::planner
