//! Cooperative-matrix (NV) GEMM for fp16 (planner/gemm_coopmat.cc, which
//! picks the tile and says why). Shared memory, all strides and fragment
//! offsets multiples of 16 bytes:
//!   A tile [BM][LDA8] A rows (k contiguous), LDA8 = (BK + 8) / 8
//!   B tile [BK][LDB8] B rows (n contiguous), LDB8 = (BN + 8) / 8
//!                     both as uvec4, 8 halves each: every shared-memory
//!                     store and global load of a tile is 16 bytes, and the
//!                     fragment loads address the tiles in those units
//!   C staging [WM * WN][FM][SCS]  per subgroup, one row of its accumulator
//!                     fragments while they are written out; SCS = SN + 4;
//!                     with fp32 accumulators (ALIAS_C) in the tiles' memory
//! Each invocation stages A_UNITS and B_UNITS units of 8 halves per K step:
//! 8 consecutive k of one A row, 8 consecutive n of one B row. A unit is one
//! 16-byte load where the lowering defines GEMM_A8 / GEMM_B8 (gemm_a8,
//! gemm_b8: the operand is contiguous there and the sizes keep every unit
//! whole and aligned; gemm_kernels.h), else 8 gemm_a / gemm_b reads packed.
//! Subgroup s owns the SM x SN block at rows (s / WN) * SM, columns
//! (s % WN) * SN of the tile: TM x TN fragments. Every loop with a constant
//! trip count is [[unroll]] (rolled, NVIDIA's compiler kept the fragments
//! out of registers: half the speed).
//!   @FM@ @FN@ @FK@    fragment shape
//!   @BM@ @BN@ @BK@    tile shape
//!   @SG@ @WM@ @WN@    subgroup size, subgroup grid
//!   @ACC_BITS@ @ACC_TYPE@ @ACC_ZERO@  accumulator: 32/float/0.0 or
//!                     16/float16_t/float16_t(0.0)
//!   ALIAS_C           fp32 accumulators: the C staging shares the tiles'
//!                     shared memory (else its own array of ACC_TYPE)
//!   DOUBLE_BUFFER     two copies of the A and B tiles: while a K step
//!                     multiplies from one, the next step's units (already
//!                     in registers) are stored into the other and the step
//!                     after next is read from global memory; one barrier
//!                     per K step instead of two
//!   A_M_FASTEST       consecutive invocations load consecutive m of A
//!   B_SPLIT           B is read in fp32 (a weight the precision policy
//!                     keeps): each unit is staged as two fp16 tiles, hi =
//!                     fp16(b) and lo = fp16((b - hi) * 2^11) (scaled: the
//!                     remainder itself would be an fp16 subnormal, or
//!                     flushed, for most weights), A is multiplied by both
//!                     into separate fp32 accumulators, and acc + lo_acc *
//!                     2^-11 is stored: ~22 bits of B (GEMM_B8 unused; fp32
//!                     accumulators only)
//!   M_MAJOR           Y's index is contiguous in m (GemmProblem::store_m_major):
//!                     a subgroup writes its staged rows out a column at a
//!                     time, neighbouring lanes on neighbouring rows, and
//!                     with SPLIT_K the partials go to GP as [slice][batch]
//!                     [N][M] (not with FIXUP)
//!   SPLIT_K           split-K: the grid's z also enumerates slices of K
//!                     (GEMM_KCHUNK each, a multiple of BK); each workgroup
//!                     writes its partial tile to GP [slice][batch][M][N]
//!                     (fp32) for gemm_splitk_reduce.comp to add and store
//!   FIXUP             (with SPLIT_K) instead of the reduce pass, the last
//!                     workgroup to arrive at its tile (counter GC, model
//!                     state; GP coherent) adds the GEMM_SPLIT slices in
//!                     order and stores them, as gemm_tile.comp's FIXUP does
//! Where the helpers define GEMM_ROW_PROLOGUE, every invocation first runs
//! gemm_row_prologue(b, m0, tid) and a barrier follows (gemm_kernels.h).

const int FM = @FM@, FN = @FN@, FK = @FK@;
const int BM = @BM@, BN = @BN@, BK = @BK@;
const int SG = @SG@, WM = @WM@, WN = @WN@;
const int NT = WM * WN * SG;  // invocations: a WM x WN grid of subgroups
const int SM = BM / WM, SN = BN / WN, TM = SM / FM, TN = SN / FN;
const int LDA8 = (BK + 8) / 8, LDB8 = (BN + 8) / 8, SCS = SN + 4;
const int KQ = BK / 8, NQ = BN / 8;  // units per A row, per B row
const int A_UNITS = BM * KQ / NT, B_UNITS = BK * NQ / NT;
// The tiles in one array: A at CA0, B at CB0, B's lo remainder at CBL0;
// with DOUBLE_BUFFER a second copy of all three ST units further on.
const int CA0 = 0, CB0 = BM * LDA8, CBL0 = CB0 + BK * LDB8;
//@if B_SPLIT
const int ST = CBL0 + BK * LDB8;
//@else
const int ST = CBL0;
//@end
//@if DOUBLE_BUFFER
const int AB_UNITS = 2 * ST;
//@else
const int AB_UNITS = ST;
//@end
// This invocation's units: A row am + j * A_STEP at unit column aq (or,
// m-fastest, row am at unit column aq + j * A_STEP), B row bk + j * B_STEP
// at unit column bq. The same at every K step, so their index math hoists.
//@if A_M_FASTEST
const int A_STEP = NT / BM;
//@else
const int A_STEP = NT / KQ;
//@end
const int B_STEP = NT / NQ;
uvec4 cm_pa[A_UNITS], cm_pb[B_UNITS];  // the next K step's units, in registers
//@if B_SPLIT
uvec4 cm_pbl[B_UNITS];
//@end
//@if ALIAS_C
// fp32 accumulators: the C staging reuses the tiles' memory once the K
// loop's last barrier is passed, four floats per uvec4 (SCS and every
// staged row's offset are multiples of 4), so a workgroup holds half the
// shared memory and an SM more workgroups.
const int C_UNITS = WM * WN * FM * SCS / 4;
shared uvec4 cm_smem[AB_UNITS > C_UNITS ? AB_UNITS : C_UNITS];
#define CC_STORE(f, o) coopMatStoreNV(f, cm_smem, uint((o) / 4), uint(SCS / 4), false)
#define CC_LOAD4(o) uintBitsToFloat(cm_smem[(o) >> 2])
//@else
shared uvec4 cm_smem[AB_UNITS];
shared @ACC_TYPE@ cc_tile[WM * WN * FM * SCS];
#define CC_STORE(f, o) coopMatStoreNV(f, cc_tile, uint(o), uint(SCS), false)
#define CC_LOAD4(o) vec4(float(cc_tile[o]), float(cc_tile[(o) + 1]), float(cc_tile[(o) + 2]), float(cc_tile[(o) + 3]))
//@end
//@if FIXUP
shared int cm_last;  // this workgroup arrived last at its tile
//@end

// A(b, m, k .. k+7) as 8 halves, zero past M or k_end (k a multiple of 8).
uvec4 cm_load_a(int b, int m, int k, int k_end) {
  if (m >= GEMM_M || k >= k_end) return uvec4(0);
#ifdef GEMM_A8
  return gemm_a8(b, m, k);
#else
  float v[8];
  [[unroll]] for (int i = 0; i < 8; ++i) v[i] = k + i < k_end ? gemm_a(b, m, k + i) : 0.0;
  return uvec4(packHalf2x16(vec2(v[0], v[1])), packHalf2x16(vec2(v[2], v[3])), packHalf2x16(vec2(v[4], v[5])),
               packHalf2x16(vec2(v[6], v[7])));
#endif
}

//@if B_SPLIT
// B(b, k, n .. n+7) read in fp32 as two fp16 units, hi and lo (zero past
// k_end or N): hi + lo * 2^-11 is the value to about 2^-22 relative.
void cm_load_b_split(int b, int k, int n, int k_end, out uvec4 hi, out uvec4 lo) {
  hi = uvec4(0);
  lo = uvec4(0);
  if (n >= GEMM_N || k >= k_end) return;
  [[unroll]] for (int q = 0; q < 4; ++q) {
    vec2 v = vec2(n + 2 * q < GEMM_N ? gemm_b(b, k, n + 2 * q) : 0.0,
                  n + 2 * q + 1 < GEMM_N ? gemm_b(b, k, n + 2 * q + 1) : 0.0);
    // v rounded to fp16 precision (nearest-even) with integer arithmetic:
    // compilers fold unpackHalf2x16(packHalf2x16(v)) to v (the NVIDIA one
    // does; lo was then zero), as round_f16.glsl says of image stores.
    uvec2 bits = floatBitsToUint(v);
    vec2 h = uintBitsToFloat((bits + 0x00000FFFu + ((bits >> 13) & 1u)) & 0xFFFFE000u);
    hi[q] = packHalf2x16(h);
    lo[q] = packHalf2x16((v - h) * 2048.0);
  }
}
//@else
// B(b, k, n .. n+7) likewise, zero past k_end or N (n a multiple of 8).
uvec4 cm_load_b(int b, int k, int n, int k_end) {
  if (n >= GEMM_N || k >= k_end) return uvec4(0);
#ifdef GEMM_B8
  return gemm_b8(b, k, n);
#else
  float v[8];
  [[unroll]] for (int i = 0; i < 8; ++i) v[i] = n + i < GEMM_N ? gemm_b(b, k, n + i) : 0.0;
  return uvec4(packHalf2x16(vec2(v[0], v[1])), packHalf2x16(vec2(v[2], v[3])), packHalf2x16(vec2(v[4], v[5])),
               packHalf2x16(vec2(v[6], v[7])));
#endif
}
//@end


// The staged row and first column of output quad q (0 <= q < FM * SN / 4)
// of a subgroup's fragment row: quads numbered along the row, or with
// M_MAJOR down the column.
int cm_quad_row(int q) {
//@if M_MAJOR
  return q % FM;
//@else
  return q / (SN / 4);
//@end
}
int cm_quad_col(int q) {
//@if M_MAJOR
  return (q / FM) * 4;
//@else
  return (q % (SN / 4)) * 4;
//@end
}

// Reads the units of the K step at k0 into cm_pa / cm_pb (/ cm_pbl).
void cm_fetch(int b, int m0, int n0, int am, int aq, int bk, int bq, int k0, int k_end) {
  [[unroll]] for (int j = 0; j < A_UNITS; ++j) {
//@if A_M_FASTEST
    cm_pa[j] = cm_load_a(b, m0 + am, k0 + (aq + j * A_STEP) * 8, k_end);
//@else
    cm_pa[j] = cm_load_a(b, m0 + am + j * A_STEP, k0 + aq * 8, k_end);
//@end
  }
  [[unroll]] for (int j = 0; j < B_UNITS; ++j) {
//@if B_SPLIT
    cm_load_b_split(b, k0 + bk + j * B_STEP, n0 + bq * 8, k_end, cm_pb[j], cm_pbl[j]);
//@else
    cm_pb[j] = cm_load_b(b, k0 + bk + j * B_STEP, n0 + bq * 8, k_end);
//@end
  }
}

// Stores cm_pa / cm_pb (/ cm_pbl) into the tiles at unit offset `base` (0 or ST).
void cm_stage(int base, int am, int aq, int bk, int bq) {
  [[unroll]] for (int j = 0; j < A_UNITS; ++j) {
//@if A_M_FASTEST
    cm_smem[base + CA0 + am * LDA8 + aq + j * A_STEP] = cm_pa[j];
//@else
    cm_smem[base + CA0 + (am + j * A_STEP) * LDA8 + aq] = cm_pa[j];
//@end
  }
  [[unroll]] for (int j = 0; j < B_UNITS; ++j) {
    cm_smem[base + CB0 + (bk + j * B_STEP) * LDB8 + bq] = cm_pb[j];
//@if B_SPLIT
    cm_smem[base + CBL0 + (bk + j * B_STEP) * LDB8 + bq] = cm_pbl[j];
//@end
  }
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
//@if A_M_FASTEST
  int am = tid % BM, aq = tid / BM;
//@else
  int aq = tid % KQ, am = tid / KQ;
//@end
  int bq = tid % NQ, bk = tid / NQ;
  fcoopmatNV<@ACC_BITS@, gl_ScopeSubgroup, FM, FN> acc[TM * TN];
  [[unroll]] for (int i = 0; i < TM * TN; ++i) acc[i] = fcoopmatNV<@ACC_BITS@, gl_ScopeSubgroup, FM, FN>(@ACC_ZERO@);
//@if B_SPLIT
  fcoopmatNV<32, gl_ScopeSubgroup, FM, FN> acc_lo[TM * TN];  // A * (B's lo tiles)
  [[unroll]] for (int i = 0; i < TM * TN; ++i) acc_lo[i] = fcoopmatNV<32, gl_ScopeSubgroup, FM, FN>(0.0);
//@end
#ifdef GEMM_ROW_PROLOGUE
  // Per-row statistics the helpers' gemm_a reads (a LayerNorm before the
  // GEMM: fusion_norm_gemm.h), for the tile's rows, before any A load.
  gemm_row_prologue(b, m0, tid);
  barrier();
#endif
  cm_fetch(b, m0, n0, am, aq, bk, bq, k_begin, k_end);
//@if DOUBLE_BUFFER
  cm_stage(0, am, aq, bk, bq);
  barrier();
  if (k_begin + BK < k_end) cm_fetch(b, m0, n0, am, aq, bk, bq, k_begin + BK, k_end);
  int base = 0;  // the stage this K step multiplies from
//@else
  const int base = 0;
//@end
  for (int k0 = k_begin; k0 < k_end; k0 += BK) {
//@if DOUBLE_BUFFER
//@else
    cm_stage(0, am, aq, bk, bq);
    barrier();
    if (k0 + BK < k_end) cm_fetch(b, m0, n0, am, aq, bk, bq, k0 + BK, k_end);
//@end
    [[unroll]] for (int kk = 0; kk < BK; kk += FK) {
      fcoopmatNV<16, gl_ScopeSubgroup, FM, FK> fa[TM];
      fcoopmatNV<16, gl_ScopeSubgroup, FK, FN> fb[TN];
      [[unroll]] for (int i = 0; i < TM; ++i)
        coopMatLoadNV(fa[i], cm_smem, uint(base + CA0 + (sm0 + i * FM) * LDA8 + kk / 8), uint(LDA8), false);
      [[unroll]] for (int j = 0; j < TN; ++j)
        coopMatLoadNV(fb[j], cm_smem, uint(base + CB0 + kk * LDB8 + (sn0 + j * FN) / 8), uint(LDB8), false);
      [[unroll]] for (int i = 0; i < TM; ++i)
        [[unroll]] for (int j = 0; j < TN; ++j) acc[i * TN + j] = coopMatMulAddNV(fa[i], fb[j], acc[i * TN + j]);
//@if B_SPLIT
      [[unroll]] for (int j = 0; j < TN; ++j)
        coopMatLoadNV(fb[j], cm_smem, uint(base + CBL0 + kk * LDB8 + (sn0 + j * FN) / 8), uint(LDB8), false);
      [[unroll]] for (int i = 0; i < TM; ++i)
        [[unroll]] for (int j = 0; j < TN; ++j) acc_lo[i * TN + j] = coopMatMulAddNV(fa[i], fb[j], acc_lo[i * TN + j]);
//@end
    }
//@if DOUBLE_BUFFER
    // The other stage was last read in the previous step, before the
    // barrier that ended it: store the next step's units there, then read
    // the step after next while the barrier and the next step's multiplies
    // wait for no global memory.
    if (k0 + BK < k_end) {
      cm_stage(ST - base, am, aq, bk, bq);
      if (k0 + 2 * BK < k_end) cm_fetch(b, m0, n0, am, aq, bk, bq, k0 + 2 * BK, k_end);
    }
    base = ST - base;
//@end
    barrier();
  }
  // Out: one fragment row at a time through this subgroup's staging rows.
  int sc0 = sg * FM * SCS;
  [[unroll]] for (int i = 0; i < TM; ++i) {
//@if B_SPLIT
    // The lo products first, into registers (adding fragments, acc + acc_lo
    // * 2^-11, crashes the SPIR-V optimizer of SPIRV-Tools 2023.1).
    const int LOQ = FM * (SN / 4) / SG;
    vec4 lo_v[LOQ];
    [[unroll]] for (int j = 0; j < TN; ++j) CC_STORE(acc_lo[i * TN + j], sc0 + j * FN);
    barrier();
    [[unroll]] for (int t = 0; t < LOQ; ++t) {
      int q = lane + t * SG;
      int o = sc0 + cm_quad_row(q) * SCS + cm_quad_col(q);
      lo_v[t] = CC_LOAD4(o) * (1.0 / 2048.0);
    }
    barrier();
//@end
    [[unroll]] for (int j = 0; j < TN; ++j) CC_STORE(acc[i * TN + j], sc0 + j * FN);
    barrier();
    for (int q = lane; q < FM * (SN / 4); q += SG) {
      int r = cm_quad_row(q), cq = cm_quad_col(q);
      int m = m0 + sm0 + i * FM + r, n = n0 + sn0 + cq;
      int o = sc0 + r * SCS + cq;
      if (m < GEMM_M && n < GEMM_N) {
        vec4 v = CC_LOAD4(o);
//@if B_SPLIT
        v += lo_v[(q - lane) / SG];
//@end
//@if SPLIT_K
//@if M_MAJOR
        int p = ((slice * GEMM_BATCH + b) * GEMM_N + n) * GEMM_M + m;
        for (int j = 0; j < 4; ++j)
          if (n + j < GEMM_N) GP_data[p + j * GEMM_M] = v[j];
//@else
        int p = ((slice * GEMM_BATCH + b) * GEMM_M + m) * GEMM_N + n;
        if (n + 4 <= GEMM_N) {
          GP_store4(p, v);  // one 16-byte store where N keeps it aligned
        } else {
          for (int j = 0; j < 4; ++j)
            if (n + j < GEMM_N) GP_data[p + j] = v[j];
        }
//@end
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
    int p = (b * GEMM_M + m) * GEMM_N + n;
    for (int s = 0; s < GEMM_SPLIT; ++s) v += GP_load4(p + s * GEMM_BATCH * GEMM_M * GEMM_N);
    gemm_store4(b, m, n, v);
  }
//@end
}
