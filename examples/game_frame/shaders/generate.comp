#version 450
// The game's "renderer" for this example: an animated pattern (a plasma and
// a bouncing ball) that depends on the frame index, written straight into
// the model's input buffer as NCHW float32, normalized with the ImageNet
// mean and deviation torchvision's classifiers expect. One invocation per
// pixel.
layout(local_size_x = 16, local_size_y = 16) in;

layout(std430, set = 0, binding = 0) writeonly buffer ModelInput { float pixels[]; };

layout(push_constant) uniform Params {
  uint width;
  uint height;
  uint frame;
} params;

void main() {
  const uvec2 p = gl_GlobalInvocationID.xy;
  if (p.x >= params.width || p.y >= params.height) return;
  const vec2 uv = (vec2(p) + 0.5) / vec2(params.width, params.height);
  const float t = float(params.frame) * 0.15;
  const float wave = sin(uv.x * 10.0 + t) + sin(uv.y * 8.0 - t * 1.3) + sin((uv.x + uv.y) * 6.0 + t * 0.7);
  vec3 rgb = 0.5 + 0.5 * cos(wave * 1.7 + vec3(0.0, 2.1, 4.2));
  const vec2 ball = vec2(0.5 + 0.3 * sin(t * 1.1), 0.4 + 0.25 * cos(t * 0.9));
  rgb = mix(rgb, vec3(1.0, 0.95, 0.8), 1.0 - smoothstep(0.10, 0.12, length(uv - ball)));

  const vec3 mean = vec3(0.485, 0.456, 0.406);
  const vec3 deviation = vec3(0.229, 0.224, 0.225);
  const vec3 x = (rgb - mean) / deviation;
  const uint plane = params.width * params.height;
  const uint i = p.y * params.width + p.x;
  pixels[i] = x.r;
  pixels[plane + i] = x.g;
  pixels[2u * plane + i] = x.b;
}
