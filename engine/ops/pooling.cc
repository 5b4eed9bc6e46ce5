// Op family 'pooling': schemas, shape inference and reference kernels.
#include "engine/ops/op_registry.h"

namespace kiln::ops {

void register_pooling_ops(OpRegistry& r) { (void)r; }

}  // namespace kiln::ops
