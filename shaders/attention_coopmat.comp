//! Attention on tensor cores (planner/fusion_attention.cc, fp16 plans on a
//! device with NV cooperative matrices and fp32 accumulators): for every
//! query row m of one batch element, Y[m] = softmax_n(score(m, n)) * V[n].
//! A workgroup of NSG subgroups owns BQ = NSG * FM query rows of the batch
//! element gl_WorkGroupID.y; subgroup s owns rows s * FM .. +FM-1, its Q
//! fragments stay in registers. Keys come in blocks of BKEY, staged in
//! shared memory as fp16 ([key][d] and [key][c]) by the whole workgroup.
//! One pass over the keys with flash attention's online softmax. The NV
//! fragments' element layout is opaque, so a row cannot rescale its
//! accumulator fragments: per block the scores (Q K^T, fp32 fragments) go
//! to shared memory, the row's lanes run attn_score (scale, biases, masks),
//! update the running maximum and sum and write the probabilities as fp16,
//! P * V multiplies into fresh fragments staged back to shared memory, and
//! each lane adds its share of them to the output columns it holds in
//! registers after rescaling those. RL = SG / FM lanes share a row; their
//! partial maxima and sums meet in shared memory. Offsets and strides of
//! every fragment are multiples of 16 bytes.
//! The helpers it calls come from C++ (through the accessors, so any input
//! may be an index view), as for attention.comp:
//!   float attn_q(int m, int d), float attn_k(int d, int n),
//!   float attn_v(int n, int c), float attn_score(int m, int n, float dot)
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
const int BQ = NSG * FM, BKEY = @BKEY@;
const int D = @D@, DP = @DP@, DV = @DV@, DVP = @DVP@;
const int RL = SG / FM;                      // lanes per row
const int OC = (DVP + 4 * RL - 1) / (4 * RL);  // output vec4s per lane
const int LDQ = DP + 8, LDV = DVP + 8, LDP = BKEY + 8;
const int LDS = (BKEY > DVP ? BKEY : DVP) + 4;
shared float16_t aq[BQ * LDQ];
shared float16_t ak[BKEY * LDQ];
shared float16_t av[BKEY * LDV];
shared float as_[BQ * LDS];       // per subgroup: its rows' scores, then P * V, of the block
shared float16_t ap[BQ * LDP];    // per subgroup: its rows' probabilities
shared float ared[NT];            // per lane: a partial maximum or sum

void att_sync() {
  subgroupMemoryBarrierShared();
  subgroupBarrier();
}

// The workgroup stages keys and values k0 .. k0 + BKEY - 1 (zeros past nk,
// D and DV).
void load_block(int k0, int nk) {
  for (int i = int(gl_LocalInvocationID.x); i < BKEY * DP; i += NT) {
    int j = i / DP, d = i % DP;
    ak[j * LDQ + d] = k0 + j < nk && d < D ? float16_t(attn_k(d, k0 + j)) : float16_t(0.0);
  }
  for (int i = int(gl_LocalInvocationID.x); i < BKEY * DVP; i += NT) {
    int j = i / DVP, c = i % DVP;
    av[j * LDV + c] = k0 + j < nk && c < DV ? float16_t(attn_v(k0 + j, c)) : float16_t(0.0);
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
  const int q0 = int(gl_WorkGroupID.x) * BQ;
  const int nq = @ATT_M@, nk = @ATT_N@;
  int bi = int(gl_WorkGroupID.y);
@BATCH_COORDS@
  for (int i = tid; i < BQ * DP; i += NT) {
    int qr = i / DP, d = i % DP;
    aq[qr * LDQ + d] = q0 + qr < nq && d < D ? float16_t(attn_q(q0 + qr, d)) : float16_t(0.0);
  }
  barrier();
  fcoopmatNV<16, gl_ScopeSubgroup, FM, FK> fq[DP / FK];
  [[unroll]] for (int t = 0; t < DP / FK; ++t) coopMatLoadNV(fq[t], aq, uint(sg * FM * LDQ + t * FK), uint(LDQ), false);
  const int lr = lane / RL, lc = lane % RL;  // this lane's row in the subgroup's, its phase
  const int sr = sg * FM + lr;               // ... in the workgroup's
  const int row = q0 + sr;
  const int lane_slot = sg * SG + lane, row_slot = sg * SG + lr * RL;
  const float neg_inf = uintBitsToFloat(0xff800000u);
  // A finite start: a block whose scores are all -inf (masked) adds 0.
  float mrow = -3.0e38, lsum = 0.0;
  vec4 oacc[OC];  // columns (lc + q * RL) * 4 .. +3 of the row
  [[unroll]] for (int q = 0; q < OC; ++q) oacc[q] = vec4(0.0);
  for (int k0 = 0; k0 < nk; k0 += BKEY) {
    barrier();  // the previous block is consumed
    load_block(k0, nk);
    barrier();
    fcoopmatNV<32, gl_ScopeSubgroup, FM, FN> fs[BKEY / FN];
    [[unroll]] for (int j = 0; j < BKEY / FN; ++j) fs[j] = fcoopmatNV<32, gl_ScopeSubgroup, FM, FN>(0.0);
    [[unroll]] for (int t = 0; t < DP / FK; ++t)
      [[unroll]] for (int j = 0; j < BKEY / FN; ++j) {
        fcoopmatNV<16, gl_ScopeSubgroup, FK, FN> fk;
        coopMatLoadNV(fk, ak, uint(j * FN * LDQ + t * FK), uint(LDQ), true);  // K^T: [key][d] is column-major
        fs[j] = coopMatMulAddNV(fq[t], fk, fs[j]);
      }
    [[unroll]] for (int j = 0; j < BKEY / FN; ++j) coopMatStoreNV(fs[j], as_, uint(sg * FM * LDS + j * FN), uint(LDS), false);
    att_sync();
    float bm = mrow;
    for (int j = lc; j < BKEY; j += RL) {
      const float s = k0 + j < nk && row < nq ? attn_score(row, k0 + j, as_[sr * LDS + j]) : neg_inf;
      as_[sr * LDS + j] = s;
      bm = max(bm, s);
    }
    bm = combine_row(bm, true, lane_slot, row_slot);
    const float corr = exp(mrow - bm);
    mrow = bm;
    lsum *= corr;
    for (int j = lc; j < BKEY; j += RL) {
      const float p = exp(as_[sr * LDS + j] - mrow);
      lsum += p;
      ap[sr * LDP + j] = float16_t(p);
    }
    att_sync();
    fcoopmatNV<32, gl_ScopeSubgroup, FM, FN> fo[DVP / FN];
    [[unroll]] for (int c = 0; c < DVP / FN; ++c) fo[c] = fcoopmatNV<32, gl_ScopeSubgroup, FM, FN>(0.0);
    [[unroll]] for (int t = 0; t < BKEY / FK; ++t) {
      fcoopmatNV<16, gl_ScopeSubgroup, FM, FK> fp;
      coopMatLoadNV(fp, ap, uint(sg * FM * LDP + t * FK), uint(LDP), false);
      [[unroll]] for (int c = 0; c < DVP / FN; ++c) {
        fcoopmatNV<16, gl_ScopeSubgroup, FK, FN> fv;
        coopMatLoadNV(fv, av, uint(t * FK * LDV + c * FN), uint(LDV), false);
        fo[c] = coopMatMulAddNV(fp, fv, fo[c]);
      }
    }
    [[unroll]] for (int c = 0; c < DVP / FN; ++c) coopMatStoreNV(fo[c], as_, uint(sg * FM * LDS + c * FN), uint(LDS), false);
    att_sync();
    [[unroll]] for (int q = 0; q < OC; ++q) {
      const int c = (lc + q * RL) * 4;
      if (c < DVP)
        oacc[q] = oacc[q] * corr + vec4(as_[sr * LDS + c], as_[sr * LDS + c + 1], as_[sr * LDS + c + 2], as_[sr * LDS + c + 3]);
    }
  }
  lsum = combine_row(lsum, false, lane_slot, row_slot);
  if (row >= nq) return;
  [[unroll]] for (int q = 0; q < OC; ++q) {
    const int c = (lc + q * RL) * 4;
    if (c >= DV) continue;
    const vec4 o = oacc[q] / lsum;
@STORE@
  }
}
