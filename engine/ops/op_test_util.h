// Test helpers for op families: run one op on the reference executor, and
// compare tensors with a tolerance. Header-only; tests only.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/ops/op_registry.h"
#include "engine/runtime/reference_executor.h"

namespace kiln::ops::testing {

// Builds a one-node graph whose inputs are graph inputs (or constants when
// `const_inputs[i]` is true: ops that read shape values need that for static
// inference) and runs it. An undefined Tensor in `inputs` is an omitted
// optional input. `domain` is the op's ("" = ONNX).
inline StatusOr<std::vector<Tensor>> run_op(const std::string& op, const std::vector<Tensor>& inputs,
                                            std::map<std::string, ir::Attribute> attrs = {}, size_t num_outputs = 1,
                                            std::vector<bool> const_inputs = {}, const std::string& domain = "") {
  ir::Graph g;
  std::vector<ir::ValueId> in_ids;
  std::vector<Tensor> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      in_ids.push_back(ir::kNoValue);
      continue;
    }
    const std::string name = "in" + std::to_string(i);
    if (i < const_inputs.size() && const_inputs[i]) {
      in_ids.push_back(g.add_constant(name, inputs[i]));
    } else {
      in_ids.push_back(g.add_input(name, inputs[i].dtype(), ir::SymShape::from_concrete(inputs[i].shape())));
      feeds.push_back(inputs[i]);
    }
  }
  std::vector<ir::ValueId> out_ids;
  for (size_t i = 0; i < num_outputs; ++i) {
    out_ids.push_back(g.add_value("out" + std::to_string(i), DType::kUndefined, ir::SymShape()));
    g.add_output(out_ids.back());
  }
  const ir::NodeId n = g.add_node(op, in_ids, out_ids, std::move(attrs), "test_" + op);
  g.node(n).domain = domain;
  runtime::ReferenceExecutor exec(g);
  return exec.run(feeds);
}

inline ir::Attribute ints(std::vector<int64_t> v) { return ir::Attribute::of_ints(std::move(v)); }
inline ir::Attribute int_attr(int64_t v) { return ir::Attribute::of_int(v); }
inline ir::Attribute str(std::string v) { return ir::Attribute::of_string(std::move(v)); }

// A float32 tensor of seeded uniform values in [lo, hi).
inline Tensor random_f32(const Shape& shape, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (float& f : v) f = dist(rng);
  return Tensor::from_vector<float>(shape, v);
}

// Expects same shape and |a-b| <= atol + rtol*|b| elementwise.
inline void expect_near(const Tensor& actual, const Tensor& expected, double atol = 1e-5, double rtol = 1e-5) {
  ASSERT_EQ(shape_to_string(actual.shape()), shape_to_string(expected.shape()));
  ASSERT_EQ(dtype_name(actual.dtype()), dtype_name(expected.dtype()));
  for (int64_t i = 0; i < expected.numel(); ++i) {
    const double a = actual.get_f64(i), e = expected.get_f64(i);
    if (std::isnan(e)) {
      EXPECT_TRUE(std::isnan(a)) << "at " << i;
      continue;
    }
    if (std::isinf(e)) {
      EXPECT_EQ(a, e) << "at " << i;
      continue;
    }
    ASSERT_LE(std::abs(a - e), atol + rtol * std::abs(e)) << "element " << i << ": " << a << " vs " << e;
  }
}

// Shape inference of `op` alone, for the symbolic-inference tests: a node
// with `inputs.size()` inputs and `num_outputs` outputs.
inline StatusOr<std::vector<ValueInfo>> infer(const std::string& op, std::vector<ValueInfo> inputs,
                                              std::map<std::string, ir::Attribute> attrs = {},
                                              size_t num_outputs = 1) {
  const OpSchema* schema = OpRegistry::builtin().find("", op);
  if (!schema) return not_found("no op " + op);
  ir::Node node;
  node.op = op;
  node.name = "sym";
  node.attrs = std::move(attrs);
  node.inputs.assign(inputs.size(), 0);
  node.outputs.assign(num_outputs, 0);
  return infer_node(*schema, node, std::move(inputs));
}

// What inference knows of a value: its dtype and symbolic dims.
inline ValueInfo info(DType t, std::vector<ir::Dim> dims) {
  ValueInfo v;
  v.dtype = t;
  v.shape = ir::SymShape(std::move(dims));
  return v;
}

}  // namespace kiln::ops::testing
