// Tests for the reduction family (reduction.cc): Reduce*, ArgMax/ArgMin,
// CumSum and TopK against hand-computed values, axis handling, empty
// reductions, symbolic inference and error messages.
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
Tensor i64(Shape s, std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(std::move(s), v); }

std::vector<Tensor> run(const std::string& op, const std::vector<Tensor>& inputs, Attrs attrs = {},
                        size_t num_outputs = 1) {
  auto r = run_op(op, inputs, std::move(attrs), num_outputs);
  if (!r.ok()) {
    ADD_FAILURE() << op << ": " << r.status().to_string();
    return std::vector<Tensor>(num_outputs);
  }
  return std::move(r).value();
}
Tensor run1(const std::string& op, const std::vector<Tensor>& inputs, Attrs attrs = {}) {
  return run(op, inputs, std::move(attrs))[0];
}

void expect_error(const std::string& op, const std::vector<Tensor>& inputs, Attrs attrs, const std::string& substr,
                  size_t num_outputs = 1) {
  auto r = run_op(op, inputs, std::move(attrs), num_outputs);
  ASSERT_FALSE(r.ok()) << op << " should fail with '" << substr << "'";
  EXPECT_NE(r.status().message().find(substr), std::string::npos) << r.status().to_string();
}

void expect_i64(const Tensor& t, Shape shape, std::vector<int64_t> values) {
  ASSERT_TRUE(t.defined());
  ASSERT_EQ(t.dtype(), DType::kInt64);
  ASSERT_EQ(shape_to_string(t.shape()), shape_to_string(shape));
  EXPECT_EQ(t.to_i64_vector(), values);
}

Attrs keepdims(int64_t k) { return {{"keepdims", ir::Attribute::of_int(k)}}; }

const Tensor& x23() {
  static const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  return x;
}

// --- Reduce* -------------------------------------------------------------------

TEST(ReductionTest, ReduceSumAxesAndKeepdims) {
  expect_near(run1("ReduceSum", {x23(), i64({1}, {1})}), f32({2, 1}, {6, 15}));
  expect_near(run1("ReduceSum", {x23(), i64({1}, {-1})}, keepdims(0)), f32({2}, {6, 15}));
  expect_near(run1("ReduceSum", {x23(), i64({1}, {0})}), f32({1, 3}, {5, 7, 9}));
  expect_near(run1("ReduceSum", {x23()}), f32({1, 1}, {21}));                      // no axes: all
  expect_near(run1("ReduceSum", {x23(), i64({0}, {})}, keepdims(0)), f32({}, {21}));  // empty axes: all
  expect_near(run1("ReduceSum", {x23(), i64({0}, {})}, {{"noop_with_empty_axes", ir::Attribute::of_int(1)}}),
              x23());
}

TEST(ReductionTest, ReduceFamilyValues) {
  const Tensor axis1 = i64({1}, {1});
  expect_near(run1("ReduceMean", {x23(), i64({2}, {0, 1})}, keepdims(0)), f32({}, {3.5f}));
  expect_near(run1("ReduceMax", {x23(), axis1}), f32({2, 1}, {3, 6}));
  expect_near(run1("ReduceMin", {x23(), axis1}), f32({2, 1}, {1, 4}));
  expect_near(run1("ReduceProd", {x23(), axis1}), f32({2, 1}, {6, 120}));
  const Tensor s = f32({2, 2}, {-1, 2, 3, -4});
  expect_near(run1("ReduceL1", {s, axis1}), f32({2, 1}, {3, 7}));
  expect_near(run1("ReduceL2", {s, axis1}), f32({2, 1}, {2.2360680f, 5}));
  expect_near(run1("ReduceSumSquare", {s, axis1}), f32({2, 1}, {5, 25}));
  expect_near(run1("ReduceLogSumExp", {x23(), axis1}), f32({2, 1}, {3.4076060f, 6.4076060f}));
  // Large inputs do not overflow exp().
  expect_near(run1("ReduceLogSumExp", {f32({2}, {1000, 1000})}, keepdims(0)), f32({}, {1000.6931472f}));
}

TEST(ReductionTest, NonContiguousAxes) {
  // x[i,j,k] = 6i + 2j + k; summing over i and k leaves 14 + 8j.
  std::vector<float> v(12);
  for (int i = 0; i < 12; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i);
  const Tensor x = f32({2, 3, 2}, v);
  expect_near(run1("ReduceSum", {x, i64({2}, {0, 2})}, keepdims(0)), f32({3}, {14, 22, 30}));
  expect_near(run1("ReduceMax", {x, i64({2}, {2, 0})}), f32({1, 3, 1}, {7, 9, 11}));
  // Reducing the middle axis keeps outer and inner.
  expect_near(run1("ReduceMean", {x, i64({1}, {1})}, keepdims(0)), f32({2, 2}, {2, 3, 8, 9}));
}

TEST(ReductionTest, IntegerReductionsAreExact) {
  const int64_t big = int64_t{1} << 53;
  expect_i64(run1("ReduceSum", {i64({2}, {big, 1})}, keepdims(0)), {}, {big + 1});  // double would round
  expect_i64(run1("ReduceMean", {i64({2}, {1, 2})}, keepdims(0)), {}, {1});
  expect_i64(run1("ReduceMax", {i64({3}, {-5, 9, 2})}, keepdims(0)), {}, {9});
  Tensor t = run1("ReduceProd", {Tensor::from_vector<int32_t>({3}, {2, -3, 4})}, keepdims(0));
  ASSERT_EQ(t.dtype(), DType::kInt32);
  EXPECT_EQ(t.data<int32_t>()[0], -24);
}

TEST(ReductionTest, EmptyReductionGivesIdentity) {
  const Tensor empty = f32({2, 0}, {});
  const Tensor axis1 = i64({1}, {1});
  expect_near(run1("ReduceSum", {empty, axis1}, keepdims(0)), f32({2}, {0, 0}));
  expect_near(run1("ReduceProd", {empty, axis1}, keepdims(0)), f32({2}, {1, 1}));
  // Infinities compared exactly (expect_near's inf - inf is NaN).
  EXPECT_EQ(run1("ReduceMax", {empty, axis1}, keepdims(0)).to_f32_vector(), (std::vector<float>{-kInf, -kInf}));
  EXPECT_EQ(run1("ReduceMin", {empty, axis1}, keepdims(0)).to_f32_vector(), (std::vector<float>{kInf, kInf}));
  Tensor imax = run1("ReduceMax", {Tensor::from_vector<int32_t>({0}, {})}, keepdims(0));
  ASSERT_EQ(imax.dtype(), DType::kInt32);
  EXPECT_EQ(imax.data<int32_t>()[0], std::numeric_limits<int32_t>::min());
}

TEST(ReductionTest, NaNPropagatesThroughMaxAndMin) {
  expect_near(run1("ReduceMax", {f32({3}, {1, kNaN, 3})}, keepdims(0)), f32({}, {kNaN}));
  expect_near(run1("ReduceMin", {f32({3}, {kNaN, 1, 3})}, keepdims(0)), f32({}, {kNaN}));
}

TEST(ReductionTest, ReduceErrors) {
  expect_error("ReduceSum", {x23(), i64({1}, {2})}, {}, "axis 2 is out of range for an input of rank 2");
  expect_error("ReduceMean", {x23(), i64({2}, {1, -1})}, {}, "repeated");
  expect_error("ReduceSum", {x23(), f32({1}, {1})}, {}, "axes) must be an integer tensor");
}

// --- symbolic inference -------------------------------------------------------------

TEST(ReductionTest, SymbolicInference) {
  const ir::Dim b = ir::Dim::symbol("b"), s = ir::Dim::symbol("s");
  const ValueInfo x = info(DType::kFloat32, {b, s, ir::Dim(768)});
  const Tensor last = i64({1}, {-1});
  ValueInfo axes = info(DType::kInt64, {ir::Dim(1)});
  axes.value = &last;
  auto known = infer("ReduceMean", {x, axes});
  ASSERT_TRUE(known.ok()) << known.status().to_string();
  EXPECT_EQ((*known)[0].shape.to_string(), "[b,s,1]");

  // Axes computed at run time: with keepdims the rank is still known.
  const ValueInfo unknown_axes = info(DType::kInt64, {ir::Dim(1)});
  auto kept = infer("ReduceSum", {info(DType::kFloat32, {b, ir::Dim(1), s}), unknown_axes});
  ASSERT_TRUE(kept.ok());
  ASSERT_TRUE((*kept)[0].shape.has_rank);
  EXPECT_EQ((*kept)[0].shape.rank(), 3);
  EXPECT_TRUE((*kept)[0].shape.dims[0].is_unknown());
  EXPECT_EQ((*kept)[0].shape.dims[1].value(), 1);
  // Without keepdims, n distinct axes drop n dims (which ones is unknown);
  // an axes input of unknown length leaves the rank unknown.
  auto dropped = infer("ReduceSum", {x, unknown_axes}, keepdims(0));
  ASSERT_TRUE(dropped.ok());
  ASSERT_TRUE((*dropped)[0].shape.has_rank);
  EXPECT_EQ((*dropped)[0].shape.rank(), 2);
  EXPECT_TRUE((*dropped)[0].shape.dims[0].is_unknown());
  auto any_length = infer("ReduceSum", {x, info(DType::kInt64, {ir::Dim::symbol("n")})}, keepdims(0));
  ASSERT_TRUE(any_length.ok());
  EXPECT_FALSE((*any_length)[0].shape.has_rank);

  auto arg = infer("ArgMax", {x}, {{"axis", ir::Attribute::of_int(1)}, {"keepdims", ir::Attribute::of_int(0)}});
  ASSERT_TRUE(arg.ok());
  EXPECT_EQ((*arg)[0].dtype, DType::kInt64);
  EXPECT_EQ((*arg)[0].shape.to_string(), "[b,768]");

  const Tensor k = i64({1}, {5});
  ValueInfo kinfo = info(DType::kInt64, {ir::Dim(1)});
  kinfo.value = &k;
  auto topk = infer("TopK", {x, kinfo}, {}, 2);
  ASSERT_TRUE(topk.ok());
  EXPECT_EQ((*topk)[0].shape.to_string(), "[b,s,5]");
  EXPECT_EQ((*topk)[1].dtype, DType::kInt64);
}

// --- ArgMax / ArgMin -----------------------------------------------------------------

TEST(ReductionTest, ArgMaxArgMin) {
  const Tensor x = f32({2, 3}, {1, 3, 3, 5, 0, 5});
  Attrs axis1 = {{"axis", ir::Attribute::of_int(1)}};
  expect_i64(run1("ArgMax", {x}, axis1), {2, 1}, {1, 0});
  Attrs last = axis1;
  last["select_last_index"] = ir::Attribute::of_int(1);
  expect_i64(run1("ArgMax", {x}, last), {2, 1}, {2, 2});
  Attrs flat = axis1;
  flat["keepdims"] = ir::Attribute::of_int(0);
  expect_i64(run1("ArgMax", {x}, flat), {2}, {1, 0});
  expect_i64(run1("ArgMax", {x}), {1, 3}, {1, 0, 1});  // default axis 0
  expect_i64(run1("ArgMin", {x}, axis1), {2, 1}, {0, 1});
  expect_i64(run1("ArgMax", {f32({3}, {1, kNaN, 7})}), {1}, {1});  // NaN wins, like numpy
  expect_i64(run1("ArgMin", {i64({4}, {4, -2, 9, -2})}, {{"select_last_index", ir::Attribute::of_int(1)}}), {1}, {3});
  expect_error("ArgMax", {x}, {{"axis", ir::Attribute::of_int(2)}}, "axis 2 is out of range");
  expect_error("ArgMax", {f32({0}, {})}, {}, "empty axis");
}

// --- CumSum -------------------------------------------------------------------------

TEST(ReductionTest, CumSum) {
  const Tensor x = f32({4}, {1, 2, 3, 4});
  const Tensor axis0 = i64({}, {0});
  expect_near(run1("CumSum", {x, axis0}), f32({4}, {1, 3, 6, 10}));
  expect_near(run1("CumSum", {x, axis0}, {{"exclusive", ir::Attribute::of_int(1)}}), f32({4}, {0, 1, 3, 6}));
  expect_near(run1("CumSum", {x, axis0}, {{"reverse", ir::Attribute::of_int(1)}}), f32({4}, {10, 9, 7, 4}));
  expect_near(run1("CumSum", {x, axis0}, {{"reverse", ir::Attribute::of_int(1)}, {"exclusive", ir::Attribute::of_int(1)}}),
              f32({4}, {9, 7, 4, 0}));
  expect_near(run1("CumSum", {x23(), Tensor::from_vector<int32_t>({1}, {-1})}), f32({2, 3}, {1, 3, 6, 4, 9, 15}));
  expect_near(run1("CumSum", {x23(), axis0}), f32({2, 3}, {1, 2, 3, 5, 7, 9}));
  expect_i64(run1("CumSum", {i64({3}, {5, -1, 2}), axis0}), {3}, {5, 4, 6});
  expect_error("CumSum", {x, i64({}, {1})}, {}, "axis 1 is out of range");
  expect_error("CumSum", {x, f32({}, {0})}, {}, "axis) must be an integer tensor");
}

// --- TopK ---------------------------------------------------------------------------

TEST(ReductionTest, TopK) {
  const Tensor x = f32({2, 4}, {1, 4, 2, 3, 7, 7, 5, 9});
  auto top = run("TopK", {x, i64({1}, {2})}, {}, 2);
  expect_near(top[0], f32({2, 2}, {4, 3, 9, 7}));
  expect_i64(top[1], {2, 2}, {1, 3, 3, 0});  // tie 7/7: lower index first
  auto bottom = run("TopK", {x, i64({1}, {3})}, {{"largest", ir::Attribute::of_int(0)}}, 2);
  expect_near(bottom[0], f32({2, 3}, {1, 2, 3, 5, 7, 7}));
  expect_i64(bottom[1], {2, 3}, {0, 2, 3, 2, 0, 1});
  auto col = run("TopK", {x, i64({1}, {1})}, {{"axis", ir::Attribute::of_int(0)}}, 2);
  expect_near(col[0], f32({1, 4}, {7, 7, 5, 9}));
  expect_i64(col[1], {1, 4}, {1, 1, 1, 1});
  expect_error("TopK", {x, i64({1}, {5})}, {}, "K = 5 is out of range", 2);
}

}  // namespace
}  // namespace kiln::ops
