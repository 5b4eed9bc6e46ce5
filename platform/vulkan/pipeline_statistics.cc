// Pipeline executable statistics; see pipeline_statistics.h.
#include "platform/vulkan/pipeline_statistics.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "platform/vulkan/vk_status.h"

namespace kiln::vk {
namespace {

std::mutex& file_mutex() {
  static std::mutex m;
  return m;
}

// One fwrite per call, so lines of pipelines created on other threads (or
// processes appending to the same file) do not interleave.
void append(const std::string& text) {
  const std::string path = pipeline_statistics_file();
  if (path.empty() || text.empty()) return;
  std::lock_guard<std::mutex> lock(file_mutex());
  std::FILE* f = std::fopen(path.c_str(), "a");
  if (f == nullptr) {
    static bool reported = false;
    if (!reported) std::fprintf(stderr, "kiln: cannot append pipeline statistics to '%s'\n", path.c_str());
    reported = true;
    return;
  }
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
}

std::string value_text(const VkPipelineExecutableStatisticKHR& s) {
  char buf[32];
  switch (s.format) {
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: return s.value.b32 ? "true" : "false";
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR:
      std::snprintf(buf, sizeof buf, "%" PRId64, s.value.i64);
      return buf;
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
      std::snprintf(buf, sizeof buf, "%" PRIu64, s.value.u64);
      return buf;
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR:
      std::snprintf(buf, sizeof buf, "%g", s.value.f64);
      return buf;
    default: return "?";
  }
}

// Tabs and line breaks in a driver's names would break the line format.
std::string field(const char* s) {
  std::string out(s);
  for (char& c : out)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return out;
}

}  // namespace

std::string pipeline_statistics_file() {
  const char* v = std::getenv("KILN_PIPELINE_STATS");
  return v != nullptr ? v : "";
}

StatusOr<std::vector<PipelineStatistic>> read_pipeline_statistics(Device& device, VkPipeline pipeline) {
  const VolkDeviceTable& fn = device.fn();
  VkPipelineInfoKHR info{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR};
  info.pipeline = pipeline;
  uint32_t count = 0;
  KILN_RETURN_IF_ERROR(vk_status(fn.vkGetPipelineExecutablePropertiesKHR(device.handle(), &info, &count, nullptr),
                                 "vkGetPipelineExecutablePropertiesKHR"));
  std::vector<VkPipelineExecutablePropertiesKHR> executables(count, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR});
  KILN_RETURN_IF_ERROR(vk_status(
      fn.vkGetPipelineExecutablePropertiesKHR(device.handle(), &info, &count, executables.data()),
      "vkGetPipelineExecutablePropertiesKHR"));
  std::vector<PipelineStatistic> out;
  for (uint32_t e = 0; e < count; ++e) {
    VkPipelineExecutableInfoKHR which{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
    which.pipeline = pipeline;
    which.executableIndex = e;
    uint32_t n = 0;
    KILN_RETURN_IF_ERROR(vk_status(fn.vkGetPipelineExecutableStatisticsKHR(device.handle(), &which, &n, nullptr),
                                   "vkGetPipelineExecutableStatisticsKHR"));
    std::vector<VkPipelineExecutableStatisticKHR> stats(n, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
    KILN_RETURN_IF_ERROR(vk_status(fn.vkGetPipelineExecutableStatisticsKHR(device.handle(), &which, &n, stats.data()),
                                   "vkGetPipelineExecutableStatisticsKHR"));
    for (uint32_t i = 0; i < n; ++i)
      out.push_back({field(executables[e].name), field(stats[i].name), value_text(stats[i])});
  }
  return out;
}

void append_pipeline_statistics(const std::string& name, const std::vector<PipelineStatistic>& stats) {
  std::string text;
  for (const PipelineStatistic& s : stats) text += name + "\t" + s.executable + "\t" + s.name + "\t" + s.value + "\n";
  append(text);
}

void note_pipeline_statistics(const std::string& line) { append("# " + line + "\n"); }

}  // namespace kiln::vk
