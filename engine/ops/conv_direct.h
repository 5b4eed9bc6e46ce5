// The direct (reference) convolution walk shared by Conv's float16/float64
// kernel (linalg_conv.cc) and the integer ConvInteger/QLinearConv kernel
// (integer_linalg.cc): the concrete geometry of a Conv node, and the loop over
// one output channel plane. The kernels differ only in the element types and
// in how one product is accumulated (double sums vs wrapping int32 sums), so
// those are template parameters and the index arithmetic exists once.
// Internal to kiln_ops.
#pragma once

#include <cstdint>

#include "engine/base/tensor.h"
#include "engine/base/status.h"
#include "engine/ir/graph.h"
#include "engine/ops/window_util.h"

namespace kiln::ops {

// The Geometry3 of Conv `node` (its window attributes and auto_pad resolved)
// for input X shape `x`, weights W shape `w` and output Y shape `y`, all
// [N, C, spatial...]. Errors name the node.
StatusOr<Geometry3> conv_geometry(const ir::Node& node, const Shape& x, const Shape& w, const Shape& y);

// One output channel plane of a direct convolution with zero padding.
// `x` points at the first of the `channels` input channels of the group
// (each g.in_size() long), `w` at this output channel's weights
// ([channels, kernel...]), `y` at the plane (g.out_size() long). For each
// output position the accumulator starts at `init`, takes
// acc = mul_add(acc, x value, w value) over the input channels and kernel
// taps that fall inside the input (in that order), and is stored as
// y[position] = finish(acc).
template <typename Acc, typename X, typename W, typename Y, typename MulAdd, typename Finish>
void conv_direct_plane(const Geometry3& g, const X* x, const W* w, int64_t channels, Acc init, Y* y, MulAdd mul_add,
                       Finish finish) {
  const int64_t kk = g.kernel_size(), in_sz = g.in_size();
  for (int64_t od = 0; od < g.out[0]; ++od)
    for (int64_t oh = 0; oh < g.out[1]; ++oh)
      for (int64_t ow = 0; ow < g.out[2]; ++ow) {
        Acc acc = init;
        for (int64_t ic = 0; ic < channels; ++ic) {
          const X* xp = x + ic * in_sz;
          const W* wp = w + ic * kk;
          for_each_tap(g, od, oh, ow, g.in, [&](int64_t xi, int64_t ki) { acc = mul_add(acc, xp[xi], wp[ki]); });
        }
        y[(od * g.out[1] + oh) * g.out[2] + ow] = finish(acc);
      }
}

}  // namespace kiln::ops
