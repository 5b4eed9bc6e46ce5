// Tests for the textual IR: print -> parse -> print is the identity, and
// malformed text is rejected with a line/column.
#include "engine/ir/text.h"

#include <gtest/gtest.h>

#include "engine/ir/verifier.h"

namespace kiln::ir {
namespace {

constexpr const char* kSample = R"(graph @sample opset 17 producer "test" {
  input %x : f32[1,3,h,w]
  input %c : bool[]
  const %w : f32[3] = dense<[0.5,-1.25,3.0]>
  const %shape : i64[2] = dense<[1,-1]>
  %y = Mul(%x, %w) : f32[1,3,h,w] loc("mul 1")
  %a, %b = Split(%y, none) {axis = 1, num_outputs = 2} : f32[1,?,h,w], f32[1,?,h,w]
  %r = If(%c) {else_branch = region {
    return %b
  }, then_branch = region {
    %t = Relu(%a) : f32[1,?,h,w]
    return %t
  }} : f32[*]
  %"onnx::Flat_1" = Reshape(%r, %shape) {allowzero = 0} : f32[1,((3*h)*w)]
  %z = Conv(%x, %w) {dilations = [1,1], kernel_shape = ints[], pads = [0,0,0,0], alpha = 0.25, mode = "constant", names = ["a","b\"q"], t = dense<i32[2] [7,-8]>} : f32[1,((h-1)/2)+1,w,max(h,w)]
  return %"onnx::Flat_1", %z
}
)";

TEST(TextTest, RoundTrip) {
  auto g = parse_graph(kSample);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_TRUE(verify_graph(**g).ok()) << verify_graph(**g).to_string();
  std::string printed = print_graph(**g);
  auto g2 = parse_graph(printed);
  ASSERT_TRUE(g2.ok()) << g2.status().to_string() << "\n" << printed;
  EXPECT_EQ(print_graph(**g2), printed);
  EXPECT_EQ((*g)->name, "sample");
  EXPECT_EQ((*g)->producer, "test");
  EXPECT_EQ((*g)->num_live_nodes(), 6u);
  const Node& conv = (*g)->node(5);
  EXPECT_EQ(conv.op, "Conv");
  EXPECT_EQ(conv.attr_float("alpha", 0), 0.25f);
  EXPECT_EQ(conv.attr("names")->strings[1], "b\"q");
  EXPECT_EQ(conv.attr("t")->tensor.get_i64(1), -8);
  EXPECT_EQ(conv.attr("kernel_shape")->kind, AttrKind::kInts);
  EXPECT_EQ((*g)->node(0).name, "mul 1");
}

TEST(TextTest, FloatsRoundTripExactly) {
  Graph g;
  ValueId c = g.add_constant("c", Tensor::from_vector<float>({3}, {0.1f, 1e-30f, 3.4028235e38f}));
  g.add_output(c);
  auto parsed = parse_graph(print_graph(g));
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  const Tensor& t = (*parsed)->value((*parsed)->find_value("c")).constant;
  EXPECT_EQ(t.data<float>()[0], 0.1f);
  EXPECT_EQ(t.data<float>()[1], 1e-30f);
  EXPECT_EQ(t.data<float>()[2], 3.4028235e38f);
}

TEST(TextTest, ElidedConstantsNeedOptIn) {
  Graph g;
  ValueId c = g.add_constant("c", Tensor::from_vector<float>({4}, {1, 2, 3, 4}));
  g.add_output(c);
  PrintOptions po;
  po.elide_constants_over = 2;
  std::string text = print_graph(g, po);
  EXPECT_NE(text.find("elided"), std::string::npos);
  EXPECT_FALSE(parse_graph(text).ok());
  ParseOptions opts;
  opts.allow_elided_constants = true;
  EXPECT_TRUE(parse_graph(text, opts).ok());
}

TEST(TextTest, ErrorsNameLineAndColumn) {
  auto g = parse_graph("graph @g {\n  %y = Relu(%nope) : f32[2]\n  return %y\n}");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("line 2"), std::string::npos) << g.status().message();
  EXPECT_NE(g.status().message().find("%nope"), std::string::npos);
  EXPECT_FALSE(parse_graph("graph @g {\n  input %x : q7[2]\n  return %x\n}").ok());
  EXPECT_FALSE(parse_graph("graph @g {\n  input %x : f32[2]\n").ok());
  EXPECT_FALSE(parse_graph("graph @g {\n  const %c : f32[2] = dense<[1]>\n  return %c\n}").ok());
  EXPECT_FALSE(parse_graph("graph @g {\n  input %x : f32[2]\n  input %x : f32[2]\n  return %x\n}").ok());
}

}  // namespace
}  // namespace kiln::ir
