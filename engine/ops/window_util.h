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
