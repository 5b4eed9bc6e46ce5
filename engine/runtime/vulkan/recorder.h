// Turns one signature's plan steps into recorded command buffers.
//
// A signature (vulkan_model_impl.h) knows its shapes and where every tensor
// lives; recording splits its steps into segments (at host fallbacks, Ifs,
// Loops and branch bounds), prepares each dispatch (workgroups, push
// constants, descriptor sets), decides which inputs, outputs and conditions
// ride in the command buffers (staging), and records one command buffer per
// segment with a barrier only where HazardTracker finds a hazard. It needs
// the device, the plan with its kernels and pipelines, and two allocators;
// nothing else of the model, so it is its own object rather than part of
// VulkanModel::Impl.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/runtime/vulkan/hazard_tracker.h"
#include "engine/runtime/vulkan/vulkan_model_impl.h"

namespace kiln::runtime {

class Recorder {
 public:
  // The condition of kIf step `step` when the host knows it for `sig` (the
  // If is then decided at recording), else nullopt; errors abort recording.
  using HostCondition = std::function<StatusOr<std::optional<bool>>(const Signature& sig, size_t step)>;

  // Everything is borrowed and must outlive the Recorder; `kernels` and
  // `pipelines` are per plan step. `profile` adds a timestamp after every
  // dispatch; `labels` (when enabled) encloses each dispatch in a debug
  // label named `label_names[step]`. Not thread-safe: the allocators are the
  // model's, used under its mutex.
  Recorder(vk::Device& device, const planner::ExecutionPlan& plan,
           const std::vector<planner::GeneratedKernel>& kernels,
           const std::vector<const vk::ComputePipeline*>& pipelines, vk::DescriptorAllocator& descriptors,
           vk::Submitter& submitter, bool profile, const vk::DebugLabels& labels,
           const std::vector<std::string>& label_names, HostCondition host_condition)
      : device_(device), plan_(plan), kernels_(kernels), pipelines_(pipelines), descriptors_(descriptors),
        submitter_(submitter), profile_(profile), labels_(labels), label_names_(label_names),
        host_condition_(std::move(host_condition)) {}

  // Fills sig.segments (with their command buffers, descriptor sets and
  // timestamps), sig.loop_bodies, sig.dispatches, the staging and condition
  // buffers (adding their bytes to sig.device_bytes), for the steps
  // [sig.first_step, sig.end_step) at sig's placements. On error what was
  // allocated stays in `sig` for VulkanModel::Impl::release. Errors:
  // kUnimplemented for workgroup counts beyond the device's limits,
  // kInternal for unbound dims, Vulkan errors (device.h).
  Status record(Signature& sig);

  // Records sig's dispatches (already prepared by record(), which must have
  // succeeded) into the host's command buffer `cmd`, in the recording state:
  // an entry barrier (all earlier commands' writes -> the kernels), the
  // dispatches with barriers where HazardTracker finds a hazard, an exit
  // barrier (the kernels' writes -> all later commands and the host). For
  // signatures that are one device submission with no staging; the caller
  // checks. Errors: Vulkan errors.
  Status record_into(Signature& sig, VkCommandBuffer cmd);
  // Both replay sig.host_commands (made by the first call): no checks,
  // lookups or allocations per call, only the Vulkan commands.
  // record_into for dispatches [first, end) of sig's run (counted over its
  // segments in order; first < end <= the run's dispatch count): the same
  // entry barrier, the input image conversions when first is 0, the
  // dispatches, the output conversions when end is the run's end, the same
  // exit barrier. Consecutive slices submitted in order on one queue do
  // what record_into's one recording does: each slice's entry barrier
  // orders it after the previous slice's writes and reads (and the host's
  // commands between them), and its exit barrier orders it before the
  // host's later commands. record_into is the one slice [0, all).
  Status record_slice_into(Signature& sig, VkCommandBuffer cmd, size_t first, size_t end);

 private:
  // The first and last segments with dispatches (SIZE_MAX: none), and
  // whether the run leaves the device before the first or after the last
  // (a host step, a sub-graph boundary, a first or last segment inside an
  // If's branch or a Loop's body): inputs and outputs then cannot ride in
  // those command buffers.
  struct IoSegments {
    size_t first = SIZE_MAX, last = SIZE_MAX;
    bool host_before = false, host_after = false;
  };
  IoSegments io_segments(const Signature& sig) const;
  // Image bindings (image_binding.h): the input conversions then a barrier
  // before the kernels, or a barrier after the kernels then the output
  // conversions.
  Status record_image_inputs(const Signature& sig, VkCommandBuffer cmd);
  Status record_image_outputs(const Signature& sig, VkCommandBuffer cmd);
  Status segment_steps(Signature& sig);
  Status prepare_dispatch(Signature& sig, size_t step, RecordedDispatch& d, bool* empty);
  void link_loop_bodies(Signature& sig);
  Status plan_staging(Signature& sig);
  Status plan_condition_copies(Signature& sig);
  void dispatch_ranges(const Signature& sig, size_t step, std::vector<MemoryRange>& reads,
                       std::vector<MemoryRange>& writes) const;
  Status record_segment(Signature& sig, Segment& seg, bool first, bool last);
  // Sets each dispatch's barrier_before from the memory it reads and writes.
  void plan_barriers(Signature& sig, Segment& seg);
  Status record_dispatches(Signature& sig, const Segment& seg, VkCommandBuffer cmd, vk::TimestampQueries* timestamps);
  // Fills sig.host_commands (host_commands.h) from its segments' prepared
  // dispatches, once per signature: what record_slice_into replays.
  Status build_host_commands(Signature& sig);
  void record_entry_barrier(VkCommandBuffer cmd);
  void record_exit_barrier(VkCommandBuffer cmd);
  void record_input_copies(Signature& sig, VkCommandBuffer cmd);
  void record_output_copies(Signature& sig, VkCommandBuffer cmd);
  void record_condition_copy(Signature& sig, Segment& seg, VkCommandBuffer cmd);

  vk::Device& device_;
  const planner::ExecutionPlan& plan_;
  const std::vector<planner::GeneratedKernel>& kernels_;
  const std::vector<const vk::ComputePipeline*>& pipelines_;
  vk::DescriptorAllocator& descriptors_;
  vk::Submitter& submitter_;
  const bool profile_;
  const vk::DebugLabels labels_;
  const std::vector<std::string>& label_names_;
  HostCondition host_condition_;
};

}  // namespace kiln::runtime
