// Shared Vulkan state for the platform tests: one instance with the Khronos
// validation layer (and synchronization validation) and one device, created
// on first use and torn down after the last test.
//
// Creating a validated instance costs ~100 ms, so tests share it. Each test
// that uses it derives from VulkanTest, which skips (GTEST_SKIP) when no
// Vulkan device exists and fails the test when the validation layer reported
// any error while it ran.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "platform/vulkan/device.h"
#include "platform/vulkan/instance.h"

namespace kiln::vk::testing {

// Null when Vulkan is unavailable; skip_reason() says why.
Instance* test_instance();
Device* test_device();
const std::string& skip_reason();

// The recorded validation errors as one printable string.
std::string format_errors(const Instance& instance);

class VulkanTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  Instance& instance() { return *test_instance(); }
  Device& device() { return *test_device(); }
};

}  // namespace kiln::vk::testing
