//! Statements inside a row kernel's main() (ArgMax/ArgMin, Hardmax): a tree
//! reduction of each invocation's best (value, index) per lane, bv and bi,
//! over the workgroup by kiln_better(v, i, b, bi); afterwards kiln_rv[0]
//! and kiln_ri[0] hold the winners. Needs `shared @V@ kiln_rv[local]` and
//! `shared ivec4 kiln_ri[local]`; uniform control flow.
//!   @V@ vec4 or ivec4   @HALF@ half the workgroup size (a power of two)
  uint t = gl_LocalInvocationIndex;
  kiln_rv[t] = bv; kiln_ri[t] = bi;
  barrier();
  for (uint s = @HALF@u; s > 0u; s >>= 1) {
    if (t < s) {
      @V@ ov = kiln_rv[t + s], mv = kiln_rv[t]; ivec4 oi = kiln_ri[t + s], mi = kiln_ri[t];
      for (int l = 0; l < 4; ++l)
        if (kiln_better(ov[l], oi[l], mv[l], mi[l])) { mv[l] = ov[l]; mi[l] = oi[l]; }
      kiln_rv[t] = mv; kiln_ri[t] = mi;
    }
    barrier();
  }
