//! Split-K reduce pass and LayerNormalization of its rows as one kernel
//! (planner/fusion_row_norm.h): workgroup `row` adds the GEMM_SPLIT
//! partial tiles of GEMM row `row` and stores them through the GEMM's
//! gemm_store4 (its epilogue included) into @X@, whose rows are the GEMM's
//! (buffer, row-major, coherent), reads the stored row back, and writes
//! (x - mean) * inv * @G@ + @B@ into @Z@ at the same indices. Mean and
//! variance are two passes over the row kept in shared memory, as the
//! layer_norm kernel computes them from the stored values.
//!   @NT@   workgroup size (a power of two)     @ROW@  row length (GEMM_N)
//!   @X@ @G@ @B@ @Z@  tensor names              @ZS@   @Z@'s scalar type
//!   @EPS@  epsilon                             BETA   with a bias input
shared float kiln_row[@ROW@];

void main() {
  const int row = int(gl_WorkGroupID.x), t = int(gl_LocalInvocationIndex);
  const int b = row / GEMM_M, m = row % GEMM_M;
  const int nq = (GEMM_N + 3) / 4, slice_stride = GEMM_BATCH * GEMM_M * GEMM_N;
  for (int q = t; q < nq; q += @NT@) {
    const int p = row * GEMM_N + q * 4;
    vec4 v = vec4(0.0);
    for (int s = 0; s < GEMM_SPLIT; ++s) v += GP_load4(p + s * slice_stride);
    gemm_store4(b, m, q * 4, v);
  }
  memoryBarrierBuffer();
  barrier();
  float sum = 0.0;
  for (int c = t; c < @ROW@; c += @NT@) {
    const float x = float(@X@_ld(row * @ROW@ + c));
    kiln_row[c] = x;
    sum += x;
  }
  const float mean = kiln_wg_sum(vec4(sum, 0.0, 0.0, 0.0)).x / float(@ROW@);
  float sq = 0.0;
  for (int c = t; c < @ROW@; c += @NT@) {
    const float d = kiln_row[c] - mean;
    sq += d * d;
  }
  const float inv = inversesqrt(kiln_wg_sum(vec4(sq, 0.0, 0.0, 0.0)).x / float(@ROW@) + @EPS@);
  for (int c = t; c < @ROW@; c += @NT@) {
    float y = (kiln_row[c] - mean) * inv * float(@G@_ld(c));
//@if BETA
    y += float(@B@_ld(c));
//@end
    @Z@_st(row * @ROW@ + c, @ZS@(y));
  }
}
