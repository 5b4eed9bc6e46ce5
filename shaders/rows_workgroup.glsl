//! Combines one vec4 (ivec4) per invocation across the workgroup; every
//! invocation gets the result (planner/lower_rows.h: workgroup_helpers).
//! Needs `shared @V@ kiln_red[local]`; call in uniform control flow. The
//! final barrier lets the next combine reuse kiln_red.
//!   @V@ vec4 or ivec4     @NAME@ sum, prod, max or min
//!   @OP@ combines a and b @SG_OP@ the subgroup operation (subgroupAdd, ...)
//!   @HALF@ half the workgroup size (a power of two)
//!   SUBGROUPS  combine with subgroup arithmetic, then across subgroups
//!   NAN_CARRY  float max/min: subgroup max/min leave NaN implementation-
//!              defined, so carry it explicitly
@V@ kiln_op_@NAME@(@V@ a, @V@ b) { return @OP@; }
@V@ kiln_wg_@NAME@(@V@ v) {
//@if SUBGROUPS
  @V@ s = @SG_OP@(v);
//@if NAN_CARRY
  s = mix(s, vec4(uintBitsToFloat(0x7fc00000u)), bvec4(subgroupMax(vec4(isnan(v)))));
//@end
  if (subgroupElect()) kiln_red[gl_SubgroupID] = s;
  barrier();
  @V@ r = kiln_red[0];
  for (uint i = 1u; i < gl_NumSubgroups; ++i) r = kiln_op_@NAME@(r, kiln_red[i]);
//@else
  uint t = gl_LocalInvocationIndex;
  kiln_red[t] = v;
  barrier();
  for (uint s = @HALF@u; s > 0u; s >>= 1) {
    if (t < s) kiln_red[t] = kiln_op_@NAME@(kiln_red[t], kiln_red[t + s]);
    barrier();
  }
  @V@ r = kiln_red[0];
//@end
  barrier();
  return r;
}
