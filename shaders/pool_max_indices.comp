//! MaxPool with its Indices output (planner/lower_pooling.cc:
//! emit_with_indices): one invocation per texel of Y, one window per lane;
//! values stored with Y_st4, indices (an int buffer I) one by one. The
//! window walk is generated per spatial rank.
//!   @COORDS@     statements declaring the texel's first element b0.. from kiln_r
//!   @VEC_AXIS@   Y's vector axis
//!   @LANE_COORDS@  statements declaring the lane's coordinates oc0..
//!   @INIT@       the max of an empty window
//!   @SETUP@      statements before the walk (int cnt, window starts s0..)
//!   @OPEN@ @CLOSE@  the loops over the window's taps inside X (coords i0..)
//!   @ARGS@       X's coordinates of a tap   @INDEX@  its flat index in X
//!   @OUT_INDEX@  the lane's row-major index in I   @B_COORDS@  b0, b1, ...
void main() {
  int kiln_gid = int(gl_GlobalInvocationID.x) + int(gl_GlobalInvocationID.y) * int(gl_NumWorkGroups.x) * 64;
  if (kiln_gid >= KILN_TEXELS) return;
  int kiln_r = kiln_gid;
@COORDS@
  b@VEC_AXIS@ *= 4;
  vec4 vals = vec4(0.0);
  for (int lane = 0; lane < 4; ++lane) {
@LANE_COORDS@
    if (oc@VEC_AXIS@ >= Y_D@VEC_AXIS@) break;
    float acc = @INIT@;
    int best = -1;
@SETUP@
@OPEN@
  float x = X_at(@ARGS@);
  if (best < 0 || x > acc || (isnan(x) && !isnan(acc))) { acc = x; best = @INDEX@; }
  ++cnt;
@CLOSE@
    vals[lane] = acc;
    I_st(@OUT_INDEX@, best);
  }
  Y_st4(@B_COORDS@, vals);
}
