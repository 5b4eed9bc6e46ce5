// Tests of ConstantOfShape, Range, EyeLike, Trilu, OneHot and NonZero
// (tensor_gen.cc) against hand-computed values, including the symbolic
// lengths of Range and the data-dependent output of NonZero.
#include <gtest/gtest.h>

#include "engine/ops/op_registry.h"
#include "engine/ops/op_test_util.h"

namespace kiln::ops {
namespace {

using ir::Attribute;
using testing::infer;
using ir::Dim;
using ir::SymShape;
using testing::expect_near;
using testing::run_op;

Tensor f32(Shape s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), v); }
Tensor i64(Shape s, std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(std::move(s), v); }
std::vector<int64_t> ints(const Tensor& t) { return t.to_i64_vector(); }

Tensor run1(const std::string& op, const std::vector<Tensor>& in, std::map<std::string, Attribute> attrs = {},
            std::vector<bool> const_inputs = {}) {
  auto r = run_op(op, in, std::move(attrs), 1, std::move(const_inputs));
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? (*r)[0] : Tensor();
}

std::string run_err(const std::string& op, const std::vector<Tensor>& in, std::map<std::string, Attribute> attrs = {},
                    std::vector<bool> const_inputs = {}) {
  auto r = run_op(op, in, std::move(attrs), 1, std::move(const_inputs));
  EXPECT_FALSE(r.ok());
  return r.ok() ? std::string() : r.status().message();
}

ValueInfo scalar_dims(DType dt, Dim d) {
  ValueInfo v;
  v.dtype = dt;
  v.shape = SymShape(std::vector<Dim>{});
  v.dims_value = std::vector<Dim>{d};
  return v;
}

// -------------------------------------------------------- ConstantOfShape

TEST(ConstantOfShape, DefaultAndValue) {
  Tensor y = run1("ConstantOfShape", {i64({2}, {2, 3})}, {}, {true});
  EXPECT_EQ(y.dtype(), DType::kFloat32);
  expect_near(y, f32({2, 3}, std::vector<float>(6, 0.0f)));
  y = run1("ConstantOfShape", {i64({2}, {2, 2})}, {{"value", Attribute::of_tensor(Tensor::from_vector<int32_t>({1}, {7}))}},
           {true});
  EXPECT_EQ(y.dtype(), DType::kInt32);
  EXPECT_EQ(ints(y), (std::vector<int64_t>(4, 7)));
  y = run1("ConstantOfShape", {i64({0}, {})}, {{"value", Attribute::of_tensor(Tensor::scalar_f32(2.5f))}}, {true});
  EXPECT_EQ(y.shape(), Shape{});
  EXPECT_EQ(y.get_f64(0), 2.5);
  EXPECT_NE(run_err("ConstantOfShape", {i64({2}, {2, -1})}, {}, {true}).find("negative"), std::string::npos);
  EXPECT_NE(run_err("ConstantOfShape", {i64({1}, {2})}, {{"value", Attribute::of_tensor(f32({2}, {1, 2}))}}, {true})
                .find("one-element"),
            std::string::npos);
}

// ------------------------------------------------------------------ Range

TEST(Range, IntFloatAndNegativeDelta) {
  Tensor y = run1("Range", {Tensor::scalar_i64(3), Tensor::scalar_i64(10), Tensor::scalar_i64(3)});
  EXPECT_EQ(ints(y), (std::vector<int64_t>{3, 6, 9}));
  y = run1("Range", {Tensor::scalar_i64(10), Tensor::scalar_i64(4), Tensor::scalar_i64(-2)});
  EXPECT_EQ(ints(y), (std::vector<int64_t>{10, 8, 6}));
  y = run1("Range", {Tensor::scalar_i64(5), Tensor::scalar_i64(1), Tensor::scalar_i64(1)});
  EXPECT_EQ(y.shape(), (Shape{0}));
  y = run1("Range", {Tensor::scalar_f32(1.0f), Tensor::scalar_f32(2.0f), Tensor::scalar_f32(0.25f)});
  expect_near(y, f32({4}, {1.0f, 1.25f, 1.5f, 1.75f}));
  Tensor s = Tensor::from_vector<int32_t>({}, {0}), l = Tensor::from_vector<int32_t>({}, {5}),
         d = Tensor::from_vector<int32_t>({}, {2});
  y = run1("Range", {s, l, d});
  EXPECT_EQ(y.dtype(), DType::kInt32);
  EXPECT_EQ(ints(y), (std::vector<int64_t>{0, 2, 4}));
  EXPECT_NE(run_err("Range", {Tensor::scalar_i64(0), Tensor::scalar_i64(5), Tensor::scalar_i64(0)}).find("non-zero"),
            std::string::npos);
  EXPECT_NE(run_err("Range", {Tensor::scalar_i64(0), Tensor::scalar_f32(5), Tensor::scalar_i64(1)}).find("dtype"),
            std::string::npos);
}

TEST(Range, SymbolicLength) {
  const Dim s = Dim::symbol("s");
  auto r = infer("Range", {scalar_dims(DType::kInt64, 0), scalar_dims(DType::kInt64, s), scalar_dims(DType::kInt64, 1)});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].shape.to_string(), "[s]");
  r = infer("Range", {scalar_dims(DType::kInt64, 1), scalar_dims(DType::kInt64, s), scalar_dims(DType::kInt64, 2)});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].shape.dims[0].evaluate({{"s", 6}}), 3);  // 1, 3, 5
  EXPECT_EQ((*r)[0].shape.dims[0].evaluate({{"s", 0}}), 0);
  // Values not known at all: an unknown length.
  ValueInfo unknown;
  unknown.dtype = DType::kFloat32;
  unknown.shape = SymShape(std::vector<Dim>{});
  r = infer("Range", {unknown, unknown, unknown});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].shape.to_string(), "[?]");
  // Constants give a dims value, for shape computations.
  Tensor a = Tensor::scalar_i64(0), b = Tensor::scalar_i64(3), c = Tensor::scalar_i64(1);
  std::vector<ValueInfo> ins(3);
  const Tensor* ts[] = {&a, &b, &c};
  for (size_t i = 0; i < 3; ++i) {
    ins[i].dtype = DType::kInt64;
    ins[i].shape = SymShape(std::vector<Dim>{});
    ins[i].value = ts[i];
  }
  r = infer("Range", ins);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(SymShape(*(*r)[0].dims_value).to_string(), "[0,1,2]");
}

// ---------------------------------------------------------------- EyeLike

TEST(EyeLike, OffsetsAndDtype) {
  Tensor x = f32({3, 4}, std::vector<float>(12, 5.0f));
  Tensor y = run1("EyeLike", {x}, {{"k", Attribute::of_int(1)}});
  expect_near(y, f32({3, 4}, {0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}));
  y = run1("EyeLike", {x}, {{"k", Attribute::of_int(-2)}, {"dtype", Attribute::of_int(7)}});
  EXPECT_EQ(y.dtype(), DType::kInt64);
  EXPECT_EQ(ints(y), (std::vector<int64_t>{0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0}));
  EXPECT_NE(run_err("EyeLike", {f32({2}, {0, 0})}).find("2-D"), std::string::npos);
}

// ------------------------------------------------------------------ Trilu

TEST(Trilu, UpperLowerWithK) {
  Tensor x = Tensor::from_vector<int32_t>({3, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  EXPECT_EQ(ints(run1("Trilu", {x})), (std::vector<int64_t>{1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12}));
  EXPECT_EQ(ints(run1("Trilu", {x, Tensor::scalar_i64(1)})),
            (std::vector<int64_t>{0, 2, 3, 4, 0, 0, 7, 8, 0, 0, 0, 12}));
  EXPECT_EQ(ints(run1("Trilu", {x, Tensor::scalar_i64(-1)}, {{"upper", Attribute::of_int(0)}})),
            (std::vector<int64_t>{0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0}));
  EXPECT_EQ(ints(run1("Trilu", {x}, {{"upper", Attribute::of_int(0)}})),
            (std::vector<int64_t>{1, 0, 0, 0, 5, 6, 0, 0, 9, 10, 11, 0}));
  EXPECT_EQ(ints(run1("Trilu", {x, Tensor::scalar_i64(10)})), std::vector<int64_t>(12, 0));
  // Batched: every matrix is masked the same way.
  Tensor b = f32({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  expect_near(run1("Trilu", {b}), f32({2, 2, 2}, {1, 2, 0, 4, 5, 6, 0, 8}));
  EXPECT_NE(run_err("Trilu", {f32({3}, {1, 2, 3})}).find("rank >= 2"), std::string::npos);
}

// ----------------------------------------------------------------- OneHot

TEST(OneHot, AxisNegativeIndicesAndOutOfRange) {
  Tensor values = f32({2}, {0.0f, 5.0f});
  Tensor idx = i64({3}, {0, -1, 7});
  Tensor y = run1("OneHot", {idx, Tensor::scalar_i64(3), values});
  expect_near(y, f32({3, 3}, {5, 0, 0, 0, 0, 5, 0, 0, 0}));
  y = run1("OneHot", {idx, Tensor::scalar_f32(3.0f), values}, {{"axis", Attribute::of_int(0)}}, {false, true, false});
  expect_near(y, f32({3, 3}, {5, 0, 0, 0, 0, 0, 0, 5, 0}));
  Tensor idx2 = Tensor::from_vector<int32_t>({2, 2}, {1, 0, 2, 1});
  y = run1("OneHot", {idx2, Tensor::scalar_i64(3), i64({2}, {-1, 1})}, {{"axis", Attribute::of_int(1)}}, {false, true});
  ASSERT_EQ(y.shape(), (Shape{2, 3, 2}));
  // out[i][d][j] = (idx2[i][j] == d) ? 1 : -1
  EXPECT_EQ(ints(y), (std::vector<int64_t>{-1, 1, 1, -1, -1, -1, -1, -1, -1, 1, 1, -1}));
  EXPECT_NE(run_err("OneHot", {idx, Tensor::scalar_i64(3), values}, {{"axis", Attribute::of_int(2)}}).find("axis"),
            std::string::npos);
  EXPECT_NE(run_err("OneHot", {idx, Tensor::scalar_i64(3), f32({3}, {0, 1, 2})}).find("[off, on]"), std::string::npos);
}

// ---------------------------------------------------------------- NonZero

TEST(NonZero, CoordinatesAndScalar) {
  Tensor x = f32({2, 3}, {0, 1, 0, 2, 0, -0.0f});
  Tensor y = run1("NonZero", {x});
  EXPECT_EQ(y.dtype(), DType::kInt64);
  ASSERT_EQ(y.shape(), (Shape{2, 2}));
  EXPECT_EQ(ints(y), (std::vector<int64_t>{0, 1, 1, 0}));  // (0,1) and (1,0)
  Tensor b = Tensor::from_vector<bool>({4}, {true, false, true, true});
  EXPECT_EQ(ints(run1("NonZero", {b})), (std::vector<int64_t>{0, 2, 3}));
  EXPECT_EQ(run1("NonZero", {f32({2, 2}, {0, 0, 0, 0})}).shape(), (Shape{2, 0}));
  y = run1("NonZero", {Tensor::scalar_f32(3.0f)});
  EXPECT_EQ(y.shape(), (Shape{1, 1}));
  auto r = infer("NonZero", {[] {
                   ValueInfo v;
                   v.dtype = DType::kFloat32;
                   v.shape = SymShape({Dim::symbol("n"), 4});
                   return v;
                 }()});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].shape.to_string(), "[2,?]");
}

}  // namespace
}  // namespace kiln::ops
