//! DynamicQuantizeLinear's range passes (planner/lower_quantize.cc). A
//! workgroup folds min(0, min(x)) and max(0, max(x)) over its share (NaN
//! propagates, as numpy's min/max do), then invocation 0 either stores its
//! partial range to Q[2 * workgroup], Q[2 * workgroup + 1] (PARTIAL: @GROUPS@
//! workgroups stride over X together) or, in the one-workgroup final pass,
//! computes ONNX's scale and zero point in float32,
//!   scale = (hi == lo ? 1 : hi - lo) / 255,
//!   zero_point = saturate(rint(0 - lo / scale)) to [0, 255],
//! and stores them to P[0], P[1] (an fp32 scratch buffer the quantizing map
//! kernel reads) and, when the node has those outputs, to S and Z. Uses
//! kiln_div_rn (quantize.glsl).
//!   @LOCAL@          the workgroup size (a power of two)
//!   @GROUPS@         workgroups of the partial pass (partials the final reads)
//!   //@if PARTIAL    the first of two passes: fold a share of X into Q
//!   //@if FROM_PARTIALS  the final pass folds Q's @GROUPS@ partials (else all of X)
//!   //@if SCALE      the node has its y_scale output, bound as S
//!   //@if ZERO       the node has its y_zero_point output, bound as Z
shared float kiln_lo[@LOCAL@];
shared float kiln_hi[@LOCAL@];
float kiln_fold_min(float a, float b) { return (isnan(a) || isnan(b)) ? a + b : min(a, b); }
float kiln_fold_max(float a, float b) { return (isnan(a) || isnan(b)) ? a + b : max(a, b); }
void main() {
  int tid = int(gl_LocalInvocationIndex);
  float lo = 0.0;
  float hi = 0.0;
//@if FROM_PARTIALS
  for (int i = tid; i < @GROUPS@; i += @LOCAL@) {
    lo = kiln_fold_min(lo, Q_ld(2 * i));
    hi = kiln_fold_max(hi, Q_ld(2 * i + 1));
  }
//@else
//@if PARTIAL
  for (int i = int(gl_WorkGroupID.x) * @LOCAL@ + tid; i < X_NUMEL; i += @GROUPS@ * @LOCAL@) {
//@else
  for (int i = tid; i < X_NUMEL; i += @LOCAL@) {
//@end
    float v = X_ld(i);
    lo = kiln_fold_min(lo, v);
    hi = kiln_fold_max(hi, v);
  }
//@end
  kiln_lo[tid] = lo;
  kiln_hi[tid] = hi;
  barrier();
  for (int s = @LOCAL@ / 2; s > 0; s >>= 1) {
    if (tid < s) {
      kiln_lo[tid] = kiln_fold_min(kiln_lo[tid], kiln_lo[tid + s]);
      kiln_hi[tid] = kiln_fold_max(kiln_hi[tid], kiln_hi[tid + s]);
    }
    barrier();
  }
  if (tid == 0) {
    lo = kiln_lo[0];
    hi = kiln_hi[0];
//@if PARTIAL
    int w = int(gl_WorkGroupID.x);
    Q_st(2 * w, lo);
    Q_st(2 * w + 1, hi);
//@else
    precise float range = hi == lo ? 1.0 : hi - lo;
    float scale = kiln_div_rn(range, 255.0);
    precise float zp = 0.0 - kiln_div_rn(lo, scale);
    int z = isnan(zp) ? 0 : int(clamp(roundEven(zp), 0.0, 255.0));
    P_st(0, scale);
    P_st(1, float(z));
//@if SCALE
    S_st(0, scale);
//@end
//@if ZERO
    Z_st(0, z);
//@end
//@end
  }
}
