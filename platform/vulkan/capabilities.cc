// Device capability queries and their JSON/text reports; see capabilities.h.
#include "platform/vulkan/capabilities.h"

#include "engine/base/json_writer.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "platform/vulkan/vk_status.h"

namespace kiln::vk {
namespace {

// Extensions `kiln info` names when present; the ones Kiln acts on are
// queried separately.
constexpr const char* kNotableExtensions[] = {
    "VK_KHR_cooperative_matrix",       "VK_NV_cooperative_matrix",     "VK_NV_cooperative_matrix2",
    "VK_EXT_memory_budget",            "VK_KHR_shader_float16_int8",   "VK_KHR_16bit_storage",
    "VK_KHR_8bit_storage",             "VK_KHR_timeline_semaphore",    "VK_KHR_synchronization2",
    "VK_EXT_subgroup_size_control",    "VK_KHR_maintenance4",          "VK_KHR_shader_integer_dot_product",
    "VK_EXT_shader_atomic_float",      "VK_KHR_shader_bfloat16",       "VK_KHR_portability_subset",
    "VK_EXT_host_query_reset",         "VK_KHR_buffer_device_address", "VK_KHR_push_descriptor",
};

bool contains(const std::vector<std::string>& list, const char* name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

// Appends `s` to a pNext chain whose last pNext slot is `tail`; returns the
// new last slot.
template <typename T>
void** link(void** tail, T* s) {
  *tail = s;
  return &s->pNext;
}

bool format_ok(const InstanceTable& fn, VkPhysicalDevice pd, VkFormat format) {
  VkFormatProperties props{};
  fn.vkGetPhysicalDeviceFormatProperties(pd, format, &props);
  const VkFormatFeatureFlags need = VK_FORMAT_FEATURE_SAMPLED_IMAGE_BIT | VK_FORMAT_FEATURE_STORAGE_IMAGE_BIT |
                                    VK_FORMAT_FEATURE_TRANSFER_SRC_BIT | VK_FORMAT_FEATURE_TRANSFER_DST_BIT;
  return (props.optimalTilingFeatures & need) == need;
}

}  // namespace

const char* device_type_name(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return "integrated-gpu";
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return "discrete-gpu";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return "virtual-gpu";
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return "cpu";
    default:
      return "other";
  }
}

StatusOr<std::vector<std::string>> device_extensions(const InstanceTable& fn, VkPhysicalDevice pd) {
  uint32_t count = 0;
  KILN_RETURN_IF_ERROR(
      vk_status(fn.vkEnumerateDeviceExtensionProperties(pd, nullptr, &count, nullptr), "vkEnumerateDeviceExtensionProperties"));
  std::vector<VkExtensionProperties> props(count);
  KILN_RETURN_IF_ERROR(vk_status(fn.vkEnumerateDeviceExtensionProperties(pd, nullptr, &count, props.data()),
                                 "vkEnumerateDeviceExtensionProperties"));
  std::vector<std::string> names;
  names.reserve(count);
  for (uint32_t i = 0; i < count; ++i) names.emplace_back(props[i].extensionName);
  return names;
}

void query_memory_heaps(const InstanceTable& fn, VkPhysicalDevice pd, bool memory_budget,
                        std::vector<MemoryHeapInfo>* heaps) {
  VkPhysicalDeviceMemoryBudgetPropertiesEXT budget{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
  VkPhysicalDeviceMemoryProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2};
  if (memory_budget) props.pNext = &budget;
  fn.vkGetPhysicalDeviceMemoryProperties2(pd, &props);
  heaps->clear();
  for (uint32_t i = 0; i < props.memoryProperties.memoryHeapCount; ++i) {
    MemoryHeapInfo heap;
    heap.size = props.memoryProperties.memoryHeaps[i].size;
    heap.device_local = (props.memoryProperties.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) != 0;
    if (memory_budget) {
      heap.budget = budget.heapBudget[i];
      heap.usage = budget.heapUsage[i];
    }
    heaps->push_back(heap);
  }
}

bool layer_knows_khr_cooperative_matrix(uint32_t layer_version) {
  return layer_version == 0 || layer_version >= VK_MAKE_API_VERSION(0, 1, 3, 255);
}

StatusOr<Capabilities> query_capabilities(const InstanceTable& fn, VkPhysicalDevice pd, uint32_t instance_api_version,
                                          bool query_khr_cooperative_matrix) {
  if (pd == VK_NULL_HANDLE) return invalid_argument("VkPhysicalDevice is null");
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> ext, device_extensions(fn, pd));
  Capabilities caps;

  VkPhysicalDeviceProperties base{};
  fn.vkGetPhysicalDeviceProperties(pd, &base);
  const uint32_t api = std::min(base.apiVersion, instance_api_version);
  caps.api_version = api;
  const bool v12 = api >= VK_API_VERSION_1_2;
  const bool v13 = api >= VK_API_VERSION_1_3;

  // Properties chain.
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceMaintenance3Properties maint3{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  VkPhysicalDeviceVulkan12Properties p12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_PROPERTIES};
  VkPhysicalDeviceVulkan13Properties p13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_PROPERTIES};
  VkPhysicalDeviceCooperativeMatrixPropertiesKHR cm_props{KILN_STYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_KHR};
  void** tail = &props.pNext;
  tail = link(tail, &subgroup);
  tail = link(tail, &maint3);
  if (v12) tail = link(tail, &p12);
  if (v13) tail = link(tail, &p13);
  const bool offers_cm_khr = contains(ext, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME) &&
                            fn.vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR != nullptr;
  const bool has_cm_khr = offers_cm_khr && query_khr_cooperative_matrix;
  caps.cooperative_matrix_khr_hidden = offers_cm_khr && !has_cm_khr;
  if (has_cm_khr) tail = link(tail, &cm_props);
  // Compute units, from whichever vendor extension the device has.
  VkPhysicalDeviceShaderSMBuiltinsPropertiesNV sm_nv{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV};
  VkPhysicalDeviceShaderCorePropertiesAMD core_amd{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_AMD};
  VkPhysicalDeviceShaderCoreProperties2AMD core2_amd{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_2_AMD};
  VkPhysicalDeviceShaderCoreBuiltinsPropertiesARM core_arm{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_BUILTINS_PROPERTIES_ARM};
  const bool has_sm_nv = contains(ext, VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME);
  const bool has_core_amd = contains(ext, VK_AMD_SHADER_CORE_PROPERTIES_EXTENSION_NAME);
  const bool has_core2_amd = contains(ext, VK_AMD_SHADER_CORE_PROPERTIES_2_EXTENSION_NAME);
  const bool has_core_arm = contains(ext, VK_ARM_SHADER_CORE_BUILTINS_EXTENSION_NAME);
  if (has_sm_nv) tail = link(tail, &sm_nv);
  if (has_core_amd) tail = link(tail, &core_amd);
  if (has_core2_amd) tail = link(tail, &core2_amd);
  if (has_core_arm) tail = link(tail, &core_arm);
  fn.vkGetPhysicalDeviceProperties2(pd, &props);
  if (has_sm_nv && sm_nv.shaderSMCount > 0) {
    caps.compute_units = sm_nv.shaderSMCount;
  } else if (has_core2_amd && core2_amd.activeComputeUnitCount > 0) {
    caps.compute_units = core2_amd.activeComputeUnitCount;
  } else if (has_core_amd) {
    caps.compute_units =
        core_amd.shaderEngineCount * core_amd.shaderArraysPerEngineCount * core_amd.computeUnitsPerShaderArray;
  } else if (has_core_arm) {
    caps.compute_units = core_arm.shaderCoreCount;
  } else if (props.properties.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU) {
    // A CPU implementation (lavapipe, SwiftShader) runs workgroups on its
    // worker threads, one per host core unless LP_NUM_THREADS says otherwise
    // (lavapipe's own default).
    const char* threads = std::getenv("LP_NUM_THREADS");
    // (LP_NUM_THREADS=0 runs them on the submitting thread: one unit.)
    const long n = threads ? std::max(1L, std::strtol(threads, nullptr, 10)) : 0;
    caps.compute_units = n > 0 ? static_cast<uint32_t>(n) : std::max(1u, std::thread::hardware_concurrency());
  }

  // Features chain.
  VkPhysicalDeviceFeatures2 feats{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  VkPhysicalDevice16BitStorageFeatures f16storage{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceShaderFloat16Int8Features f16i8{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  VkPhysicalDevice8BitStorageFeatures f8storage{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES};
  VkPhysicalDeviceVulkan13Features f13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  VkPhysicalDeviceCooperativeMatrixFeaturesKHR cm_khr{KILN_STYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR};
  VkPhysicalDeviceCooperativeMatrixFeaturesNV cm_nv{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  tail = &feats.pNext;
  tail = link(tail, &f16storage);
  if (v12) {
    tail = link(tail, &f12);
  } else {
    // Before 1.2 these are extensions with the same feature structs.
    if (contains(ext, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME)) tail = link(tail, &f16i8);
    if (contains(ext, VK_KHR_8BIT_STORAGE_EXTENSION_NAME)) tail = link(tail, &f8storage);
  }
  if (v13) tail = link(tail, &f13);
  if (has_cm_khr) tail = link(tail, &cm_khr);
  const bool has_cm_nv = contains(ext, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME) &&
                         fn.vkGetPhysicalDeviceCooperativeMatrixPropertiesNV != nullptr;
  if (has_cm_nv) tail = link(tail, &cm_nv);
  VkPhysicalDeviceShaderAtomicFloatFeaturesEXT atomic_float{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT};
  const bool has_atomic_float = contains(ext, VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME);
  if (has_atomic_float) tail = link(tail, &atomic_float);
  fn.vkGetPhysicalDeviceFeatures2(pd, &feats);

  const VkPhysicalDeviceLimits& lim = props.properties.limits;
  caps.device_name = props.properties.deviceName;
  caps.device_type = props.properties.deviceType;
  caps.vendor_id = props.properties.vendorID;
  caps.device_id = props.properties.deviceID;
  caps.driver_version = props.properties.driverVersion;
  std::memcpy(caps.pipeline_cache_uuid.data(), props.properties.pipelineCacheUUID, VK_UUID_SIZE);
  if (v12) {
    caps.driver_name = p12.driverName;
    caps.driver_info = p12.driverInfo;
  }
  caps.max_storage_buffer_range = lim.maxStorageBufferRange;
  caps.max_uniform_buffer_range = lim.maxUniformBufferRange;
  caps.max_memory_allocation_size = maint3.maxMemoryAllocationSize;
  caps.max_buffer_size = v13 ? p13.maxBufferSize : 0;
  caps.max_image_dimension_2d = lim.maxImageDimension2D;
  caps.max_image_array_layers = lim.maxImageArrayLayers;
  for (int i = 0; i < 3; ++i) {
    caps.max_compute_work_group_count[i] = lim.maxComputeWorkGroupCount[i];
    caps.max_compute_work_group_size[i] = lim.maxComputeWorkGroupSize[i];
  }
  caps.max_compute_work_group_invocations = lim.maxComputeWorkGroupInvocations;
  caps.max_compute_shared_memory_size = lim.maxComputeSharedMemorySize;
  caps.max_push_constants_size = lim.maxPushConstantsSize;
  caps.max_bound_descriptor_sets = lim.maxBoundDescriptorSets;
  caps.max_per_stage_descriptor_storage_buffers = lim.maxPerStageDescriptorStorageBuffers;
  caps.max_per_stage_descriptor_sampled_images = lim.maxPerStageDescriptorSampledImages;
  caps.max_per_stage_descriptor_storage_images = lim.maxPerStageDescriptorStorageImages;
  caps.min_storage_buffer_offset_alignment = lim.minStorageBufferOffsetAlignment;
  caps.min_uniform_buffer_offset_alignment = lim.minUniformBufferOffsetAlignment;
  caps.non_coherent_atom_size = lim.nonCoherentAtomSize;
  caps.buffer_image_granularity = lim.bufferImageGranularity;
  caps.timestamp_period_ns = lim.timestampPeriod;
  caps.timestamp_compute_and_graphics = lim.timestampComputeAndGraphics == VK_TRUE;

  caps.shader_int16 = feats.features.shaderInt16 == VK_TRUE;
  caps.shader_int64 = feats.features.shaderInt64 == VK_TRUE;
  caps.shader_float64 = feats.features.shaderFloat64 == VK_TRUE;
  caps.storage_buffer_16bit = f16storage.storageBuffer16BitAccess == VK_TRUE;
  caps.storage_push_constant_16bit = f16storage.storagePushConstant16 == VK_TRUE;
  caps.buffer_float32_atomic_add = has_atomic_float && atomic_float.shaderBufferFloat32AtomicAdd == VK_TRUE;
  if (v12) {
    caps.shader_float16 = f12.shaderFloat16 == VK_TRUE;
    caps.shader_int8 = f12.shaderInt8 == VK_TRUE;
    caps.storage_buffer_8bit = f12.storageBuffer8BitAccess == VK_TRUE;
    caps.timeline_semaphore = f12.timelineSemaphore == VK_TRUE;
    caps.host_query_reset = f12.hostQueryReset == VK_TRUE;
  } else {
    caps.shader_float16 = f16i8.shaderFloat16 == VK_TRUE;
    caps.shader_int8 = f16i8.shaderInt8 == VK_TRUE;
    caps.storage_buffer_8bit = f8storage.storageBuffer8BitAccess == VK_TRUE;
  }

  caps.subgroup_size = subgroup.subgroupSize;
  caps.subgroup_operations = subgroup.supportedOperations;
  caps.subgroup_in_compute = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0;
  caps.min_subgroup_size = subgroup.subgroupSize;
  caps.max_subgroup_size = subgroup.subgroupSize;
  if (v13) {
    caps.synchronization2 = f13.synchronization2 == VK_TRUE;
    caps.subgroup_size_control = f13.subgroupSizeControl == VK_TRUE;
    caps.compute_full_subgroups = f13.computeFullSubgroups == VK_TRUE;
    caps.shader_integer_dot_product = f13.shaderIntegerDotProduct == VK_TRUE;
    caps.integer_dot_product_accelerated = caps.shader_integer_dot_product &&
                                           p13.integerDotProduct4x8BitPackedSignedAccelerated == VK_TRUE &&
                                           p13.integerDotProduct4x8BitPackedMixedSignednessAccelerated == VK_TRUE;
    if (p13.minSubgroupSize != 0) caps.min_subgroup_size = p13.minSubgroupSize;
    if (p13.maxSubgroupSize != 0) caps.max_subgroup_size = p13.maxSubgroupSize;
  }

  if (has_cm_khr && cm_khr.cooperativeMatrix == VK_TRUE &&
      (cm_props.cooperativeMatrixSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0) {
    caps.cooperative_matrix_khr = true;
    uint32_t count = 0;
    KILN_RETURN_IF_ERROR(vk_status(fn.vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR(pd, &count, nullptr),
                                   "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"));
    std::vector<VkCooperativeMatrixPropertiesKHR> shapes(count, {KILN_STYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR});
    VkResult r = fn.vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR(pd, &count, shapes.data());
    KILN_RETURN_IF_ERROR(vk_status(r, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"));
    shapes.resize(count);
    for (const auto& s : shapes) {
      caps.cooperative_matrix_shapes.push_back({s.MSize, s.NSize, s.KSize, static_cast<uint32_t>(s.AType),
                                                static_cast<uint32_t>(s.BType), static_cast<uint32_t>(s.CType),
                                                static_cast<uint32_t>(s.ResultType), s.saturatingAccumulation == VK_TRUE,
                                                static_cast<uint32_t>(s.scope)});
    }
  }
  if (has_cm_nv && cm_nv.cooperativeMatrix == VK_TRUE) {
    caps.cooperative_matrix_nv = true;
    uint32_t count = 0;
    KILN_RETURN_IF_ERROR(vk_status(fn.vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(pd, &count, nullptr),
                                   "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"));
    std::vector<VkCooperativeMatrixPropertiesNV> shapes(count, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV});
    VkResult r = fn.vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(pd, &count, shapes.data());
    KILN_RETURN_IF_ERROR(vk_status(r, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"));
    shapes.resize(count);
    for (const auto& s : shapes) {
      caps.cooperative_matrix_nv_shapes.push_back({s.MSize, s.NSize, s.KSize, static_cast<uint32_t>(s.AType),
                                                   static_cast<uint32_t>(s.BType), static_cast<uint32_t>(s.CType),
                                                   static_cast<uint32_t>(s.DType), false,
                                                   static_cast<uint32_t>(s.scope)});
    }
    if (!caps.cooperative_matrix_khr) caps.cooperative_matrix_shapes = caps.cooperative_matrix_nv_shapes;
  }

  caps.rgba32f_image = format_ok(fn, pd, VK_FORMAT_R32G32B32A32_SFLOAT);
  caps.rgba16f_image = format_ok(fn, pd, VK_FORMAT_R16G16B16A16_SFLOAT);
  caps.memory_budget = contains(ext, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
  query_memory_heaps(fn, pd, caps.memory_budget, &caps.heaps);
  for (const char* name : kNotableExtensions) {
    if (contains(ext, name)) caps.notable_extensions.emplace_back(name);
  }
  caps.has_extension_portability_subset = contains(ext, "VK_KHR_portability_subset");
  return caps;
}

// ---------------------------------------------------------------------------
// Reports.

namespace {

std::string json_string(const std::string& s) { return "\"" + json_escape(s) + "\""; }

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%04" PRIx32, v);
  return buf;
}

std::string uuid_string(const std::array<uint8_t, VK_UUID_SIZE>& uuid) {
  std::string out;
  char buf[4];
  for (uint8_t b : uuid) {
    std::snprintf(buf, sizeof(buf), "%02x", b);
    out += buf;
  }
  return out;
}

std::string component_type_name(uint32_t t) {
  static const char* kNames[] = {"f16", "f32", "f64", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64"};
  if (t < sizeof(kNames) / sizeof(kNames[0])) return kNames[t];
  if (t == 1000141000u) return "bf16";  // VK_COMPONENT_TYPE_BFLOAT16_KHR
  return "type" + std::to_string(t);
}

std::string subgroup_ops_string(VkSubgroupFeatureFlags ops) {
  static const std::pair<VkSubgroupFeatureFlagBits, const char*> kOps[] = {
      {VK_SUBGROUP_FEATURE_BASIC_BIT, "basic"},
      {VK_SUBGROUP_FEATURE_VOTE_BIT, "vote"},
      {VK_SUBGROUP_FEATURE_ARITHMETIC_BIT, "arithmetic"},
      {VK_SUBGROUP_FEATURE_BALLOT_BIT, "ballot"},
      {VK_SUBGROUP_FEATURE_SHUFFLE_BIT, "shuffle"},
      {VK_SUBGROUP_FEATURE_SHUFFLE_RELATIVE_BIT, "shuffle_relative"},
      {VK_SUBGROUP_FEATURE_CLUSTERED_BIT, "clustered"},
      {VK_SUBGROUP_FEATURE_QUAD_BIT, "quad"},
  };
  std::string out;
  for (const auto& [bit, name] : kOps) {
    if ((ops & bit) == 0) continue;
    if (!out.empty()) out += ",";
    out += name;
  }
  return out;
}

std::string shape_string(const CooperativeMatrixShape& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) + " " +
         component_type_name(s.a_type) + "*" + component_type_name(s.b_type) + "+" + component_type_name(s.c_type) +
         "->" + component_type_name(s.result_type) + (s.scope == 3 ? "" : " (scope " + std::to_string(s.scope) + ")");
}

const char* b(bool v) { return v ? "true" : "false"; }

}  // namespace

std::string Capabilities::to_json() const {
  std::string j = "{";
  auto key = [&](const char* k) {
    if (j.size() > 1) j += ",";
    j += "\"";
    j += k;
    j += "\":";
  };
  auto num = [&](const char* k, uint64_t v) { key(k), j += std::to_string(v); };
  auto boolean = [&](const char* k, bool v) { key(k), j += b(v); };
  auto str = [&](const char* k, const std::string& v) { key(k), j += json_string(v); };
  auto arr3 = [&](const char* k, const std::array<uint32_t, 3>& v) {
    key(k), j += "[" + std::to_string(v[0]) + "," + std::to_string(v[1]) + "," + std::to_string(v[2]) + "]";
  };
  str("device_name", device_name);
  str("device_type", device_type_name(device_type));
  str("vendor_id", hex32(vendor_id));
  str("device_id", hex32(device_id));
  num("driver_version", driver_version);
  str("api_version", api_version_string(api_version));
  str("driver_name", driver_name);
  str("driver_info", driver_info);
  str("pipeline_cache_uuid", uuid_string(pipeline_cache_uuid));
  num("max_storage_buffer_range", max_storage_buffer_range);
  num("max_uniform_buffer_range", max_uniform_buffer_range);
  num("max_memory_allocation_size", max_memory_allocation_size);
  num("max_buffer_size", max_buffer_size);
  num("max_image_dimension_2d", max_image_dimension_2d);
  num("max_image_array_layers", max_image_array_layers);
  arr3("max_compute_work_group_count", max_compute_work_group_count);
  arr3("max_compute_work_group_size", max_compute_work_group_size);
  num("max_compute_work_group_invocations", max_compute_work_group_invocations);
  num("max_compute_shared_memory_size", max_compute_shared_memory_size);
  num("max_push_constants_size", max_push_constants_size);
  num("compute_units", compute_units);
  num("max_bound_descriptor_sets", max_bound_descriptor_sets);
  num("min_storage_buffer_offset_alignment", min_storage_buffer_offset_alignment);
  num("buffer_image_granularity", buffer_image_granularity);
  boolean("shader_float16", shader_float16);
  boolean("buffer_float32_atomic_add", buffer_float32_atomic_add);
  boolean("shader_integer_dot_product", shader_integer_dot_product);
  boolean("integer_dot_product_accelerated", integer_dot_product_accelerated);
  boolean("shader_int8", shader_int8);
  boolean("shader_int16", shader_int16);
  boolean("shader_int64", shader_int64);
  boolean("shader_float64", shader_float64);
  boolean("storage_buffer_16bit", storage_buffer_16bit);
  boolean("storage_buffer_8bit", storage_buffer_8bit);
  num("subgroup_size", subgroup_size);
  num("min_subgroup_size", min_subgroup_size);
  num("max_subgroup_size", max_subgroup_size);
  str("subgroup_operations", subgroup_ops_string(subgroup_operations));
  boolean("subgroup_in_compute", subgroup_in_compute);
  boolean("subgroup_size_control", subgroup_size_control);
  boolean("cooperative_matrix_khr", cooperative_matrix_khr);
  boolean("cooperative_matrix_khr_hidden", cooperative_matrix_khr_hidden);
  boolean("cooperative_matrix_nv", cooperative_matrix_nv);
  const auto shapes = [&](const char* k, const std::vector<CooperativeMatrixShape>& list) {
    key(k);
    j += "[";
    for (size_t i = 0; i < list.size(); ++i) {
      const auto& s = list[i];
      if (i) j += ",";
      j += "{\"m\":" + std::to_string(s.m) + ",\"n\":" + std::to_string(s.n) + ",\"k\":" + std::to_string(s.k) +
           ",\"a\":\"" + component_type_name(s.a_type) + "\",\"b\":\"" + component_type_name(s.b_type) +
           "\",\"c\":\"" + component_type_name(s.c_type) + "\",\"result\":\"" + component_type_name(s.result_type) +
           "\",\"scope\":" + std::to_string(s.scope) + "}";
    }
    j += "]";
  };
  shapes("cooperative_matrix_shapes", cooperative_matrix_shapes);
  shapes("cooperative_matrix_nv_shapes", cooperative_matrix_nv_shapes);
  boolean("timeline_semaphore", timeline_semaphore);
  boolean("synchronization2", synchronization2);
  key("timestamp_period_ns");
  j += std::to_string(timestamp_period_ns);
  boolean("rgba32f_image", rgba32f_image);
  boolean("rgba16f_image", rgba16f_image);
  boolean("memory_budget", memory_budget);
  key("heaps");
  j += "[";
  for (size_t i = 0; i < heaps.size(); ++i) {
    if (i) j += ",";
    j += "{\"size\":" + std::to_string(heaps[i].size) + ",\"device_local\":" + b(heaps[i].device_local);
    if (memory_budget) {
      j += ",\"budget\":" + std::to_string(heaps[i].budget) + ",\"usage\":" + std::to_string(heaps[i].usage);
    }
    j += "}";
  }
  j += "]";
  key("extensions");
  j += "[";
  for (size_t i = 0; i < notable_extensions.size(); ++i) j += (i ? "," : "") + json_string(notable_extensions[i]);
  j += "]}";
  return j;
}

std::string Capabilities::to_text() const {
  std::string t;
  auto line = [&](const std::string& k, const std::string& v) { t += "  " + k + ": " + v + "\n"; };
  auto mib = [](uint64_t v) { return std::to_string(v / (1024 * 1024)) + " MiB"; };
  t += device_name + " (" + device_type_name(device_type) + ", vendor " + hex32(vendor_id) + ", device " +
       hex32(device_id) + ")\n";
  line("vulkan", api_version_string(api_version));
  line("driver", (driver_name.empty() ? std::string("?") : driver_name) +
                     (driver_info.empty() ? "" : " (" + driver_info + ")") + ", version " + std::to_string(driver_version));
  line("maxStorageBufferRange", std::to_string(max_storage_buffer_range) + " (" + mib(max_storage_buffer_range) + ")");
  line("maxMemoryAllocationSize", mib(max_memory_allocation_size));
  line("maxImageDimension2D", std::to_string(max_image_dimension_2d));
  line("maxComputeWorkGroupSize", std::to_string(max_compute_work_group_size[0]) + "x" +
                                      std::to_string(max_compute_work_group_size[1]) + "x" +
                                      std::to_string(max_compute_work_group_size[2]) + ", " +
                                      std::to_string(max_compute_work_group_invocations) + " invocations");
  line("maxComputeSharedMemorySize", std::to_string(max_compute_shared_memory_size));
  line("maxPushConstantsSize", std::to_string(max_push_constants_size));
  line("compute units", compute_units ? std::to_string(compute_units) : std::string("unknown"));
  line("fp16", std::string("arithmetic ") + b(shader_float16) + ", 16-bit storage " + b(storage_buffer_16bit));
  line("float atomics", std::string("buffer add ") + b(buffer_float32_atomic_add));
  line("int8", std::string("arithmetic ") + b(shader_int8) + ", 8-bit storage " + b(storage_buffer_8bit) +
                   ", packed dot products " + b(shader_integer_dot_product) +
                   (shader_integer_dot_product ? (integer_dot_product_accelerated ? " (accelerated)" : " (not accelerated)") : ""));
  line("subgroup", std::to_string(subgroup_size) + " (" + std::to_string(min_subgroup_size) + ".." +
                       std::to_string(max_subgroup_size) + "), ops " + subgroup_ops_string(subgroup_operations) +
                       (subgroup_size_control ? ", size control" : ""));
  std::string cm = cooperative_matrix_khr ? (cooperative_matrix_nv ? "KHR, NV" : "KHR") : (cooperative_matrix_nv ? "NV" : "none");
  if (cooperative_matrix_khr_hidden) cm += " (KHR offered but not queried: old validation layer or not enabled by the host)";
  for (const auto& s : cooperative_matrix_shapes) cm += "\n    " + shape_string(s);
  if (cooperative_matrix_khr && cooperative_matrix_nv)
    for (const auto& s : cooperative_matrix_nv_shapes) cm += "\n    NV: " + shape_string(s);
  line("cooperative matrix", cm);
  line("timeline semaphores", b(timeline_semaphore));
  line("timestamp period", std::to_string(timestamp_period_ns) + " ns");
  line("rgba32f / rgba16f images", std::string(b(rgba32f_image)) + " / " + b(rgba16f_image));
  for (size_t i = 0; i < heaps.size(); ++i) {
    std::string v = mib(heaps[i].size) + (heaps[i].device_local ? ", device-local" : "");
    if (memory_budget) v += ", budget " + mib(heaps[i].budget) + ", used " + mib(heaps[i].usage);
    line("heap " + std::to_string(i), v);
  }
  std::string ext;
  for (const auto& e : notable_extensions) ext += (ext.empty() ? "" : " ") + e;
  line("extensions", ext.empty() ? "-" : ext);
  return t;
}

}  // namespace kiln::vk
