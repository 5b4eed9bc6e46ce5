// The kernel templates of shaders/: the substitution syntax and its errors,
// and every template (every section of a sectioned one) compiled into the
// kernels the planner fills it into, each checked with spirv-val. The case
// table names the templates each graph exercises; a test fails when a
// template of shaders/ is in no case, or a case's kernels do not contain
// the template's text.
#include "planner/shader_template.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/ir/text.h"
#include "engine/ops/shape_inference.h"
#include "planner/execution_plan.h"
#include "planner/glsl_codegen.h"
#include "planner/image_convert.h"
#include "planner/kernel.h"
#include "planner/plan_hints.h"
#include "planner/testing/op_check.h"

namespace kiln::planner {
namespace {

using testing::expect_valid_spirv;
using testing::random_tensor;

ir::Attribute i_attr(int64_t v) { return ir::Attribute::of_int(v); }

// --- the syntax ----------------------------------------------------------------------------

std::string fill(std::string_view text, const ShaderArgs& args) {
  StatusOr<std::string> r = fill_template_text("t", text, args);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? *r : std::string();
}

Status fill_error(std::string_view text, const ShaderArgs& args) {
  StatusOr<std::string> r = fill_template_text("t", text, args);
  EXPECT_FALSE(r.ok()) << "filled as:\n" << (r.ok() ? *r : "");
  return r.ok() ? ok_status() : r.status();
}

TEST(ShaderTemplate, InlineAndLinePlaceholders) {
  EXPECT_EQ(fill("const int BM = @BM@, BN = @BN@;\n", ShaderArgs().set("BM", 64).set("BN", "32")),
            "const int BM = 64, BN = 32;\n");
  // A placeholder alone on its line stands for zero or more whole lines,
  // indented as the placeholder (empty lines stay empty).
  const std::string t = "a\n  @BLOCK@\nb\n";
  EXPECT_EQ(fill(t, ShaderArgs().set("BLOCK", "x;\n\n  y;\n")), "a\n  x;\n\n    y;\nb\n");
  EXPECT_EQ(fill(t, ShaderArgs().set("BLOCK", "x;")), "a\n  x;\nb\n");
  EXPECT_EQ(fill(t, ShaderArgs().set("BLOCK", "")), "a\nb\n");
  EXPECT_EQ(fill("@BLOCK@\n", ShaderArgs().set("BLOCK", "  x;\n")), "  x;\n");
}

TEST(ShaderTemplate, ConditionalsAndTemplateComments) {
  const std::string t =
      "//! dropped\n"
      "head\n"
      "//@if A\n"
      "a\n"
      "  //@if B\n"
      "ab\n"
      "  //@else\n"
      "a_not_b @X@\n"
      "  //@end\n"
      "//@else\n"
      "not_a\n"
      "//@end\n"
      "// kept\n";
  EXPECT_EQ(fill(t, ShaderArgs().flag("A", true).flag("B", true).set("X", "1")), "head\na\nab\n// kept\n");
  EXPECT_EQ(fill(t, ShaderArgs().flag("A", true).flag("B", false).set("X", "1")), "head\na\na_not_b 1\n// kept\n");
  // Inside a dropped branch neither flags nor placeholders need values.
  EXPECT_EQ(fill(t, ShaderArgs().flag("A", false)), "head\nnot_a\n// kept\n");
}

TEST(ShaderTemplate, ErrorsNameTheProblem) {
  EXPECT_NE(fill_error("x = @X@;\n", {}).message().find("no value for placeholder @X@"), std::string::npos);
  EXPECT_NE(fill_error("x;\n", ShaderArgs().set("X", "1")).message().find("'X' is not a placeholder"),
            std::string::npos);
  EXPECT_NE(fill_error("//@if F\nx\n//@end\n", {}).message().find("no value for flag 'F'"), std::string::npos);
  EXPECT_NE(fill_error("x\n", ShaderArgs().flag("F", true)).message().find("flag 'F' is not used"),
            std::string::npos);
  EXPECT_NE(fill_error("//@if F\nx\n", ShaderArgs().flag("F", true)).message().find("without //@end"),
            std::string::npos);
  EXPECT_NE(fill_error("//@end\n", {}).message().find("//@end without //@if"), std::string::npos);
  EXPECT_NE(fill_error("//@frobnicate\n", {}).message().find("unknown directive"), std::string::npos);
  EXPECT_NE(fill_error("a @ b\n", {}).message().find("line 1: stray '@'"), std::string::npos);
  const StatusOr<std::string> unknown = try_fill_shader("no_such_kernel.comp", {});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
  EXPECT_NE(unknown.status().message().find("no_such_kernel.comp"), std::string::npos);
  const StatusOr<std::string> section = try_fill_shader("elementwise_math.glsl#no_such_helper", {});
  ASSERT_FALSE(section.ok());
  EXPECT_EQ(section.status().code(), StatusCode::kNotFound);
  // A sectioned file is filled one section at a time.
  EXPECT_FALSE(try_fill_shader("elementwise_math.glsl", {}).ok());
}

TEST(ShaderTemplate, SectionsRunToTheNextSection) {
  const StatusOr<std::string> sigmoid = try_fill_shader("elementwise_math.glsl#sigmoid", {});
  ASSERT_TRUE(sigmoid.ok()) << sigmoid.status().to_string();
  EXPECT_EQ(sigmoid->rfind("float kiln_sigmoid(float x) {\n", 0), 0u) << *sigmoid;
  EXPECT_EQ(sigmoid->find("kiln_tanh"), std::string::npos) << *sigmoid;
}

// --- every template compiles -------------------------------------------------------------

// The names a template answers to: the file, or file#section for each
// section of a sectioned file.
std::vector<std::string> template_names(const EmbeddedShader& s) {
  std::vector<std::string> names;
  size_t pos = 0;
  while (pos < s.text.size()) {
    const size_t end = std::min(s.text.find('\n', pos), s.text.size());
    const std::string_view line = s.text.substr(pos, end - pos);
    if (line.rfind("//@section ", 0) == 0) names.push_back(std::string(s.name) + "#" + std::string(line.substr(11)));
    pos = end + 1;
  }
  if (names.empty()) names.push_back(std::string(s.name));
  return names;
}

// Lines of template `name` that every filling contains, as their text
// between placeholders: the first few lines outside //@if blocks that are
// not directives, comments or whole-line placeholders. With `any_depth`
// lines inside //@if blocks count too (a filling holds one of them).
using LinePattern = std::vector<std::string>;
std::vector<LinePattern> fixed_lines(const std::string& name, bool any_depth = false) {
  const size_t hash = name.find('#');
  std::string_view text;
  for (const EmbeddedShader& s : embedded_shaders())
    if (s.name == name.substr(0, hash)) text = s.text;
  if (hash != std::string::npos) {
    text = text.substr(text.find("//@section " + name.substr(hash + 1) + "\n"));
    text = text.substr(text.find('\n') + 1);
  }
  std::vector<LinePattern> out;
  int depth = 0;
  size_t pos = 0;
  while (pos < text.size() && out.size() < (any_depth ? 8u : 3u)) {
    const size_t end = std::min(text.find('\n', pos), text.size());
    const std::string line(text.substr(pos, end - pos));
    pos = end + 1;
    const size_t b = line.find_first_not_of(" \t");
    const std::string t = b == std::string::npos ? "" : line.substr(b);
    if (t.rfind("//@section", 0) == 0) break;
    if (t.rfind("//@if", 0) == 0) ++depth;
    if (t.rfind("//@end", 0) == 0) --depth;
    const bool block = t.size() > 1 && t[0] == '@' && t.back() == '@';
    if ((depth != 0 && !any_depth) || t.rfind("//", 0) == 0 || block) continue;
    LinePattern pieces;
    size_t q = 0;
    bool literal = true;
    while (q <= line.size()) {
      const size_t at = std::min(line.find('@', q), line.size());
      if (literal && at > q) pieces.push_back(line.substr(q, at - q));
      literal = !literal;
      q = at + 1;
    }
    size_t solid = 0;  // non-blank characters outside placeholders
    for (const std::string& piece : pieces)
      solid += std::count_if(piece.begin(), piece.end(), [](char ch) { return ch != ' '; });
    if (solid >= 8) out.push_back(pieces);
  }
  return out;
}

// Whether a line of `glsl` holds the pieces of `p` in order.
bool has_line(const std::string& glsl, const LinePattern& p) {
  size_t pos = 0;
  while (pos < glsl.size()) {
    const size_t end = std::min(glsl.find('\n', pos), glsl.size());
    const std::string_view line(glsl.data() + pos, end - pos);
    size_t at = 0;
    bool all = true;
    for (const std::string& piece : p) {
      at = line.find(piece, at);
      if (at == std::string_view::npos) {
        all = false;
        break;
      }
      at += piece.size();
    }
    if (all) return true;
    pos = end + 1;
  }
  return false;
}

struct Case {
  std::string what;
  ir::Graph graph;
  std::vector<std::string> templates;  // what its kernels are filled from
  TargetInfo target;
};

TargetInfo base_target() {
  TargetInfo t;
  t.fp16_storage = true;
  t.vulkan_version = (1u << 22) | (1u << 12);  // VK_API_VERSION_1_1
  return t;
}

// What an NVIDIA GPU reports through VK_NV_cooperative_matrix.
TargetInfo coopmat_target() {
  TargetInfo t = base_target();
  t.fp16_arithmetic = true;
  t.subgroup_size = 32;
  t.max_shared_memory = 49152;
  t.coopmat = CoopMatFlavour::kNV;
  t.coopmat_f16_shapes = {{16, 8, 8, true}, {16, 8, 16, true}};
  return t;
}

TargetInfo subgroup_target() {
  TargetInfo t = base_target();
  t.subgroup_size = 32;
  t.subgroup_arithmetic = true;
  return t;
}

// A one-node graph over inputs of `dtype` (shapes may be symbolic) and
// constants, its outputs inferred.
ir::Graph graph(const std::string& op, DType dtype, const std::vector<ir::SymShape>& shapes,
                const std::vector<Tensor>& constants = {}, std::map<std::string, ir::Attribute> attrs = {},
                size_t outputs = 1) {
  ir::Graph g;
  std::vector<ir::ValueId> ins;
  for (size_t i = 0; i < shapes.size(); ++i) ins.push_back(g.add_input("in" + std::to_string(i), dtype, shapes[i]));
  for (size_t i = 0; i < constants.size(); ++i) ins.push_back(g.add_constant("c" + std::to_string(i), constants[i]));
  std::vector<ir::ValueId> outs;
  for (size_t i = 0; i < outputs; ++i)
    outs.push_back(g.add_value("out" + std::to_string(i), DType::kUndefined, ir::SymShape::unranked()));
  const ir::NodeId n = g.add_node(op, ins, outs, std::move(attrs));
  const Status finished = testing::finish_one_node_graph(g, n);
  EXPECT_TRUE(finished.ok()) << op << ": " << finished.to_string();
  return g;
}

ir::SymShape dims(std::vector<int64_t> d) { return ir::SymShape::from_concrete(d); }

// `g` with the kiln.kernel hint `hint` on every node.
ir::Graph hinted(ir::Graph g, const std::string& hint) {
  for (size_t n = 0; n < g.num_nodes(); ++n) g.node(static_cast<ir::NodeId>(n)).annotations[kKernelKey] = hint;
  return g;
}

// An attention fusion group (fusion_attention.h) over a symbolic length `n`
// (or a constant one).
ir::Graph attention_graph(const std::string& n = "n") {
  const std::string g = " #{kiln.fusion_group = \"a\"}";
  auto parsed = ir::parse_graph(
      "graph @g opset 17 {\n  input %q : f32[2," + n + ",8]\n  input %kt : f32[2,8," + n + "]\n  input %v : f32[2," + n +
      ",8]\n  input %mask : f32[1,1," + n + "]\n"
      "  %s = MatMul(%q, %kt)" + g + " : f32[2," + n + "," + n + "]\n  %m = Add(%s, %mask)" + g + " : f32[2," + n + "," +
      n + "]\n  %p = Softmax(%m) {axis = -1}" + g + " : f32[2," + n + "," + n + "]\n"
      "  %y = MatMul(%p, %v)" + g + " : f32[2," + n + ",8]\n  return %y\n}\n");
  EXPECT_TRUE(parsed.ok()) << parsed.status().to_string();
  if (!parsed.ok()) return ir::Graph();
  EXPECT_TRUE(ops::infer_graph_shapes(**parsed).ok());
  return std::move(**parsed);
}

// A split MatMul and the LayerNormalization of its output in one fusion
// group (fusion_row_norm.h).
ir::Graph row_norm_graph() {
  const std::string g = " #{kiln.fusion_group = \"r\"}";
  auto parsed = ir::parse_graph(
      "graph @g opset 17 {\n  input %x : f32[6,256]\n  input %w : f32[256,40]\n  input %s : f32[40]\n"
      "  %m = MatMul(%x, %w) #{kiln.fusion_group = \"r\", kiln.kernel = \"split_k=4\"} : f32[6,40]\n"
      "  %n = LayerNormalization(%m, %s) {axis = -1}" + g + " : f32[6,40]\n  return %n\n}\n");
  EXPECT_TRUE(parsed.ok()) << parsed.status().to_string();
  if (!parsed.ok()) return ir::Graph();
  EXPECT_TRUE(ops::infer_graph_shapes(**parsed).ok());
  return std::move(**parsed);
}

// A depthwise conv, a Transpose to channels last and a LayerNormalization
// over the channels in one fusion group (fusion_dw_norm.h), the
// channels-last values packed on the channels as images.
ir::Graph dw_norm_graph() {
  const std::string g = " #{kiln.fusion_group = \"d\"}", packed = " #{kiln.packed_axis = \"3\"}";
  std::string taps;  // the conv's weight must be a constant
  for (int i = 0; i < 12 * 49; ++i) taps += (i ? "," : "") + std::to_string(i % 5 - 2);
  auto parsed = ir::parse_graph(
      "graph @g opset 17 {\n  input %x : f32[1,12,9,10]\n  const %w : f32[12,1,7,7] = dense<[" + taps +
      "]>\n  input %b : f32[12]\n"
      "  %d = Conv(%x, %w, %b) {group = 12, pads = [3,3,3,3]}" + g + " : f32[1,12,9,10]\n"
      "  %t = Transpose(%d) {perm = [0,2,3,1]}" + g + " : f32[1,9,10,12]" + packed + "\n"
      "  %n = LayerNormalization(%t, %b, %b) {axis = -1}" + g + " : f32[1,9,10,12]" + packed + "\n  return %n\n}\n");
  EXPECT_TRUE(parsed.ok()) << parsed.status().to_string();
  if (!parsed.ok()) return ir::Graph();
  EXPECT_TRUE(ops::infer_graph_shapes(**parsed).ok());
  return std::move(**parsed);
}

// Squeeze-and-excitation in one fusion group (fusion_squeeze_excite.h):
// GlobalAveragePool, a 1x1 conv with SiLU, a 1x1 conv with its sigmoid gate.
ir::Graph squeeze_excite_graph() {
  const std::string g = " #{kiln.fusion_group = \"s\"}";
  const auto dense = [](int n) {
    std::string v;
    for (int i = 0; i < n; ++i) v += (i ? "," : "") + std::to_string(i % 7 - 3);
    return "dense<[" + v + "]>";
  };
  auto parsed = ir::parse_graph(
      "graph @g opset 17 {\n  input %x : f32[2,24,5,7]\n  const %w1 : f32[6,24,1,1] = " + dense(144) +
      "\n  const %b1 : f32[6] = " + dense(6) + "\n  const %w2 : f32[24,6,1,1] = " + dense(144) +
      "\n  %p = GlobalAveragePool(%x)" + g + " : f32[2,24,1,1]\n  %h = Conv(%p, %w1, %b1)" + g +
      " : f32[2,6,1,1]\n  %s = Sigmoid(%h)" + g + " : f32[2,6,1,1]\n  %a = Mul(%h, %s)" + g +
      " : f32[2,6,1,1]\n  %e = Conv(%a, %w2)" + g + " : f32[2,24,1,1]\n  %y = Sigmoid(%e)" + g +
      " : f32[2,24,1,1]\n  return %y\n}\n");
  EXPECT_TRUE(parsed.ok()) << parsed.status().to_string();
  if (!parsed.ok()) return ir::Graph();
  EXPECT_TRUE(ops::infer_graph_shapes(**parsed).ok());
  return std::move(**parsed);
}

std::vector<Case> cases() {
  // Integer inputs above kHostInputMaxElements: smaller ones are shape data
  // the plan computes on the host.
  const DType f32 = DType::kFloat32, i32 = DType::kInt32;
  const TargetInfo t = base_target();
  std::vector<Case> c;
  c.push_back({"matmul_tile64", graph("MatMul", f32, {dims({100, 72})}, {random_tensor({72, 90}, 1)}),
               {"gemm_tile.comp", "gemm_store.glsl"}, t});
  c.push_back({"matmul_tile32", graph("MatMul", f32, {dims({20, 72})}, {random_tensor({72, 90}, 2)}),
               {"gemm_tile.comp", "gemm_store.glsl"}, t});
  c.push_back({"matmul_gemv", graph("MatMul", f32, {dims({1, 72})}, {random_tensor({72, 90}, 3)}),
               {"gemm_gemv.comp", "gemm_store.glsl"}, t});
  c.push_back({"matmul_splitk", hinted(graph("MatMul", f32, {dims({32, 4096})}, {random_tensor({4096, 32}, 4)}),
                                       "splitk_reduce=separate"),
               {"gemm_tile.comp", "gemm_splitk_reduce.comp"}, t});
  c.push_back({"matmul_splitk_fixup", hinted(graph("MatMul", f32, {dims({32, 4096})}, {random_tensor({4096, 32}, 4)}),
                                             "splitk_reduce=fused"),
               {"gemm_tile.comp", "gemm_store.glsl"}, t});
  TargetInfo atomics = t;
  atomics.float32_atomic_add = true;
  c.push_back({"matmul_splitk_atomic", hinted(graph("MatMul", f32, {dims({32, 4096})}, {random_tensor({4096, 32}, 4)}),
                                              "splitk_reduce=atomic"),
               {"gemm_tile.comp", "gemm_store.glsl"}, atomics});
  c.push_back({"conv", graph("Conv", f32, {dims({1, 8, 10, 10})}, {random_tensor({16, 8, 3, 3}, 5)}),
               {"gemm_tile.comp"}, t});
  c.push_back({"conv_depthwise",
               graph("Conv", f32, {dims({1, 8, 10, 10})}, {random_tensor({8, 1, 3, 3}, 6), random_tensor({8}, 7)},
                     {{"group", i_attr(8)}, {"pads", ir::Attribute::of_ints({1, 1, 1, 1})}}),
               {"conv_depthwise_texel.comp", "conv_depthwise_rows.comp"}, t});
  c.push_back({"matmul_coopmat", graph("MatMul", f32, {dims({100, 72})}, {random_tensor({72, 90}, 8)}),
               {"gemm_coopmat.comp"}, coopmat_target()});
  c.push_back({"conv_coopmat", graph("Conv", f32, {dims({1, 8, 12, 12})}, {random_tensor({32, 8, 3, 3}, 9)}),
               {"gemm_coopmat.comp"}, coopmat_target()});
  const Tensor axis1 = Tensor::from_vector<int64_t>({1}, {1});
  c.push_back({"reduce_sum_rows", graph("ReduceSum", f32, {dims({4, 300})}, {axis1}),
               {"rows_workgroup.glsl", "rows_minmax.glsl"}, t});
  c.push_back({"reduce_max_subgroups", graph("ReduceMax", f32, {dims({4, 300})}, {axis1}),
               {"rows_workgroup.glsl", "rows_minmax.glsl"}, subgroup_target()});
  c.push_back({"softmax", graph("Softmax", f32, {dims({4, 300})}, {}, {{"axis", i_attr(-1)}}),
               {"rows_main.comp", "rows_stat_pass.glsl", "rows_write_pass.glsl", "rows_cache_pass.glsl"}, t});
  c.push_back({"argmax_rows", graph("ArgMax", f32, {dims({4, 300})}, {}, {{"axis", i_attr(1)}}),
               {"reduce_arg_better.glsl", "rows_arg_reduce.glsl"}, t});
  c.push_back({"hardmax", graph("Hardmax", f32, {dims({4, 300})}, {}, {{"axis", i_attr(1)}}),
               {"rows_arg_reduce.glsl", "hardmax.glsl#helpers", "hardmax.glsl#body"}, t});
  c.push_back({"group_norm_two_pass",
               graph("GroupNormalization", f32, {dims({2, 10, 3, 7})},
                     {random_tensor({10}, 10), random_tensor({10}, 11)},
                     {{"num_groups", i_attr(5)}}),
               {"group_norm_stats.comp"}, t});
  c.push_back({"topk", graph("TopK", f32, {dims({4, 10})}, {Tensor::from_vector<int64_t>({1}, {3})}, {}, 2),
               {"topk_order.glsl", "topk_rank.comp"}, t});
  const ir::Attribute k3 = ir::Attribute::of_ints({3, 3}), pads = ir::Attribute::of_ints({1, 1, 1, 1});
  c.push_back({"average_pool",
               graph("AveragePool", f32, {dims({1, 6, 9, 9})}, {}, {{"kernel_shape", k3}, {"pads", pads}}),
               {"pool_vec4.comp"}, t});
  c.push_back({"max_pool_indices",
               graph("MaxPool", f32, {dims({1, 6, 9, 9})}, {}, {{"kernel_shape", k3}, {"pads", pads}}, 2),
               {"pool_max_indices.comp"}, t});
  c.push_back({"relu", graph("Relu", f32, {dims({2, 3, 5, 6})}), {"map.comp", "round_f16.glsl"}, t});
  c.push_back({"attention", attention_graph(), {"attention.comp"}, t});
  c.push_back({"splitk_reduce_norm", row_norm_graph(), {"gemm_tile.comp", "gemm_splitk_reduce_norm.comp"}, t});
  // Both variants: register spans (a CPU device's few compute units) and
  // one output per invocation (a GPU's many).
  c.push_back({"dw_layer_norm_spans", dw_norm_graph(), {"dw_layer_norm.comp"}, t});
  TargetInfo gpu = t;
  gpu.compute_units = 132;
  c.push_back({"dw_layer_norm_gpu", dw_norm_graph(), {"dw_layer_norm.comp"}, gpu});
  c.push_back({"squeeze_excite", squeeze_excite_graph(), {"squeeze_excite.comp"}, subgroup_target()});
  c.push_back({"attention_coopmat", attention_graph("200"), {"attention.comp", "attention_coopmat.comp"}, coopmat_target()});
  const std::string m = "elementwise_math.glsl#";
  for (auto [op, helper] : std::vector<std::pair<std::string, std::string>>{
           {"Sigmoid", "sigmoid"}, {"Tanh", "tanh"}, {"Erf", "erf"}, {"Softplus", "softplus"}})
    c.push_back({op, graph(op, f32, {dims({3, 5})}), {m + helper}, t});
  c.push_back({"pow", graph("Pow", f32, {dims({3, 5}), dims({3, 5})}), {m + "pow"}, t});
  c.push_back({"fmod", graph("Mod", f32, {dims({3, 5}), dims({3, 5})}, {}, {{"fmod", i_attr(1)}}), {m + "fmod"}, t});
  c.push_back({"max", graph("Max", f32, {dims({3, 5}), dims({3, 5})}), {m + "fmax"}, t});
  c.push_back({"cast_int8", graph("Cast", f32, {dims({3, 5})}, {}, {{"to", i_attr(3)}}), {m + "f2i"}, t});
  c.push_back({"ipow", graph("Pow", i32, {dims({9, 10}), dims({9, 10})}), {m + "ipow"}, t});
  c.push_back({"idiv", graph("Div", i32, {dims({9, 10}), dims({9, 10})}), {m + "idiv"}, t});
  c.push_back({"imod", graph("Mod", i32, {dims({9, 10}), dims({9, 10})}), {m + "imod"}, t});
  c.push_back({"irem", graph("Mod", i32, {dims({9, 10}), dims({9, 10})}, {}, {{"fmod", i_attr(1)}}), {m + "irem"}, t});
  c.push_back({"quantize_linear",
               graph("QuantizeLinear", f32, {dims({3, 5})},
                     {Tensor::from_vector<float>({}, {0.5f}), Tensor::from_vector<uint8_t>({}, {3})}),
               {"quantize.glsl#two_prod", "quantize.glsl#div_rn", "quantize.glsl#quantize"}, t});
  c.push_back({"dynamic_quantize_linear", graph("DynamicQuantizeLinear", f32, {dims({4, 300})}, {}, {}, 3),
               {"dynamic_quantize_range.comp"}, t});
  c.push_back({"dynamic_quantize_linear_two_pass",
               graph("DynamicQuantizeLinear", f32, {dims({300, 300})}, {}, {}, 1), {"dynamic_quantize_range.comp"}, t});
  c.push_back({"qlinear_matmul",
               graph("QLinearMatMul", DType::kUInt8, {dims({9, 10})},
                     {Tensor::from_vector<float>({}, {0.02f}), Tensor::from_vector<uint8_t>({}, {128}),
                      Tensor::from_vector<int8_t>({10, 3}, std::vector<int8_t>(30, 3)),
                      Tensor::from_vector<float>({3}, {0.1f, 0.2f, 0.3f}), Tensor::from_vector<int8_t>({}, {0}),
                      Tensor::from_vector<float>({}, {0.05f}), Tensor::from_vector<uint8_t>({}, {120})}),
               {"quantize.glsl#requantize", "gemm_int_tile.comp"}, t});
  TargetInfo dot = t;  // packed int8 dot products: SPIR-V 1.6 (Vulkan 1.3)
  dot.vulkan_version = (1u << 22) | (3u << 12);
  dot.integer_dot_product = true;
  c.push_back({"qlinear_conv_int8_dot",
               graph("QLinearConv", DType::kUInt8, {dims({1, 3, 9, 9})},
                     {Tensor::from_vector<float>({}, {0.02f}), Tensor::from_vector<uint8_t>({}, {128}),
                      Tensor::from_vector<int8_t>({5, 3, 3, 3}, std::vector<int8_t>(135, -3)),
                      Tensor::from_vector<float>({}, {0.1f}), Tensor::from_vector<int8_t>({}, {0}),
                      Tensor::from_vector<float>({}, {0.05f}), Tensor::from_vector<uint8_t>({}, {120})},
                     {{"pads", ir::Attribute::of_ints({1, 1, 1, 1})}}),
               {"quantize.glsl#requantize", "gemm_int8_dot.comp"}, dot});
  c.push_back({"matmul_integer_int8_dot",
               graph("MatMulInteger", DType::kInt8, {dims({9, 10})},
                     {Tensor::from_vector<uint8_t>({10, 3}, std::vector<uint8_t>(30, 200)),
                      Tensor::from_vector<int8_t>({}, {1}), Tensor::from_vector<uint8_t>({}, {128})}),
               {"gemm_int8_dot.comp"}, dot});
  // Int8 cooperative matrices: 32 channels (tap-major units of 16), K cut
  // into slices whose int32 sums the reduce pass finishes.
  TargetInfo int8_cm = coopmat_target();
  int8_cm.vulkan_version = dot.vulkan_version;
  int8_cm.integer_dot_product = true;
  int8_cm.coopmat_s8_shapes = {{16, 16, 32, false}};
  c.push_back({"qlinear_conv_int8_coopmat",
               graph("QLinearConv", DType::kUInt8, {dims({1, 32, 12, 12})},
                     {Tensor::from_vector<float>({}, {0.02f}), Tensor::from_vector<uint8_t>({}, {128}),
                      Tensor::from_vector<int8_t>({32, 32, 3, 3}, std::vector<int8_t>(9216, 5)),
                      Tensor::from_vector<float>({}, {0.1f}), Tensor::from_vector<int8_t>({}, {0}),
                      Tensor::from_vector<float>({}, {0.05f}), Tensor::from_vector<uint8_t>({}, {120})},
                     {{"pads", ir::Attribute::of_ints({1, 1, 1, 1})}}),
               {"gemm_int8_coopmat.comp", "gemm_splitk_reduce.comp"}, int8_cm});
  return c;
}

// Plans `c` in every storage x precision and returns its kernels' GLSL,
// each checked with spirv-val.
std::vector<std::string> planned_glsl(const Case& c) {
  std::vector<std::string> out;
  for (Storage storage : {Storage::kBuffer, Storage::kImage})
    for (ElemType precision : {ElemType::kF32, ElemType::kF16}) {
      PlanOptions options;
      options.storage = storage;
      options.precision = precision;
      const std::string config = c.what + "_" + storage_name(storage) + "_" + elem_type_name(precision);
      auto plan = build_plan(c.graph, c.target, options);
      EXPECT_TRUE(plan.ok()) << config << ": " << plan.status().to_string();
      if (!plan.ok()) continue;
      EXPECT_EQ(plan->fallback_count(), 0u) << config;
      size_t k = 0;
      for (const PlanStep& step : plan->steps) {
        if (step.kind != PlanStep::Kind::kDispatch) continue;
        auto glsl = generate_glsl(step.kernel, c.target);
        EXPECT_TRUE(glsl.ok()) << config << ": " << glsl.status().to_string();
        if (!glsl.ok()) continue;
        expect_valid_spirv(glsl->glsl, config + "_" + std::to_string(++k), c.target.vulkan_version);
        out.push_back(glsl->glsl);
      }
    }
  return out;
}

TEST(ShaderTemplateKernels, EveryTemplateCompilesToValidSpirv) {
  std::set<std::string> covered;
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.what);
    const std::vector<std::string> kernels = planned_glsl(c);
    for (const std::string& name : c.templates) {
      covered.insert(name);
      const auto found = [&](const LinePattern& line) {
        return std::any_of(kernels.begin(), kernels.end(), [&](const std::string& k) { return has_line(k, line); });
      };
      const std::vector<LinePattern> lines = fixed_lines(name);
      for (const LinePattern& line : lines)
        EXPECT_TRUE(found(line)) << "no kernel of " << c.what << " has the line of " << name << " starting '"
                                 << line.front() << "'";
      if (lines.empty()) {  // every line is conditional: one of them will do
        const std::vector<LinePattern> any = fixed_lines(name, true);
        EXPECT_TRUE(std::any_of(any.begin(), any.end(), found))
            << "no kernel of " << c.what << " has a line of " << name;
      }
    }
  }
  // The Loop scan store, filled directly: a plan needs a whole Loop.
  KernelDesc scan;
  scan.name = "loop_scan";
  scan.family = KernelDesc::Family::kCustom;
  scan.tensors = {{"iter", 0, {Storage::kBuffer, ElemType::kI32}, {ir::Dim(1)}},
                  {"x", 1, {}, {ir::Dim(8)}},
                  {"y", 2, {}, {ir::Dim(3), ir::Dim(8)}, true}};
  scan.body = fill_shader("loop_scan.comp");
  auto glsl = generate_glsl(scan, base_target());
  ASSERT_TRUE(glsl.ok()) << glsl.status().to_string();
  expect_valid_spirv(glsl->glsl, "loop_scan");
  covered.insert("loop_scan.comp");

  // The image conversions of host image bindings (image_convert.h): no
  // graph node makes them, the Vulkan runtime does, around a plan.
  for (const bool nhwc : {false, true}) {
    ImageConvertDesc in{true, nhwc ? ElemType::kF16 : ElemType::kF32, 3, 5, 7, nhwc, ""};
    ImageConvertDesc out{false, nhwc ? ElemType::kF32 : ElemType::kF16, 4, 5, 7, nhwc, nhwc ? "r32f" : "rgba8"};
    ImageConvertDesc storage_in = in;  // a host image without the sampled usage
    storage_in.storage_format = "rgba16f";
    for (const ImageConvertDesc& d : {in, storage_in, out}) {
      auto kernel = image_convert_kernel(d);
      ASSERT_TRUE(kernel.ok()) << kernel.status().to_string();
      auto image_glsl = generate_glsl(*kernel, base_target());
      ASSERT_TRUE(image_glsl.ok()) << image_glsl.status().to_string();
      expect_valid_spirv(image_glsl->glsl, kernel->name);
    }
  }
  covered.insert("image_to_tensor.comp");
  covered.insert("tensor_to_image.comp");

  for (const EmbeddedShader& s : embedded_shaders())
    for (const std::string& name : template_names(s))
      EXPECT_TRUE(covered.count(name)) << name << " is in no case of this test: add one";
}

}  // namespace
}  // namespace kiln::planner
