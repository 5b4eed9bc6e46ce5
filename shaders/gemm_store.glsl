//! gemm_store4 (gemm_kernels.h): stores four results of row m from column n
//! through the op's gemm_epilogue(b, m, n, v) into Y. Filled by
//! gemm_store4_buffer / gemm_store4_image in planner/gemm_kernels.cc.
//!   IMAGE     Y is an image (one Y_st4), else a buffer (Y_st per element)
//!   @INDEX@   buffer: Y's linear index of (b, m, nj)
//!   @SETUP@   image: statements before the store (may be empty)
//!   @COORDS@  image: Y_st4's coordinates
void gemm_store4(int b, int m, int n, vec4 v) {
//@if IMAGE
  vec4 r = vec4(0.0);
  for (int j = 0; j < 4; ++j)
    if (n + j < GEMM_N) r[j] = gemm_epilogue(b, m, n + j, v[j]);
@SETUP@
  Y_st4(@COORDS@, r);
//@else
  for (int j = 0; j < 4; ++j) {
    int nj = n + j;
    if (nj < GEMM_N) Y_st(@INDEX@, gemm_epilogue(b, m, nj, v[j]));
  }
//@end
}
