//! The integer GEMM on packed int8 dot products (planner/gemm_int.cc,
//! emit_int8_dot_gemm; gemm_int.h says what the lowering's helpers
//! gemm_a_raw, gemm_a_zero, gemm_b_packed, gemm_b_colsum and gemm_store4
//! do): C[b, m, n] = sum over k of (A(b, m, k) - za(b, m)) * B'(b, k, n),
//! where B' (B minus its zero point) fits int8 and was packed at plan time,
//! four k to a 32-bit word. A's raw 8-bit values are packed the same way as
//! the tile is loaded; each pair of words is one SPIR-V OpSDot (int8 A) or
//! OpSUDot (uint8 A: B' signed, A unsigned), added to an int32 accumulator
//! (wrapping, as ONNX's int32 arithmetic; the saturating OpSDotAccSat would
//! differ on overflow). A's zero point comes out once per element at the
//! end: acc - za * (sum over k of B'), the helpers' gemm_acc_finish (exact
//! because the lowering pads a convolution's A with za, not 0).
//! A workgroup computes a BM x BN tile with (BN/4) x (BM/TM) invocations,
//! each a TM x 4 register block; K advances BKW words (4 BKW values) at a
//! time through shared tiles of words.
//!   @BM@ @BN@ @TM@  tile rows, tile columns, rows per invocation
//!   A_M_FASTEST     consecutive invocations load consecutive m of A (else k)
//!   A_UNSIGNED      A's raw values are uint8 (else int8)
//!   SPLIT_K         the grid's z also enumerates slices of K (GEMM_KCHUNK
//!                   values each, a multiple of 4 * BKW); each workgroup
//!                   writes its raw sums to GP [slice][batch][M][N] (int32)
//!                   for gemm_splitk_reduce.comp, which takes A's zero
//!                   point out (the helpers' gemm_acc_finish) and stores

// OpSDot (4450) and OpSUDot (4452) with PackedVectorFormat4x8Bit (0):
// core in SPIR-V 1.6 (Vulkan 1.3); glslang 12 has no GLSL built-in for them.
spirv_instruction(capabilities = [6019, 6018], id = 4450)
int kiln_sdot4x8(int a, int b, spirv_literal int packed_vector_format);
spirv_instruction(capabilities = [6019, 6018], id = 4452)
int kiln_sudot4x8(int a_signed, int b_unsigned, spirv_literal int packed_vector_format);

const int BM = @BM@, BN = @BN@, BKW = 8, TM = @TM@;
const int TX = BN / 4, TY = BM / TM, NT = TX * TY;
const int A_LD = BM * BKW / NT, B_LD = BN * BKW / NT;  // tile words each invocation loads
shared int gi_a[BKW][BM + 1];  // +1: k-major stores hit distinct banks
shared ivec4 gi_b[BKW][BN / 4];

// A(b, m, k .. k+3), raw, as one word (byte j = k + j; 0 past K, where B'
// is 0 too).
int pack_a(int b, int m, int k) {
  int w = 0;
  for (int j = 0; j < 4; ++j)
    if (k + j < GEMM_K) w |= (gemm_a_raw(b, m, k + j) & 255) << (8 * j);
  return w;
}

int dot4x8(int a, int bw) {
//@if A_UNSIGNED
  return kiln_sudot4x8(bw, a, 0);
//@else
  return kiln_sdot4x8(a, bw, 0);
//@end
}

void main() {
  int tx = int(gl_LocalInvocationID.x), ty = int(gl_LocalInvocationID.y);
  int tid = ty * TX + tx;
  int n0 = int(gl_WorkGroupID.x) * BN;
  int m0 = int(gl_WorkGroupID.y) * BM;
//@if SPLIT_K
  int b = int(gl_WorkGroupID.z) % GEMM_BATCH;
  int slice = int(gl_WorkGroupID.z) / GEMM_BATCH;
  int kw_begin = slice * (GEMM_KCHUNK / 4);
  int kwords = min((GEMM_K + 3) / 4, kw_begin + GEMM_KCHUNK / 4);
//@else
  int b = int(gl_WorkGroupID.z);
  int kw_begin = 0, kwords = (GEMM_K + 3) / 4;
//@end
  ivec4 acc[TM];
  for (int i = 0; i < TM; ++i) acc[i] = ivec4(0);
  for (int kw0 = kw_begin; kw0 < kwords; kw0 += BKW) {
    for (int j = 0; j < A_LD; ++j) {
//@if A_M_FASTEST
      int mm = tid % BM, kk = tid / BM + j * (NT / BM);
//@else
      int kk = tid % BKW, mm = tid / BKW + j * (NT / BKW);
//@end
      int m = m0 + mm, kw = kw0 + kk;
      gi_a[kk][mm] = (m < GEMM_M && kw < kwords) ? pack_a(b, m, 4 * kw) : 0;
    }
    for (int j = 0; j < B_LD; ++j) {
      int nn = tid % BN, kk = tid / BN + j * (NT / BN);
      int n = n0 + nn, kw = kw0 + kk;
      gi_b[kk][nn >> 2][nn & 3] = (n < GEMM_N && kw < kwords) ? gemm_b_packed(b, kw, n) : 0;
    }
    barrier();
    for (int kk = 0; kk < BKW; ++kk) {
      ivec4 bv = gi_b[kk][tx];
      for (int i = 0; i < TM; ++i) {
        int a = gi_a[kk][ty + i * TY];
        acc[i] += ivec4(dot4x8(a, bv.x), dot4x8(a, bv.y), dot4x8(a, bv.z), dot4x8(a, bv.w));
      }
    }
    barrier();
  }
  int n = n0 + tx * 4;
  if (n >= GEMM_N) return;
  for (int i = 0; i < TM; ++i) {
    int m = m0 + ty + i * TY;
    if (m >= GEMM_M) continue;
//@if SPLIT_K
    int p = ((slice * GEMM_BATCH + b) * GEMM_M + m) * GEMM_N + n;
    if (n + 4 <= GEMM_N) {
      GP_store4(p, acc[i]);
    } else {
      for (int j = 0; j < 4; ++j)
        if (n + j < GEMM_N) GP_data[p + j] = acc[i][j];
    }
//@else
    gemm_store4(b, m, n, gemm_acc_finish(b, m, n, acc[i]));
//@end
  }
}
