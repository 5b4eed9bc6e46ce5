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

Int8KernelsChoice choose_int8_kernels(Int8Kernels mode, const vk::Device* device, bool dot_products,
                                      bool cooperative_matrix) {
  if (mode == Int8Kernels::kOn) return {true, "integer kernels requested"};
  if (mode == Int8Kernels::kOff) return {false, "integer kernels turned off: the float graph"};
  if (!device) return {false, "no device: the float graph"};
  // The planner's dot-product path (and the tensor-core one, which it
  // leads to) needs the feature enabled and a Vulkan 1.3 target (SPIR-V
  // 1.6), as gemm_int.cc's int8_dot_available checks.
  constexpr uint32_t kVulkan13 = (1u << 22) | (3u << 12);
  const planner::TargetInfo plain = target_info(*device);
  if (!dot_products) return {false, "int8 dot products turned off: the float graph"};
  if (!plain.integer_dot_product || plain.vulkan_version < kVulkan13)
    return {false, "the device has no packed int8 dot products (Vulkan 1.3 shaderIntegerDotProduct): the float graph"};
  // Int8 cooperative matrices in the dialect the session's models use
  // (KILN_COOPMAT as VulkanModel::compile reads it). On an H100 the integer
  // kernels on them ran a QDQ resnet50 in 0.96 GPU ms against 1.75 for its
  // float graph (1.93 in fp16) and 1.01 for the float resnet50 in fp16 (bench/results/
  // h100-2026-11-27-session19).
  const StatusOr<CoopMatMode> env = coopmat_mode_from_env();
  const CoopMatMode coopmat = env.ok() && *env != CoopMatMode::kAuto ? *env : CoopMatMode::kDevice;
  if (cooperative_matrix && !target_info(*device, coopmat).coopmat_s8_shapes.empty())
    return {true, "the device has int8 cooperative matrices (tensor cores): integer kernels"};
  if (!device->capabilities().integer_dot_product_accelerated)
    return {false, "the device's packed int8 dot products are not accelerated: the float graph"};
  // Even accelerated, the dot products alone lose to the float graph: on
  // an H100 a QDQ resnet50 took 3.4 GPU ms on them (split K, session 19;
  // 11.5 before) against 1.75 as its float graph in fp32 (bench/results/
  // h100-2026-11-27-session19). `--int8-dot on` still forces them.
  return {false, "the device's packed int8 dot products are accelerated, but without int8 cooperative matrices the "
                 "integer kernels are slower than the float graph there (--int8-dot on forces them): the float graph"};
}

}  // namespace kiln::runtime
