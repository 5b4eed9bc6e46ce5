// Op family 'control_flow': schemas, shape inference and reference kernels.
#include "engine/ops/op_registry.h"

namespace kiln::ops {

void register_control_flow_ops(OpRegistry& r) { (void)r; }

}  // namespace kiln::ops
