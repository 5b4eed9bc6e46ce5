//! Integer quantization helpers of the quantized kernels
//! (planner/lower_quantize.cc, planner/lower_integer_linalg.cc), one
//! //@section each, by the name "quantize.glsl#<section>"; a kernel takes
//! two_prod, then div_rn, before quantize and requantize. No placeholders.
//!
//! ONNX rounds half to even after arithmetic that numpy does correctly
//! rounded (float32 quotients, double products). GLSL's division may be off
//! by 2.5 ulp, and one ulp at the wrong place moves a value across .5 and
//! the result by one quantization step, so the quotient gets one correction
//! through its exact residual, and a product is rounded from its exact
//! value. Exact products come from Dekker's two-product with Veltkamp
//! splitting, which needs only correctly rounded float multiplies and adds
//! (Vulkan's OpFMul/OpFAdd; `precise` forbids contracting them): GLSL's
//! fma() may be a separate multiply and add (it is on lavapipe).
//@section two_prod
//! p + e == a * b exactly (no overflow), p the rounded product.
void kiln_two_prod(float a, float b, out float p, out float e) {
  precise float ca = 4097.0 * a;
  precise float ah = ca - (ca - a);
  precise float al = a - ah;
  precise float cb = 4097.0 * b;
  precise float bh = cb - (cb - b);
  precise float bl = b - bh;
  precise float pp = a * b;
  precise float ee = ((ah * bh - pp) + ah * bl + al * bh) + al * bl;
  p = pp;
  e = ee;
}
//@section div_rn
//! a / b correctly rounded: the hardware quotient corrected once by its
//! residual a - q * b.
float kiln_div_rn(float a, float b) {
  precise float q = a / b;
  if (isinf(q) || isnan(q) || q == 0.0) return q;
  float p, e;
  kiln_two_prod(q, b, p, e);
  precise float r = (a - p) - e;
  if (r == 0.0 || isinf(p)) return q;
  precise float c = q + r / b;
  return c;
}
//@section quantize
//! saturate(rint(q) + zp) to [lo, hi]; NaN gives the zero point.
int kiln_quantize(float q, int zp, int lo, int hi) {
  if (isnan(q)) return clamp(zp, lo, hi);
  return int(clamp(roundEven(q) + float(zp), float(lo), float(hi)));
}
//@section requantize
//! saturate(rint(acc * m) + zp) to [lo, hi], with acc * m rounded as if in
//! double (ONNX's numpy reference): p + e is the exact product, and the
//! rounding of p + e to an integer is decided from floor(p), the fraction
//! and the sign of e. Exact while |acc| <= 2^24 (float(acc) exact).
int kiln_requantize(int acc, float m, int zp, int lo, int hi) {
  float p, e;
  kiln_two_prod(float(acc), m, p, e);
  if (isinf(p) || isnan(p)) return isnan(p) ? clamp(zp, lo, hi) : (p > 0.0 ? hi : lo);
  precise float f0 = floor(p);
  precise float f = p - f0;
  float r = f0;
  if (f > 0.5 || (f == 0.5 && e > 0.0)) r = f0 + 1.0;
  else if (f == 0.5 && e == 0.0 && mod(f0, 2.0) != 0.0) r = f0 + 1.0;
  return int(clamp(r + float(zp), float(lo), float(hi)));
}
