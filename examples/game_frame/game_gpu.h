// The game's own Vulkan objects, made the way a game makes them and without
// any Kiln code: a Vulkan 1.2 instance (optionally with the Khronos
// validation layer and synchronization validation), a debug messenger that
// counts every warning and error, a device with timeline semaphores (and
// 16-bit storage where the device has it) and one compute-capable queue.
// Kiln later borrows these handles (kiln_vulkan_device_wrap).
#ifndef KILN_EXAMPLES_GAME_FRAME_GAME_GPU_H_
#define KILN_EXAMPLES_GAME_FRAME_GAME_GPU_H_

#include <vulkan/vulkan.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace game {

// Prints `what` and the VkResult and exits when `result` is not VK_SUCCESS:
// the example's error handling for its own Vulkan calls.
void check_vk(VkResult result, const char* what);

struct GpuOptions {
  bool validate = false;  // VK_LAYER_KHRONOS_validation + synchronization validation
  int device_index = -1;  // -1: the first discrete, else integrated, else any device with compute
};

// A buffer with memory of its own (a game would sub-allocate; one
// allocation per buffer keeps the example short).
struct GpuBuffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkDeviceSize size = 0;
  void* mapped = nullptr;  // host-visible buffers only
};

class GameGpu {
 public:
  // Returns nullptr (after printing why) when there is no Vulkan device with
  // what the example needs; *no_device is then true when no device at all
  // was found (the test skips instead of failing, unless it must run).
  static std::unique_ptr<GameGpu> create(const GpuOptions& options, bool* no_device);
  ~GameGpu() { shutdown(); }
  // Destroys the device, the messenger and the instance (in that order);
  // messages() stays readable and counts what their destruction reported.
  void shutdown();
  GameGpu(const GameGpu&) = delete;
  GameGpu& operator=(const GameGpu&) = delete;

  VkInstance instance() const { return instance_; }
  uint32_t api_version() const { return api_version_; }
  VkPhysicalDevice physical_device() const { return physical_; }
  VkDevice device() const { return device_; }
  VkQueue queue() const { return queue_; }
  uint32_t queue_family() const { return family_; }
  // What vkCreateDevice was given, for kiln_vulkan_host_device_t.
  const VkPhysicalDeviceFeatures2* enabled_features() const { return &features_; }
  const std::string& device_name() const { return name_; }
  // Nanoseconds per timestamp tick; 0 when the queue has no timestamps.
  double timestamp_period_ns() const { return timestamp_period_ns_; }
  // Warnings and errors the debug messenger received (validation on).
  uint32_t messages() const { return messages_.load(); }

  // A storage buffer in device-local memory, or host-visible (mapped,
  // coherent, preferably cached) memory for readbacks.
  GpuBuffer create_buffer(VkDeviceSize size, VkBufferUsageFlags usage, bool host_visible);
  void destroy(GpuBuffer& buffer);
  VkSemaphore create_timeline();
  // A compute pipeline for SPIR-V `code`, with `bindings` storage buffers in
  // set 0 and `push_bytes` of push constants.
  struct Pipeline {
    VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    VkPipeline pipeline = VK_NULL_HANDLE;
  };
  Pipeline create_pipeline(const uint32_t* code, size_t code_bytes, uint32_t bindings, uint32_t push_bytes);
  void destroy(Pipeline& pipeline);

 private:
  GameGpu() = default;
  bool init(const GpuOptions& options, bool* no_device);
  static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                   VkDebugUtilsMessageTypeFlagsEXT type,
                                                   const VkDebugUtilsMessengerCallbackDataEXT* data, void* self);

  VkInstance instance_ = VK_NULL_HANDLE;
  uint32_t api_version_ = VK_API_VERSION_1_2;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t family_ = 0;
  std::string name_;
  double timestamp_period_ns_ = 0.0;
  VkPhysicalDeviceMemoryProperties memory_{};
  // The feature chain vkCreateDevice got (kept: Kiln reads it when wrapping).
  VkPhysicalDeviceFeatures2 features_{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  VkPhysicalDeviceVulkan11Features features11_{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceVulkan12Features features12_{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  std::atomic<uint32_t> messages_{0};
};

}  // namespace game

#endif  // KILN_EXAMPLES_GAME_FRAME_GAME_GPU_H_
