// Compute pipelines, descriptor sets and dispatch; see pipeline.h.
#include "platform/vulkan/pipeline.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "platform/vulkan/barriers.h"
#include "platform/vulkan/fault_injection.h"
#include "platform/vulkan/pipeline_statistics.h"

namespace kiln::vk {
namespace {

constexpr VkPipelineStageFlags kUseStages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
constexpr VkAccessFlags kUseWrites = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
constexpr VkAccessFlags kUseAccess =
    VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;

std::string where(const ComputePipeline& p, uint32_t set, uint32_t binding) {
  return "kernel '" + p.name() + "' set " + std::to_string(set) + " binding " + std::to_string(binding);
}

// " ('name')" when the shader kept its names, else nothing.
std::string named(const ReflectedBinding& b) { return b.name.empty() ? "" : " ('" + b.name + "')"; }

bool is_buffer_type(VkDescriptorType t) {
  return t == VK_DESCRIPTOR_TYPE_STORAGE_BUFFER || t == VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER;
}

bool is_image_type(VkDescriptorType t) {
  return t == VK_DESCRIPTOR_TYPE_STORAGE_IMAGE || t == VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE ||
         t == VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER;
}

}  // namespace

// ---------------------------------------------------------------------------
// ComputePipeline.

StatusOr<std::unique_ptr<ComputePipeline>> ComputePipeline::create(Device& device, std::span<const uint32_t> spirv,
                                                                   ShaderReflection reflection,
                                                                   std::span<const SpecializationValue> specialization,
                                                                   VkPipelineCache cache, std::string name) {
  KILN_RETURN_IF_ERROR(device.status());
  const Capabilities& caps = device.capabilities();
  const std::string label = "kernel '" + name + "'";
  if (spirv.empty()) return invalid_argument(label + ": empty SPIR-V module");
  if (reflection.push_constant_size > caps.max_push_constants_size) {
    return invalid_argument(label + ": push constants of " + std::to_string(reflection.push_constant_size) +
                            " bytes exceed maxPushConstantsSize " + std::to_string(caps.max_push_constants_size));
  }
  if (reflection.set_count() > caps.max_bound_descriptor_sets) {
    return invalid_argument(label + " uses " + std::to_string(reflection.set_count()) +
                            " descriptor sets; the device binds at most " + std::to_string(caps.max_bound_descriptor_sets));
  }

  std::unique_ptr<ComputePipeline> p(new ComputePipeline(device));
  p->name_ = std::move(name);
  p->local_size_ = reflection.local_size;
  for (size_t i = 0; i < specialization.size(); ++i) {
    const SpecializationValue& s = specialization[i];
    bool declared = std::any_of(reflection.spec_constants.begin(), reflection.spec_constants.end(),
                                [&](const ReflectedSpecConstant& c) { return c.constant_id == s.constant_id; });
    if (!declared) {
      return invalid_argument(label + " has no specialization constant with constant_id " +
                              std::to_string(s.constant_id));
    }
    for (size_t j = 0; j < i; ++j) {
      if (specialization[j].constant_id == s.constant_id) {
        return invalid_argument(label + ": specialization constant " + std::to_string(s.constant_id) + " given twice");
      }
    }
    for (int d = 0; d < 3; ++d) {
      if (reflection.local_size_spec_id[d] == static_cast<int64_t>(s.constant_id)) p->local_size_[d] = s.bits;
    }
  }
  uint64_t invocations = uint64_t(p->local_size_[0]) * p->local_size_[1] * p->local_size_[2];
  for (int d = 0; d < 3; ++d) {
    if (p->local_size_[d] == 0 || p->local_size_[d] > caps.max_compute_work_group_size[d]) {
      return invalid_argument(label + ": workgroup size " + std::to_string(p->local_size_[0]) + "x" +
                              std::to_string(p->local_size_[1]) + "x" + std::to_string(p->local_size_[2]) +
                              " is outside maxComputeWorkGroupSize");
    }
  }
  if (invocations > caps.max_compute_work_group_invocations) {
    return invalid_argument(label + ": workgroup of " + std::to_string(invocations) +
                            " invocations exceeds maxComputeWorkGroupInvocations " +
                            std::to_string(caps.max_compute_work_group_invocations));
  }

  const VolkDeviceTable& fn = device.fn();
  VkDevice dev = device.handle();
  // One layout per set index, empty for sets the shader skips.
  for (uint32_t set = 0; set < reflection.set_count(); ++set) {
    std::vector<VkDescriptorSetLayoutBinding> bindings;
    for (const ReflectedBinding& b : reflection.bindings) {
      if (b.set != set) continue;
      VkDescriptorSetLayoutBinding lb{};
      lb.binding = b.binding;
      lb.descriptorType = b.type;
      lb.descriptorCount = b.count;
      lb.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
      bindings.push_back(lb);
    }
    VkDescriptorSetLayoutCreateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    info.bindingCount = static_cast<uint32_t>(bindings.size());
    info.pBindings = bindings.data();
    VkDescriptorSetLayout layout = VK_NULL_HANDLE;
    const VkResult r = fn.vkCreateDescriptorSetLayout(dev, &info, nullptr, &layout);
    // check() returns a device loss another thread recorded even when this
    // call succeeded: the layout is kept for the destructor first (else it
    // leaked, a validation error at device destruction in the fault tests).
    if (layout != VK_NULL_HANDLE) p->set_layouts_.push_back(layout);
    KILN_RETURN_IF_ERROR(device.check(r, "vkCreateDescriptorSetLayout"));
  }
  VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, reflection.push_constant_size};
  VkPipelineLayoutCreateInfo layout_info{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  layout_info.setLayoutCount = static_cast<uint32_t>(p->set_layouts_.size());
  layout_info.pSetLayouts = p->set_layouts_.data();
  layout_info.pushConstantRangeCount = reflection.push_constant_size > 0 ? 1 : 0;
  layout_info.pPushConstantRanges = &push;
  KILN_RETURN_IF_ERROR(device.check(fn.vkCreatePipelineLayout(dev, &layout_info, nullptr, &p->layout_),
                                    "vkCreatePipelineLayout"));

  VkShaderModuleCreateInfo module_info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  module_info.codeSize = spirv.size() * sizeof(uint32_t);
  module_info.pCode = spirv.data();
  VkShaderModule module = VK_NULL_HANDLE;
  // check() returns a device loss another thread recorded even when this
  // call succeeded: the module is destroyed before the error is returned.
  if (Status s = device.check(fn.vkCreateShaderModule(dev, &module_info, nullptr, &module), "vkCreateShaderModule");
      !s.ok()) {
    if (module != VK_NULL_HANDLE) fn.vkDestroyShaderModule(dev, module, nullptr);
    return s;
  }

  std::vector<VkSpecializationMapEntry> entries;
  std::vector<uint32_t> data;
  for (const SpecializationValue& s : specialization) {
    entries.push_back({s.constant_id, static_cast<uint32_t>(data.size() * 4), 4});
    data.push_back(s.bits);
  }
  VkSpecializationInfo spec{};
  spec.mapEntryCount = static_cast<uint32_t>(entries.size());
  spec.pMapEntries = entries.data();
  spec.dataSize = data.size() * 4;
  spec.pData = data.data();
  VkComputePipelineCreateInfo info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  info.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.module = module;
  info.stage.pName = "main";
  info.stage.pSpecializationInfo = entries.empty() ? nullptr : &spec;
  info.layout = p->layout_;
  const bool statistics = device.enabled().pipeline_executable_info;
  if (statistics) info.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
  VkResult r = call_unless_fault(FaultSite::kPipelineCreation,
                                 [&] { return fn.vkCreateComputePipelines(dev, cache, 1, &info, nullptr, &p->pipeline_); });
  fn.vkDestroyShaderModule(dev, module, nullptr);
  KILN_RETURN_IF_ERROR(device.check(r, "vkCreateComputePipelines (" + label + ")"));
  p->reflection_ = std::move(reflection);
  if (statistics) {
    StatusOr<std::vector<PipelineStatistic>> stats = read_pipeline_statistics(device, p->pipeline_);
    // A diagnostic: a driver that fails to report costs the line, not the pipeline.
    if (stats.ok()) {
      append_pipeline_statistics(p->name_, *stats);
    } else {
      note_pipeline_statistics(label + ": " + stats.status().message());
    }
  }
  return p;
}

ComputePipeline::~ComputePipeline() {
  const VolkDeviceTable& fn = device_.fn();
  VkDevice dev = device_.handle();
  if (pipeline_ != VK_NULL_HANDLE) fn.vkDestroyPipeline(dev, pipeline_, nullptr);
  if (layout_ != VK_NULL_HANDLE) fn.vkDestroyPipelineLayout(dev, layout_, nullptr);
  for (VkDescriptorSetLayout l : set_layouts_) fn.vkDestroyDescriptorSetLayout(dev, l, nullptr);
}

// ---------------------------------------------------------------------------
// DescriptorAllocator.

StatusOr<std::unique_ptr<DescriptorAllocator>> DescriptorAllocator::create(Device& device, uint32_t sets_per_pool) {
  KILN_RETURN_IF_ERROR(device.status());
  if (sets_per_pool == 0) return invalid_argument("DescriptorAllocator: sets_per_pool must be positive");
  std::unique_ptr<DescriptorAllocator> a(new DescriptorAllocator(device));
  a->sets_per_pool_ = sets_per_pool;
  return a;
}

DescriptorAllocator::~DescriptorAllocator() {
  for (VkDescriptorPool pool : pools_) device_.fn().vkDestroyDescriptorPool(device_.handle(), pool, nullptr);
}

Status DescriptorAllocator::add_pool() {
  const uint32_t n = sets_per_pool_;
  VkDescriptorPoolSize sizes[] = {
      {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, n * 8},         {VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, n * 2},
      {VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, n * 4}, {VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE, n * 4},
      {VK_DESCRIPTOR_TYPE_STORAGE_IMAGE, n * 4},          {VK_DESCRIPTOR_TYPE_SAMPLER, n},
  };
  VkDescriptorPoolCreateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  info.flags = VK_DESCRIPTOR_POOL_CREATE_FREE_DESCRIPTOR_SET_BIT;
  info.maxSets = n;
  info.poolSizeCount = static_cast<uint32_t>(std::size(sizes));
  info.pPoolSizes = sizes;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  KILN_RETURN_IF_ERROR(
      device_.check(device_.fn().vkCreateDescriptorPool(device_.handle(), &info, nullptr, &pool), "vkCreateDescriptorPool"));
  pools_.push_back(pool);
  return ok_status();
}

StatusOr<std::vector<VkDescriptorSet>> DescriptorAllocator::allocate(const ComputePipeline& pipeline) {
  KILN_RETURN_IF_ERROR(device_.status());
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<VkDescriptorSet> sets;
  const auto& layouts = pipeline.set_layouts();
  if (layouts.empty()) return sets;
  sets.resize(layouts.size());
  VkDescriptorSetAllocateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  info.descriptorSetCount = static_cast<uint32_t>(layouts.size());
  info.pSetLayouts = layouts.data();
  // Try the newest pool; on exhaustion add a pool and try once more.
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (pools_.empty() || attempt == 1) KILN_RETURN_IF_ERROR(add_pool());
    info.descriptorPool = pools_.back();
    VkResult r = device_.fn().vkAllocateDescriptorSets(device_.handle(), &info, sets.data());
    if (r == VK_SUCCESS) {
      for (VkDescriptorSet s : sets) owners_.emplace_back(s, pools_.back());
      return sets;
    }
    if ((r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL) || attempt == 1) {
      KILN_RETURN_IF_ERROR(device_.check(r, "vkAllocateDescriptorSets (kernel '" + pipeline.name() + "')"));
    }
  }
  return internal_error("unreachable descriptor allocation state");
}

void DescriptorAllocator::free(std::span<const VkDescriptorSet> sets) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (VkDescriptorSet s : sets) {
    auto it = std::find_if(owners_.begin(), owners_.end(), [&](const auto& o) { return o.first == s; });
    if (it == owners_.end()) continue;
    (void)device_.fn().vkFreeDescriptorSets(device_.handle(), it->second, 1, &s);
    owners_.erase(it);
  }
}

Status DescriptorAllocator::reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (VkDescriptorPool pool : pools_) {
    KILN_RETURN_IF_ERROR(device_.check(device_.fn().vkResetDescriptorPool(device_.handle(), pool, 0), "vkResetDescriptorPool"));
  }
  owners_.clear();
  return ok_status();
}

// ---------------------------------------------------------------------------
// Descriptor writes and dispatch.

Status write_descriptors(const ComputePipeline& pipeline, std::span<const VkDescriptorSet> sets,
                         std::span<const DescriptorResource> resources) {
  const ShaderReflection& refl = pipeline.reflection();
  Device& device = pipeline.device();
  KILN_RETURN_IF_ERROR(device.status());
  const Capabilities& caps = device.capabilities();
  if (sets.size() != pipeline.set_layouts().size()) {
    return invalid_argument("kernel '" + pipeline.name() + "' needs " + std::to_string(pipeline.set_layouts().size()) +
                            " descriptor sets, " + std::to_string(sets.size()) + " given");
  }
  // Which (set, binding, element) each resource fills; each exactly once.
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, size_t> filled;
  std::vector<VkDescriptorBufferInfo> buffer_infos(resources.size());
  std::vector<VkDescriptorImageInfo> image_infos(resources.size());
  std::vector<VkWriteDescriptorSet> writes;
  for (size_t i = 0; i < resources.size(); ++i) {
    const DescriptorResource& r = resources[i];
    const std::string at = where(pipeline, r.set, r.binding);
    const ReflectedBinding* b = refl.find(r.set, r.binding);
    if (b == nullptr) return invalid_argument(at + ": the shader declares no such binding");
    if (r.array_element >= b->count) {
      return invalid_argument(at + named(*b) + ": array element " + std::to_string(r.array_element) +
                              " is out of range (" + std::to_string(b->count) + " elements)");
    }
    if (!filled.emplace(std::make_tuple(r.set, r.binding, r.array_element), i).second) {
      return invalid_argument(at + named(*b) + " is bound twice");
    }
    VkWriteDescriptorSet w{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    w.dstSet = sets[r.set];
    w.dstBinding = r.binding;
    w.dstArrayElement = r.array_element;
    w.descriptorCount = 1;
    w.descriptorType = b->type;
    if (is_buffer_type(b->type)) {
      if (r.buffer == nullptr || !r.buffer->valid() || r.image != nullptr) {
        return invalid_argument(at + named(*b) + " is a " + descriptor_type_name(b->type) +
                                " and needs a buffer");
      }
      if (r.offset >= r.buffer->size()) {
        return invalid_argument(at + named(*b) + ": offset " + std::to_string(r.offset) +
                                " is past the buffer's " + std::to_string(r.buffer->size()) + " bytes");
      }
      VkDeviceSize range = r.range == VK_WHOLE_SIZE ? r.buffer->size() - r.offset : r.range;
      if (range == 0 || range > r.buffer->size() - r.offset) {
        return invalid_argument(at + named(*b) + ": range " + std::to_string(range) + " at offset " +
                                std::to_string(r.offset) + " exceeds the buffer's " + std::to_string(r.buffer->size()) +
                                " bytes");
      }
      bool storage = b->type == VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      uint64_t max_range = storage ? caps.max_storage_buffer_range : caps.max_uniform_buffer_range;
      uint64_t align = storage ? caps.min_storage_buffer_offset_alignment : caps.min_uniform_buffer_offset_alignment;
      if (range > max_range) {
        return invalid_argument(at + named(*b) + ": range of " + std::to_string(range) + " bytes exceeds " +
                                (storage ? "maxStorageBufferRange " : "maxUniformBufferRange ") +
                                std::to_string(max_range));
      }
      if (align > 1 && r.offset % align != 0) {
        return invalid_argument(at + named(*b) + ": offset " + std::to_string(r.offset) +
                                " is not a multiple of the device's offset alignment " + std::to_string(align));
      }
      buffer_infos[i] = {r.buffer->handle(), r.offset, range};
      w.pBufferInfo = &buffer_infos[i];
    } else if (is_image_type(b->type)) {
      if (r.image == nullptr || !r.image->valid() || r.buffer != nullptr) {
        return invalid_argument(at + named(*b) + " is a " + descriptor_type_name(b->type) +
                                " and needs an image");
      }
      image_infos[i] = {VK_NULL_HANDLE, r.image->view(), VK_IMAGE_LAYOUT_GENERAL};
      if (b->type == VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER) image_infos[i].sampler = device.nearest_sampler();
      w.pImageInfo = &image_infos[i];
    } else {
      return unimplemented(at + named(*b) + ": " + descriptor_type_name(b->type) +
                           " bindings are not supported by Kiln");
    }
    writes.push_back(w);
  }
  for (const ReflectedBinding& b : refl.bindings) {
    for (uint32_t e = 0; e < b.count; ++e) {
      if (!filled.count(std::make_tuple(b.set, b.binding, e))) {
        return invalid_argument(where(pipeline, b.set, b.binding) + named(b) +
                                (b.count > 1 ? " element " + std::to_string(e) : "") + " is not bound");
      }
    }
  }
  device.fn().vkUpdateDescriptorSets(device.handle(), static_cast<uint32_t>(writes.size()), writes.data(), 0, nullptr);
  return ok_status();
}

Status record_dispatch(VkCommandBuffer cmd, const ComputePipeline& pipeline, std::span<const VkDescriptorSet> sets,
                       std::span<const std::byte> push, std::array<uint32_t, 3> groups) {
  const Device& device = pipeline.device();
  const Capabilities& caps = device.capabilities();
  const std::string label = "kernel '" + pipeline.name() + "'";
  if (push.size() != pipeline.reflection().push_constant_size) {
    return invalid_argument(label + " takes " + std::to_string(pipeline.reflection().push_constant_size) +
                            " bytes of push constants, " + std::to_string(push.size()) + " given");
  }
  for (int d = 0; d < 3; ++d) {
    if (groups[d] == 0 || groups[d] > caps.max_compute_work_group_count[d]) {
      return invalid_argument(label + ": group count " + std::to_string(groups[0]) + "x" + std::to_string(groups[1]) +
                              "x" + std::to_string(groups[2]) + " is zero or above maxComputeWorkGroupCount");
    }
  }
  const VolkDeviceTable& fn = device.fn();
  fn.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.handle());
  if (!sets.empty()) {
    fn.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.layout(), 0,
                               static_cast<uint32_t>(sets.size()), sets.data(), 0, nullptr);
  }
  if (!push.empty()) {
    fn.vkCmdPushConstants(cmd, pipeline.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, static_cast<uint32_t>(push.size()),
                          push.data());
  }
  fn.vkCmdDispatch(cmd, groups[0], groups[1], groups[2]);
  return ok_status();
}

Status dispatch_sync(Submitter& submitter, DescriptorAllocator& descriptors, const ComputePipeline& pipeline,
                     std::span<const DescriptorResource> resources, std::span<const std::byte> push,
                     std::array<uint32_t, 3> groups) {
  KILN_ASSIGN_OR_RETURN(std::vector<VkDescriptorSet> sets, descriptors.allocate(pipeline));
  Status status = write_descriptors(pipeline, sets, resources);
  if (status.ok()) {
    const VolkDeviceTable& fn = pipeline.device().fn();
    status = submitter.run([&](VkCommandBuffer cmd) {
      std::vector<VkImageMemoryBarrier> transitions;
      for (const DescriptorResource& r : resources) {
        if (r.image == nullptr || r.image->layout() == VK_IMAGE_LAYOUT_GENERAL) continue;
        bool seen = std::any_of(transitions.begin(), transitions.end(),
                                [&](const VkImageMemoryBarrier& t) { return t.image == r.image->handle(); });
        if (seen) continue;
        const VkImageMemoryBarrier t = image_barrier(r.image->handle(), r.image->layout(), VK_IMAGE_LAYOUT_GENERAL,
                                                     kUseWrites, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
        transitions.push_back(t);
      }
      const VkMemoryBarrier before = memory_barrier(kUseWrites, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
      cmd_barrier(fn, cmd, kUseStages, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, &before, transitions);
      KILN_RETURN_IF_ERROR(record_dispatch(cmd, pipeline, sets, push, groups));
      cmd_memory_barrier(fn, cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, kUseStages, VK_ACCESS_SHADER_WRITE_BIT,
                         kUseAccess);
      return ok_status();
    });
    if (status.ok()) {
      for (const DescriptorResource& r : resources) {
        if (r.image != nullptr) r.image->set_layout(VK_IMAGE_LAYOUT_GENERAL);
      }
    }
  }
  // The submission has completed (or never started): the sets are free to go.
  if (!pipeline.device().lost()) descriptors.free(sets);
  return status;
}

}  // namespace kiln::vk
