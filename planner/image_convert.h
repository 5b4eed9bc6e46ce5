// The kernels that move a host application's image into a model input, or
// a model output into a host's image (a game's frame in, a denoised frame
// out), so that the conversion (channel order, normalization, sRGB, NCHW or
// NHWC) costs one small dispatch on the device instead of a pass on the
// host. The Vulkan runtime records them around a run's kernels for inputs
// and outputs bound to host VkImages (engine/runtime/vulkan/image_binding.h).
//
// Both are kCustom kernels over one tensor `t` (binding 0, buffer storage,
// shape [1, C, H, W] or [1, H, W, C], all dims concrete: specialization
// constants) plus the host's image at binding 1, which the templates
// declare themselves: a sampled image read with texelFetch, or a storage
// image read with imageLoad (image_to_tensor.comp), or a storage image
// written (tensor_to_image.comp). One invocation per
// pixel, 8x8 workgroups. The per-binding numbers (channel map, scale, bias,
// flags) are push constants, ImageConvertPush.
//
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "engine/base/status.h"
#include "planner/kernel.h"

namespace kiln::planner {

struct ImageConvertDesc {
  bool to_tensor = true;  // image -> input tensor; false: output tensor -> image
  ElemType type = ElemType::kF32;  // the tensor's (kF32 or kF16; buffer storage)
  int64_t channels = 3, height = 1, width = 1;
  bool nhwc = false;  // the tensor is [1, H, W, C] (else [1, C, H, W])
  // The GLSL format qualifier of a storage image ("rgba8", "rgba16f",
  // "rgba32f", "r32f"): output images, and input images read with imageLoad
  // (empty for an input: a sampled image read with texelFetch).
  std::string storage_format;
};

// The kernels' push constants (the std430 layout of their ImageConvert
// block): model channel c is image component map[c] (0 R .. 3 A); inputs
// take texel * scale + bias, outputs store value * scale + bias.
struct ImageConvertPush {
  float scale[4] = {1, 1, 1, 1};
  float bias[4] = {0, 0, 0, 0};
  int32_t map[4] = {0, 1, 2, 3};
  // The image's rectangle the tensor covers: x, y, width, height (inputs
  // read it, resized to the tensor's H and W with kImageConvertResize;
  // outputs are written at its x, y).
  int32_t region[4] = {0, 0, 1, 1};
  int32_t flags = 0;
};
constexpr int32_t kImageConvertSrgb = 1;    // inputs: decode sRGB; outputs: encode it
constexpr int32_t kImageConvertClamp = 2;   // outputs: clamp to [0, 1] (UNORM images)
constexpr int32_t kImageConvertResize = 4;  // inputs: bilinear from the region (its size is not the tensor's)

// The conversion kernel for `desc`. Errors: kInvalidArgument for channels
// outside 1..4, a non-positive height or width, an integer tensor, or an
// output without a storage format.
StatusOr<KernelDesc> image_convert_kernel(const ImageConvertDesc& desc);

}  // namespace kiln::planner
