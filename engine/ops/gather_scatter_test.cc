// Tests of Gather, GatherElements, GatherND, ScatterND and ScatterElements
// (gather_scatter.cc), mostly on the worked examples of the ONNX operator
// documentation, plus index range errors and dims_value propagation.
#include <gtest/gtest.h>

#include "engine/ops/op_registry.h"
#include "engine/ops/op_test_util.h"
#include "engine/ops/shape_inference.h"

namespace kiln::ops {
namespace {

using ir::Attribute;
using ir::Dim;
using ir::SymShape;
using testing::expect_near;
using testing::run_op;

Tensor f32(Shape s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), v); }
Tensor i64(Shape s, std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(std::move(s), v); }
std::vector<int64_t> ints(const Tensor& t) { return t.to_i64_vector(); }

Tensor run1(const std::string& op, const std::vector<Tensor>& in, std::map<std::string, Attribute> attrs = {}) {
  auto r = run_op(op, in, std::move(attrs));
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? (*r)[0] : Tensor();
}

std::string run_err(const std::string& op, const std::vector<Tensor>& in, std::map<std::string, Attribute> attrs = {}) {
  auto r = run_op(op, in, std::move(attrs));
  EXPECT_FALSE(r.ok());
  return r.ok() ? std::string() : r.status().message();
}

// ----------------------------------------------------------------- Gather

TEST(Gather, Axis0And1) {
  Tensor data = f32({3, 2}, {1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f});
  Tensor y = run1("Gather", {data, i64({2, 2}, {0, 1, 1, 2})});
  expect_near(y, f32({2, 2, 2}, {1.0f, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f, 4.5f, 5.7f}));
  Tensor d2 = f32({3, 3}, {1.0f, 1.2f, 1.9f, 2.3f, 3.4f, 3.9f, 4.5f, 5.7f, 5.9f});
  y = run1("Gather", {d2, i64({1, 2}, {0, 2})}, {{"axis", Attribute::of_int(1)}});
  expect_near(y, f32({3, 1, 2}, {1.0f, 1.9f, 2.3f, 3.9f, 4.5f, 5.9f}));
}

TEST(Gather, NegativeScalarAndInt32Indices) {
  Tensor data = Tensor::from_vector<int8_t>({4, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  Tensor y = run1("Gather", {data, Tensor::scalar_i64(-1)});
  EXPECT_EQ(y.shape(), (Shape{2}));
  EXPECT_EQ(ints(y), (std::vector<int64_t>{6, 7}));
  y = run1("Gather", {data, Tensor::from_vector<int32_t>({3}, {-4, 3, 1})}, {{"axis", Attribute::of_int(0)}});
  EXPECT_EQ(ints(y), (std::vector<int64_t>{0, 1, 6, 7, 2, 3}));
  y = run1("Gather", {data, Tensor::from_vector<int32_t>({0}, {})}, {{"axis", Attribute::of_int(1)}});
  EXPECT_EQ(y.shape(), (Shape{4, 0}));
}

TEST(Gather, Errors) {
  Tensor data = f32({3, 2}, {0, 1, 2, 3, 4, 5});
  std::string e = run_err("Gather", {data, i64({1}, {3})});
  EXPECT_NE(e.find("index 3 is out of range for axis 0 of size 3"), std::string::npos) << e;
  EXPECT_NE(run_err("Gather", {data, i64({1}, {-4})}).find("index -4"), std::string::npos);
  EXPECT_NE(run_err("Gather", {data, i64({1}, {0})}, {{"axis", Attribute::of_int(2)}}).find("out of range"),
            std::string::npos);
  EXPECT_NE(run_err("Gather", {data, f32({1}, {0})}).find("int32 or int64"), std::string::npos);
}

TEST(Gather, PropagatesDimsValue) {
  ValueInfo shape;
  shape.dtype = DType::kInt64;
  shape.shape = SymShape({Dim(3)});
  shape.dims_value = std::vector<Dim>{Dim::symbol("b"), Dim::symbol("s"), Dim(64)};
  Tensor idx = i64({2}, {-1, 0});
  ValueInfo iv;
  iv.dtype = DType::kInt64;
  iv.shape = SymShape({Dim(2)});
  iv.value = &idx;
  ir::Node node;
  node.op = "Gather";
  node.inputs = {0, 1};
  node.outputs = {0};
  auto r = infer_node(*OpRegistry::builtin().find("", "Gather"), node, {shape, iv});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_TRUE((*r)[0].dims_value.has_value());
  EXPECT_EQ(SymShape(*(*r)[0].dims_value).to_string(), "[64,b]");
}

// --------------------------------------------------------- GatherElements

TEST(GatherElements, DocExamples) {
  Tensor y = run1("GatherElements", {f32({2, 2}, {1, 2, 3, 4}), i64({2, 2}, {0, 0, 1, 0})},
                  {{"axis", Attribute::of_int(1)}});
  expect_near(y, f32({2, 2}, {1, 1, 4, 3}));
  y = run1("GatherElements", {f32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}), i64({2, 3}, {1, 2, 0, 2, 0, -3})});
  expect_near(y, f32({2, 3}, {4, 8, 3, 7, 2, 3}));
  // Indices smaller than data on the other axes.
  y = run1("GatherElements", {f32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}), i64({2, 1}, {2, 0})},
           {{"axis", Attribute::of_int(-1)}});
  expect_near(y, f32({2, 1}, {3, 4}));
  EXPECT_NE(run_err("GatherElements", {f32({2, 2}, {1, 2, 3, 4}), i64({2, 2}, {0, 2, 0, 0})}).find("index 2"),
            std::string::npos);
  EXPECT_NE(run_err("GatherElements", {f32({2, 2}, {1, 2, 3, 4}), i64({2}, {0, 0})}).find("rank"), std::string::npos);
}

// --------------------------------------------------------------- GatherND

TEST(GatherND, DocExamples) {
  Tensor d = Tensor::from_vector<int32_t>({2, 2}, {0, 1, 2, 3});
  EXPECT_EQ(ints(run1("GatherND", {d, i64({2, 2}, {0, 0, 1, 1})})), (std::vector<int64_t>{0, 3}));
  Tensor y = run1("GatherND", {d, i64({2, 1}, {1, 0})});
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  EXPECT_EQ(ints(y), (std::vector<int64_t>{2, 3, 0, 1}));
  Tensor d3 = Tensor::from_vector<int32_t>({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  y = run1("GatherND", {d3, i64({2, 2}, {0, 1, 1, 0})});
  EXPECT_EQ(ints(y), (std::vector<int64_t>{2, 3, 4, 5}));
  y = run1("GatherND", {d3, i64({2, 1, 2}, {0, 1, 1, 0})});
  EXPECT_EQ(y.shape(), (Shape{2, 1, 2}));
  EXPECT_EQ(ints(y), (std::vector<int64_t>{2, 3, 4, 5}));
  y = run1("GatherND", {d3, i64({2, 1}, {1, 0})}, {{"batch_dims", Attribute::of_int(1)}});
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  EXPECT_EQ(ints(y), (std::vector<int64_t>{2, 3, 4, 5}));
  EXPECT_NE(run_err("GatherND", {d, i64({1, 3}, {0, 0, 0})}).find("last dim of indices"), std::string::npos);
  EXPECT_NE(run_err("GatherND", {d, i64({1, 2}, {0, 2})}).find("index 2"), std::string::npos);
  EXPECT_NE(run_err("GatherND", {d3, i64({3, 1}, {0, 0, 0})}, {{"batch_dims", Attribute::of_int(1)}}).find("batch dim"),
            std::string::npos);
}

// -------------------------------------------------------------- ScatterND

TEST(ScatterND, DocExamplesAndReductions) {
  Tensor data = f32({8}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor idx = i64({4, 1}, {4, 3, 1, 7});
  Tensor upd = f32({4}, {9, 10, 11, 12});
  Tensor y = run1("ScatterND", {data, idx, upd});
  expect_near(y, f32({8}, {1, 11, 3, 10, 9, 6, 7, 12}));
  EXPECT_EQ(data.get_f64(1), 2.0);  // the input is not modified
  Tensor idx2 = i64({2, 1}, {0, 0});
  Tensor upd2 = f32({2}, {5, 6});
  expect_near(run1("ScatterND", {data, idx2, upd2}, {{"reduction", Attribute::of_string("add")}}),
              f32({8}, {12, 2, 3, 4, 5, 6, 7, 8}));
  expect_near(run1("ScatterND", {data, idx2, upd2}, {{"reduction", Attribute::of_string("mul")}}),
              f32({8}, {30, 2, 3, 4, 5, 6, 7, 8}));
  expect_near(run1("ScatterND", {data, idx2, upd2}, {{"reduction", Attribute::of_string("min")}}),
              f32({8}, {1, 2, 3, 4, 5, 6, 7, 8}));
  // Slices: data [4,2], replace rows 0 and 2.
  Tensor d2 = Tensor::from_vector<int64_t>({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor y2 = run1("ScatterND", {d2, i64({2, 1}, {0, -2}), i64({2, 2}, {10, 20, 30, 40})});
  EXPECT_EQ(ints(y2), (std::vector<int64_t>{10, 20, 3, 4, 30, 40, 7, 8}));
  EXPECT_NE(run_err("ScatterND", {data, idx, f32({3}, {1, 2, 3})}).find("updates have shape"), std::string::npos);
  EXPECT_NE(run_err("ScatterND", {data, i64({1, 1}, {8}), f32({1}, {0})}).find("index 8"), std::string::npos);
  EXPECT_NE(run_err("ScatterND", {data, idx, upd}, {{"reduction", Attribute::of_string("avg")}}).find("avg"),
            std::string::npos);
}

TEST(ScatterND, Half) {
  Tensor data = f32({3}, {1, 2, 3}).cast(DType::kFloat16).value();
  Tensor upd = f32({1}, {0.5f}).cast(DType::kFloat16).value();
  Tensor y = run1("ScatterND", {data, i64({1, 1}, {1}), upd}, {{"reduction", Attribute::of_string("add")}});
  expect_near(y, f32({3}, {1, 2.5f, 3}).cast(DType::kFloat16).value());
}

// -------------------------------------------------------- ScatterElements

TEST(ScatterElements, DocExamplesAndReductions) {
  Tensor data = f32({3, 3}, std::vector<float>(9, 0.0f));
  Tensor idx = i64({2, 3}, {1, 0, 2, 0, 2, 1});
  Tensor upd = f32({2, 3}, {1.0f, 1.1f, 1.2f, 2.0f, 2.1f, 2.2f});
  expect_near(run1("ScatterElements", {data, idx, upd}),
              f32({3, 3}, {2.0f, 1.1f, 0.0f, 1.0f, 0.0f, 2.2f, 0.0f, 2.1f, 1.2f}));
  Tensor d = f32({1, 5}, {1, 2, 3, 4, 5});
  expect_near(run1("ScatterElements", {d, i64({1, 2}, {1, -2}), f32({1, 2}, {1.1f, 2.1f})},
                   {{"axis", Attribute::of_int(1)}}),
              f32({1, 5}, {1, 1.1f, 3, 2.1f, 5}));
  expect_near(run1("ScatterElements", {d, i64({1, 2}, {1, 1}), f32({1, 2}, {1.1f, 2.1f})},
                   {{"axis", Attribute::of_int(1)}, {"reduction", Attribute::of_string("add")}}),
              f32({1, 5}, {1, 5.2f, 3, 4, 5}));
  expect_near(run1("ScatterElements", {d, i64({1, 2}, {1, 1}), f32({1, 2}, {1.1f, 2.1f})},
                   {{"axis", Attribute::of_int(1)}, {"reduction", Attribute::of_string("max")}}),
              f32({1, 5}, {1, 2.1f, 3, 4, 5}));
  EXPECT_NE(run_err("ScatterElements", {d, i64({1, 1}, {5}), f32({1, 1}, {0})}, {{"axis", Attribute::of_int(1)}})
                .find("index 5"),
            std::string::npos);
  EXPECT_NE(run_err("ScatterElements", {d, i64({1, 2}, {0, 0}), f32({1, 1}, {0})}, {{"axis", Attribute::of_int(1)}})
                .find("shape of indices"),
            std::string::npos);
}

// ------------------------------------------- constant out-of-range indices

// Data [3, 4] as a graph input and constant indices: shape inference (what
// import, the passes and every backend's planning run) refuses an index
// out of range, naming the node, before anything runs.
std::string infer_with_constant_indices(const std::string& op, const Tensor& indices,
                                        std::map<std::string, Attribute> attrs = {}) {
  ir::Graph g;
  const ir::ValueId data = g.add_input("data", DType::kFloat32, SymShape({Dim(3), Dim(4)}));
  const ir::ValueId idx = g.add_constant("idx", indices);
  std::vector<ir::ValueId> inputs = {data, idx};
  if (op.rfind("Scatter", 0) == 0) {
    SymShape updates_shape = SymShape::from_concrete(indices.shape());
    if (op == "ScatterND") updates_shape = SymShape::from_concrete({indices.dim(0), 4});
    inputs.push_back(g.add_input("updates", DType::kFloat32, updates_shape));
  }
  const ir::ValueId out = g.add_value("out", DType::kUndefined, SymShape());
  g.add_node(op, inputs, {out}, std::move(attrs), "pick");
  g.add_output(out);
  Status s = infer_graph_shapes(g);
  return s.ok() ? std::string("accepted") : s.to_string();
}

TEST(ConstantIndices, OutOfRangeIsAnErrorBeforeRunning) {
  EXPECT_EQ(infer_with_constant_indices("Gather", i64({3}, {0, -3, 2})), "accepted");
  std::string e = infer_with_constant_indices("Gather", i64({3}, {0, 3, 1}));
  EXPECT_NE(e.find("INVALID_ARGUMENT: node 'pick' (Gather): index 3 is out of range for axis 0 of size 3 "
                   "(indices element 1)"),
            std::string::npos)
      << e;
  e = infer_with_constant_indices("Gather", i64({1}, {-5}), {{"axis", Attribute::of_int(1)}});
  EXPECT_NE(e.find("index -5 is out of range for axis 1 of size 4 (indices element 0)"), std::string::npos)
      << e;
  e = infer_with_constant_indices("GatherElements", i64({1, 2}, {1, 7}), {{"axis", Attribute::of_int(1)}});
  EXPECT_NE(e.find("node 'pick' (GatherElements): index 7 is out of range for axis 1"), std::string::npos) << e;
  e = infer_with_constant_indices("ScatterElements", i64({1, 2}, {3, 0}));
  EXPECT_NE(e.find("node 'pick' (ScatterElements): index 3 is out of range for axis 0"), std::string::npos) << e;
  EXPECT_EQ(infer_with_constant_indices("ScatterND", i64({2, 1}, {2, -1})), "accepted");
  e = infer_with_constant_indices("ScatterND", i64({2, 1}, {1, 9}));
  EXPECT_NE(e.find("node 'pick' (ScatterND): index 9 is out of range for axis 0 of size 3 (indices tuple 1)"),
            std::string::npos)
      << e;
  e = infer_with_constant_indices("GatherND", i64({1, 2}, {2, 4}));
  EXPECT_NE(e.find("node 'pick' (GatherND): index 4 is out of range for axis 1 of size 4 (indices tuple 0)"),
            std::string::npos)
      << e;
}

}  // namespace
}  // namespace kiln::ops
