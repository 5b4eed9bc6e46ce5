//! Integer quantization helpers of the quantized kernels
//! (planner/lower_quantize.cc, planner/lower_integer_linalg.cc), one
//! //@section each, by the name "quantize.glsl#<section>"; a kernel takes
//! div_rn before quantize and requantize. No placeholders.
//!
//! ONNX rounds half to even after float32 arithmetic that numpy does
//! correctly rounded. GLSL's division may be off by 2.5 ulp, and one ulp at
//! the wrong place moves a quotient across .5 and the result by one step,
//! so the quotient gets one correction through its exact residual (fma).
//@section div_rn
float kiln_div_rn(float a, float b) {
  precise float q = a / b;
  if (isinf(q) || isnan(q) || q == 0.0) return q;
  precise float r = fma(-q, b, a);
  if (r == 0.0) return q;
  precise float c = fma(r, 1.0 / b, q);
  return c;
}
//@section quantize
//! saturate(rint(x / s) + zp) to [lo, hi]; NaN gives the zero point.
int kiln_quantize(float q, int zp, int lo, int hi) {
  if (isnan(q)) return clamp(zp, lo, hi);
  return int(clamp(roundEven(q) + float(zp), float(lo), float(hi)));
}
//@section requantize
//! saturate(rint(acc * m) + zp) to [lo, hi], with acc * m rounded as if in
//! double (ONNX's numpy reference): p + e is the exact product (fma), and
//! the rounding of p + e to an integer is decided from floor(p), the
//! fraction and the sign of e. Exact while |acc| <= 2^24 (float(acc) exact).
int kiln_requantize(int acc, float m, int zp, int lo, int hi) {
  precise float a = float(acc);
  precise float p = a * m;
  precise float e = fma(a, m, -p);
  if (isinf(p) || isnan(p)) return isnan(p) ? clamp(zp, lo, hi) : (p > 0.0 ? hi : lo);
  precise float f0 = floor(p);
  precise float f = p - f0;
  float r = f0;
  if (f > 0.5 || (f == 0.5 && e > 0.0)) r = f0 + 1.0;
  else if (f == 0.5 && e == 0.0 && mod(f0, 2.0) != 0.0) r = f0 + 1.0;
  else if (f == 0.0 && e < -0.5) r = f0 - 1.0;
  return int(clamp(r + float(zp), float(lo), float(hi)));
}
