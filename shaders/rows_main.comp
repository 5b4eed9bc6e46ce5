//! The skeleton of every workgroup-per-row kernel (planner/lower_rows.h:
//! row_main): one workgroup per group of rows on a 2D grid (surplus groups
//! return), kiln_tid the invocation's index in it.
//!   @GROUP_COORDS@  statements declaring the group's coordinates g0..
//!   @BODY@          the kernel's statements
void main() {
  int kiln_group = int(gl_WorkGroupID.x) + int(gl_WorkGroupID.y) * int(gl_NumWorkGroups.x);
  if (kiln_group >= KILN_GROUPS) return;
  int kiln_tid = int(gl_LocalInvocationIndex);
@GROUP_COORDS@
@BODY@
}
