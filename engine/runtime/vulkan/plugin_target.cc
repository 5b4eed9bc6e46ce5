// The device as the plugin ABI shows it to passes (see plugin_target.h).
#include "engine/runtime/vulkan/plugin_target.h"

#include <cstdio>

#include "engine/runtime/vulkan/vulkan_model.h"

namespace kiln::runtime {

kiln_target_info_t plugin_target_info(const vk::Device& device, bool cooperative_matrix,
                                      kiln_storage_mode_t storage_mode) {
  const planner::TargetInfo t = target_info(device);
  const vk::Capabilities& c = device.capabilities();
  kiln_target_info_t out{};
  out.struct_size = sizeof(out);
  out.shared_memory_bytes = t.max_shared_memory;
  out.compute_units = t.compute_units;
  out.subgroup_size = t.subgroup_size;
  out.max_workgroup_invocations = t.max_workgroup_invocations;
  out.max_image_dimension_2d = t.max_image_dimension_2d;
  out.cooperative_matrix = t.coopmat != planner::CoopMatFlavour::kNone && cooperative_matrix ? 1 : 0;
  out.fp16_arithmetic = t.fp16_arithmetic ? 1 : 0;
  out.vendor_id = c.vendor_id;
  std::snprintf(out.device_name, sizeof(out.device_name), "%s", c.device_name.c_str());
  out.device_type = static_cast<int32_t>(c.device_type);
  out.storage_mode = storage_mode;
  return out;
}

Int8KernelsChoice choose_int8_kernels(Int8Kernels mode, const vk::Device* device, bool dot_products) {
  if (mode == Int8Kernels::kOn) return {true, "integer kernels requested"};
  if (mode == Int8Kernels::kOff) return {false, "integer kernels turned off: the float graph"};
  if (!device) return {false, "no device: the float graph"};
  const planner::TargetInfo t = target_info(*device);
  // The planner's dot-product path needs the feature enabled and a Vulkan
  // 1.3 target (SPIR-V 1.6), as gemm_int.cc's int8_dot_available checks.
  constexpr uint32_t kVulkan13 = (1u << 22) | (3u << 12);
  if (!dot_products) return {false, "int8 dot products turned off: the float graph"};
  if (!t.integer_dot_product || t.vulkan_version < kVulkan13)
    return {false, "the device has no packed int8 dot products (Vulkan 1.3 shaderIntegerDotProduct): the float graph"};
  if (!device->capabilities().integer_dot_product_accelerated)
    return {false, "the device's packed int8 dot products are not accelerated: the float graph"};
  // Even accelerated, the integer kernels lose to the float graph: on an
  // H100 a QDQ resnet50 took 11.5 GPU ms as int8 kernels against 1.77 as
  // its float graph in fp32 and 1.08 for the float resnet50 in fp16
  // (bench/results/h100-2026-11-27-session14): they run the dot products
  // on the CUDA cores, not the tensor cores. `--int8-dot on` still forces
  // them.
  return {false, "the device's packed int8 dot products are accelerated, but the integer kernels are slower than the "
                 "float graph there (--int8-dot on forces them): the float graph"};
}

}  // namespace kiln::runtime
