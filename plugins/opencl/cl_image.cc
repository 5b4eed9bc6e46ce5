// Image-stored tensors on an OpenCL device (see cl_image.h).
#include "plugins/opencl/cl_image.h"

#include "planner/device_data.h"

namespace kiln::opencl {

ImageSize tensor_image_size(const planner::DeviceLayout& layout, const Shape& shape) {
  uint32_t width = 1, height = 1;
  planner::image_size(layout, shape, &width, &height);
  return {width, height};
}

StatusOr<cl_mem> create_tensor_image(const ClDevice& device, const planner::DeviceLayout& layout, const Shape& shape,
                                     const std::string& what) {
  const DeviceDescription& d = device.description();
  if (layout.storage != planner::Storage::kImage) return internal_error(what + " is not image-stored");
  if (layout.type != planner::ElemType::kF32)
    return unimplemented(what + ": the OpenCL backend stores fp32 images only (CL_RGBA / CL_FLOAT)");
  if (!d.images) return unimplemented(what + ": the OpenCL device '" + d.name + "' has no image support");
  const ImageSize size = tensor_image_size(layout, shape);
  if (size.width > d.image2d_width || size.height > d.image2d_height)
    return unimplemented(what + " (shape " + shape_to_string(shape) + ") needs a " + std::to_string(size.width) + "x" +
                         std::to_string(size.height) + " image, beyond the device's image2d limit of " +
                         std::to_string(d.image2d_width) + "x" + std::to_string(d.image2d_height) +
                         "; use --storage buffer or auto for these shapes");
  const cl_image_format format = {CL_RGBA, CL_FLOAT};
  cl_image_desc desc{};
  desc.image_type = CL_MEM_OBJECT_IMAGE2D;
  desc.image_width = size.width;
  desc.image_height = size.height;
  cl_int rc = CL_SUCCESS;
  cl_mem image = clCreateImage(device.context(), CL_MEM_READ_WRITE, &format, &desc, nullptr, &rc);
  KILN_RETURN_IF_ERROR(cl_status(rc, "allocating a " + std::to_string(size.width) + "x" + std::to_string(size.height) +
                                         " RGBA float image for " + what));
  return image;
}

Status upload_tensor_image(cl_command_queue queue, cl_mem image, const planner::DeviceLayout& layout, const Tensor& t,
                           const std::string& what) {
  const std::vector<std::byte> bytes = planner::to_device(t, layout);
  const ImageSize size = tensor_image_size(layout, t.shape());
  const size_t origin[3] = {0, 0, 0}, region[3] = {size.width, size.height, 1};
  return cl_status(clEnqueueWriteImage(queue, image, CL_TRUE, origin, region, 0, 0, bytes.data(), 0, nullptr, nullptr),
                   "uploading " + what + " into its image");
}

StatusOr<Tensor> download_tensor_image(cl_command_queue queue, cl_mem image, const planner::DeviceLayout& layout,
                                       DType dtype, const Shape& shape, const std::string& what) {
  std::vector<std::byte> bytes(planner::device_bytes(layout, shape));
  const ImageSize size = tensor_image_size(layout, shape);
  const size_t origin[3] = {0, 0, 0}, region[3] = {size.width, size.height, 1};
  KILN_RETURN_IF_ERROR(
      cl_status(clEnqueueReadImage(queue, image, CL_TRUE, origin, region, 0, 0, bytes.data(), 0, nullptr, nullptr),
                "downloading " + what + " from its image"));
  return planner::from_device(bytes.data(), bytes.size(), layout, dtype, shape);
}

}  // namespace kiln::opencl
