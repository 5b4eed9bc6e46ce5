// Kiln's own secondary command buffers holding a run recorded for the
// host (kiln_session_record with KILN_RECORD_VIA_SECONDARY), so that a game
// that re-records its frame every frame pays one vkCmdExecuteCommands for
// the model instead of recording every dispatch again.
//
// Why: recording a run's commands costs little in Kiln (HostCommands) but
// about 1.4 us per dispatch in NVIDIA's driver (107 us a frame for
// mobilenet_v2's 73 dispatches, issue 17), which a game pays every frame.
// The run's commands depend only on the signature (its descriptor sets,
// pipelines and memory), so they are recorded once per signature into a
// secondary command buffer with SIMULTANEOUS_USE (the frames in flight
// execute it at once) and freed with the signature.
//
// vkCmdExecuteCommands needs the secondary from a pool of the primary's
// queue family; the host's primary must be of the device's family (the
// model's memory is exclusive to it), so one pool serves. Not thread-safe:
// the model's mutex guards it.
#pragma once

#include <functional>

#include "engine/base/status.h"
#include "platform/vulkan/device.h"

namespace kiln::runtime {

class HostSecondaries {
 public:
  // `device` is borrowed and must outlive this object.
  explicit HostSecondaries(vk::Device& device) : device_(device) {}
  // Destroys the pool, which frees every buffer still allocated from it.
  ~HostSecondaries();
  HostSecondaries(const HostSecondaries&) = delete;
  HostSecondaries& operator=(const HostSecondaries&) = delete;

  // A secondary command buffer for primaries of the device's queue family,
  // begun for use outside render passes with SIMULTANEOUS_USE, filled by
  // `fill` and ended. Errors: an error of `fill` (the buffer is freed);
  // VkResult errors.
  StatusOr<VkCommandBuffer> record(const std::function<Status(VkCommandBuffer)>& fill);
  // Returns a buffer from record() to the pool. It must not be pending (nor
  // recorded in a primary that is). VK_NULL_HANDLE is ignored.
  void free(VkCommandBuffer cmd);

 private:
  vk::Device& device_;
  VkCommandPool pool_ = VK_NULL_HANDLE;  // made by the first record()
};

}  // namespace kiln::runtime
