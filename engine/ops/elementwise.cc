// Op family 'elementwise': schemas, shape inference and reference kernels.
#include "engine/ops/op_registry.h"

namespace kiln::ops {

void register_elementwise_ops(OpRegistry& r) { (void)r; }

}  // namespace kiln::ops
