// The frame loop (frame_loop.h): the game's command buffers, its timeline
// semaphore, and Kiln submitted, recorded or recorded in slices between its
// passes.
#include "frame_loop.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace game {

namespace {

// SPIR-V of shaders/*.comp, compiled by glslc at build time (CMakeLists.txt).
const uint32_t kGenerateSpirv[] =
#include "generate.spv.inc"
    ;
const uint32_t kCompositeSpirv[] =
#include "composite.spv.inc"
    ;

struct GenerateParams {
  uint32_t width, height, frame;
};
struct CompositeParams {
  uint32_t width, height, classes;
};

using Clock = std::chrono::steady_clock;

double us_since(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

// The slot's readback buffer: the frame's two timestamps, then (for kept
// frames) the composited image, the model's input and its output.
constexpr VkDeviceSize kImageAt = 2 * sizeof(uint64_t);

// The timeline values one frame signals: submit mode signals "generated"
// (Kiln waits on it), Kiln signals "inferred" (the composite waits on it),
// and the composite signals "done"; record mode signals only "done".
constexpr uint64_t kSubmitModeValues = 3;

}  // namespace

void check_kiln(kiln_status_t* status, const char* what) {
  if (!status) return;
  std::fprintf(stderr, "game_frame: %s failed: %s: %s\n", what, kiln_status_code_name(kiln_status_code(status)),
               kiln_status_message(status));
  kiln_status_free(status);
  std::exit(1);
}

void bind_model_io(kiln_session_t* session, const ModelBuffers& model, const ModelIo& io) {
  const int64_t shape[4] = {1, 3, model.height, model.width};
  kiln_vulkan_buffer_binding_t in{};
  in.struct_size = sizeof(in);
  in.buffer = io.input.buffer;
  in.size = io.input.size;
  in.shape = shape;
  in.rank = 4;
  kiln_vulkan_buffer_binding_t out{};
  out.struct_size = sizeof(out);
  out.buffer = io.output.buffer;
  out.size = io.output.size;
  check_kiln(kiln_session_bind_vulkan_buffer(session, model.input_name, &in), "binding the model's input");
  check_kiln(kiln_session_bind_vulkan_buffer(session, model.output_name, &out), "binding the model's output");
}

FrameLoop::FrameLoop(GameGpu& gpu, kiln_session_t* session, const ModelBuffers& model, const FrameLoopConfig& config)
    : gpu_(gpu), session_(session), model_(model), config_(config) {
  const VkDevice device = gpu.device();
  generate_ = gpu.create_pipeline(kGenerateSpirv, sizeof(kGenerateSpirv), 1, sizeof(GenerateParams));
  composite_ = gpu.create_pipeline(kCompositeSpirv, sizeof(kCompositeSpirv), 3, sizeof(CompositeParams));
  const uint32_t slots = static_cast<uint32_t>(config.in_flight);
  const VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 4 * slots};
  VkDescriptorPoolCreateInfo pool{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  pool.maxSets = 2 * slots;
  pool.poolSizeCount = 1;
  pool.pPoolSizes = &size;
  check_vk(vkCreateDescriptorPool(device, &pool, nullptr, &descriptor_pool_), "vkCreateDescriptorPool");
  auto allocate_set = [&](VkDescriptorSetLayout layout, std::vector<VkBuffer> buffers) {
    VkDescriptorSetAllocateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    info.descriptorPool = descriptor_pool_;
    info.descriptorSetCount = 1;
    info.pSetLayouts = &layout;
    VkDescriptorSet set = VK_NULL_HANDLE;
    check_vk(vkAllocateDescriptorSets(device, &info, &set), "vkAllocateDescriptorSets");
    std::vector<VkDescriptorBufferInfo> infos;
    for (VkBuffer b : buffers) infos.push_back({b, 0, VK_WHOLE_SIZE});
    std::vector<VkWriteDescriptorSet> writes(buffers.size());
    for (size_t i = 0; i < buffers.size(); ++i) {
      writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
      writes[i].dstSet = set;
      writes[i].dstBinding = static_cast<uint32_t>(i);
      writes[i].descriptorCount = 1;
      writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes[i].pBufferInfo = &infos[i];
    }
    vkUpdateDescriptorSets(device, static_cast<uint32_t>(writes.size()), writes.data(), 0, nullptr);
    return set;
  };

  VkCommandPoolCreateInfo commands{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  commands.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  commands.queueFamilyIndex = gpu.queue_family();
  check_vk(vkCreateCommandPool(device, &commands, nullptr, &command_pool_), "vkCreateCommandPool");
  if (gpu.timestamp_period_ns() > 0) {
    VkQueryPoolCreateInfo queries{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    queries.queryType = VK_QUERY_TYPE_TIMESTAMP;
    queries.queryCount = 2 * slots;
    check_vk(vkCreateQueryPool(device, &queries, nullptr, &queries_), "vkCreateQueryPool");
  }
  timeline_ = gpu.create_timeline();

  const VkDeviceSize image_bytes = VkDeviceSize{model.width} * model.height * 4;
  slots_.resize(slots);
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& slot = slots_[i];
    slot.io = &model_.io[i % model_.io.size()];
    VkCommandBufferAllocateInfo info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    info.commandPool = command_pool_;
    info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    info.commandBufferCount = 1;
    check_vk(vkAllocateCommandBuffers(device, &info, &slot.commands), "vkAllocateCommandBuffers");
    check_vk(vkAllocateCommandBuffers(device, &info, &slot.composite), "vkAllocateCommandBuffers");
    slot.image = gpu.create_buffer(image_bytes, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT,
                                   false);
    slot.readback = gpu.create_buffer(kImageAt + image_bytes + slot.io->input.size + slot.io->output.size,
                                      VK_BUFFER_USAGE_TRANSFER_DST_BIT, true);
    slot.generate_set = allocate_set(generate_.set_layout, {slot.io->input.buffer});
    slot.composite_set =
        allocate_set(composite_.set_layout, {slot.io->input.buffer, slot.io->output.buffer, slot.image.buffer});
  }
  times_.kiln_cpu_us.assign(static_cast<size_t>(config.frames), 0.0);
  times_.frame_cpu_us.assign(static_cast<size_t>(config.frames), 0.0);
  if (queries_ != VK_NULL_HANDLE) times_.model_gpu_ms.assign(static_cast<size_t>(config.frames), 0.0);
  if (config_.mode == KilnMode::kSliced) {
    times_.slice_dispatches.assign(static_cast<size_t>(config.frames), 0);
    times_.slice_estimated_us.assign(static_cast<size_t>(config.frames), 0.0);
  }
  if (config_.mode == KilnMode::kReplay) record_kiln_commands();
}

// Kiln's dispatches for each set of model buffers, recorded once into a
// secondary command buffer: the recording holds the buffers bound when it
// was made, and stays valid while the session runs these shapes and
// bindings. SIMULTANEOUS_USE: the frames in flight execute it at once.
void FrameLoop::record_kiln_commands() {
  for (const ModelIo& io : model_.io) {
    VkCommandBufferAllocateInfo info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    info.commandPool = command_pool_;
    info.level = VK_COMMAND_BUFFER_LEVEL_SECONDARY;
    info.commandBufferCount = 1;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    check_vk(vkAllocateCommandBuffers(gpu_.device(), &info, &cmd), "vkAllocateCommandBuffers");
    VkCommandBufferInheritanceInfo inheritance{VK_STRUCTURE_TYPE_COMMAND_BUFFER_INHERITANCE_INFO};
    VkCommandBufferBeginInfo begin_info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin_info.flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT;
    begin_info.pInheritanceInfo = &inheritance;
    check_vk(vkBeginCommandBuffer(cmd, &begin_info), "vkBeginCommandBuffer");
    bind_model_io(session_, model_, io);
    check_kiln(kiln_session_record(session_, cmd), "kiln_session_record");
    check_vk(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
    kiln_commands_.push_back(cmd);
  }
}

FrameLoop::~FrameLoop() {
  const VkDevice device = gpu_.device();
  vkDeviceWaitIdle(device);
  for (Slot& slot : slots_) {
    gpu_.destroy(slot.image);
    gpu_.destroy(slot.readback);
  }
  vkDestroySemaphore(device, timeline_, nullptr);
  if (queries_ != VK_NULL_HANDLE) vkDestroyQueryPool(device, queries_, nullptr);
  vkDestroyCommandPool(device, command_pool_, nullptr);
  vkDestroyDescriptorPool(device, descriptor_pool_, nullptr);
  gpu_.destroy(generate_);
  gpu_.destroy(composite_);
}

uint64_t FrameLoop::done_value(int frame) const {
  const uint64_t f = static_cast<uint64_t>(frame);
  return config_.mode == KilnMode::kSubmit ? kSubmitModeValues * f + 3 : f + 1;
}

void FrameLoop::run() {
  const Clock::time_point start = Clock::now();
  for (int frame = 0; frame < config_.frames; ++frame) {
    const uint32_t index = static_cast<uint32_t>(frame % config_.in_flight);
    Slot& slot = slots_[index];
    if (slot.frame >= 0) finish(slot);  // the only CPU wait: frames in flight
    const Clock::time_point frame_start = Clock::now();
    if (config_.mode == KilnMode::kSubmit) submit_mode_frame(frame, slot, index);
    else if (config_.mode == KilnMode::kSliced) sliced_frame(frame, slot, index);
    else recorded_frame(frame, slot, index);
    slot.frame = frame;
    times_.frame_cpu_us[static_cast<size_t>(frame)] += us_since(frame_start);
  }
  for (int frame = config_.frames - config_.in_flight; frame < config_.frames; ++frame)
    if (frame >= 0) finish(slots_[static_cast<size_t>(frame % config_.in_flight)]);
  times_.wall_ms = us_since(start) / 1000.0;
}

// Submit mode: three submissions per frame on the game's queue, chained by
// the game's timeline semaphore T (values v+1, v+2, v+3 for frame f, v = 3f):
//   generate:  signals T = v+1
//   Kiln:      waits T >= v+1 (compute stage), signals T = v+2 (kiln_session_submit)
//   composite: waits T >= v+2 (all commands), signals T = v+3 (the frame is done)
void FrameLoop::submit_mode_frame(int frame, Slot& slot, uint32_t index) {
  const uint64_t v = kSubmitModeValues * static_cast<uint64_t>(frame);
  begin(slot.commands);
  if (queries_ != VK_NULL_HANDLE) vkCmdResetQueryPool(slot.commands, queries_, 2 * index, 2);
  frame_start_barrier(slot.commands);
  dispatch_generate(slot.commands, slot, frame);
  timestamp(slot.commands, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, 2 * index);
  check_vk(vkEndCommandBuffer(slot.commands), "vkEndCommandBuffer");
  submit(slot.commands, nullptr, 0, 0, v + 1);

  const kiln_vulkan_semaphore_value_t generated{timeline_, v + 1, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT};
  const kiln_vulkan_semaphore_value_t inferred{timeline_, v + 2, 0};
  kiln_vulkan_submit_sync_t sync{};
  sync.struct_size = sizeof(sync);
  sync.waits = &generated;
  sync.wait_count = 1;
  sync.signals = &inferred;
  sync.signal_count = 1;
  const Clock::time_point kiln_start = Clock::now();
  if (model_.io.size() > 1) bind_model_io(session_, model_, *slot.io);
  check_kiln(kiln_session_submit(session_, nullptr, 1, &sync, &slot.ticket), "kiln_session_submit");
  times_.kiln_cpu_us[static_cast<size_t>(frame)] += us_since(kiln_start);

  begin(slot.composite);
  timestamp(slot.composite, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, 2 * index + 1);
  dispatch_composite(slot.composite, slot);
  slot.keep = config_.keep.count(frame) > 0;
  copy_back(slot.composite, slot, index, slot.keep);
  check_vk(vkEndCommandBuffer(slot.composite), "vkEndCommandBuffer");
  submit(slot.composite, &timeline_, v + 2, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, v + 3);
}

// Record and replay modes: one command buffer per frame, Kiln's dispatches
// between the game's passes — recorded into it (record), or executed from
// the secondary command buffer recorded once (replay); Kiln's entry and exit
// barriers order them. One submission, signalling T = f + 1 when the frame
// is done.
void FrameLoop::recorded_frame(int frame, Slot& slot, uint32_t index) {
  const VkCommandBuffer cmd = slot.commands;
  begin(cmd);
  if (queries_ != VK_NULL_HANDLE) vkCmdResetQueryPool(cmd, queries_, 2 * index, 2);
  frame_start_barrier(cmd);
  dispatch_generate(cmd, slot, frame);
  timestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, 2 * index);
  const Clock::time_point kiln_start = Clock::now();
  if (config_.mode == KilnMode::kReplay) {
    const VkCommandBuffer kiln = kiln_commands_[static_cast<size_t>(slot.io - model_.io.data())];
    vkCmdExecuteCommands(cmd, 1, &kiln);
  } else if (config_.mode == KilnMode::kRecordSecondary) {
    if (model_.io.size() > 1) bind_model_io(session_, model_, *slot.io);
    kiln_record_options_t options{sizeof(options)};
    options.flags = KILN_RECORD_VIA_SECONDARY;
    options.queue_family_index = gpu_.queue_family();
    check_kiln(kiln_session_record_with_options(session_, cmd, &options), "kiln_session_record_with_options");
  } else {
    if (model_.io.size() > 1) bind_model_io(session_, model_, *slot.io);
    check_kiln(kiln_session_record(session_, cmd), "kiln_session_record");
  }
  times_.kiln_cpu_us[static_cast<size_t>(frame)] += us_since(kiln_start);
  timestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, 2 * index + 1);
  dispatch_composite(cmd, slot);  // binds its pipeline again: Kiln's record changed the bindings
  slot.keep = config_.keep.count(frame) > 0;
  copy_back(cmd, slot, index, slot.keep);
  check_vk(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
  submit(cmd, nullptr, 0, 0, done_value(frame));
}

// Sliced mode: one command buffer per frame, as in record mode, with one
// slice of the inference in progress between the game's passes. A frame
// with no inference in progress starts one: its generate pass writes the
// model's input, which then stays put until the inference's last slice ran
// (the frames in between generate nothing; a game would render into
// another image meanwhile). The composite runs every frame, showing the
// last finished inference's classes. The slices' order is the queue's
// submission order; Kiln's barriers at each slice's entry and exit order
// them against the game's passes. Timestamps around the slice give its GPU
// time, which the report sets against the budget.
void FrameLoop::sliced_frame(int frame, Slot& slot, uint32_t index) {
  const VkCommandBuffer cmd = slot.commands;
  begin(cmd);
  if (queries_ != VK_NULL_HANDLE) vkCmdResetQueryPool(cmd, queries_, 2 * index, 2);
  frame_start_barrier(cmd);
  if (!inference_running_) dispatch_generate(cmd, slot, frame);
  if (config_.keep.count(frame)) keep_pending_ = true;
  timestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, 2 * index);
  kiln_record_slice_options_t options{};
  options.struct_size = sizeof(options);
  options.budget_us = config_.budget_us;
  kiln_record_slice_progress_t progress{};
  progress.struct_size = sizeof(progress);
  const Clock::time_point kiln_start = Clock::now();
  check_kiln(kiln_session_record_slice(session_, cmd, &options, &progress), "kiln_session_record_slice");
  times_.kiln_cpu_us[static_cast<size_t>(frame)] += us_since(kiln_start);
  timestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, 2 * index + 1);
  times_.slice_dispatches[static_cast<size_t>(frame)] = progress.dispatches_recorded;
  times_.slice_estimated_us[static_cast<size_t>(frame)] = progress.estimated_us;
  times_.estimates_measured = progress.estimate == KILN_SLICE_ESTIMATE_MEASURED;
  times_.inference_dispatches = progress.dispatches_total;
  times_.inference_estimated_us = progress.estimated_run_us;
  inference_running_ = !progress.done;
  if (progress.done) ++times_.inferences;
  dispatch_composite(cmd, slot);  // binds its pipeline again: Kiln's record changed the bindings
  // Only a frame that finishes an inference shows an output of its input.
  slot.keep = progress.done && keep_pending_;
  if (slot.keep) keep_pending_ = false;
  copy_back(cmd, slot, index, slot.keep);
  check_vk(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
  submit(cmd, nullptr, 0, 0, done_value(frame));
}

void FrameLoop::begin(VkCommandBuffer cmd) {
  VkCommandBufferBeginInfo info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  info.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check_vk(vkBeginCommandBuffer(cmd, &info), "vkBeginCommandBuffer");
}

// The frame overwrites what earlier frames read and wrote (the model's
// input, this slot's image and readback): their compute and transfer work
// must be done, and their writes visible, before this frame writes.
void FrameLoop::frame_start_barrier(VkCommandBuffer cmd) {
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &barrier, 0,
                       nullptr, 0, nullptr);
}

void FrameLoop::dispatch_generate(VkCommandBuffer cmd, const Slot& slot, int frame) {
  const GenerateParams params{model_.width, model_.height, static_cast<uint32_t>(frame)};
  vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, generate_.pipeline);
  vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, generate_.layout, 0, 1, &slot.generate_set, 0,
                          nullptr);
  vkCmdPushConstants(cmd, generate_.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(params), &params);
  vkCmdDispatch(cmd, (model_.width + 15) / 16, (model_.height + 15) / 16, 1);
}

void FrameLoop::dispatch_composite(VkCommandBuffer cmd, const Slot& slot) {
  const CompositeParams params{model_.width, model_.height, model_.classes};
  vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, composite_.pipeline);
  vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, composite_.layout, 0, 1, &slot.composite_set, 0,
                          nullptr);
  vkCmdPushConstants(cmd, composite_.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(params), &params);
  vkCmdDispatch(cmd, (model_.width + 15) / 16, (model_.height + 15) / 16, 1);
}

// Copies the frame's timestamps and, for kept frames, the composited image
// and the model's input and output into the slot's host-visible buffer,
// which the host reads once the frame's timeline value is reached. (The
// timestamps go through the buffer rather than vkGetQueryPoolResults, which
// some drivers, lavapipe among them, answer only once the queue is idle:
// that would stall the next frame in flight.)
void FrameLoop::copy_back(VkCommandBuffer cmd, const Slot& slot, uint32_t index, bool keep) {
  if (queries_ != VK_NULL_HANDLE)
    vkCmdCopyQueryPoolResults(cmd, queries_, 2 * index, 2, slot.readback.buffer, 0, sizeof(uint64_t),
                              VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
  if (keep) {
    VkMemoryBarrier written{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    written.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    written.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &written, 0,
                         nullptr, 0, nullptr);
    VkBufferCopy copy{0, kImageAt, slot.image.size};
    vkCmdCopyBuffer(cmd, slot.image.buffer, slot.readback.buffer, 1, &copy);
    copy = {0, kImageAt + slot.image.size, slot.io->input.size};
    vkCmdCopyBuffer(cmd, slot.io->input.buffer, slot.readback.buffer, 1, &copy);
    copy = {0, kImageAt + slot.image.size + slot.io->input.size, slot.io->output.size};
    vkCmdCopyBuffer(cmd, slot.io->output.buffer, slot.readback.buffer, 1, &copy);
  }
  VkMemoryBarrier to_host{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  to_host.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host, 0, nullptr, 0,
                       nullptr);
}

void FrameLoop::timestamp(VkCommandBuffer cmd, VkPipelineStageFlagBits stage, uint32_t query) {
  if (queries_ != VK_NULL_HANDLE) vkCmdWriteTimestamp(cmd, stage, queries_, query);
}

void FrameLoop::submit(VkCommandBuffer cmd, const VkSemaphore* wait, uint64_t wait_value,
                       VkPipelineStageFlags wait_stage, uint64_t signal_value) {
  VkTimelineSemaphoreSubmitInfo values{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
  values.waitSemaphoreValueCount = wait ? 1 : 0;
  values.pWaitSemaphoreValues = &wait_value;
  values.signalSemaphoreValueCount = 1;
  values.pSignalSemaphoreValues = &signal_value;
  VkSubmitInfo info{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  info.pNext = &values;
  info.waitSemaphoreCount = wait ? 1 : 0;
  info.pWaitSemaphores = wait;
  info.pWaitDstStageMask = &wait_stage;
  info.commandBufferCount = 1;
  info.pCommandBuffers = &cmd;
  info.signalSemaphoreCount = 1;
  info.pSignalSemaphores = &timeline_;
  check_vk(vkQueueSubmit(gpu_.queue(), 1, &info, VK_NULL_HANDLE), "vkQueueSubmit");
}

void FrameLoop::finish(Slot& slot) {
  const size_t frame = static_cast<size_t>(slot.frame);
  const Clock::time_point wait_start = Clock::now();
  const uint64_t value = done_value(slot.frame);
  VkSemaphoreWaitInfo wait{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO};
  wait.semaphoreCount = 1;
  wait.pSemaphores = &timeline_;
  wait.pValues = &value;
  check_vk(vkWaitSemaphores(gpu_.device(), &wait, UINT64_MAX), "vkWaitSemaphores (frame pacing)");
  times_.pacing_wait_ms += us_since(wait_start) / 1000.0;

  if (config_.mode == KilnMode::kSubmit) {
    // Every ticket is waited for once; the frame is done, so this returns at
    // once (the output is in the game's buffer: nothing is handed back).
    kiln_tensor_t* outputs[1] = {nullptr};
    const Clock::time_point kiln_start = Clock::now();
    check_kiln(kiln_session_wait(session_, slot.ticket, 0, outputs, 1), "kiln_session_wait");
    times_.kiln_cpu_us[frame] += us_since(kiln_start);
  }
  const auto* bytes = static_cast<const uint8_t*>(slot.readback.mapped);
  if (queries_ != VK_NULL_HANDLE) {
    uint64_t ticks[2];
    std::memcpy(ticks, bytes, sizeof(ticks));
    times_.model_gpu_ms[frame] = static_cast<double>(ticks[1] - ticks[0]) * gpu_.timestamp_period_ns() * 1e-6;
  }
  if (slot.keep) {
    KeptFrame kept;
    kept.index = slot.frame;
    bytes += kImageAt;
    kept.rgba.assign(bytes, bytes + slot.image.size);
    kept.input.resize(slot.io->input.size / sizeof(float));
    std::memcpy(kept.input.data(), bytes + slot.image.size, slot.io->input.size);
    kept.output.resize(slot.io->output.size / sizeof(float));
    std::memcpy(kept.output.data(), bytes + slot.image.size + slot.io->input.size, slot.io->output.size);
    kept_.push_back(std::move(kept));
  }
  slot.frame = -1;
}

}  // namespace game
