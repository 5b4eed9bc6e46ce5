// FCM's FusePlanner decision for a depthwise -> pointwise Conv pair (fcm.txt):
// whether one fused DWPW kernel, keeping the depthwise output on chip, moves
// less global memory than two kernels, and with which tiles. The fusion pass
// asks it for every DW/PW group it found; a refusal splits the group into a
// depthwise group and a pointwise group. Pure function of its arguments;
// thread-safe.
#pragma once

#include <cstdint>
#include <string>

namespace kiln::fusion {

struct DeviceLimits { uint64_t shared_memory_bytes = 32768; uint32_t compute_units = 0; /* 0 = unknown */ };
struct DwPwShape { int64_t batch, channels, in_h, in_w, out_h, out_w, kernel_h, kernel_w, stride_h, stride_w, out_channels, elem_bytes; };
struct DwPwDecision { bool fuse = false; int tile_m = 0, tile_n = 0; /* 0 = planner's choice */ int64_t fused_bytes = 0, unfused_bytes = 0; std::string why; };

// Decides fusion and tiles for one DW/PW pair whose dims are all known
// (the pass does not ask for symbolic shapes). `why` says what decided it.
DwPwDecision plan_dwpw(const DwPwShape& shape, const DeviceLimits& limits);

}  // namespace kiln::fusion
