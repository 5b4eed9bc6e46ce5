//! Rounds to nearest-even at fp16 precision with integer arithmetic, before
//! stores to RGBA16F images (planner/glsl_codegen.cc says why). No
//! placeholders.
vec4 kiln_round_f16(vec4 v) {
  uvec4 b = floatBitsToUint(v);
  b = (b + 0x00000FFFu + ((b >> 13) & 1u)) & 0xFFFFE000u;
  return uintBitsToFloat(b);
}
