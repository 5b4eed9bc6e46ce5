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
// The dot-product path (shaders/gemm_int8_dot.comp), where the device has
// packed int8 dot products (TargetInfo::integer_dot_product) and B is a
// constant whose values minus its zero point fit int8 (weights): B' = B -
// zb is packed at plan time, 4 k to an int32 word (gemm_int8_pack.h), A's
// raw 8-bit values are packed as the tile is loaded, and each word pair is
// one OpSDot/OpSUDot; A's zero point comes out once per element at the end.
// Its helpers instead of gemm_a/gemm_b:
//   int gemm_a_raw(int b, int m, int k);   A's raw int8/uint8 value, A's
//                                          zero point where a convolution
//                                          pads (not 0); m < GEMM_M, k < GEMM_K
//   int gemm_a_zero(int b, int m);         A's zero point for row m
//   int gemm_b_packed(int b, int kw, int n);  the word of B'(b, 4kw .. 4kw+3, n),
//                                          0 past K; kw < ceil(K/4), n < GEMM_N
//   int gemm_b_colsum(int b, int n);       sum over k of B'(b, k, n)
//   gemm_store4 as above.
//
// Where the device has int8 cooperative matrices (TargetInfo::
// coopmat_s8_shapes) and M and N are 16 or more, the same helpers feed the
// tensor-core kernel (shaders/gemm_int8_coopmat.comp) instead: a uint8 A
// enters the signed fragments as a - 128, and the end adds (128 - za) times
// B's column sums; with, optionally (in GemmProblem::vector_helpers),
//   #define GEMM_A16
//   uvec4 gemm_a16(int b, int m, int k);   A's raw values at k .. k+15 as
//                                          bytes (k a multiple of 16, the
//                                          unit inside K): one index
//                                          computation for 16 values
// Both kernels split K where their grid is small for the device (the float
// GEMM's choose_split), writing raw int32 sums that the split-K reduce pass
// finishes. Operands are int32 on the device (A is packed in the kernel).
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

// Whether this node may take the dot-product path: the device has packed
// int8 dot products with SPIR-V 1.6 (Vulkan 1.3), and the node's kiln.kernel
// hint does not say int8_dot=off.
bool int8_dot_available(const LoweringContext& ctx);

// Emits the dot-product kernel for `p` (helpers as above; tiles as
// emit_int_gemm's); `a_unsigned` when A's raw values are uint8.
Status emit_int8_dot_gemm(LoweringContext& ctx, const GemmProblem& p, bool a_unsigned);

}  // namespace kiln::planner
