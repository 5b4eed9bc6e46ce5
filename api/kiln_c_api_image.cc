// The C API's image bindings (kiln_vulkan.h, "Images as tensors"): a host
// VkImage as a model input or output. The binding is checked here against
// the model and device, translated into the runtime's ExternalImage
// (mean/std become the conversion's scale and bias; the optional region
// fields are read only when struct_size covers them) and kept with the
// session's buffer bindings, which every run, submit and record copies.
//
// The platform headers come first: they include volk, which must see
// <vulkan/vulkan.h> before anyone includes it with prototypes.
#include "api/kiln_c_api_internal.h"
#include "kiln/kiln_vulkan.h"

#include <cmath>
#include <cstddef>
#include <iterator>
#include <string>

using kiln::capi::make_status;
using kiln::capi::null_arg;
using kiln::capi::to_c;

namespace {

bool is_graph_input(const kiln_session_t* session, const std::string& name) {
  const kiln::ir::Graph& g = session->engine->graph();
  for (kiln::ir::ValueId v : g.main().inputs)
    if (g.value(v).name == name) return true;
  return false;
}

}  // namespace

extern "C" {

kiln_status_t* kiln_session_bind_vulkan_image(kiln_session_t* session, const char* name,
                                              const kiln_vulkan_image_binding_t* binding) {
  if (!session) return null_arg("session");
  if (!name) return null_arg("name");
  if (!binding) return null_arg("binding");
  if (binding->struct_size < offsetof(kiln_vulkan_image_binding_t, flags) + sizeof(binding->flags))
    return make_status(KILN_INVALID_ARGUMENT, "kiln_vulkan_image_binding_t.struct_size is too small");
  if (!session->vulkan_model())
    return make_status(KILN_FAILED_PRECONDITION, "cannot bind '" + std::string(name) +
                                                     "' to a Vulkan image: the session runs on the reference backend");
  const bool input = is_graph_input(session, name);
  kiln::runtime::ExternalImage image;
  image.image = binding->image;
  image.view = binding->view;
  image.format = binding->format;
  image.usage = binding->usage;
  image.layout = binding->layout;
  image.width = binding->width;
  image.height = binding->height;
  image.channels = binding->channel_count;
  for (size_t c = 0; c < 4; ++c) {
    image.map[c] = binding->channel_map[c];
    if (c >= binding->channel_count) continue;
    const float mean = binding->mean[c], sd = binding->std[c];
    if (sd == 0.0f || !std::isfinite(sd) || !std::isfinite(mean))
      return make_status(KILN_INVALID_ARGUMENT, "the image binding of '" + std::string(name) + "' has std[" +
                                                    std::to_string(c) + "] = " + std::to_string(sd) + ", mean[" +
                                                    std::to_string(c) + "] = " + std::to_string(mean) +
                                                    "; std must be finite and non-zero (1 for none), mean finite");
    // input: (texel - mean) / std; output: value * std + mean.
    image.scale[c] = input ? 1.0f / sd : sd;
    image.bias[c] = input ? -mean / sd : mean;
  }
  // The optional fields, present in callers that know them.
  auto has = [&](size_t offset, size_t size) { return binding->struct_size >= offset + size; };
  if (has(offsetof(kiln_vulkan_image_binding_t, tensor_height), sizeof(binding->tensor_height))) {
    image.region_x = binding->region_x;
    image.region_y = binding->region_y;
    image.region_width = binding->region_width;
    image.region_height = binding->region_height;
    image.tensor_width = binding->tensor_width;
    image.tensor_height = binding->tensor_height;
  }
  image.srgb = (binding->flags & KILN_VULKAN_IMAGE_SRGB) != 0;
  image.nhwc = (binding->flags & KILN_VULKAN_IMAGE_NHWC) != 0;
  if ((binding->flags & ~(KILN_VULKAN_IMAGE_SRGB | KILN_VULKAN_IMAGE_NHWC)) != 0)
    return make_status(KILN_INVALID_ARGUMENT, "the image binding of '" + std::string(name) + "' has unknown flags " +
                                                  std::to_string(binding->flags));
  auto shape = session->vulkan_model()->image_binding_shape(name, image);
  if (!shape.ok()) return to_c(shape.status());
  kiln::runtime::ExternalBuffer e;
  e.shape = std::move(shape).value();
  e.image = image;
  std::lock_guard<std::mutex> lock(session->bindings_mutex);
  session->bindings[name] = std::move(e);
  return nullptr;
}

void kiln_session_forget_vulkan_image(kiln_session_t* session, VkImage image) {
  if (!session || image == VK_NULL_HANDLE) return;
  session->erase_bindings_if([&](const kiln::runtime::ExternalBuffer& b) { return b.image.image == image; });
  if (session->vulkan_model()) session->vulkan_model()->forget_image(image);
}

}  // extern "C"
