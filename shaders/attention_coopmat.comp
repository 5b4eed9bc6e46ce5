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
//! attention's online softmax: the NV fragments' element layout is opaque,
//! so a row cannot rescale its accumulator fragments: per block the scores
//! (Q K^T, fp32 fragments) go to shared memory, the row's lanes run
//! attn_score (scale, biases, masks), update the running maximum and sum
//! and write the probabilities as fp16, P * V multiplies into fresh
//! fragments staged back to shared memory, and each lane adds its share of
//! them to the output columns it holds in registers after rescaling those.
//! RL = SG / FM lanes share a row; their partial maxima and sums meet in
//! shared memory. Offsets and strides of every fragment are multiples of
//! 16 bytes.
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
shared float ared[NT];               // per lane: a partial maximum or sum
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

// The RL partial values of this lane's row combined (max or sum).
float combine_row(float v, bool is_max, int lane_slot, int row_slot) {
  ared[lane_slot] = v;
  att_sync();
  float r = ared[row_slot];
  [[unroll]] for (int i = 1; i < RL; ++i) r = is_max ? max(r, ared[row_slot + i]) : r + ared[row_slot + i];
  att_sync();
  return r;
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
  float mrow = -3.0e38, lsum = 0.0;
  vec4 oacc[OC];  // columns (lc + q * RL) * 4 .. +3 of the row
  [[unroll]] for (int q = 0; q < OC; ++q) oacc[q] = vec4(0.0);
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
    float bm = mrow;
    for (int j = lc; j < BKEY; j += RL) {
      const float s = k0 + j < nk && row < nq ? attn_score(row, k0 + j, as_[srow * LDS + j]) : neg_inf;
      as_[srow * LDS + j] = s;
      bm = max(bm, s);
    }
    bm = combine_row(bm, true, lane_slot, row_slot);
    const float corr = exp(mrow - bm);
    mrow = bm;
    lsum *= corr;
    for (int j = lc; j < BKEY; j += RL) {
      const float p = exp(as_[srow * LDS + j] - mrow);
      lsum += p;
      ap[srow * LDP + j] = float16_t(p);
    }
    att_sync();
    fcoopmatNV<32, gl_ScopeSubgroup, FM, FN> fo[DVP / FN];
    [[unroll]] for (int c = 0; c < DVP / FN; ++c) fo[c] = fcoopmatNV<32, gl_ScopeSubgroup, FM, FN>(0.0);
    [[unroll]] for (int t = 0; t < BKEY / FK; ++t) {
      fcoopmatNV<16, gl_ScopeSubgroup, FM, FK> fp;
      coopMatLoadNV(fp, ap, uint(sg * FM * LDP + t * FK), uint(LDP), false);
      [[unroll]] for (int c = 0; c < DVP / FN; ++c) {
        fcoopmatNV<16, gl_ScopeSubgroup, FK, FN> fv;
        coopMatLoadNV(fv, av, uint((sg * BKEY + t * FK) * LDV8 + c * FN / 8), uint(LDV8), false);
        fo[c] = coopMatMulAddNV(fp, fv, fo[c]);
      }
    }
    [[unroll]] for (int c = 0; c < DVP / FN; ++c) coopMatStoreNV(fo[c], as_, uint(sg * FM * LDS + c * FN), uint(LDS), false);
    att_sync();
    [[unroll]] for (int q = 0; q < OC; ++q) {
      const int c = (lc + q * RL) * 4;
      if (c < DVP)
        oacc[q] = oacc[q] * corr + vec4(as_[srow * LDS + c], as_[srow * LDS + c + 1], as_[srow * LDS + c + 2],
                                        as_[srow * LDS + c + 3]);
    }
  }
  lsum = combine_row(lsum, false, lane_slot, row_slot);
  // The subgroups' partial results meet: each leaves its rows' maximum, sum
  // and unnormalized output in shared memory; subgroup 0 combines them.
  barrier();
  if (lc == 0) {
    arow[srow * 2] = mrow;
    arow[srow * 2 + 1] = lsum;
  }
  [[unroll]] for (int q = 0; q < OC; ++q) {
    const int c = (lc + q * RL) * 4;
    if (c < DVP) {
      as_[srow * LDS + c] = oacc[q].x;
      as_[srow * LDS + c + 1] = oacc[q].y;
      as_[srow * LDS + c + 2] = oacc[q].z;
      as_[srow * LDS + c + 3] = oacc[q].w;
    }
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
