// A shared library built from all of kiln_vulkan (whole archive) so a test
// can check, with nm -D, that no vk* or volk* symbol escapes: a host that
// loads Kiln must keep its own Vulkan entry points (see check_symbols.cmake).
#include "platform/vulkan/device.h"

extern "C" __attribute__((visibility("default"))) const char* kiln_vulkan_symcheck() { return "kiln_vulkan"; }
