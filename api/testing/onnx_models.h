// Test helper for the C API's tests: small float ONNX models built in code
// (IR 8, opset 17), and the two that several tests share: an MLP of several
// kernels and a NonZero model whose output shape depends on its input.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <onnx/onnx_pb.h>

namespace kiln::capi::testing {

// One dimension of a value's shape: a size, or a named symbolic dim.
struct Dim {
  Dim(int64_t v) : value(v) {}             // NOLINT: implicit, for {4, "n"} lists
  Dim(const char* p) : param(p) {}         // NOLINT
  Dim(const std::string& p) : param(p) {}  // NOLINT
  int64_t value = 0;
  std::string param;  // non-empty: symbolic
};

// Builds one graph: float inputs, outputs and initializers, and nodes (named
// after their output unless given a name).
class OnnxBuilder {
 public:
  explicit OnnxBuilder(const std::string& graph_name) {
    model_.set_ir_version(8);
    model_.add_opset_import()->set_version(17);
    graph()->set_name(graph_name);
  }

  onnx::GraphProto* graph() { return model_.mutable_graph(); }

  void float_input(const std::string& name, const std::vector<Dim>& dims) { value(graph()->add_input(), name, dims); }
  void float_output(const std::string& name, const std::vector<Dim>& dims) {
    value(graph()->add_output(), name, dims);
  }

  // A float32 initializer of shape `dims` holding `values`.
  void initializer(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& values) {
    onnx::TensorProto* w = graph()->add_initializer();
    w->set_name(name);
    w->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) w->add_dims(d);
    for (float v : values) w->add_float_data(v);
  }
  // An initializer filled with scale * ((i * 7) % 11 - 5): small values of
  // both signs, different at neighbouring positions.
  void weight(const std::string& name, const std::vector<int64_t>& dims, float scale) {
    int64_t count = 1;
    for (int64_t d : dims) count *= d;
    std::vector<float> values(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i)
      values[static_cast<size_t>(i)] = scale * static_cast<float>((i * 7) % 11 - 5);
    initializer(name, dims, values);
  }

  onnx::NodeProto* node(const std::string& op, const std::vector<std::string>& inputs, const std::string& output,
                        const std::string& name = "") {
    onnx::NodeProto* n = graph()->add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? output : name);
    for (const std::string& i : inputs) n->add_input(i);
    n->add_output(output);
    return n;
  }

  static void int_attribute(onnx::NodeProto* n, const std::string& name, int64_t v) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void ints_attribute(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& vs) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t v : vs) a->add_ints(v);
  }

  std::string serialize() const { return model_.SerializeAsString(); }

 private:
  static void value(onnx::ValueInfoProto* v, const std::string& name, const std::vector<Dim>& dims) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (const Dim& d : dims) {
      if (d.param.empty()) {
        t->mutable_shape()->add_dim()->set_dim_value(d.value);
      } else {
        t->mutable_shape()->add_dim()->set_dim_param(d.param);
      }
    }
  }

  onnx::ModelProto model_;
};

// x[rows, cols] -> MatMul [cols, 8] -> Relu -> MatMul [8, cols] -> Sigmoid
// -> y: several kernels, each reading what the one before wrote, with
// intermediates (so a run has activation memory of its own).
inline std::string mlp_model(int64_t rows, int64_t cols) {
  OnnxBuilder b("mlp");
  b.float_input("x", {rows, cols});
  b.float_output("y", {rows, cols});
  b.weight("w1", {cols, 8}, 0.25f);
  b.weight("w2", {8, cols}, -0.125f);
  b.node("MatMul", {"x", "w1"}, "h");
  b.node("Relu", {"h"}, "r");
  b.node("MatMul", {"r", "w2"}, "s");
  b.node("Sigmoid", {"s"}, "y");
  return b.serialize();
}

// x[4] -> Relu -> NonZero (node "where_positive") -> y (int64): the output's
// shape depends on x's values, so a run reads them back mid-run and can be
// neither one submission nor recorded.
inline std::string nonzero_model() {
  OnnxBuilder b("nonzero");
  b.float_input("x", {4});
  b.node("Relu", {"x"}, "r");
  b.node("NonZero", {"r"}, "y", "where_positive");
  onnx::ValueInfoProto* y = b.graph()->add_output();
  y->set_name("y");
  y->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
  return b.serialize();
}

// Writes `bytes` to "<test temp dir>/kiln_<name>_<pid>.onnx" and returns the
// path. ctest runs each test as its own process, several at once: a name
// shared by the tests of one fixture let one process truncate the file while
// another was loading it ("the model has no graph"); the process id keeps
// each process's file its own. The caller removes it once loaded.
inline std::string write_temp_model(const std::string& name, const std::string& bytes) {
  const std::string path = ::testing::TempDir() + "/kiln_" + name + "_" + std::to_string(::getpid()) + ".onnx";
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

}  // namespace kiln::capi::testing
