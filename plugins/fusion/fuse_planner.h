// FusePlanner's cost model (FCM, Qararyah et al., "Fusing depthwise and
// pointwise convolutions for efficient inference on GPUs", §4) for Kiln's
// fused depthwise -> pointwise kernel.
//
// Kiln fuses DW -> PW by computing the depthwise output on the fly as the A
// operand (output pixels m x channels k) of the pointwise convolution's
// tiled GEMM: tile_m output pixels x tile_n output channels per workgroup,
// K advancing BK = 16 channels at a time through shared memory. Every column
// tile recomputes its rows' depthwise outputs, so the depthwise input window
// (halo included) is read ceil(out_channels / tile_n) times; layer by layer,
// the depthwise output goes to global memory once and the pointwise GEMM
// reads it back. plan_dwpw estimates both with the paper's global-memory
// estimators and picks the one that moves fewer bytes, and the tile.
//
// Pure arithmetic: no engine, Vulkan or plugin-ABI dependency, so the
// kiln.fusion plugin and its tests link it alone.
#pragma once

#include <cstdint>
#include <string>

namespace kiln::fusion {

struct DeviceLimits {
  uint64_t shared_memory_bytes = 32768;
  uint32_t compute_units = 0; /* 0 = unknown */
};

// NCHW: depthwise input [batch, channels, in_h, in_w], kernel kernel_h x
// kernel_w with the strides, output [batch, channels, out_h, out_w]; the
// pointwise convolution maps `channels` to `out_channels`. elem_bytes: 4 for
// fp32, 2 for fp16.
struct DwPwShape {
  int64_t batch, channels, in_h, in_w, out_h, out_w, kernel_h, kernel_w, stride_h, stride_w, out_channels, elem_bytes;
};

struct DwPwDecision {
  bool fuse = false;
  int tile_m = 0, tile_n = 0; /* 0 = planner's choice */
  int64_t fused_bytes = 0, unfused_bytes = 0;
  std::string why;
};

// Fuse when the fused kernel's best tile moves fewer global-memory bytes than
// the best layer-by-layer pair. Tiles: tile_m in {16, 32, 64, 128}, tile_n in
// {16, 32, 64} (128 rows only with 64 columns) whose shared-memory footprint
// fits limits.shared_memory_bytes; with compute_units known, only tilings of
// at least that many workgroups (or the most parallel one when none has
// enough). The decision's tiles are the fused kernel's (0 when not fusing:
// the planner chooses the pointwise GEMM's own). A malformed shape never
// fuses, and says why.
DwPwDecision plan_dwpw(const DwPwShape& shape, const DeviceLimits& limits);

}  // namespace kiln::fusion
