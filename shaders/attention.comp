//! Attention as one kernel (planner/fusion_attention.cc): for every query
//! row m of one batch element, Y[m] = softmax_n(score(m, n)) * V[n] with
//! flash attention's online softmax, so the scores never reach memory.
//! A workgroup owns BQ query rows of the batch element gl_WorkGroupID.y;
//! TPR invocations share a row. Per block of BK keys it stages K and V in
//! shared memory, each invocation scores BK / TPR keys of its row; every
//! invocation of the row takes the block's maximum, exponentiates its own
//! keys' scores (each exp once), then folds the block into the row's
//! running sum and its NCH vec4 columns of the output.
//! The helpers it calls come from C++ (they read through the accessors, so
//! any input may be an index view):
//!   float attn_q(int m, int d), float attn_k(int d, int n),
//!   float attn_v(int n, int c), float attn_score(int m, int n, float dot)
//!   @BQ@ @BK@ @TPR@      query rows, keys per block, invocations per row
//!   @D@ @D4@ @D4P@       the head dim, its vec4 count and the shared row
//!                        stride in vec4s (D4 + 1: the TPR keys a row
//!                        scores at once hit other banks)
//!   @DV@ @DV4@ @NCH@     the value dim, vec4 columns staged per key (a
//!                        multiple of TPR), vec4 columns per invocation
//!   @ATT_M@ @ATT_N@      expressions: query rows and keys (symbolic dims
//!                        are push constants)
//!   @BATCH_COORDS@       statements setting the batch coordinates of `bi`
//!   @STORE@              statements storing vec4 `o` (columns c .. c + 3,
//!                        lanes from DV on dropped) of query row `row`
const int BQ = @BQ@;
const int BK = @BK@;
const int TPR = @TPR@;
const int D = @D@;
const int D4 = @D4@;
const int D4P = @D4P@;
const int DV = @DV@;
const int DV4 = @DV4@;
const int NCH = @NCH@;

shared vec4 att_q[BQ * D4P];  // lanes from D on hold 0
shared vec4 att_k[BK * D4P];
shared vec4 att_v[BK * DV4];
shared float att_s[BQ * (BK + 1)];  // the block's scores, then
shared float att_p[BQ * (BK + 1)];  // exp(score - running maximum)

void main() {
  const int tid = int(gl_LocalInvocationID.x);
  const int r = tid / TPR, t = tid % TPR;
  const int q0 = int(gl_WorkGroupID.x) * BQ;
  const int row = q0 + r;
  const int nq = @ATT_M@, nk = @ATT_N@;
  int bi = int(gl_WorkGroupID.y);
@BATCH_COORDS@
  for (int i = tid; i < BQ * D4; i += BQ * TPR) {
    int qr = i / D4, d = (i % D4) * 4;
    vec4 x = vec4(0.0);
    if (q0 + qr < nq) {
      for (int e = 0; e < 4; ++e)
        if (d + e < D) x[e] = attn_q(q0 + qr, d + e);
    }
    att_q[qr * D4P + i % D4] = x;
  }
  const float neg_inf = uintBitsToFloat(0xff800000u);
  // A finite start: a block whose scores are all -inf (masked) adds 0.
  float m = -3.0e38, l = 0.0;
  vec4 acc[NCH];
  for (int k = 0; k < NCH; ++k) acc[k] = vec4(0.0);
  for (int k0 = 0; k0 < nk; k0 += BK) {
    barrier();  // the previous block is consumed (the first time: att_q is written)
    for (int i = tid; i < BK * D4; i += BQ * TPR) {
      int j = i / D4, d = (i % D4) * 4;
      vec4 x = vec4(0.0);
      if (k0 + j < nk) {
        for (int e = 0; e < 4; ++e)
          if (d + e < D) x[e] = attn_k(d + e, k0 + j);
      }
      att_k[j * D4P + i % D4] = x;
    }
    for (int i = tid; i < BK * DV4; i += BQ * TPR) {
      int j = i / DV4, c = (i % DV4) * 4;
      vec4 x = vec4(0.0);
      if (k0 + j < nk) {
        for (int e = 0; e < 4; ++e)
          if (c + e < DV) x[e] = attn_v(k0 + j, c + e);
      }
      att_v[j * DV4 + i % DV4] = x;
    }
    barrier();
    for (int j = t; j < BK; j += TPR) {
      float qk = 0.0;
      for (int d = 0; d < D4; ++d) qk += dot(att_q[r * D4P + d], att_k[j * D4P + d]);
      att_s[r * (BK + 1) + j] = k0 + j < nk && row < nq ? attn_score(row, k0 + j, qk) : neg_inf;
    }
    barrier();
    float mx = m;
    for (int j = 0; j < BK; ++j) mx = max(mx, att_s[r * (BK + 1) + j]);
    for (int j = t; j < BK; j += TPR) att_p[r * (BK + 1) + j] = exp(att_s[r * (BK + 1) + j] - mx);
    const float corr = exp(m - mx);
    l *= corr;
    for (int k = 0; k < NCH; ++k) acc[k] *= corr;
    m = mx;
    barrier();
    for (int j = 0; j < BK; ++j) {
      const float p = att_p[r * (BK + 1) + j];
      l += p;
      for (int k = 0; k < NCH; ++k) acc[k] += p * att_v[j * DV4 + k * TPR + t];
    }
  }
  if (row >= nq) return;
  for (int k = 0; k < NCH; ++k) {
    const int c = (k * TPR + t) * 4;
    if (c >= DV) continue;
    const vec4 o = acc[k] / l;
@STORE@
  }
}
