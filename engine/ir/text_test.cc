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

TEST(TextTest, AnnotationsRoundTrip) {
  constexpr const char* kText = R"(graph @g opset 17 {
  input %x : f32[2,3] #{kiln.layout = "nhwc", "odd key" = "a \"b\""}
  const %w : f32[3] #{kiln.storage = "image"} = dense<[1.0,2.0,3.0]>
  %y = Mul(%x, %w) #{kiln.fusion_group = "0"} : f32[2,3] #{kiln.layout = "nchw"}
  %a, none = Split(%y) {axis = 0} #{} : f32[1,3] #{k = ""}, none
  %z = "kiln"::Silu(%a) : f32[1,3]
  return %z
}
)";
  auto g = parse_graph(kText);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  const Graph& graph = **g;
  const Value& x = graph.value(graph.find_value("x"));
  EXPECT_EQ(x.annotations.at("kiln.layout"), "nhwc");
  EXPECT_EQ(x.annotations.at("odd key"), "a \"b\"");
  EXPECT_EQ(graph.value(graph.find_value("w")).annotations.at("kiln.storage"), "image");
  EXPECT_EQ(graph.value(graph.find_value("y")).annotations.at("kiln.layout"), "nchw");
  EXPECT_EQ(graph.value(graph.find_value("a")).annotations.at("k"), "");
  EXPECT_EQ(graph.node(0).annotations.at("kiln.fusion_group"), "0");
  EXPECT_TRUE(graph.node(1).annotations.empty());
  EXPECT_EQ(graph.node(2).domain, "kiln");

  // Printed back, parsed again and printed again: the same text; the empty
  // `#{}` is not printed.
  const std::string printed = print_graph(graph);
  EXPECT_NE(printed.find("%y = Mul(%x, %w) #{kiln.fusion_group = \"0\"} : f32[2,3] #{kiln.layout = \"nchw\"}"),
            std::string::npos)
      << printed;
  EXPECT_EQ(printed.find("#{}"), std::string::npos) << printed;
  auto g2 = parse_graph(printed);
  ASSERT_TRUE(g2.ok()) << g2.status().to_string() << "\n" << printed;
  EXPECT_EQ(print_graph(**g2), printed);

  // Annotations set in code print too (a pass's facts show in golden files).
  Graph built;
  ValueId in = built.add_input("in", DType::kFloat32, SymShape::from_concrete({2}));
  ValueId out = built.add_value("out", DType::kFloat32, SymShape::from_concrete({2}));
  NodeId relu = built.add_node("Relu", {in}, {out});
  built.node(relu).annotations["kiln.kernel"] = "relu_vec4";
  built.value(out).annotations["kiln.layout"] = "linear";
  built.add_output(out);
  EXPECT_NE(print_graph(built).find(
                "%out = Relu(%in) #{kiln.kernel = \"relu_vec4\"} : f32[2] #{kiln.layout = \"linear\"}"),
            std::string::npos)
      << print_graph(built);
}

// Names with "//" (a comment to the parser) are quoted: an attribute, an
// annotation key, a value and the graph.
TEST(TextTest, NamesWithACommentMarkerRoundTrip) {
  Graph g;
  g.name = "a//b";
  const ValueId x = g.add_input("x//", DType::kFloat32, SymShape({2}));
  const ValueId y = g.add_value("y", DType::kFloat32, SymShape({2}));
  std::map<std::string, Attribute> attrs;
  attrs["//"] = Attribute::of_ints({});
  attrs["axis"] = Attribute::of_int(-1);
  const NodeId n = g.add_node("Softmax", {x}, {y}, std::move(attrs), "s");
  g.node(n).annotations["//note"] = "v";
  g.add_output(y);
  const std::string printed = print_graph(g);
  auto parsed = parse_graph(printed);
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string() << "\n" << printed;
  EXPECT_EQ(print_graph(**parsed), printed);
  EXPECT_EQ((*parsed)->name, "a//b");
  const Node& back = (*parsed)->node((*parsed)->main().nodes.at(0));
  EXPECT_EQ(back.attrs.count("//"), 1u);
  EXPECT_EQ(back.annotations.at("//note"), "v");
}

TEST(TextTest, MalformedAnnotationsAreRejected) {
  // A non-string value, a duplicate key, an unterminated dict (noticed at the
  // next line's first token).
  const std::pair<const char*, const char*> cases[] = {
      {"graph @g {\n  input %x : f32[2] #{k = 1}\n  return %x\n}", "line 2, column 27: annotation 'k' needs a string"},
      {"graph @g {\n  input %x : f32[2] #{k = \"a\", k = \"b\"}\n  return %x\n}", "annotation 'k' given twice"},
      {"graph @g {\n  input %x : f32[2] #{k = \"a\"\n  return %x\n}", "line 3, column 3: expected '}'"}};
  for (const auto& [text, message] : cases) {
    auto g = parse_graph(text);
    ASSERT_FALSE(g.ok()) << text;
    EXPECT_NE(g.status().message().find(message), std::string::npos) << g.status().message();
  }
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

// An elided constant lists no values, so nothing in the text bounds the
// zeros it stands for: the tensor limit does (fuzz_text_parser: an elided
// f16[8666666666] allocated 17 GB).
TEST(TextTest, AnElidedConstantPastTheTensorLimitIsRefused) {
  ParseOptions opts;
  opts.allow_elided_constants = true;
  auto g = parse_graph("graph @g {\n  const %c : f16[8666666666000] = dense<elided>\n  return %c\n}", opts);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("KILN_MAX_TENSOR_BYTES"), std::string::npos) << g.status().message();
  EXPECT_TRUE(parse_graph("graph @g {\n  const %c : f16[866] = dense<elided>\n  return %c\n}", opts).ok());
}

// Big constants can cross as value ids (a backend plugin fetches their
// bytes through the ABI instead of printing and parsing them); the reader
// is asked for each by id, and what it returns is checked.
TEST(TextTest, ExternalConstantsAreReadThroughTheCaller) {
  Graph g;
  g.name = "g";
  ValueId small = g.add_constant("small", Tensor::from_vector<int64_t>({2}, {1, -1}));
  ValueId big = g.add_constant("big", Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4}));
  g.add_output(small);
  g.add_output(big);
  PrintOptions po;
  po.external_constants_over = 2;
  const std::string text = print_graph(g, po);
  EXPECT_NE(text.find("dense<external(" + std::to_string(big) + ")>"), std::string::npos) << text;
  EXPECT_NE(text.find("dense<[1,-1]>"), std::string::npos) << text;  // at the threshold: printed
  EXPECT_FALSE(parse_graph(text).ok());  // no reader

  std::vector<int64_t> asked;
  ParseOptions opts;
  opts.external_constant = [&](int64_t id, DType dtype, const Shape& shape) -> StatusOr<Tensor> {
    asked.push_back(id);
    EXPECT_EQ(dtype, DType::kFloat32);
    EXPECT_EQ(shape, (Shape{2, 2}));
    return g.value(static_cast<ValueId>(id)).constant;
  };
  auto parsed = parse_graph(text, opts);
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  EXPECT_EQ(asked, (std::vector<int64_t>{big}));
  EXPECT_EQ(print_graph(**parsed), print_graph(g));

  // A reader's error, or a tensor unlike the declaration, is the parser's error.
  opts.external_constant = [](int64_t, DType, const Shape&) -> StatusOr<Tensor> { return not_found("no such value"); };
  auto missing = parse_graph(text, opts);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no such value"), std::string::npos) << missing.status().message();
  opts.external_constant = [](int64_t, DType, const Shape&) -> StatusOr<Tensor> {
    return Tensor::from_vector<float>({4}, {1, 2, 3, 4});
  };
  auto wrong = parse_graph(text, opts);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("declared f32[2,2]"), std::string::npos) << wrong.status().message();
}

// A shape with more elements than the text could list is refused before its
// memory is allocated (fuzz_text_parser: f32[666666666,1] asked for 2.6 GB).
TEST(TextTest, AConstantLargerThanItsTextIsRefusedUpFront) {
  auto g = parse_graph("graph @g {\n  const %c : f32[666666666,1] = dense<[0,25,3]>\n  return %c\n}");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("needs 666666666 values"), std::string::npos) << g.status().message();
  EXPECT_TRUE(parse_graph("graph @g {\n  const %c : f32[3] = dense<[0,2,3]>\n  return %c\n}").ok());
  // A negative extent after a large one (fuzz_text_parser: a signed overflow in the count).
  EXPECT_FALSE(parse_graph("graph @g {\n  const %c : f32[5519988,-666666656680900] = dense<[1]>\n  return %c\n}").ok());
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
