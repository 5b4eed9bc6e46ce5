// VK_EXT_debug_utils command-buffer labels (RenderDoc, Nsight and PIX show
// them around the commands they enclose). The commands are instance-level:
// vkGetInstanceProcAddr gives them only when the instance enabled the
// extension, so null pointers mean "no labels" and cost nothing.
#pragma once

#include "platform/vulkan/volk_impl.h"

namespace kiln::vk {

struct DebugLabels {
  PFN_vkCmdBeginDebugUtilsLabelEXT begin = nullptr;
  PFN_vkCmdEndDebugUtilsLabelEXT end = nullptr;

  bool enabled() const { return begin != nullptr && end != nullptr; }

  // The label commands of `instance` (both null without the extension).
  static DebugLabels load(PFN_vkGetInstanceProcAddr get_instance_proc_addr, VkInstance instance) {
    DebugLabels labels;
    if (!get_instance_proc_addr || instance == VK_NULL_HANDLE) return labels;
    labels.begin = reinterpret_cast<PFN_vkCmdBeginDebugUtilsLabelEXT>(
        get_instance_proc_addr(instance, "vkCmdBeginDebugUtilsLabelEXT"));
    labels.end =
        reinterpret_cast<PFN_vkCmdEndDebugUtilsLabelEXT>(get_instance_proc_addr(instance, "vkCmdEndDebugUtilsLabelEXT"));
    if (!labels.enabled()) labels = DebugLabels{};
    return labels;
  }

  // Opens a label named `name` in `cmd` (no-op when disabled).
  void open(VkCommandBuffer cmd, const char* name) const {
    if (!enabled()) return;
    VkDebugUtilsLabelEXT label{VK_STRUCTURE_TYPE_DEBUG_UTILS_LABEL_EXT};
    label.pLabelName = name;
    begin(cmd, &label);
  }
  void close(VkCommandBuffer cmd) const {
    if (enabled()) end(cmd);
  }
};

}  // namespace kiln::vk
