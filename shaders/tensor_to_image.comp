//! A model output `t` into a host's storage image, for display
//! (planner/image_convert.cc fills it for the Vulkan runtime's image
//! bindings, engine/runtime/vulkan/image_binding.h): one invocation per
//! tensor pixel stores, at that pixel offset by pc.region.xy, texel
//! component map[c] = t[c] * scale[c] + bias[c] for each
//! model channel c (components no channel maps to are 0, alpha 1), encoded
//! to sRGB when flags bit 0 is set, clamped to [0, 1] when bit 1 is (UNORM
//! images). @FORMAT@: the image's GLSL format qualifier ("rgba8"). Flag
//! NHWC: t is [1, H, W, C], else [1, C, H, W]. The push block is
//! planner::ImageConvertPush.
layout(set = 0, binding = 1, @FORMAT@) uniform writeonly image2D host_image;
layout(push_constant) uniform ImageConvert {
  vec4 scale;
  vec4 bias;
  ivec4 map;
  ivec4 region;
  int flags;
} pc;

float linear_to_srgb(float c) {
  c = clamp(c, 0.0, 1.0);
  return c <= 0.0031308 ? c * 12.92 : 1.055 * pow(c, 1.0 / 2.4) - 0.055;
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
  vec4 texel = vec4(0.0, 0.0, 0.0, 1.0);
  for (int c = 0; c < C; ++c) {
//@if NHWC
    texel[pc.map[c]] = t_at(0, y, x, c) * pc.scale[c] + pc.bias[c];
//@else
    texel[pc.map[c]] = t_at(0, c, y, x) * pc.scale[c] + pc.bias[c];
//@end
  }
  if ((pc.flags & 1) != 0)
    texel.rgb = vec3(linear_to_srgb(texel.r), linear_to_srgb(texel.g), linear_to_srgb(texel.b));
  if ((pc.flags & 2) != 0) texel = clamp(texel, 0.0, 1.0);
  imageStore(host_image, pc.region.xy + ivec2(x, y), texel);
}
