// ShapeInferrer: shape values flowing from Shape to Reshape, If outputs
// from what both branches agree on, Loop body parameters typed from the node.
#include "engine/ops/shape_inference.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "engine/ir/text.h"

namespace kiln::ops {
namespace {

std::unique_ptr<ir::Graph> parse(const char* text) {
  auto g = ir::parse_graph(text);
  EXPECT_TRUE(g.ok()) << g.status().message();
  return g.ok() ? std::move(*g) : nullptr;
}

// Shape inference: shape values flow from Shape to Reshape, and an If's
// unknown outputs take what both branches agree on.
TEST(ShapeInference, ShapeValuesAndIfBranches) {
  auto g = parse(R"(graph @g opset 17 {
  input %c : bool[]
  input %x : f32[n,3]
  %s = Shape(%x) : undef[*]
  %y = Reshape(%x, %s) : undef[*]
  %r = If(%c) {else_branch = region {
    %e = Relu(%y) : undef[*]
    return %e
  }, then_branch = region {
    %t = Neg(%y) : undef[*]
    return %t
  }} : undef[*]
  return %r
}
)");
  ASSERT_NE(g, nullptr);
  ASSERT_TRUE(infer_graph_shapes(*g).ok());
  const std::string out = ir::print_graph(*g);
  EXPECT_NE(out.find("%y = Reshape(%x, %s) : f32[n,3]"), std::string::npos) << out;
  EXPECT_NE(out.find("} : f32[n,3]"), std::string::npos) << out;

  // Node by node (how the ONNX importer uses it) gives the same.
  auto g2 = parse(R"(graph @g opset 17 {
  input %x : f32[n,3]
  %s = Shape(%x) : undef[*]
  %y = Reshape(%x, %s) : undef[*]
  return %y
}
)");
  ASSERT_NE(g2, nullptr);
  ShapeInferrer inferrer(*g2);
  for (ir::NodeId n : g2->main().nodes) ASSERT_TRUE(inferrer.infer_node(n).ok());
  EXPECT_EQ(g2->value(g2->find_value("y")).shape.to_string(), "[n,3]");
}

// A Reshape target whose element count overflows int64 is an error naming
// it, not signed overflow (found by fuzz/fuzz_onnx_import).
TEST(ShapeInference, ReshapeToAnOverflowingShapeIsAnError) {
  for (const char* target : {"[4611686018427387904,4]", "[4611686018427387904,-1,4]"}) {
    const std::string text = std::string(R"(graph @g opset 17 {
  input %x : f32[4]
  const %s : i64[)") + (target[21] == '-' ? "3" : "2") + "] = dense<" + target + R"(>
  %y = Reshape(%x, %s) : undef[*]
  return %y
}
)";
    auto g = parse(text.c_str());
    ASSERT_NE(g, nullptr);
    const Status s = infer_graph_shapes(*g);
    ASSERT_FALSE(s.ok()) << target;
    EXPECT_NE(s.message().find("overflows int64"), std::string::npos) << s.message();
  }
}

// A Loop's body parameters with dtypes but no shapes (what the ONNX
// importer gives): inference types them from the node, the carried output
// takes the body's result and the scan output is [iterations, ...]. A body
// that changes a carried value's shape keeps its parameter unranked.
TEST(ShapeInference, LoopBodyParametersAndScanOutputs) {
  for (bool grows : {false, true}) {
    SCOPED_TRACE(grows ? "growing" : "fixed");
    ir::Graph g;
    const ir::SymShape scalar = ir::SymShape::from_concrete({});
    ir::ValueId m = g.add_input("m", DType::kInt64, scalar);
    ir::ValueId x = g.add_input("x", DType::kFloat32, ir::SymShape::from_concrete({2, 3}));
    const ir::RegionId body = g.add_region(ir::kMainRegion, "body");
    g.add_input("i", DType::kInt64, ir::SymShape::unranked(), body);
    ir::ValueId cond = g.add_input("cond", DType::kBool, ir::SymShape::unranked(), body);
    ir::ValueId prev = g.add_input("prev", DType::kFloat32, ir::SymShape::unranked(), body);
    ir::ValueId next = g.add_value("next", DType::kUndefined, ir::SymShape::unranked(), body);
    ir::ValueId row = g.add_value("row", DType::kUndefined, ir::SymShape::unranked(), body);
    if (grows)
      g.add_node("Concat", {prev, prev}, {next}, {{"axis", ir::Attribute::of_int(0)}}, "grow", body);
    else
      g.add_node("Add", {prev, x}, {next}, {}, "add", body);
    g.add_node("Neg", {prev}, {row}, {}, "neg", body);
    g.add_output(cond, body);
    g.add_output(next, body);
    g.add_output(row, body);
    ir::ValueId last = g.add_value("last", DType::kUndefined, ir::SymShape::unranked());
    ir::ValueId rows = g.add_value("rows", DType::kUndefined, ir::SymShape::unranked());
    g.add_node("Loop", {m, ir::kNoValue, x}, {last, rows}, {{"body", ir::Attribute::of_graph(body)}}, "loop");
    g.add_output(last);
    g.add_output(rows);
    ASSERT_TRUE(infer_graph_shapes(g).ok());
    EXPECT_EQ(g.value(last).dtype, DType::kFloat32);
    if (!grows) {
      EXPECT_EQ(g.value(prev).shape.to_string(), "[2,3]");
      EXPECT_EQ(g.value(last).shape.to_string(), "[2,3]");
      ASSERT_TRUE(g.value(rows).shape.has_rank);
      ASSERT_EQ(g.value(rows).shape.rank(), 3u);
      EXPECT_FALSE(g.value(rows).shape.dims[0].is_known());
      EXPECT_EQ(g.value(rows).shape.dims[2].to_string(), "3");
    } else {
      EXPECT_FALSE(g.value(prev).shape.has_rank);
      EXPECT_FALSE(g.value(last).shape.has_rank);
      EXPECT_FALSE(g.value(rows).shape.has_rank);
    }
  }
}

}  // namespace
}  // namespace kiln::ops
