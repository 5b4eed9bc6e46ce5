// The code generator: every accessor/storage/element-type combination
// produces GLSL that compiles and whose SPIR-V passes spirv-val; constant
// dims become specialization constants and symbolic ones push constants.
#include "planner/glsl_codegen.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "planner/index_view.h"
#include "planner/testing/op_check.h"
#include "platform/vulkan/shader_compiler.h"

namespace kiln::planner {
namespace {

using testing::expect_valid_spirv;

KernelTensor tensor(std::string name, std::vector<ir::Dim> shape, Storage storage, ElemType type, bool written) {
  KernelTensor t;
  t.name = std::move(name);
  t.shape = std::move(shape);
  t.layout.storage = storage;
  t.layout.type = type;
  if (storage == Storage::kImage) t.layout.packed_axis = default_packed_axis(t.shape.size());
  t.written = written;
  return t;
}


TEST(GlslCodegen, MapKernelsCompileForEveryStorageAndType) {
  TargetInfo target;

  for (Storage in_storage : {Storage::kBuffer, Storage::kImage})
    for (Storage out_storage : {Storage::kBuffer, Storage::kImage})
      for (ElemType type : {ElemType::kF32, ElemType::kF16}) {
        KernelDesc k;
        k.name = std::string("map_") + storage_name(in_storage) + "_" + storage_name(out_storage) + "_" + elem_type_name(type);
        k.tensors = {tensor("x", {1, 5, 7, 3}, in_storage, type, false),
                     tensor("b", {5}, Storage::kBuffer, type, false),
                     tensor("y", {1, 5, 7, 3}, out_storage, type, true)};
        k.body = "v = x_at(oc0, oc1, oc2, oc3) + x_ld(oi) * b_at(oc1) + x_at4(oc0, oc1 & ~3, oc2, 0).x;";
        auto g = generate_glsl(k, target);
        ASSERT_TRUE(g.ok()) << g.status().to_string();
        expect_valid_spirv(g->glsl, k.name);
      }
}

TEST(GlslCodegen, IntegerTensorsAndRankZero) {
  KernelDesc k;
  k.name = "int_map";
  k.tensors = {tensor("i", {}, Storage::kBuffer, ElemType::kI32, false),
               tensor("y", {9}, Storage::kBuffer, ElemType::kI32, true)};
  k.body = "v = i_ld(0) + oc0;";
  auto g = generate_glsl(k, TargetInfo{});
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  expect_valid_spirv(g->glsl, "int_map");
}

TEST(GlslCodegen, ConstantDimsAreSpecializedSymbolicOnesPushed) {
  KernelDesc k;
  k.name = "sym";
  const ir::Dim n = ir::Dim::symbol("n");
  k.tensors = {tensor("x", {n, 8}, Storage::kBuffer, ElemType::kF32, false),
               tensor("y", {n, 8}, Storage::kBuffer, ElemType::kF32, true)};
  k.params = {{"EXTRA", n * ir::Dim(2)}};
  k.body = "v = x_ld(oi) * float(EXTRA);";
  auto g = generate_glsl(k, TargetInfo{});
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  // x_D0, x_NUMEL, y_D0, y_NUMEL, EXTRA, KILN_TOTAL depend on n.
  EXPECT_EQ(g->push.size(), 6u);
  for (const ir::Dim& d : g->push) EXPECT_FALSE(d.is_const()) << d.to_string();
  for (int64_t v : g->spec) EXPECT_GE(v, 1);
  EXPECT_NE(g->glsl.find("kiln_pc.p["), std::string::npos);
  // The grid is an expression of n: 2 blocks of 4 per row, 64 per group.
  auto groups = g->groups[0].evaluate({{"n", 100}});
  ASSERT_TRUE(groups.has_value());
  EXPECT_EQ(*groups, (100 * 2 + 63) / 64);
  expect_valid_spirv(g->glsl, "sym");
}

TEST(GlslCodegen, MalformedDescriptionsAreRejected) {
  KernelDesc k;
  k.name = "bad";
  k.tensors = {tensor("x", {4}, Storage::kBuffer, ElemType::kF32, false)};
  k.body = "v = 0.0;";
  EXPECT_FALSE(generate_glsl(k, TargetInfo{}).ok());  // no written tensor
  k.tensors.push_back(tensor("x", {4}, Storage::kBuffer, ElemType::kF32, true));
  EXPECT_FALSE(generate_glsl(k, TargetInfo{}).ok());  // duplicate name
  k.tensors = {tensor("x", {4}, Storage::kImage, ElemType::kI32, false),
               tensor("y", {4}, Storage::kBuffer, ElemType::kF32, true)};
  EXPECT_FALSE(generate_glsl(k, TargetInfo{}).ok());  // integer image
  // Too many dynamic parameters for the push-constant space.
  TargetInfo tiny;
  tiny.max_push_constants_size = 8;
  k.tensors = {tensor("x", {ir::Dim::symbol("a"), ir::Dim::symbol("b")}, Storage::kBuffer, ElemType::kF32, false),
               tensor("y", {ir::Dim::symbol("a"), ir::Dim::symbol("b")}, Storage::kBuffer, ElemType::kF32, true)};
  auto g = generate_glsl(k, tiny);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kUnimplemented);
}

// A tensor read through an index view: the source's storage is bound, the
// kernel sees the view's shape, every accessor compiles for both source
// storages and precisions, and nothing says buffer or image.
TEST(GlslCodegen, ViewsBindTheSourceAndShowTheViewShape) {
  const ir::Dim n = ir::Dim::symbol("n");
  auto view = std::make_shared<IndexView>(IndexView::identity({n, 6, 5}));
  view->transpose({0, 2, 1});         // [n, 5, 6]
  view->reshape({n, 5, 2, 3});        // a split of 6
  view->vec_axis = 1;
  for (Storage storage : {Storage::kBuffer, Storage::kImage})
    for (ElemType type : {ElemType::kF32, ElemType::kF16}) {
      KernelDesc k;
      k.name = std::string("view_") + storage_name(storage) + "_" + elem_type_name(type);
      KernelTensor x = tensor("x", {n, 5, 2, 3}, storage, type, false);
      x.layout.packed_axis = storage == Storage::kImage ? 1 : -1;  // of the source [n, 6, 5]
      x.view = view;
      k.tensors = {x, tensor("y", {n, 5, 2, 3}, Storage::kBuffer, type, true)};
      k.body = "v = x_at(oc0, oc1, oc2, oc3) + x_ld(oi) + x_at4(oc0, oc1, oc2, oc3).y + float(x_D3 + x_NUMEL + x_VEC);";
      auto g = generate_glsl(k, TargetInfo{});
      ASSERT_TRUE(g.ok()) << g.status().to_string();
      EXPECT_NE(g->glsl.find("#define x_IS_VIEW 1"), std::string::npos);
      EXPECT_NE(g->glsl.find("#define x_VEC 1"), std::string::npos);
      EXPECT_EQ(g->glsl.find("x_IS_BUFFER"), std::string::npos);
      EXPECT_EQ(g->glsl.find("x_IS_IMAGE"), std::string::npos);
      EXPECT_EQ(g->glsl.find("x_data"), std::string::npos);
      EXPECT_NE(g->glsl.find("x_src_at("), std::string::npos);
      expect_valid_spirv(g->glsl, k.name);
    }
  KernelDesc k;
  k.name = "bad_view";
  KernelTensor x = tensor("x", {4, 3}, Storage::kBuffer, ElemType::kF32, true);
  auto t = std::make_shared<IndexView>(IndexView::identity({3, 4}));
  t->transpose({1, 0});
  x.view = t;
  k.tensors = {x};
  k.body = "v = 0.0;";
  EXPECT_FALSE(generate_glsl(k, TargetInfo{}).ok());  // a written view
  k.tensors[0].written = false;
  k.tensors.push_back(tensor("x_src", {4, 3}, Storage::kBuffer, ElemType::kF32, true));
  auto g = generate_glsl(k, TargetInfo{});
  ASSERT_FALSE(g.ok());  // the source accessors' names are taken
  EXPECT_NE(g.status().message().find("x_src"), std::string::npos);
}

}  // namespace
}  // namespace kiln::planner
