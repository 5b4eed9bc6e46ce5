// The OpenCL runtime's buffer arena (opencl_model_run.cc, Run::place_arena)
// on the machine's OpenCL device (skipped without one, unless required): a
// chain of kernels whose intermediates die one after another shares memory
// (the planned arena is smaller than a buffer per root), the outputs equal
// the reference executor's, and a run with a larger symbolic batch grows the
// arena while a smaller one after it reuses the grown allocation.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "engine/runtime/reference_executor.h"
#include "planner/testing/op_check.h"
#include "plugins/opencl/cl_device.h"
#include "plugins/opencl/cl_test_requirement.h"
#include "plugins/opencl/opencl_model.h"

namespace kiln::opencl {
namespace {

// Six MatMuls (the model is compiled without the pass pipeline: one
// dispatch per node; a MatMul never writes over its input), then a residual
// add that keeps x live to the end: no more than x and two intermediates
// are live at once.
std::string chain() {
  std::string text = "graph @chain opset 17 {\n  input %x : f32[n,16,16]\n";
  for (int k = 0; k < 6; ++k) {
    text += "  const %w" + std::to_string(k) + " : f32[16,16] = dense<[";
    for (int i = 0; i < 256; ++i) text += (i ? "," : "") + std::to_string(((i * 7 + k * 3) % 11 - 5) / 20.0);
    text += "]>\n";
  }
  const char* names[] = {"x", "a", "b", "c", "d", "e", "f"};
  for (int k = 0; k < 6; ++k)
    text += std::string("  %") + names[k + 1] + " = MatMul(%" + names[k] + ", %w" + std::to_string(k) +
            ") : f32[n,16,16]\n";
  return text + "  %y = Add(%f, %x) : f32[n,16,16]\n  return %y\n}\n";
}

TEST(OpenClArena, IntermediatesShareOneAllocation) {
  auto device = ClDevice::shared();
  if (!device.ok()) {
    if (opencl_required()) FAIL() << opencl_required_failure(device.status().to_string());
    GTEST_SKIP() << device.status().to_string();
  }
  auto graph = planner::testing::parse_shaped_graph(chain());
  ASSERT_TRUE(graph);
  runtime::ReferenceExecutor reference(*graph);
  auto model = OpenClModel::compile(std::make_unique<ir::Graph>(*graph), *device);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  uint64_t largest = 0;
  for (int64_t n : {1, 4, 2}) {
    SCOPED_TRACE("batch " + std::to_string(n));
    const Tensor x = planner::testing::random_tensor({n, 16, 16}, static_cast<uint64_t>(n));
    RunReport report;
    auto got = (*model)->run({x}, &report);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    auto want = reference.run({x});
    ASSERT_TRUE(want.ok()) << want.status().to_string();
    for (int64_t i = 0; i < x.numel(); ++i)
      ASSERT_NEAR((*got)[0].get_f64(i), (*want)[0].get_f64(i), 1e-5 * std::max(1.0, std::fabs((*want)[0].get_f64(i))))
          << "element " << i;
    // x, a..f (y may write over f): at least seven roots, all in the arena,
    // in at most four tensors' worth of memory (three live at once, plus
    // alignment) against seven or eight without reuse.
    const uint64_t tensor = static_cast<uint64_t>(n) * 16 * 16 * 4;
    EXPECT_GE(report.arena_roots, 7u);
    EXPECT_EQ(report.separate_roots, 0u);
    EXPECT_GE(report.no_reuse_bytes, 7 * tensor);
    EXPECT_GE(report.arena_bytes, 3 * tensor);
    EXPECT_LE(report.arena_bytes, 4 * tensor);
    largest = std::max(largest, report.arena_bytes);
  }
  EXPECT_GT(largest, 0u);
}

}  // namespace
}  // namespace kiln::opencl
