//! Attention on tensor cores (planner/fusion_attention.cc, fp16 plans on a
//! device with NV cooperative matrices and fp32 accumulators): for every
//! query row m of one batch element, Y[m] = softmax_n(score(m, n)) * V[n].
//! A workgroup owns FM query rows of the batch element gl_WorkGroupID.y;
//! its NSG subgroups split the keys (flash-decoding inside a workgroup):
//! subgroup s takes key blocks s, s + NSG, ... of BKEY keys each, stages
//! them in its own shared memory (no workgroup barrier in the loop), and
//! keeps its own running maximum, sum and output; the subgroups' partial
//! results meet once at the end. So a workgroup has NSG independent chains
//! of key blocks in flight, each 1 / NSG as long as the whole, and a grid
//! of FM-row workgroups fills the GPU even for one image's 197 tokens.
//! Q, K and V are staged 8 halves (one uvec4) at a time; a subgroup fetches
//! its next block into registers while it computes the current one. Flash
//! attention's online softmax: per block the scores (Q K^T, fp32
//! fragments) go to shared memory, where the row's lanes run attn_score
//! (scale, biases, masks) and write the probabilities as fp16; P * V
//! accumulates into the output fragments on the tensor cores. The NV
//! fragments' element layout is opaque, so rows cannot rescale their
//! accumulators in registers: probabilities are taken against a reference
//! maximum per row, and the output fragments go through shared memory to
//! be rescaled only when a row's maximum passes its reference by more than
//! TAU (the first block sets it; later ones seldom do). RL = SG / FM lanes
//! share a row; their partial maxima and sums meet through subgroup
//! shuffles (ATT_SHUFFLE) or shared memory. Offsets and strides of every
//! fragment are multiples of 16 bytes.
//! Measured on an H100 (vit_b_16, the 12 layers' attention in a profiled
//! run, bench/results/h100-2026-11-27-session14): 0.306 ms with per-block
//! rescaling through shared memory, 0.284 ms so; of those, without the
//! K/V fetches 0.177, without both GEMMs, the softmax and the fetches
//! 0.123: the kernel is bound by the latency of its chain of blocks, not
//! by its math.
//! The helpers it calls come from C++ (through the accessors, so any input
//! may be an index view):
//!   uvec4 attn_q8(int m, int d), uvec4 attn_k8(int n, int d),
//!   uvec4 attn_v8(int n, int c): elements d (c) .. +7 as packed halves,
//!   zeros past the head dims; float attn_score(int m, int n, float dot)
//!   @FM@ @FN@ @FK@       fragment shape (fp16 operands, fp32 accumulators)
//!   @NSG@ @SG@           subgroups per workgroup, subgroup size
//!   @BKEY@               keys per block (a multiple of FN, FK and 4)
//!   @D@ @DP@             the head dim, and padded to a multiple of FK
//!   @DV@ @DVP@           the value dim, and padded to a multiple of FN
//!   @ATT_M@ @ATT_N@      expressions: query rows and keys
//!   @BATCH_COORDS@       statements setting the batch coordinates of `bi`
//!   @STORE@              statements storing vec4 `o` (columns c .. c + 3,
//!                        lanes from DV on dropped) of query row `row`
//!   ATT_SHUFFLE, ATT_SUBGROUP_ARITH (macros, 0 or 1): the device's
//!                        subgroup shuffles and arithmetic
const int FM = @FM@, FN = @FN@, FK = @FK@;
const int NSG = @NSG@, SG = @SG@, NT = NSG * SG;
const int BKEY = @BKEY@;
const int D = @D@, DP = @DP@, DV = @DV@, DVP = @DVP@;
const int RL = SG / FM;                      // lanes per row
const int OC = (DVP + 4 * RL - 1) / (4 * RL);  // output vec4s per lane
const int DP8 = DP / 8, DVP8 = DVP / 8;     // 16-byte units of a row
const int LDQ8 = DP8 + 1, LDV8 = DVP8 + 1, LDP = BKEY + 8;
const int LDS = (BKEY > DVP ? BKEY : DVP) + 4;
const int KU = (BKEY * DP8 + SG - 1) / SG, VU = (BKEY * DVP8 + SG - 1) / SG;  // units per lane
shared uvec4 aq[FM * LDQ8];
shared uvec4 ak[NSG * BKEY * LDQ8];  // per subgroup: its key block
shared uvec4 av[NSG * BKEY * LDV8];  // ... and value block
shared float as_[NSG * FM * LDS];    // per subgroup: the rows' scores, then P * V, of the block
shared float16_t ap[NSG * FM * LDP]; // per subgroup: the rows' probabilities
#if !ATT_SHUFFLE
shared float ared[NT];               // per lane: a partial maximum or sum
#endif
shared float arow[NSG * FM * 2];     // per subgroup and row: its maximum and sum

void att_sync() {
  subgroupMemoryBarrierShared();
  subgroupBarrier();
}

// This lane's units of the key and value block k0 .. k0 + BKEY - 1 (zeros
// past nk), read into registers, then stored to its subgroup's shared memory.
uvec4 pk[KU], pv[VU];
void fetch_block(int k0, int nk, int lane) {
  [[unroll]] for (int u = 0; u < KU; ++u) {
    const int i = lane + u * SG, j = i / DP8;
    pk[u] = i < BKEY * DP8 && k0 + j < nk ? attn_k8(k0 + j, (i % DP8) * 8) : uvec4(0);
  }
  [[unroll]] for (int u = 0; u < VU; ++u) {
    const int i = lane + u * SG, j = i / DVP8;
    pv[u] = i < BKEY * DVP8 && k0 + j < nk ? attn_v8(k0 + j, (i % DVP8) * 8) : uvec4(0);
  }
}
void store_block(int sg, int lane) {
  [[unroll]] for (int u = 0; u < KU; ++u) {
    const int i = lane + u * SG;
    if (i < BKEY * DP8) ak[(sg * BKEY + i / DP8) * LDQ8 + i % DP8] = pk[u];
  }
  [[unroll]] for (int u = 0; u < VU; ++u) {
    const int i = lane + u * SG;
    if (i < BKEY * DVP8) av[(sg * BKEY + i / DVP8) * LDV8 + i % DVP8] = pv[u];
  }
}

// The RL partial values of this lane's row combined (max or sum): the
// row's lanes are adjacent, so subgroup shuffles do it without shared
// memory where the device has them.
float combine_row(float v, bool is_max, int lane_slot, int row_slot) {
#if ATT_SHUFFLE
  [[unroll]] for (int o = 1; o < RL; o <<= 1) {
    const float w = subgroupShuffleXor(v, uint(o));
    v = is_max ? max(v, w) : v + w;
  }
  return v;
#else
  ared[lane_slot] = v;
  att_sync();
  float r = ared[row_slot];
  [[unroll]] for (int i = 1; i < RL; ++i) r = is_max ? max(r, ared[row_slot + i]) : r + ared[row_slot + i];
  att_sync();
  return r;
#endif
}

// Whether `b` holds on any lane of the subgroup (a uniform answer for the
// cooperative-matrix operations it guards); without subgroup arithmetic,
// always (the caller's work is then done every time, still correct).
bool any_lane(bool b) {
#if ATT_SUBGROUP_ARITH
  return subgroupMax(b ? 1u : 0u) != 0u;
#else
  return true;
#endif
}

void main() {
  const int tid = int(gl_LocalInvocationID.x);
  const int sg = int(gl_SubgroupID), lane = int(gl_SubgroupInvocationID);
  const int q0 = int(gl_WorkGroupID.x) * FM;
  const int nq = @ATT_M@, nk = @ATT_N@;
  int bi = int(gl_WorkGroupID.y);
@BATCH_COORDS@
  for (int i = tid; i < FM * DP8; i += NT) {
    const int qr = i / DP8;
    aq[qr * LDQ8 + i % DP8] = q0 + qr < nq ? attn_q8(q0 + qr, (i % DP8) * 8) : uvec4(0);
  }
  fetch_block(sg * BKEY, nk, lane);
  barrier();
  fcoopmatNV<16, gl_ScopeSubgroup, FM, FK> fq[DP / FK];
  [[unroll]] for (int t = 0; t < DP / FK; ++t) coopMatLoadNV(fq[t], aq, uint(t * FK / 8), uint(LDQ8), false);
  const int lr = lane / RL, lc = lane % RL;  // this lane's row, its phase
  const int row = q0 + lr;
  const int srow = sg * FM + lr;             // the row in this subgroup's scratch
  const int lane_slot = sg * SG + lane, row_slot = sg * SG + lr * RL;
  const float neg_inf = uintBitsToFloat(0xff800000u);
  // A finite start: a block whose scores are all -inf (masked) adds 0.
  // mref is the row's reference maximum: probabilities are exp(s - mref),
  // so the output fragments accumulate across blocks on the tensor cores
  // and are rescaled (through shared memory: their element layout is
  // opaque) only when a row's maximum passes mref by more than TAU, i.e.
  // rarely after the first block. exp(TAU) bounds the fp16 probabilities.
  const float TAU = 8.0;
  float mref = -3.0e38, lsum = 0.0;
  fcoopmatNV<32, gl_ScopeSubgroup, FM, FN> fo[DVP / FN];
  [[unroll]] for (int c = 0; c < DVP / FN; ++c) fo[c] = fcoopmatNV<32, gl_ScopeSubgroup, FM, FN>(0.0);
  bool started = false;  // fo holds a block's products (uniform in the subgroup)
  for (int k0 = sg * BKEY; k0 < nk; k0 += NSG * BKEY) {
    att_sync();  // the subgroup's previous block is consumed
    store_block(sg, lane);
    att_sync();
    if (k0 + NSG * BKEY < nk) fetch_block(k0 + NSG * BKEY, nk, lane);  // in flight during this block's math
    fcoopmatNV<32, gl_ScopeSubgroup, FM, FN> fs[BKEY / FN];
    [[unroll]] for (int j = 0; j < BKEY / FN; ++j) fs[j] = fcoopmatNV<32, gl_ScopeSubgroup, FM, FN>(0.0);
    [[unroll]] for (int t = 0; t < DP / FK; ++t)
      [[unroll]] for (int j = 0; j < BKEY / FN; ++j) {
        fcoopmatNV<16, gl_ScopeSubgroup, FK, FN> fk;
        // K^T: [key][d] is column-major
        coopMatLoadNV(fk, ak, uint((sg * BKEY + j * FN) * LDQ8 + t * FK / 8), uint(LDQ8), true);
        fs[j] = coopMatMulAddNV(fq[t], fk, fs[j]);
      }
    [[unroll]] for (int j = 0; j < BKEY / FN; ++j) coopMatStoreNV(fs[j], as_, uint(sg * FM * LDS + j * FN), uint(LDS), false);
    att_sync();
    float bm = mref;
    for (int j = lc; j < BKEY; j += RL) {
      const float s = k0 + j < nk && row < nq ? attn_score(row, k0 + j, as_[srow * LDS + j]) : neg_inf;
      as_[srow * LDS + j] = s;
      bm = max(bm, s);
    }
    bm = combine_row(bm, true, lane_slot, row_slot);
    const bool grow = bm > mref + TAU;
    const float corr = grow ? exp(mref - bm) : 1.0;
    if (grow) mref = bm;
    lsum *= corr;
    for (int j = lc; j < BKEY; j += RL) {
      const float p = exp(as_[srow * LDS + j] - mref);
      lsum += p;
      ap[srow * LDP + j] = float16_t(p);
    }
    if (started && any_lane(grow)) {
      att_sync();  // the scores are consumed: as_ takes the output rows
      [[unroll]] for (int c = 0; c < DVP / FN; ++c) coopMatStoreNV(fo[c], as_, uint(sg * FM * LDS + c * FN), uint(LDS), false);
      att_sync();
      for (int c = lc; c < DVP; c += RL) as_[srow * LDS + c] *= corr;
      att_sync();
      [[unroll]] for (int c = 0; c < DVP / FN; ++c) coopMatLoadNV(fo[c], as_, uint(sg * FM * LDS + c * FN), uint(LDS), false);
    }
    started = true;
    att_sync();
    [[unroll]] for (int t = 0; t < BKEY / FK; ++t) {
      fcoopmatNV<16, gl_ScopeSubgroup, FM, FK> fp;
      coopMatLoadNV(fp, ap, uint(sg * FM * LDP + t * FK), uint(LDP), false);
      [[unroll]] for (int c = 0; c < DVP / FN; ++c) {
        fcoopmatNV<16, gl_ScopeSubgroup, FK, FN> fv;
        coopMatLoadNV(fv, av, uint((sg * BKEY + t * FK) * LDV8 + c * FN / 8), uint(LDV8), false);
        fo[c] = coopMatMulAddNV(fp, fv, fo[c]);
      }
    }
  }
  lsum = combine_row(lsum, false, lane_slot, row_slot);
  // The subgroups' partial results meet: each leaves its rows' maximum, sum
  // and unnormalized output in shared memory; subgroup 0 combines them.
  att_sync();  // the last block's probabilities and scores are consumed
  [[unroll]] for (int c = 0; c < DVP / FN; ++c) coopMatStoreNV(fo[c], as_, uint(sg * FM * LDS + c * FN), uint(LDS), false);
  if (lc == 0) {
    arow[srow * 2] = mref;
    arow[srow * 2 + 1] = lsum;
  }
  barrier();
  if (sg != 0 || row >= nq) return;
  float mall = arow[lr * 2];
  [[unroll]] for (int s = 1; s < NSG; ++s) mall = max(mall, arow[(s * FM + lr) * 2]);
  float w[NSG];
  float lall = 0.0;
  [[unroll]] for (int s = 0; s < NSG; ++s) {
    w[s] = exp(arow[(s * FM + lr) * 2] - mall);
    lall += arow[(s * FM + lr) * 2 + 1] * w[s];
  }
  [[unroll]] for (int q = 0; q < OC; ++q) {
    const int c = (lc + q * RL) * 4;
    if (c >= DV) continue;
    vec4 acc = vec4(0.0);
    [[unroll]] for (int s = 0; s < NSG; ++s) {
      const int r = (s * FM + lr) * LDS + c;
      acc += w[s] * vec4(as_[r], as_[r + 1], as_[r + 2], as_[r + 3]);
    }
    const vec4 o = acc / lall;
@STORE@
  }
}
