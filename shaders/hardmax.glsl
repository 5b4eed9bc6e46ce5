//! Hardmax's row kernel (planner/lower_normalization.cc: lower_hardmax): 1
//! at the first maximum of the row, 0 elsewhere; NaN and -inf never win, and
//! a row without a finite maximum marks element 0.
//@section helpers
//! kiln_better(v, i, b, bi): whether element (v, i) beats the best so far
//! (b, bi), and the arrays of rows_arg_reduce.glsl.
//!   @LOCAL@  the workgroup size
bool kiln_better(float v, int i, float b, int bi) {
  if (i < 0 || !(v > uintBitsToFloat(0xff800000u))) return false;
  if (bi < 0) return true;
  return v > b || (v == b && i < bi);
}
shared vec4 kiln_rv[@LOCAL@];
shared ivec4 kiln_ri[@LOCAL@];
//@section body
//! The statements of row_main: each invocation's best per lane, combined
//! over the workgroup, then the row rewritten.
//!   @ITEM_LOOP@  the loop head over items   @C@  the item's coordinates
//!   @LANE_OK@    the bvec4 of lanes inside the row
//!   @AXIS@       the Hardmax axis   @LANE_STEP@  1 when lanes run along it, else 0
//!   @ARG_REDUCE@ rows_arg_reduce.glsl     @WRITE@  the write pass
//!   FOLD_LANES   the lanes run inside the row (fold them into lane 0)
  vec4 bv = vec4(0.0); ivec4 bi = ivec4(-1);
@ITEM_LOOP@
    vec4 x = kiln_x4(@C@);
    bvec4 ok = @LANE_OK@;
    for (int l = 0; l < 4; ++l) {
      int i = ok[l] ? c@AXIS@ + l * @LANE_STEP@ : -1;
      if (kiln_better(x[l], i, bv[l], bi[l])) { bv[l] = x[l]; bi[l] = i; }
    }
  }
@ARG_REDUCE@
  bv = kiln_rv[0]; bi = kiln_ri[0];
//@if FOLD_LANES
  for (int l = 1; l < 4; ++l) if (kiln_better(bv[l], bi[l], bv[0], bi[0])) { bv[0] = bv[l]; bi[0] = bi[l]; }
  bi = ivec4(bi[0]);
//@end
  bi = max(bi, ivec4(0));
@WRITE@
