// Whether a test run must have an OpenCL platform, or may skip without one
// (the OpenCL twin of platform/vulkan/vk_test_requirement.h).
//
// The OpenCL tests skip where no platform exists, so that a developer
// without an OpenCL driver can run the rest of the suite. In CI that would
// hide a lost PoCL (or a broken ICD registration) behind a green suite, so
// there a missing platform fails. Header-only: used by gtest binaries and by
// the node-test runner alike. Thread-safety: reads the environment only.
#pragma once

#include <cstdlib>
#include <string>
#include <string_view>

namespace kiln::opencl {

// True when a missing OpenCL platform must fail tests rather than skip
// them: KILN_REQUIRE_OPENCL is set to anything but "" or "0", or CI is
// "true". scripts/test.sh sets KILN_REQUIRE_OPENCL=1.
inline bool opencl_required() {
  const char* require = std::getenv("KILN_REQUIRE_OPENCL");
  if (require != nullptr && *require != '\0' && std::string_view(require) != "0") return true;
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string_view(ci) == "true";
}

// The message of a failure caused by a required platform's absence, saying
// how to fix or relax it.
inline std::string opencl_required_failure(const std::string& reason) {
  return reason +
         " -- and an OpenCL platform is required here (KILN_REQUIRE_OPENCL=1 or CI=true): install PoCL "
         "(pocl-opencl-icd) or fix the ICD registration (/etc/OpenCL/vendors); set KILN_REQUIRE_OPENCL=0 to allow "
         "skipping";
}

}  // namespace kiln::opencl
