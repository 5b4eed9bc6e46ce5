// Host image bindings (image_binding.h): the formats Kiln converts, the
// checks of a binding, and recording the conversions.
#include "engine/runtime/vulkan/image_binding.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace kiln::runtime {

namespace {

// Every input format is read as floats by texelFetch (UNORM as [0, 1], an
// sRGB view decoded to linear, BGRA in RGBA component order); outputs need
// a storage format every Vulkan device supports for storage images.
constexpr ImageFormatInfo kFormats[] = {
    {VK_FORMAT_R8G8B8A8_UNORM, "VK_FORMAT_R8G8B8A8_UNORM", 4, false, true, "rgba8"},
    {VK_FORMAT_R8G8B8A8_SRGB, "VK_FORMAT_R8G8B8A8_SRGB", 4, true, true, nullptr},
    {VK_FORMAT_B8G8R8A8_UNORM, "VK_FORMAT_B8G8R8A8_UNORM", 4, false, true, nullptr},
    {VK_FORMAT_B8G8R8A8_SRGB, "VK_FORMAT_B8G8R8A8_SRGB", 4, true, true, nullptr},
    {VK_FORMAT_R16G16B16A16_SFLOAT, "VK_FORMAT_R16G16B16A16_SFLOAT", 4, false, false, "rgba16f"},
    {VK_FORMAT_R32G32B32A32_SFLOAT, "VK_FORMAT_R32G32B32A32_SFLOAT", 4, false, false, "rgba32f"},
    {VK_FORMAT_R8_UNORM, "VK_FORMAT_R8_UNORM", 1, false, true, nullptr},
    {VK_FORMAT_R16_SFLOAT, "VK_FORMAT_R16_SFLOAT", 1, false, false, nullptr},
    {VK_FORMAT_R32_SFLOAT, "VK_FORMAT_R32_SFLOAT", 1, false, false, "r32f"},
};

const char* layout_name(VkImageLayout layout) {
  switch (layout) {
    case VK_IMAGE_LAYOUT_GENERAL: return "VK_IMAGE_LAYOUT_GENERAL";
    case VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL: return "VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL";
    case VK_IMAGE_LAYOUT_UNDEFINED: return "VK_IMAGE_LAYOUT_UNDEFINED";
    default: return "another layout";
  }
}

}  // namespace

const ImageFormatInfo* image_format_info(VkFormat format) {
  for (const ImageFormatInfo& f : kFormats)
    if (f.format == format) return &f;
  return nullptr;
}

bool image_read_as_storage(const ExternalImage& image) { return (image.usage & VK_IMAGE_USAGE_SAMPLED_BIT) == 0; }

std::string image_formats_list(bool output) {
  std::string list;
  for (const ImageFormatInfo& f : kFormats)
    if (!output || f.storage_qualifier) list += (list.empty() ? "" : ", ") + std::string(f.name);
  return list;
}

std::array<uint32_t, 4> image_region(const ExternalImage& image) {
  const uint32_t w = image.region_width ? image.region_width : image.width - std::min(image.region_x, image.width);
  const uint32_t h =
      image.region_height ? image.region_height : image.height - std::min(image.region_y, image.height);
  return {image.region_x, image.region_y, w, h};
}

std::array<uint32_t, 2> image_tensor_extent(const ExternalImage& image) {
  const std::array<uint32_t, 4> region = image_region(image);
  return {image.tensor_width ? image.tensor_width : region[2], image.tensor_height ? image.tensor_height : region[3]};
}

Shape image_tensor_shape(const ExternalImage& image) {
  const std::array<uint32_t, 2> extent = image_tensor_extent(image);
  const int64_t c = image.channels, h = extent[1], w = extent[0];
  return image.nhwc ? Shape{1, h, w, c} : Shape{1, c, h, w};
}

Status check_external_image(const vk::Device& device, const ExternalImage& image, bool input, const std::string& what) {
  const std::string bound = "the image bound to " + what;
  if (image.image == VK_NULL_HANDLE) return invalid_argument(bound + " is VK_NULL_HANDLE");
  if (image.view == VK_NULL_HANDLE) return invalid_argument(bound + " has no view (VK_NULL_HANDLE)");
  const ImageFormatInfo* format = image_format_info(image.format);
  if (!format || (!input && !format->storage_qualifier))
    return invalid_argument(bound + " has format " + std::to_string(image.format) + ", which Kiln cannot " +
                            (input ? "read" : "write") + "; " + (input ? "input" : "output") +
                            " images may be " + image_formats_list(!input));
  if (image.width == 0 || image.height == 0)
    return invalid_argument(bound + " has an empty extent (" + std::to_string(image.width) + "x" +
                            std::to_string(image.height) + ")");
  const std::array<uint32_t, 4> region = image_region(image);
  const std::array<uint32_t, 2> extent = image_tensor_extent(image);
  const auto rect = [](uint32_t x, uint32_t y, uint32_t w, uint32_t h) {
    return std::to_string(w) + "x" + std::to_string(h) + " at (" + std::to_string(x) + ", " + std::to_string(y) + ")";
  };
  if (region[2] == 0 || region[3] == 0 || uint64_t{region[0]} + region[2] > image.width ||
      uint64_t{region[1]} + region[3] > image.height)
    return invalid_argument(bound + ": the region " + rect(region[0], region[1], region[2], region[3]) +
                            " is empty or not inside the " + std::to_string(image.width) + "x" +
                            std::to_string(image.height) + " image");
  if (!input && (extent[0] != region[2] || extent[1] != region[3]))
    return invalid_argument(bound + ": output images are not resized; the region " +
                            rect(region[0], region[1], region[2], region[3]) + " must be the tensor's " +
                            std::to_string(extent[0]) + "x" + std::to_string(extent[1]));
  // Inputs are sampled images (texelFetch) when they can be, else storage
  // images (imageLoad, of a storage format, in GENERAL); outputs storage.
  const bool storage = !input || image_read_as_storage(image);
  if (storage && (image.usage & VK_IMAGE_USAGE_STORAGE_BIT) == 0)
    return invalid_argument(bound + " lacks " +
                            (input ? "VK_IMAGE_USAGE_SAMPLED_BIT (Kiln reads it with texelFetch; or "
                                     "VK_IMAGE_USAGE_STORAGE_BIT, read with imageLoad)"
                                   : "VK_IMAGE_USAGE_STORAGE_BIT (Kiln writes it with imageStore)"));
  if (input && storage && !format->storage_qualifier)
    return invalid_argument(bound + " has no VK_IMAGE_USAGE_SAMPLED_BIT, and its format " + format->name +
                            " cannot be read as a storage image; storage input images may be " +
                            image_formats_list(true));
  const bool layout_ok = image.layout == VK_IMAGE_LAYOUT_GENERAL ||
                         (!storage && image.layout == VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL);
  if (!layout_ok)
    return invalid_argument(bound + " is said to be in " + layout_name(image.layout) + " (" +
                            std::to_string(image.layout) + "); " +
                            (!storage ? "a sampled input image must be in VK_IMAGE_LAYOUT_GENERAL or "
                                        "VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL"
                                      : input ? "an input image read as a storage image (no "
                                                "VK_IMAGE_USAGE_SAMPLED_BIT) must be in VK_IMAGE_LAYOUT_GENERAL"
                                              : "an output image must be in VK_IMAGE_LAYOUT_GENERAL") +
                            " when the run executes");
  if (image.channels < 1 || image.channels > 4)
    return invalid_argument(bound + " feeds " + std::to_string(image.channels) +
                            " model channels; an image binding maps 1 to 4");
  for (uint32_t c = 0; c < image.channels; ++c) {
    if (image.map[c] >= format->components)
      return invalid_argument(bound + " maps model channel " + std::to_string(c) + " to image component " +
                              std::to_string(image.map[c]) + ", but " + format->name + " has " +
                              std::to_string(format->components) + " component(s)");
    for (uint32_t d = 0; !input && d < c; ++d)
      if (image.map[d] == image.map[c])
        return invalid_argument(bound + " writes model channels " + std::to_string(d) + " and " + std::to_string(c) +
                                " to the same image component " + std::to_string(image.map[c]));
    if (!std::isfinite(image.scale[c]) || !std::isfinite(image.bias[c]))
      return invalid_argument(bound + " has a scale or bias for channel " + std::to_string(c) + " that is not finite");
  }
  if (image.srgb && format->srgb)
    return invalid_argument(bound + " asks for sRGB conversion in the shader, but its view " + format->name +
                            " already decodes sRGB in hardware");
  VkFormatProperties props{};
  device.instance_fn().vkGetPhysicalDeviceFormatProperties(device.physical_device(), image.format, &props);
  const VkFormatFeatureFlags need = storage ? VK_FORMAT_FEATURE_STORAGE_IMAGE_BIT : VK_FORMAT_FEATURE_SAMPLED_IMAGE_BIT;
  if (((props.optimalTilingFeatures | props.linearTilingFeatures) & need) == 0)
    return invalid_argument(bound + " has format " + format->name + ", which this device cannot " +
                            (storage ? "use as a storage image" : "sample"));
  return ok_status();
}

planner::ImageConvertPush image_convert_push(const ExternalImage& image, bool input) {
  planner::ImageConvertPush push;
  for (size_t c = 0; c < 4; ++c) {
    const bool used = c < image.channels;
    push.scale[c] = used ? image.scale[c] : 1.0f;
    push.bias[c] = used ? image.bias[c] : 0.0f;
    push.map[c] = used ? static_cast<int32_t>(image.map[c]) : 0;
  }
  const std::array<uint32_t, 4> region = image_region(image);
  const std::array<uint32_t, 2> extent = image_tensor_extent(image);
  for (size_t k = 0; k < 4; ++k) push.region[k] = static_cast<int32_t>(region[k]);
  if (input && (region[2] != extent[0] || region[3] != extent[1])) push.flags |= planner::kImageConvertResize;
  const ImageFormatInfo* format = image_format_info(image.format);
  if (image.srgb) push.flags |= planner::kImageConvertSrgb;
  if (!input && format && format->unorm) push.flags |= planner::kImageConvertClamp;
  return push;
}

Status record_image_conversions(VkCommandBuffer cmd, const std::vector<ImageConversion>& list, bool inputs) {
  for (const ImageConversion& c : list)
    if (c.to_tensor == inputs && c.pipeline)
      KILN_RETURN_IF_ERROR(vk::record_dispatch(cmd, *c.pipeline, c.sets, c.push, c.groups));
  return ok_status();
}

}  // namespace kiln::runtime
