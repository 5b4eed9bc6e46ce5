//! A host's image into a model input `t` (planner/image_convert.cc fills it
//! for the Vulkan runtime's image bindings, engine/runtime/vulkan/
//! image_binding.h): one invocation per pixel fetches its texel (no sampler,
//! no filtering; an sRGB view decodes in hardware) and stores model channel
//! c as texel[map[c]] * scale[c] + bias[c], in linear light when flags bit 0
//! asks for the shader's sRGB decode. Flag NHWC: t is [1, H, W, C], else
//! [1, C, H, W]. The push block is planner::ImageConvertPush.
layout(set = 0, binding = 1) uniform texture2D host_image;
layout(push_constant) uniform ImageConvert {
  vec4 scale;
  vec4 bias;
  ivec4 map;
  int flags;
} pc;

float srgb_to_linear(float c) {
  return c <= 0.04045 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4);
}

void main() {
  int x = int(gl_GlobalInvocationID.x);
  int y = int(gl_GlobalInvocationID.y);
//@if NHWC
  int H = t_D1, W = t_D2, C = t_D3;
//@else
  int C = t_D1, H = t_D2, W = t_D3;
//@end
  if (x >= W || y >= H) return;
  vec4 texel = texelFetch(host_image, ivec2(x, y), 0);
  if ((pc.flags & 1) != 0)
    texel.rgb = vec3(srgb_to_linear(texel.r), srgb_to_linear(texel.g), srgb_to_linear(texel.b));
  for (int c = 0; c < C; ++c) {
    float v = texel[pc.map[c]] * pc.scale[c] + pc.bias[c];
//@if NHWC
    t_st((y * W + x) * C + c, v);
//@else
    t_st((c * H + y) * W + x, v);
//@end
  }
}
