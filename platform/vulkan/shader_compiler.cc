// shaderc compilation and SPIRV-Cross reflection; see shader_compiler.h.
#include "platform/vulkan/shader_compiler.h"

#include <shaderc/shaderc.h>
#include <spirv_cross/spirv_cross_c.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>

#include "platform/vulkan/coopmat_khr.h"
#include "platform/vulkan/fault_injection.h"
#include "platform/vulkan/vk_status.h"

#ifndef KILN_SHADERC_VERSION
#define KILN_SHADERC_VERSION "unknown"
#endif

namespace kiln::vk {
namespace {

// ---------------------------------------------------------------------------
// Includes: resolved from CompileOptions::includes; results own their strings.

struct IncludeResult {
  shaderc_include_result result{};
  std::string name;
  std::string content;
};

shaderc_include_result* resolve_include(void* user_data, const char* requested, int /*type*/,
                                        const char* /*requesting*/, size_t /*depth*/) {
  const auto* includes = static_cast<const std::map<std::string, std::string>*>(user_data);
  auto* r = new IncludeResult();
  auto it = includes->find(requested);
  if (it == includes->end()) {
    r->content = std::string("include '") + requested + "' is not among the compile options' includes";
  } else {
    r->name = it->first;
    r->content = it->second;
  }
  r->result.source_name = r->name.c_str();
  r->result.source_name_length = r->name.size();
  r->result.content = r->content.c_str();
  r->result.content_length = r->content.size();
  r->result.user_data = r;
  return &r->result;
}

void release_include(void* /*user_data*/, shaderc_include_result* result) {
  delete static_cast<IncludeResult*>(result->user_data);
}

// Appends the offending source line under each "name:LINE: error:" message so
// the error reads on its own.
std::string annotate_errors(const std::string& messages, std::string_view source, const std::string& source_name) {
  std::vector<std::string_view> lines;
  for (size_t start = 0; start <= source.size();) {
    size_t end = source.find('\n', start);
    if (end == std::string_view::npos) end = source.size();
    lines.push_back(source.substr(start, end - start));
    start = end + 1;
  }
  std::string out;
  const std::string prefix = source_name + ":";
  size_t pos = 0;
  while (pos < messages.size()) {
    size_t end = messages.find('\n', pos);
    if (end == std::string::npos) end = messages.size();
    std::string_view line(messages.data() + pos, end - pos);
    if (!line.empty()) {
      out.append(line);
      out += "\n";
      if (line.substr(0, prefix.size()) == prefix) {
        long n = std::strtol(std::string(line.substr(prefix.size())).c_str(), nullptr, 10);
        if (n >= 1 && static_cast<size_t>(n) <= lines.size()) {
          out += "    ";
          out.append(lines[n - 1]);
          out += "\n";
        }
      }
    }
    pos = end + 1;
  }
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

uint32_t shaderc_env_version(uint32_t vulkan_version) {
  if (vulkan_version >= VK_API_VERSION_1_3) return shaderc_env_version_vulkan_1_3;
  if (vulkan_version >= VK_API_VERSION_1_2) return shaderc_env_version_vulkan_1_2;
  if (vulkan_version >= VK_API_VERSION_1_1) return shaderc_env_version_vulkan_1_1;
  return shaderc_env_version_vulkan_1_0;
}

}  // namespace

// ---------------------------------------------------------------------------
// ShaderCompiler.

StatusOr<std::unique_ptr<ShaderCompiler>> ShaderCompiler::create() {
  std::unique_ptr<ShaderCompiler> c(new ShaderCompiler());
  c->compiler_ = shaderc_compiler_initialize();
  if (c->compiler_ == nullptr) return unavailable("shaderc could not initialize a compiler");
  unsigned spv_version = 0, spv_revision = 0;
  shaderc_get_spv_version(&spv_version, &spv_revision);
  c->version_ = std::string("shaderc ") + KILN_SHADERC_VERSION + " spv " + std::to_string(spv_version) + "." +
                std::to_string(spv_revision);
  return c;
}

ShaderCompiler::~ShaderCompiler() {
  if (compiler_ != nullptr) shaderc_compiler_release(static_cast<shaderc_compiler_t>(compiler_));
}

StatusOr<std::vector<uint32_t>> ShaderCompiler::compile(std::string_view glsl, const CompileOptions& options) const {
  if (VkResult injected = injected_fault(FaultSite::kShaderCompilation); injected != VK_SUCCESS)
    return vk_status(injected, "GLSL compile of " + options.source_name);
  shaderc_compile_options_t opts = shaderc_compile_options_initialize();
  if (opts == nullptr) return out_of_memory("shaderc could not allocate compile options");
  for (const auto& [name, value] : options.defines) {
    shaderc_compile_options_add_macro_definition(opts, name.data(), name.size(), value.data(), value.size());
  }
  shaderc_compile_options_set_target_env(opts, shaderc_target_env_vulkan, shaderc_env_version(options.vulkan_version));
  shaderc_compile_options_set_optimization_level(
      opts, options.optimize ? shaderc_optimization_level_performance : shaderc_optimization_level_zero);
  if (options.debug_info) shaderc_compile_options_set_generate_debug_info(opts);
  shaderc_compile_options_set_include_callbacks(opts, resolve_include, release_include,
                                                const_cast<std::map<std::string, std::string>*>(&options.includes));

  shaderc_compilation_result_t result =
      shaderc_compile_into_spv(static_cast<shaderc_compiler_t>(compiler_), glsl.data(), glsl.size(),
                               shaderc_compute_shader, options.source_name.c_str(), "main", opts);
  shaderc_compile_options_release(opts);
  if (result == nullptr) return out_of_memory("shaderc returned no result");

  Status status;
  std::vector<uint32_t> words;
  shaderc_compilation_status cs = shaderc_result_get_compilation_status(result);
  if (cs != shaderc_compilation_status_success) {
    std::string messages = shaderc_result_get_error_message(result);
    status = invalid_argument("GLSL compile of " + options.source_name + " failed (" +
                              std::to_string(shaderc_result_get_num_errors(result)) + " error(s)):\n" +
                              annotate_errors(messages, glsl, options.source_name));
  } else {
    size_t bytes = shaderc_result_get_length(result);
    words.resize(bytes / sizeof(uint32_t));
    std::memcpy(words.data(), shaderc_result_get_bytes(result), words.size() * sizeof(uint32_t));
  }
  shaderc_result_release(result);
  if (!status.ok()) return status;
  if (options.cooperative_matrix_khr) {
    auto khr = nv_to_khr_cooperative_matrix(words);
    if (!khr.ok()) return std::move(khr).status().add_context("KHR cooperative matrices for " + options.source_name);
    return std::move(khr).value();
  }
  return words;
}

// ---------------------------------------------------------------------------
// Reflection.

uint32_t ShaderReflection::set_count() const {
  uint32_t n = 0;
  for (const auto& b : bindings) n = std::max(n, b.set + 1);
  return n;
}

const ReflectedBinding* ShaderReflection::find(uint32_t set, uint32_t binding) const {
  for (const auto& b : bindings) {
    if (b.set == set && b.binding == binding) return &b;
  }
  return nullptr;
}

const char* descriptor_type_name(VkDescriptorType type) {
  switch (type) {
    case VK_DESCRIPTOR_TYPE_STORAGE_BUFFER:
      return "storage buffer";
    case VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER:
      return "uniform buffer";
    case VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER:
      return "combined image sampler";
    case VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE:
      return "sampled image";
    case VK_DESCRIPTOR_TYPE_STORAGE_IMAGE:
      return "storage image";
    case VK_DESCRIPTOR_TYPE_SAMPLER:
      return "sampler";
    case VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER:
      return "uniform texel buffer";
    case VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER:
      return "storage texel buffer";
    default:
      return "other descriptor";
  }
}

namespace {

// Owns one spvc_context for the duration of a reflection.
struct SpvcContext {
  spvc_context ctx = nullptr;
  ~SpvcContext() {
    if (ctx != nullptr) spvc_context_destroy(ctx);
  }
  Status error(const std::string& what) const {
    const char* detail = ctx != nullptr ? spvc_context_get_last_error_string(ctx) : nullptr;
    return invalid_argument("SPIR-V reflection: " + what + (detail && *detail ? std::string(": ") + detail : ""));
  }
};

// The module with cooperative-matrix type declarations (NV and KHR) turned
// into 4-vectors of their component type, for reflection only: the
// SPIRV-Cross of Debian 12 rejects these declarations at global scope
// ("Currently no block to insert opcode") but skips the unknown instructions
// that use them inside functions, and reflection needs neither. Empty when
// the module declares none (use it as is).
std::vector<uint32_t> without_cooperative_matrix_types(std::span<const uint32_t> spirv) {
  constexpr uint32_t kTypeCooperativeMatrixNV = 5358, kTypeCooperativeMatrixKHR = 4456, kTypeVector = 23;
  std::vector<uint32_t> out;
  for (size_t i = 5; i < spirv.size();) {
    const uint32_t op = spirv[i] & 0xFFFFu, words = spirv[i] >> 16;
    if (words == 0 || i + words > spirv.size()) return {};  // malformed: let SPIRV-Cross report it
    if ((op == kTypeCooperativeMatrixNV || op == kTypeCooperativeMatrixKHR) && words >= 3) {
      if (out.empty()) out.assign(spirv.begin(), spirv.begin() + static_cast<std::ptrdiff_t>(i));
      out.insert(out.end(), {(4u << 16) | kTypeVector, spirv[i + 1], spirv[i + 2], 4u});
    } else if (!out.empty()) {
      out.insert(out.end(), spirv.begin() + static_cast<std::ptrdiff_t>(i),
                 spirv.begin() + static_cast<std::ptrdiff_t>(i + words));
    }
    i += words;
  }
  return out;
}

}  // namespace

StatusOr<ShaderReflection> reflect(std::span<const uint32_t> spirv) {
  if (spirv.size() < 5 || spirv[0] != 0x07230203u) {
    return invalid_argument("SPIR-V reflection: the module is not SPIR-V (bad magic number or too short)");
  }
  const std::vector<uint32_t> rewritten = without_cooperative_matrix_types(spirv);
  if (!rewritten.empty()) spirv = rewritten;
  SpvcContext c;
  if (spvc_context_create(&c.ctx) != SPVC_SUCCESS) return out_of_memory("SPIRV-Cross could not create a context");
  spvc_parsed_ir ir = nullptr;
  if (spvc_context_parse_spirv(c.ctx, spirv.data(), spirv.size(), &ir) != SPVC_SUCCESS) {
    return c.error("the module does not parse");
  }
  spvc_compiler comp = nullptr;
  if (spvc_context_create_compiler(c.ctx, SPVC_BACKEND_NONE, ir, SPVC_CAPTURE_MODE_TAKE_OWNERSHIP, &comp) !=
      SPVC_SUCCESS) {
    return c.error("cannot create a reflection compiler");
  }
  if (spvc_compiler_get_execution_model(comp) != SpvExecutionModelGLCompute) {
    return invalid_argument("SPIR-V reflection: the module's entry point is not a compute shader");
  }
  spvc_resources resources = nullptr;
  if (spvc_compiler_create_shader_resources(comp, &resources) != SPVC_SUCCESS) {
    return c.error("cannot enumerate resources");
  }

  ShaderReflection out;
  struct Kind {
    spvc_resource_type type;
    VkDescriptorType descriptor;
    VkDescriptorType buffer_dim_descriptor;  // for Dim=Buffer images
  };
  const Kind kinds[] = {
      {SPVC_RESOURCE_TYPE_UNIFORM_BUFFER, VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER},
      {SPVC_RESOURCE_TYPE_STORAGE_BUFFER, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER},
      {SPVC_RESOURCE_TYPE_SAMPLED_IMAGE, VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER},
      {SPVC_RESOURCE_TYPE_SEPARATE_IMAGE, VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE, VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER},
      {SPVC_RESOURCE_TYPE_STORAGE_IMAGE, VK_DESCRIPTOR_TYPE_STORAGE_IMAGE, VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER},
      {SPVC_RESOURCE_TYPE_SEPARATE_SAMPLERS, VK_DESCRIPTOR_TYPE_SAMPLER, VK_DESCRIPTOR_TYPE_SAMPLER},
  };
  for (const Kind& kind : kinds) {
    const spvc_reflected_resource* list = nullptr;
    size_t count = 0;
    if (spvc_resources_get_resource_list_for_type(resources, kind.type, &list, &count) != SPVC_SUCCESS) {
      return c.error("cannot list resources");
    }
    for (size_t i = 0; i < count; ++i) {
      ReflectedBinding b;
      b.name = list[i].name != nullptr ? list[i].name : "";
      // Optimized SPIR-V carries no names; SPIRV-Cross then invents "_38_40".
      if (b.name.size() > 1 && b.name[0] == '_' && std::isdigit(static_cast<unsigned char>(b.name[1]))) b.name.clear();
      b.set = spvc_compiler_get_decoration(comp, list[i].id, SpvDecorationDescriptorSet);
      b.binding = spvc_compiler_get_decoration(comp, list[i].id, SpvDecorationBinding);
      spvc_type type = spvc_compiler_get_type_handle(comp, list[i].type_id);
      spvc_type base = spvc_compiler_get_type_handle(comp, list[i].base_type_id);
      b.type = kind.descriptor;
      if (kind.descriptor != kind.buffer_dim_descriptor && spvc_type_get_image_dimension(base) == SpvDimBuffer) {
        b.type = kind.buffer_dim_descriptor;
      }
      unsigned dims = spvc_type_get_num_array_dimensions(type);
      for (unsigned d = 0; d < dims; ++d) {
        unsigned size = spvc_type_get_array_dimension(type, d);
        if (!spvc_type_array_dimension_is_literal(type, d) || size == 0) {
          return invalid_argument("SPIR-V reflection: binding '" + b.name + "' (set " + std::to_string(b.set) +
                                  ", binding " + std::to_string(b.binding) +
                                  ") is an unsized or specialization-sized descriptor array, which Kiln does not bind");
        }
        b.count *= size;
      }
      out.bindings.push_back(std::move(b));
    }
  }
  for (spvc_resource_type unsupported : {SPVC_RESOURCE_TYPE_SUBPASS_INPUT, SPVC_RESOURCE_TYPE_ACCELERATION_STRUCTURE}) {
    const spvc_reflected_resource* list = nullptr;
    size_t count = 0;
    if (spvc_resources_get_resource_list_for_type(resources, unsupported, &list, &count) == SPVC_SUCCESS && count > 0) {
      return invalid_argument(std::string("SPIR-V reflection: resource '") + (list[0].name ? list[0].name : "") +
                              "' is an input attachment or acceleration structure, which Kiln does not bind");
    }
  }
  std::sort(out.bindings.begin(), out.bindings.end(), [](const ReflectedBinding& a, const ReflectedBinding& b) {
    return a.set != b.set ? a.set < b.set : a.binding < b.binding;
  });
  // Variables of one descriptor kind at one binding alias its memory (a
  // buffer read both as scalars and as vectors, planner/map_vector.h): one
  // binding. Different kinds at one binding cannot be bound.
  for (size_t i = 1; i < out.bindings.size();) {
    const ReflectedBinding& a = out.bindings[i - 1];
    const ReflectedBinding& b = out.bindings[i];
    if (a.set == b.set && a.binding == b.binding && a.type == b.type && a.count == b.count) {
      out.bindings.erase(out.bindings.begin() + static_cast<std::ptrdiff_t>(i));
      continue;
    }
    ++i;
  }
  for (size_t i = 1; i < out.bindings.size(); ++i) {
    if (out.bindings[i].set == out.bindings[i - 1].set && out.bindings[i].binding == out.bindings[i - 1].binding) {
      return invalid_argument("SPIR-V reflection: '" + out.bindings[i - 1].name + "' and '" + out.bindings[i].name +
                              "' share set " + std::to_string(out.bindings[i].set) + ", binding " +
                              std::to_string(out.bindings[i].binding));
    }
  }

  const spvc_reflected_resource* push = nullptr;
  size_t push_count = 0;
  if (spvc_resources_get_resource_list_for_type(resources, SPVC_RESOURCE_TYPE_PUSH_CONSTANT, &push, &push_count) ==
          SPVC_SUCCESS &&
      push_count > 0) {
    size_t size = 0;
    if (spvc_compiler_get_declared_struct_size(comp, spvc_compiler_get_type_handle(comp, push[0].base_type_id),
                                               &size) != SPVC_SUCCESS) {
      return c.error("cannot size the push-constant block");
    }
    out.push_constant_size = static_cast<uint32_t>(size);
  }

  spvc_specialization_constant wg[3] = {};
  spvc_compiler_get_work_group_size_specialization_constants(comp, &wg[0], &wg[1], &wg[2]);
  for (unsigned i = 0; i < 3; ++i) {
    out.local_size[i] = spvc_compiler_get_execution_mode_argument_by_index(comp, SpvExecutionModeLocalSize, i);
    if (wg[i].id != 0) {
      out.local_size_spec_id[i] = wg[i].constant_id;
      spvc_constant constant = spvc_compiler_get_constant_handle(comp, wg[i].id);
      if (constant != nullptr) out.local_size[i] = spvc_constant_get_scalar_u32(constant, 0, 0);
    }
    if (out.local_size[i] == 0) out.local_size[i] = 1;
  }

  const spvc_specialization_constant* specs = nullptr;
  size_t spec_count = 0;
  if (spvc_compiler_get_specialization_constants(comp, &specs, &spec_count) == SPVC_SUCCESS) {
    for (size_t i = 0; i < spec_count; ++i) {
      const char* name = spvc_compiler_get_name(comp, specs[i].id);
      out.spec_constants.push_back({specs[i].constant_id, name != nullptr ? name : ""});
    }
  }
  return out;
}

}  // namespace kiln::vk
