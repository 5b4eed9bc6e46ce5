//! Depthwise convolution with multiplier 1 between images packed on
//! channels (planner/lower_conv.cc: conv_depthwise_texels): one invocation
//! per output texel (four channels of one pixel) reads one input texel per
//! tap. W holds the taps as [kk][C], four channels to a vec4 load.
//!   @OUT_COORDS@  statements declaring the output pixel o0.. from q
//!   @TAPS@        the loops over the window, accumulating into acc
//!   @OUT_LIST@    o0, o1, ...
//!   BIAS          acc starts from Bias (else 0)
void main() {
  int q = int(gl_GlobalInvocationID.x) + int(gl_GlobalInvocationID.y) * int(gl_NumWorkGroups.x) * 64;
  if (q >= CV_TEXELS) return;
@OUT_COORDS@
  int c = (q % CV_CBLOCKS) * 4, img = q / CV_CBLOCKS;
//@if BIAS
  vec4 acc = Bias_at4(c);
//@else
  vec4 acc = vec4(0.0);
//@end
@TAPS@
  Y_st4(img, c, @OUT_LIST@, acc);
}
