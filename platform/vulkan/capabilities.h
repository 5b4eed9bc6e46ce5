// What a physical device can do, in the terms Kiln's planner and `kiln info`
// care about: limits (buffer range, image size, workgroups), numeric support
// (fp16/int8/16-bit storage), subgroups, cooperative matrices, timestamps and
// memory heaps (with VK_EXT_memory_budget figures where the driver has them).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/base/status.h"
#include "platform/vulkan/vk_loader.h"

namespace kiln::vk {

// One supported cooperative-matrix shape (VK_KHR_cooperative_matrix, or the
// NV extension when only that one is present). Types are VkComponentTypeKHR
// values (0 = fp16, 1 = fp32, 3 = int8, ...).
struct CooperativeMatrixShape {
  uint32_t m = 0, n = 0, k = 0;
  uint32_t a_type = 0, b_type = 0, c_type = 0, result_type = 0;
  bool saturating_accumulation = false;
  uint32_t scope = 0;  // VkScopeKHR; 3 = subgroup
};

struct MemoryHeapInfo {
  uint64_t size = 0;
  bool device_local = false;
  // From VK_EXT_memory_budget; both 0 when the extension is absent.
  uint64_t budget = 0;
  uint64_t usage = 0;
};

struct Capabilities {
  // Identity.
  std::string device_name;
  VkPhysicalDeviceType device_type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
  uint32_t vendor_id = 0;
  uint32_t device_id = 0;
  uint32_t driver_version = 0;
  uint32_t api_version = 0;  // min(device, instance)
  std::string driver_name;   // "llvmpipe"; empty before Vulkan 1.2
  std::string driver_info;   // "Mesa 22.3.6 (LLVM 15.0.6)"
  std::array<uint8_t, VK_UUID_SIZE> pipeline_cache_uuid{};

  // Limits.
  uint64_t max_storage_buffer_range = 0;
  uint64_t max_uniform_buffer_range = 0;
  uint64_t max_memory_allocation_size = 0;  // Vulkan 1.1 maintenance3
  uint64_t max_buffer_size = 0;             // maintenance4; 0 when unknown
  uint32_t max_image_dimension_2d = 0;
  uint32_t max_image_array_layers = 0;
  std::array<uint32_t, 3> max_compute_work_group_count{};
  std::array<uint32_t, 3> max_compute_work_group_size{};
  uint32_t max_compute_work_group_invocations = 0;
  uint32_t max_compute_shared_memory_size = 0;
  uint32_t max_push_constants_size = 0;
  uint32_t max_bound_descriptor_sets = 0;
  uint32_t max_per_stage_descriptor_storage_buffers = 0;
  uint32_t max_per_stage_descriptor_sampled_images = 0;
  uint32_t max_per_stage_descriptor_storage_images = 0;
  uint64_t min_storage_buffer_offset_alignment = 0;
  uint64_t min_uniform_buffer_offset_alignment = 0;
  uint64_t non_coherent_atom_size = 0;
  uint64_t buffer_image_granularity = 0;

  // Numeric support (features the device offers; Device::enabled() says
  // which of them a device was created with).
  bool shader_float16 = false;
  bool shader_int8 = false;
  bool shader_int16 = false;
  bool shader_int64 = false;
  bool shader_float64 = false;
  bool storage_buffer_16bit = false;
  bool storage_buffer_8bit = false;
  bool storage_push_constant_16bit = false;
  // VK_EXT_shader_atomic_float's shaderBufferFloat32AtomicAdd: atomicAdd on
  // float storage-buffer members (the split-K GEMM's atomic fix-up).
  bool buffer_float32_atomic_add = false;
  // Vulkan 1.3's shaderIntegerDotProduct (VK_KHR_shader_integer_dot_product,
  // core): OpSDot/OpUDot/OpSUDot on 4 int8 packed in 32 bits (the integer
  // GEMM's dot-product path, planner/gemm_int.h).
  bool shader_integer_dot_product = false;
  // Whether the driver says those dot products on 4 x 8 bits packed in a
  // word run in hardware (VkPhysicalDeviceVulkan13Properties'
  // integerDotProduct4x8BitPacked{Signed,MixedSignedness}Accelerated: int8
  // and uint8 x int8, the two forms the integer GEMM issues) rather than as
  // byte extracts and multiplies (lavapipe). Decides whether static QDQ
  // graphs run as integer kernels by default (engine/session/int8_kernels.h).
  bool integer_dot_product_accelerated = false;

  // Compute units (SMs, CUs, shader cores) where the driver says, through
  // VK_NV_shader_sm_builtins (shaderSMCount), VK_AMD_shader_core_properties2
  // (activeComputeUnitCount) or VK_AMD_shader_core_properties (engines x
  // arrays per engine x CUs per array), or VK_ARM_shader_core_builtins
  // (shaderCoreCount); 0 = unknown.
  uint32_t compute_units = 0;

  // Subgroups.
  uint32_t subgroup_size = 0;
  uint32_t min_subgroup_size = 0;
  uint32_t max_subgroup_size = 0;
  VkSubgroupFeatureFlags subgroup_operations = 0;
  bool subgroup_in_compute = false;
  bool subgroup_size_control = false;
  bool compute_full_subgroups = false;

  // Cooperative matrices.
  bool cooperative_matrix_khr = false;
  // The device offers VK_KHR_cooperative_matrix but it was not queried (nor
  // enabled): the active validation layer predates it, or a host's wrapped
  // device did not enable it.
  bool cooperative_matrix_khr_hidden = false;
  bool cooperative_matrix_nv = false;
  // KHR shapes when the KHR extension was queried, else the NV ones.
  std::vector<CooperativeMatrixShape> cooperative_matrix_shapes;
  // vkGetPhysicalDeviceCooperativeMatrixPropertiesNV's shapes whenever
  // cooperative_matrix_nv (GL_NV_cooperative_matrix kernels may use only
  // these; the NV component types and scopes share the KHR values).
  std::vector<CooperativeMatrixShape> cooperative_matrix_nv_shapes;

  // Synchronization and queries.
  bool timeline_semaphore = false;
  bool synchronization2 = false;
  bool host_query_reset = false;
  float timestamp_period_ns = 0.0f;
  bool timestamp_compute_and_graphics = false;

  // Image formats Kiln uses for texture memory: sampled + storage + transfer
  // with optimal tiling.
  bool rgba32f_image = false;
  bool rgba16f_image = false;

  // Memory.
  bool memory_budget = false;
  std::vector<MemoryHeapInfo> heaps;

  // Device extensions worth naming (present on the device).
  std::vector<std::string> notable_extensions;
  bool has_extension_portability_subset = false;

  // One JSON object, stable keys (for `kiln info --json`).
  std::string to_json() const;
  // Human-readable multi-line report (for `kiln info`).
  std::string to_text() const;
};

// Queries everything above. `instance_api_version` caps api_version (a 1.3
// device on a 1.1 instance is used as 1.1). With
// `query_khr_cooperative_matrix` false the KHR cooperative-matrix structures
// stay out of the queries (see Capabilities::cooperative_matrix_khr_hidden).
// Thread-safe. Errors: VkResult errors from the enumeration calls.
StatusOr<Capabilities> query_capabilities(const InstanceTable& fn, VkPhysicalDevice physical_device,
                                          uint32_t instance_api_version, bool query_khr_cooperative_matrix = true);

// Whether a validation layer of `layer_version` (0: none) knows the
// VK_KHR_cooperative_matrix structures (headers 1.3.255 and later).
bool layer_knows_khr_cooperative_matrix(uint32_t layer_version);

// Device extension names, for feature decisions. Thread-safe.
StatusOr<std::vector<std::string>> device_extensions(const InstanceTable& fn, VkPhysicalDevice physical_device);

// Re-reads heap sizes and VK_EXT_memory_budget figures into `heaps`.
void query_memory_heaps(const InstanceTable& fn, VkPhysicalDevice physical_device, bool memory_budget,
                        std::vector<MemoryHeapInfo>* heaps);

const char* device_type_name(VkPhysicalDeviceType type);

}  // namespace kiln::vk
