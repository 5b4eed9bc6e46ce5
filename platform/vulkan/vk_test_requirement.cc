// Whether tests may skip without Vulkan; see vk_test_requirement.h.
#include "platform/vulkan/vk_test_requirement.h"

#include <cstdlib>
#include <string_view>

namespace kiln::vk::testing {

bool vulkan_required() {
  const char* require = std::getenv("KILN_REQUIRE_VULKAN");
  if (require != nullptr && *require != '\0' && std::string_view(require) != "0") return true;
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string_view(ci) == "true";
}

std::string required_failure(const std::string& reason) {
  return reason +
         " -- and a Vulkan device is required here (KILN_REQUIRE_VULKAN=1 or CI=true): install lavapipe "
         "(mesa-vulkan-drivers) or fix VK_ICD_FILENAMES; set KILN_REQUIRE_VULKAN=0 to allow skipping";
}

}  // namespace kiln::vk::testing
