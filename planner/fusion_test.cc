// Fusion groups (planner/fusion.h): an elementwise chain in one group plans
// as one map kernel, an anchor (MatMul) with an elementwise tail as the
// anchor's kernel storing through the tail, each with SPIR-V valid in every
// storage and precision and intermediates no kernel binds; a group that
// cannot fuse plans as without the annotation, its reason recorded; a
// malformed id fails the compile naming the node. Results are compared on
// the device in fusion_epilogue_test.cc and tests/plugin_hooks/hooks_test.cc.
#include "planner/fusion.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "engine/ir/text.h"
#include "engine/ops/shape_inference.h"
#include "planner/execution_plan.h"
#include "planner/glsl_codegen.h"
#include "planner/lowering.h"
#include "planner/testing/op_check.h"

namespace kiln::planner {
namespace {

// z = Tanh(Sigmoid(x) * b + x), b broadcast along the last axis; the nodes
// `grouped` (a substring of "smat": Sigmoid, Mul, Add, Tanh) carry group `id`.
std::string chain_model(const std::string& grouped, const std::string& id = "g", bool m_is_output = false) {
  auto ann = [&](char c) { return grouped.find(c) != std::string::npos ? " #{kiln.fusion_group = \"" + id + "\"}" : std::string(); };
  return "graph @g opset 17 {\n  input %x : f32[2,3,4,8]\n"
         "  const %b : f32[8] = dense<[0.5,-1,2,0.25,1.5,-0.5,3,1]>\n"
         "  %s = Sigmoid(%x)" + ann('s') + " : f32[2,3,4,8] loc(\"the_sigmoid\")\n"
         "  %m = Mul(%s, %b)" + ann('m') + " : f32[2,3,4,8]\n"
         "  %a = Add(%m, %x)" + ann('a') + " : f32[2,3,4,8]\n"
         "  %z = Tanh(%a)" + ann('t') + " : f32[2,3,4,8]\n"
         "  return %z" + (m_is_output ? ", %m" : "") + "\n}\n";
}

std::unique_ptr<ir::Graph> parse(const std::string& text) {
  auto g = ir::parse_graph(text);
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  if (!g.ok()) return nullptr;
  EXPECT_TRUE(ops::infer_graph_shapes(**g).ok());
  return std::move(g).value();
}

ExecutionPlan plan_of(const ir::Graph& g, PlanOptions options = {}) {
  auto plan = build_plan(g, TargetInfo{}, options);
  EXPECT_TRUE(plan.ok()) << plan.status().to_string();
  return plan.ok() ? std::move(plan).value() : ExecutionPlan{};
}

// The chain planned without any group (a) and with `grouped` in group "g" (b).
struct PlainAndGrouped {
  std::unique_ptr<ir::Graph> plain, grouped;
  ExecutionPlan a, b;
};

PlainAndGrouped plan_both(const std::string& grouped, bool m_is_output = false) {
  PlainAndGrouped p{parse(chain_model("", "g", m_is_output)), parse(chain_model(grouped, "g", m_is_output)), {}, {}};
  if (p.plain && p.grouped) p.a = plan_of(*p.plain), p.b = plan_of(*p.grouped);
  return p;
}

bool bound_by_a_kernel(const ExecutionPlan& plan, const ir::Graph& g, const char* value) {
  auto it = plan.value_tensor.find(g.find_value(value));
  if (it == plan.value_tensor.end()) return false;
  for (const PlanStep& s : plan.steps)
    for (const KernelTensor& t : s.kernel.tensors)
      if (t.tensor == it->second) return true;
  return false;
}

TEST(Fusion, AnElementwiseChainIsOneKernel) {
  const auto [plain, grouped, a, b] = plan_both("smat");
  ASSERT_TRUE(plain && grouped);
  EXPECT_EQ(a.dispatch_count(), 4u);
  ASSERT_EQ(b.dispatch_count(), 1u);
  EXPECT_EQ(b.steps[0].kernel.name, "fused_sigmoid_mul_add_tanh");
  EXPECT_TRUE(b.fusion_notes.empty());
  // The intermediates get no memory: no kernel binds them.
  for (const char* v : {"s", "m", "a"}) EXPECT_FALSE(bound_by_a_kernel(b, *grouped, v)) << v;
  EXPECT_TRUE(bound_by_a_kernel(b, *grouped, "z"));
  // x is bound once although two nodes read it.
  EXPECT_EQ(b.steps[0].kernel.tensors.size(), 3u);  // x, b, z
  // Every storage and precision gives valid SPIR-V, with the chain fused.
  for (size_t n : testing::expect_plan_kernels_valid(*grouped, "fused_chain")) EXPECT_EQ(n, 1u);
}

TEST(Fusion, SymbolicShapesFuse) {
  std::string text = chain_model("smat");
  for (size_t at = text.find("[2,3,4,8]"); at != std::string::npos; at = text.find("[2,3,4,8]"))
    text.replace(at, 9, "[n,3,h,8]");
  auto grouped = parse(text);
  ASSERT_TRUE(grouped);
  EXPECT_EQ(plan_of(*grouped).dispatch_count(), 1u);
  for (size_t n : testing::expect_plan_kernels_valid(*grouped, "fused_symbolic")) EXPECT_EQ(n, 1u);
}

TEST(Fusion, HelpersTwoNodesNeedAreDefinedOnce) {
  auto g = parse(
      "graph @g opset 17 {\n  input %x : f32[3,5]\n"
      "  %s = Sigmoid(%x) #{kiln.fusion_group = \"h\"} : f32[3,5]\n"
      "  %t = Sigmoid(%s) #{kiln.fusion_group = \"h\"} : f32[3,5]\n"
      "  %m = Mish(%t) #{kiln.fusion_group = \"h\"} : f32[3,5]\n"
      "  %z = Tanh(%m) #{kiln.fusion_group = \"h\"} : f32[3,5]\n  return %z\n}\n");
  ASSERT_TRUE(g);
  const ExecutionPlan plan = plan_of(*g);
  ASSERT_EQ(plan.dispatch_count(), 1u);
  const KernelDesc& k = plan.steps[0].kernel;
  EXPECT_EQ(k.name, "fused_sigmoid_sigmoid_mish_tanh");
  for (const char* fn : {"float kiln_sigmoid(", "float kiln_tanh(", "float kiln_softplus("}) {
    const size_t at = k.helpers.find(fn);
    EXPECT_NE(at, std::string::npos) << fn;
    EXPECT_EQ(k.helpers.find(fn, at + 1), std::string::npos) << fn;
  }
  for (size_t n : testing::expect_plan_kernels_valid(*g, "fused_helpers")) EXPECT_EQ(n, 1u);
}

TEST(Fusion, PartOfAChainFusesAndTheRestIsUnchanged) {
  const auto [plain, grouped, a, b] = plan_both("ma");
  ASSERT_TRUE(plain && grouped);
  ASSERT_EQ(b.dispatch_count(), 3u);
  EXPECT_EQ(b.steps[0].kernel.name, a.steps[0].kernel.name);
  EXPECT_EQ(b.steps[1].kernel.name, "fused_mul_add");
  EXPECT_EQ(b.steps[2].kernel.name, a.steps[3].kernel.name);
  auto ga = generate_glsl(a.steps[3].kernel, TargetInfo{});
  auto gb = generate_glsl(b.steps[2].kernel, TargetInfo{});
  ASSERT_TRUE(ga.ok() && gb.ok());
  EXPECT_EQ(ga->glsl, gb->glsl);
}

TEST(Fusion, AnIntermediateReadOutsideKeepsTheGroupUnfused) {
  const auto [plain, grouped, a, b] = plan_both("smat", /*m_is_output=*/true);
  ASSERT_TRUE(plain && grouped);
  EXPECT_EQ(describe_plan(a, *plain), describe_plan(b, *grouped));
  ASSERT_EQ(b.fusion_notes.size(), 1u);
  EXPECT_NE(b.fusion_notes[0].find("fusion group 'g'"), std::string::npos) << b.fusion_notes[0];
  EXPECT_NE(b.fusion_notes[0].find("'m'"), std::string::npos) << b.fusion_notes[0];
  EXPECT_NE(b.fusion_notes[0].find("read outside the group"), std::string::npos) << b.fusion_notes[0];
}

TEST(Fusion, ADisconnectedGroupIsUnfused) {
  auto grouped = parse(chain_model("st"));  // Sigmoid and Tanh, Mul and Add between them
  ASSERT_TRUE(grouped);
  const ExecutionPlan b = plan_of(*grouped);
  EXPECT_EQ(b.dispatch_count(), 4u);
  ASSERT_EQ(b.fusion_notes.size(), 1u);
  EXPECT_NE(b.fusion_notes[0].find("read outside the group"), std::string::npos) << b.fusion_notes[0];
}

// y = MatMul(x, w) with an [8, 8] constant w, then `tail` (lines of nodes
// reading %y, the last writing %z; "%y" may be a graph output too).
std::string matmul_model(const std::string& tail, const std::string& outputs = "%z") {
  std::string w;
  for (int i = 0; i < 64; ++i) w += (i ? "," : "") + std::to_string((i % 5) - 2);
  return "graph @g opset 17 {\n  input %x : f32[6,8]\n  const %w : f32[8,8] = dense<[" + w +
         "]>\n  const %b : f32[8] = dense<[0.5,-1,2,0.25,1.5,-0.5,3,1]>\n"
         "  %y = MatMul(%x, %w) #{kiln.fusion_group = \"mm\"} : f32[6,8]\n" +
         tail + "  return " + outputs + "\n}\n";
}

const char* kGroupedTail =
    "  %s = Sigmoid(%y) #{kiln.fusion_group = \"mm\"} : f32[6,8]\n"
    "  %m = Mul(%y, %s) #{kiln.fusion_group = \"mm\"} : f32[6,8]\n"
    "  %z = Add(%m, %b) #{kiln.fusion_group = \"mm\"} : f32[6,8]\n";

TEST(Fusion, AnAnchorAndItsElementwiseTailAreOneKernel) {
  auto g = parse(matmul_model(kGroupedTail));
  ASSERT_TRUE(g);
  const ExecutionPlan plan = plan_of(*g);
  EXPECT_TRUE(plan.fusion_notes.empty()) << plan.fusion_notes.front();
  ASSERT_EQ(plan.dispatch_count(), 1u);
  const KernelDesc& k = plan.steps[0].kernel;
  EXPECT_EQ(k.name.find("matmul"), 0u) << k.name;
  EXPECT_EQ(k.name.substr(k.name.size() - 16), "+sigmoid+mul+add") << k.name;
  // The anchor's output and the intermediates get no memory; the kernel
  // stores z through the epilogue and binds the tail's input b.
  for (const char* v : {"y", "s", "m"}) EXPECT_FALSE(bound_by_a_kernel(plan, *g, v)) << v;
  EXPECT_TRUE(bound_by_a_kernel(plan, *g, "z"));
  EXPECT_TRUE(bound_by_a_kernel(plan, *g, "b"));
  ASSERT_FALSE(k.store_epilogue.empty());
  EXPECT_NE(k.store_epilogue.code.find("float kiln_epilogue(int oc0, int oc1, int oi, float kiln_anchor)"),
            std::string::npos)
      << k.store_epilogue.code;
  auto glsl = generate_glsl(k, TargetInfo{});
  ASSERT_TRUE(glsl.ok()) << glsl.status().to_string();
  const std::string& text = glsl->glsl;
  const std::string y = k.store_epilogue.tensor;
  // Raw stores, then the epilogue, then the wrapping stores, then the GEMM.
  const size_t raw = text.find("void " + y + "_st_raw("), fn = text.find("float kiln_epilogue("),
               wrap = text.find("void " + y + "_st("), gemm = text.find("void gemm_store4(");
  EXPECT_TRUE(raw < fn && fn < wrap && wrap < gemm && gemm != std::string::npos) << text;
  for (size_t n : testing::expect_plan_kernels_valid(*g, "epilogue_matmul")) EXPECT_EQ(n, 1u);
}

TEST(Fusion, AnAnchorWhoseOutputIsReadOutsideKeepsTheGroupUnfused) {
  auto g = parse(matmul_model(kGroupedTail, "%z, %y"));
  ASSERT_TRUE(g);
  const ExecutionPlan plan = plan_of(*g);
  EXPECT_EQ(plan.dispatch_count(), 4u);
  ASSERT_EQ(plan.fusion_notes.size(), 1u);
  EXPECT_NE(plan.fusion_notes[0].find("fusion group 'mm'"), std::string::npos) << plan.fusion_notes[0];
  EXPECT_NE(plan.fusion_notes[0].find("'y'"), std::string::npos) << plan.fusion_notes[0];
  EXPECT_NE(plan.fusion_notes[0].find("read outside the group"), std::string::npos) << plan.fusion_notes[0];
  for (const PlanStep& s : plan.steps) EXPECT_EQ(s.kernel.name.find('+'), std::string::npos) << s.kernel.name;
}

TEST(Fusion, ATailNodeWithoutAMapKernelKeepsTheGroupUnfused) {
  auto g = parse(matmul_model("  %z = MatMul(%y, %w) #{kiln.fusion_group = \"mm\"} : f32[6,8]\n"));
  ASSERT_TRUE(g);
  const ExecutionPlan plan = plan_of(*g);
  EXPECT_EQ(plan.dispatch_count(), 2u);
  ASSERT_EQ(plan.fusion_notes.size(), 1u);
  EXPECT_NE(plan.fusion_notes[0].find("does not lower to one map kernel"), std::string::npos) << plan.fusion_notes[0];
}

// MatMul lowerings whose kernel touches its output other than by storing it.
Status reads_y_data(LoweringContext& ctx) {
  KernelDesc d;
  d.name = "peeks";
  d.family = KernelDesc::Family::kCustom;
  d.tensors = {ctx.bind("A", ctx.input(0)), ctx.bind("Y", ctx.output(0), true)};
  d.body = "void main() { Y_st(0, A_ld(0)); Y_data[1] = Y_data[0]; }\n";
  ctx.emit(std::move(d));
  return ok_status();
}
Status binds_y_as_input(LoweringContext& ctx) {
  KernelDesc d;
  d.name = "rereads";
  d.family = KernelDesc::Family::kCustom;
  d.tensors = {ctx.bind("A", ctx.input(0)), ctx.bind("Y", ctx.output(0), true)};
  d.body = "void main() { Y_st(0, A_ld(0)); }\n";
  ctx.emit(d);
  d.tensors = {ctx.bind("P", ctx.output(0)), ctx.bind("Y", ctx.output(0), true)};
  d.body = "void main() { Y_st(1, P_ld(0)); }\n";
  ctx.emit(std::move(d));
  return ok_status();
}

TEST(Fusion, AnAnchorReadingItsOutputKeepsTheGroupUnfused) {
  auto g = parse(matmul_model(kGroupedTail));
  ASSERT_TRUE(g);
  for (const auto& [fn, why] : {std::pair<LowerFn, const char*>{reads_y_data, "uses 'Y_data'"},
                                std::pair<LowerFn, const char*>{binds_y_as_input, "reads its output"}}) {
    LoweringRegistry r;
    register_elementwise_lowerings(r);
    r.add("", "MatMul", fn);
    auto plan = build_plan(*g, TargetInfo{}, PlanOptions{}, r);
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    ASSERT_EQ(plan->fusion_notes.size(), 1u) << why;
    EXPECT_NE(plan->fusion_notes[0].find(why), std::string::npos) << plan->fusion_notes[0];
    for (const PlanStep& s : plan->steps) EXPECT_TRUE(s.kernel.store_epilogue.empty()) << s.kernel.name;
  }
}

// A depthwise-pointwise group (fusion_dwpw.h): dw 3x3 -> Relu -> pw 1x1 ->
// Add(pw, `addend`), all four in group "m".
std::string dwpw_model(const std::string& addend) {
  const auto dense = [](int n) {
    std::string w;
    for (int i = 0; i < n; ++i) w += (i ? "," : "") + std::to_string(((i * 7) % 9 - 4) / 4.0);
    return "dense<[" + w + "]>";
  };
  const std::string t = " #{kiln.fusion_group = \"m\"} : f32[1,8,6,6]\n";
  return "graph @g opset 17 {\n  input %x : f32[1,8,6,6]\n  const %dw : f32[8,1,3,3] = " + dense(72) +
         "\n  const %pw : f32[8,8,1,1] = " + dense(64) +
         "\n  %d = Conv(%x, %dw) {group = 8, kernel_shape = [3,3], pads = [1,1,1,1]}" + t +
         "  %c = Relu(%d)" + t + "  %p = Conv(%c, %pw)" + t + "  %z = Add(%p, " + addend + ")" + t +
         "  return %z\n}\n";
}

// A MatMul lowering whose output accessor is named as the tail's first
// input would be ("Ep0").
Status output_named_ep0(LoweringContext& ctx) {
  KernelDesc d;
  d.name = "ep0";
  d.family = KernelDesc::Family::kCustom;
  d.tensors = {ctx.bind("A", ctx.input(0)), ctx.bind("Ep0", ctx.output(0), true)};
  d.body = "void main() { Ep0_st(0, A_ld(0)); }\n";
  ctx.emit(std::move(d));
  return ok_status();
}

TEST(Fusion, TailInputsTakeNamesTheAnchorKernelDoesNotUse) {
  auto g = parse(matmul_model("  %a = Add(%y, %b) #{kiln.fusion_group = \"mm\"} : f32[6,8]\n"
                              "  %z = Mul(%a, %x) #{kiln.fusion_group = \"mm\"} : f32[6,8]\n"));
  ASSERT_TRUE(g);
  LoweringRegistry r;
  register_elementwise_lowerings(r);
  r.add("", "MatMul", output_named_ep0);
  auto plan = build_plan(*g, TargetInfo{}, PlanOptions{}, r);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_TRUE(plan->fusion_notes.empty()) << plan->fusion_notes.front();
  ASSERT_EQ(plan->dispatch_count(), 1u);
  const KernelDesc& k = plan->steps[0].kernel;
  EXPECT_EQ(k.name, "ep0+add+mul");
  ASSERT_EQ(k.tensors.size(), 4u);  // A, Ep0 (the output), b, x
  EXPECT_EQ(k.tensors[2].name, "Ep1");
  EXPECT_EQ(k.tensors[3].name, "Ep2");
  auto glsl = generate_glsl(k, TargetInfo{});
  EXPECT_TRUE(glsl.ok()) << glsl.status().to_string();
}

TEST(Fusion, ADepthwisePointwiseGroupIsOneGemm) {
  auto g = parse(dwpw_model("%x"));
  ASSERT_TRUE(g);
  const ExecutionPlan plan = plan_of(*g);
  EXPECT_TRUE(plan.fusion_notes.empty()) << plan.fusion_notes.front();
  ASSERT_EQ(plan.dispatch_count(), 1u);
  const KernelDesc& k = plan.steps[0].kernel;
  EXPECT_EQ(k.name.find("dwpw_"), 0u) << k.name;
  EXPECT_EQ(k.name.substr(k.name.size() - 4), "+add") << k.name;
  EXPECT_NE(k.helpers.find("kiln_prologue("), std::string::npos);
  // Neither conv's output nor the Relu's reaches memory.
  for (const char* v : {"d", "c", "p"}) EXPECT_FALSE(bound_by_a_kernel(plan, *g, v)) << v;
  EXPECT_TRUE(bound_by_a_kernel(plan, *g, "x"));
  EXPECT_TRUE(bound_by_a_kernel(plan, *g, "z"));
  for (size_t n : testing::expect_plan_kernels_valid(*g, "dwpw")) EXPECT_EQ(n, 1u);
}

TEST(Fusion, ADepthwiseValueReadAfterThePointwiseConvKeepsTheGroupUnfused) {
  auto g = parse(dwpw_model("%c"));
  ASSERT_TRUE(g);
  const ExecutionPlan plan = plan_of(*g);
  EXPECT_EQ(plan.dispatch_count(), 4u);
  ASSERT_EQ(plan.fusion_notes.size(), 1u);
  EXPECT_NE(plan.fusion_notes[0].find("'c'"), std::string::npos) << plan.fusion_notes[0];
  EXPECT_NE(plan.fusion_notes[0].find("read after the pointwise conv"), std::string::npos) << plan.fusion_notes[0];
}

TEST(Fusion, AMalformedGroupIdFailsNamingTheNode) {
  auto g = parse(chain_model("s", "not an id!"));
  ASSERT_TRUE(g);
  auto plan = build_plan(*g, TargetInfo{}, PlanOptions{});
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(plan.status().message().find("the_sigmoid"), std::string::npos) << plan.status().message();
  EXPECT_NE(plan.status().message().find("kiln.fusion_group"), std::string::npos) << plan.status().message();
}

}  // namespace
}  // namespace kiln::planner
