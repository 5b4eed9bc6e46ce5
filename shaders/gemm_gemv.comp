//! GEMV: GEMMs of a few rows (M <= 4), one invocation per output column and
//! K slice; the K slices are summed in shared memory. Filled by
//! planner/gemm_kernels.cc (see gemm_kernels.h for gemm_a/gemm_b/gemm_store4).
//!   @GV_MR@  rows per workgroup (the constant M)
//!   @GV_X@   columns per workgroup (32, 16 or 8: narrower where more
//!            workgroups keep a large GPU's memory system busy)

const int GV_X = @GV_X@;     // columns per workgroup
const int GV_Y = 256 / GV_X;  // K slices per workgroup
const int GV_MR = @GV_MR@;  // rows per workgroup
shared float gv_part[GV_Y][GV_MR * GV_X];

void main() {
  int tx = int(gl_LocalInvocationID.x), ty = int(gl_LocalInvocationID.y);
  int n0 = int(gl_WorkGroupID.x) * GV_X;
  int m0 = int(gl_WorkGroupID.y) * GV_MR;
  int b = int(gl_WorkGroupID.z);
  int n = n0 + tx;
  float acc[GV_MR];
  for (int r = 0; r < GV_MR; ++r) acc[r] = 0.0;
  if (n < GEMM_N) {
    for (int k = ty; k < GEMM_K; k += GV_Y) {
      float bv = gemm_b(b, k, n);
      for (int r = 0; r < GV_MR; ++r)
        if (m0 + r < GEMM_M) acc[r] += gemm_a(b, m0 + r, k) * bv;
    }
  }
  for (int r = 0; r < GV_MR; ++r) gv_part[ty][r * GV_X + tx] = acc[r];
  barrier();
  // GV_MR * GV_X / 4 invocations each sum and store four columns of one row.
  int tid = ty * GV_X + tx;
  if (tid < GV_MR * (GV_X / 4)) {
    int r = tid / (GV_X / 4), q = (tid % (GV_X / 4)) * 4;
    vec4 v = vec4(0.0);
    for (int y = 0; y < GV_Y; ++y)
      v += vec4(gv_part[y][r * GV_X + q], gv_part[y][r * GV_X + q + 1], gv_part[y][r * GV_X + q + 2],
                gv_part[y][r * GV_X + q + 3]);
    if (m0 + r < GEMM_M && n0 + q < GEMM_N) gemm_store4(b, m0 + r, n0 + q, v);
  }
}
