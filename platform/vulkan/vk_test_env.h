// Shared Vulkan state for the platform tests: one instance with the Khronos
// validation layer (and synchronization validation) and one device, created
// on first use and torn down after the last test.
//
// Creating a validated instance costs ~100 ms, so tests share it. Each test
// that uses it derives from VulkanTest, which skips (GTEST_SKIP) when no
// Vulkan device exists and fails the test when the validation layer reported
// any error while it ran.
//
// A skip is only allowed where Vulkan is optional: with KILN_REQUIRE_VULKAN=1
// or CI=true in the environment (scripts/test.sh sets the first) a missing
// device FAILS every Vulkan test instead, so a broken driver setup (no
// lavapipe, a bad VK_ICD_FILENAMES) cannot turn the Vulkan suite green.
//
// KILN_TEST_VALIDATION=off runs the tests without the validation layer: a
// layer older than the driver's extensions keeps Kiln from querying them
// (Debian 12's 1.3.239 layer predates VK_KHR_cooperative_matrix, which Kiln
// then hides: Capabilities::cooperative_matrix_khr_hidden), so the KHR
// cooperative-matrix device tests need it on such a machine.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "platform/vulkan/device.h"
#include "platform/vulkan/instance.h"
#include "platform/vulkan/kernel_cache.h"
#include "platform/vulkan/vk_test_requirement.h"

namespace kiln::vk::testing {

// Null when Vulkan is unavailable; skip_reason() says why.
Instance* test_instance();
Device* test_device();
// An in-memory kernel cache on the test device (no files), destroyed before
// the device; null when there is no device.
KernelCache* test_kernel_cache();
const std::string& skip_reason();

// In SetUp or a test body: continues when `present`, else skips the test
// with `reason`, or fails it when vulkan_required().
#define KILN_VULKAN_TEST_NEEDS(present, reason)                               \
  if (present) {                                                              \
  } else if (::kiln::vk::testing::vulkan_required())                          \
    FAIL() << ::kiln::vk::testing::required_failure(reason);                  \
  else                                                                        \
    GTEST_SKIP() << (reason)

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
