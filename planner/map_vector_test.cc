// The map harness's vector path (planner/map_vector.h): which tensors it
// loads and stores as vectors, that the GLSL of every element type passes
// spirv-val, and, on the test device in every storage x precision, that
// its edge cases match the reference executor: rows that are not a multiple
// of 4 (some blocks aligned, some not), a partial last block, broadcast
// operands, a sliced input, integer and mixed element types, symbolic dims.
#include "planner/map_vector.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "engine/runtime/reference_executor.h"
#include "engine/runtime/vulkan/vulkan_model.h"
#include "planner/glsl_codegen.h"
#include "planner/lower_util.h"
#include "planner/testing/op_check.h"
#include "platform/vulkan/vk_test_env.h"

namespace kiln::planner {
namespace {

using testing::expect_valid_spirv;

KernelTensor tensor(std::string name, std::vector<ir::Dim> shape, ElemType type, bool written,
                    Storage storage = Storage::kBuffer) {
  KernelTensor t;
  t.name = std::move(name);
  t.shape = std::move(shape);
  t.layout.storage = storage;
  t.layout.type = type;
  if (storage == Storage::kImage) t.layout.packed_axis = default_packed_axis(t.shape.size());
  t.written = written;
  return t;
}

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

TEST(MapVector, SameShapeBufferInputsAreLoadedAsVectorsBroadcastOnesAreNot) {
  const ir::Dim n = ir::Dim::symbol("n");
  for (ElemType type : {ElemType::kF32, ElemType::kF16}) {
    KernelDesc k =
        map_kernel("add_bias",
                   {tensor("x0", {n, 6}, type, false), tensor("x1", {6}, type, false), tensor("y", {n, 6}, type, true)},
                   "v = x0_ld(oi) + x1_at(oc1);");
    const MapVectorPath path = plan_map_vector_path(k, k.tensors[2], false);
    ASSERT_EQ(path.vector_loads.size(), 1u);
    EXPECT_EQ(path.vector_loads[0]->name, "x0");
    EXPECT_TRUE(path.vector_store);
    auto g = generate_glsl(k, TargetInfo{});
    ASSERT_TRUE(g.ok()) << g.status().to_string();
    const std::string v4 = storage_vec4(type);
    EXPECT_TRUE(contains(g->glsl, "readonly restrict buffer KilnBufferV0 { " + v4 + " x0_data4[]; };")) << g->glsl;
    EXPECT_TRUE(contains(g->glsl, "buffer KilnBufferV2 { " + v4 + " y_data4[]; };")) << g->glsl;
    EXPECT_FALSE(contains(g->glsl, "x1_data4")) << g->glsl;
    EXPECT_TRUE(contains(g->glsl, "v = kiln_x0_v[kiln_lane] + x1_at(oc1);")) << g->glsl;
    EXPECT_TRUE(contains(g->glsl, "y_data4[kiln_oi0 >> 2] = " + v4 + "(kiln_vals);")) << g->glsl;
    // The scalar path stays for the blocks the vector path does not take.
    EXPECT_TRUE(contains(g->glsl, "v = x0_ld(oi) + x1_at(oc1);")) << g->glsl;
    expect_valid_spirv(g->glsl, k.name);
  }
}

TEST(MapVector, MixedElementTypesAndIntegers) {
  KernelDesc k =
      map_kernel("cast", {tensor("x0", {3, 8}, ElemType::kF16, false), tensor("y", {3, 8}, ElemType::kI32, true)},
                 "v = int(x0_ld(oi)) + int(x0_ld(oi + 0));");
  const MapVectorPath path = plan_map_vector_path(k, k.tensors[1], false);
  ASSERT_EQ(path.vector_loads.size(), 1u);
  // Only the exact lane load is rewritten; other reads stay scalar.
  EXPECT_EQ(vectorize_body(k.body, path), "{\nv = int(kiln_x0_v[kiln_lane]) + int(x0_ld(oi + 0));\n}");
  auto g = generate_glsl(k, TargetInfo{});
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_TRUE(contains(g->glsl, "f16vec4 x0_data4[]")) << g->glsl;
  EXPECT_TRUE(contains(g->glsl, "ivec4 y_data4[]")) << g->glsl;
  expect_valid_spirv(g->glsl, k.name);
}

TEST(MapVector, IdentifiersThatOnlyEndLikeALaneLoadAreKept) {
  KernelDesc k = map_kernel("pair",
                            {tensor("x0", {8}, ElemType::kF32, false), tensor("ax0", {8}, ElemType::kF32, false),
                             tensor("y", {8}, ElemType::kF32, true)},
                            "v = ax0_ld(oi) * x0_ld(oi) + x0_ld(oi);");
  const MapVectorPath path = plan_map_vector_path(k, k.tensors[2], false);
  ASSERT_EQ(path.vector_loads.size(), 2u);
  EXPECT_EQ(vectorize_body(k.body, path),
            "{\nv = kiln_ax0_v[kiln_lane] * kiln_x0_v[kiln_lane] + kiln_x0_v[kiln_lane];\n}");
}

TEST(MapVector, ImagesViewsAndEpiloguesTakeTheScalarStore) {
  // An image output: no vector path at all (its lanes are one texel store already).
  KernelDesc img = map_kernel("relu_img",
                              {tensor("x0", {1, 8, 3, 3}, ElemType::kF32, false),
                               tensor("y", {1, 8, 3, 3}, ElemType::kF32, true, Storage::kImage)},
                              "v = max(x0_ld(oi), 0.0);");
  EXPECT_FALSE(plan_map_vector_path(img, img.tensors[1], false).enabled());
  auto gi = generate_glsl(img, TargetInfo{});
  ASSERT_TRUE(gi.ok()) << gi.status().to_string();
  EXPECT_FALSE(contains(gi->glsl, "_data4")) << gi->glsl;
  expect_valid_spirv(gi->glsl, img.name);
  // No input to load as a vector (an image input, a broadcast): no vector
  // path, the body is not repeated for the store alone.
  KernelDesc in_img =
      map_kernel("relu_from_img",
                 {tensor("x0", {1, 8, 3, 3}, ElemType::kF32, false, Storage::kImage),
                  tensor("b", {8, 1, 1}, ElemType::kF32, false), tensor("y", {1, 8, 3, 3}, ElemType::kF32, true)},
                 "v = max(x0_at(oc0, oc1, oc2, oc3), b_at(oc1, 0, 0));");
  EXPECT_FALSE(plan_map_vector_path(in_img, in_img.tensors[2], false).enabled());
  auto gn = generate_glsl(in_img, TargetInfo{});
  ASSERT_TRUE(gn.ok()) << gn.status().to_string();
  EXPECT_FALSE(contains(gn->glsl, "_data4")) << gn->glsl;
  // A store epilogue: loads as vectors, the four values through y_st4.
  KernelDesc ep =
      map_kernel("relu_ep", {tensor("x0", {2, 8}, ElemType::kF32, false), tensor("y", {2, 8}, ElemType::kF32, true)},
                 "v = max(x0_ld(oi), 0.0);");
  ep.store_epilogue = {"y", "float kiln_epilogue(int oc0, int oc1, int oi, float v) { return v * 2.0; }\n"};
  auto ge = generate_glsl(ep, TargetInfo{});
  ASSERT_TRUE(ge.ok()) << ge.status().to_string();
  EXPECT_FALSE(contains(ge->glsl, "y_data4")) << ge->glsl;
  EXPECT_TRUE(contains(ge->glsl, "y_st4(oc0_, oc1_, kiln_vals);")) << ge->glsl;
  expect_valid_spirv(ge->glsl, ep.name);
}

// --- on the test device -----------------------------------------------------

class MapVectorDevice : public vk::testing::VulkanTest {};

// Runs graph `text` on every input set of `runs` (one compile per config)
// and compares each output with the reference executor's.
void expect_matches_reference(const std::string& text, const std::vector<std::vector<Tensor>>& runs) {
  auto g = testing::parse_shaped_graph(text);
  ASSERT_TRUE(g);
  runtime::ReferenceExecutor reference(*g);
  for (const testing::BackendConfig& config : testing::all_backend_configs()) {
    auto model = testing::compile_on_test_device(*g, config);
    ASSERT_TRUE(model.ok()) << config.name() << ": " << model.status().to_string();
    EXPECT_EQ((*model)->plan().fallback_count(), 0u) << config.name();
    for (const std::vector<Tensor>& inputs : runs) {
      auto want = reference.run(inputs);
      ASSERT_TRUE(want.ok()) << want.status().to_string();
      auto got = (*model)->run(inputs);
      ASSERT_TRUE(got.ok()) << config.name() << ": " << got.status().to_string();
      const double tol = config.precision == ElemType::kF16 ? 1e-2 : 1e-6;
      for (size_t j = 0; j < want->size(); ++j) {
        const Tensor& a = (*want)[j];
        const Tensor& b = (*got)[j];
        ASSERT_EQ(a.shape(), b.shape()) << config.name();
        for (int64_t i = 0; i < a.numel(); ++i)
          ASSERT_NEAR(a.get_f64(i), b.get_f64(i), tol * std::max(1.0, std::fabs(a.get_f64(i))))
              << config.name() << " output " << j << " element " << i << " of " << a.numel();
      }
    }
  }
}

using testing::random_tensor;

// Rows of 7 (row 0's first block aligned and whole, its second partial;
// row 1 starts at 7, unaligned), a partial last block (13), whole blocks
// only (2x3x8), a single element.
TEST_F(MapVectorDevice, RowsNotAMultipleOfFourAndTails) {
  const std::vector<std::pair<Shape, std::string>> shapes = {
      {{3, 7}, "3,7"}, {{13}, "13"}, {{2, 3, 8}, "2,3,8"}, {{1}, "1"}};
  for (const auto& [shape, dims] : shapes) {
    SCOPED_TRACE(dims);
    const std::string t = "f32[" + dims + "]";
    expect_matches_reference("graph @g opset 17 {\n  input %a : " + t + "\n  input %b : " + t +
                                 "\n  %s = Add(%a, %b) : " + t + "\n  return %s\n}\n",
                             {{random_tensor(shape, 1), random_tensor(shape, 2)}});
  }
}

// A per-channel bias ([C,1,1] of NCHW) and a last-axis one ([C]) beside a
// same-shape operand, in both argument orders.
TEST_F(MapVectorDevice, BroadcastOperands) {
  expect_matches_reference(
      "graph @g opset 17 {\n  input %x : f32[2,4,3,3]\n  input %c : f32[4,1,1]\n  input %l : f32[3]\n"
      "  %a = Add(%x, %c) : f32[2,4,3,3]\n  %b = Mul(%l, %a) : f32[2,4,3,3]\n  return %b\n}\n",
      {{random_tensor({2, 4, 3, 3}, 3), random_tensor({4, 1, 1}, 4), random_tensor({3}, 5)}});
  expect_matches_reference(
      "graph @g opset 17 {\n  input %x : f32[5,12]\n  input %l : f32[12]\n"
      "  %a = Sub(%l, %x) : f32[5,12]\n  return %a\n}\n",
      {{random_tensor({5, 12}, 6), random_tensor({12}, 7)}});
}

// A slice at an odd offset (1) read by an elementwise op, unfused (the
// slice is its own tensor) and fused (read through a view, scalar).
TEST_F(MapVectorDevice, OddOffsetSlices) {
  for (const std::string& group : {std::string(), std::string(" #{kiln.fusion_group = \"v\"}")}) {
    expect_matches_reference(
        "graph @g opset 17 {\n  input %x : f32[3,9]\n  input %r : f32[3,8]\n"
        "  const %st : i64[1] = dense<[1]>\n  const %en : i64[1] = dense<[9]>\n  const %ax : i64[1] = dense<[1]>\n"
        "  %s = Slice(%x, %st, %en, %ax)" +
            group +
            " : f32[3,8]\n"
            "  %y = Add(%s, %r)" +
            group + " : f32[3,8]\n  return %y\n}\n",
        {{random_tensor({3, 9}, 8), random_tensor({3, 8}, 9)}});
  }
}

// Symbolic dims: the vector test is made at run time. Rows of 6 leave
// every other block unaligned; a symbolic last axis of 8 is whole vectors,
// of 5 none.
TEST_F(MapVectorDevice, SymbolicDims) {
  expect_matches_reference(
      "graph @g opset 17 {\n  input %x : f32[n,6]\n  input %z : f32[n,6]\n"
      "  %e = Sigmoid(%x) : f32[n,6]\n  %y = Mul(%e, %z) : f32[n,6]\n  return %y\n}\n",
      {{random_tensor({1, 6}, 11), random_tensor({1, 6}, 12)}, {random_tensor({4, 6}, 13), random_tensor({4, 6}, 14)}});
  expect_matches_reference("graph @g opset 17 {\n  input %x : f32[2,w]\n  %y = Neg(%x) : f32[2,w]\n  return %y\n}\n",
                           {{random_tensor({2, 8}, 15)}, {random_tensor({2, 5}, 16)}, {random_tensor({2, 12}, 17)}});
}

// Integer tensors and a float -> int cast (a vec4 load, an ivec4 store).
TEST_F(MapVectorDevice, IntegerAndCast) {
  expect_matches_reference(
      "graph @g opset 17 {\n  input %x : f32[2,10]\n  %c = Cast(%x) {to = 6} : i32[2,10]\n"
      "  %d = Add(%c, %c) : i32[2,10]\n  return %c, %d\n}\n",
      {{random_tensor({2, 10}, 10, -50, 50)}});
}

}  // namespace
}  // namespace kiln::planner
