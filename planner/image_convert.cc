// Image conversion kernels (image_convert.h).
#include "planner/image_convert.h"

#include "planner/shader_template.h"

namespace kiln::planner {

StatusOr<KernelDesc> image_convert_kernel(const ImageConvertDesc& desc) {
  if (desc.channels < 1 || desc.channels > 4)
    return invalid_argument("an image holds 1 to 4 channels; the tensor has " + std::to_string(desc.channels));
  if (desc.height < 1 || desc.width < 1)
    return invalid_argument("image conversion of an empty image (" + std::to_string(desc.width) + "x" +
                            std::to_string(desc.height) + ")");
  if (!is_float(desc.type))
    return invalid_argument("an image converts to and from float tensors, not " +
                            std::string(elem_type_name(desc.type)));
  if (!desc.to_tensor && desc.storage_format.empty())
    return invalid_argument("an output image needs its storage format qualifier");
  KernelTensor t;
  t.name = "t";
  t.layout = {Storage::kBuffer, desc.type, -1};
  const ir::Dim c(desc.channels), h(desc.height), w(desc.width);
  t.shape = desc.nhwc ? std::vector<ir::Dim>{ir::Dim(1), h, w, c} : std::vector<ir::Dim>{ir::Dim(1), c, h, w};
  t.written = desc.to_tensor;
  KernelDesc d;
  d.family = KernelDesc::Family::kCustom;
  d.tensors = {t};
  d.local_size = {8, 8, 1};
  d.groups = {ir::Dim::ceil_div(w, ir::Dim(8)), ir::Dim::ceil_div(h, ir::Dim(8)), ir::Dim(1)};
  if (desc.to_tensor) {
    d.name = "image_to_tensor";
    d.extensions = {"GL_EXT_samplerless_texture_functions"};
    ShaderArgs args;
    args.flag("NHWC", desc.nhwc).flag("STORAGE_READ", !desc.storage_format.empty());
    if (!desc.storage_format.empty()) args.set("FORMAT", desc.storage_format);
    d.body = fill_shader("image_to_tensor.comp", args);
  } else {
    d.name = "tensor_to_image";
    d.body = fill_shader("tensor_to_image.comp",
                         ShaderArgs().flag("NHWC", desc.nhwc).set("FORMAT", desc.storage_format));
  }
  return d;
}

}  // namespace kiln::planner
