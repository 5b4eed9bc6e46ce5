// Sliding-window geometry shared by Conv, ConvTranspose and the pools.
//
// These ops share one attribute vocabulary (kernel_shape, strides,
// dilations, pads, auto_pad, ceil_mode) and one output-size rule; keeping
// them in one place means the symbolic shape inference and the kernels that
// later recompute the concrete pads cannot drift apart.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "engine/base/status.h"
#include "engine/ir/dim.h"
#include "engine/ir/graph.h"

namespace kiln::ops {

enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };

struct WindowAttrs {
  AutoPad auto_pad = AutoPad::kNotSet;
  std::vector<int64_t> kernel;     // kernel_shape; empty when absent (Conv takes it from W)
  std::vector<int64_t> strides;    // one per spatial axis
  std::vector<int64_t> dilations;  // one per spatial axis
  std::vector<int64_t> pads;       // begins then ends; zeros unless auto_pad is NOTSET
  bool ceil_mode = false;
};

// Reads and validates the window attributes of `node` for `spatial` spatial
// axes. Errors (INVALID_ARGUMENT, naming the node and attribute): wrong
// lengths, non-positive kernel/strides/dilations, negative pads, an unknown
// auto_pad, or a missing kernel_shape when `kernel_required`.
StatusOr<WindowAttrs> read_window_attrs(const ir::Node& node, size_t spatial, bool kernel_required);

// The kernel extent of one axis once dilated: (k - 1) * d + 1.
ir::Dim dilated_kernel(const ir::Dim& kernel, int64_t dilation);

// Output size of spatial `axis` of a Conv or pool with input size `in` and
// kernel size `kernel` (either may be symbolic):
//   SAME_*:   ceil(in / stride)
//   otherwise floor((in + pads - dilated_kernel) / stride) + 1, or with
//             ceil_mode the ceiling, ignoring windows that would start in the
//             end padding.
ir::Dim window_output_dim(const WindowAttrs& w, size_t axis, const ir::Dim& in, const ir::Dim& kernel);

// Concrete (begin, end) pads of spatial `axis` at run time, with auto_pad
// resolved: SAME_UPPER puts the odd element at the end, SAME_LOWER at the
// beginning.
std::pair<int64_t, int64_t> window_pads(const WindowAttrs& w, size_t axis, int64_t in, int64_t kernel);

// A conv/pool geometry with up to three spatial axes, right-aligned into
// (depth, height, width) with unit leading axes, so kernels loop over three
// axes whatever the rank.
struct Geometry3 {
  int64_t in[3] = {1, 1, 1};
  int64_t out[3] = {1, 1, 1};
  int64_t kernel[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1};
  int64_t dilation[3] = {1, 1, 1};
  int64_t pad_begin[3] = {0, 0, 0};
  int64_t pad_end[3] = {0, 0, 0};

  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  int64_t kernel_size() const { return kernel[0] * kernel[1] * kernel[2]; }
};

// The kernel taps of a window at position p = (p0, p1, p2): for each tap k
// whose coordinate q = p * stride - pad_begin + k * dilation lies inside
// `extent` on every axis, in row-major tap order, fn(linear index of q in
// `extent`, linear index of k). A convolution gathers its input this way
// (p an output position, extent g.in); a transposed convolution scatters
// into its output (p an input position, extent g.out).
template <typename Fn>
inline void for_each_tap(const Geometry3& g, int64_t p0, int64_t p1, int64_t p2, const int64_t (&extent)[3], Fn fn) {
  for (int64_t k0 = 0; k0 < g.kernel[0]; ++k0) {
    const int64_t q0 = p0 * g.stride[0] - g.pad_begin[0] + k0 * g.dilation[0];
    if (q0 < 0 || q0 >= extent[0]) continue;
    for (int64_t k1 = 0; k1 < g.kernel[1]; ++k1) {
      const int64_t q1 = p1 * g.stride[1] - g.pad_begin[1] + k1 * g.dilation[1];
      if (q1 < 0 || q1 >= extent[1]) continue;
      for (int64_t k2 = 0; k2 < g.kernel[2]; ++k2) {
        const int64_t q2 = p2 * g.stride[2] - g.pad_begin[2] + k2 * g.dilation[2];
        if (q2 < 0 || q2 >= extent[2]) continue;
        fn((q0 * extent[1] + q1) * extent[2] + q2, (k0 * g.kernel[1] + k1) * g.kernel[2] + k2);
      }
    }
  }
}

// Fills a Geometry3 from concrete spatial sizes. UNIMPLEMENTED for more than
// three spatial axes.
StatusOr<Geometry3> make_geometry3(const std::vector<int64_t>& in, const std::vector<int64_t>& out,
                                   const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                                   const std::vector<int64_t>& dilations, const std::vector<int64_t>& pad_begin,
                                   const std::vector<int64_t>& pad_end);

// floor(a / b) and ceil(a / b) for b > 0 and any sign of a.
inline int64_t floor_div_i64(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
inline int64_t ceil_div_i64(int64_t a, int64_t b) { return -floor_div_i64(-a, b); }

}  // namespace kiln::ops
