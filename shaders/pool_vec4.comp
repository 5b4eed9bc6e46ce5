//! Windowed pooling (MaxPool, AveragePool, LpPool) between tensors that keep
//! channels (axis 1) four to a texel (planner/lower_pooling.cc: emit_vec4):
//! one invocation per texel of Y pools four channels with vec4 loads. The
//! window walk is generated per spatial rank.
//!   @COORDS@    statements declaring Y's coordinates oc0.. from kiln_r
//!   @SETUP@     statements before the walk (int cnt, window starts s0..)
//!   @INIT@      the accumulator's start value
//!   @OPEN@ @CLOSE@  the loops over the window's taps inside X (coords i0..)
//!   @ARGS@      X's coordinates of a tap   @STEP@  accumulates x into acc
//!   @Y_COORDS@  oc0, oc1, ...              @RESULT@  the pooled vec4
void main() {
  int kiln_gid = int(gl_GlobalInvocationID.x) + int(gl_GlobalInvocationID.y) * int(gl_NumWorkGroups.x) * 64;
  if (kiln_gid >= KILN_TEXELS) return;
  int kiln_r = kiln_gid;
@COORDS@
  oc1 *= 4;
@SETUP@
vec4 acc = vec4(@INIT@);
@OPEN@
  vec4 x = X_at4(@ARGS@);
  @STEP@
  ++cnt;
@CLOSE@
Y_st4(@Y_COORDS@, @RESULT@);
}
