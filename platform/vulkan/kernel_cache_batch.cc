// KernelCache's batches (kernel_cache.h): a plan's distinct shaders compiled,
// and its distinct pipelines created, on several threads at once.
//
// Both batches have the same shape: merge requests with equal cache keys
// (first occurrence order), build each distinct entry as one job through the
// single-entry path (which already serializes the maps and counters under
// the cache's mutex and writes files atomically), then hand every request
// the result of its entry. Each job writes only its own result slot, so the
// threads share nothing but the cache itself.
//
// Threads: shaderc_compile_into_spv "may be safely called from multiple
// threads without explicit synchronization" on one compiler (shaderc.h), and
// SPIRV-Cross reflection uses a context per call. vkCreateDescriptorSetLayout,
// vkCreatePipelineLayout and vkCreateComputePipelines need no external
// synchronization of the device, and the VkPipelineCache is internally
// synchronized (it is created without
// VK_PIPELINE_CACHE_CREATE_EXTERNALLY_SYNCHRONIZED_BIT). Creating pipelines
// on threads rather than in one vkCreateComputePipelines call with many
// create infos is what lets the driver's compiler use several cores: drivers
// (lavapipe, and the desktop ones as far as documented) build the create
// infos of one call one after another.
#include <atomic>
#include <chrono>
#include <unordered_map>

#include "platform/vulkan/kernel_cache.h"
#include "platform/vulkan/parallel_jobs.h"

namespace kiln::vk {
namespace {

// Requests grouped by key, distinct keys in order of first occurrence.
struct Merged {
  std::vector<size_t> first;     // distinct entry -> its first request
  std::vector<size_t> entry_of;  // request -> distinct entry
};

Merged merge_equal_keys(const std::vector<std::string>& keys) {
  Merged m;
  m.entry_of.resize(keys.size());
  std::unordered_map<std::string_view, size_t> entry;
  for (size_t i = 0; i < keys.size(); ++i) {
    auto [it, inserted] = entry.emplace(keys[i], m.first.size());
    if (inserted) m.first.push_back(i);
    m.entry_of[i] = it->second;
  }
  return m;
}

// Builds every distinct entry with build(entry) -> StatusOr<T>, on up to
// `threads` threads, and returns the per-request results; on failure the
// error of the lowest failing entry, which is also the first failing request
// (entries are numbered by first occurrence, and parallel_jobs runs every
// entry below one that ran).
template <typename T, typename Build>
StatusOr<std::vector<T>> build_merged(const Merged& merged, unsigned threads, CompileBatchReport* report,
                                      const Build& build) {
  const size_t distinct = merged.first.size();
  std::vector<T> built(distinct, nullptr);
  std::vector<Status> errors(distinct);
  std::vector<double> took_ms(distinct, -1);
  std::atomic<bool> failed{false};
  const unsigned used = parallel_jobs(
      distinct, threads,
      [&](size_t e) {
        const auto start = std::chrono::steady_clock::now();
        auto r = build(e);
        took_ms[e] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        if (r.ok()) {
          built[e] = r.value();
        } else {
          errors[e] = std::move(r).status();
          failed.store(true, std::memory_order_relaxed);
        }
      },
      [&] { return failed.load(std::memory_order_relaxed); });
  if (report != nullptr) {
    report->threads = used;
    report->distinct = distinct;
    for (size_t e = 0; e < distinct; ++e)
      if (took_ms[e] >= 0 && (report->slowest == SIZE_MAX || took_ms[e] > report->slowest_ms)) {
        report->slowest = merged.first[e];
        report->slowest_ms = took_ms[e];
      }
  }
  for (size_t e = 0; e < distinct; ++e) {
    if (errors[e].ok()) continue;
    if (report != nullptr) report->failed = merged.first[e];
    return errors[e];
  }
  std::vector<T> out(merged.entry_of.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = built[merged.entry_of[i]];
  return out;
}

}  // namespace

StatusOr<std::vector<const CompiledShader*>> KernelCache::shaders(std::span<const ShaderRequest> requests,
                                                                  unsigned threads, CompileBatchReport* report) {
  if (report != nullptr) *report = CompileBatchReport{};
  KILN_RETURN_IF_ERROR(device_.status());
  std::vector<ShaderKey> keys;
  keys.reserve(requests.size());
  std::vector<std::string> key_strings;
  key_strings.reserve(requests.size());
  const CompileOptions default_options;
  for (const ShaderRequest& r : requests) {
    keys.push_back(shader_key(r.glsl, r.options ? *r.options : default_options));
    key_strings.push_back(keys.back().key);
  }
  const Merged merged = merge_equal_keys(key_strings);
  auto out = build_merged<const CompiledShader*>(merged, threads, report, [&](size_t e) {
    const size_t i = merged.first[e];
    return shader_for(keys[i], requests[i].glsl, requests[i].options ? *requests[i].options : default_options);
  });
  if (out.ok()) {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.memory_hits += requests.size() - merged.first.size();  // as the serial path counts repeats
  }
  return out;
}

StatusOr<std::vector<const ComputePipeline*>> KernelCache::pipelines(std::span<const PipelineRequest> requests,
                                                                     unsigned threads, CompileBatchReport* report) {
  if (report != nullptr) *report = CompileBatchReport{};
  KILN_RETURN_IF_ERROR(device_.status());
  std::vector<std::string> keys;
  keys.reserve(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    if (requests[i].shader == nullptr) {
      if (report != nullptr) report->failed = i;
      return invalid_argument("pipeline request " + std::to_string(i) + " ('" + std::string(requests[i].name) +
                              "') has no shader");
    }
    keys.push_back(pipeline_key(*requests[i].shader, requests[i].specialization));
  }
  const Merged merged = merge_equal_keys(keys);
  auto out = build_merged<const ComputePipeline*>(merged, threads, report, [&](size_t e) {
    const size_t i = merged.first[e];
    return pipeline_for(keys[i], *requests[i].shader, requests[i].specialization, std::string(requests[i].name));
  });
  if (out.ok()) {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.pipeline_hits += requests.size() - merged.first.size();
  }
  return out;
}

}  // namespace kiln::vk
