// VulkanModel's image bindings (image_binding.h): a host VkImage converted
// into a model input before the run's first kernel, or a model output
// converted into a host image after its last. A signature checks each
// binding against its shapes (resolve_image_binding, next to the buffer
// bindings' resolve_bindings), places the tensor in Kiln's memory like any
// other, then makes the conversion's pipeline and descriptor set
// (prepare_image_conversions); the Recorder records the dispatches.
#include <algorithm>
#include <cstring>
#include <string>

#include "engine/runtime/vulkan/vulkan_model_impl.h"
#include "planner/glsl_codegen.h"
#include "planner/image_convert.h"

namespace kiln::runtime {

using planner::PlanTensor;
using planner::Storage;

namespace {

bool is_graph_input(const ir::Graph& graph, const std::string& name) {
  for (ir::ValueId v : graph.main().inputs)
    if (graph.value(v).name == name) return true;
  return false;
}

const ir::Value& io_value(const ir::Graph& graph, const std::string& name) {
  for (ir::ValueId v : graph.main().inputs)
    if (graph.value(v).name == name) return graph.value(v);
  for (ir::ValueId v : graph.main().outputs)
    if (graph.value(v).name == name) return graph.value(v);
  return graph.value(graph.main().inputs.front());  // unreachable: io_tensor found the name
}

}  // namespace

StatusOr<TensorId> VulkanModel::Impl::check_image_io(const std::string& name, const ExternalImage& image) const {
  KILN_ASSIGN_OR_RETURN(const TensorId id, io_tensor(name));
  const bool input = is_graph_input(graph, name);
  const std::string what = (input ? "input '" : "output '") + name + "'";
  KILN_RETURN_IF_ERROR(check_external_image(device, image, input, what));
  const PlanTensor& t = plan.tensors[static_cast<size_t>(id)];
  const PlanTensor& root = plan.tensors[static_cast<size_t>(planner::memory_root(plan, id))];
  if (t.layout.storage == Storage::kImage || root.layout.storage == Storage::kImage)
    return failed_precondition(what + " is stored in an image (KILN_STORAGE_IMAGE) in this plan; image bindings "
                                      "convert into and from buffer storage (use KILN_STORAGE_BUFFER)");
  if (t.constant.defined() || root.constant.defined())
    return failed_precondition(what + " is a constant of the model; it cannot be bound to an image");
  if (t.host_resident || root.host_resident)
    return failed_precondition(what + " is computed on the host (shape arithmetic); it cannot be bound to an image");
  const ir::Value& value = io_value(graph, name);
  if (!planner::is_float(t.layout.type))
    return failed_precondition(what + " is " + std::string(dtype_name(value.dtype)) +
                               "; image bindings convert float tensors only");
  const Shape want = image_tensor_shape(image);
  bool fits = !value.shape.has_rank || value.shape.dims.size() == want.size();
  for (size_t k = 0; fits && value.shape.has_rank && k < want.size(); ++k)
    fits = !value.shape.dims[k].is_const() || value.shape.dims[k].value() == want[k];
  if (!fits)
    return invalid_argument(what + " has shape " + value.shape.to_string() + "; the image binding gives " +
                            shape_to_string(want) + (image.nhwc ? " ([1, H, W, C]" : " ([1, C, H, W]") +
                            ": the height and width of the image's region, or the tensor size the binding "
                            "asks for, and channel_count channels)");
  return id;
}

Status VulkanModel::Impl::resolve_image_binding(const std::string& name, const ExternalImage& image,
                                                Signature& sig) const {
  KILN_ASSIGN_OR_RETURN(const TensorId id, check_image_io(name, image));
  const std::string what = "'" + name + "'";
  // The conversions ride in the first and last command buffers, which must
  // then be the run's start and end on the device.
  if (sig.boundary.step != SIZE_MAX)
    return failed_precondition(what + " is bound to an image, but output shapes depend on tensor values at " +
                               graph.node(plan.steps[sig.boundary.step].node).describe() +
                               " (read back mid-run); image bindings need a run the device does alone");
  const Shape want = image_tensor_shape(image);
  if (sig.shapes[static_cast<size_t>(id)] != want)
    return invalid_argument(what + " has shape " + shape_to_string(sig.shapes[static_cast<size_t>(id)]) +
                            " in this run; the image binding gives " + shape_to_string(want));
  if (!sig.image_tensors.insert(id).second)
    return failed_precondition(what + " is the same tensor as another image-bound input or output");
  ImageConversion c;
  c.tensor = id;
  c.to_tensor = is_graph_input(graph, name);
  c.image = image;
  sig.image_conversions.push_back(std::move(c));
  return ok_status();
}

Status VulkanModel::Impl::prepare_image_conversions(Signature& sig) {
  const VolkDeviceTable& fn = device.fn();
  for (ImageConversion& c : sig.image_conversions) {
    const Placement& p = sig.place[static_cast<size_t>(c.tensor)];
    const PlanTensor& t = plan.tensors[static_cast<size_t>(c.tensor)];
    if (!p.present) {
      if (c.to_tensor) continue;  // no kernel reads this input
      return failed_precondition("an output bound to an image has no device memory (tensor %" +
                                 std::to_string(c.tensor) + ": computed on the host, or a constant)");
    }
    if (p.image || !p.buffer) return internal_error("an image-bound tensor was not placed in a buffer");
    planner::ImageConvertDesc d;
    d.to_tensor = c.to_tensor;
    d.type = t.layout.type;
    d.channels = c.image.channels;
    d.height = image_tensor_extent(c.image)[1];
    d.width = image_tensor_extent(c.image)[0];
    d.nhwc = c.image.nhwc;
    const bool storage = !c.to_tensor || image_read_as_storage(c.image);
    if (storage) d.storage_format = image_format_info(c.image.format)->storage_qualifier;
    KILN_ASSIGN_OR_RETURN(const planner::KernelDesc desc, planner::image_convert_kernel(d));
    KILN_ASSIGN_OR_RETURN(const planner::GeneratedKernel k, planner::generate_glsl(desc, target));
    vk::CompileOptions co;
    co.source_name = k.name + ".comp";
    co.vulkan_version = target.vulkan_version;
    KILN_ASSIGN_OR_RETURN(const vk::CompiledShader* shader, cache.shader(k.glsl, co));
    // The optimizer drops specialization constants the kernel never reads.
    std::vector<vk::SpecializationValue> spec;
    for (size_t id = 0; id < k.spec.size(); ++id)
      if (std::any_of(shader->reflection.spec_constants.begin(), shader->reflection.spec_constants.end(),
                      [&](const vk::ReflectedSpecConstant& s) { return s.constant_id == id; }))
        spec.push_back(vk::SpecializationValue::i32(static_cast<uint32_t>(id), static_cast<int32_t>(k.spec[id])));
    KILN_ASSIGN_OR_RETURN(c.pipeline, cache.pipeline(k.glsl, co, spec, k.name));
    for (size_t i = 0; i < 3; ++i) c.groups[i] = static_cast<uint32_t>(k.groups[i].value());
    const planner::ImageConvertPush push = image_convert_push(c.image, c.to_tensor);
    c.push.assign(c.pipeline->reflection().push_constant_size, std::byte{0});
    std::memcpy(c.push.data(), &push, std::min(c.push.size(), sizeof(push)));
    KILN_ASSIGN_OR_RETURN(c.sets, descriptors->allocate(*c.pipeline));
    // Written here rather than by vk::write_descriptors, which binds only
    // Kiln's own images: the host's view, in the layout the binding names.
    VkDescriptorBufferInfo buffer{p.buffer->handle(), p.offset, std::max<VkDeviceSize>(p.size, 4)};
    VkDescriptorImageInfo image{VK_NULL_HANDLE, c.image.view, c.image.layout};
    VkWriteDescriptorSet writes[2] = {{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET},
                                      {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET}};
    writes[0].dstSet = c.sets.at(0);
    writes[0].dstBinding = 0;
    writes[0].descriptorCount = 1;
    writes[0].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[0].pBufferInfo = &buffer;
    writes[1].dstSet = c.sets.at(0);
    writes[1].dstBinding = 1;
    writes[1].descriptorCount = 1;
    writes[1].descriptorType = storage ? VK_DESCRIPTOR_TYPE_STORAGE_IMAGE : VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE;
    writes[1].pImageInfo = &image;
    fn.vkUpdateDescriptorSets(device.handle(), 2, writes, 0, nullptr);
  }
  return ok_status();
}

void VulkanModel::Impl::forget_image(VkImage image) {
  std::lock_guard<std::mutex> lock(mutex);
  // As forget_buffer: asynchronous submissions may still use it.
  (void)submitter->wait_all();
  for (auto it = signatures.begin(); it != signatures.end();) {
    const auto& conversions = it->second->image_conversions;
    if (std::none_of(conversions.begin(), conversions.end(),
                     [&](const ImageConversion& c) { return c.image.image == image; })) {
      ++it;
      continue;
    }
    release(*it->second);
    it = signatures.erase(it);
  }
}

StatusOr<Shape> VulkanModel::image_binding_shape(const std::string& name, const ExternalImage& image) const {
  KILN_RETURN_IF_ERROR(slots_[0]->check_image_io(name, image).status());
  return image_tensor_shape(image);
}

}  // namespace kiln::runtime
