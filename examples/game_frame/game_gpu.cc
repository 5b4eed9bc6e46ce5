// The game's Vulkan instance, device and helpers (game_gpu.h). Plain
// Vulkan through the loader's prototypes, as a game links it.
#include "game_gpu.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace game {

namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

bool has_layer(const char* name) {
  uint32_t count = 0;
  vkEnumerateInstanceLayerProperties(&count, nullptr);
  std::vector<VkLayerProperties> layers(count);
  vkEnumerateInstanceLayerProperties(&count, layers.data());
  for (const VkLayerProperties& l : layers)
    if (std::strcmp(l.layerName, name) == 0) return true;
  return false;
}

bool has_instance_extension(const char* layer, const char* name) {
  uint32_t count = 0;
  vkEnumerateInstanceExtensionProperties(layer, &count, nullptr);
  std::vector<VkExtensionProperties> extensions(count);
  vkEnumerateInstanceExtensionProperties(layer, &count, extensions.data());
  for (const VkExtensionProperties& e : extensions)
    if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
}

// The queue family a game would run compute on: graphics+compute (the
// frame's main queue) if there is one, else any compute family.
int compute_family(VkPhysicalDevice gpu, uint32_t* timestamp_bits) {
  uint32_t count = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(gpu, &count, nullptr);
  std::vector<VkQueueFamilyProperties> families(count);
  vkGetPhysicalDeviceQueueFamilyProperties(gpu, &count, families.data());
  int found = -1;
  for (uint32_t i = 0; i < count; ++i) {
    if (!(families[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
    if (found < 0 || (families[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) {
      found = static_cast<int>(i);
      *timestamp_bits = families[i].timestampValidBits;
      if (families[i].queueFlags & VK_QUEUE_GRAPHICS_BIT) break;
    }
  }
  return found;
}

}  // namespace

void check_vk(VkResult result, const char* what) {
  if (result == VK_SUCCESS) return;
  std::fprintf(stderr, "game_frame: %s failed: VkResult %d\n", what, static_cast<int>(result));
  std::exit(1);
}

VKAPI_ATTR VkBool32 VKAPI_CALL GameGpu::on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                   VkDebugUtilsMessageTypeFlagsEXT,
                                                   const VkDebugUtilsMessengerCallbackDataEXT* data, void* self) {
  static_cast<GameGpu*>(self)->messages_.fetch_add(1);
  std::fprintf(stderr, "game_frame: validation %s: %s\n",
               severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error" : "warning",
               data && data->pMessage ? data->pMessage : "(no text)");
  return VK_FALSE;
}

std::unique_ptr<GameGpu> GameGpu::create(const GpuOptions& options, bool* no_device) {
  std::unique_ptr<GameGpu> gpu(new GameGpu());
  *no_device = false;
  if (!gpu->init(options, no_device)) return nullptr;
  return gpu;
}

bool GameGpu::init(const GpuOptions& options, bool* no_device) {
  uint32_t loader_version = VK_API_VERSION_1_0;
  vkEnumerateInstanceVersion(&loader_version);
  if (loader_version < VK_API_VERSION_1_2) {
    std::fprintf(stderr, "game_frame: the Vulkan loader is older than 1.2\n");
    *no_device = true;
    return false;
  }
  std::vector<const char*> layers, extensions;
  const bool validate = options.validate;
  if (validate) {
    if (!has_layer(kValidationLayer)) {
      std::fprintf(stderr, "game_frame: --validate needs %s (Debian: vulkan-validationlayers)\n", kValidationLayer);
      return false;
    }
    layers.push_back(kValidationLayer);
    extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    if (!has_instance_extension(kValidationLayer, VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME)) {
      std::fprintf(stderr, "game_frame: the validation layer lacks %s (synchronization validation)\n",
                   VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
      return false;
    }
    extensions.push_back(VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
  }
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "kiln game_frame example";
  app.apiVersion = api_version_;
  // Chained into the create info as well, so that messages about creating
  // and destroying the instance are counted too.
  VkDebugUtilsMessengerCreateInfoEXT messenger{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  messenger.messageSeverity =
      VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  messenger.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                          VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  messenger.pfnUserCallback = &GameGpu::on_message;
  messenger.pUserData = this;
  const VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
  VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
  features.enabledValidationFeatureCount = 1;
  features.pEnabledValidationFeatures = enables;
  features.pNext = &messenger;
  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.pNext = validate ? &features : nullptr;
  info.pApplicationInfo = &app;
  info.enabledLayerCount = static_cast<uint32_t>(layers.size());
  info.ppEnabledLayerNames = layers.data();
  info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  const VkResult created = vkCreateInstance(&info, nullptr, &instance_);
  if (created == VK_ERROR_INCOMPATIBLE_DRIVER) {
    std::fprintf(stderr, "game_frame: no Vulkan driver\n");
    *no_device = true;
    return false;
  }
  check_vk(created, "vkCreateInstance");
  if (validate) {
    auto create_messenger = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkCreateDebugUtilsMessengerEXT"));
    messenger.pNext = nullptr;
    check_vk(create_messenger(instance_, &messenger, nullptr, &messenger_), "vkCreateDebugUtilsMessengerEXT");
  }

  uint32_t count = 0;
  vkEnumeratePhysicalDevices(instance_, &count, nullptr);
  std::vector<VkPhysicalDevice> gpus(count);
  vkEnumeratePhysicalDevices(instance_, &count, gpus.data());
  if (gpus.empty()) {
    std::fprintf(stderr, "game_frame: no Vulkan device\n");
    *no_device = true;
    return false;
  }
  if (options.device_index >= static_cast<int>(gpus.size())) {
    std::fprintf(stderr, "game_frame: --device %d, but there are %zu devices\n", options.device_index, gpus.size());
    return false;
  }
  int best_rank = -1;
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (options.device_index >= 0 && static_cast<int>(i) != options.device_index) continue;
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(gpus[i], &p);
    uint32_t bits = 0;
    if (p.apiVersion < VK_API_VERSION_1_2 || compute_family(gpus[i], &bits) < 0) continue;
    const int rank = p.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU     ? 3
                     : p.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ? 2
                                                                              : 1;
    if (rank > best_rank) {
      best_rank = rank;
      physical_ = gpus[i];
    }
  }
  if (physical_ == VK_NULL_HANDLE) {
    std::fprintf(stderr, "game_frame: no Vulkan 1.2 device with a compute queue\n");
    return false;
  }
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(physical_, &props);
  name_ = props.deviceName;
  uint32_t timestamp_bits = 0;
  family_ = static_cast<uint32_t>(compute_family(physical_, &timestamp_bits));
  if (timestamp_bits > 0 && props.limits.timestampComputeAndGraphics)
    timestamp_period_ns_ = static_cast<double>(props.limits.timestampPeriod);
  vkGetPhysicalDeviceMemoryProperties(physical_, &memory_);

  // Features: timeline semaphores (required: the frame's GPU-side
  // synchronization), 16-bit storage and fp16 arithmetic where the device
  // has them (Kiln uses them for fp16 sessions).
  VkPhysicalDeviceVulkan11Features has11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceVulkan12Features has12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceFeatures2 has{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  has.pNext = &has11;
  has11.pNext = &has12;
  vkGetPhysicalDeviceFeatures2(physical_, &has);
  if (!has12.timelineSemaphore) {
    std::fprintf(stderr, "game_frame: %s has no timeline semaphores\n", name_.c_str());
    return false;
  }
  features12_.timelineSemaphore = VK_TRUE;
  features12_.shaderFloat16 = has12.shaderFloat16;
  features11_.storageBuffer16BitAccess = has11.storageBuffer16BitAccess;
  features11_.pNext = &features12_;
  features_.pNext = &features11_;

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo queue{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queue.queueFamilyIndex = family_;
  queue.queueCount = 1;
  queue.pQueuePriorities = &priority;
  VkDeviceCreateInfo device{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  device.pNext = &features_;
  device.queueCreateInfoCount = 1;
  device.pQueueCreateInfos = &queue;
  check_vk(vkCreateDevice(physical_, &device, nullptr, &device_), "vkCreateDevice");
  vkGetDeviceQueue(device_, family_, 0, &queue_);
  return true;
}

void GameGpu::shutdown() {
  if (device_ != VK_NULL_HANDLE) vkDestroyDevice(device_, nullptr);
  device_ = VK_NULL_HANDLE;
  if (messenger_ != VK_NULL_HANDLE) {
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
    destroy(instance_, messenger_, nullptr);
    messenger_ = VK_NULL_HANDLE;
  }
  if (instance_ != VK_NULL_HANDLE) vkDestroyInstance(instance_, nullptr);
  instance_ = VK_NULL_HANDLE;
}

GpuBuffer GameGpu::create_buffer(VkDeviceSize size, VkBufferUsageFlags usage, bool host_visible) {
  GpuBuffer b;
  b.size = size;
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = size;
  info.usage = usage;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  check_vk(vkCreateBuffer(device_, &info, nullptr, &b.buffer), "vkCreateBuffer");
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(device_, b.buffer, &req);
  const VkMemoryPropertyFlags need =
      host_visible ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
                   : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  const VkMemoryPropertyFlags want = host_visible ? need | VK_MEMORY_PROPERTY_HOST_CACHED_BIT : need;
  int type = -1;
  for (VkMemoryPropertyFlags flags : {want, need}) {
    for (uint32_t i = 0; i < memory_.memoryTypeCount && type < 0; ++i)
      if ((req.memoryTypeBits & (1u << i)) && (memory_.memoryTypes[i].propertyFlags & flags) == flags)
        type = static_cast<int>(i);
    if (type >= 0) break;
  }
  if (type < 0) check_vk(VK_ERROR_OUT_OF_DEVICE_MEMORY, "finding a memory type for a buffer");
  VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  alloc.allocationSize = req.size;
  alloc.memoryTypeIndex = static_cast<uint32_t>(type);
  check_vk(vkAllocateMemory(device_, &alloc, nullptr, &b.memory), "vkAllocateMemory");
  check_vk(vkBindBufferMemory(device_, b.buffer, b.memory, 0), "vkBindBufferMemory");
  if (host_visible) check_vk(vkMapMemory(device_, b.memory, 0, VK_WHOLE_SIZE, 0, &b.mapped), "vkMapMemory");
  return b;
}

void GameGpu::destroy(GpuBuffer& b) {
  if (b.buffer != VK_NULL_HANDLE) vkDestroyBuffer(device_, b.buffer, nullptr);
  if (b.memory != VK_NULL_HANDLE) vkFreeMemory(device_, b.memory, nullptr);
  b = GpuBuffer{};
}

VkSemaphore GameGpu::create_timeline() {
  VkSemaphoreTypeCreateInfo type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
  type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  VkSemaphoreCreateInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
  info.pNext = &type;
  VkSemaphore semaphore = VK_NULL_HANDLE;
  check_vk(vkCreateSemaphore(device_, &info, nullptr, &semaphore), "vkCreateSemaphore (timeline)");
  return semaphore;
}

GameGpu::Pipeline GameGpu::create_pipeline(const uint32_t* code, size_t code_bytes, uint32_t bindings,
                                           uint32_t push_bytes) {
  Pipeline p;
  std::vector<VkDescriptorSetLayoutBinding> slots(bindings);
  for (uint32_t i = 0; i < bindings; ++i)
    slots[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  VkDescriptorSetLayoutCreateInfo set{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  set.bindingCount = bindings;
  set.pBindings = slots.data();
  check_vk(vkCreateDescriptorSetLayout(device_, &set, nullptr, &p.set_layout), "vkCreateDescriptorSetLayout");
  const VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes};
  VkPipelineLayoutCreateInfo layout{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  layout.setLayoutCount = 1;
  layout.pSetLayouts = &p.set_layout;
  layout.pushConstantRangeCount = 1;
  layout.pPushConstantRanges = &push;
  check_vk(vkCreatePipelineLayout(device_, &layout, nullptr, &p.layout), "vkCreatePipelineLayout");
  VkShaderModuleCreateInfo module_info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  module_info.codeSize = code_bytes;
  module_info.pCode = code;
  VkShaderModule module = VK_NULL_HANDLE;
  check_vk(vkCreateShaderModule(device_, &module_info, nullptr, &module), "vkCreateShaderModule");
  VkComputePipelineCreateInfo info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  info.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.module = module;
  info.stage.pName = "main";
  info.layout = p.layout;
  check_vk(vkCreateComputePipelines(device_, VK_NULL_HANDLE, 1, &info, nullptr, &p.pipeline),
           "vkCreateComputePipelines");
  vkDestroyShaderModule(device_, module, nullptr);
  return p;
}

void GameGpu::destroy(Pipeline& p) {
  if (p.pipeline != VK_NULL_HANDLE) vkDestroyPipeline(device_, p.pipeline, nullptr);
  if (p.layout != VK_NULL_HANDLE) vkDestroyPipelineLayout(device_, p.layout, nullptr);
  if (p.set_layout != VK_NULL_HANDLE) vkDestroyDescriptorSetLayout(device_, p.set_layout, nullptr);
  p = Pipeline{};
}

}  // namespace game
