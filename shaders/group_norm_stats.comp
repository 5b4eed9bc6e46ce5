//! GroupNormalization's statistics pass where a texel may hold channels of
//! two groups (planner/lower_normalization.cc: groupnorm_two_pass): one
//! workgroup per (n, group) row writes its mean and 1/stddev to T[2 * row],
//! T[2 * row + 1]. Uses kiln_wg_sum (rows_workgroup.glsl).
//!   @GROUPS@   the group count     @LOCAL@  the workgroup size
//!   @LOAD_X@   statements declaring `float x`, element j of the row
//!   @EPS@      epsilon, a float literal
void main() {
  int kiln_group = int(gl_WorkGroupID.x) + int(gl_WorkGroupID.y) * int(gl_NumWorkGroups.x);
  if (kiln_group >= KILN_GROUPS) return;
  int kiln_tid = int(gl_LocalInvocationIndex);
  int kiln_n = kiln_group / @GROUPS@;
  int kiln_c0 = kiln_group % @GROUPS@ * KILN_PER_GROUP;
  float sum = 0.0;
  for (int j = kiln_tid; j < KILN_ROW; j += @LOCAL@) {
@LOAD_X@
    sum += x;
  }
  float mean = kiln_wg_sum(vec4(sum, 0.0, 0.0, 0.0)).x / float(KILN_ROW);
  float sq = 0.0;
  for (int j = kiln_tid; j < KILN_ROW; j += @LOCAL@) {
@LOAD_X@
    sq += (x - mean) * (x - mean);
  }
  float var = kiln_wg_sum(vec4(sq, 0.0, 0.0, 0.0)).x / float(KILN_ROW);
  if (kiln_tid == 0) {
    T_st(2 * kiln_group, mean);
    T_st(2 * kiln_group + 1, inversesqrt(var + @EPS@));
  }
}
