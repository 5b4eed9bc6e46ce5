// Image-stored tensors on an OpenCL device: the planner's 2.5D textures
// (planner/kernel.h, DeviceLayout with Storage::kImage: one axis packed
// four elements to an RGBA texel, x = block * W + c_last, y = the other
// axes row-major; planner/device_data.h) as CL_RGBA / CL_FLOAT image2d
// objects, and the host's tensors packed into them and unpacked from them
// with the same packing the Vulkan runtime uses (planner::to_device /
// from_device), through clEnqueueWriteImage / clEnqueueReadImage.
#pragma once

#include <string>

#include "engine/base/status.h"
#include "engine/base/tensor.h"
#include "planner/kernel.h"
#include "plugins/opencl/cl_device.h"

namespace kiln::opencl {

struct ImageSize {
  size_t width = 1, height = 1;
};

// The texel grid of a tensor of `shape` in `layout` (an image layout).
ImageSize tensor_image_size(const planner::DeviceLayout& layout, const Shape& shape);

// A new image for a tensor of `shape` in `layout` (an fp32 image layout).
// Errors: kUnimplemented when the device has no images, or the grid passes
// its CL_DEVICE_IMAGE2D_MAX_WIDTH / HEIGHT (a shape bound at run time: the
// planner keeps tensors whose static extents do not fit in buffers);
// kUnimplemented for an fp16 layout; the driver's allocation error.
StatusOr<cl_mem> create_tensor_image(const ClDevice& device, const planner::DeviceLayout& layout, const Shape& shape,
                                     const std::string& what);

// `t` packed into `image` (blocking).
Status upload_tensor_image(cl_command_queue queue, cl_mem image, const planner::DeviceLayout& layout, const Tensor& t,
                           const std::string& what);

// The tensor of `dtype` and `shape` that `image` holds (blocking).
StatusOr<Tensor> download_tensor_image(cl_command_queue queue, cl_mem image, const planner::DeviceLayout& layout,
                                       DType dtype, const Shape& shape, const std::string& what);

}  // namespace kiln::opencl
