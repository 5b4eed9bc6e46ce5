/* Compiled as strict C99 into kiln_c_api_image_test: the image-binding part
 * of kiln_vulkan.h stays valid C, its documented initializer compiles, and
 * the calls fail cleanly on a NULL session. The test compares the struct's
 * size with the C++ view. */
#include <string.h>

#include "kiln/kiln.h"
#include "kiln/kiln_vulkan.h"

size_t capi_c_check_image_binding_size(void) {
  /* The initializer of kiln_vulkan.h's example, field for field. */
  kiln_vulkan_image_binding_t in = {sizeof(in), VK_NULL_HANDLE, VK_NULL_HANDLE, VK_FORMAT_R8G8B8A8_SRGB,
                                    VK_IMAGE_USAGE_SAMPLED_BIT, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL, 224, 224, 3,
                                    {0, 1, 2}, {0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}, 0};
  kiln_status_t* status = kiln_session_bind_vulkan_image(NULL, "image", &in);
  if (!status || kiln_status_code(status) != KILN_INVALID_ARGUMENT) return 0;
  kiln_status_free(status);
  kiln_session_forget_vulkan_image(NULL, VK_NULL_HANDLE);
  in.flags = KILN_VULKAN_IMAGE_SRGB | KILN_VULKAN_IMAGE_NHWC;
  return in.struct_size;
}
