//! The tiled GEMM (planner/gemm_kernels.cc; gemm_kernels.h says what the
//! op's gemm_a, gemm_b and gemm_store4 helpers do). A workgroup computes a
//! BM x BN tile of C with (BN/4) x (BM/TM) invocations, each a TM x 4
//! register block; K advances BK at a time through shared tiles, the next
//! step's loads prefetched into registers.
//!   @BM@ @BN@ @TM@  tile rows, tile columns, rows per invocation
//!   @BK@            K per shared-memory step (16, 32 or 64)
//!   A_M_FASTEST     consecutive invocations load consecutive m of A (else k)
//!   @A_T@ @B_T@     the prefetch registers' type: float16_t where the operand
//!                   is an fp16 buffer, whose elements then wait unconverted
//!                   and become float at the shared-memory store (@A_F@ /
//!                   @B_F@: "float", else empty). A float register converts
//!                   right after the load, and that conversion waits for the
//!                   load before the step's multiplies can start (on an H200
//!                   the kernel ran 15-45 % slower in fp16 than in fp32)
//!   @A_ZERO@ @B_ZERO@ @A_LOAD@ @B_LOAD@  zero and the element as those
//!                   registers take them (gemm_a_h where the lowering defines
//!                   it: a convolution's padded read as stored)
//!   QUADS           TM >= 4: each invocation owns TM/4 groups of four
//!                   rows, read from the A tile as vec4s (gt_row)
//!   SPLIT_K         the grid's z also enumerates K slices (GEMM_KCHUNK
//!                   each) whose partial tiles go to GP (gemm_splitk_reduce)
//!   M_MAJOR         Y's index is contiguous in m (GemmProblem::store_m_major):
//!                   neighbouring invocations own neighbouring rows (ty),
//!                   so a warp's stores share memory sectors, and with
//!                   SPLIT_K the partials go to GP as [split][batch][N][M]
//!   (GEMM_ROW_PROLOGUE, where the helpers define it: every invocation
//!   first runs gemm_row_prologue(b, m0, tid), then a barrier; gemm_kernels.h)
//!   FIXUP           with SPLIT_K: no second pass. Each workgroup, its
//!                   partial tile in GP (coherent), counts its arrival in
//!                   GC[tile] (int, model state, zero between dispatches);
//!                   the GEMM_SPLIT-th to arrive adds the slices 0..S-1 in
//!                   order (as gemm_splitk_reduce does, so the same bits),
//!                   stores them through gemm_store4 and puts GC[tile] back
//!                   to zero for the next run.
//!   ATOMIC          with FIXUP: the slices are not kept apart. Each
//!                   workgroup atomicAdds its partial tile into GA [batch]
//!                   [M][N] (float, model state, zero between dispatches), so
//!                   the sum is spread over every workgroup of the tile
//!                   instead of left to the last one; the last reads the sums
//!                   back (GA is coherent), stores them, and puts zeros back
//!                   for the next run. The order of the additions varies from
//!                   run to run (the last bits may).

const int BM = @BM@, BN = @BN@, BK = @BK@, TM = @TM@;
const int TX = BN / 4, TY = BM / TM, NT = TX * TY;
const int A_LD = BM * BK / NT, B_LD = BN * BK / NT;  // tile elements each invocation loads
//@if QUADS
shared vec4 gt_a[BK][BM / 4 + 1];  // +1: k-major stores spread over banks
//@else
shared float gt_a[BK][BM + 1];  // +1: k-major stores hit distinct banks
//@end
shared vec4 gt_b[BK][BN / 4];
//@if FIXUP
shared int gt_last;  // this workgroup arrived last at its tile
//@end

// The tile row of accumulator acc[i] of the invocations in row ty. With
// QUADS, acc[4g .. 4g+3] are the lanes of A-tile quad ty + g * TY: four
// consecutive rows, or with M_MAJOR rows BM/4 apart, so that neighbouring
// invocations store neighbouring rows.
int gt_row(int ty, int i) {
//@if QUADS
//@if M_MAJOR
  return ty + (i >> 2) * TY + (i & 3) * (BM / 4);
//@else
  return (ty + (i >> 2) * TY) * 4 + (i & 3);
//@end
//@else
  return ty + i * TY;
//@end
}

void main() {
  // tid orders the tile loads (neighbouring invocations, neighbouring
  // addresses); (tx, ty) the register blocks.
  int tid = int(gl_LocalInvocationIndex);
//@if M_MAJOR
  int ty = tid % TY, tx = tid / TY;
//@else
  int tx = tid % TX, ty = tid / TX;
//@end
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
  vec4 acc[TM];
  for (int i = 0; i < TM; ++i) acc[i] = vec4(0.0);
  @A_T@ pa[A_LD];  // the next K step's tile elements
  @B_T@ pb[B_LD];
#ifdef GEMM_ROW_PROLOGUE
  // Per-row statistics the helpers' gemm_a reads (a LayerNorm before the
  // GEMM: fusion_norm_gemm.h), for the tile's rows, before any A load.
  gemm_row_prologue(b, m0, tid);
  barrier();
#endif
  {
    for (int j = 0; j < A_LD; ++j) {
//@if A_M_FASTEST
      int mm = tid % BM, kk = tid / BM + j * (NT / BM);
//@else
      int kk = tid % BK, mm = tid / BK + j * (NT / BK);
//@end
      int m = m0 + mm, k = k_begin + kk;
      pa[j] = @A_ZERO@;
      if (m < GEMM_M && k < k_end) pa[j] = @A_LOAD@;
    }
    for (int j = 0; j < B_LD; ++j) {
      int nn = tid % BN, kk = tid / BN + j * (NT / BN);
      int n = n0 + nn, k = k_begin + kk;
      pb[j] = @B_ZERO@;
      if (n < GEMM_N && k < k_end) pb[j] = @B_LOAD@;
    }
  }
  for (int k0 = k_begin; k0 < k_end; k0 += BK) {
    for (int j = 0; j < A_LD; ++j) {
//@if A_M_FASTEST
      int mm = tid % BM, kk = tid / BM + j * (NT / BM);
//@else
      int kk = tid % BK, mm = tid / BK + j * (NT / BK);
//@end
//@if QUADS
//@if M_MAJOR
      gt_a[kk][mm % (BM / 4)][mm / (BM / 4)] = @A_F@(pa[j]);
//@else
      gt_a[kk][mm >> 2][mm & 3] = @A_F@(pa[j]);
//@end
//@else
      gt_a[kk][mm] = @A_F@(pa[j]);
//@end
    }
    for (int j = 0; j < B_LD; ++j) {
      int nn = tid % BN, kk = tid / BN + j * (NT / BN);
      gt_b[kk][nn >> 2][nn & 3] = @B_F@(pb[j]);
    }
    barrier();
    if (k0 + BK < k_end) {
    for (int j = 0; j < A_LD; ++j) {
//@if A_M_FASTEST
      int mm = tid % BM, kk = tid / BM + j * (NT / BM);
//@else
      int kk = tid % BK, mm = tid / BK + j * (NT / BK);
//@end
      int m = m0 + mm, k = k0 + BK + kk;
      pa[j] = @A_ZERO@;
      if (m < GEMM_M && k < k_end) pa[j] = @A_LOAD@;
    }
    for (int j = 0; j < B_LD; ++j) {
      int nn = tid % BN, kk = tid / BN + j * (NT / BN);
      int n = n0 + nn, k = k0 + BK + kk;
      pb[j] = @B_ZERO@;
      if (n < GEMM_N && k < k_end) pb[j] = @B_LOAD@;
    }
    }
    for (int kk = 0; kk < BK; ++kk) {
      vec4 bv = gt_b[kk][tx];
//@if QUADS
      for (int g = 0; g < TM / 4; ++g) {
        vec4 av = gt_a[kk][ty + g * TY];
        acc[4 * g] += av.x * bv;
        acc[4 * g + 1] += av.y * bv;
        acc[4 * g + 2] += av.z * bv;
        acc[4 * g + 3] += av.w * bv;
      }
//@else
      for (int i = 0; i < TM; ++i) acc[i] += gt_a[kk][ty + i * TY] * bv;
//@end
    }
    barrier();
  }
  int n = n0 + tx * 4;
  if (n < GEMM_N)
    for (int i = 0; i < TM; ++i) {
      int m = m0 + gt_row(ty, i);
//@if SPLIT_K
//@if ATOMIC
      if (m < GEMM_M) {
        int p = (b * GEMM_M + m) * GEMM_N + n;
        for (int j = 0; j < 4; ++j)
          if (n + j < GEMM_N) atomicAdd(GA_data[p + j], acc[i][j]);
      }
//@else
//@if M_MAJOR
      if (m < GEMM_M) {
        int p = ((slice * GEMM_BATCH + b) * GEMM_N + n) * GEMM_M + m;
        for (int j = 0; j < 4; ++j)
          if (n + j < GEMM_N) GP_data[p + j * GEMM_M] = acc[i][j];
      }
//@else
      if (m < GEMM_M) {
        int p = ((slice * GEMM_BATCH + b) * GEMM_M + m) * GEMM_N + n;
        if (n + 4 <= GEMM_N) {
          GP_store4(p, acc[i]);  // one 16-byte store where N keeps it aligned
        } else {
          for (int j = 0; j < 4; ++j)
            if (n + j < GEMM_N) GP_data[p + j] = acc[i][j];
        }
      }
//@end
//@end
//@else
      if (m < GEMM_M) gemm_store4(b, m, n, acc[i]);
//@end
    }
//@if FIXUP
  // The last workgroup to arrive at this tile must see every workgroup's
  // slice: each invocation's stores (GP is coherent) are made visible
  // device-wide before invocation 0 counts the arrival, and the last
  // arriver fences again before it reads (CUDA's threadFenceReduction
  // pattern). The Vulkan memory model's scoped acquire-release barriers
  // would say the same, but lavapipe (Mesa 22.3) then let the last of a
  // few 128-invocation workgroups read stale slices now and then
  // (platform/vulkan/shader_test.cc LastWorkgroupToArriveSeesEveryWorkgroupsWrites).
  memoryBarrierBuffer();
  barrier();
  if (tid == 0) {
    int tile = (b * int(gl_NumWorkGroups.y) + int(gl_WorkGroupID.y)) * int(gl_NumWorkGroups.x) +
               int(gl_WorkGroupID.x);
    int before = atomicAdd(GC_data[tile], 1);
    gt_last = before == GEMM_SPLIT - 1 ? 1 : 0;
    // Every slice of this tile has arrived: no one else touches the counter
    // in this dispatch, and the next dispatch (a later run or Loop
    // iteration) finds it zero. An atomic, so it stays in the counter's one
    // order of modifications with the next run's increments.
    if (gt_last != 0) atomicExchange(GC_data[tile], 0);
  }
  barrier();
  if (gt_last == 0 || n >= GEMM_N) return;
  memoryBarrierBuffer();
  for (int i = 0; i < TM; ++i) {
    int m = m0 + gt_row(ty, i);
    if (m >= GEMM_M) continue;
    vec4 v = vec4(0.0);
//@if ATOMIC
    // Plain loads and stores (GA is coherent): every other workgroup's
    // additions reached device memory before it counted its arrival, and
    // the zeros are stored before the next dispatch's barrier.
    int p = (b * GEMM_M + m) * GEMM_N + n;
    for (int j = 0; j < 4; ++j)
      if (n + j < GEMM_N) v[j] = GA_data[p + j];
    for (int j = 0; j < 4; ++j)
      if (n + j < GEMM_N) GA_data[p + j] = 0.0;
//@else
    for (int s = 0; s < GEMM_SPLIT; ++s) {
      int p = ((s * GEMM_BATCH + b) * GEMM_M + m) * GEMM_N + n;
      for (int j = 0; j < 4; ++j)
        if (n + j < GEMM_N) v[j] += GP_data[p + j];
    }
//@end
    gemm_store4(b, m, n, v);
  }
//@end
}
