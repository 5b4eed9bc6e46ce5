// Loader and instance dispatch; see vk_loader.h.
#include "platform/vulkan/vk_loader.h"

#include <dlfcn.h>

#include <mutex>

#include "platform/vulkan/volk_impl.h"

namespace kiln::vk {
namespace {

struct LoaderState {
  LoaderTable table;
  Status status;
};

template <typename Fn>
Fn load_global(PFN_vkGetInstanceProcAddr gipa, const char* name) {
  return reinterpret_cast<Fn>(gipa(VK_NULL_HANDLE, name));
}

LoaderState* open_loader() {
  auto* state = new LoaderState();  // lives for the process, like the dlopen handle
  void* module = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
  if (module == nullptr) module = dlopen("libvulkan.so", RTLD_NOW | RTLD_LOCAL);
  if (module == nullptr) {
    state->status = unavailable("no Vulkan loader: libvulkan.so.1 could not be opened");
    return state;
  }
  auto gipa = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(module, "vkGetInstanceProcAddr"));
  if (gipa == nullptr) {
    state->status = unavailable("the Vulkan loader does not export vkGetInstanceProcAddr");
    return state;
  }
  LoaderTable& t = state->table;
  t.vkGetInstanceProcAddr = gipa;
  t.vkCreateInstance = load_global<PFN_vkCreateInstance>(gipa, "vkCreateInstance");
  t.vkEnumerateInstanceVersion = load_global<PFN_vkEnumerateInstanceVersion>(gipa, "vkEnumerateInstanceVersion");
  t.vkEnumerateInstanceExtensionProperties =
      load_global<PFN_vkEnumerateInstanceExtensionProperties>(gipa, "vkEnumerateInstanceExtensionProperties");
  t.vkEnumerateInstanceLayerProperties =
      load_global<PFN_vkEnumerateInstanceLayerProperties>(gipa, "vkEnumerateInstanceLayerProperties");
  if (t.vkCreateInstance == nullptr || t.vkEnumerateInstanceExtensionProperties == nullptr ||
      t.vkEnumerateInstanceLayerProperties == nullptr) {
    state->status = unavailable("the Vulkan loader lacks vkCreateInstance or the instance enumeration functions");
  }
  return state;
}

}  // namespace

StatusOr<const LoaderTable*> system_loader() {
  static LoaderState* state = open_loader();
  if (!state->status.ok()) return state->status;
  return static_cast<const LoaderTable*>(&state->table);
}

Status load_instance_table(VkInstance instance, PFN_vkGetInstanceProcAddr gipa, InstanceTable* table) {
  if (instance == VK_NULL_HANDLE) return invalid_argument("VkInstance is null");
  if (gipa == nullptr) return invalid_argument("vkGetInstanceProcAddr is null");
  InstanceTable t;
  t.vkGetInstanceProcAddr = gipa;
  const char* missing = nullptr;
  auto load = [&](auto& slot, const char* name, bool required) {
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(gipa(instance, name));
    if (slot == nullptr && required && missing == nullptr) missing = name;
  };
  load(t.vkDestroyInstance, "vkDestroyInstance", true);
  load(t.vkEnumeratePhysicalDevices, "vkEnumeratePhysicalDevices", true);
  load(t.vkGetPhysicalDeviceProperties, "vkGetPhysicalDeviceProperties", true);
  load(t.vkGetPhysicalDeviceProperties2, "vkGetPhysicalDeviceProperties2", true);
  load(t.vkGetPhysicalDeviceFeatures2, "vkGetPhysicalDeviceFeatures2", true);
  load(t.vkGetPhysicalDeviceMemoryProperties, "vkGetPhysicalDeviceMemoryProperties", true);
  load(t.vkGetPhysicalDeviceMemoryProperties2, "vkGetPhysicalDeviceMemoryProperties2", true);
  load(t.vkGetPhysicalDeviceQueueFamilyProperties, "vkGetPhysicalDeviceQueueFamilyProperties", true);
  load(t.vkGetPhysicalDeviceFormatProperties, "vkGetPhysicalDeviceFormatProperties", true);
  load(t.vkEnumerateDeviceExtensionProperties, "vkEnumerateDeviceExtensionProperties", true);
  load(t.vkCreateDevice, "vkCreateDevice", true);
  load(t.vkGetDeviceProcAddr, "vkGetDeviceProcAddr", true);
  load(t.vkCreateDebugUtilsMessengerEXT, "vkCreateDebugUtilsMessengerEXT", false);
  load(t.vkDestroyDebugUtilsMessengerEXT, "vkDestroyDebugUtilsMessengerEXT", false);
  load(t.vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR",
       false);
  load(t.vkGetPhysicalDeviceCooperativeMatrixPropertiesNV, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV", false);
  load(t.vkGetPhysicalDeviceCalibrateableTimeDomainsEXT, "vkGetPhysicalDeviceCalibrateableTimeDomainsEXT", false);
  if (missing != nullptr) {
    return unavailable(std::string("the Vulkan instance does not provide ") + missing +
                       " (Kiln needs an instance created with apiVersion >= 1.1)");
  }
  *table = t;
  return ok_status();
}

void load_device_table(VkDevice device, PFN_vkGetDeviceProcAddr gdpa, VolkDeviceTable* table) {
  *table = VolkDeviceTable{};
  kiln_volk_load_device_table(table, device, gdpa);
}

std::string api_version_string(uint32_t version) {
  return std::to_string(VK_API_VERSION_MAJOR(version)) + "." + std::to_string(VK_API_VERSION_MINOR(version)) + "." +
         std::to_string(VK_API_VERSION_PATCH(version));
}

}  // namespace kiln::vk
