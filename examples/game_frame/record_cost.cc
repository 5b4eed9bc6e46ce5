// measure_record_cost (record_cost.h).
#include "record_cost.h"

#include <chrono>
#include <cstdint>
#include <cstring>

#include "frame_loop.h"

namespace game {

namespace {

using Clock = std::chrono::steady_clock;

double us_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

}  // namespace

RecordCost measure_record_cost(GameGpu& gpu, kiln_session_t* session, int repetitions) {
  const VkDevice device = gpu.device();
  VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pool_info.queueFamilyIndex = gpu.queue_family();
  VkCommandPool pool = VK_NULL_HANDLE;
  check_vk(vkCreateCommandPool(device, &pool_info, nullptr, &pool), "vkCreateCommandPool");
  VkCommandBufferAllocateInfo info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  info.commandPool = pool;
  info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  info.commandBufferCount = 1;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  check_vk(vkAllocateCommandBuffers(device, &info, &cmd), "vkAllocateCommandBuffers");
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  kiln_record_options_t via_secondary{sizeof(via_secondary)};
  via_secondary.flags = KILN_RECORD_VIA_SECONDARY;
  via_secondary.queue_family_index = gpu.queue_family();
  RecordCost cost;
  std::vector<uint8_t> frame_work(64u << 20);
  // One hot repetition more than asked for, dropped: the first recording
  // warms the driver's command memory (as a game's first frames do).
  for (int r = 0; r <= 2 * repetitions; ++r) {
    const bool cold = r > repetitions;
    if (cold) std::memset(frame_work.data(), r & 0xff, frame_work.size());
    check_vk(vkResetCommandPool(device, pool, 0), "vkResetCommandPool");
    const Clock::time_point t0 = Clock::now();
    check_vk(vkBeginCommandBuffer(cmd, &begin), "vkBeginCommandBuffer");
    const Clock::time_point t1 = Clock::now();
    check_kiln(kiln_session_record(session, cmd), "kiln_session_record");
    const Clock::time_point t2 = Clock::now();
    check_vk(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
    const Clock::time_point t3 = Clock::now();
    // The same bindings through Kiln's secondary command buffer.
    check_vk(vkResetCommandPool(device, pool, 0), "vkResetCommandPool");
    check_vk(vkBeginCommandBuffer(cmd, &begin), "vkBeginCommandBuffer");
    const Clock::time_point t4 = Clock::now();
    check_kiln(kiln_session_record_with_options(session, cmd, &via_secondary), "kiln_session_record_with_options");
    const Clock::time_point t5 = Clock::now();
    check_vk(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
    if (r == 0) continue;
    (cold ? cost.cold_us : cost.hot_us).push_back(us_between(t1, t2));
    if (!cold) cost.empty_us.push_back(us_between(t0, t1) + us_between(t2, t3));
    if (!cold) cost.via_secondary_us.push_back(us_between(t4, t5));
  }
  vkDestroyCommandPool(device, pool, nullptr);
  return cost;
}

}  // namespace game
