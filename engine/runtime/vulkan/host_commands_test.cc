// HostCommands without a device: a fake device table logs the commands a
// recording emits, so the tests check the exact command stream — barriers
// (planned, and between segments only inside one recording), pipeline binds
// skipped only after the same pipeline in the same recording, each
// dispatch's own descriptor sets and push-constant bytes, and the counts.
#include "engine/runtime/vulkan/host_commands.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace kiln::runtime {
namespace {

std::vector<std::string> g_log;

template <typename Handle>
Handle handle(uintptr_t id) {
  return reinterpret_cast<Handle>(id);
}
uintptr_t id(const void* h) { return reinterpret_cast<uintptr_t>(h); }

VKAPI_ATTR void VKAPI_CALL fake_barrier(VkCommandBuffer, VkPipelineStageFlags src, VkPipelineStageFlags dst,
                                        VkDependencyFlags, uint32_t memory_count, const VkMemoryBarrier* memory,
                                        uint32_t buffer_count, const VkBufferMemoryBarrier*, uint32_t image_count,
                                        const VkImageMemoryBarrier*) {
  const bool compute = src == VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT && dst == VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
  const VkAccessFlags rw = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  const bool shader = memory_count == 1 && memory->srcAccessMask == rw && memory->dstAccessMask == rw;
  g_log.push_back(compute && shader && buffer_count == 0 && image_count == 0 ? "barrier" : "odd barrier");
}
VKAPI_ATTR void VKAPI_CALL fake_bind_pipeline(VkCommandBuffer, VkPipelineBindPoint point, VkPipeline p) {
  g_log.push_back("pipeline " + std::to_string(id(p)) + (point == VK_PIPELINE_BIND_POINT_COMPUTE ? "" : " (not compute)"));
}
VKAPI_ATTR void VKAPI_CALL fake_bind_sets(VkCommandBuffer, VkPipelineBindPoint, VkPipelineLayout layout,
                                          uint32_t first, uint32_t count, const VkDescriptorSet* sets, uint32_t,
                                          const uint32_t*) {
  std::string line = "sets layout " + std::to_string(id(layout)) + " from " + std::to_string(first) + ":";
  for (uint32_t i = 0; i < count; ++i) line += " " + std::to_string(id(sets[i]));
  g_log.push_back(line);
}
VKAPI_ATTR void VKAPI_CALL fake_push(VkCommandBuffer, VkPipelineLayout layout, VkShaderStageFlags stages,
                                     uint32_t offset, uint32_t size, const void* values) {
  std::string line = "push layout " + std::to_string(id(layout)) + " at " + std::to_string(offset) + ":";
  for (uint32_t i = 0; i < size; ++i) line += " " + std::to_string(static_cast<const uint8_t*>(values)[i]);
  if (stages != VK_SHADER_STAGE_COMPUTE_BIT) line += " (not compute)";
  g_log.push_back(line);
}
VKAPI_ATTR void VKAPI_CALL fake_dispatch(VkCommandBuffer, uint32_t x, uint32_t y, uint32_t z) {
  g_log.push_back("dispatch " + std::to_string(x) + "x" + std::to_string(y) + "x" + std::to_string(z));
}

VolkDeviceTable fake_table() {
  VolkDeviceTable fn;
  std::memset(&fn, 0, sizeof(fn));  // any other command is a null call: a crash the test would show
  fn.vkCmdPipelineBarrier = fake_barrier;
  fn.vkCmdBindPipeline = fake_bind_pipeline;
  fn.vkCmdBindDescriptorSets = fake_bind_sets;
  fn.vkCmdPushConstants = fake_push;
  fn.vkCmdDispatch = fake_dispatch;
  return fn;
}

HostDispatch dispatch(uintptr_t pipeline, uintptr_t layout, uint32_t x, bool planned_barrier, bool segment_start) {
  HostDispatch d;
  d.pipeline = handle<VkPipeline>(pipeline);
  d.layout = handle<VkPipelineLayout>(layout);
  d.groups[0] = x;
  d.groups[1] = 1;
  d.groups[2] = 1;
  d.planned_barrier = planned_barrier;
  d.segment_start = segment_start;
  return d;
}

// Three dispatches: A and B share pipeline 10 (B after a planned hazard
// barrier), C starts the second segment with pipeline 20 and no push
// constants.
HostCommands three_dispatches() {
  HostCommands c;
  c.add(dispatch(10, 11, 4, false, false), {handle<VkDescriptorSet>(100)}, {std::byte{1}, std::byte{2}});
  c.add(dispatch(10, 11, 5, true, false), {handle<VkDescriptorSet>(101)}, {std::byte{3}, std::byte{4}});
  c.add(dispatch(20, 21, 6, false, true), {handle<VkDescriptorSet>(200), handle<VkDescriptorSet>(201)}, {});
  return c;
}

std::vector<std::string> record(const HostCommands& c, size_t first, size_t end, size_t* count) {
  g_log.clear();
  const VolkDeviceTable fn = fake_table();
  *count = c.record(fn, handle<VkCommandBuffer>(1), first, end, vk::DebugLabels{}, {});
  return g_log;
}

TEST(HostCommands, AddLaysTheArraysOutFlat) {
  const HostCommands c = three_dispatches();
  ASSERT_EQ(c.dispatches.size(), 3u);
  EXPECT_EQ(c.sets.size(), 4u);
  EXPECT_EQ(c.push.size(), 4u);
  EXPECT_EQ(c.dispatches[2].first_set, 2u);
  EXPECT_EQ(c.dispatches[2].set_count, 2u);
  EXPECT_EQ(c.dispatches[1].push_offset, 2u);
  EXPECT_EQ(c.dispatches[2].push_size, 0u);
  EXPECT_TRUE(c.dispatches[0].new_pipeline);
  EXPECT_FALSE(c.dispatches[1].new_pipeline);
  EXPECT_TRUE(c.dispatches[2].new_pipeline);
}

TEST(HostCommands, AWholeRunSkipsTheRepeatedPipelineBindAndBarriersBetweenSegments) {
  size_t count = 0;
  const std::vector<std::string> want = {
      "pipeline 10", "sets layout 11 from 0: 100", "push layout 11 at 0: 1 2", "dispatch 4x1x1",
      "barrier",     "sets layout 11 from 0: 101", "push layout 11 at 0: 3 4", "dispatch 5x1x1",
      "barrier",     "pipeline 20", "sets layout 21 from 0: 200 201", "dispatch 6x1x1"};
  EXPECT_EQ(record(three_dispatches(), 0, 3, &count), want);
  EXPECT_EQ(count, want.size());
}

TEST(HostCommands, ASliceBindsItsFirstPipelineAndKeepsThePlannedBarrier) {
  // Starting at B: the host's commands came between, so B binds pipeline 10
  // itself; its planned barrier stays (the entry barrier would cover it too).
  size_t count = 0;
  const std::vector<std::string> want = {"barrier", "pipeline 10", "sets layout 11 from 0: 101",
                                         "push layout 11 at 0: 3 4", "dispatch 5x1x1"};
  EXPECT_EQ(record(three_dispatches(), 1, 2, &count), want);
  EXPECT_EQ(count, 5u);
}

TEST(HostCommands, ASliceStartingAtASegmentNeedsNoSegmentBarrier) {
  size_t count = 0;
  const std::vector<std::string> want = {"pipeline 20", "sets layout 21 from 0: 200 201", "dispatch 6x1x1"};
  EXPECT_EQ(record(three_dispatches(), 2, 3, &count), want);
  EXPECT_EQ(count, 3u);
}

TEST(HostCommands, AnEmptyRangeRecordsNothing) {
  size_t count = 7;
  EXPECT_TRUE(record(three_dispatches(), 3, 3, &count).empty());
  EXPECT_EQ(count, 0u);
  EXPECT_TRUE(record(HostCommands{}, 0, 0, &count).empty());
}

}  // namespace
}  // namespace kiln::runtime
