// Host VkImages as model inputs and outputs (a game's frame in, a
// denoised or stylized frame out), with no copy through host memory.
//
// A bound input image is converted into the model's input tensor by one
// small kernel (planner/image_convert.h) recorded right before the run's
// first kernel; a bound output is converted from the output tensor into the
// host's storage image by one recorded right after the last. The conversion
// does the channel order (any image component for any model channel),
// per-channel scale and bias (mean/std normalization), sRGB decode (in
// hardware through an sRGB view, or in the shader) and encode, UNORM
// clamping, and NCHW or NHWC. It is a separate dispatch rather than folded
// into the model's first and last kernels: those are whatever the planner
// fused (a GEMM, a convolution with an epilogue), each with its own way of
// reading its inputs, while the conversion of an image the size of a frame
// costs about what one elementwise kernel over the input does.
//
// The input tensor lives in Kiln's activation memory like any intermediate
// tensor; the image is only read (or, for outputs, written) by the
// conversion, in the layout the binding names. An input may come from a
// rectangle of the image (a crop), resized bilinearly when its size is not
// the tensor's H and W; an output is written into a rectangle of the tensor's
// size.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/base/status.h"
#include "engine/base/tensor.h"
#include "planner/image_convert.h"
#include "planner/kernel.h"
#include "platform/vulkan/device.h"
#include "platform/vulkan/pipeline.h"

namespace kiln::runtime {

// One host image a model input or output is converted from or into. All
// handles are borrowed; the image must outlive every run that uses it.
struct ExternalImage {
  VkImage image = VK_NULL_HANDLE;     // identifies the binding (forget_image)
  VkImageView view = VK_NULL_HANDLE;  // what the conversion binds: 2D, one mip level and layer, color aspect
  VkFormat format = VK_FORMAT_UNDEFINED;  // the view's format (image_format_info)
  VkImageUsageFlags usage = 0;            // the usage the image was created with (Vulkan cannot be asked)
  // The layout the image is in whenever the run's commands execute:
  // inputs GENERAL or SHADER_READ_ONLY_OPTIMAL, outputs GENERAL.
  VkImageLayout layout = VK_IMAGE_LAYOUT_UNDEFINED;
  uint32_t width = 0, height = 0;  // the view's extent
  // The rectangle the tensor covers (region_width/height 0: to the image's
  // right/bottom edge) and the tensor's W and H (0: the region's size).
  // Inputs whose region is not the tensor's size are resized bilinearly;
  // outputs are written into a region of exactly the tensor's size.
  uint32_t region_x = 0, region_y = 0, region_width = 0, region_height = 0;
  uint32_t tensor_width = 0, tensor_height = 0;
  uint32_t channels = 0;           // the tensor's C, 1..4
  // Model channel c is image component map[c] (0 R, 1 G, 2 B, 3 A).
  std::array<uint32_t, 4> map{0, 1, 2, 3};
  // Inputs: value = component * scale + bias; outputs: component = value *
  // scale + bias.
  std::array<float, 4> scale{1, 1, 1, 1};
  std::array<float, 4> bias{0, 0, 0, 0};
  bool srgb = false;  // inputs: decode sRGB in the shader; outputs: encode linear values to sRGB
  bool nhwc = false;  // the tensor is [1, H, W, C] (else [1, C, H, W])

  bool operator==(const ExternalImage&) const = default;
};

// What Kiln knows of an image format it converts.
struct ImageFormatInfo {
  VkFormat format = VK_FORMAT_UNDEFINED;
  const char* name = "";
  uint32_t components = 4;
  bool srgb = false;   // an sRGB view: texel fetches decode in hardware
  bool unorm = false;  // stores clamp to [0, 1]
  // The GLSL storage-image format qualifier, nullptr when the format cannot
  // be an output (sRGB, BGRA and the 8/16-bit single-channel formats need
  // optional device features for storage).
  const char* storage_qualifier = nullptr;
};

// Whether an input image is read as a storage image (imageLoad: it lacks
// VK_IMAGE_USAGE_SAMPLED_BIT) rather than a sampled one (texelFetch).
bool image_read_as_storage(const ExternalImage& image);

// The format's entry, nullptr when Kiln does not convert it.
const ImageFormatInfo* image_format_info(VkFormat format);
// The formats an input (or output) image may have, for error messages.
std::string image_formats_list(bool output);

// The region of `image` with its zeros resolved (x, y, width, height), and
// the tensor's W and H.
std::array<uint32_t, 4> image_region(const ExternalImage& image);
std::array<uint32_t, 2> image_tensor_extent(const ExternalImage& image);

// The shape of the tensor `image` converts to or from: [1, C, H, W] or
// [1, H, W, C].
Shape image_tensor_shape(const ExternalImage& image);

// Checks the binding of `image` as an input (or output) named `what` on
// `device`: handles, format, usage, layout, channel count and map, and
// whether the device can sample (store) the format with optimal tiling;
// the region inside the image, and an output's region the tensor's size.
// Errors: kInvalidArgument naming the field and what it needs.
Status check_external_image(const vk::Device& device, const ExternalImage& image, bool input, const std::string& what);

// The push constants of the conversion of `image`.
planner::ImageConvertPush image_convert_push(const ExternalImage& image, bool input);

// A conversion recorded for one signature: its pipeline (the kernel cache's),
// descriptor set and dispatch size.
struct ImageConversion {
  planner::TensorId tensor = planner::kNoTensor;  // the graph input or output
  bool to_tensor = true;                          // an input
  ExternalImage image;
  const vk::ComputePipeline* pipeline = nullptr;  // null: nothing to do (an input no kernel reads)
  std::vector<VkDescriptorSet> sets;
  std::vector<std::byte> push;
  std::array<uint32_t, 3> groups{1, 1, 1};
};

// Records the conversions of `list` with to_tensor == `inputs` into `cmd`
// (no barriers; the caller orders them). Errors: vk::record_dispatch's.
Status record_image_conversions(VkCommandBuffer cmd, const std::vector<ImageConversion>& list, bool inputs);

}  // namespace kiln::runtime
