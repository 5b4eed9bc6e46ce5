// The 'fuse-qdq' pass of kiln.canonicalize (qdq_rewrite.cc): static QDQ
// patterns (DequantizeLinear -> Conv/MatMul/Gemm -> QuantizeLinear) become
// QLinearConv / QLinearMatMul, which run as integer kernels.
#pragma once

#include "kiln/kiln_plugin.h"

namespace kiln::canonicalize {

extern const kiln_pass_t kFuseQdqPass;

}  // namespace kiln::canonicalize
