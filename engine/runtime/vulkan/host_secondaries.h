// Kiln's own secondary command buffers holding a run recorded for the
// host (kiln_session_record with KILN_RECORD_VIA_SECONDARY), so that a game
// that re-records its frame every frame pays one vkCmdExecuteCommands for
// the model instead of recording every dispatch again.
//
// Why: recording a run's commands costs little in Kiln (HostCommands) but
// about 1.4 us per dispatch in NVIDIA's driver (107 us a frame for
// mobilenet_v2's 73 dispatches, issue 17), which a game pays every frame.
// The run's commands depend only on the signature (its descriptor sets,
// pipelines and memory), so they are recorded once per signature and queue
// family into a secondary command buffer with SIMULTANEOUS_USE (the frames
// in flight execute it at once) and freed with the signature.
//
// vkCmdExecuteCommands needs the secondary from a pool of the primary's
// queue family, which Vulkan cannot tell Kiln: the host names it, and this
// class keeps one pool per family it was asked for. Not thread-safe: the
// model's mutex guards it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>

#include "engine/base/status.h"
#include "platform/vulkan/device.h"

namespace kiln::runtime {

class HostSecondaries {
 public:
  // `device` is borrowed and must outlive this object.
  explicit HostSecondaries(vk::Device& device) : device_(device) {}
  // Destroys the pools, which frees every buffer still allocated from them.
  ~HostSecondaries();
  HostSecondaries(const HostSecondaries&) = delete;
  HostSecondaries& operator=(const HostSecondaries&) = delete;

  // A secondary command buffer for primaries of queue family `family`,
  // begun for use outside render passes with SIMULTANEOUS_USE, filled by
  // `fill` and ended. Errors: kInvalidArgument when `family` is not one of
  // the device's queue families or cannot run compute; an error of `fill`
  // (the buffer is freed); VkResult errors.
  StatusOr<VkCommandBuffer> record(uint32_t family, const std::function<Status(VkCommandBuffer)>& fill);
  // Returns a buffer from record() to its pool. It must not be pending
  // (nor recorded in a primary that is). VK_NULL_HANDLE is ignored.
  void free(uint32_t family, VkCommandBuffer cmd);

 private:
  StatusOr<VkCommandPool> pool(uint32_t family);

  vk::Device& device_;
  std::map<uint32_t, VkCommandPool> pools_;
};

}  // namespace kiln::runtime
