//! A depthwise conv and the LayerNormalization over its channels as one
//! kernel (planner/fusion_dw_norm.h): workgroup g takes @P@ neighbouring
//! pixels of one image row. Each invocation computes R of those pixels of
//! one channel, reading each window row's input span once into registers
//! (as conv_depthwise_rows.comp does), into shared memory; then each
//! pixel's mean and inverse standard deviation over the channels (two
//! passes, as the layer_norm kernel computes them); then the normalized
//! pixels go to the channels-last Y [N, H, W, C], four channels a store.
//!   @NT@  workgroup size             @P@   pixels per workgroup (R | P | NT)
//!   @T@   invocations per pixel (NT / P, a power of two)   @C@  channels
//!   @R@ @KH@ @KW@ @SX@ @DX@  pixels per invocation, window, x stride and
//!                            dilation (constants: they size the arrays)
//!   @EPS@ epsilon   DW_BIAS  the conv has a bias   BETA  the norm has one
const int R = @R@, KH = @KH@, KW = @KW@, SX = @SX@, DX = @DX@;
const int SPAN = (R - 1) * SX + (KW - 1) * DX + 1;
// A channel's pixels in shared memory, padded by one against bank conflicts
// when the last pass reads four channels of a pixel.
const int PS = @P@ + 1;
shared float kiln_dw[@C@ * PS];
shared float kiln_part[@NT@];
shared float kiln_stat[2 * @P@];

void main() {
  const int g = int(gl_WorkGroupID.x) + int(gl_WorkGroupID.y) * int(gl_NumWorkGroups.x);
  if (g >= KILN_GROUPS) return;  // the whole workgroup
  const int t = int(gl_LocalInvocationIndex);
  const int wblocks = (Y_D2 + @P@ - 1) / @P@;
  const int w0 = (g % wblocks) * @P@, r0 = g / wblocks;
  const int h = r0 % Y_D1, n = r0 / Y_D1;
  for (int i = t; i < @C@ * (@P@ / R); i += @NT@) {
    const int rb = i % (@P@ / R), ch = i / (@P@ / R);
    float acc[R];
//@if DW_BIAS
    const float b0 = DWB_at(ch);
//@else
    const float b0 = 0.0;
//@end
    [[unroll]] for (int r = 0; r < R; ++r) acc[r] = b0;
    const int ix0 = (w0 + rb * R) * SX - DW_PB1;
    for (int ky = 0; ky < KH; ++ky) {
      const int iy = h * DW_ST0 - DW_PB0 + ky * DW_DL0;
      if (iy < 0 || iy >= DWX_D2) continue;  // a zero pad row
      float xs[SPAN];
      [[unroll]] for (int j = 0; j < SPAN; ++j) {
        const int ix = ix0 + j;
        xs[j] = ix >= 0 && ix < DWX_D3 ? DWX_at(n, ch, iy, ix) : 0.0;
      }
      [[unroll]] for (int kx = 0; kx < KW; ++kx) {
        const float w = DWW_at(ky * KW + kx, ch);
        [[unroll]] for (int r = 0; r < R; ++r) acc[r] += xs[r * SX + kx * DX] * w;
      }
    }
    [[unroll]] for (int r = 0; r < R; ++r) kiln_dw[ch * PS + rb * R + r] = acc[r];
  }
  barrier();
  // Invocation t = j * P + p sums channels j, j + T, ... of pixel p; a
  // tree over j adds the pixel's T partial sums into kiln_part[p].
  const int p = t % @P@, j = t / @P@;
  float s = 0.0;
  for (int ch = j; ch < @C@; ch += @T@) s += kiln_dw[ch * PS + p];
  kiln_part[t] = s;
  barrier();
  for (int stride = @T@ / 2; stride > 0; stride >>= 1) {
    if (j < stride) kiln_part[t] += kiln_part[t + stride * @P@];
    barrier();
  }
  if (j == 0) kiln_stat[p] = kiln_part[p] / float(@C@);
  barrier();
  const float mean = kiln_stat[p];
  s = 0.0;
  for (int ch = j; ch < @C@; ch += @T@) {
    const float d = kiln_dw[ch * PS + p] - mean;
    s += d * d;
  }
  kiln_part[t] = s;
  barrier();
  for (int stride = @T@ / 2; stride > 0; stride >>= 1) {
    if (j < stride) kiln_part[t] += kiln_part[t + stride * @P@];
    barrier();
  }
  if (j == 0) kiln_stat[@P@ + p] = inversesqrt(kiln_part[p] / float(@C@) + @EPS@);
  barrier();
  const int cb = (@C@ + 3) / 4;
  for (int i = t; i < cb * @P@; i += @NT@) {
    const int c4 = (i % cb) * 4, q = i / cb;
    if (w0 + q >= Y_D2) continue;
    vec4 x;
    [[unroll]] for (int l = 0; l < 4; ++l) x[l] = c4 + l < @C@ ? kiln_dw[(c4 + l) * PS + q] : 0.0;
    vec4 y = (x - kiln_stat[q]) * kiln_stat[@P@ + q] * G_at4(c4);
//@if BETA
    y += B_at4(c4);
//@end
    Y_st4(n, h, w0 + q, c4, y);
  }
}
