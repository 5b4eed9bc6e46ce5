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
//!   VECTOR         the vector path (planner/map_vector.h): a buffer Y's four
//!                  elements aligned and inside the row are one vector
//!   @VEC_LOADS@    statements: the vector inputs' loads (kiln_X_v)
//!   @VEC_BODY@     the body reading those vectors' lanes
//!   @VEC_STORE@    the statement storing kiln_vals
void main() {
  int kiln_gid = int(gl_GlobalInvocationID.x) + int(gl_GlobalInvocationID.y) * int(gl_NumWorkGroups.x) * 64;
  if (kiln_gid >= KILN_TOTAL) return;
  int kiln_r = kiln_gid;
@COORDS@
  int kiln_oi0 = @BASE_LINEAR@;
//@if VECTOR
  // Four whole elements at a multiple of 4: one vector access per tensor.
  if ((kiln_oi0 & 3) == 0 && oc@VEC_AXIS@_ + 4 <= @VEC_DIM@) {
    @VEC_LOADS@
    @V@ kiln_vals;
    for (int kiln_lane = 0; kiln_lane < 4; ++kiln_lane) {
  @LANE_COORDS@
      int oi = kiln_oi0 + kiln_lane;
      @S@ v = @S@(0);
      {
@VEC_BODY@
      }
      kiln_vals[kiln_lane] = v;
    }
    @VEC_STORE@
    return;
  }
//@end
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
