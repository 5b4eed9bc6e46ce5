//! Math helpers of the elementwise map kernels (planner/lower_elementwise.cc),
//! one //@section each: a kernel gets only the ones its body calls, each
//! once, by the name "elementwise_math.glsl#<section>". No placeholders.
//@section sigmoid
float kiln_sigmoid(float x) {
  if (x >= 0.0) return 1.0 / (1.0 + exp(-x));
  float e = exp(x);
  return e / (1.0 + e);
}
//@section tanh
//! exp(-2|x|) never overflows; small |x| uses the series to keep the
//! relative precision that 1 - t loses.
float kiln_tanh(float x) {
  float ax = abs(x);
  if (ax < 0.004) return x * (1.0 - x * x / 3.0);
  float t = exp(-2.0 * ax);
  float r = (1.0 - t) / (1.0 + t);
  return x < 0.0 ? -r : r;
}
//@section erf
//! Abramowitz & Stegun 7.1.26: |error| <= 1.5e-7 (GLSL has no erf).
float kiln_erf(float x) {
  float t = 1.0 / (1.0 + 0.3275911 * abs(x));
  float p = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t;
  float y = 1.0 - p * exp(-x * x);
  return x < 0.0 ? -y : y;
}
//@section softplus
float kiln_softplus(float x) { return x > 0.0 ? x + log(1.0 + exp(-x)) : log(1.0 + exp(x)); }
//@section pow
//! pow with the real-valued cases GLSL leaves undefined (x <= 0).
float kiln_pow(float x, float y) {
  if (y == 2.0) return x * x;
  if (y == 1.0) return x;
  if (y == 0.0) return 1.0;
  if (y == 0.5) return sqrt(x);
  if (x == 0.0) return y > 0.0 ? 0.0 : uintBitsToFloat(0x7f800000u);
  if (x < 0.0) {
    if (y != floor(y)) return uintBitsToFloat(0x7fc00000u);
    float r = pow(-x, y);
    return mod(y, 2.0) == 1.0 ? -r : r;
  }
  return pow(x, y);
}
//@section ipow
//! Integer power by squaring (wrapping); negative exponents as the reference.
int kiln_ipow(int b, int e) {
  if (e < 0) return b == 1 ? 1 : (b == -1 ? ((e & 1) == 0 ? 1 : -1) : 0);
  int r = 1;
  for (int i = 0; i < 32 && e > 0; ++i) { if ((e & 1) != 0) r *= b; b *= b; e >>= 1; }
  return r;
}
//@section idiv
//! Truncating division (OpSDiv) without the INT_MIN / -1 overflow.
int kiln_idiv(int a, int b) { return b == -1 ? -a : a / b; }
//@section irem
//! C remainder (sign of the dividend).
int kiln_irem(int a, int b) { return b == -1 ? 0 : a - b * (a / b); }
//@section imod
//! Python modulo (sign of the divisor).
int kiln_imod(int a, int b) {
  if (b == -1) return 0;
  int r = a - b * (a / b);
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
//@section fmod
//! fmod with a correction for a quotient that rounded across an integer.
float kiln_fmod(float a, float b) {
  float r = a - b * trunc(a / b);
  float ab = abs(b);
  if (r != 0.0 && ((r < 0.0) != (a < 0.0))) r += a < 0.0 ? -ab : ab;
  if (abs(r) >= ab) r -= a < 0.0 ? -ab : ab;
  return r;
}
//@section fmax
//! NaN-propagating max and min.
float kiln_fmax(float a, float b) { return (isnan(a) || isnan(b)) ? uintBitsToFloat(0x7fc00000u) : max(a, b); }
float kiln_fmin(float a, float b) { return (isnan(a) || isnan(b)) ? uintBitsToFloat(0x7fc00000u) : min(a, b); }
//@section f2i
//! Float -> integer of a range [lo, hi]: NaN -> 0, saturating, truncating.
int kiln_f2i(float x, float lo, float hi_excl, int ilo, int ihi) {
  if (isnan(x)) return 0;
  if (x >= hi_excl) return ihi;
  if (x <= lo) return ilo;
  return int(x);
}
