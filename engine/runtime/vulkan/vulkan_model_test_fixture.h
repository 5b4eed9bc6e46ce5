// The fixture the VulkanModel end-to-end tests share (control flow, dynamic
// shapes): compile a graph for each storage kind on the test device, and the
// graph pieces more than one of them builds. Test-only; header-only so each
// test binary needs no extra library.
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "engine/runtime/vulkan/vulkan_model.h"
#include "platform/vulkan/vk_test_env.h"

namespace kiln::runtime::testing {

class VulkanModelTest : public vk::testing::VulkanTest {
 protected:
  // Compiles `g` with options_ and the given storage.
  StatusOr<std::unique_ptr<VulkanModel>> compile(const ir::Graph& g, planner::Storage storage) {
    VulkanModelOptions options = options_;
    options.plan.storage = storage;
    return VulkanModel::compile(device(), *vk::testing::test_kernel_cache(), g, options);
  }

  // Compiles `g` for buffer and then image storage and calls body(model)
  // for each, under a trace naming the storage. A compile error or a fatal
  // failure inside `body` ends the loop, as an ASSERT in the loop would.
  template <typename Body>
  void for_each_storage(const ir::Graph& g, const Body& body) {
    for (planner::Storage storage : {planner::Storage::kBuffer, planner::Storage::kImage}) {
      SCOPED_TRACE(planner::storage_name(storage));
      auto model = compile(g, storage);
      ASSERT_TRUE(model.ok()) << model.status().to_string();
      body(**model);
      if (HasFatalFailure()) return;
    }
  }

  VulkanModelOptions options_;
};

// cond = ReduceSum(x) > 0 as a scalar bool (values and nodes "sum" and
// `cond_name`, the constant "zero"): the device-computed condition the If
// tests branch on.
inline ir::ValueId add_sum_is_positive(ir::Graph& g, ir::ValueId x, const char* cond_name = "cond") {
  const ir::SymShape scalar_shape = ir::SymShape::from_concrete({});
  ir::ValueId sum = g.add_value("sum", DType::kFloat32, scalar_shape);
  ir::ValueId cond = g.add_value(cond_name, DType::kBool, scalar_shape);
  g.add_node("ReduceSum", {x}, {sum}, {{"keepdims", ir::Attribute::of_int(0)}}, "sum");
  g.add_node("Greater", {sum, g.add_constant("zero", Tensor::scalar_f32(0.0f))}, {cond}, {}, cond_name);
  return cond;
}

}  // namespace kiln::runtime::testing
