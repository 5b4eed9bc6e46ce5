//! 2-D depthwise convolution into a buffer (planner/lower_conv.cc:
//! conv_depthwise_rows): one invocation per R consecutive outputs of one
//! output row. Each kernel row's input span is read once into registers
//! and serves all R outputs: for a 7x7 window and R = 8, 14 reads per row
//! instead of 56 (the map kernel reads every tap of every output).
//!   @R@ @KH@ @KW@ @SX@ @DX@   outputs per invocation, window, x stride and
//!                             dilation (constants: they size the arrays)
//!   BIAS                      acc starts from Bias (else 0)
const int R = @R@, KH = @KH@, KW = @KW@, SX = @SX@, DX = @DX@;
const int SPAN = (R - 1) * SX + (KW - 1) * DX + 1;

void main() {
  int q = int(gl_GlobalInvocationID.x) + int(gl_GlobalInvocationID.y) * int(gl_NumWorkGroups.x) * 64;
  int xb = (Y_D3 + R - 1) / R;
  if (q >= CV_ROWS * xb) return;
  int ox0 = (q % xb) * R;
  q /= xb;
  int oy = q % Y_D2;
  q /= Y_D2;
  int oc = q % Y_D1, n = q / Y_D1;
  int c = oc / CV_MULT;
  float acc[R];
//@if BIAS
  float b0 = Bias_at(oc);
//@else
  float b0 = 0.0;
//@end
  [[unroll]] for (int r = 0; r < R; ++r) acc[r] = b0;
  int ix0 = ox0 * SX - CV_PB1;
  for (int ky = 0; ky < KH; ++ky) {
    int iy = oy * CV_ST0 - CV_PB0 + ky * CV_DL0;
    if (iy < 0 || iy >= X_D2) continue;  // a zero pad row
    float xs[SPAN];
    [[unroll]] for (int j = 0; j < SPAN; ++j) {
      int ix = ix0 + j;
      xs[j] = ix >= 0 && ix < X_D3 ? X_at(n, c, iy, ix) : 0.0;
    }
    [[unroll]] for (int kx = 0; kx < KW; ++kx) {
      float w = W_ld((oc * KH + ky) * KW + kx);
      [[unroll]] for (int r = 0; r < R; ++r) acc[r] += xs[r * SX + kx * DX] * w;
    }
  }
  [[unroll]] for (int r = 0; r < R; r += 4)
    if (ox0 + r < Y_D3) Y_store4(n, oc, oy, ox0 + r, vec4(acc[r], acc[r + 1], acc[r + 2], acc[r + 3]));
}
