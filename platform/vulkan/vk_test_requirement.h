// Whether a test run must have a Vulkan device, or may skip without one.
//
// Vulkan tests skip when no device exists, so that a developer without a GPU
// driver can run the rest of the suite. In CI that would hide a broken
// driver setup (no lavapipe, a bad VK_ICD_FILENAMES) behind a green suite,
// so there a missing device is a failure. Kept apart from vk_test_env.h
// (which needs GoogleTest) for the test runners that are not gtest binaries
// (tests/onnx_node).
//
// Thread-safety: reads the environment only.
#pragma once

#include <string>

namespace kiln::vk::testing {

// True when a missing Vulkan device must fail tests rather than skip them:
// KILN_REQUIRE_VULKAN is set to anything but "" or "0", or CI is "true".
// scripts/test.sh sets KILN_REQUIRE_VULKAN=1.
bool vulkan_required();

// "<reason> -- and a Vulkan device is required here ...": the message of a
// failure caused by a required device's absence, saying how to fix or relax it.
std::string required_failure(const std::string& reason);

}  // namespace kiln::vk::testing
