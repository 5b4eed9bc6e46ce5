// Device creation, wrapping and per-device dispatch; see device.h.
#include "platform/vulkan/device.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstring>

#include "platform/vulkan/fault_injection.h"
#include "platform/vulkan/pipeline_statistics.h"
#include "platform/vulkan/vk_loader.h"

namespace kiln::vk {
namespace {

// The optional feature structs Kiln reads and enables, as one pNext chain.
struct FeatureChain {
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  VkPhysicalDevice16BitStorageFeatures s16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  VkPhysicalDeviceVulkan12Features v12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceShaderFloat16Int8Features f16i8{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  VkPhysicalDevice8BitStorageFeatures s8{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES};
  VkPhysicalDeviceVulkan13Features v13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  VkPhysicalDeviceCooperativeMatrixFeaturesKHR cm{KILN_STYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR};
  VkPhysicalDeviceCooperativeMatrixFeaturesNV cm_nv{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  VkPhysicalDeviceShaderAtomicFloatFeaturesEXT atomic_float{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT};
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR pipeline_exec{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};

  struct Shape {
    bool v12 = false, v13 = false, ext_f16i8 = false, ext_8bit = false, cm = false, cm_nv = false;
    bool atomic_float = false, pipeline_exec = false;
  };

  // Links the structs `shape` selects. The object must not move afterwards.
  void link(const Shape& shape) {
    void** tail = &f2.pNext;
    auto add = [&](auto* s) {
      *tail = s;
      tail = &s->pNext;
    };
    add(&s16);
    if (shape.v12) {
      add(&v12);
    } else {
      if (shape.ext_f16i8) add(&f16i8);
      if (shape.ext_8bit) add(&s8);
    }
    if (shape.v13) add(&v13);
    if (shape.cm) add(&cm);
    if (shape.cm_nv) add(&cm_nv);
    if (shape.atomic_float) add(&atomic_float);
    if (shape.pipeline_exec) add(&pipeline_exec);
    *tail = nullptr;
  }
};

bool contains(const std::vector<std::string>& list, const char* name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

// Whether VK_EXT_calibrated_timestamps offers the two time domains
// DeviceClock reads (the extension is listed in `ext`).
bool calibrateable(const InstanceTable& fn, VkPhysicalDevice pd, const std::vector<std::string>& ext) {
  if (!contains(ext, VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME) ||
      fn.vkGetPhysicalDeviceCalibrateableTimeDomainsEXT == nullptr)
    return false;
  uint32_t count = 0;
  if (fn.vkGetPhysicalDeviceCalibrateableTimeDomainsEXT(pd, &count, nullptr) != VK_SUCCESS) return false;
  std::vector<VkTimeDomainEXT> domains(count);
  if (fn.vkGetPhysicalDeviceCalibrateableTimeDomainsEXT(pd, &count, domains.data()) != VK_SUCCESS) return false;
  domains.resize(count);
  auto has = [&](VkTimeDomainEXT d) { return std::find(domains.begin(), domains.end(), d) != domains.end(); };
  return has(VK_TIME_DOMAIN_DEVICE_EXT) && has(VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT);
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

int type_rank(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return 3;
    default:
      return 4;
  }
}

std::vector<VkQueueFamilyProperties> queue_families(const InstanceTable& fn, VkPhysicalDevice pd) {
  uint32_t count = 0;
  fn.vkGetPhysicalDeviceQueueFamilyProperties(pd, &count, nullptr);
  std::vector<VkQueueFamilyProperties> families(count);
  fn.vkGetPhysicalDeviceQueueFamilyProperties(pd, &count, families.data());
  families.resize(count);
  return families;
}

// Reads the features a host enabled from the chain it passed to vkCreateDevice.
EnabledFeatures features_from_host_chain(const VkPhysicalDeviceFeatures2* chain) {
  EnabledFeatures e;
  if (chain == nullptr) return e;
  e.shader_int16 = chain->features.shaderInt16 == VK_TRUE;
  e.shader_int64 = chain->features.shaderInt64 == VK_TRUE;
  for (auto* s = static_cast<const VkBaseInStructure*>(chain->pNext); s != nullptr; s = s->pNext) {
    switch (static_cast<int>(s->sType)) {
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES: {
        auto* f = reinterpret_cast<const VkPhysicalDeviceVulkan11Features*>(s);
        e.storage_buffer_16bit |= f->storageBuffer16BitAccess == VK_TRUE;
        e.storage_push_constant_16bit |= f->storagePushConstant16 == VK_TRUE;
        break;
      }
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES: {
        auto* f = reinterpret_cast<const VkPhysicalDevice16BitStorageFeatures*>(s);
        e.storage_buffer_16bit |= f->storageBuffer16BitAccess == VK_TRUE;
        e.storage_push_constant_16bit |= f->storagePushConstant16 == VK_TRUE;
        break;
      }
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES: {
        auto* f = reinterpret_cast<const VkPhysicalDeviceVulkan12Features*>(s);
        e.shader_float16 |= f->shaderFloat16 == VK_TRUE;
        e.shader_int8 |= f->shaderInt8 == VK_TRUE;
        e.storage_buffer_8bit |= f->storageBuffer8BitAccess == VK_TRUE;
        e.timeline_semaphore |= f->timelineSemaphore == VK_TRUE;
        e.host_query_reset |= f->hostQueryReset == VK_TRUE;
        e.vulkan_memory_model |= f->vulkanMemoryModel == VK_TRUE;
        break;
      }
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES: {
        auto* f = reinterpret_cast<const VkPhysicalDeviceShaderFloat16Int8Features*>(s);
        e.shader_float16 |= f->shaderFloat16 == VK_TRUE;
        e.shader_int8 |= f->shaderInt8 == VK_TRUE;
        break;
      }
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR:
        e.pipeline_executable_info |=
            reinterpret_cast<const VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR*>(s)
                ->pipelineExecutableInfo == VK_TRUE;
        break;
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES:
        e.storage_buffer_8bit |=
            reinterpret_cast<const VkPhysicalDevice8BitStorageFeatures*>(s)->storageBuffer8BitAccess == VK_TRUE;
        break;
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES:
        e.timeline_semaphore |=
            reinterpret_cast<const VkPhysicalDeviceTimelineSemaphoreFeatures*>(s)->timelineSemaphore == VK_TRUE;
        break;
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_HOST_QUERY_RESET_FEATURES:
        e.host_query_reset |=
            reinterpret_cast<const VkPhysicalDeviceHostQueryResetFeatures*>(s)->hostQueryReset == VK_TRUE;
        break;
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES: {
        auto* f = reinterpret_cast<const VkPhysicalDeviceVulkan13Features*>(s);
        e.synchronization2 |= f->synchronization2 == VK_TRUE;
        e.subgroup_size_control |= f->subgroupSizeControl == VK_TRUE;
        e.compute_full_subgroups |= f->computeFullSubgroups == VK_TRUE;
        e.shader_integer_dot_product |= f->shaderIntegerDotProduct == VK_TRUE;
        break;
      }
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES:
        e.shader_integer_dot_product |=
            reinterpret_cast<const VkPhysicalDeviceShaderIntegerDotProductFeatures*>(s)->shaderIntegerDotProduct ==
            VK_TRUE;
        break;
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SYNCHRONIZATION_2_FEATURES:
        e.synchronization2 |=
            reinterpret_cast<const VkPhysicalDeviceSynchronization2Features*>(s)->synchronization2 == VK_TRUE;
        break;
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES: {
        auto* f = reinterpret_cast<const VkPhysicalDeviceSubgroupSizeControlFeatures*>(s);
        e.subgroup_size_control |= f->subgroupSizeControl == VK_TRUE;
        e.compute_full_subgroups |= f->computeFullSubgroups == VK_TRUE;
        break;
      }
      case static_cast<int>(KILN_STYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR):
        e.cooperative_matrix_khr |=
            reinterpret_cast<const VkPhysicalDeviceCooperativeMatrixFeaturesKHR*>(s)->cooperativeMatrix == VK_TRUE;
        break;
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV:
        e.cooperative_matrix_nv |=
            reinterpret_cast<const VkPhysicalDeviceCooperativeMatrixFeaturesNV*>(s)->cooperativeMatrix == VK_TRUE;
        break;
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT: {
        auto* f = reinterpret_cast<const VkPhysicalDeviceShaderAtomicFloatFeaturesEXT*>(s);
        e.buffer_float32_atomic_add |= f->shaderBufferFloat32AtomicAdd == VK_TRUE;
        break;
      }
      default:
        break;
    }
  }
  return e;
}

// A feature counts only if the device supports it too (a host may pass a
// chain that claims more than the device has; using it would be invalid).
void clamp_to_capabilities(const Capabilities& c, EnabledFeatures* e) {
  e->shader_float16 &= c.shader_float16;
  e->shader_int8 &= c.shader_int8;
  e->shader_int16 &= c.shader_int16;
  e->shader_int64 &= c.shader_int64;
  e->storage_buffer_16bit &= c.storage_buffer_16bit;
  e->storage_buffer_8bit &= c.storage_buffer_8bit;
  e->storage_push_constant_16bit &= c.storage_push_constant_16bit;
  e->timeline_semaphore &= c.timeline_semaphore && c.api_version >= VK_API_VERSION_1_2;
  e->synchronization2 &= c.synchronization2;
  e->host_query_reset &= c.host_query_reset;
  e->subgroup_size_control &= c.subgroup_size_control;
  e->compute_full_subgroups &= c.compute_full_subgroups;
  e->cooperative_matrix_khr &= c.cooperative_matrix_khr;
  e->cooperative_matrix_nv &= c.cooperative_matrix_nv;
  e->buffer_float32_atomic_add &= c.buffer_float32_atomic_add;
  e->shader_integer_dot_product &= c.shader_integer_dot_product;
  e->memory_budget &= c.memory_budget;
}

}  // namespace

StatusOr<uint32_t> Device::select_physical_device(const Instance& instance, std::string_view selector) {
  KILN_ASSIGN_OR_RETURN(std::vector<VkPhysicalDevice> devices, instance.physical_devices());
  if (devices.empty()) return unavailable("no Vulkan physical device is available");
  std::vector<VkPhysicalDeviceProperties> props(devices.size());
  for (size_t i = 0; i < devices.size(); ++i) instance.fn().vkGetPhysicalDeviceProperties(devices[i], &props[i]);
  auto list = [&]() {
    std::string s;
    for (size_t i = 0; i < props.size(); ++i) {
      s += (i ? ", " : "") + std::to_string(i) + ": " + props[i].deviceName;
    }
    return s;
  };
  if (selector.empty()) {
    uint32_t best = 0;
    for (uint32_t i = 1; i < devices.size(); ++i) {
      if (type_rank(props[i].deviceType) < type_rank(props[best].deviceType)) best = i;
    }
    return best;
  }
  if (std::all_of(selector.begin(), selector.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    uint32_t index = 0;
    auto [end, ec] = std::from_chars(selector.data(), selector.data() + selector.size(), index);
    if (ec != std::errc() || end != selector.data() + selector.size() || index >= devices.size()) {
      return not_found("Vulkan device index " + std::string(selector) + " is out of range; devices: " + list());
    }
    return index;
  }
  std::string needle = lower(selector);
  for (uint32_t i = 0; i < devices.size(); ++i) {
    if (lower(props[i].deviceName).find(needle) != std::string::npos) return i;
  }
  return not_found("no Vulkan device name contains '" + std::string(selector) + "'; devices: " + list());
}

StatusOr<std::unique_ptr<Device>> Device::create(const Instance& instance, const DeviceOptions& options) {
  KILN_ASSIGN_OR_RETURN(uint32_t index, select_physical_device(instance, options.selector));
  KILN_ASSIGN_OR_RETURN(std::vector<VkPhysicalDevice> devices, instance.physical_devices());
  const InstanceTable& ifn = instance.fn();
  VkPhysicalDevice pd = devices[index];

  std::unique_ptr<Device> self(new Device());
  self->instance_ = &instance;
  self->physical_device_ = pd;
  KILN_ASSIGN_OR_RETURN(self->caps_,
                        query_capabilities(ifn, pd, instance.api_version(),
                                           layer_knows_khr_cooperative_matrix(instance.validation_layer_version())));
  const Capabilities& caps = self->caps_;
  if (caps.api_version < VK_API_VERSION_1_1) {
    return unavailable("Vulkan device '" + caps.device_name + "' supports only Vulkan " +
                       api_version_string(caps.api_version) + "; Kiln needs 1.1");
  }

  // Queue: prefer the universal (graphics+compute) family, which every driver
  // runs at full speed and which supports timestamps; else any compute family.
  std::vector<VkQueueFamilyProperties> families = queue_families(ifn, pd);
  int chosen = -1;
  for (uint32_t i = 0; i < families.size(); ++i) {
    if ((families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) == 0 || families[i].queueCount == 0) continue;
    bool universal = (families[i].queueFlags & VK_QUEUE_GRAPHICS_BIT) != 0;
    if (chosen < 0 || (universal && (families[chosen].queueFlags & VK_QUEUE_GRAPHICS_BIT) == 0)) {
      chosen = static_cast<int>(i);
    }
  }
  if (chosen < 0) return unavailable("Vulkan device '" + caps.device_name + "' has no compute queue");
  self->queue_family_ = static_cast<uint32_t>(chosen);

  // Features: everything Kiln uses that the device has.
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> ext, device_extensions(ifn, pd));
  FeatureChain::Shape shape;
  shape.v12 = caps.api_version >= VK_API_VERSION_1_2;
  shape.v13 = caps.api_version >= VK_API_VERSION_1_3;
  shape.ext_f16i8 = !shape.v12 && contains(ext, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
  shape.ext_8bit = !shape.v12 && contains(ext, VK_KHR_8BIT_STORAGE_EXTENSION_NAME);
  shape.cm = caps.cooperative_matrix_khr;
  shape.cm_nv = caps.cooperative_matrix_nv;
  shape.atomic_float = caps.buffer_float32_atomic_add;
  const bool want_statistics = !pipeline_statistics_file().empty();
  shape.pipeline_exec = want_statistics && contains(ext, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
  if (want_statistics && !shape.pipeline_exec)
    note_pipeline_statistics("'" + caps.device_name + "' does not offer VK_KHR_pipeline_executable_properties");
  FeatureChain sup;
  sup.link(shape);
  ifn.vkGetPhysicalDeviceFeatures2(pd, &sup.f2);
  FeatureChain en;
  en.link(shape);
  en.f2.features.shaderInt16 = sup.f2.features.shaderInt16;
  en.f2.features.shaderInt64 = sup.f2.features.shaderInt64;
  en.s16.storageBuffer16BitAccess = sup.s16.storageBuffer16BitAccess;
  en.s16.uniformAndStorageBuffer16BitAccess = sup.s16.uniformAndStorageBuffer16BitAccess;
  en.s16.storagePushConstant16 = sup.s16.storagePushConstant16;
  if (shape.v12) {
    en.v12.shaderFloat16 = sup.v12.shaderFloat16;
    en.v12.shaderInt8 = sup.v12.shaderInt8;
    en.v12.storageBuffer8BitAccess = sup.v12.storageBuffer8BitAccess;
    en.v12.uniformAndStorageBuffer8BitAccess = sup.v12.uniformAndStorageBuffer8BitAccess;
    en.v12.storagePushConstant8 = sup.v12.storagePushConstant8;
    en.v12.timelineSemaphore = sup.v12.timelineSemaphore;
    en.v12.hostQueryReset = sup.v12.hostQueryReset;
    en.v12.scalarBlockLayout = sup.v12.scalarBlockLayout;
    en.v12.shaderSubgroupExtendedTypes = sup.v12.shaderSubgroupExtendedTypes;
    en.v12.vulkanMemoryModel = sup.v12.vulkanMemoryModel;
    en.v12.vulkanMemoryModelDeviceScope = sup.v12.vulkanMemoryModelDeviceScope;
  }
  en.f16i8.shaderFloat16 = sup.f16i8.shaderFloat16;
  en.f16i8.shaderInt8 = sup.f16i8.shaderInt8;
  en.s8.storageBuffer8BitAccess = sup.s8.storageBuffer8BitAccess;
  if (shape.v13) {
    en.v13.synchronization2 = sup.v13.synchronization2;
    en.v13.subgroupSizeControl = sup.v13.subgroupSizeControl;
    en.v13.computeFullSubgroups = sup.v13.computeFullSubgroups;
    en.v13.maintenance4 = sup.v13.maintenance4;
    en.v13.shaderIntegerDotProduct = sup.v13.shaderIntegerDotProduct;
  }
  en.cm.cooperativeMatrix = sup.cm.cooperativeMatrix;
  en.cm_nv.cooperativeMatrix = sup.cm_nv.cooperativeMatrix;
  en.atomic_float.shaderBufferFloat32AtomicAdd = sup.atomic_float.shaderBufferFloat32AtomicAdd;
  en.pipeline_exec.pipelineExecutableInfo = sup.pipeline_exec.pipelineExecutableInfo;

  std::vector<const char*> extensions;
  if (shape.ext_f16i8) extensions.push_back(VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
  if (shape.ext_8bit) extensions.push_back(VK_KHR_8BIT_STORAGE_EXTENSION_NAME);
  if (shape.cm) extensions.push_back(VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
  if (shape.cm_nv) extensions.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
  if (shape.atomic_float) extensions.push_back(VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME);
  if (shape.pipeline_exec) extensions.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
  if (caps.memory_budget) extensions.push_back(VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
  const bool calibrated = calibrateable(ifn, pd, ext);
  if (calibrated) extensions.push_back(VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME);
  // Required by the spec whenever the device advertises it (MoltenVK).
  if (caps.has_extension_portability_subset) extensions.push_back("VK_KHR_portability_subset");

  // Every queue of the family (up to kMaxQueues), at one priority: run
  // slots take them in turn, so runs on different queues need no barrier
  // between them and may execute together.
  self->created_queue_count_ = std::min(families[self->queue_family_].queueCount, kMaxQueues);
  const std::vector<float> priorities(self->created_queue_count_, 1.0f);
  VkDeviceQueueCreateInfo queue_info{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queue_info.queueFamilyIndex = self->queue_family_;
  queue_info.queueCount = self->created_queue_count_;
  queue_info.pQueuePriorities = priorities.data();
  VkDeviceCreateInfo info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  info.pNext = &en.f2;
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &queue_info;
  info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  KILN_RETURN_IF_ERROR(vk_status(ifn.vkCreateDevice(pd, &info, nullptr, &self->device_), "vkCreateDevice"));

  EnabledFeatures& e = self->enabled_;
  e.shader_int16 = en.f2.features.shaderInt16 == VK_TRUE;
  e.shader_int64 = en.f2.features.shaderInt64 == VK_TRUE;
  e.storage_buffer_16bit = en.s16.storageBuffer16BitAccess == VK_TRUE;
  e.storage_push_constant_16bit = en.s16.storagePushConstant16 == VK_TRUE;
  e.shader_float16 = (shape.v12 ? en.v12.shaderFloat16 : en.f16i8.shaderFloat16) == VK_TRUE;
  e.shader_int8 = (shape.v12 ? en.v12.shaderInt8 : en.f16i8.shaderInt8) == VK_TRUE;
  e.storage_buffer_8bit = (shape.v12 ? en.v12.storageBuffer8BitAccess : en.s8.storageBuffer8BitAccess) == VK_TRUE;
  e.timeline_semaphore = shape.v12 && en.v12.timelineSemaphore == VK_TRUE;
  e.host_query_reset = shape.v12 && en.v12.hostQueryReset == VK_TRUE;
  e.vulkan_memory_model = shape.v12 && en.v12.vulkanMemoryModel == VK_TRUE;
  e.synchronization2 = shape.v13 && en.v13.synchronization2 == VK_TRUE;
  e.subgroup_size_control = shape.v13 && en.v13.subgroupSizeControl == VK_TRUE;
  e.compute_full_subgroups = shape.v13 && en.v13.computeFullSubgroups == VK_TRUE;
  e.shader_integer_dot_product = shape.v13 && en.v13.shaderIntegerDotProduct == VK_TRUE;
  e.cooperative_matrix_khr = shape.cm && en.cm.cooperativeMatrix == VK_TRUE;
  e.cooperative_matrix_nv = shape.cm_nv && en.cm_nv.cooperativeMatrix == VK_TRUE;
  e.buffer_float32_atomic_add = shape.atomic_float && en.atomic_float.shaderBufferFloat32AtomicAdd == VK_TRUE;
  e.memory_budget = caps.memory_budget;
  e.calibrated_timestamps = calibrated;
  e.pipeline_executable_info = shape.pipeline_exec && en.pipeline_exec.pipelineExecutableInfo == VK_TRUE;
  clamp_to_capabilities(caps, &e);

  KILN_RETURN_IF_ERROR(self->finish_init());
  return self;
}

StatusOr<std::unique_ptr<Device>> Device::wrap(const HostVulkanHandles& host) {
  if (host.instance == VK_NULL_HANDLE || host.physical_device == VK_NULL_HANDLE || host.device == VK_NULL_HANDLE) {
    return invalid_argument("HostVulkanHandles: instance, physical_device and device must all be set");
  }
  if (host.get_instance_proc_addr == nullptr) {
    return invalid_argument("HostVulkanHandles: get_instance_proc_addr must be set");
  }
  std::unique_ptr<Device> self(new Device());
  self->borrowed_ = true;
  KILN_ASSIGN_OR_RETURN(self->owned_instance_,
                        Instance::wrap(host.instance, host.get_instance_proc_addr, host.instance_api_version));
  self->instance_ = self->owned_instance_.get();
  self->physical_device_ = host.physical_device;
  const InstanceTable& ifn = self->instance_->fn();
  // Only what the host enabled is usable; querying the KHR cooperative-matrix
  // structures otherwise could also trip an older validation layer of the host.
  KILN_ASSIGN_OR_RETURN(self->caps_,
                        query_capabilities(ifn, host.physical_device, self->instance_->api_version(),
                                           contains(host.enabled_extensions, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME)));
  if (self->caps_.api_version < VK_API_VERSION_1_1) {
    return unavailable("the host's Vulkan device supports only Vulkan " + api_version_string(self->caps_.api_version) +
                       "; Kiln needs 1.1");
  }
  std::vector<VkQueueFamilyProperties> families = queue_families(ifn, host.physical_device);
  if (host.queue_family_index >= families.size()) {
    return invalid_argument("HostVulkanHandles: queue family " + std::to_string(host.queue_family_index) +
                            " does not exist (the device has " + std::to_string(families.size()) + ")");
  }
  const VkQueueFamilyProperties& family = families[host.queue_family_index];
  if ((family.queueFlags & VK_QUEUE_COMPUTE_BIT) == 0) {
    return invalid_argument("HostVulkanHandles: queue family " + std::to_string(host.queue_family_index) +
                            " does not support compute");
  }
  if (host.queue_index >= family.queueCount) {
    return invalid_argument("HostVulkanHandles: queue index " + std::to_string(host.queue_index) +
                            " is out of range for queue family " + std::to_string(host.queue_family_index) + " (" +
                            std::to_string(family.queueCount) + " queues)");
  }
  self->queue_family_ = host.queue_family_index;
  self->device_ = host.device;
  self->enabled_ = features_from_host_chain(host.enabled_features);
  self->enabled_.memory_budget = contains(host.enabled_extensions, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
  self->enabled_.calibrated_timestamps =
      contains(host.enabled_extensions, VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME) &&
      calibrateable(ifn, host.physical_device, host.enabled_extensions);
  if (!contains(host.enabled_extensions, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME)) {
    self->enabled_.cooperative_matrix_khr = false;
  }
  // Statistics only while asked for, and where the host enabled them.
  self->enabled_.pipeline_executable_info =
      self->enabled_.pipeline_executable_info && !pipeline_statistics_file().empty() &&
      contains(host.enabled_extensions, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
  if (!contains(host.enabled_extensions, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME)) {
    self->enabled_.cooperative_matrix_nv = false;
  }
  clamp_to_capabilities(self->caps_, &self->enabled_);
  KILN_RETURN_IF_ERROR_CTX(self->finish_init(), "wrapping the host VkDevice");
  // vkGetDeviceQueue is only valid for queues the host created; fetched after
  // the table is loaded.
  VkQueue queue = VK_NULL_HANDLE;
  self->fn_.vkGetDeviceQueue(self->device_, host.queue_family_index, host.queue_index, &queue);
  self->queues_.assign(1, queue);
  if (queue == VK_NULL_HANDLE) {
    return invalid_argument("HostVulkanHandles: the host device has no queue " + std::to_string(host.queue_index) +
                            " in family " + std::to_string(host.queue_family_index));
  }
  return self;
}

Status Device::finish_init() {
  const InstanceTable& ifn = instance_->fn();
  load_device_table(device_, ifn.vkGetDeviceProcAddr, &fn_);
  if (fn_.vkGetDeviceQueue == nullptr || fn_.vkCreateBuffer == nullptr || fn_.vkCmdDispatch == nullptr) {
    return unavailable("the Vulkan device does not expose its core entry points through vkGetDeviceProcAddr");
  }
  if (!borrowed_) {
    queues_.assign(created_queue_count_, VK_NULL_HANDLE);
    for (uint32_t q = 0; q < created_queue_count_; ++q) fn_.vkGetDeviceQueue(device_, queue_family_, q, &queues_[q]);
  }
  std::vector<VkQueueFamilyProperties> families = queue_families(ifn, physical_device_);
  timestamp_valid_bits_ = families[queue_family_].timestampValidBits;
  if (enabled_.calibrated_timestamps)
    clock_.enable(device_, fn_.vkGetCalibratedTimestampsEXT, caps_.timestamp_period_ns, timestamp_valid_bits_);
  ifn.vkGetPhysicalDeviceMemoryProperties(physical_device_, &memory_properties_);

  VkSamplerCreateInfo sampler_info{VK_STRUCTURE_TYPE_SAMPLER_CREATE_INFO};
  sampler_info.magFilter = VK_FILTER_NEAREST;
  sampler_info.minFilter = VK_FILTER_NEAREST;
  sampler_info.mipmapMode = VK_SAMPLER_MIPMAP_MODE_NEAREST;
  sampler_info.addressModeU = VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE;
  sampler_info.addressModeV = VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE;
  sampler_info.addressModeW = VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE;
  sampler_info.maxLod = 0.0f;
  return check(fn_.vkCreateSampler(device_, &sampler_info, nullptr, &sampler_), "vkCreateSampler");
}

Device::~Device() {
  if (device_ == VK_NULL_HANDLE || fn_.vkDestroySampler == nullptr) {
    if (device_ != VK_NULL_HANDLE && !borrowed_ && instance_ != nullptr) {
      // Table failed to load; destroy through the instance-level lookup.
      auto destroy = reinterpret_cast<PFN_vkDestroyDevice>(instance_->fn().vkGetDeviceProcAddr(device_, "vkDestroyDevice"));
      if (destroy != nullptr) destroy(device_, nullptr);
    }
    return;
  }
  if (!borrowed_) {
    // Best effort: a lost device returns an error here, which changes nothing.
    // A borrowed queue is left alone: Kiln's own submissions were all waited
    // for, and the host may be using the queue.
    for (size_t q = 0; q < queues_.size(); ++q) {
      if (queues_[q] == VK_NULL_HANDLE) continue;
      std::lock_guard<std::mutex> lock(queue_mutexes_[q]);
      (void)fn_.vkQueueWaitIdle(queues_[q]);
    }
  }
  if (sampler_ != VK_NULL_HANDLE) fn_.vkDestroySampler(device_, sampler_, nullptr);
  if (!borrowed_) fn_.vkDestroyDevice(device_, nullptr);
}

Status Device::queue_submit(uint32_t count, const VkSubmitInfo* submits, VkFence fence, uint32_t queue_index) {
  KILN_RETURN_IF_ERROR(status());
  if (queue_index >= queues_.size())
    return invalid_argument("queue " + std::to_string(queue_index) + " of a device with " +
                            std::to_string(queues_.size()) + " queues");
  std::lock_guard<std::mutex> lock(queue_mutexes_[queue_index]);
  VkQueue queue = queues_[queue_index];
  return check(call_unless_fault(FaultSite::kSubmission, [&] { return fn_.vkQueueSubmit(queue, count, submits, fence); }),
               "vkQueueSubmit");
}

Status Device::wait_idle() {
  KILN_RETURN_IF_ERROR(status());
  for (size_t q = 0; q < queues_.size(); ++q) {
    std::lock_guard<std::mutex> lock(queue_mutexes_[q]);
    KILN_RETURN_IF_ERROR(check(fn_.vkQueueWaitIdle(queues_[q]), "vkQueueWaitIdle"));
  }
  return ok_status();
}

StatusOr<uint32_t> Device::find_memory_type(uint32_t type_bits, VkMemoryPropertyFlags required,
                                            VkMemoryPropertyFlags preferred) const {
  int best = -1;
  int best_score = -1;
  for (uint32_t i = 0; i < memory_properties_.memoryTypeCount; ++i) {
    if ((type_bits & (1u << i)) == 0) continue;
    VkMemoryPropertyFlags flags = memory_properties_.memoryTypes[i].propertyFlags;
    if ((flags & required) != required) continue;
    int score = __builtin_popcount(flags & preferred);
    if (score > best_score) {
      best = static_cast<int>(i);
      best_score = score;
    }
  }
  if (best < 0) {
    char buf[96];
    std::snprintf(buf, sizeof(buf), "no Vulkan memory type matches type bits 0x%x with property flags 0x%x", type_bits,
                  required);
    return not_found(buf);
  }
  return static_cast<uint32_t>(best);
}

std::vector<MemoryHeapInfo> Device::memory_heaps() const {
  std::vector<MemoryHeapInfo> heaps;
  query_memory_heaps(instance_->fn(), physical_device_, enabled_.memory_budget, &heaps);
  return heaps;
}

}  // namespace kiln::vk
