// The VkResult mapping and sticky device-loss state, without a GPU.
#include "platform/vulkan/vk_status.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace kiln::vk {
namespace {

TEST(VkStatusTest, MapsResultsToCanonicalCodes) {
  EXPECT_EQ(vk_status_code(VK_SUCCESS), StatusCode::kOk);
  EXPECT_EQ(vk_status_code(VK_INCOMPLETE), StatusCode::kOk);
  EXPECT_EQ(vk_status_code(VK_ERROR_DEVICE_LOST), StatusCode::kDeviceLost);
  EXPECT_EQ(vk_status_code(VK_ERROR_OUT_OF_HOST_MEMORY), StatusCode::kOutOfMemory);
  EXPECT_EQ(vk_status_code(VK_ERROR_OUT_OF_DEVICE_MEMORY), StatusCode::kOutOfMemory);
  EXPECT_EQ(vk_status_code(VK_ERROR_OUT_OF_POOL_MEMORY), StatusCode::kOutOfMemory);
  EXPECT_EQ(vk_status_code(VK_ERROR_INITIALIZATION_FAILED), StatusCode::kUnavailable);
  EXPECT_EQ(vk_status_code(VK_ERROR_INCOMPATIBLE_DRIVER), StatusCode::kUnavailable);
  EXPECT_EQ(vk_status_code(VK_ERROR_FEATURE_NOT_PRESENT), StatusCode::kUnimplemented);
  EXPECT_EQ(vk_status_code(VK_ERROR_UNKNOWN), StatusCode::kInternal);
}

TEST(VkStatusTest, MessageNamesCallAndResult) {
  EXPECT_TRUE(vk_status(VK_SUCCESS, "vkQueueSubmit").ok());
  Status s = vk_status(VK_ERROR_DEVICE_LOST, "vkQueueSubmit");
  EXPECT_EQ(s.code(), StatusCode::kDeviceLost);
  EXPECT_EQ(s.message(), "vkQueueSubmit: VK_ERROR_DEVICE_LOST");
  Status unknown = vk_status(static_cast<VkResult>(-12345), "vkFoo");
  EXPECT_EQ(unknown.code(), StatusCode::kInternal);
  EXPECT_EQ(unknown.message(), "vkFoo: VK_RESULT(-12345)");
  EXPECT_STREQ(vk_result_name(VK_ERROR_OUT_OF_DEVICE_MEMORY), "VK_ERROR_OUT_OF_DEVICE_MEMORY");
  EXPECT_EQ(vk_result_name(static_cast<VkResult>(-12345)), nullptr);
}

TEST(StickyStatusTest, OtherErrorsAreNotSticky) {
  StickyStatus sticky;
  EXPECT_TRUE(sticky.check(VK_SUCCESS, "a").ok());
  EXPECT_EQ(sticky.check(VK_ERROR_OUT_OF_DEVICE_MEMORY, "vkAllocateMemory").code(), StatusCode::kOutOfMemory);
  EXPECT_FALSE(sticky.lost());
  EXPECT_TRUE(sticky.status().ok());
  EXPECT_TRUE(sticky.check(VK_SUCCESS, "b").ok());
}

TEST(StickyStatusTest, FirstDeviceLossIsKeptAndReturnedByEveryLaterCall) {
  StickyStatus sticky;
  Status first = sticky.check(VK_ERROR_DEVICE_LOST, "vkWaitSemaphores");
  EXPECT_EQ(first.code(), StatusCode::kDeviceLost);
  EXPECT_TRUE(sticky.lost());
  // Later successes and later, different failures all report the first loss.
  for (VkResult later : {VK_SUCCESS, VK_ERROR_OUT_OF_HOST_MEMORY, VK_ERROR_DEVICE_LOST}) {
    Status s = sticky.check(later, "vkQueueSubmit");
    EXPECT_EQ(s.code(), StatusCode::kDeviceLost);
    EXPECT_EQ(s.message(), "vkWaitSemaphores: VK_ERROR_DEVICE_LOST");
  }
  EXPECT_EQ(sticky.status().message(), "vkWaitSemaphores: VK_ERROR_DEVICE_LOST");
  // record() of a later loss keeps the first; record() of a non-loss is ignored.
  EXPECT_EQ(sticky.record(Status(StatusCode::kDeviceLost, "later")).message(), "vkWaitSemaphores: VK_ERROR_DEVICE_LOST");
  EXPECT_EQ(sticky.record(internal_error("x")).code(), StatusCode::kDeviceLost);
}

TEST(StickyStatusTest, ConcurrentLossesKeepExactlyOne) {
  StickyStatus sticky;
  std::vector<std::thread> threads;
  std::atomic<int> losses{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        Status s = sticky.check(i == 100 ? VK_ERROR_DEVICE_LOST : VK_SUCCESS, "thread " + std::to_string(t));
        if (s.code() == StatusCode::kDeviceLost) losses.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_TRUE(sticky.lost());
  std::string kept = sticky.status().message();
  EXPECT_EQ(kept.rfind("thread ", 0), 0u) << kept;
  // Every thread sees the loss at least from its 100th call on (earlier if
  // another thread lost it first): at least 8 * 100 reports.
  EXPECT_GE(losses.load(), 800);
}

}  // namespace
}  // namespace kiln::vk
