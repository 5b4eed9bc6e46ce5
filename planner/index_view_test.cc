// Index views (planner/index_view.h): the coordinate program of a chain of
// data-movement nodes, run on the host, reads for every element of the
// chain's result exactly the source element the reference executor moved
// there (the source holds its own linear index, so a wrong coordinate shows
// as a wrong value); and the program is as cheap as the chain allows.
#include "planner/index_view.h"

#include <gtest/gtest.h>

#include <string>

#include "engine/ir/text.h"
#include "engine/ops/shape_inference.h"
#include "engine/runtime/reference_executor.h"
#include "planner/lowering.h"
#include "planner/plan_builder.h"

namespace kiln::planner {
namespace {

int count_ops(const CoordProgram& p, CoordOp::Kind kind) {
  int n = 0;
  for (const CoordOp& op : p.ops) n += op.kind == kind;
  return n;
}

int arithmetic_ops(const CoordProgram& p) {
  int n = 0;
  for (const CoordOp& op : p.ops)
    n += op.kind != CoordOp::Kind::kCoord && op.kind != CoordOp::Kind::kConst && op.kind != CoordOp::Kind::kParam;
  return n;
}

// `text`: a chain of view nodes from input %x to the single graph output.
// Composes the chain's view, runs the reference on x = [0, 1, 2, ...] of
// `x_shape` and checks every result element against the program's source
// coordinates (`bindings` bind the graph's symbols). Returns the program.
CoordProgram expect_view_matches(const std::string& text, const Shape& x_shape,
                                 const std::map<std::string, int64_t>& bindings = {}) {
  auto parsed = ir::parse_graph(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status().to_string();
  if (!parsed.ok()) return {};
  ir::Graph& g = **parsed;
  EXPECT_TRUE(ops::infer_graph_shapes(g).ok());
  PlanBuilder builder(g, TargetInfo{}, PlanOptions{});
  const ir::ValueId x = g.main().inputs[0];
  IndexView view = IndexView::identity(builder.value_shape(x));
  for (ir::NodeId nid : g.main().nodes) {
    if (g.node(nid).erased) continue;
    LoweringContext ctx(builder, g, nid);
    const Status s = append_view_node(view, ctx);
    EXPECT_TRUE(s.ok()) << s.to_string();
    if (!s.ok()) return {};
  }
  const CoordProgram program = compile_view(view);
  Tensor xt = Tensor::allocate(DType::kFloat32, x_shape).value();
  for (int64_t i = 0; i < xt.numel(); ++i) xt.set_f64(i, static_cast<double>(i));
  runtime::ReferenceExecutor reference(g);
  auto out = reference.run({xt});
  EXPECT_TRUE(out.ok()) << out.status().to_string();
  if (!out.ok()) return program;
  const Tensor& y = (*out)[0];
  EXPECT_EQ(program.view_rank, std::max<size_t>(1, y.shape().size()));
  for (int64_t i = 0; i < y.numel(); ++i) {
    std::vector<int64_t> c(std::max<size_t>(1, y.shape().size()), 0);
    int64_t r = i;
    for (size_t k = y.shape().size(); k-- > 0;) c[k] = r % y.shape()[k], r /= y.shape()[k];
    auto s = evaluate_coord_program(program, c, bindings);
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    if (!s.ok()) return program;
    EXPECT_EQ(s->size(), std::max<size_t>(1, x_shape.size()));
    int64_t lin = 0;
    for (size_t k = 0; k < x_shape.size(); ++k) {
      EXPECT_GE((*s)[k], 0);
      EXPECT_LT((*s)[k], x_shape[k]);
      lin = lin * x_shape[k] + (*s)[k];
    }
    if (y.get_f64(i) != static_cast<double>(lin)) {
      ADD_FAILURE() << "element " << i << ": the reference moved x[" << y.get_f64(i) << "] there, the view reads x["
                    << lin << "]";
      return program;
    }
  }
  return program;
}

TEST(IndexView, ATransposeIsARenamingOfCoordinates) {
  const CoordProgram p = expect_view_matches(
      "graph @g opset 17 {\n  input %x : f32[2,3,4,5]\n"
      "  %y = Transpose(%x) {perm = [0,2,3,1]} : f32[2,4,5,3]\n  return %y\n}\n",
      {2, 3, 4, 5});
  EXPECT_EQ(arithmetic_ops(p), 0);
  EXPECT_TRUE(p.params.empty());
}

TEST(IndexView, TwoTransposesComposeIntoOne) {
  const CoordProgram p = expect_view_matches(
      "graph @g opset 17 {\n  input %x : f32[2,3,4,5]\n"
      "  %t = Transpose(%x) {perm = [0,2,3,1]} : f32[2,4,5,3]\n"
      "  %y = Transpose(%t) {perm = [0,3,1,2]} : f32[2,3,4,5]\n  return %y\n}\n",
      {2, 3, 4, 5});
  EXPECT_EQ(arithmetic_ops(p), 0);
  for (size_t k = 0; k < 4; ++k) {  // the identity: source coordinate k is view coordinate k
    ASSERT_EQ(p.ops[static_cast<size_t>(p.outputs[k])].kind, CoordOp::Kind::kCoord);
    EXPECT_EQ(p.ops[static_cast<size_t>(p.outputs[k])].index, static_cast<int>(k));
  }
}

// vit's attention: the query part of a QKV projection, split into heads.
TEST(IndexView, SliceReshapeTransposeOfVitAttention) {
  const CoordProgram p = expect_view_matches(
      "graph @g opset 17 {\n  input %x : f32[6,24]\n"
      "  const %st : i64[1] = dense<[8]>\n  const %en : i64[1] = dense<[16]>\n  const %ax : i64[1] = dense<[1]>\n"
      "  const %shape : i64[3] = dense<[6,2,4]>\n"
      "  %q = Slice(%x, %st, %en, %ax) : f32[6,8]\n"
      "  %r = Reshape(%q, %shape) : f32[6,2,4]\n"
      "  %y = Transpose(%r) {perm = [1,0,2]} : f32[2,6,4]\n  return %y\n}\n",
      {6, 24});
  // A merge of (head, lane) into the sliced axis: one multiply-add (by a
  // power of two: still a multiply, as cheap) and the slice's offset.
  EXPECT_EQ(count_ops(p, CoordOp::Kind::kDiv) + count_ops(p, CoordOp::Kind::kMod), 0);
  EXPECT_LE(arithmetic_ops(p), 3);
}

TEST(IndexView, ASplitByPowersOfTwoShiftsAndMasks) {
  const CoordProgram p = expect_view_matches(
      "graph @g opset 17 {\n  input %x : f32[3,32]\n  const %shape : i64[3] = dense<[3,4,8]>\n"
      "  %r = Reshape(%x, %shape) : f32[3,4,8]\n"
      "  %y = Transpose(%r) {perm = [2,0,1]} : f32[8,3,4]\n  return %y\n}\n",
      {3, 32});
  // x[a, 8b + c] = y[c, a, b]: a merge; no division at all.
  EXPECT_EQ(count_ops(p, CoordOp::Kind::kDiv) + count_ops(p, CoordOp::Kind::kMod), 0);
  const CoordProgram split = expect_view_matches(
      "graph @g opset 17 {\n  input %x : f32[3,4,8]\n  const %shape : i64[2] = dense<[3,32]>\n"
      "  %t = Transpose(%x) {perm = [0,1,2]} : f32[3,4,8]\n"
      "  %y = Reshape(%t, %shape) : f32[3,32]\n  return %y\n}\n",
      {3, 4, 8});
  EXPECT_EQ(count_ops(split, CoordOp::Kind::kShr), 1);
  EXPECT_EQ(count_ops(split, CoordOp::Kind::kAnd), 1);
  EXPECT_EQ(count_ops(split, CoordOp::Kind::kDiv) + count_ops(split, CoordOp::Kind::kMod), 0);
}

TEST(IndexView, AReshapeNeitherSplitNorMergeRelinearizes) {
  const CoordProgram p = expect_view_matches(
      "graph @g opset 17 {\n  input %x : f32[4,3,5]\n  const %shape : i64[3] = dense<[2,6,5]>\n"
      "  %t = Transpose(%x) {perm = [1,0,2]} : f32[3,4,5]\n"
      "  %y = Reshape(%t, %shape) : f32[2,6,5]\n  return %y\n}\n",
      {4, 3, 5});
  // [3,4] <-> [2,6]: one group over both axes (a divide and a remainder by
  // 4, strength-reduced); the 5 passes through.
  EXPECT_EQ(count_ops(p, CoordOp::Kind::kShr), 1);
  EXPECT_EQ(count_ops(p, CoordOp::Kind::kAnd), 1);
}

TEST(IndexView, SqueezeUnsqueezeFlattenAreReshapes) {
  const CoordProgram p = expect_view_matches(
      "graph @g opset 17 {\n  input %x : f32[2,1,3,5]\n  const %ax : i64[1] = dense<[1]>\n"
      "  %s = Squeeze(%x, %ax) : f32[2,3,5]\n"
      "  %u = Unsqueeze(%s, %ax) : f32[2,1,3,5]\n"
      "  %t = Transpose(%u) {perm = [0,2,1,3]} : f32[2,3,1,5]\n"
      "  %f = Flatten(%t) {axis = 2} : f32[6,5]\n"
      "  %y = Identity(%f) : f32[6,5]\n  return %y\n}\n",
      {2, 1, 3, 5});
  EXPECT_EQ(count_ops(p, CoordOp::Kind::kDiv), 1);  // 6 -> (2,3): a split by 3
  EXPECT_EQ(count_ops(p, CoordOp::Kind::kMod), 1);
}

TEST(IndexView, NegativeStepsAndStridedSlices) {
  expect_view_matches(
      "graph @g opset 17 {\n  input %x : f32[5,7]\n"
      "  const %st : i64[2] = dense<[-1,1]>\n  const %en : i64[2] = dense<[-9223372036854775807,7]>\n"
      "  const %ax : i64[2] = dense<[1,0]>\n  const %sp : i64[2] = dense<[-2,2]>\n"
      "  %y = Slice(%x, %st, %en, %ax, %sp) : f32[2,4]\n  return %y\n}\n",
      {5, 7});
}

TEST(IndexView, ExpandReadsCoordinateZeroOfBroadcastAxes) {
  expect_view_matches(
      "graph @g opset 17 {\n  input %x : f32[3,1]\n  const %shape : i64[3] = dense<[2,3,4]>\n"
      "  %e = Expand(%x, %shape) : f32[2,3,4]\n"
      "  %y = Transpose(%e) {perm = [2,0,1]} : f32[4,2,3]\n  return %y\n}\n",
      {3, 1});
}

// torch's MultiheadAttention export: q, k, v = proj[0], proj[1], proj[2]
// of a [3, ...] transpose. A scalar index drops the axis, a one-element
// index keeps it (extent 1), a negative one counts from the end.
TEST(IndexView, GatherOfAConstantIndexIsASliceOfOneElement) {
  const CoordProgram p = expect_view_matches(
      "graph @g opset 17 {\n  input %x : f32[2,4,3,5]\n  const %i : i64[] = dense<[2]>\n"
      "  %t = Transpose(%x) {perm = [2,0,1,3]} : f32[3,2,4,5]\n"
      "  %y = Gather(%t, %i) {axis = 0} : f32[2,4,5]\n  return %y\n}\n",
      {2, 4, 3, 5});
  EXPECT_EQ(arithmetic_ops(p), 0);  // the index is a constant coordinate
  expect_view_matches(
      "graph @g opset 17 {\n  input %x : f32[3,6]\n  const %i : i64[1] = dense<[-2]>\n"
      "  %y = Gather(%x, %i) {axis = 1} : f32[3,1]\n  return %y\n}\n",
      {3, 6});
  expect_view_matches(
      "graph @g opset 17 {\n  input %x : f32[3,6]\n  const %i : i32[] = dense<[1]>\n"
      "  %g = Gather(%x, %i) {axis = -2} : f32[6]\n"
      "  const %shape : i64[2] = dense<[2,3]>\n"
      "  %y = Reshape(%g, %shape) : f32[2,3]\n  return %y\n}\n",
      {3, 6});
}

// Gathers the planner cannot read as a view: several indices, indices on
// the device, an index outside the axis (which shape inference already
// refuses; the planner refuses it too, on the declared shapes).
TEST(IndexView, OtherGathersAreRefused) {
  for (const char* text : {
           "graph @g opset 17 {\n  input %x : f32[3,6]\n  const %i : i64[2] = dense<[0,2]>\n"
           "  %y = Gather(%x, %i) {axis = 0} : f32[2,6]\n  return %y\n}\n",
           "graph @g opset 17 {\n  input %x : f32[3,6]\n  input %i : i64[]\n"
           "  %y = Gather(%x, %i) {axis = 0} : f32[6]\n  return %y\n}\n",
           "graph @g opset 17 {\n  input %x : f32[3,6]\n  const %i : i64[] = dense<[3]>\n"
           "  %y = Gather(%x, %i) {axis = 0} : f32[6]\n  return %y\n}\n",
       }) {
    auto parsed = ir::parse_graph(text);
    ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
    ir::Graph& g = **parsed;
    const bool one_constant_index = std::string(text).find("dense<[3]>") != std::string::npos;
    const Status inferred = ops::infer_graph_shapes(g);
    if (one_constant_index)
      EXPECT_NE(inferred.message().find("index 3 is out of range for axis 0 of size 3"), std::string::npos)
          << inferred.to_string();
    else
      ASSERT_TRUE(inferred.ok()) << inferred.to_string();
    PlanBuilder builder(g, TargetInfo{}, PlanOptions{});
    IndexView view = IndexView::identity(builder.value_shape(g.main().inputs[0]));
    const ir::NodeId nid = g.main().nodes[0];
    LoweringContext ctx(builder, g, nid);
    const Status s = append_view_node(view, ctx);
    EXPECT_EQ(s.code(), StatusCode::kUnimplemented) << text << s.to_string();
    EXPECT_EQ(is_view_node(g, g.node(nid)), one_constant_index) << text;
  }
}

// swin's shifted windows: torch.roll(x, (-3, 2), (1, 2)) as exported, two
// Concats of two Slices. Composed through roll_of (the planner composes a
// roll from its Slices' source), the program reads what the reference moved.
TEST(IndexView, ARollOfSlicesAndConcatsIsARotation) {
  auto parsed = ir::parse_graph(
      "graph @g opset 17 {\n  input %x : f32[2,7,8,3]\n"
      "  const %s3 : i64[1] = dense<[3]>\n  const %end : i64[1] = dense<[9223372036854775807]>\n"
      "  const %zero : i64[1] = dense<[0]>\n  const %m2 : i64[1] = dense<[-2]>\n"
      "  const %ax1 : i64[1] = dense<[1]>\n  const %ax2 : i64[1] = dense<[-2]>\n"
      "  %a = Slice(%x, %s3, %end, %ax1) : f32[2,4,8,3]\n"
      "  %b = Slice(%x, %zero, %s3, %ax1) : f32[2,3,8,3]\n"
      "  %r = Concat(%a, %b) {axis = 1} : f32[2,7,8,3]\n"
      "  %c = Slice(%r, %m2, %end, %ax2) : f32[2,7,2,3]\n"
      "  %d = Slice(%r, %zero, %m2, %ax2) : f32[2,7,6,3]\n"
      "  %y = Concat(%c, %d) {axis = 2} : f32[2,7,8,3]\n  return %y\n}\n");
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  ir::Graph& g = **parsed;
  ASSERT_TRUE(ops::infer_graph_shapes(g).ok());
  const ir::Node& r = g.node(g.value(g.find_value("r")).producer);
  const ir::Node& y = g.node(g.value(g.find_value("y")).producer);
  ASSERT_TRUE(roll_of(g, r) && roll_of(g, y));
  EXPECT_TRUE(is_view_node(g, y));
  EXPECT_EQ(roll_of(g, r)->shift, 3);
  EXPECT_EQ(roll_of(g, y)->shift, 6);
  EXPECT_EQ(roll_of(g, y)->source, g.find_value("r"));
  IndexView view = IndexView::identity({ir::Dim(2), ir::Dim(7), ir::Dim(8), ir::Dim(3)});
  view.rotate(roll_of(g, r)->axis, roll_of(g, r)->shift);
  view.rotate(roll_of(g, y)->axis, roll_of(g, y)->shift);
  EXPECT_EQ(view.describe(), "roll_roll");
  const CoordProgram p = compile_view(view);
  EXPECT_EQ(count_ops(p, CoordOp::Kind::kWrap), 1);  // 7: add and wrap
  EXPECT_EQ(count_ops(p, CoordOp::Kind::kAnd), 1);   // 8: add and mask
  EXPECT_EQ(count_ops(p, CoordOp::Kind::kDiv) + count_ops(p, CoordOp::Kind::kMod), 0);
  Tensor xt = Tensor::allocate(DType::kFloat32, {2, 7, 8, 3}).value();
  for (int64_t i = 0; i < xt.numel(); ++i) xt.set_f64(i, static_cast<double>(i));
  auto out = runtime::ReferenceExecutor(g).run({xt});
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  const Tensor& yt = (*out)[0];
  for (int64_t i = 0; i < yt.numel(); ++i) {
    const std::vector<int64_t> c = {i / 168, i / 24 % 7, i / 3 % 8, i % 3};
    auto s = evaluate_coord_program(p, c);
    ASSERT_TRUE(s.ok());
    const int64_t lin = (((*s)[0] * 7 + (*s)[1]) * 8 + (*s)[2]) * 3 + (*s)[3];
    ASSERT_EQ(yt.get_f64(i), static_cast<double>(lin)) << "element " << i;
  }
  std::vector<std::string> names, coords;
  for (size_t j = 0; j < p.params.size(); ++j) names.push_back("X_V" + std::to_string(j));
  EXPECT_NE(coord_program_glsl(p, names, &coords).find(" ? "), std::string::npos);
}

// Concats that are not rolls: the Slices overlap, or leave a gap, or come
// from two tensors.
TEST(IndexView, OtherConcatsOfSlicesAreNotRolls) {
  for (const char* second : {"%b = Slice(%x, %zero, %s4, %ax1) : f32[2,4]",
                             "%b = Slice(%x, %zero, %s2, %ax1) : f32[2,2]",
                             "%b = Slice(%w, %zero, %s3, %ax1) : f32[2,3]"}) {
    auto parsed = ir::parse_graph(
        std::string("graph @g opset 17 {\n  input %x : f32[2,7]\n  input %w : f32[2,7]\n"
                    "  const %s2 : i64[1] = dense<[2]>\n  const %s3 : i64[1] = dense<[3]>\n"
                    "  const %s4 : i64[1] = dense<[4]>\n  const %end : i64[1] = dense<[7]>\n"
                    "  const %zero : i64[1] = dense<[0]>\n  const %ax1 : i64[1] = dense<[1]>\n"
                    "  %a = Slice(%x, %s3, %end, %ax1) : f32[2,4]\n  ") +
        second + "\n  %y = Concat(%a, %b) {axis = 1} : f32[2,?]\n  return %y\n}\n");
    ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
    ir::Graph& g = **parsed;
    ASSERT_TRUE(ops::infer_graph_shapes(g).ok());
    const ir::Node& y = g.node(g.value(g.find_value("y")).producer);
    EXPECT_FALSE(roll_of(g, y)) << second;
    EXPECT_FALSE(is_view_node(g, y)) << second;
  }
}

TEST(IndexView, SymbolicDimsBecomeParameters) {
  const CoordProgram p = expect_view_matches(
      "graph @g opset 17 {\n  input %x : f32[n,6,4]\n  const %shape : i64[4] = dense<[0,2,3,4]>\n"
      "  %r = Reshape(%x, %shape) : f32[n,2,3,4]\n"
      "  %y = Transpose(%r) {perm = [0,3,1,2]} : f32[n,4,2,3]\n  return %y\n}\n",
      {5, 6, 4}, {{"n", 5}});
  EXPECT_EQ(count_ops(p, CoordOp::Kind::kMul), 1);  // 6 <- (2,3): a merge
  for (const ir::Dim& d : p.params) EXPECT_TRUE(d.is_const()) << d.to_string();  // n never enters the map
  // A symbolic split needs its extent at run time.
  const CoordProgram s = expect_view_matches(
      "graph @g opset 17 {\n  input %x : f32[2,n,3]\n  const %shape : i64[2] = dense<[2,-1]>\n"
      "  %t = Transpose(%x) {perm = [0,2,1]} : f32[2,3,n]\n"
      "  %y = Reshape(%t, %shape) : f32[2,?]\n  return %y\n}\n",
      {2, 4, 3}, {{"n", 4}});
  bool symbolic = false;
  for (const ir::Dim& d : s.params) symbolic = symbolic || !d.is_const();
  EXPECT_TRUE(symbolic);
}

TEST(IndexView, GlslNamesEveryRegisterAndParameter) {
  IndexView v = IndexView::identity({ir::Dim(6), ir::Dim::symbol("n")});
  v.transpose({1, 0});
  v.reshape({ir::Dim::symbol("n"), ir::Dim(2), ir::Dim(3)});
  const CoordProgram p = compile_view(v);
  std::vector<std::string> names, coords;
  for (size_t j = 0; j < p.params.size(); ++j) names.push_back("X_V" + std::to_string(j));
  const std::string glsl = coord_program_glsl(p, names, &coords);
  ASSERT_EQ(coords.size(), 2u);
  EXPECT_NE(glsl.find("X_V"), std::string::npos) << glsl;
  EXPECT_EQ(v.describe(), "transpose_reshape");
  auto at = evaluate_coord_program(p, {1, 1, 2}, {{"n", 4}});
  ASSERT_TRUE(at.ok());
  EXPECT_EQ(*at, (std::vector<int64_t>{5, 1}));  // y[1,1,2] = t[1, 5] = x[5, 1]
}

}  // namespace
}  // namespace kiln::planner

namespace kiln::planner {
namespace {

std::vector<ir::Dim> dims_of(const std::vector<int64_t>& v) {
  std::vector<ir::Dim> d;
  for (int64_t x : v) d.push_back(ir::Dim(x));
  return d;
}

// contiguous_run's promise, checked element by element through the view's
// program: every run of R view elements starting at a multiple of R reads R
// consecutive source elements starting at a multiple of R.
void expect_runs_hold(const IndexView& view, int64_t run) {
  const CoordProgram p = compile_view(view);
  std::vector<int64_t> shape, source;
  for (const ir::Dim& d : view.shape) shape.push_back(d.value());
  for (const ir::Dim& d : view.source_shape) source.push_back(d.value());
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  const auto source_index = [&](int64_t i) {
    std::vector<int64_t> c(shape.size());
    for (size_t k = shape.size(); k-- > 0;) c[k] = i % shape[k], i /= shape[k];
    const std::vector<int64_t> s = evaluate_coord_program(p, c).value();
    int64_t lin = 0;
    for (size_t k = 0; k < source.size(); ++k) lin = lin * source[k] + s[k];
    return lin;
  };
  for (int64_t i = 0; i < n; i += run) {
    const int64_t s0 = source_index(i);
    ASSERT_EQ(s0 % run, 0) << view.describe() << " run " << run << " at " << i;
    for (int64_t j = 1; j < run; ++j) ASSERT_EQ(source_index(i + j), s0 + j) << view.describe() << " at " << i + j;
  }
}

TEST(IndexView, ContiguousRuns) {
  // vit's attention output [heads, tokens, d] read as [tokens, heads * d].
  IndexView vit = IndexView::identity(dims_of({3, 5, 8}));
  vit.transpose({1, 0, 2});
  vit.reshape(dims_of({5, 24}));
  EXPECT_EQ(contiguous_run(vit), 8);
  expect_runs_hold(vit, 8);
  // Reshapes only: the whole tensor.
  IndexView flat = IndexView::identity(dims_of({4, 6}));
  flat.reshape(dims_of({24}));
  EXPECT_EQ(contiguous_run(flat), 24);
  // A transpose of the last axis: nothing contiguous.
  IndexView t = IndexView::identity(dims_of({4, 6}));
  t.transpose({1, 0});
  EXPECT_EQ(contiguous_run(t), 1);
  // A slice of steps 1 along the last axis at an offset: gcd(extent, start, source extent) = 8.
  IndexView s = IndexView::identity(dims_of({3, 48}));
  s.slice(dims_of({0, 16}), {1, 1}, dims_of({3, 16}));
  EXPECT_EQ(contiguous_run(s), 16);
  expect_runs_hold(s, 16);
  IndexView s8 = IndexView::identity(dims_of({3, 48}));
  s8.slice(dims_of({0, 8}), {1, 1}, dims_of({3, 16}));
  EXPECT_EQ(contiguous_run(s8), 8);
  expect_runs_hold(s8, 8);
  // A strided slice of the last axis, a broadcast last axis: 1.
  IndexView strided = IndexView::identity(dims_of({3, 48}));
  strided.slice(dims_of({0, 0}), {1, 2}, dims_of({3, 24}));
  EXPECT_EQ(contiguous_run(strided), 1);
  IndexView b = IndexView::identity(dims_of({4, 1}));
  b.broadcast(dims_of({4, 8}));
  EXPECT_EQ(contiguous_run(b), 1);
  // A broadcast leading axis and a slice of rows keep the rows.
  IndexView rows = IndexView::identity(dims_of({1, 6, 16}));
  rows.broadcast(dims_of({2, 6, 16}));
  rows.slice(dims_of({0, 2, 0}), {1, 1, 1}, dims_of({2, 3, 16}));
  EXPECT_EQ(contiguous_run(rows), 16);
  expect_runs_hold(rows, 16);
  // A symbolic leading dim leaves the trailing block.
  IndexView sym = IndexView::identity({ir::Dim(3), ir::Dim::symbol("t"), ir::Dim(8)});
  sym.transpose({1, 0, 2});
  EXPECT_EQ(contiguous_run(sym), 8);
}

// A view read through a view of its own (attention's keys with the last two
// axes swapped back): transposes compose, and one that undoes the last
// leaves the reshape alone, so the runs along the head dim come back.
TEST(IndexView, AppendComposesAViewOfTheView) {
  IndexView k = IndexView::identity(dims_of({6, 16}));
  k.reshape(dims_of({6, 2, 8}));
  k.transpose({1, 2, 0});  // [heads, d, tokens]
  EXPECT_EQ(contiguous_run(k), 1);
  IndexView swap = IndexView::identity(k.shape);
  swap.transpose({0, 2, 1});
  IndexView kt = k;
  kt.append(swap);
  ASSERT_EQ(kt.shape.size(), 3u);
  EXPECT_TRUE(kt.shape[0].same_as(ir::Dim(2)) && kt.shape[1].same_as(ir::Dim(6)) && kt.shape[2].same_as(ir::Dim(8)));
  ASSERT_EQ(kt.steps.size(), 2u);
  EXPECT_EQ(kt.steps[1].perm, (std::vector<int>{1, 0, 2}));
  EXPECT_EQ(contiguous_run(kt), 8);
  IndexView undo = IndexView::identity(k.shape);
  undo.transpose({2, 0, 1});
  IndexView back = k;
  back.append(undo);
  ASSERT_EQ(back.steps.size(), 1u);
  EXPECT_EQ(back.steps[0].kind, ViewStep::Kind::kReshape);
}

// Pixel shuffle (DepthToSpace, both modes) and its inverse (SpaceToDepth):
// ONNX's reshape -> transpose -> reshape as one view. A power-of-two block
// splits and merges with shifts, masks and multiply-adds only.
TEST(IndexView, DepthToSpaceDcrIsASplitAndAMergeOfBlocks) {
  const CoordProgram p = expect_view_matches(
      "graph @g opset 17 {\n  input %x : f32[2,8,3,5]\n"
      "  %y = DepthToSpace(%x) {blocksize = 2} : f32[2,2,6,10]\n  return %y\n}\n",
      {2, 8, 3, 5});
  EXPECT_EQ(count_ops(p, CoordOp::Kind::kDiv) + count_ops(p, CoordOp::Kind::kMod), 0);
  EXPECT_EQ(count_ops(p, CoordOp::Kind::kShr), 2);  // h = y >> 1, w = x >> 1
  EXPECT_EQ(count_ops(p, CoordOp::Kind::kAnd), 2);  // the block offsets y & 1, x & 1
  EXPECT_LE(arithmetic_ops(p), 8);
}

TEST(IndexView, DepthToSpaceCrdWithAnOddBlock) {
  const CoordProgram p = expect_view_matches(
      "graph @g opset 17 {\n  input %x : f32[1,18,2,3]\n"
      "  %y = DepthToSpace(%x) {blocksize = 3, mode = \"CRD\"} : f32[1,2,6,9]\n  return %y\n}\n",
      {1, 18, 2, 3});
  EXPECT_EQ(count_ops(p, CoordOp::Kind::kDiv), 2);  // by 3: no strength reduction
  EXPECT_EQ(count_ops(p, CoordOp::Kind::kMod), 2);
}

TEST(IndexView, SpaceToDepthIsTheInverseMap) {
  expect_view_matches(
      "graph @g opset 17 {\n  input %x : f32[1,3,4,6]\n"
      "  %y = SpaceToDepth(%x) {blocksize = 2} : f32[1,12,2,3]\n  return %y\n}\n",
      {1, 3, 4, 6});
  // Through a reshape before it and a DepthToSpace after it, and with a
  // symbolic batch, which never enters the map.
  const CoordProgram chain = expect_view_matches(
      "graph @g opset 17 {\n  input %x : f32[n,12,16]\n  const %shape : i64[4] = dense<[0,3,4,16]>\n"
      "  %r = Reshape(%x, %shape) : f32[n,3,4,16]\n"
      "  %s = SpaceToDepth(%r) {blocksize = 2} : f32[n,12,2,8]\n"
      "  %y = DepthToSpace(%s) {blocksize = 2, mode = \"CRD\"} : f32[n,3,4,16]\n  return %y\n}\n",
      {2, 12, 16}, {{"n", 2}});
  for (const ir::Dim& d : chain.params) EXPECT_TRUE(d.is_const()) << d.to_string();
}

TEST(IndexView, DepthToSpaceNeedsItsAttributesRight) {
  auto parsed = ir::parse_graph(
      "graph @g opset 17 {\n  input %x : f32[1,8,2,2]\n"
      "  %y = DepthToSpace(%x) {blocksize = 2} : f32[1,2,4,4]\n  return %y\n}\n");
  ASSERT_TRUE(parsed.ok());
  ir::Graph& g = **parsed;
  ASSERT_TRUE(ops::infer_graph_shapes(g).ok());
  g.node(g.main().nodes[0]).attrs["mode"] = ir::Attribute::of_string("XYZ");
  PlanBuilder builder(g, TargetInfo{}, PlanOptions{});
  IndexView view = IndexView::identity(builder.value_shape(g.main().inputs[0]));
  LoweringContext ctx(builder, g, g.main().nodes[0]);
  const Status s = append_view_node(view, ctx);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.to_string().find("DCR or CRD"), std::string::npos) << s.to_string();
}

}  // namespace
}  // namespace kiln::planner
