// SmartMem layout classes and reduction axes of representative ops (the
// facts the layout plugin picks packed axes from, op_layout.h).
#include "engine/ops/op_layout.h"

#include <gtest/gtest.h>

#include "engine/ir/text.h"

namespace kiln::ops {
namespace {

LayoutClass class_of(const char* op, const char* domain = "") {
  const OpSchema* s = OpRegistry::builtin().find(domain, op);
  return s ? layout_class(*s) : LayoutClass::kUnknown;
}

TEST(OpLayoutClass, Table3Quadrants) {
  for (const char* op : {"Conv", "MatMul", "Gemm", "LayerNormalization", "Softmax", "ReduceMean", "MaxPool"})
    EXPECT_EQ(class_of(op), LayoutClass::kIldVariable) << op;
  for (const char* op : {"Relu", "Add", "Sigmoid", "Where", "Cast", "Expand", "Resize"})
    EXPECT_EQ(class_of(op), LayoutClass::kIliVariable) << op;
  EXPECT_EQ(class_of("Silu", kKilnDomain), LayoutClass::kIliVariable);
  for (const char* op : {"Reshape", "Transpose", "Flatten", "Squeeze", "Unsqueeze", "DepthToSpace", "SpaceToDepth"})
    EXPECT_EQ(class_of(op), LayoutClass::kIldFixed) << op;
  for (const char* op : {"Slice", "Gather", "Concat", "Split", "Pad", "Shape"})
    EXPECT_EQ(class_of(op), LayoutClass::kIliFixed) << op;
  for (const char* op : {"If", "Loop", "LSTM"}) EXPECT_EQ(class_of(op), LayoutClass::kUnknown) << op;
  EXPECT_STREQ(layout_class_name(LayoutClass::kIldFixed), "ILD-Fixed");
}

// Every built-in op gets a class (a new mapping type must be classified).
TEST(OpLayoutClass, EveryMappedOpIsClassified) {
  for (const OpSchema* s : OpRegistry::builtin().all()) {
    if (s->name == "If" || s->name == "Loop" || s->name == "LSTM" || s->name == "GRU" || s->name == "RNN") continue;
    EXPECT_NE(layout_class(*s), LayoutClass::kUnknown) << s->name;
  }
}

constexpr const char* kGraph = R"(graph @g opset 17 {
  input %a : f32[2,8,16]
  input %b : f32[2,16,4]
  input %x : f32[1,3,8,8]
  input %w : f32[4,3,3,3]
  const %axes : i64[1] = dense<[1]>
  input %sc : f32[8,16]
  %m = MatMul(%a, %b) : f32[2,8,4]
  %c = Conv(%x, %w) {pads = [1,1,1,1]} : f32[1,4,8,8]
  %s = Softmax(%a) : f32[2,8,16]
  %s1 = Softmax(%a) {axis = 1} : f32[2,8,16]
  %l = LayerNormalization(%a, %sc) {axis = -2} : f32[2,8,16]
  %r = ReduceSum(%a, %axes) : f32[2,1,16]
  %r2 = ReduceMean(%x) {axes = [2,3]} : f32[1,3,1,1]
  %p = MaxPool(%x) {kernel_shape = [2,2], strides = [2,2]} : f32[1,3,4,4]
  %e = Relu(%a) : f32[2,8,16]
  %t = Transpose(%a) {perm = [0,2,1]} : f32[2,16,8]
  return %m, %c, %s, %s1, %l, %r, %r2, %p, %e, %t
}
)";

class ReductionAxes : public ::testing::Test {
 protected:
  void SetUp() override {
    auto parsed = ir::parse_graph(kGraph);
    ASSERT_TRUE(parsed.ok()) << parsed.status().message();
    graph_ = std::move(*parsed);
  }
  std::vector<int> axes(const char* output, size_t input) {
    for (ir::NodeId n : graph_->region(ir::kMainRegion).nodes) {
      const ir::Node& node = graph_->node(n);
      if (graph_->value(node.outputs[0]).name == output) return reduction_axes(*graph_, node, input);
    }
    ADD_FAILURE() << "no node makes %" << output;
    return {};
  }
  std::unique_ptr<ir::Graph> graph_;
};

TEST_F(ReductionAxes, MatMulReducesKOfBothOperands) {
  EXPECT_EQ(axes("m", 0), (std::vector<int>{2}));  // A[.., M, K]: the last axis
  EXPECT_EQ(axes("m", 1), (std::vector<int>{1}));  // B[.., K, N]: axis -2
}

TEST_F(ReductionAxes, ConvReducesChannelsAndWindow) {
  EXPECT_EQ(axes("c", 0), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(axes("c", 1), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(axes("p", 0), (std::vector<int>{2, 3}));
}

TEST_F(ReductionAxes, NormalizationsAndReductionsUseTheirAxes) {
  EXPECT_EQ(axes("s", 0), (std::vector<int>{2}));   // opset 13+: default axis -1
  EXPECT_EQ(axes("s1", 0), (std::vector<int>{1}));
  EXPECT_EQ(axes("l", 0), (std::vector<int>{1, 2}));  // from axis on
  EXPECT_TRUE(axes("l", 1).empty());                  // the scale is a parameter
  EXPECT_EQ(axes("r", 0), (std::vector<int>{1}));      // constant axes input
  EXPECT_EQ(axes("r2", 0), (std::vector<int>{2, 3}));  // axes attribute
}

TEST_F(ReductionAxes, ElementwiseAndTransformsReduceNothing) {
  EXPECT_TRUE(axes("e", 0).empty());
  EXPECT_TRUE(axes("t", 0).empty());
}

}  // namespace
}  // namespace kiln::ops
