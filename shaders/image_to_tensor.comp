//! A host's image into a model input `t` (planner/image_convert.cc fills it
//! for the Vulkan runtime's image bindings, engine/runtime/vulkan/
//! image_binding.h): one invocation per tensor pixel fetches its texel from
//! the image's region (x, y, width, height) = pc.region (texelFetch, no
//! sampler; an sRGB view decodes in hardware, flags bit 0 decodes sRGB in
//! the shader), or with flags bit 2, when the region's size is not the
//! tensor's, interpolates the four nearest texels bilinearly (half-pixel
//! centres, edges clamped, in linear light; no antialiasing), and stores
//! model channel c as texel[map[c]] * scale[c] + bias[c]. Flag NHWC: t is
//! [1, H, W, C], else [1, C, H, W]. Flag STORAGE_READ: the image is a
//! storage image of format qualifier @FORMAT@ read with imageLoad (a host
//! image without VK_IMAGE_USAGE_SAMPLED_BIT), else a sampled image. The push
//! block is planner::ImageConvertPush.
//@if STORAGE_READ
layout(set = 0, binding = 1, @FORMAT@) uniform readonly image2D host_image;
//@else
layout(set = 0, binding = 1) uniform texture2D host_image;
//@end
layout(push_constant) uniform ImageConvert {
  vec4 scale;
  vec4 bias;
  ivec4 map;
  ivec4 region;
  int flags;
} pc;

float srgb_to_linear(float c) {
  return c <= 0.04045 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4);
}

vec4 fetch(ivec2 p) {
//@if STORAGE_READ
  vec4 texel = imageLoad(host_image, p);
//@else
  vec4 texel = texelFetch(host_image, p, 0);
//@end
  if ((pc.flags & 1) != 0)
    texel.rgb = vec3(srgb_to_linear(texel.r), srgb_to_linear(texel.g), srgb_to_linear(texel.b));
  return texel;
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
  vec4 texel;
  if ((pc.flags & 4) != 0) {
    vec2 lo = vec2(pc.region.xy), hi = vec2(pc.region.xy + pc.region.zw - 1);
    vec2 s = clamp(lo + (vec2(x, y) + 0.5) * vec2(pc.region.zw) / vec2(W, H) - 0.5, lo, hi);
    ivec2 p0 = ivec2(floor(s));
    ivec2 p1 = min(p0 + 1, ivec2(hi));
    vec2 f = s - vec2(p0);
    texel = mix(mix(fetch(p0), fetch(ivec2(p1.x, p0.y)), f.x), mix(fetch(ivec2(p0.x, p1.y)), fetch(p1), f.x), f.y);
  } else {
    texel = fetch(pc.region.xy + ivec2(x, y));
  }
  for (int c = 0; c < C; ++c) {
    float v = texel[pc.map[c]] * pc.scale[c] + pc.bias[c];
//@if NHWC
    t_st((y * W + x) * C + c, v);
//@else
    t_st((c * H + y) * W + x, v);
//@end
  }
}
