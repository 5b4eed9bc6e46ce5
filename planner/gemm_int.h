// The tiled integer GEMM of the quantized ops (MatMulInteger, QLinearMatMul,
// ConvInteger, QLinearConv as implicit GEMM; lower_integer_linalg.cc).
//
// The float GEMM family (gemm_kernels.h) accumulates in float; integer
// products must be exact, so they get their own kernel with the same
// contract in int: one template (shaders/gemm_int_tile.comp) owning the
// tiling, the shared-memory staging and the edge masking, and three small
// GLSL functions from the lowering:
//   int gemm_a(int b, int m, int k);   A with its zero point subtracted
//                                      (0 where a convolution pads);
//                                      called only with m < GEMM_M, k < GEMM_K
//   int gemm_b(int b, int k, int n);   likewise, k < GEMM_K, n < GEMM_N
//   void gemm_store4(int b, int m, int n, ivec4 v);
//       stores C[b, m, n + j] = v[j] (after the op's requantization), n a
//       multiple of 4, m < GEMM_M, n < GEMM_N; lanes n + j >= GEMM_N dropped.
// GEMM_BATCH, GEMM_M, GEMM_N, GEMM_K are int parameters the helpers may use.
//
// This is the correctness baseline: no split-K, no GEMV variant, and no
// int8 dot-product instructions (VK_KHR_shader_integer_dot_product) or
// integer cooperative matrices yet; operands are int32 on the device.
#pragma once

#include "engine/base/status.h"
#include "planner/gemm_kernels.h"
#include "planner/lowering.h"

namespace kiln::planner {

// Emits the kernel for `p` (its a_m_fastest as for emit_gemm; its hint is
// not read): tiles of 32 x 32, 16 x 32 when M is a constant of at most 16,
// 64 x 64 when M and N are 64 or more (or symbolic);
// ctx.unsupported when a constant grid dimension exceeds the device's
// workgroup-count limit (the node then runs on the host).
Status emit_int_gemm(LoweringContext& ctx, const GemmProblem& p);

}  // namespace kiln::planner
