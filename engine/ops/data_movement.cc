// Op family 'data_movement': schemas, shape inference and reference kernels.
#include "engine/ops/op_registry.h"

namespace kiln::ops {

void register_data_movement_ops(OpRegistry& r) { (void)r; }

}  // namespace kiln::ops
