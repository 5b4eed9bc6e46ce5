// Placeholder FusePlanner (see fuse_planner.h): fuses every DW/PW pair whose
// dims are known and leaves the tiles to the planner. The cost model (FCM
// Eq. 1-4: global-memory bytes fused vs unfused under the device's shared
// memory) replaces this file.
#include "plugins/fusion/fuse_planner.h"

namespace kiln::fusion {

DwPwDecision plan_dwpw(const DwPwShape& shape, const DeviceLimits& limits) {
  (void)limits;
  DwPwDecision d;
  const bool known = shape.batch > 0 && shape.channels > 0 && shape.in_h > 0 && shape.in_w > 0 && shape.out_h > 0 &&
                     shape.out_w > 0 && shape.kernel_h > 0 && shape.kernel_w > 0 && shape.stride_h > 0 &&
                     shape.stride_w > 0 && shape.out_channels > 0 && shape.elem_bytes > 0;
  d.fuse = known;
  d.why = known ? "constant shapes (no cost model yet)" : "unknown dims";
  return d;
}

}  // namespace kiln::fusion
