// Fusion groups (planner/fusion.h): an elementwise chain in one group plans
// as one map kernel whose SPIR-V is valid in every storage and precision and
// whose intermediates no kernel binds; a group that cannot fuse plans as
// without the annotation, its reason recorded; a malformed id fails the
// compile naming the node. Results are compared on the device in
// tests/plugin_hooks/hooks_test.cc.
#include "planner/fusion.h"

#include <gtest/gtest.h>

#include <string>

#include "engine/ir/text.h"
#include "engine/ops/shape_inference.h"
#include "planner/execution_plan.h"
#include "planner/glsl_codegen.h"
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

TEST(Fusion, ANodeWithoutAMapKernelKeepsTheGroupUnfused) {
  const std::string text =
      "graph @g opset 17 {\n  input %x : f32[4,8]\n  const %w : f32[8,8] = dense<[" + [] {
        std::string w;
        for (int i = 0; i < 64; ++i) w += (i ? "," : "") + std::to_string((i % 5) - 2);
        return w;
      }() + "]>\n"
            "  %y = MatMul(%x, %w) #{kiln.fusion_group = \"mm\"} : f32[4,8]\n"
            "  %z = Relu(%y) #{kiln.fusion_group = \"mm\"} : f32[4,8]\n  return %z\n}\n";
  auto g = parse(text);
  ASSERT_TRUE(g);
  const ExecutionPlan b = plan_of(*g);
  ASSERT_EQ(b.fusion_notes.size(), 1u);
  EXPECT_NE(b.fusion_notes[0].find("does not lower to one map kernel"), std::string::npos) << b.fusion_notes[0];
  EXPECT_EQ(b.steps.back().kernel.name, "relu");
  for (const PlanStep& s : b.steps) EXPECT_EQ(s.kernel.name.find("fused"), std::string::npos);
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
