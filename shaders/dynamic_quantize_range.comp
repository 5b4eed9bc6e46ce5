//! DynamicQuantizeLinear's first pass (planner/lower_quantize.cc): one
//! workgroup folds min(0, min(x)) and max(0, max(x)) over all of x (NaN
//! propagates, as numpy's min/max do), then invocation 0 computes ONNX's
//! scale and zero point in float32,
//!   scale = (hi == lo ? 1 : hi - lo) / 255,
//!   zero_point = saturate(rint(0 - lo / scale)) to [0, 255],
//! and stores them to P[0], P[1] (an fp32 scratch buffer the quantizing map
//! kernel reads) and, when the node has those outputs, to S and Z.
//! Uses kiln_div_rn (quantize.glsl). One workgroup: correct for any size,
//! not fast for large tensors.
//!   @LOCAL@        the workgroup size (a power of two)
//!   //@if SCALE    the node has its y_scale output, bound as S
//!   //@if ZERO     the node has its y_zero_point output, bound as Z
shared float kiln_lo[@LOCAL@];
shared float kiln_hi[@LOCAL@];
void main() {
  int tid = int(gl_LocalInvocationIndex);
  float lo = 0.0;
  float hi = 0.0;
  for (int i = tid; i < X_NUMEL; i += @LOCAL@) {
    float v = X_ld(i);
    lo = (isnan(v) || isnan(lo)) ? v + lo : min(lo, v);
    hi = (isnan(v) || isnan(hi)) ? v + hi : max(hi, v);
  }
  kiln_lo[tid] = lo;
  kiln_hi[tid] = hi;
  barrier();
  for (int s = @LOCAL@ / 2; s > 0; s >>= 1) {
    if (tid < s) {
      float a = kiln_lo[tid], b = kiln_lo[tid + s];
      kiln_lo[tid] = (isnan(a) || isnan(b)) ? a + b : min(a, b);
      a = kiln_hi[tid];
      b = kiln_hi[tid + s];
      kiln_hi[tid] = (isnan(a) || isnan(b)) ? a + b : max(a, b);
    }
    barrier();
  }
  if (tid == 0) {
    lo = kiln_lo[0];
    hi = kiln_hi[0];
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
  }
}
