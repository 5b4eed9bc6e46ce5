//! Split-K second pass: one invocation per four columns of one output row
//! sums the GEMM_SPLIT partial tiles of GP (written by gemm_tile.comp or
//! gemm_coopmat.comp with SPLIT_K) and stores through the op's gemm_store4.
//! Each slice is one 16-byte load where N keeps the four columns aligned
//! (GP_load4), all of them independent: the pass is bound by load latency,
//! and a batch-1 pass has too few invocations to hide it otherwise. With
//! REDUCE_LANES > 1 (a power of two, at most the subgroup size) that many
//! adjacent invocations share one output, each adding every
//! REDUCE_LANES-th slice, and meet through subgroup shuffles: more loads
//! in flight for deep splits. With REDUCE_INT (the int8 cooperative-matrix
//! GEMM, gemm_int8_coopmat.comp) the partials are int32 raw sums, finished
//! by the helpers' gemm_acc_finish before the store. No placeholders.
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
  // subgroup size the planner allows).
  int gid = int(gl_WorkGroupID.x * gl_WorkGroupSize.x + gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID);
#else
  int gid = int(gl_GlobalInvocationID.x);
#endif
  int q = gid / REDUCE_LANES, part = gid % REDUCE_LANES;
  int nq = (GEMM_N + 3) / 4;
  bool live = q < GEMM_BATCH * GEMM_M * nq;
#if REDUCE_LANES == 1
  if (!live) return;
#endif
  int n = (q % nq) * 4, r = q / nq;
  int m = r % GEMM_M, b = r / GEMM_M;
  int p = (b * GEMM_M + m) * GEMM_N + n;
  int slice_stride = GEMM_BATCH * GEMM_M * GEMM_N;
  REDUCE_VEC4 v = REDUCE_VEC4(0);
  // Lanes past N read the next row's partials (or stop at GP's end); the
  // store ignores them.
  // The same trip count on every lane, so the shuffles below run in
  // uniform control flow.
  for (int s0 = 0; s0 < GEMM_SPLIT; s0 += REDUCE_LANES)
    if (live && s0 + part < GEMM_SPLIT) v += GP_load4(p + (s0 + part) * slice_stride);
#if REDUCE_LANES > 1
  for (int o = 1; o < REDUCE_LANES; o <<= 1) v += subgroupShuffleXor(v, uint(o));
  if (!live || part != 0) return;
#endif
  REDUCE_STORE(b, m, n, v);
}
