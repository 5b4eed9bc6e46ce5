//! The tiled integer GEMM of the quantized ops (planner/gemm_int.cc;
//! gemm_int.h says what the op's gemm_a, gemm_b and gemm_store4 helpers
//! do): C[b, m, n] = sum over k of A(b, m, k) * B(b, k, n), accumulated in
//! int32 (wrapping, as ONNX's int32 arithmetic) — never in floating point.
//! A workgroup computes a BM x BN tile of C with (BN/4) x (BM/TM)
//! invocations, each a TM x 4 register block; K advances BK at a time
//! through shared tiles.
//!   @BM@ @BN@ @TM@  tile rows, tile columns, rows per invocation
//!   A_M_FASTEST     consecutive invocations load consecutive m of A (else k)

const int BM = @BM@, BN = @BN@, BK = 16, TM = @TM@;
const int TX = BN / 4, TY = BM / TM, NT = TX * TY;
const int A_LD = BM * BK / NT, B_LD = BN * BK / NT;  // tile elements each invocation loads
shared int gi_a[BK][BM + 1];  // +1: k-major stores hit distinct banks
shared ivec4 gi_b[BK][BN / 4];

void main() {
  int tx = int(gl_LocalInvocationID.x), ty = int(gl_LocalInvocationID.y);
  int tid = ty * TX + tx;
  int n0 = int(gl_WorkGroupID.x) * BN;
  int m0 = int(gl_WorkGroupID.y) * BM;
  int b = int(gl_WorkGroupID.z);
  ivec4 acc[TM];
  for (int i = 0; i < TM; ++i) acc[i] = ivec4(0);
  for (int k0 = 0; k0 < GEMM_K; k0 += BK) {
    for (int j = 0; j < A_LD; ++j) {
//@if A_M_FASTEST
      int mm = tid % BM, kk = tid / BM + j * (NT / BM);
//@else
      int kk = tid % BK, mm = tid / BK + j * (NT / BK);
//@end
      int m = m0 + mm, k = k0 + kk;
      gi_a[kk][mm] = (m < GEMM_M && k < GEMM_K) ? gemm_a(b, m, k) : 0;
    }
    for (int j = 0; j < B_LD; ++j) {
      int nn = tid % BN, kk = tid / BN + j * (NT / BN);
      int n = n0 + nn, k = k0 + kk;
      gi_b[kk][nn >> 2][nn & 3] = (n < GEMM_N && k < GEMM_K) ? gemm_b(b, k, n) : 0;
    }
    barrier();
    for (int kk = 0; kk < BK; ++kk) {
      ivec4 bv = gi_b[kk][tx];
      for (int i = 0; i < TM; ++i) acc[i] += gi_a[kk][ty + i * TY] * bv;
    }
    barrier();
  }
  int n = n0 + tx * 4;
  if (n < GEMM_N)
    for (int i = 0; i < TM; ++i) {
      int m = m0 + ty + i * TY;
      if (m < GEMM_M) gemm_store4(b, m, n, acc[i]);
    }
}
