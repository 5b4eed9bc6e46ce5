// The memplan-order pass through the plugin ABI (linked in and as a .so):
// it annotates a better order where one exists, leaves an optimal graph
// unannotated, and build_plan follows the annotation.
#include <gtest/gtest.h>

#include "engine/ir/text.h"
#include "engine/registry/default_pipeline.h"
#include "engine/registry/pass_manager.h"
#include "engine/registry/plugin_loader.h"
#include "planner/execution_plan.h"
#include "plugins/memplan/memplan.h"
#include "plugins/testing/plugin_file.h"

namespace kiln::registry {
namespace {

// Two branches from x (the graph of order_test's two_branches, in
// elements): the listed order runs b1 while a1 (100) is live; running a2
// first frees a1 before b1 exists. `after_b1` is spliced in after b1's
// line and `more_outputs` after the returned %y.
std::string branches_graph(const std::string& after_b1 = "", const std::string& more_outputs = "") {
  return R"(graph @g opset 17 {
  input %x : f32[4]
  const %r25 : i64[1] = dense<[25]>
  const %r3 : i64[1] = dense<[3]>
  const %r4 : i64[1] = dense<[4]>
  %a1 = Tile(%x, %r25) : f32[100]
  %b1 = Tile(%x, %r3) : f32[12]
)" + after_b1 +
         R"(  %a2 = ReduceSum(%a1) {keepdims = 1} : f32[1]
  %b2 = Tile(%b1, %r4) : f32[48]
  %y = Add(%a2, %b2) : f32[48]
  return %y)" +
         more_outputs + "\n}\n";
}
const std::string kBranches = branches_graph();

std::string order_of(const ir::Graph& g, const std::string& output_name) {
  ir::ValueId v = g.find_value(output_name);
  const ir::Value& value = g.value(v);
  auto it = g.node(value.producer).annotations.find("memplan.order");
  return it == g.node(value.producer).annotations.end() ? "" : it->second;
}

Status run_pass(PluginRegistry& reg, ir::Graph& g, std::map<std::string, int64_t>* stats = nullptr) {
  PassManager pm(reg);
  PipelineOptions options;
  options.passes = {"memplan-order"};
  KILN_RETURN_IF_ERROR(pm.run(g, options));
  if (stats) *stats = pm.records()[0].statistics;
  return ok_status();
}

TEST(MemplanOrderPass, AnnotatesALowerPeakOrder) {
  PluginRegistry reg;
  ASSERT_TRUE(reg.load_static(kiln_memplan_plugin_query, "static:kiln.memplan").ok());
  auto g = ir::parse_graph(kBranches);
  ASSERT_TRUE(g.ok()) << g.status().message();
  std::map<std::string, int64_t> stats;
  Status s = run_pass(reg, **g, &stats);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(order_of(**g, "a1"), "0");
  EXPECT_EQ(order_of(**g, "a2"), "1");
  EXPECT_EQ(order_of(**g, "b1"), "2");
  EXPECT_EQ(order_of(**g, "b2"), "3");
  EXPECT_EQ(order_of(**g, "y"), "4");
  EXPECT_EQ(stats.at("peak-bytes-at-hint-before"), 116 * 4);
  EXPECT_EQ(stats.at("peak-bytes-at-hint"), 105 * 4);

  // build_plan walks the main graph in the annotated order.
  auto plan = planner::build_plan(**g, planner::TargetInfo{}, planner::PlanOptions{});
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  std::vector<std::string> produced;
  for (const planner::PlanStep& step : plan->steps) {
    const std::string name = (**g).value((**g).node(step.node).outputs[0]).name;
    if (produced.empty() || produced.back() != name) produced.push_back(name);
  }
  EXPECT_EQ(produced, (std::vector<std::string>{"a1", "a2", "b1", "b2", "y"}));
}

TEST(MemplanOrderPass, InvalidAnnotationsAreIgnoredByThePlanner) {
  auto g = ir::parse_graph(kBranches);
  ASSERT_TRUE(g.ok());
  // y before its inputs: not a valid order, so the graph's own is used.
  int k = 4;
  for (ir::NodeId n : (**g).main().nodes) (**g).node(n).annotations["memplan.order"] = std::to_string(k--);
  auto plan = planner::build_plan(**g, planner::TargetInfo{}, planner::PlanOptions{});
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ((**g).value((**g).node(plan->steps.front().node).outputs[0]).name, "a1");
}

TEST(MemplanOrderPass, LeavesAnOptimalOrderUnannotated) {
  PluginRegistry reg;
  ASSERT_TRUE(reg.load_static(kiln_memplan_plugin_query, "static:kiln.memplan").ok());
  // A chain over symbolic shapes (evaluated at the hints: batch 1, seq 64).
  auto g = ir::parse_graph(R"(graph @g opset 17 {
  input %x : f32[batch,seq,8]
  %a = Relu(%x) : f32[batch,seq,8]
  %b = Exp(%a) : f32[batch,seq,8]
  return %b
}
)");
  ASSERT_TRUE(g.ok()) << g.status().message();
  std::map<std::string, int64_t> stats;
  ASSERT_TRUE(run_pass(reg, **g, &stats).ok());
  EXPECT_EQ(order_of(**g, "a"), "");
  EXPECT_EQ(ir::print_graph(**g).find("memplan"), std::string::npos);
  EXPECT_EQ(stats.at("peak-bytes-at-hint"), 2 * 64 * 8 * 4);  // x and a while a runs; a and b while b runs
}

// A node whose output shape is unknown (NonZero: nac) cuts the graph: a2
// may not move before it, so no lower order exists within the pieces.
TEST(MemplanOrderPass, NacOutputIsABarrier) {
  PluginRegistry reg;
  ASSERT_TRUE(reg.load_static(kiln_memplan_plugin_query, "static:kiln.memplan").ok());
  auto g = ir::parse_graph(branches_graph("  %nz = NonZero(%x) : i64[1,?]\n", ", %nz"));
  ASSERT_TRUE(g.ok()) << g.status().message();
  std::map<std::string, int64_t> stats;
  ASSERT_TRUE(run_pass(reg, **g, &stats).ok());
  EXPECT_EQ(order_of(**g, "a2"), "");
  EXPECT_EQ(stats.at("peak-bytes-at-hint"), stats.at("peak-bytes-at-hint-before"));
}

TEST(MemplanOrderPass, SharedLibraryLoadsAndRuns) {
  PluginRegistry reg;
  ASSERT_TRUE(plugin_testing::load_plugin_file(reg, KILN_MEMPLAN_SO, "memplan-order"));
  auto g = ir::parse_graph(kBranches);
  ASSERT_TRUE(g.ok());
  ASSERT_TRUE(run_pass(reg, **g).ok());
  EXPECT_EQ(order_of(**g, "a2"), "1");
}

}  // namespace
}  // namespace kiln::registry
