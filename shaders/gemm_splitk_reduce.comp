//! Split-K second pass: one invocation per four columns of one output row
//! sums the GEMM_SPLIT partial tiles of GP (written by gemm_tile.comp or
//! gemm_coopmat.comp with SPLIT_K) and stores through the op's gemm_store4.
//! Each slice is one 16-byte load where N keeps the four columns aligned
//! (GP_load4), all of them independent: the pass is bound by load latency,
//! and a batch-1 pass has too few invocations to hide it otherwise.
//! No placeholders.

void main() {
  int q = int(gl_GlobalInvocationID.x);
  int nq = (GEMM_N + 3) / 4;
  if (q >= GEMM_BATCH * GEMM_M * nq) return;
  int n = (q % nq) * 4, r = q / nq;
  int m = r % GEMM_M, b = r / GEMM_M;
  int p = (b * GEMM_M + m) * GEMM_N + n;
  int slice_stride = GEMM_BATCH * GEMM_M * GEMM_N;
  vec4 v = vec4(0.0);
  // Lanes past N read the next row's partials (or stop at GP's end); the
  // store ignores them.
  for (int s = 0; s < GEMM_SPLIT; ++s) v += GP_load4(p + s * slice_stride);
  gemm_store4(b, m, n, v);
}
