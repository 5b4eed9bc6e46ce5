#version 450
// The game's composite pass: the generated image (read back from the
// model's NCHW input, un-normalized) with the model's top-5 classes drawn
// over it as bars, into an RGBA8 frame. A bar's length is the class's
// probability relative to the top class (exp(logit - top logit)), its
// colour a hash of the class index. One invocation per pixel; the first of
// each workgroup picks the top 5 for the group (5 passes over the logits).
layout(local_size_x = 16, local_size_y = 16) in;

layout(std430, set = 0, binding = 0) readonly buffer ModelInput { float pixels[]; };
layout(std430, set = 0, binding = 1) readonly buffer ModelOutput { float logits[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Frame { uint rgba[]; };

layout(push_constant) uniform Params {
  uint width;
  uint height;
  uint classes;
} params;

const uint kTop = 5;
shared uint top_class[kTop];
shared float top_share[kTop];

void pick_top_classes() {
  for (uint k = 0; k < kTop; ++k) {
    uint best = 0xffffffffu;
    float best_logit = 0.0;
    for (uint c = 0; c < params.classes; ++c) {
      bool taken = false;
      for (uint j = 0; j < k; ++j) taken = taken || top_class[j] == c;
      if (!taken && (best == 0xffffffffu || logits[c] > best_logit)) {
        best = c;
        best_logit = logits[c];
      }
    }
    top_class[k] = best;
    top_share[k] = best_logit;
  }
  for (uint k = kTop; k-- > 0;) top_share[k] = exp(top_share[k] - top_share[0]);
}

vec3 class_colour(uint c) {
  return 0.55 + 0.45 * cos(6.2831853 * (fract(float(c) * 0.618034) + vec3(0.0, 0.33, 0.67)));
}

void main() {
  if (gl_LocalInvocationIndex == 0) pick_top_classes();
  barrier();
  const uvec2 p = gl_GlobalInvocationID.xy;
  if (p.x >= params.width || p.y >= params.height) return;
  const uint plane = params.width * params.height;
  const uint i = p.y * params.width + p.x;
  const vec3 mean = vec3(0.485, 0.456, 0.406);
  const vec3 deviation = vec3(0.229, 0.224, 0.225);
  vec3 rgb = vec3(pixels[i], pixels[plane + i], pixels[2u * plane + i]) * deviation + mean;

  // Bars stacked at the bottom, the top class first, on a darkened panel.
  const uint bar = max(3u, params.height / 28u);
  const uint gap = max(1u, bar / 2u);
  const uint margin = params.width / 16u;
  const uint first = params.height - margin - kTop * (bar + gap);
  if (p.y + gap >= first && p.y < params.height - margin + gap && p.x + gap >= margin &&
      p.x < params.width - margin + gap) {
    rgb *= 0.3;
    const uint row = (p.y + gap - first) / (bar + gap);
    const bool in_bar = p.y >= first && (p.y - first) % (bar + gap) < bar && p.x >= margin &&
                        p.x < params.width - margin;
    const float filled = float(margin) + float(params.width - 2u * margin) * top_share[min(row, kTop - 1u)];
    if (in_bar && row < kTop && float(p.x) < filled) rgb = class_colour(top_class[row]);
  }
  rgba[i] = packUnorm4x8(vec4(clamp(rgb, 0.0, 1.0), 1.0));
}
