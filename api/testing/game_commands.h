// Test helper for the C API's Vulkan tests: the "game's" command buffers on
// its queue (kiln_session_record and kiln_session_record_slice record into
// them; the game submits them).
#pragma once

#include <gtest/gtest.h>

#include "platform/vulkan/device.h"

namespace kiln::capi::testing {

class GameCommands {
 public:
  explicit GameCommands(kiln::vk::Device& device) : device_(device) {
    VkCommandPoolCreateInfo pool{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pool.queueFamilyIndex = device.queue_family();
    EXPECT_EQ(device.fn().vkCreateCommandPool(device.handle(), &pool, nullptr, &pool_), VK_SUCCESS);
    VkFenceCreateInfo fence{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    EXPECT_EQ(device.fn().vkCreateFence(device.handle(), &fence, nullptr, &fence_), VK_SUCCESS);
  }
  ~GameCommands() {
    device_.fn().vkDestroyFence(device_.handle(), fence_, nullptr);
    device_.fn().vkDestroyCommandPool(device_.handle(), pool_, nullptr);
  }
  GameCommands(const GameCommands&) = delete;
  GameCommands& operator=(const GameCommands&) = delete;

  VkCommandBuffer allocate(VkCommandBufferLevel level) {
    VkCommandBufferAllocateInfo info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    info.commandPool = pool_;
    info.level = level;
    info.commandBufferCount = 1;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    EXPECT_EQ(device_.fn().vkAllocateCommandBuffers(device_.handle(), &info, &cmd), VK_SUCCESS);
    return cmd;
  }
  void begin(VkCommandBuffer cmd, const VkCommandBufferInheritanceInfo* inheritance = nullptr) {
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin.pInheritanceInfo = inheritance;
    EXPECT_EQ(device_.fn().vkBeginCommandBuffer(cmd, &begin), VK_SUCCESS);
  }
  // Submits `cmd` on the game's queue, after its earlier submissions, and
  // returns at once (one frame's submission).
  void submit(VkCommandBuffer cmd) { submit_with(cmd, VK_NULL_HANDLE); }
  // Submits `cmd` on the game's queue and waits for it (and so for every
  // earlier submission to the queue).
  void submit_and_wait(VkCommandBuffer cmd) {
    ASSERT_NO_FATAL_FAILURE(submit_with(cmd, fence_));
    ASSERT_EQ(device_.fn().vkWaitForFences(device_.handle(), 1, &fence_, VK_TRUE, UINT64_MAX), VK_SUCCESS);
    ASSERT_EQ(device_.fn().vkResetFences(device_.handle(), 1, &fence_), VK_SUCCESS);
  }

 private:
  void submit_with(VkCommandBuffer cmd, VkFence fence) {
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &cmd;
    ASSERT_TRUE(device_.queue_submit(1, &submit, fence).ok());
  }

  kiln::vk::Device& device_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
};

}  // namespace kiln::capi::testing
