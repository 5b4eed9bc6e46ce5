// Entry points of the 'linalg' op family that live outside linalg.cc:
// Conv and ConvTranspose (linalg_conv.cc, whose im2col / col2im and
// depthwise kernels are as large as the rest of the family together) and
// Einsum (linalg_einsum.cc). register_linalg_ops (linalg.cc) registers them.
// Internal to kiln_ops.
#pragma once

#include <type_traits>

#include "engine/base/dtype.h"
#include "engine/base/status.h"
#include "engine/ops/op_registry.h"

namespace kiln::ops {

// Element <-> double for the exact (non-fp32) kernel loops; fp16 goes
// through float.
template <typename T>
inline double to_f64(T v) {
  if constexpr (std::is_same_v<T, Half>) {
    return static_cast<double>(static_cast<float>(v));
  } else {
    return static_cast<double>(v);
  }
}

template <typename T>
inline T from_f64(double v) {
  if constexpr (std::is_same_v<T, Half>) {
    return Half(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}


// MatMul (numpy matmul: 1-D promotion, broadcast batch dims): A and B of one
// float or 32/64-bit integer dtype. MatMulInteger and QLinearMatMul reuse
// its shapes (integer_linalg.cc).
Status infer_matmul(InferContext& ctx);

// Conv (ONNX opset 11+): X [N, C, D1..Dn], W [M, C/group, k1..kn], B [M]
// -> Y [N, M, O1..On]. Inference validates ranks, channels against
// W.shape[1] * group, M against group, kernel_shape against W and the
// window attributes.
Status infer_conv(InferContext& ctx);
Status conv_kernel(KernelContext& ctx);

// ConvTranspose: X [N, C, D1..Dn], W [C, M/group, k1..kn], B [M]
// -> Y [N, M, O1..On] with O from pads/output_padding, output_shape or
// auto_pad.
Status infer_conv_transpose(InferContext& ctx);
Status conv_transpose_kernel(KernelContext& ctx);

// Einsum: numpy.einsum over one or more inputs, with implicit and explicit
// output, '...' broadcasting, repeated labels (diagonals) and size-1
// broadcasting of labelled axes.
Status infer_einsum(InferContext& ctx);
Status einsum_kernel(KernelContext& ctx);

}  // namespace kiln::ops
