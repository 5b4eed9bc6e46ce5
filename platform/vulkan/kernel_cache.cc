// The in-memory + on-disk kernel cache; see kernel_cache.h.
#include "platform/vulkan/kernel_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace kiln::vk {
namespace {

constexpr char kSpirvMagic[8] = {'K', 'I', 'L', 'N', 'S', 'P', 'V', '1'};
constexpr char kPipelineMagic[8] = {'K', 'I', 'L', 'N', 'P', 'C', 'D', '1'};
constexpr uint64_t kSecondSeed = 0x84222325cbf29ce4ull;

struct SpirvHeader {
  char magic[8];
  uint64_t material_size;
  uint64_t spirv_words;
  uint64_t checksum;
};

struct PipelineHeader {
  char magic[8];
  uint64_t size;
  uint64_t checksum;
};

std::string hex64(uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64, v);
  return buf;
}

void append_field(std::string* out, std::string_view tag, std::string_view value) {
  // Length-prefixed so no two different inputs serialize alike.
  *out += tag;
  *out += std::to_string(value.size());
  *out += ':';
  out->append(value);
  *out += '\n';
}

bool read_file(const std::string& path, std::string* out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  out->clear();
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0) {
      ::close(fd);
      return false;
    }
    if (n == 0) break;
    out->append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return true;
}

// Writes `parts` to a unique temporary file beside `path`, then renames it
// over `path`, so readers see the old file or the complete new one.
bool write_file_atomically(const std::string& path, std::initializer_list<std::string_view> parts) {
  static std::atomic<uint64_t> counter{0};
  std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  bool ok = true;
  for (std::string_view part : parts) {
    const char* p = part.data();
    size_t left = part.size();
    while (ok && left > 0) {
      ssize_t n = ::write(fd, p, left);
      if (n <= 0) {
        ok = false;
        break;
      }
      p += n;
      left -= static_cast<size_t>(n);
    }
  }
  ok = (::close(fd) == 0) && ok;
  if (ok) ok = ::rename(tmp.c_str(), path.c_str()) == 0;
  if (!ok) ::unlink(tmp.c_str());
  return ok;
}

std::string_view bytes_of(const void* p, size_t n) { return std::string_view(static_cast<const char*>(p), n); }

}  // namespace

uint64_t fnv1a64(std::string_view data, uint64_t seed) {
  uint64_t h = seed;
  for (unsigned char c : data) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string KernelCache::default_directory() {
  if (const char* dir = std::getenv("KILN_CACHE_DIR"); dir != nullptr && *dir != '\0') return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') return std::string(xdg) + "/kiln";
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') return std::string(home) + "/.cache/kiln";
  return "";
}

StatusOr<std::unique_ptr<KernelCache>> KernelCache::open(Device& device, const ShaderCompiler& compiler,
                                                         const KernelCacheOptions& options) {
  KILN_RETURN_IF_ERROR(device.status());
  std::unique_ptr<KernelCache> cache(new KernelCache(device, compiler));
  const Capabilities& caps = device.capabilities();
  std::string uuid;
  for (uint8_t b : caps.pipeline_cache_uuid) {
    char buf[4];
    std::snprintf(buf, sizeof(buf), "%02x", b);
    uuid += buf;
  }
  char name[128];
  std::snprintf(name, sizeof(name), "pipelines-%04x-%04x-%08x-%s.bin", caps.vendor_id, caps.device_id,
                caps.driver_version, uuid.c_str());
  cache->pipeline_cache_file_ = name;

  if (options.use_disk) {
    std::string dir = options.directory.empty() ? default_directory() : options.directory;
    if (!dir.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(std::filesystem::path(dir) / "spirv", ec);
      if (!ec) std::filesystem::create_directories(std::filesystem::path(dir) / "pipelines", ec);
      if (!ec) cache->directory_ = dir;
    }
  }

  // Initial pipeline-cache data: the host's bytes, else the file.
  std::string initial;
  if (!options.initial_pipeline_cache.empty()) {
    initial.assign(options.initial_pipeline_cache.begin(), options.initial_pipeline_cache.end());
  } else if (cache->disk_enabled()) {
    std::string file;
    if (read_file(cache->directory_ + "/pipelines/" + cache->pipeline_cache_file_, &file)) {
      PipelineHeader h{};
      if (file.size() >= sizeof(h)) std::memcpy(&h, file.data(), sizeof(h));
      std::string_view body = std::string_view(file).substr(std::min(file.size(), sizeof(h)));
      if (file.size() >= sizeof(h) && std::memcmp(h.magic, kPipelineMagic, 8) == 0 && h.size == body.size() &&
          h.checksum == fnv1a64(body)) {
        initial.assign(body);
      } else {
        ++cache->stats_.corrupt_files;
      }
    }
  }
  std::span<const uint8_t> initial_bytes(reinterpret_cast<const uint8_t*>(initial.data()), initial.size());
  if (!initial.empty() && !cache->pipeline_cache_matches(initial_bytes)) {
    ++cache->stats_.corrupt_files;  // another device's or driver's data: start empty
    initial.clear();
  }
  VkPipelineCacheCreateInfo info{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  info.initialDataSize = initial.size();
  info.pInitialData = initial.empty() ? nullptr : initial.data();
  KILN_RETURN_IF_ERROR(device.check(
      device.fn().vkCreatePipelineCache(device.handle(), &info, nullptr, &cache->pipeline_cache_), "vkCreatePipelineCache"));
  cache->stats_.pipeline_cache_bytes_loaded = initial.size();
  return cache;
}

KernelCache::~KernelCache() {
  if (disk_enabled() && pipeline_cache_ != VK_NULL_HANDLE && !device_.lost()) (void)save_pipeline_cache();
  pipelines_.clear();
  if (pipeline_cache_ != VK_NULL_HANDLE) device_.fn().vkDestroyPipelineCache(device_.handle(), pipeline_cache_, nullptr);
}

bool KernelCache::pipeline_cache_matches(std::span<const uint8_t> data) const {
  // VkPipelineCacheHeaderVersionOne: length, version, vendor, device, UUID.
  // Some drivers crash on foreign data instead of rejecting it, so check first.
  if (data.size() < 32) return false;
  uint32_t words[4];
  std::memcpy(words, data.data(), sizeof(words));
  const Capabilities& caps = device_.capabilities();
  return words[0] >= 32 && words[0] <= data.size() && words[1] == VK_PIPELINE_CACHE_HEADER_VERSION_ONE &&
         words[2] == caps.vendor_id && words[3] == caps.device_id &&
         std::memcmp(data.data() + 16, caps.pipeline_cache_uuid.data(), VK_UUID_SIZE) == 0;
}

std::string KernelCache::spirv_path(const std::string& key) const { return directory_ + "/spirv/" + key + ".spv"; }

bool KernelCache::read_spirv_file(const std::string& key, const std::string& material, std::vector<uint32_t>* spirv) {
  std::string file;
  if (!read_file(spirv_path(key), &file)) return false;  // a plain miss
  SpirvHeader h{};
  bool ok = file.size() >= sizeof(h);
  if (ok) std::memcpy(&h, file.data(), sizeof(h));
  ok = ok && std::memcmp(h.magic, kSpirvMagic, 8) == 0 && h.spirv_words > 0 && h.spirv_words < (1ull << 40) &&
       h.material_size == material.size() && file.size() == sizeof(h) + h.material_size + h.spirv_words * 4;
  std::string_view body;
  if (ok) {
    body = std::string_view(file).substr(sizeof(h));
    ok = body.substr(0, material.size()) == material && fnv1a64(body) == h.checksum;
  }
  if (ok) {
    spirv->resize(h.spirv_words);
    std::memcpy(spirv->data(), body.data() + material.size(), h.spirv_words * 4);
    ok = (*spirv)[0] == 0x07230203u;
  }
  if (!ok) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.corrupt_files;
  }
  return ok;
}

void KernelCache::write_spirv_file(const std::string& key, const std::string& material,
                                   const std::vector<uint32_t>& spirv) {
  SpirvHeader h{};
  std::memcpy(h.magic, kSpirvMagic, 8);
  h.material_size = material.size();
  h.spirv_words = spirv.size();
  std::string_view code = bytes_of(spirv.data(), spirv.size() * 4);
  h.checksum = fnv1a64(code, fnv1a64(material));
  if (!write_file_atomically(spirv_path(key), {bytes_of(&h, sizeof(h)), material, code})) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.write_failures;
  }
}

KernelCache::ShaderKey KernelCache::shader_key(std::string_view glsl, const CompileOptions& options) const {
  // Everything that determines the SPIR-V, and nothing else (the source name
  // only matters when it is embedded as debug info).
  std::string material = "kiln-spirv-v1\n";
  append_field(&material, "compiler", compiler_.version());
  append_field(&material, "vulkan", std::to_string(options.vulkan_version));
  append_field(&material, "opt", options.optimize ? "1" : "0");
  append_field(&material, "debug", options.debug_info ? options.source_name : "");
  // Only when set, so keys of every other shader stay what they were.
  if (options.cooperative_matrix_khr) append_field(&material, "coopmat", "khr-v1");
  for (const auto& [name, value] : options.defines) {
    append_field(&material, "D", name);
    append_field(&material, "=", value);
  }
  for (const auto& [name, content] : options.includes) {
    append_field(&material, "I", name);
    append_field(&material, "=", content);
  }
  append_field(&material, "source", glsl);
  std::string key = hex64(fnv1a64(material)) + hex64(fnv1a64(material, kSecondSeed));
  return {std::move(key), std::move(material)};
}

std::string KernelCache::pipeline_key(const CompiledShader& shader,
                                      std::span<const SpecializationValue> specialization) {
  std::string key = shader.key;
  for (const SpecializationValue& s : specialization) key += ":" + std::to_string(s.constant_id) + "=" + std::to_string(s.bits);
  return key;
}

StatusOr<const CompiledShader*> KernelCache::shader(std::string_view glsl, const CompileOptions& options) {
  KILN_RETURN_IF_ERROR(device_.status());
  return shader_for(shader_key(glsl, options), glsl, options);
}

StatusOr<const CompiledShader*> KernelCache::shader_for(const ShaderKey& k, std::string_view glsl,
                                                        const CompileOptions& options) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = shaders_.find(k.key);
    if (it != shaders_.end()) {
      ++stats_.memory_hits;
      return static_cast<const CompiledShader*>(it->second.get());
    }
  }
  auto compiled = std::make_unique<CompiledShader>();
  compiled->key = k.key;
  bool from_disk = disk_enabled() && read_spirv_file(k.key, k.material, &compiled->spirv);
  if (from_disk) {
    StatusOr<ShaderReflection> r = reflect(compiled->spirv);
    if (r.ok()) {
      compiled->reflection = std::move(r).value();
    } else {
      from_disk = false;  // parses as a cache file but not as a shader: recompile
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.corrupt_files;
    }
  }
  if (!from_disk) {
    KILN_ASSIGN_OR_RETURN(compiled->spirv, compiler_.compile(glsl, options));
    KILN_ASSIGN_OR_RETURN(compiled->reflection, reflect(compiled->spirv));
    if (disk_enabled()) write_spirv_file(k.key, k.material, compiled->spirv);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  ++(from_disk ? stats_.disk_hits : stats_.compiles);
  auto [it, inserted] = shaders_.emplace(k.key, std::move(compiled));  // a racing thread may have won; keep its copy
  return static_cast<const CompiledShader*>(it->second.get());
}

StatusOr<const ComputePipeline*> KernelCache::pipeline(std::string_view glsl, const CompileOptions& options,
                                                       std::span<const SpecializationValue> specialization,
                                                       std::string name) {
  KILN_ASSIGN_OR_RETURN(const CompiledShader* shader, this->shader(glsl, options));
  if (name.empty()) name = options.source_name;
  return pipeline_for(pipeline_key(*shader, specialization), *shader, specialization, std::move(name));
}

StatusOr<const ComputePipeline*> KernelCache::pipeline_for(const std::string& key, const CompiledShader& shader,
                                                           std::span<const SpecializationValue> specialization,
                                                           std::string name) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = pipelines_.find(key);
    if (it != pipelines_.end()) {
      ++stats_.pipeline_hits;
      return static_cast<const ComputePipeline*>(it->second.get());
    }
  }
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<ComputePipeline> created,
                        ComputePipeline::create(device_, shader.spirv, shader.reflection, specialization,
                                                pipeline_cache_, std::move(name)));
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.pipelines_created;
  auto [it, inserted] = pipelines_.emplace(key, std::move(created));  // a racing thread may have won; keep its copy
  return static_cast<const ComputePipeline*>(it->second.get());
}

StatusOr<std::vector<uint8_t>> KernelCache::pipeline_cache_data() const {
  KILN_RETURN_IF_ERROR(device_.status());
  const VolkDeviceTable& fn = device_.fn();
  size_t size = 0;
  KILN_RETURN_IF_ERROR(device_.check(fn.vkGetPipelineCacheData(device_.handle(), pipeline_cache_, &size, nullptr),
                                     "vkGetPipelineCacheData"));
  std::vector<uint8_t> data(size);
  VkResult r = fn.vkGetPipelineCacheData(device_.handle(), pipeline_cache_, &size, data.data());
  KILN_RETURN_IF_ERROR(device_.check(r, "vkGetPipelineCacheData"));
  data.resize(size);
  return data;
}

Status KernelCache::save_pipeline_cache() {
  if (!disk_enabled()) return unavailable("the kernel cache has no directory; pipeline cache not saved");
  KILN_ASSIGN_OR_RETURN(std::vector<uint8_t> data, pipeline_cache_data());
  PipelineHeader h{};
  std::memcpy(h.magic, kPipelineMagic, 8);
  std::string_view body = bytes_of(data.data(), data.size());
  h.size = data.size();
  h.checksum = fnv1a64(body);
  std::string path = directory_ + "/pipelines/" + pipeline_cache_file_;
  if (!write_file_atomically(path, {bytes_of(&h, sizeof(h)), body})) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.write_failures;
    return internal_error("could not write the pipeline cache file " + path);
  }
  return ok_status();
}

KernelCacheStats KernelCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace kiln::vk
