// Tests for the elementwise op family (elementwise*.cc): each op against
// hand-computed values, broadcasting, dtype corners (fp16, wrap-around,
// saturating casts), symbolic inference with dims values, and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "engine/ops/op_registry.h"
#include "engine/ops/op_test_util.h"

namespace kiln::ops {
namespace {

using testing::expect_near;
using testing::run_op;
using testing::infer;
using testing::info;
using Attrs = std::map<std::string, ir::Attribute>;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

Tensor f32(Shape s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), v); }
template <typename T>
Tensor tensor(Shape s, std::vector<T> v) {
  return Tensor::from_vector<T>(std::move(s), v);
}
Tensor bools(Shape s, std::vector<bool> v) {
  auto t = Tensor::allocate(DType::kBool, std::move(s));
  Tensor out = std::move(t).value();
  for (size_t i = 0; i < v.size(); ++i) out.data<bool>()[i] = v[i];
  return out;
}

// Runs a one-output op; a failure is reported and gives an undefined tensor.
Tensor run1(const std::string& op, const std::vector<Tensor>& inputs, Attrs attrs = {}) {
  auto r = run_op(op, inputs, std::move(attrs));
  if (!r.ok()) {
    ADD_FAILURE() << op << ": " << r.status().to_string();
    return Tensor();
  }
  return (*r)[0];
}

Status run_status(const std::string& op, const std::vector<Tensor>& inputs, Attrs attrs = {}) {
  auto r = run_op(op, inputs, std::move(attrs));
  return r.ok() ? ok_status() : r.status();
}

void expect_error(const Status& s, const std::string& substr, StatusCode code = StatusCode::kInvalidArgument) {
  ASSERT_FALSE(s.ok()) << "expected an error containing '" << substr << "'";
  EXPECT_EQ(s.code(), code) << s.to_string();
  EXPECT_NE(s.message().find(substr), std::string::npos) << s.to_string();
}

// Exact comparison (integers, bools, and floats that must be exact or infinite).
template <typename T>
void expect_exact(const Tensor& t, Shape shape, std::vector<T> values) {
  ASSERT_TRUE(t.defined());
  ASSERT_EQ(dtype_name(t.dtype()), dtype_name(dtype_of<T>()));
  ASSERT_EQ(shape_to_string(t.shape()), shape_to_string(shape));
  for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(t.data<T>()[i], values[i]) << "element " << i;
}
void expect_bools(const Tensor& t, Shape shape, std::vector<bool> values) {
  ASSERT_TRUE(t.defined());
  ASSERT_EQ(t.dtype(), DType::kBool);
  ASSERT_EQ(shape_to_string(t.shape()), shape_to_string(shape));
  for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(t.data<bool>()[i], values[i]) << "element " << i;
}

Attrs attr_f(const std::string& k, float v) { return {{k, ir::Attribute::of_float(v)}}; }
Attrs attr_i(const std::string& k, int64_t v) { return {{k, ir::Attribute::of_int(v)}}; }
Attrs attr_s(const std::string& k, std::string v) { return {{k, ir::Attribute::of_string(std::move(v))}}; }

// --- registration -------------------------------------------------------------

TEST(ElementwiseTest, EveryOpIsRegistered) {
  for (const char* op :
       {"Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Erf", "Neg", "Abs", "Reciprocal", "Floor", "Ceil", "Round",
        "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Softsign", "Not",
        "Sign", "Softplus", "Elu", "Selu", "Gelu", "LeakyRelu", "HardSigmoid", "HardSwish", "Celu", "Mish", "IsNaN",
        "IsInf", "Add", "Sub", "Mul", "Div", "Pow", "Mod", "Max", "Min", "Sum", "Mean", "Equal", "Greater", "Less",
        "GreaterOrEqual", "LessOrEqual", "And", "Or", "Xor", "BitShift", "Where", "Clip", "Cast", "CastLike", "PRelu",
        "Shrink", "ThresholdedRelu"}) {
    EXPECT_NE(OpRegistry::builtin().find("", op), nullptr) << op;
  }
}

// A duplicate registration is dropped silently (register_* return void), so
// check that no other family claims an op of this one or of reductions.
TEST(ElementwiseTest, NoOtherFamilyRegistersTheseOps) {
  OpRegistry mine;
  register_elementwise_ops(mine);
  register_reduction_ops(mine);
  EXPECT_GT(mine.all().size(), 80u);
  for (void (*family)(OpRegistry&) : {&register_linalg_ops, &register_pooling_ops, &register_data_movement_ops,
                                      &register_control_flow_ops}) {
    OpRegistry other;
    family(other);
    for (const OpSchema* op : other.all()) EXPECT_EQ(mine.find(op->domain, op->name), nullptr) << op->name;
  }
}

// --- unary ----------------------------------------------------------------------

TEST(ElementwiseTest, Relu) {
  expect_near(run1("Relu", {f32({5}, {-2, -0.5f, 0, 0.5f, 2})}), f32({5}, {0, 0, 0, 0.5f, 2}));
  expect_exact<int32_t>(run1("Relu", {tensor<int32_t>({3}, {-7, 0, 7})}), {3}, {0, 0, 7});
}

TEST(ElementwiseTest, SigmoidIsStableAtExtremes) {
  expect_near(run1("Sigmoid", {f32({5}, {-2, 0, 2, -100, 100})}),
              f32({5}, {0.11920292f, 0.5f, 0.88079708f, 3.7200760e-44f, 1.0f}), 1e-7, 1e-6);
}

// kiln::Silu must give exactly what the Sigmoid -> Mul it replaces gives, so
// that a fusion pass leaves f32 outputs bit-identical.
TEST(ElementwiseTest, KilnSiluMatchesSigmoidTimesInputExactly) {
  const Tensor x = testing::random_f32({64}, 7, -20.0f, 20.0f);
  ir::Graph g;
  const ir::ValueId in = g.add_input("x", DType::kFloat32, ir::SymShape::from_concrete({64}));
  const ir::ValueId s = g.add_value("s", DType::kUndefined, ir::SymShape());
  const ir::ValueId mul = g.add_value("mul", DType::kUndefined, ir::SymShape());
  const ir::ValueId silu = g.add_value("silu", DType::kUndefined, ir::SymShape());
  g.add_node("Sigmoid", {in}, {s});
  g.add_node("Mul", {in, s}, {mul});
  const ir::NodeId fused = g.add_node("Silu", {in}, {silu});
  g.node(fused).domain = kKilnDomain;
  g.add_output(mul);
  g.add_output(silu);
  runtime::ReferenceExecutor exec(g);
  auto out = exec.run({x});
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  ASSERT_EQ((*out)[1].dtype(), DType::kFloat32);
  for (int64_t i = 0; i < x.numel(); ++i)
    EXPECT_EQ((*out)[0].data<float>()[i], (*out)[1].data<float>()[i]) << "element " << i;
  EXPECT_NEAR((*out)[1].get_f64(0), x.get_f64(0) / (1.0 + std::exp(-x.get_f64(0))), 1e-5);
  // Only in Kiln's domain: an ONNX-domain "Silu" is not an op.
  EXPECT_EQ(OpRegistry::builtin().find("", "Silu"), nullptr);
  EXPECT_NE(OpRegistry::builtin().find(kKilnDomain, "Silu"), nullptr);
}

TEST(ElementwiseTest, MathFunctions) {
  expect_near(run1("Tanh", {f32({2}, {0.5f, -2})}), f32({2}, {0.46211716f, -0.96402758f}));
  expect_near(run1("Exp", {f32({2}, {1, -1})}), f32({2}, {2.7182818f, 0.36787944f}));
  // expect_near cannot compare infinities (inf - inf is NaN): check them exactly.
  Tensor log = run1("Log", {f32({3}, {2, 0, -1})});
  ASSERT_TRUE(log.defined());
  EXPECT_NEAR(log.get_f64(0), 0.69314718, 1e-6);
  EXPECT_EQ(log.get_f64(1), -kInf);
  EXPECT_TRUE(std::isnan(log.get_f64(2)));
  expect_near(run1("Sqrt", {f32({2}, {4, 2})}), f32({2}, {2, 1.4142136f}));
  expect_near(run1("Erf", {f32({2}, {0.5f, -1})}), f32({2}, {0.52049988f, -0.84270079f}));
  expect_near(run1("Reciprocal", {f32({2}, {4, -0.5f})}), f32({2}, {0.25f, -2}));
  expect_near(run1("Floor", {f32({2}, {-1.5f, 1.5f})}), f32({2}, {-2, 1}));
  expect_near(run1("Ceil", {f32({2}, {-1.5f, 1.5f})}), f32({2}, {-1, 2}));
  expect_near(run1("Sin", {f32({1}, {1})}), f32({1}, {0.84147098f}));
  expect_near(run1("Cos", {f32({1}, {1})}), f32({1}, {0.54030231f}));
  expect_near(run1("Tan", {f32({1}, {0.5f})}), f32({1}, {0.54630249f}));
  expect_near(run1("Atan", {f32({1}, {1})}), f32({1}, {0.78539816f}));
  expect_near(run1("Asinh", {f32({1}, {1})}), f32({1}, {0.88137359f}));
  expect_near(run1("Cosh", {f32({1}, {1})}), f32({1}, {1.5430806f}));
  expect_near(run1("Asin", {f32({1}, {0.5f})}), f32({1}, {0.52359878f}));
  expect_near(run1("Acos", {f32({1}, {0.5f})}), f32({1}, {1.0471976f}));
  expect_near(run1("Sinh", {f32({1}, {1})}), f32({1}, {1.1752012f}));
  expect_near(run1("Acosh", {f32({1}, {2})}), f32({1}, {1.3169579f}));
  expect_near(run1("Atanh", {f32({1}, {0.5f})}), f32({1}, {0.54930614f}));
  expect_near(run1("Softsign", {f32({2}, {1, -3})}), f32({2}, {0.5f, -0.75f}));
}

TEST(ElementwiseTest, RoundHalfToEven) {
  expect_near(run1("Round", {f32({8}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.4f, 2.6f, -2.6f})}),
              f32({8}, {0, 2, 2, -0.0f, -2, 2, 3, -3}));
}

TEST(ElementwiseTest, NegAbsSignOnFloatsAndInts) {
  expect_near(run1("Neg", {f32({2}, {1.5f, -2})}), f32({2}, {-1.5f, 2}));
  const int32_t kMin = std::numeric_limits<int32_t>::min();
  expect_exact<int32_t>(run1("Neg", {tensor<int32_t>({3}, {5, -5, kMin})}), {3}, {-5, 5, kMin});
  expect_near(run1("Abs", {f32({2}, {-1.5f, 2})}), f32({2}, {1.5f, 2}));
  expect_exact<int8_t>(run1("Abs", {tensor<int8_t>({3}, {-3, 4, -128})}), {3}, {3, 4, -128});
  expect_exact<uint8_t>(run1("Abs", {tensor<uint8_t>({2}, {200, 0})}), {2}, {200, 0});
  expect_near(run1("Sign", {f32({4}, {-3, 0, 2, kNaN})}), f32({4}, {-1, 0, 1, kNaN}));
  expect_exact<int64_t>(run1("Sign", {tensor<int64_t>({3}, {-9, 0, 9})}), {3}, {-1, 0, 1});
}

TEST(ElementwiseTest, Not) {
  expect_bools(run1("Not", {bools({2}, {true, false})}), {2}, {false, true});
}

TEST(ElementwiseTest, SmoothActivations) {
  expect_near(run1("Softplus", {f32({4}, {0, 1, -1, 100})}), f32({4}, {0.69314718f, 1.3132617f, 0.31326169f, 100}));
  expect_near(run1("Mish", {f32({2}, {1, -1})}), f32({2}, {0.86509839f, -0.30340146f}));
  expect_near(run1("Elu", {f32({2}, {-1, 1})}, attr_f("alpha", 2)), f32({2}, {-1.2642411f, 1}));
  expect_near(run1("Selu", {f32({2}, {-1, 1})}), f32({2}, {-1.1113307f, 1.0507010f}));
  expect_near(run1("Celu", {f32({2}, {-1, 1})}, attr_f("alpha", 2)), f32({2}, {-0.78693868f, 1}));
  expect_near(run1("Gelu", {f32({2}, {1, -1})}), f32({2}, {0.84134475f, -0.15865525f}));
  expect_near(run1("Gelu", {f32({2}, {1, -1})}, attr_s("approximate", "tanh")), f32({2}, {0.84119199f, -0.15880801f}));
}

TEST(ElementwiseTest, PiecewiseActivations) {
  expect_near(run1("LeakyRelu", {f32({3}, {-2, 0, 3})}, attr_f("alpha", 0.1f)), f32({3}, {-0.2f, 0, 3}));
  expect_near(run1("LeakyRelu", {f32({1}, {-1})}), f32({1}, {-0.01f}));
  expect_near(run1("HardSigmoid", {f32({4}, {-3, 0, 1, 5})}), f32({4}, {0, 0.5f, 0.7f, 1}));
  expect_near(run1("HardSwish", {f32({3}, {-4, 1, 4})}), f32({3}, {0, 0.66666667f, 4}));
  expect_near(run1("ThresholdedRelu", {f32({3}, {0.5f, 1, 2})}), f32({3}, {0, 0, 2}));
  Attrs shrink = {{"lambd", ir::Attribute::of_float(1.5f)}, {"bias", ir::Attribute::of_float(0.5f)}};
  expect_near(run1("Shrink", {f32({5}, {-2, -1, 0, 1, 2})}, shrink), f32({5}, {-1.5f, 0, 0, 0, 1.5f}));
  expect_exact<int32_t>(run1("Shrink", {tensor<int32_t>({3}, {-4, 0, 4})}, shrink), {3}, {-3, 0, 3});
}

TEST(ElementwiseTest, IsNaNAndIsInf) {
  const Tensor x = f32({4}, {1, kNaN, kInf, -kInf});
  expect_bools(run1("IsNaN", {x}), {4}, {false, true, false, false});
  expect_bools(run1("IsInf", {x}), {4}, {false, false, true, true});
  expect_bools(run1("IsInf", {x}, attr_i("detect_negative", 0)), {4}, {false, false, true, false});
}

TEST(ElementwiseTest, UnaryOnHalfAndDouble) {
  Tensor h = f32({3}, {-1, 0.5f, 2}).cast(DType::kFloat16).value();
  Tensor y = run1("Relu", {h});
  ASSERT_EQ(y.dtype(), DType::kFloat16);
  expect_near(y.cast(DType::kFloat32).value(), f32({3}, {0, 0.5f, 2}));
  Tensor e = run1("Exp", {f32({1}, {1}).cast(DType::kFloat16).value()});
  EXPECT_NEAR(e.get_f64(0), 2.71828, 2e-3);  // fp16 has ~3 decimal digits
  Tensor d = run1("Exp", {tensor<double>({1}, {1.0})});
  ASSERT_EQ(d.dtype(), DType::kFloat64);
  EXPECT_DOUBLE_EQ(d.data<double>()[0], std::exp(1.0));
}

TEST(ElementwiseTest, UnaryErrors) {
  expect_error(run_status("Sqrt", {tensor<int32_t>({1}, {4})}), "Sqrt accepts float");
  expect_error(run_status("Not", {f32({1}, {1})}), "accepts bool");
  expect_error(run_status("Gelu", {f32({1}, {1})}, attr_s("approximate", "fast")), "'approximate'");
  expect_error(run_status("Celu", {f32({1}, {1})}, attr_f("alpha", 0)), "'alpha' must be non-zero");
}

TEST(ElementwiseTest, LongContiguousRunMatchesScalarFormula) {
  std::vector<float> x(1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) * 0.01f - 5.0f;
  Tensor y = run1("Sigmoid", {f32({10, 100}, x)});
  ASSERT_TRUE(y.defined());
  for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(y.data<float>()[i], 1.0 / (1.0 + std::exp(-x[i])), 1e-6);
}

// --- binary -----------------------------------------------------------------------

TEST(ElementwiseTest, ArithmeticSameShape) {
  const Tensor a = f32({2, 2}, {1, 2, 3, 4}), b = f32({2, 2}, {10, 20, 30, 40});
  expect_near(run1("Add", {a, b}), f32({2, 2}, {11, 22, 33, 44}));
  expect_near(run1("Sub", {a, b}), f32({2, 2}, {-9, -18, -27, -36}));
  expect_near(run1("Mul", {a, b}), f32({2, 2}, {10, 40, 90, 160}));
  expect_near(run1("Div", {a, b}), f32({2, 2}, {0.1f, 0.1f, 0.1f, 0.1f}));
}

TEST(ElementwiseTest, BroadcastRowColumnScalar) {
  const Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_near(run1("Add", {a, f32({3}, {10, 20, 30})}), f32({2, 3}, {11, 22, 33, 14, 25, 36}));
  expect_near(run1("Add", {a, f32({2, 1}, {10, 20})}), f32({2, 3}, {11, 12, 13, 24, 25, 26}));
  expect_near(run1("Sub", {f32({}, {10}), a}), f32({2, 3}, {9, 8, 7, 6, 5, 4}));
  expect_near(run1("Mul", {f32({2, 1}, {1, 2}), f32({1, 3}, {1, 10, 100})}), f32({2, 3}, {1, 10, 100, 2, 20, 200}));
}

TEST(ElementwiseTest, BroadcastInterleavedAxes) {
  // [2,1,3] + [2,1]: the middle axis comes from b, the outer and inner from a.
  const Tensor a = f32({2, 1, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b = f32({2, 1}, {10, 20});
  expect_near(run1("Add", {a, b}), f32({2, 2, 3}, {11, 12, 13, 21, 22, 23, 14, 15, 16, 24, 25, 26}));
  // [3,1,2] * [1,2,1]: neither input spans a contiguous suffix.
  const Tensor c = f32({3, 1, 2}, {1, 2, 3, 4, 5, 6});
  const Tensor d = f32({1, 2, 1}, {1, -1});
  expect_near(run1("Mul", {c, d}), f32({3, 2, 2}, {1, 2, -1, -2, 3, 4, -3, -4, 5, 6, -5, -6}));
}

TEST(ElementwiseTest, BroadcastError) {
  Status s = run_status("Add", {f32({3}, {1, 2, 3}), f32({4}, {1, 2, 3, 4})});
  expect_error(s, "cannot broadcast input shapes [3] and [4]");
  EXPECT_NE(s.message().find("test_Add"), std::string::npos) << s.message();
  expect_error(run_status("Add", {f32({1}, {1}), tensor<int32_t>({1}, {1})}), "same dtype");
}

TEST(ElementwiseTest, IntegerArithmeticWrapsAndTruncates) {
  const int32_t kMax = std::numeric_limits<int32_t>::max(), kMin = std::numeric_limits<int32_t>::min();
  expect_exact<int32_t>(run1("Add", {tensor<int32_t>({1}, {kMax}), tensor<int32_t>({1}, {1})}), {1}, {kMin});
  expect_exact<int32_t>(run1("Div", {tensor<int32_t>({5}, {7, -7, 7, -7, kMin}), tensor<int32_t>({5}, {2, 2, -2, -2, -1})}),
                        {5}, {3, -3, -3, 3, kMin});
  expect_exact<uint8_t>(run1("Mul", {tensor<uint8_t>({1}, {200}), tensor<uint8_t>({1}, {2})}), {1}, {144});
  expect_exact<int64_t>(run1("Sub", {tensor<int64_t>({2}, {5, 1}), tensor<int64_t>({}, {3})}), {2}, {2, -2});
}

TEST(ElementwiseTest, IntegerDivisionByZeroIsAnError) {
  expect_error(run_status("Div", {tensor<int64_t>({2}, {1, 2}), tensor<int64_t>({2}, {1, 0})}), "division by zero");
  expect_error(run_status("Mod", {tensor<int32_t>({1}, {1}), tensor<int32_t>({1}, {0})}), "division by zero");
  // Float division by zero is IEEE.
  expect_exact<float>(run1("Div", {f32({2}, {1, -1}), f32({2}, {0, 0})}), {2}, {kInf, -kInf});
}

TEST(ElementwiseTest, Mod) {
  const Tensor a = tensor<int32_t>({4}, {5, -5, 5, -5}), b = tensor<int32_t>({4}, {3, 3, -3, -3});
  expect_exact<int32_t>(run1("Mod", {a, b}), {4}, {2, 1, -1, -2});                      // Python: divisor's sign
  expect_exact<int32_t>(run1("Mod", {a, b}, attr_i("fmod", 1)), {4}, {2, -2, 2, -2});  // C: dividend's sign
  expect_near(run1("Mod", {f32({2}, {5.5f, -5.5f}), f32({}, {2})}, attr_i("fmod", 1)), f32({2}, {1.5f, -1.5f}));
  expect_error(run_status("Mod", {f32({1}, {1}), f32({1}, {1})}), "fmod=1");
}

TEST(ElementwiseTest, Pow) {
  expect_near(run1("Pow", {f32({2}, {2, 3}), f32({2}, {3, 0.5f})}), f32({2}, {8, 1.7320508f}));
  expect_near(run1("Pow", {f32({2}, {1.5f, -2}), f32({}, {2})}), f32({2}, {2.25f, 4}));
  expect_near(run1("Pow", {f32({2}, {1.5f, -2}), tensor<int64_t>({}, {3})}), f32({2}, {3.375f, -8}));
  expect_exact<int32_t>(run1("Pow", {tensor<int32_t>({4}, {2, 3, -2, 2}), tensor<int64_t>({4}, {10, 0, 3, -1})}), {4},
                        {1024, 1, -8, 0});
  expect_exact<int64_t>(run1("Pow", {tensor<int64_t>({1}, {3}), tensor<int64_t>({1}, {39})}), {1},
                        {4052555153018976267LL});  // exact beyond 2^53
  expect_exact<int32_t>(run1("Pow", {tensor<int32_t>({2}, {4, 9}), f32({}, {0.5f})}), {2}, {2, 3});
  expect_error(run_status("Pow", {f32({2}, {1, 2}), f32({3}, {1, 2, 3})}), "cannot broadcast");
}

TEST(ElementwiseTest, VariadicMaxMinSumMean) {
  const Tensor a = f32({2}, {1, 5}), b = f32({}, {3}), c = f32({2, 1}, {0, 4});
  expect_near(run1("Max", {a, b, c}), f32({2, 2}, {3, 5, 4, 5}));
  expect_near(run1("Min", {a, b, c}), f32({2, 2}, {0, 0, 1, 3}));
  expect_near(run1("Sum", {a, b, c}), f32({2, 2}, {4, 8, 8, 12}));
  expect_near(run1("Mean", {f32({2}, {1, 2}), f32({2}, {3, 4}), f32({2}, {5, 6})}), f32({2}, {3, 4}));
  expect_near(run1("Max", {f32({2}, {kNaN, 1}), f32({2}, {0, kNaN})}), f32({2}, {kNaN, kNaN}));
  expect_near(run1("Sum", {a}), a);
  expect_exact<int64_t>(run1("Max", {tensor<int64_t>({2}, {-1, 7}), tensor<int64_t>({2}, {2, 3})}), {2}, {2, 7});
  expect_exact<int32_t>(run1("Sum", {tensor<int32_t>({2}, {1, 2}), tensor<int32_t>({1}, {10})}), {2}, {11, 12});
  expect_error(run_status("Mean", {tensor<int32_t>({1}, {1})}), "Mean accepts float");
  expect_error(run_status("Max", {a, f32({3}, {1, 2, 3})}), "cannot broadcast input 1");
}

TEST(ElementwiseTest, Comparisons) {
  const Tensor a = f32({3}, {1, 2, 3}), b = f32({}, {2});
  expect_bools(run1("Equal", {a, b}), {3}, {false, true, false});
  expect_bools(run1("Greater", {a, b}), {3}, {false, false, true});
  expect_bools(run1("Less", {a, b}), {3}, {true, false, false});
  expect_bools(run1("GreaterOrEqual", {a, b}), {3}, {false, true, true});
  expect_bools(run1("LessOrEqual", {a, b}), {3}, {true, true, false});
  expect_bools(run1("Equal", {bools({2}, {true, false}), bools({2, 1}, {true, false})}), {2, 2},
               {true, false, false, true});
  expect_bools(run1("Less", {tensor<int64_t>({2}, {-1, 5}), tensor<int64_t>({2}, {0, 5})}), {2}, {true, false});
  expect_bools(run1("Equal", {f32({1}, {kNaN}), f32({1}, {kNaN})}), {1}, {false});
  expect_error(run_status("Greater", {bools({1}, {true}), bools({1}, {false})}), "accepts float or int");
}

TEST(ElementwiseTest, Logic) {
  const Tensor a = bools({4}, {true, true, false, false}), b = bools({4}, {true, false, true, false});
  expect_bools(run1("And", {a, b}), {4}, {true, false, false, false});
  expect_bools(run1("Or", {a, b}), {4}, {true, true, true, false});
  expect_bools(run1("Xor", {a, b}), {4}, {false, true, true, false});
  expect_error(run_status("And", {f32({1}, {1}), f32({1}, {1})}), "accepts bool");
}

TEST(ElementwiseTest, BitShift) {
  expect_exact<uint8_t>(run1("BitShift", {tensor<uint8_t>({3}, {1, 128, 255}), tensor<uint8_t>({3}, {1, 1, 8})},
                             attr_s("direction", "LEFT")),
                        {3}, {2, 0, 0});
  expect_exact<uint32_t>(run1("BitShift", {tensor<uint32_t>({2}, {16, 255}), tensor<uint32_t>({2}, {4, 1})},
                              attr_s("direction", "RIGHT")),
                         {2}, {1, 127});
  expect_error(run_status("BitShift", {tensor<uint8_t>({1}, {1}), tensor<uint8_t>({1}, {1})}), "'direction'");
}

TEST(ElementwiseTest, WhereThreeWayBroadcast) {
  const Tensor cond = bools({2, 1}, {true, false});
  expect_near(run1("Where", {cond, f32({3}, {1, 2, 3}), f32({}, {9})}), f32({2, 3}, {1, 2, 3, 9, 9, 9}));
  expect_exact<int64_t>(run1("Where", {bools({3}, {false, true, false}), tensor<int64_t>({1}, {1}),
                                       tensor<int64_t>({3}, {7, 8, 9})}),
                        {3}, {7, 1, 9});
  expect_error(run_status("Where", {f32({1}, {1}), f32({1}, {1}), f32({1}, {1})}), "condition) must be bool");
  expect_error(run_status("Where", {bools({2}, {true, false}), f32({3}, {1, 2, 3}), f32({1}, {1})}),
               "cannot broadcast");
}

TEST(ElementwiseTest, Clip) {
  const Tensor x = f32({4}, {-2, 0.5f, 3, kNaN});
  expect_near(run1("Clip", {x, f32({}, {0}), f32({}, {1})}), f32({4}, {0, 0.5f, 1, kNaN}));
  expect_near(run1("Clip", {x, Tensor(), f32({1}, {1})}), f32({4}, {-2, 0.5f, 1, kNaN}));
  expect_near(run1("Clip", {x}), x);
  expect_exact<int32_t>(run1("Clip", {tensor<int32_t>({3}, {-5, 5, 50}), tensor<int32_t>({}, {0}), tensor<int32_t>({}, {10})}),
                        {3}, {0, 5, 10});
  expect_near(run1("Clip", {f32({2}, {0, 5}), f32({}, {3}), f32({}, {1})}), f32({2}, {1, 1}));  // min > max
  expect_error(run_status("Clip", {x, f32({2}, {0, 1})}), "must be a scalar");
  expect_error(run_status("Clip", {x, tensor<double>({}, {0.0})}), "same dtype");
}

TEST(ElementwiseTest, PRelu) {
  expect_near(run1("PRelu", {f32({2, 3}, {-1, 2, -3, 4, -5, 6}), f32({3}, {0.1f, 0.2f, 0.3f})}),
              f32({2, 3}, {-0.1f, 2, -0.9f, 4, -1.0f, 6}));
  expect_near(run1("PRelu", {f32({2, 2}, {-1, -2, -3, 4}), f32({2, 1}, {0.5f, 2})}), f32({2, 2}, {-0.5f, -1, -6, 4}));
  expect_error(run_status("PRelu", {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({2}, {1, 2})}), "does not broadcast");
}

TEST(ElementwiseTest, HalfBinary) {
  Tensor a = f32({2}, {1.5f, -2}).cast(DType::kFloat16).value();
  Tensor b = f32({1}, {0.25f}).cast(DType::kFloat16).value();
  Tensor y = run1("Add", {a, b});
  ASSERT_EQ(y.dtype(), DType::kFloat16);
  expect_near(y.cast(DType::kFloat32).value(), f32({2}, {1.75f, -1.75f}));
  expect_bools(run1("Greater", {a, b}), {2}, {true, false});
}

// --- Cast -------------------------------------------------------------------------

Attrs to(int64_t onnx_dtype) { return attr_i("to", onnx_dtype); }

TEST(ElementwiseTest, CastFloatToIntSaturatesAndTruncates) {
  const Tensor x = f32({6}, {1.7f, -1.7f, kNaN, 1e10f, -1e10f, kInf});
  const int32_t kMax = std::numeric_limits<int32_t>::max(), kMin = std::numeric_limits<int32_t>::min();
  expect_exact<int32_t>(run1("Cast", {x}, to(6)), {6}, {1, -1, 0, kMax, kMin, kMax});
  expect_exact<uint8_t>(run1("Cast", {f32({3}, {-5, 300, 2.9f})}, to(2)), {3}, {0, 255, 2});
  expect_exact<int64_t>(run1("Cast", {f32({2}, {9.3e18f, -9.3e18f})}, to(7)), {2},
                        {std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()});
}

TEST(ElementwiseTest, CastBetweenIntsWrapsAndToBoolTestsNonZero) {
  expect_exact<int8_t>(run1("Cast", {tensor<int64_t>({2}, {300, -129})}, to(3)), {2}, {44, 127});
  expect_exact<uint16_t>(run1("Cast", {tensor<int32_t>({1}, {-1})}, to(4)), {1}, {65535});
  expect_bools(run1("Cast", {tensor<int32_t>({3}, {0, 5, -1})}, to(9)), {3}, {false, true, true});
  expect_bools(run1("Cast", {f32({3}, {0, 0.1f, kNaN})}, to(9)), {3}, {false, true, true});
  expect_near(run1("Cast", {bools({2}, {true, false})}, to(1)), f32({2}, {1, 0}));
  expect_exact<double>(run1("Cast", {tensor<uint64_t>({1}, {1ULL << 60})}, to(11)), {1}, {1152921504606846976.0});
}

TEST(ElementwiseTest, CastHalfRoundTrip) {
  Tensor h = run1("Cast", {f32({3}, {1.5f, 65504, 1e6f})}, to(10));
  ASSERT_EQ(h.dtype(), DType::kFloat16);
  expect_exact<float>(run1("Cast", {h}, to(1)), {3}, {1.5f, 65504, kInf});
  expect_exact<int16_t>(run1("Cast", {h}, to(5)), {3}, {1, 32767, 32767});
}

TEST(ElementwiseTest, CastLikeAndErrors) {
  expect_exact<int64_t>(run1("CastLike", {f32({2}, {2.5f, -2.5f}), tensor<int64_t>({}, {0})}), {2}, {2, -2});
  expect_error(run_status("Cast", {f32({1}, {1})}, to(8)), "not supported", StatusCode::kUnimplemented);
  expect_error(run_status("Cast", {f32({1}, {1})}), "missing int attribute 'to'");
}

// --- symbolic inference -------------------------------------------------------------

TEST(ElementwiseTest, SymbolicBroadcastInference) {
  auto r = infer("Mul", {info(DType::kFloat32, {ir::Dim(1), ir::Dim::symbol("s")}),
                         info(DType::kFloat32, {ir::Dim(4), ir::Dim(1)})});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].shape.to_string(), "[4,s]");
  auto cmp = infer("Less", {info(DType::kInt64, {ir::Dim::symbol("n")}), info(DType::kInt64, {})});
  ASSERT_TRUE(cmp.ok());
  EXPECT_EQ((*cmp)[0].dtype, DType::kBool);
  EXPECT_EQ((*cmp)[0].shape.to_string(), "[n]");
  auto where = infer("Where", {info(DType::kBool, {ir::Dim::symbol("b"), ir::Dim(1)}), info(DType::kFloat16, {ir::Dim(8)}),
                               info(DType::kFloat16, {})});
  ASSERT_TRUE(where.ok());
  EXPECT_EQ((*where)[0].shape.to_string(), "[b,8]");
  auto unranked = infer("Add", {ValueInfo{DType::kFloat32, ir::SymShape::unranked(), nullptr, std::nullopt},
                                info(DType::kFloat32, {ir::Dim(3)})});
  ASSERT_TRUE(unranked.ok());
  EXPECT_FALSE((*unranked)[0].shape.has_rank);
  auto bad = infer("Add", {info(DType::kFloat32, {ir::Dim(3)}), info(DType::kFloat32, {ir::Dim(4)})});
  expect_error(bad.status(), "node 'sym' (Add): cannot broadcast input shapes [3] and [4]");
}

TEST(ElementwiseTest, ShapeArithmeticPropagatesDims) {
  const ir::Dim s = ir::Dim::symbol("s");
  ValueInfo shape = info(DType::kInt64, {ir::Dim(2)});
  shape.dims_value = std::vector<ir::Dim>{s, ir::Dim(4)};
  const Tensor two = tensor<int64_t>({}, {2});
  ValueInfo c2 = info(DType::kInt64, {});
  c2.value = &two;

  auto add = infer("Add", {shape, c2});
  ASSERT_TRUE(add.ok()) << add.status().to_string();
  ASSERT_TRUE((*add)[0].dims_value.has_value());
  EXPECT_EQ((*add)[0].dims_value->at(0).to_string(), "(s+2)");
  EXPECT_EQ((*add)[0].dims_value->at(1).to_string(), "6");

  auto mul = infer("Mul", {shape, c2});
  ASSERT_TRUE(mul.ok());
  ValueInfo doubled = info(DType::kInt64, {ir::Dim(2)});
  doubled.dims_value = (*mul)[0].dims_value;
  auto div = infer("Div", {doubled, c2});
  ASSERT_TRUE(div.ok());
  ASSERT_TRUE((*div)[0].dims_value.has_value());
  EXPECT_TRUE((*div)[0].dims_value->at(0).same_as(s)) << (*div)[0].dims_value->at(0).to_string();
  EXPECT_EQ((*div)[0].dims_value->at(1).to_string(), "4");

  auto sub = infer("Sub", {shape, shape});
  ASSERT_TRUE(sub.ok());
  EXPECT_EQ((*sub)[0].dims_value->at(0).to_string(), "0");

  auto cast = infer("Cast", {shape}, to(6));
  ASSERT_TRUE(cast.ok());
  EXPECT_EQ((*cast)[0].dtype, DType::kInt32);
  ASSERT_TRUE((*cast)[0].dims_value.has_value());
  EXPECT_TRUE((*cast)[0].dims_value->at(0).same_as(s));

  // Float arithmetic is not shape arithmetic.
  ValueInfo fshape = info(DType::kFloat32, {ir::Dim(2)});
  auto fadd = infer("Add", {fshape, fshape});
  ASSERT_TRUE(fadd.ok());
  EXPECT_FALSE((*fadd)[0].dims_value.has_value());
  // Large int tensors are data, not shapes: no dims value.
  const Tensor ids = Tensor::from_vector<int64_t>({100}, std::vector<int64_t>(100, 1));
  ValueInfo big = info(DType::kInt64, {ir::Dim(100)});
  big.value = &ids;
  auto big_add = infer("Add", {big, c2});
  ASSERT_TRUE(big_add.ok());
  EXPECT_FALSE((*big_add)[0].dims_value.has_value());
  // Casting to float drops the dims.
  auto fcast = infer("Cast", {shape}, to(1));
  ASSERT_TRUE(fcast.ok());
  EXPECT_FALSE((*fcast)[0].dims_value.has_value());
}

TEST(ElementwiseTest, ConstantShapeDivisionTruncates) {
  const Tensor neg = tensor<int64_t>({2}, {-1, 7});
  const Tensor two = tensor<int64_t>({1}, {2});
  ValueInfo a = info(DType::kInt64, {ir::Dim(2)});
  a.value = &neg;
  ValueInfo b = info(DType::kInt64, {ir::Dim(1)});
  b.value = &two;
  auto div = infer("Div", {a, b});
  ASSERT_TRUE(div.ok());
  ASSERT_TRUE((*div)[0].dims_value.has_value());
  EXPECT_EQ((*div)[0].dims_value->at(0).value(), 0);  // -1/2 truncates like the kernel
  EXPECT_EQ((*div)[0].dims_value->at(1).value(), 3);
}

}  // namespace
}  // namespace kiln::ops
