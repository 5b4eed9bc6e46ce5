// HostCommands (host_commands.h): building the flat arrays, and recording
// a range of dispatches from them.
#include "engine/runtime/vulkan/host_commands.h"

#include "platform/vulkan/barriers.h"

namespace kiln::runtime {

void HostCommands::add(HostDispatch d, const std::vector<VkDescriptorSet>& d_sets,
                       const std::vector<std::byte>& d_push) {
  d.first_set = static_cast<uint32_t>(sets.size());
  d.set_count = static_cast<uint32_t>(d_sets.size());
  sets.insert(sets.end(), d_sets.begin(), d_sets.end());
  d.push_offset = static_cast<uint32_t>(push.size());
  d.push_size = static_cast<uint32_t>(d_push.size());
  push.insert(push.end(), d_push.begin(), d_push.end());
  d.new_pipeline = dispatches.empty() || dispatches.back().pipeline != d.pipeline;
  dispatches.push_back(d);
}

size_t HostCommands::record(const VolkDeviceTable& fn, VkCommandBuffer cmd, size_t first, size_t end,
                            const vk::DebugLabels& labels, const std::vector<std::string>& label_names) const {
  // The barrier of Recorder::record_dispatches, and the one it puts
  // between segments: the same compute -> compute memory dependency.
  constexpr VkAccessFlags kShaderAccess = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  const VkMemoryBarrier barrier = vk::memory_barrier(kShaderAccess, kShaderAccess);
  const bool labelled = labels.enabled();
  size_t commands = 0;
  for (size_t i = first; i < end; ++i) {
    const HostDispatch& d = dispatches[i];
    if (d.planned_barrier || (d.segment_start && i > first)) {
      fn.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1,
                              &barrier, 0, nullptr, 0, nullptr);
      ++commands;
    }
    if (labelled) labels.open(cmd, label_names.at(d.step).c_str());
    if (d.new_pipeline || i == first) {
      fn.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, d.pipeline);
      ++commands;
    }
    if (d.set_count != 0) {
      fn.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, d.layout, 0, d.set_count, &sets[d.first_set], 0,
                                 nullptr);
      ++commands;
    }
    if (d.push_size != 0) {
      fn.vkCmdPushConstants(cmd, d.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, d.push_size, &push[d.push_offset]);
      ++commands;
    }
    fn.vkCmdDispatch(cmd, d.groups[0], d.groups[1], d.groups[2]);
    ++commands;
    if (labelled) labels.close(cmd);
  }
  return commands;
}

}  // namespace kiln::runtime
