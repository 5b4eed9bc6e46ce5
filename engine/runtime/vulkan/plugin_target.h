// The device as the plugin ABI shows it to passes (kiln_target_info_t):
// the planner's view of it (target_info) and its identity. Shared by the
// engine session and the tools that run the pass pipeline themselves (the
// ONNX node runner), so that both describe a device the same way.
#pragma once

#include <cstdint>

#include "kiln/kiln_plugin.h"
#include "platform/vulkan/device.h"

namespace kiln::runtime {

// `cooperative_matrix`: whether the session lets kernels use the device's
// cooperative matrices; `storage_mode`: the session's storage option.
kiln_target_info_t plugin_target_info(const vk::Device& device, bool cooperative_matrix, kiln_storage_mode_t storage_mode);

}  // namespace kiln::runtime
