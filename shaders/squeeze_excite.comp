//! The excitation of a squeeze-and-excitation block as one kernel
//! (planner/fusion_squeeze_excite.h), after the pool's own kernel: workgroup
//! n takes image n's pooled channels P [N, C, 1, 1] into shared memory;
//! then fc1, a subgroup per hidden unit (lanes along the channels of its
//! weight row, subgroupAdd) with the unit's tail; then fc2, an invocation
//! per four channels with their tail, stored into S [N, C, 1, 1] (an
//! image's as one texel).
//!   @NT@  workgroup size (a multiple of the subgroup size)
//!   @C@ @R@  channels, hidden units
//!   @TAIL1@ @TAIL2@  a hidden unit's (channel's) value from v, the conv's
//!         output with its bias (n, h / ch in scope)
//!   B1 B2 the convs have biases
const int C = @C@, R = @R@;
shared float se_mean[C];
shared float se_hidden[R];

void main() {
  const int n = int(gl_WorkGroupID.x);
  const int lane = int(gl_SubgroupInvocationID), sgs = int(gl_SubgroupSize);
  const int sg = int(gl_SubgroupID), nsg = int(gl_NumSubgroups);
  for (int ch = int(gl_LocalInvocationIndex); ch < C; ch += @NT@) se_mean[ch] = P_ld(n * C + ch);
  barrier();
  for (int h = sg; h < R; h += nsg) {
    // Four sums: four weight loads in flight per lane (the workgroup's
    // loads are all the device does meanwhile).
    float a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
    int ch = lane;
    for (; ch + 3 * sgs < C; ch += 4 * sgs) {
      a0 += W1_ld(h * C + ch) * se_mean[ch];
      a1 += W1_ld(h * C + ch + sgs) * se_mean[ch + sgs];
      a2 += W1_ld(h * C + ch + 2 * sgs) * se_mean[ch + 2 * sgs];
      a3 += W1_ld(h * C + ch + 3 * sgs) * se_mean[ch + 3 * sgs];
    }
    for (; ch < C; ch += sgs) a0 += W1_ld(h * C + ch) * se_mean[ch];
    float v = subgroupAdd((a0 + a1) + (a2 + a3));
//@if B1
    v += B1_ld(h);
//@end
    if (lane == 0) se_hidden[h] = @TAIL1@;
  }
  barrier();
  for (int c4 = int(gl_LocalInvocationIndex) * 4; c4 < C; c4 += @NT@ * 4) {
    vec4 out4 = vec4(0.0);
    for (int j = 0; j < 4 && c4 + j < C; ++j) {
      const int ch = c4 + j;
      float a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
      int h = 0;
      for (; h + 3 < R; h += 4) {
        a0 += W2_ld(ch * R + h) * se_hidden[h];
        a1 += W2_ld(ch * R + h + 1) * se_hidden[h + 1];
        a2 += W2_ld(ch * R + h + 2) * se_hidden[h + 2];
        a3 += W2_ld(ch * R + h + 3) * se_hidden[h + 3];
      }
      for (; h < R; ++h) a0 += W2_ld(ch * R + h) * se_hidden[h];
      float v = (a0 + a1) + (a2 + a3);
//@if B2
      v += B2_ld(ch);
//@end
      out4[j] = @TAIL2@;
    }
#if S_IS_BUFFER
    for (int j = 0; j < 4 && c4 + j < C; ++j) S_st(n * C + c4 + j, out4[j]);
#else
    S_st4(n, c4, 0, 0, out4);  // one texel: the image is packed along the channels
#endif
  }
}
