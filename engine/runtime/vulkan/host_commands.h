// A signature's dispatches flattened for recording into the host's command
// buffers again and again (VulkanModel::record_into and record_slice: a
// game's every frame).
//
// Recording a signature's segments walks per-dispatch objects (descriptor
// set and push-constant vectors on the heap, the pipeline objects behind
// pointers) and was, per frame, a chase through a few hundred cache lines
// that the frame's other work had evicted. HostCommands holds what the
// commands need in three flat arrays — one 56-byte entry per dispatch, the
// descriptor sets, the push-constant bytes — made once per signature
// (Recorder::host_commands), so that recording is a linear walk that emits
// only Vulkan commands: no checks (prepare_dispatch made them), no lookups,
// no allocation, and no vkCmdBindPipeline where the previous dispatch bound
// the same pipeline. Plain data over Vulkan handles, with no Vulkan object
// of its own: it is tested with a fake device table (host_commands_test.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "platform/vulkan/debug_labels.h"
#include "platform/vulkan/volk_impl.h"

namespace kiln::runtime {

struct HostDispatch {
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  uint32_t first_set = 0, set_count = 0;    // in HostCommands::sets
  uint32_t push_offset = 0, push_size = 0;  // in HostCommands::push
  uint32_t groups[3] = {1, 1, 1};
  uint32_t step = 0;  // the plan step (its debug label's name)
  // A compute -> compute barrier goes before it: the hazard barrier the
  // recorder planned (RecordedDispatch::barrier_before), or, for the first
  // dispatch of a segment after the first, when an earlier dispatch is in
  // the same recording (segments were planned each on its own).
  bool planned_barrier = false;
  bool segment_start = false;
  // Its pipeline differs from the previous dispatch's (the first: true).
  bool new_pipeline = true;
};

struct HostCommands {
  std::vector<HostDispatch> dispatches;
  std::vector<VkDescriptorSet> sets;
  std::vector<std::byte> push;
  bool built = false;  // made for its signature (a run of no dispatch has none)

  // Appends one dispatch (new_pipeline and the offsets are set here).
  void add(HostDispatch d, const std::vector<VkDescriptorSet>& d_sets, const std::vector<std::byte>& d_push);

  // Records dispatches [first, end) (end <= dispatches.size()) into `cmd`,
  // each after its barrier, the first one binding its pipeline whatever
  // was bound before; each in a debug label named label_names[step] when
  // `labels` is enabled. The caller records the entry and exit barriers.
  // Returns the number of Vulkan commands recorded (labels not counted).
  size_t record(const VolkDeviceTable& fn, VkCommandBuffer cmd, size_t first, size_t end,
                const vk::DebugLabels& labels, const std::vector<std::string>& label_names) const;
};

}  // namespace kiln::runtime
