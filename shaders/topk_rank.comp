//! TopK's first pass (planner/lower_topk.cc): one invocation per element of
//! X counts the elements of its row that come before it (kiln_before,
//! topk_order.glsl) and, when that rank is below K, stores its index at
//! that position of the Indices row I.
//!   @LOCAL@   the workgroup size        @AXIS@  the TopK axis
//!   @COORDS@  statements declaring c0.. from kiln_r
//!   @A@       float or int
//!   @AT_I@ @AT_J@ @AT_R@  the coordinates with i, j or r on the axis
void main() {
  int kiln_gid = int(gl_GlobalInvocationID.x) + int(gl_GlobalInvocationID.y) * int(gl_NumWorkGroups.x) * @LOCAL@;
  if (kiln_gid >= X_NUMEL) return;
  int kiln_r = kiln_gid;
@COORDS@
  int i = c@AXIS@;
  @A@ v = X_at(@AT_I@);
  int r = 0;
  //! Stops counting once the element is known to be outside the top K.
  for (int j = 0; j < X_D@AXIS@ && r < I_D@AXIS@; ++j)
    if (j != i && kiln_before(X_at(@AT_J@), j, v, i)) ++r;
  if (r < I_D@AXIS@) I_st(I_index(@AT_R@), i);
}
