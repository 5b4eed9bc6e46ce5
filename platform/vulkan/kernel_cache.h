// The kernel cache: compiled SPIR-V and VkPipelineCache data, in memory and
// on disk, so a second run (or a second session) compiles nothing.
//
// SPIR-V is keyed by a hash of everything that determines it (source,
// defines, includes, entry point, target environment, optimization, compiler
// version); pipeline-cache data by the device and driver (vendor, device id,
// driver version, pipelineCacheUUID). Files are written atomically (temp file
// + rename), and a corrupt, truncated or foreign file is ignored and
// replaced, never fatal. Counters make hits observable. The pipeline-cache
// bytes are also exposed so an embedding host can persist them itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/base/status.h"
#include "platform/vulkan/device.h"
#include "platform/vulkan/pipeline.h"
#include "platform/vulkan/shader_compiler.h"

namespace kiln::vk {

struct KernelCacheOptions {
  // Where the files go. Empty: $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln,
  // else $HOME/.cache/kiln. When no directory can be used the cache works
  // in memory only.
  std::string directory;
  // false: memory only, no files read or written.
  bool use_disk = true;
  // Pipeline-cache bytes to start from instead of the file (a host that
  // persists them itself); ignored unless they match this device.
  std::vector<uint8_t> initial_pipeline_cache;
};

struct KernelCacheStats {
  uint64_t memory_hits = 0;        // shader found in memory
  uint64_t disk_hits = 0;          // SPIR-V read from a cache file
  uint64_t compiles = 0;           // shaderc runs
  uint64_t pipeline_hits = 0;      // pipeline found in memory
  uint64_t pipelines_created = 0;  // vkCreateComputePipelines runs
  uint64_t corrupt_files = 0;      // cache files ignored as corrupt or foreign
  uint64_t write_failures = 0;     // files that could not be written
  uint64_t pipeline_cache_bytes_loaded = 0;  // driver cache data accepted at open
};

// A compiled and reflected shader, owned by the cache.
struct CompiledShader {
  std::string key;  // hex hash of the inputs
  std::vector<uint32_t> spirv;
  ShaderReflection reflection;
};

// One shader of a batch (KernelCache::shaders); both are borrowed for the call.
struct ShaderRequest {
  std::string_view glsl;
  const CompileOptions* options = nullptr;
};

// One pipeline of a batch (KernelCache::pipelines); borrowed for the call.
struct PipelineRequest {
  const CompiledShader* shader = nullptr;  // from this cache
  std::span<const SpecializationValue> specialization;
  std::string_view name;  // labels errors
};

// What a batch did besides its results.
struct CompileBatchReport {
  unsigned threads = 0;      // threads that ran jobs (0: nothing was left to build)
  size_t distinct = 0;       // requests left after merging equal cache keys
  size_t failed = SIZE_MAX;  // the request whose error was returned
  // The entry that took longest to build or to fetch from the cache (a
  // batch's floor on any number of threads: one driver compile can outlast
  // all the others together), as its first request, and its milliseconds;
  // SIZE_MAX when the batch had no entry.
  size_t slowest = SIZE_MAX;
  double slowest_ms = 0;
};

class KernelCache {
 public:
  // Opens (creating if needed) the cache for `device`, loading pipeline-cache
  // data for this device/driver when present. `device` and `compiler` are
  // borrowed and must outlive the cache. Errors: kDeviceLost, VkResult errors
  // creating the VkPipelineCache. A missing or unwritable directory is not an
  // error (the cache stays in memory; see disk_enabled()).
  static StatusOr<std::unique_ptr<KernelCache>> open(Device& device, const ShaderCompiler& compiler,
                                                     const KernelCacheOptions& options = {});
  // Saves the pipeline cache (best effort) and destroys what it created.
  // Pipelines returned by pipeline() die with the cache.
  ~KernelCache();
  KernelCache(const KernelCache&) = delete;
  KernelCache& operator=(const KernelCache&) = delete;

  // The compiled shader for `glsl` + `options`: from memory, else from disk,
  // else compiled (and written to disk). The pointer stays valid for the
  // cache's lifetime. Errors: compile and reflection errors. Thread-safe.
  StatusOr<const CompiledShader*> shader(std::string_view glsl, const CompileOptions& options = {});

  // The pipeline for that shader with `specialization`, created once through
  // the VkPipelineCache and then served from memory. `name` labels errors.
  // Thread-safe; the pipeline lives as long as the cache.
  StatusOr<const ComputePipeline*> pipeline(std::string_view glsl, const CompileOptions& options,
                                            std::span<const SpecializationValue> specialization = {},
                                            std::string name = "");

  // Batches: the shaders (pipelines) for every request, in request order.
  // Requests with equal cache keys are merged before any work starts, so
  // nothing is built twice; what memory does not hold is built on up to
  // `threads` threads (1: on the calling thread, one after another). The
  // results and the counters in stats() do not depend on `threads` or on
  // timing: a merged request counts as a memory hit, as it would serially.
  // Errors: the error of the first failing request in request order (its
  // compile error names the shader's source_name, a pipeline error the
  // request's name); report->failed says which. Work not yet started when a
  // request fails is skipped. Thread-safe; concurrent batches (or shader()
  // calls) may each build an entry neither found yet, and the first insert
  // wins, as with two concurrent shader() calls.
  StatusOr<std::vector<const CompiledShader*>> shaders(std::span<const ShaderRequest> requests, unsigned threads,
                                                       CompileBatchReport* report = nullptr);
  StatusOr<std::vector<const ComputePipeline*>> pipelines(std::span<const PipelineRequest> requests,
                                                          unsigned threads, CompileBatchReport* report = nullptr);

  // Writes the VkPipelineCache data to disk now (atomically). Errors:
  // kUnavailable when the disk cache is off, write errors as kInternal.
  Status save_pipeline_cache();
  // The VkPipelineCache data, for a host that persists it itself.
  StatusOr<std::vector<uint8_t>> pipeline_cache_data() const;
  VkPipelineCache vk_pipeline_cache() const { return pipeline_cache_; }

  KernelCacheStats stats() const;
  bool disk_enabled() const { return !directory_.empty(); }
  const std::string& directory() const { return directory_; }
  // The file name the pipeline cache of this device/driver uses.
  const std::string& pipeline_cache_file() const { return pipeline_cache_file_; }

  // The directory KernelCacheOptions{} would use ("" when none).
  static std::string default_directory();

 private:
  KernelCache(Device& device, const ShaderCompiler& compiler) : device_(device), compiler_(compiler) {}
  // The cache key of a shader and the text it hashes (what a SPIR-V file
  // records to rule out hash collisions).
  struct ShaderKey {
    std::string key;
    std::string material;
  };
  ShaderKey shader_key(std::string_view glsl, const CompileOptions& options) const;
  static std::string pipeline_key(const CompiledShader& shader, std::span<const SpecializationValue> specialization);
  // The shader / pipeline under a key computed above: memory, else disk or
  // a build.
  StatusOr<const CompiledShader*> shader_for(const ShaderKey& key, std::string_view glsl, const CompileOptions& options);
  StatusOr<const ComputePipeline*> pipeline_for(const std::string& key, const CompiledShader& shader,
                                                std::span<const SpecializationValue> specialization, std::string name);
  std::string spirv_path(const std::string& key) const;
  bool read_spirv_file(const std::string& key, const std::string& key_material, std::vector<uint32_t>* spirv);
  void write_spirv_file(const std::string& key, const std::string& key_material, const std::vector<uint32_t>& spirv);
  bool pipeline_cache_matches(std::span<const uint8_t> data) const;

  Device& device_;
  const ShaderCompiler& compiler_;
  std::string directory_;
  std::string pipeline_cache_file_;
  VkPipelineCache pipeline_cache_ = VK_NULL_HANDLE;

  mutable std::mutex mutex_;
  KernelCacheStats stats_;
  std::unordered_map<std::string, std::unique_ptr<CompiledShader>> shaders_;
  std::unordered_map<std::string, std::unique_ptr<ComputePipeline>> pipelines_;
};

// 64-bit FNV-1a, the hash behind cache keys and file checksums.
uint64_t fnv1a64(std::string_view data, uint64_t seed = 0xcbf29ce484222325ull);

}  // namespace kiln::vk
