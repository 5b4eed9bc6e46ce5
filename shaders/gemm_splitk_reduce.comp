//! Split-K second pass: one invocation per four columns of one output row
//! sums the GEMM_SPLIT partial tiles of GP (written by gemm_tile.comp with
//! SPLIT_K) and stores through the op's gemm_store4. No placeholders.

void main() {
  int q = int(gl_GlobalInvocationID.x);
  int nq = (GEMM_N + 3) / 4;
  if (q >= GEMM_BATCH * GEMM_M * nq) return;
  int n = (q % nq) * 4, r = q / nq;
  int m = r % GEMM_M, b = r / GEMM_M;
  vec4 v = vec4(0.0);
  for (int s = 0; s < GEMM_SPLIT; ++s) {
    int p = ((s * GEMM_BATCH + b) * GEMM_M + m) * GEMM_N + n;
    for (int j = 0; j < 4; ++j)
      if (n + j < GEMM_N) v[j] += GP_data[p + j];
  }
  gemm_store4(b, m, n, v);
}
