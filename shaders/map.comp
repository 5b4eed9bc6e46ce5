//! The map harness (KernelDesc::Family::kMap, planner/glsl_codegen.h): each
//! invocation owns four consecutive elements of the written tensor along
//! its vector axis, runs the op's body once per lane inside the tensor with
//! the lane's coordinates oc0.. and linear index oi, and stores the four
//! values `v` with one st4.
//!   @COORDS@       statements: the first element's coordinates ocK_ from kiln_r
//!   @BASE_LINEAR@  its row-major linear index
//!   @LANE_COORDS@  statements: the lane's coordinates ocK
//!   @VEC_AXIS@ @VEC_DIM@  the vector axis and its extent
//!   @STRIDE@       the linear-index stride along the vector axis
//!   @S@ @V@        the written tensor's scalar and vec4 types
//!   @BODY@         the op's body (lines)
//!   @Y@ @BASE_ARGS@  the written tensor's name, ocK_ as arguments
void main() {
  int kiln_gid = int(gl_GlobalInvocationID.x) + int(gl_GlobalInvocationID.y) * int(gl_NumWorkGroups.x) * 64;
  if (kiln_gid >= KILN_TOTAL) return;
  int kiln_r = kiln_gid;
@COORDS@
  int kiln_oi0 = @BASE_LINEAR@;
  @V@ kiln_vals = @V@(0);
  for (int kiln_lane = 0; kiln_lane < 4; ++kiln_lane) {
@LANE_COORDS@
    if (oc@VEC_AXIS@ >= @VEC_DIM@) break;
    int oi = kiln_oi0 + kiln_lane * @STRIDE@;
    @S@ v = @S@(0);
    {
@BODY@
    }
    kiln_vals[kiln_lane] = v;
  }
  @Y@_st4(@BASE_ARGS@, kiln_vals);
}
