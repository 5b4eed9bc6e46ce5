//! The integer GEMM on int8 cooperative matrices (NV dialect; planner/
//! gemm_int.cc, emit_int8_dot_gemm, which picks the tile; gemm_int.h says
//! what the lowering's helpers gemm_a_raw, gemm_a_zero, gemm_b_packed,
//! gemm_b_colsum and gemm_store4 do). The same operands as
//! gemm_int8_dot.comp: B' = B - zb packed at plan time, four k to a word;
//! A's raw 8-bit values. The fragments multiply signed int8 only, so a
//! uint8 A enters as a - 128 (A_OFFSET 128; 0 for int8 A) and the sum comes
//! out as acc + (A_OFFSET - za) * (sum over k of B'), exact in wrapping
//! int32 (gemm_acc_finish, in the helpers): the lowering pads a
//! convolution's A with za, whose term cancels.
//! Shared memory, in 16-byte units of 16 int8 values:
//!   A tile [BM][LDA]   rows of A, k contiguous (row-major fragments)
//!   B tile [BN][LDB]   columns of B, k contiguous (column-major fragments),
//!                      which is how the packed words run: a unit is the
//!                      four words of one column at k .. k+15
//!   C staging [WM * WN][FM][SCS] int32, per subgroup one row of its
//!                      accumulator fragments while they are written out,
//!                      in the tiles' memory once the K loop is done
//! A unit is 16 gemm_a_raw calls, or one gemm_a16 where the lowering
//! defines GEMM_A16 (gemm_int.h).
//! LDA = LDB = BK / 16 + 1: the pad unit spreads a column's stores over
//! banks. Every loop with a constant trip count is [[unroll]] (as in
//! gemm_coopmat.comp: rolled, NVIDIA's compiler spills the fragments).
//!   @FM@ @FN@ @FK@    fragment shape (int8 A FM x FK, B FK x FN, int32 C)
//!   @BM@ @BN@ @BK@    tile shape (BK a multiple of FK and of 16)
//!   @SG@ @WM@ @WN@    subgroup size, subgroup grid
//!   @A_OFFSET@        128 for a uint8 A, else 0
//!   A_M_FASTEST       consecutive invocations load consecutive m of A
//!   SPLIT_K           the grid's z also enumerates slices of K
//!                     (GEMM_KCHUNK each, a multiple of BK); each workgroup
//!                     writes its raw partial sums to GP [slice][batch][M][N]
//!                     (int32) for gemm_splitk_reduce.comp to add, finish
//!                     and store

const int FM = @FM@, FN = @FN@, FK = @FK@;
const int BM = @BM@, BN = @BN@, BK = @BK@;
const int SG = @SG@, WM = @WM@, WN = @WN@;
const int A_OFFSET = @A_OFFSET@;
const int NT = WM * WN * SG;
const int SM = BM / WM, SN = BN / WN, TM = SM / FM, TN = SN / FN;
const int KQ = BK / 16;  // units per tile row (A) or column (B)
const int LDA = KQ + 1, LDB = KQ + 1, SCS = SN + 4;
const int A_UNITS = BM * KQ / NT, B_UNITS = BN * KQ / NT;
const int CA0 = 0, CB0 = BM * LDA, AB_UNITS = CB0 + BN * LDB;
const int C_UNITS = WM * WN * FM * SCS / 4;
shared uvec4 cm_smem[AB_UNITS > C_UNITS ? AB_UNITS : C_UNITS];

// A(b, m, k .. k+15) shifted to int8, one unit; zero past M or k_end.
// Where the lowering defines GEMM_A16 (gemm_a16: the unit's 16 raw values
// as bytes, one index computation; called with k a multiple of 16 and the
// unit inside K), the shift of a uint8 A flips each byte's top bit.
uvec4 cm_load_a(int b, int m, int k, int k_end) {
  uvec4 u = uvec4(0);
  if (m >= GEMM_M || k >= k_end) return u;
#ifdef GEMM_A16
  if (k + 16 <= k_end) return A_OFFSET == 128 ? gemm_a16(b, m, k) ^ uvec4(0x80808080u) : gemm_a16(b, m, k);
#endif
  [[unroll]] for (int q = 0; q < 4; ++q) {
    uint w = 0u;
    [[unroll]] for (int j = 0; j < 4; ++j) {
      int kk = k + 4 * q + j;
      if (kk < k_end) w |= uint((gemm_a_raw(b, m, kk) - A_OFFSET) & 255) << (8 * j);
    }
    u[q] = w;
  }
  return u;
}

// B'(b, k .. k+15, n), the four packed words of column n; zero past N or
// k_end (slices end at multiples of BK, and the packing zeroes B' past K).
uvec4 cm_load_b(int b, int k, int n, int k_end) {
  uvec4 u = uvec4(0);
  if (n >= GEMM_N || k >= k_end) return u;
  [[unroll]] for (int q = 0; q < 4; ++q)
    if (k + 4 * q < k_end) u[q] = uint(gemm_b_packed(b, k / 4 + q, n));
  return u;
}

void main() {
  int tid = int(gl_LocalInvocationID.x);
  int sg = int(gl_SubgroupID), lane = int(gl_SubgroupInvocationID);
  int sm0 = (sg / WN) * SM, sn0 = (sg % WN) * SN;
  int n0 = int(gl_WorkGroupID.x) * BN;
  int m0 = int(gl_WorkGroupID.y) * BM;
//@if SPLIT_K
  int b = int(gl_WorkGroupID.z) % GEMM_BATCH;
  int slice = int(gl_WorkGroupID.z) / GEMM_BATCH;
  int k_begin = slice * GEMM_KCHUNK, k_end = min(GEMM_K, k_begin + GEMM_KCHUNK);
//@else
  int b = int(gl_WorkGroupID.z);
  int k_begin = 0, k_end = GEMM_K;
//@end
  // This invocation's units, the same at every K step: A row am (+ j *
  // A_STEP) at unit column aq (or, m-fastest, + j * A_STEP); B column bn at
  // unit bq + j * B_STEP (consecutive invocations, consecutive columns: the
  // packed words of one k are contiguous in n).
//@if A_M_FASTEST
  const int A_STEP = NT / BM;
  int am = tid % BM, aq = tid / BM;
//@else
  const int A_STEP = NT / KQ;
  int aq = tid % KQ, am = tid / KQ;
//@end
  const int B_STEP = NT / BN;
  int bn = tid % BN, bq = tid / BN;
  icoopmatNV<32, gl_ScopeSubgroup, FM, FN> acc[TM * TN];
  [[unroll]] for (int i = 0; i < TM * TN; ++i) acc[i] = icoopmatNV<32, gl_ScopeSubgroup, FM, FN>(0);
  uvec4 pa[A_UNITS], pb[B_UNITS];  // the next K step's units
  for (int k0 = k_begin; k0 < k_end; k0 += BK) {
    if (k0 == k_begin) {
      [[unroll]] for (int j = 0; j < A_UNITS; ++j) {
//@if A_M_FASTEST
        pa[j] = cm_load_a(b, m0 + am, k0 + (aq + j * A_STEP) * 16, k_end);
//@else
        pa[j] = cm_load_a(b, m0 + am + j * A_STEP, k0 + aq * 16, k_end);
//@end
      }
      [[unroll]] for (int j = 0; j < B_UNITS; ++j) pb[j] = cm_load_b(b, k0 + (bq + j * B_STEP) * 16, n0 + bn, k_end);
    }
    [[unroll]] for (int j = 0; j < A_UNITS; ++j) {
//@if A_M_FASTEST
      cm_smem[CA0 + am * LDA + aq + j * A_STEP] = pa[j];
//@else
      cm_smem[CA0 + (am + j * A_STEP) * LDA + aq] = pa[j];
//@end
    }
    [[unroll]] for (int j = 0; j < B_UNITS; ++j) cm_smem[CB0 + bn * LDB + bq + j * B_STEP] = pb[j];
    barrier();
    if (k0 + BK < k_end) {
      int k1 = k0 + BK;
      [[unroll]] for (int j = 0; j < A_UNITS; ++j) {
//@if A_M_FASTEST
        pa[j] = cm_load_a(b, m0 + am, k1 + (aq + j * A_STEP) * 16, k_end);
//@else
        pa[j] = cm_load_a(b, m0 + am + j * A_STEP, k1 + aq * 16, k_end);
//@end
      }
      [[unroll]] for (int j = 0; j < B_UNITS; ++j) pb[j] = cm_load_b(b, k1 + (bq + j * B_STEP) * 16, n0 + bn, k_end);
    }
    [[unroll]] for (int kk = 0; kk < BK; kk += FK) {
      icoopmatNV<8, gl_ScopeSubgroup, FM, FK> fa[TM];
      icoopmatNV<8, gl_ScopeSubgroup, FK, FN> fb[TN];
      [[unroll]] for (int i = 0; i < TM; ++i)
        coopMatLoadNV(fa[i], cm_smem, uint(CA0 + (sm0 + i * FM) * LDA + kk / 16), uint(LDA), false);
      [[unroll]] for (int j = 0; j < TN; ++j)
        coopMatLoadNV(fb[j], cm_smem, uint(CB0 + (sn0 + j * FN) * LDB + kk / 16), uint(LDB), true);
      [[unroll]] for (int i = 0; i < TM; ++i)
        [[unroll]] for (int j = 0; j < TN; ++j) acc[i * TN + j] = coopMatMulAddNV(fa[i], fb[j], acc[i * TN + j]);
    }
    barrier();
  }
  // Out: one fragment row at a time through this subgroup's staging rows
  // (four int32 per unit; SCS and every row's offset are multiples of 4).
  int sc0 = sg * FM * SCS;
  [[unroll]] for (int i = 0; i < TM; ++i) {
    [[unroll]] for (int j = 0; j < TN; ++j)
      coopMatStoreNV(acc[i * TN + j], cm_smem, uint((sc0 + j * FN) / 4), uint(SCS / 4), false);
    barrier();
    for (int q = lane; q < FM * (SN / 4); q += SG) {
      int r = q / (SN / 4), cq = (q % (SN / 4)) * 4;
      int m = m0 + sm0 + i * FM + r, n = n0 + sn0 + cq;
      if (m < GEMM_M && n < GEMM_N) {
        ivec4 v = ivec4(cm_smem[(sc0 + r * SCS + cq) >> 2]);
//@if SPLIT_K
        int p = ((slice * GEMM_BATCH + b) * GEMM_M + m) * GEMM_N + n;
        if (n + 4 <= GEMM_N) {
          GP_store4(p, v);
        } else {
          for (int j = 0; j < 4; ++j)
            if (n + j < GEMM_N) GP_data[p + j] = v[j];
        }
//@else
        gemm_store4(b, m, n, gemm_acc_finish(b, m, n, v));
//@end
      }
    }
    barrier();
  }
}
