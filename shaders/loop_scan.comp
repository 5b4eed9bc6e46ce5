//! A Loop's scan output (planner/control_flow.cc: scan_write): stores this
//! iteration's value x as row iter_ld(0) of y, one invocation per element
//! of x. The row comes from the device counter, so the recorded kernel
//! serves every iteration. No placeholders.
void main() {
  int i = int(gl_GlobalInvocationID.x) + int(gl_GlobalInvocationID.y) * int(gl_NumWorkGroups.x) * 64;
  if (i >= x_NUMEL) return;
  y_st(iter_ld(0) * x_NUMEL + i, x_ld(i));
}
