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

}  // namespace kiln::runtime
