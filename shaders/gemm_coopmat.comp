//! Cooperative-matrix (NV) GEMM for fp16 (planner/gemm_coopmat.cc, which
//! picks the tile and says why). Shared memory, all strides and fragment
//! offsets multiples of 16 bytes:
//!   ca_tile[BM][LDA]  A rows (k contiguous), LDA = BK + 8 halves
//!   cb_tile[BK][LDB]  B rows (n contiguous), LDB = BN + 8 halves
//!   cc_tile[WM * WN][FM][SCS]  per subgroup, one row of its accumulator
//!                     fragments while they are written out; SCS = SN + 4.
//! Subgroup s owns the SM x SN block at rows (s / WN) * SM, columns
//! (s % WN) * SN of the tile: TM x TN fragments. Every loop with a constant
//! trip count is [[unroll]] (rolled, NVIDIA's compiler kept the fragments
//! out of registers: half the speed).
//!   @FM@ @FN@ @FK@    fragment shape
//!   @BM@ @BN@ @BK@    tile shape
//!   @SG@ @WM@ @WN@    subgroup size, subgroup grid
//!   @ACC_BITS@ @ACC_TYPE@ @ACC_ZERO@  accumulator: 32/float/0.0 or
//!                     16/float16_t/float16_t(0.0)
//!   A_M_FASTEST       consecutive invocations load consecutive m of A
//!   SPLIT_K           split-K: the grid's z also enumerates slices of K
//!                     (GEMM_KCHUNK each, a multiple of BK); each workgroup
//!                     writes its partial tile to GP [slice][batch][M][N]
//!                     (fp32) for gemm_splitk_reduce.comp to add and store
//!   FIXUP             (with SPLIT_K) instead of the reduce pass, the last
//!                     workgroup to arrive at its tile (counter GC, model
//!                     state; GP coherent) adds the GEMM_SPLIT slices in
//!                     order and stores them, as gemm_tile.comp's FIXUP does

const int FM = @FM@, FN = @FN@, FK = @FK@;
const int BM = @BM@, BN = @BN@, BK = @BK@;
const int SG = @SG@, WM = @WM@, WN = @WN@;
const int NT = WM * WN * SG;  // invocations: a WM x WN grid of subgroups
const int SM = BM / WM, SN = BN / WN, TM = SM / FM, TN = SN / FN;
const int LDA = BK + 8, LDB = BN + 8, SCS = SN + 4;
const int A_LD = BM * BK / NT, B_LD = BN * BK / NT;  // tile elements each invocation loads
shared float16_t ca_tile[BM * LDA];
shared float16_t cb_tile[BK * LDB];
shared @ACC_TYPE@ cc_tile[WM * WN * FM * SCS];
//@if FIXUP
shared int cm_last;  // this workgroup arrived last at its tile
//@end

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
  fcoopmatNV<@ACC_BITS@, gl_ScopeSubgroup, FM, FN> acc[TM * TN];
  [[unroll]] for (int i = 0; i < TM * TN; ++i) acc[i] = fcoopmatNV<@ACC_BITS@, gl_ScopeSubgroup, FM, FN>(@ACC_ZERO@);
  float16_t pa[A_LD], pb[B_LD];  // the next K step's tile elements
  {
    [[unroll]] for (int j = 0; j < A_LD; ++j) {
//@if A_M_FASTEST
      int mm = tid % BM, kk = tid / BM + j * (NT / BM);
//@else
      int kk = tid % BK, mm = tid / BK + j * (NT / BK);
//@end
      int m = m0 + mm, k = k_begin + kk;
      pa[j] = float16_t(0.0);
      if (m < GEMM_M && k < k_end) pa[j] = float16_t(gemm_a(b, m, k));
    }
    [[unroll]] for (int j = 0; j < B_LD; ++j) {
      int nn = tid % BN, kk = tid / BN + j * (NT / BN);
      int n = n0 + nn, k = k_begin + kk;
      pb[j] = float16_t(0.0);
      if (n < GEMM_N && k < k_end) pb[j] = float16_t(gemm_b(b, k, n));
    }
  }
  for (int k0 = k_begin; k0 < k_end; k0 += BK) {
    [[unroll]] for (int j = 0; j < A_LD; ++j) {
//@if A_M_FASTEST
      int mm = tid % BM, kk = tid / BM + j * (NT / BM);
//@else
      int kk = tid % BK, mm = tid / BK + j * (NT / BK);
//@end
      ca_tile[mm * LDA + kk] = pa[j];
    }
    [[unroll]] for (int j = 0; j < B_LD; ++j) {
      int nn = tid % BN, kk = tid / BN + j * (NT / BN);
      cb_tile[kk * LDB + nn] = pb[j];
    }
    barrier();
    if (k0 + BK < k_end) {
    [[unroll]] for (int j = 0; j < A_LD; ++j) {
//@if A_M_FASTEST
      int mm = tid % BM, kk = tid / BM + j * (NT / BM);
//@else
      int kk = tid % BK, mm = tid / BK + j * (NT / BK);
//@end
      int m = m0 + mm, k = k0 + BK + kk;
      pa[j] = float16_t(0.0);
      if (m < GEMM_M && k < k_end) pa[j] = float16_t(gemm_a(b, m, k));
    }
    [[unroll]] for (int j = 0; j < B_LD; ++j) {
      int nn = tid % BN, kk = tid / BN + j * (NT / BN);
      int n = n0 + nn, k = k0 + BK + kk;
      pb[j] = float16_t(0.0);
      if (n < GEMM_N && k < k_end) pb[j] = float16_t(gemm_b(b, k, n));
    }
    }
    [[unroll]] for (int kk = 0; kk < BK; kk += FK) {
      fcoopmatNV<16, gl_ScopeSubgroup, FM, FK> fa[TM];
      fcoopmatNV<16, gl_ScopeSubgroup, FK, FN> fb[TN];
      [[unroll]] for (int i = 0; i < TM; ++i)
        coopMatLoadNV(fa[i], ca_tile, uint((sm0 + i * FM) * LDA + kk), uint(LDA), false);
      [[unroll]] for (int j = 0; j < TN; ++j)
        coopMatLoadNV(fb[j], cb_tile, uint(kk * LDB + sn0 + j * FN), uint(LDB), false);
      [[unroll]] for (int i = 0; i < TM; ++i)
        [[unroll]] for (int j = 0; j < TN; ++j) acc[i * TN + j] = coopMatMulAddNV(fa[i], fb[j], acc[i * TN + j]);
    }
    barrier();
  }
  // Out: one fragment row at a time through this subgroup's staging rows.
  int sc0 = sg * FM * SCS;
  [[unroll]] for (int i = 0; i < TM; ++i) {
    [[unroll]] for (int j = 0; j < TN; ++j) coopMatStoreNV(acc[i * TN + j], cc_tile, uint(sc0 + j * FN), uint(SCS), false);
    barrier();
    for (int q = lane; q < FM * (SN / 4); q += SG) {
      int r = q / (SN / 4), cq = (q % (SN / 4)) * 4;
      int m = m0 + sm0 + i * FM + r, n = n0 + sn0 + cq;
      int o = sc0 + r * SCS + cq;
      if (m < GEMM_M && n < GEMM_N) {
        vec4 v = vec4(float(cc_tile[o]), float(cc_tile[o + 1]), float(cc_tile[o + 2]), float(cc_tile[o + 3]));
//@if SPLIT_K
        int p = ((slice * GEMM_BATCH + b) * GEMM_M + m) * GEMM_N + n;
        for (int j = 0; j < 4; ++j)
          if (n + j < GEMM_N) GP_data[p + j] = v[j];
//@else
        gemm_store4(b, m, n, v);
//@end
      }
    }
    barrier();
  }
//@if FIXUP
  // As gemm_tile.comp's FIXUP: fence the slice, count the arrival, and the
  // last workgroup at this tile fences and adds slices 0..S-1 in order.
  memoryBarrierBuffer();
  barrier();
  if (tid == 0) {
    int tile = (b * int(gl_NumWorkGroups.y) + int(gl_WorkGroupID.y)) * int(gl_NumWorkGroups.x) +
               int(gl_WorkGroupID.x);
    int before = atomicAdd(GC_data[tile], 1);
    cm_last = before == GEMM_SPLIT - 1 ? 1 : 0;
    if (cm_last != 0) atomicExchange(GC_data[tile], 0);
  }
  barrier();
  if (cm_last == 0) return;
  memoryBarrierBuffer();
  for (int q = tid; q < BM * (BN / 4); q += NT) {
    int m = m0 + q / (BN / 4), n = n0 + (q % (BN / 4)) * 4;
    if (m >= GEMM_M || n >= GEMM_N) continue;
    vec4 v = vec4(0.0);
    for (int s = 0; s < GEMM_SPLIT; ++s) {
      int p = ((s * GEMM_BATCH + b) * GEMM_M + m) * GEMM_N + n;
      for (int j = 0; j < 4; ++j)
        if (n + j < GEMM_N) v[j] += GP_data[p + j];
    }
    gemm_store4(b, m, n, v);
  }
//@end
}
