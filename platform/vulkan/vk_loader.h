// How Kiln reaches Vulkan without exporting or depending on global vk* symbols.
//
// Instance-level functions live in an InstanceTable loaded through the
// vkGetInstanceProcAddr that created the instance (the system loader for our
// own instances, the host's for a borrowed one); device-level functions live
// in one volk VolkDeviceTable per device. Nothing here touches volk's global
// function pointers, so Kiln coexists with a host that uses volk or the loader
// directly, and a shared library built from it exports no vk* symbol.
#pragma once

#include <cstdint>
#include <string>

#include <volk.h>

#include "engine/base/status.h"

// VK_KHR_cooperative_matrix arrived in Vulkan headers 1.3.255; older headers
// (Debian 12 ships 1.3.239) lack it. The definitions below are the registry's,
// used only when the headers do not provide them.
#ifndef VK_KHR_cooperative_matrix
#define VK_KHR_cooperative_matrix 1
#define VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME "VK_KHR_cooperative_matrix"
#define KILN_VK_DEFINES_KHR_COOPERATIVE_MATRIX 1
typedef VkComponentTypeNV VkComponentTypeKHR;  // same values
typedef VkScopeNV VkScopeKHR;                  // same values
typedef struct VkCooperativeMatrixPropertiesKHR {
  VkStructureType sType;
  void* pNext;
  uint32_t MSize;
  uint32_t NSize;
  uint32_t KSize;
  VkComponentTypeKHR AType;
  VkComponentTypeKHR BType;
  VkComponentTypeKHR CType;
  VkComponentTypeKHR ResultType;
  VkBool32 saturatingAccumulation;
  VkScopeKHR scope;
} VkCooperativeMatrixPropertiesKHR;
typedef struct VkPhysicalDeviceCooperativeMatrixFeaturesKHR {
  VkStructureType sType;
  void* pNext;
  VkBool32 cooperativeMatrix;
  VkBool32 cooperativeMatrixRobustBufferAccess;
} VkPhysicalDeviceCooperativeMatrixFeaturesKHR;
typedef struct VkPhysicalDeviceCooperativeMatrixPropertiesKHR {
  VkStructureType sType;
  void* pNext;
  VkShaderStageFlags cooperativeMatrixSupportedStages;
} VkPhysicalDeviceCooperativeMatrixPropertiesKHR;
typedef VkResult(VKAPI_PTR* PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)(
    VkPhysicalDevice physicalDevice, uint32_t* pPropertyCount, VkCooperativeMatrixPropertiesKHR* pProperties);
#define KILN_STYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR static_cast<VkStructureType>(1000506000)
#define KILN_STYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR static_cast<VkStructureType>(1000506001)
#define KILN_STYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_KHR static_cast<VkStructureType>(1000506002)
#else
#define KILN_STYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR \
  VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR
#define KILN_STYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR
#define KILN_STYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_KHR \
  VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_KHR
#endif

namespace kiln::vk {

// The instance-level entry points Kiln uses. Optional ones (extensions) are
// null when the instance or its loader does not provide them.
struct InstanceTable {
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
  PFN_vkDestroyInstance vkDestroyInstance = nullptr;
  PFN_vkEnumeratePhysicalDevices vkEnumeratePhysicalDevices = nullptr;
  PFN_vkGetPhysicalDeviceProperties vkGetPhysicalDeviceProperties = nullptr;
  PFN_vkGetPhysicalDeviceProperties2 vkGetPhysicalDeviceProperties2 = nullptr;
  PFN_vkGetPhysicalDeviceFeatures2 vkGetPhysicalDeviceFeatures2 = nullptr;
  PFN_vkGetPhysicalDeviceMemoryProperties vkGetPhysicalDeviceMemoryProperties = nullptr;
  PFN_vkGetPhysicalDeviceMemoryProperties2 vkGetPhysicalDeviceMemoryProperties2 = nullptr;
  PFN_vkGetPhysicalDeviceQueueFamilyProperties vkGetPhysicalDeviceQueueFamilyProperties = nullptr;
  PFN_vkGetPhysicalDeviceFormatProperties vkGetPhysicalDeviceFormatProperties = nullptr;
  PFN_vkEnumerateDeviceExtensionProperties vkEnumerateDeviceExtensionProperties = nullptr;
  PFN_vkCreateDevice vkCreateDevice = nullptr;
  PFN_vkGetDeviceProcAddr vkGetDeviceProcAddr = nullptr;
  // Optional.
  PFN_vkCreateDebugUtilsMessengerEXT vkCreateDebugUtilsMessengerEXT = nullptr;
  PFN_vkDestroyDebugUtilsMessengerEXT vkDestroyDebugUtilsMessengerEXT = nullptr;
  PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR = nullptr;
  PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV vkGetPhysicalDeviceCooperativeMatrixPropertiesNV = nullptr;
  PFN_vkGetPhysicalDeviceCalibrateableTimeDomainsEXT vkGetPhysicalDeviceCalibrateableTimeDomainsEXT = nullptr;
};

// The global (pre-instance) entry points of the system Vulkan loader.
struct LoaderTable {
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
  PFN_vkCreateInstance vkCreateInstance = nullptr;
  PFN_vkEnumerateInstanceVersion vkEnumerateInstanceVersion = nullptr;  // null on a 1.0 loader
  PFN_vkEnumerateInstanceExtensionProperties vkEnumerateInstanceExtensionProperties = nullptr;
  PFN_vkEnumerateInstanceLayerProperties vkEnumerateInstanceLayerProperties = nullptr;
};

// The system loader (libvulkan.so.1), opened once per process and never
// closed. Thread-safe. kUnavailable when no Vulkan loader is installed.
StatusOr<const LoaderTable*> system_loader();

// Loads `table` for `instance` through `get_instance_proc_addr`. Fails with
// kUnavailable naming the first missing required entry point (a Vulkan 1.1
// instance is required).
Status load_instance_table(VkInstance instance, PFN_vkGetInstanceProcAddr get_instance_proc_addr,
                           InstanceTable* table);

// Fills one device's volk table through `get_device_proc_addr`; entry points
// the device does not expose stay null.
void load_device_table(VkDevice device, PFN_vkGetDeviceProcAddr get_device_proc_addr, VolkDeviceTable* table);

// "1.3.239" for a VK_MAKE_API_VERSION value.
std::string api_version_string(uint32_t version);

}  // namespace kiln::vk
