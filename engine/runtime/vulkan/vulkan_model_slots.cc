// Run slots (vulkan_model.h, "Run slots"): the VulkanModel calls that route
// a run, a submission or a ticket to one of the model's slots
// (VulkanModel::Impl), the calls that reach all of them, and making a slot
// over the compiled plan the first one built.
//
// What a slot owns and what the slots share is split along what a run
// writes: the plan, kernels, pipelines and weights are read-only after
// compile() (CompiledPlan); activation memory, staging, descriptor sets,
// command buffers, timestamp queries and model state are written by runs,
// so each slot has its own, and runs in different slots never write the
// same memory. Slot s submits to the device's queue s mod queue_count
// (vk::Device opens every queue of its compute family, up to kMaxQueues);
// each slot's submissions are ordered on its own timeline, not against
// other slots', so on several queues nothing orders two slots' runs and
// the device may execute them at once.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "planner/device_data.h"
#include "engine/runtime/vulkan/vulkan_model_impl.h"

namespace kiln::runtime {

namespace {

// What an unknown ticket gets, named as the caller knows it (with several
// slots a slot's own error would name the slot's timeline value).
Status unknown_ticket(const Status& status, size_t slots, uint64_t ticket) {
  if (slots == 1 || status.code() != StatusCode::kInvalidArgument) return status;
  return invalid_argument("no pending run has ticket " + std::to_string(ticket) +
                          " (never submitted, or already waited for)");
}

}  // namespace

VulkanModel::VulkanModel(std::vector<std::unique_ptr<Impl>> slots)
    : slots_(std::move(slots)), pool_(std::make_unique<RunSlots>(slots_.size())) {}

VulkanModel::~VulkanModel() {
  if (!slots_.empty()) (void)slots_[0]->device.wait_idle();
}

const planner::ExecutionPlan& VulkanModel::plan() const { return slots_[0]->plan; }
const VulkanCompileStats& VulkanModel::compile_stats() const { return slots_[0]->compile_stats; }

StatusOr<std::vector<Tensor>> VulkanModel::run(const std::vector<Tensor>& inputs, VulkanRunStats* stats) const {
  return run(inputs, DeviceBindings{}, stats);
}

StatusOr<std::vector<Tensor>> VulkanModel::run(const std::vector<Tensor>& inputs, const DeviceBindings& bindings,
                                               VulkanRunStats* stats) const {
  RunSlots::Lease lease = pool_->acquire();
  Impl& slot = *slots_[lease.slot()];
  StatusOr<std::vector<Tensor>> outputs = slot.run(inputs, bindings, stats);
  if (slots_.size() > 1) slot.publish_memory();
  return outputs;
}

StatusOr<uint64_t> VulkanModel::submit(const std::vector<Tensor>& inputs, const DeviceBindings& bindings,
                                       const vk::SubmitSync& sync) const {
  RunSlots::Lease lease = pool_->acquire();
  Impl& slot = *slots_[lease.slot()];
  StatusOr<uint64_t> value = slot.submit(inputs, bindings, sync);
  if (slots_.size() > 1) slot.publish_memory();
  if (!value.ok()) return value.status();
  pool_->add_pending(lease.slot());
  return pool_->ticket(lease.slot(), *value);
}

StatusOr<bool> VulkanModel::poll(uint64_t ticket) const {
  StatusOr<bool> done = slots_[pool_->slot_of(ticket)]->poll(pool_->value_of(ticket));
  if (!done.ok()) return unknown_ticket(done.status(), slots_.size(), ticket);
  return done;
}

StatusOr<std::vector<Tensor>> VulkanModel::wait(uint64_t ticket, uint64_t timeout_ns) const {
  const size_t slot = pool_->slot_of(ticket);
  StatusOr<std::vector<Tensor>> outputs = slots_[slot]->wait(pool_->value_of(ticket), timeout_ns);
  const StatusCode code = outputs.status().code();
  // Any other outcome took the ticket off the slot (its outputs may have
  // failed to download).
  if (code != StatusCode::kUnavailable && code != StatusCode::kInvalidArgument && code != StatusCode::kDeviceLost)
    pool_->remove_pending(slot);
  if (!outputs.ok()) return unknown_ticket(outputs.status(), slots_.size(), ticket);
  return outputs;
}

VkSemaphore VulkanModel::timeline() const {
  return slots_.size() == 1 ? slots_[0]->submitter->timeline() : VK_NULL_HANDLE;
}

void VulkanModel::set_wait_spin(std::chrono::microseconds spin) const {
  for (const auto& slot : slots_) slot->submitter->set_spin(spin);
}

void VulkanModel::forget_buffer(VkBuffer buffer) const {
  for (const auto& slot : slots_) {
    slot->forget_buffer(buffer);
    if (slots_.size() > 1) slot->publish_memory();
  }
}

void VulkanModel::forget_image(VkImage image) const {
  for (const auto& slot : slots_) {
    slot->forget_image(image);
    if (slots_.size() > 1) slot->publish_memory();
  }
}

DeviceMemoryUse VulkanModel::memory() const {
  DeviceMemoryUse total;
  total.run_slots = static_cast<uint32_t>(slots_.size());
  for (const auto& slot : slots_) {
    std::lock_guard<std::mutex> lock(slot->mutex);
    const DeviceMemoryUse use = slot->memory_use();
    // The weights once (the first slot's state among them), each other
    // slot's state.
    total.weights += slot == slots_[0] ? use.weights : slot->state_arena ? slot->state_arena->capacity() : 0;
    total.activations += use.activations;
    total.staging += use.staging;
    total.limit = use.limit;
    total.per_run = std::max(total.per_run, slot->slot_bytes());
  }
  total.total = total.weights + total.activations + total.staging;
  return total;
}

StatusOr<std::map<TensorId, Shape>> VulkanModel::Impl::state_shapes() const {
  std::map<TensorId, Shape> shapes;
  for (const planner::PlanStep& step : plan.steps)
    for (const planner::KernelTensor& kt : step.kernel.tensors) {
      const planner::PlanTensor& t = plan.tensors[static_cast<size_t>(kt.tensor)];
      if (t.origin != planner::PlanTensor::Origin::kState || shapes.count(kt.tensor)) continue;
      Shape shape;
      for (const ir::Dim& d : t.shape) {
        if (!d.is_const()) return internal_error("state tensor %" + std::to_string(kt.tensor) + " has a symbolic shape");
        shape.push_back(d.value());
      }
      shapes.emplace(kt.tensor, std::move(shape));
    }
  return shapes;
}

Status VulkanModel::Impl::create_state(vk::MemoryArena& arena, const std::map<TensorId, Shape>& shapes) {
  std::vector<vk::Transfer::Region> regions;
  for (const auto& [id, shape] : shapes) {
    const size_t size = device_bytes(plan.tensors[static_cast<size_t>(id)].layout, shape);
    KILN_ASSIGN_OR_RETURN(vk::Buffer buffer, arena.create_buffer(std::max<size_t>(size, 16)));
    const vk::Buffer& placed = state.emplace(id, std::move(buffer)).first->second;
    regions.push_back({&placed, 0, size, [size](std::byte* dst) { std::memset(dst, 0, size); }});
  }
  return transfer->upload_batch(regions);
}

StatusOr<std::unique_ptr<VulkanModel::Impl>> VulkanModel::Impl::make_slot(size_t index) const {
  auto slot = std::make_unique<Impl>(device, cache, graph, compiled);
  slot->slot_index = index;
  slot->options = options;
  slot->target = target;
  // Slots take the device's queues in turn: slot s submits to queue
  // s mod queue_count, so that runs of different slots need no barrier
  // between them and the device may execute them together.
  const uint32_t queue = static_cast<uint32_t>(index % std::max<uint32_t>(device.queue_count(), 1));
  KILN_ASSIGN_OR_RETURN(slot->transfer, vk::Transfer::create(device, vk::Transfer::kDefaultStagingBytes, queue));
  KILN_ASSIGN_OR_RETURN(slot->submitter, vk::Submitter::create(device, queue));
  if (queue != submitter->queue_index()) {
    // The weights (and everything else this first slot wrote at compile)
    // came through another queue: only a semaphore makes those writes
    // visible here. Both submitters' first submissions wait for them.
    for (vk::Submitter* first : {&transfer->submitter(), submitter.get()}) {
      if (first->timeline() == VK_NULL_HANDLE || first->submitted() == 0) continue;
      const vk::SemaphoreUse written{first->timeline(), first->submitted(), 0};
      slot->transfer->submitter().wait_before_next(written);
      slot->submitter->wait_before_next(written);
    }
  }
  KILN_ASSIGN_OR_RETURN(slot->descriptors, vk::DescriptorAllocator::create(device));
  KILN_ASSIGN_OR_RETURN(const auto shapes, state_shapes());
  if (shapes.empty()) return slot;
  const VkDeviceSize align = std::max<VkDeviceSize>(device.capabilities().min_storage_buffer_offset_alignment, 256);
  VkDeviceSize total = 0;
  for (const auto& [id, shape] : shapes)
    total += arena_reserve(plan.tensors[static_cast<size_t>(id)].layout, shape, align);
  KILN_RETURN_IF_ERROR(slot->check_memory_limit(total, "a run slot's model state"));
  KILN_ASSIGN_OR_RETURN(slot->state_arena, vk::MemoryArena::create(device, total));
  KILN_RETURN_IF_ERROR(slot->create_state(*slot->state_arena, shapes));
  slot->publish_memory();
  return slot;
}

void VulkanModel::Impl::publish_memory() {
  std::lock_guard<std::mutex> lock(mutex);
  compiled->slot_bytes[slot_index].store(slot_bytes(), std::memory_order_relaxed);
}

uint64_t VulkanModel::Impl::other_slots_bytes() const {
  uint64_t bytes = 0;
  for (size_t s = 0; s < compiled->slot_bytes.size(); ++s)
    if (s != slot_index) bytes += compiled->slot_bytes[s].load(std::memory_order_relaxed);
  return bytes;
}

uint64_t VulkanModel::Impl::slot_bytes() const {
  const DeviceMemoryUse use = memory_use();
  return use.activations + use.staging + (state_arena ? state_arena->capacity() : 0);
}

}  // namespace kiln::runtime
