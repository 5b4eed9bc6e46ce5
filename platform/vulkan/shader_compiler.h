// GLSL compute source -> SPIR-V (shaderc), and SPIR-V -> descriptor layout
// (SPIRV-Cross reflection).
//
// Kiln generates its kernels as GLSL and compiles them at run time, so the
// compiler reports errors with the source name and line, and reflection
// recovers exactly what a pipeline needs: every descriptor binding with its
// type, the push-constant block size and the workgroup size (and which
// specialization constants drive it).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/base/status.h"
#include "platform/vulkan/vk_loader.h"

namespace kiln::vk {

struct CompileOptions {
  // #define NAME VALUE, in this order, before the source's first line.
  std::vector<std::pair<std::string, std::string>> defines;
  // `#include "name"` resolves against this map (name -> GLSL source).
  std::map<std::string, std::string> includes;
  // The name error messages use ("relu.comp:12: error: ...").
  std::string source_name = "kernel.comp";
  // Target environment; SPIR-V version follows (1.1 -> SPIR-V 1.3, 1.2 ->
  // 1.5, 1.3 -> 1.6). Use the device's api_version() to unlock newer
  // features, or 1.1 for the most portable modules.
  uint32_t vulkan_version = VK_API_VERSION_1_1;
  bool optimize = true;
  bool debug_info = false;
  // Rewrite the compiled module's SPV_NV_cooperative_matrix (the GLSL
  // dialect glslang 12 knows) into SPV_KHR_cooperative_matrix for devices
  // with only VK_KHR_cooperative_matrix (coopmat_khr.h); a module without
  // NV cooperative matrices is unchanged. Part of the kernel cache key.
  bool cooperative_matrix_khr = false;
};

// One descriptor binding a shader declares.
struct ReflectedBinding {
  uint32_t set = 0;
  uint32_t binding = 0;
  VkDescriptorType type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
  uint32_t count = 1;  // array size; 1 for non-arrays
  std::string name;    // GLSL block or variable name; empty when the SPIR-V has no names (optimized)
};

struct ReflectedSpecConstant {
  uint32_t constant_id = 0;
  std::string name;
};

struct ShaderReflection {
  std::vector<ReflectedBinding> bindings;  // sorted by (set, binding)
  uint32_t push_constant_size = 0;         // bytes; 0 when there is no block
  // local_size_{x,y,z}; when a dimension comes from a specialization
  // constant (local_size_x_id = N), local_size_spec_id[i] is N and
  // local_size[i] its default value, else local_size_spec_id[i] is -1.
  std::array<uint32_t, 3> local_size{1, 1, 1};
  std::array<int64_t, 3> local_size_spec_id{-1, -1, -1};
  std::vector<ReflectedSpecConstant> spec_constants;
  // Highest set index used + 1 (0 when there are no bindings).
  uint32_t set_count() const;
  // The binding at (set, binding), or null.
  const ReflectedBinding* find(uint32_t set, uint32_t binding) const;
};

const char* descriptor_type_name(VkDescriptorType type);

class ShaderCompiler {
 public:
  // Errors: kUnavailable when shaderc cannot initialize.
  static StatusOr<std::unique_ptr<ShaderCompiler>> create();
  ~ShaderCompiler();
  ShaderCompiler(const ShaderCompiler&) = delete;
  ShaderCompiler& operator=(const ShaderCompiler&) = delete;

  // Compiles one GLSL compute shader. Errors: kInvalidArgument carrying the
  // compiler's messages, each naming source_name and the line
  // ("relu.comp:12: error: 'x' : undeclared identifier"), followed by the
  // offending source line. Thread-safe.
  StatusOr<std::vector<uint32_t>> compile(std::string_view glsl, const CompileOptions& options = {}) const;

  // Identifies the compiler for cache keys: shaderc release + SPIR-V version.
  const std::string& version() const { return version_; }

 private:
  ShaderCompiler() = default;
  void* compiler_ = nullptr;  // shaderc_compiler_t
  std::string version_;
};

// Reflects a SPIR-V compute module. Errors: kInvalidArgument when the module
// does not parse, is not a compute shader, or uses a resource kind Kiln does
// not bind (input attachments, acceleration structures).
StatusOr<ShaderReflection> reflect(std::span<const uint32_t> spirv);

}  // namespace kiln::vk
