//! Split-K second pass: one invocation per four columns of one output row
//! sums the GEMM_SPLIT partial tiles of GP (written by gemm_tile.comp or
//! gemm_coopmat.comp with SPLIT_K) and stores through the op's gemm_store4.
//! Each slice is one 16-byte load where N keeps the four columns aligned
//! (GP_load4), all of them independent: the pass is bound by load latency,
//! and a batch-1 pass has too few invocations to hide it otherwise. With
//! REDUCE_LANES > 1 (a power of two, at most the subgroup size) that many
//! invocations of one subgroup share one output, each adding every
//! REDUCE_LANES-th slice, and meet through subgroup shuffles: more loads
//! in flight for deep splits. With REDUCE_M_MAJOR (GemmProblem::
//! store_m_major: Y is contiguous in m) neighbouring invocations take
//! neighbouring rows, and GP is [split][batch][N][M], read a column at a
//! time. With REDUCE_INT (the int8 cooperative-matrix GEMM,
//! gemm_int8_coopmat.comp) the partials are int32 raw sums, finished by the
//! helpers' gemm_acc_finish before the store. No placeholders.
#ifndef REDUCE_LANES
#define REDUCE_LANES 1
#endif
#ifdef REDUCE_INT
#define REDUCE_VEC4 ivec4
#define REDUCE_STORE(b, m, n, v) gemm_store4(b, m, n, gemm_acc_finish(b, m, n, v))
#else
#define REDUCE_VEC4 vec4
#define REDUCE_STORE(b, m, n, v) gemm_store4(b, m, n, v)
#endif

void main() {
#if REDUCE_LANES > 1
  // The lanes of one output must be lanes of one subgroup: numbered by
  // subgroup, which Vulkan ties to gl_SubgroupInvocationID, not to
  // gl_LocalInvocationIndex (the workgroup size is a multiple of any
  // subgroup size the planner allows). A subgroup takes `per` consecutive
  // outputs, its part p in lanes p * per .. (p + 1) * per - 1, so that
  // neighbouring lanes still read and store neighbouring outputs.
  int per = int(gl_SubgroupSize) / REDUCE_LANES, lane = int(gl_SubgroupInvocationID);
  int subgroup = int(gl_WorkGroupID.x * (gl_WorkGroupSize.x / gl_SubgroupSize) + gl_SubgroupID);
  int q = subgroup * per + lane % per, part = lane / per;
#else
  int q = int(gl_GlobalInvocationID.x), part = 0;
#endif
  int nq = (GEMM_N + 3) / 4;
  bool live = q < GEMM_BATCH * GEMM_M * nq;
#if REDUCE_LANES == 1
  if (!live) return;
#endif
#ifdef REDUCE_M_MAJOR
  int m = q % GEMM_M, r = q / GEMM_M;
  int n = (r % nq) * 4, b = r / nq;
  int p = (b * GEMM_N + n) * GEMM_M + m;
  int slice_stride = GEMM_BATCH * GEMM_N * GEMM_M;
#else
  int n = (q % nq) * 4, r = q / nq;
  int m = r % GEMM_M, b = r / GEMM_M;
  int p = (b * GEMM_M + m) * GEMM_N + n;
  int slice_stride = GEMM_BATCH * GEMM_M * GEMM_N;
#endif
  REDUCE_VEC4 v = REDUCE_VEC4(0);
  // Lanes past N read the next row's partials (or stop at GP's end); the
  // store ignores them.
  // The same trip count on every lane, so the shuffles below run in
  // uniform control flow.
  for (int s0 = 0; s0 < GEMM_SPLIT; s0 += REDUCE_LANES) {
    if (!live || s0 + part >= GEMM_SPLIT) continue;
    int ps = p + (s0 + part) * slice_stride;
#ifdef REDUCE_M_MAJOR
    // Column n + j of the row, GEMM_M apart (none past N: GP ends there).
    for (int j = 0; j < 4; ++j)
      if (n + j < GEMM_N) v[j] += GP_data[ps + j * GEMM_M];
#else
    v += GP_load4(ps);
#endif
  }
#if REDUCE_LANES > 1
  for (int o = per; o < per * REDUCE_LANES; o <<= 1) v += subgroupShuffleXor(v, uint(o));
  if (!live || part != 0) return;
#endif
  REDUCE_STORE(b, m, n, v);
}
