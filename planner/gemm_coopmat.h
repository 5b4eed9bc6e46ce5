// The cooperative-matrix (tensor core) variant of the shared GEMM kernel.
//
// In fp16 plans on a device with fp16 cooperative matrices, emit_gemm
// (gemm_kernels.h) runs a GemmProblem as this kernel instead of the scalar
// tiled one; the lowering's gemm_a / gemm_b / gemm_store4 helpers stay the
// same, so MatMul, Gemm and Conv all get it. A workgroup of 4 or 8 subgroups
// (2 x 2, 4 x 2 or 2 x 4) computes a BM x BN tile of C: per K step of BK
// (64 for MatMul and Gemm tiles of up to 64 rows, else 32:
// default_coopmat_bk) every
// invocation stages its share of the A and B tiles in shared memory as
// float16_t (out-of-range elements zero, exactly as the scalar kernel masks
// edges), each subgroup loads its fragments from there and multiplies them
// into fp32 accumulator matrices, and at the end each subgroup stages one
// row of its fragments at a time in shared memory and writes it out through
// gemm_store4 (so any output layout and epilogue works). The next K step's
// tile elements are read into registers while the current step multiplies.
//
// Dialect: GL_NV_cooperative_matrix, the one the available glslang
// compiles. On a kKHR target (TargetInfo::coopmat) the runtime rewrites the
// compiled SPIR-V into SPV_KHR_cooperative_matrix (platform/vulkan/
// coopmat_khr.h); the GLSL is the same.
#pragma once

#include <optional>
#include <string>

#include "planner/gemm_kernels.h"
#include "planner/target.h"

namespace kiln::planner {

struct CoopMatConfig {
  CoopMatShape shape;       // the fragment shape (one of the target's)
  int bm = 64, bn = 64;     // workgroup tile
  int wm = 2, wn = 2;       // a wm x wn grid of subgroups, each owning bm/wm x bn/wn
  int bk = 32;              // K per shared-memory step (32 or 64)
  // Shared-memory buffers of the A and B tiles: 1, or 2 — the next K step's
  // tiles are stored while this step's multiply, one barrier per step
  // instead of two (shaders/gemm_coopmat.comp, DOUBLE_BUFFER).
  int stages = 1;
  uint32_t subgroup_size = 32;
  // B is read in fp32 (a weight the precision policy keeps, e.g. an early
  // convolution's): staged as two fp16 tiles, hi = fp16(b) and lo =
  // fp16((b - hi) * 2^11), each multiplied into its own fp32 accumulators
  // (shaders/gemm_coopmat.comp) — about 22 bits of B for twice the B tiles,
  // fragment products and accumulators; fp32 accumulator shapes only
  // (values beyond fp16's range, which no such weight has, would overflow).
  bool b_split = false;
};

// The fragment shape to use on `target`: fp32 accumulators before fp16 ones,
// then the most multiply-adds per fragment product. Only shapes whose m, n
// and k divide the kernel's tiles (m | 16, n | 16 with n >= 8, k | 32 with
// k >= 8, which also keeps every shared-memory fragment 16-byte aligned)
// qualify. Nullopt when none does or the target has no cooperative matrices.
std::optional<CoopMatShape> pick_coopmat_shape(const TargetInfo& target);

// The configuration for `p`, or nullopt when the cooperative-matrix kernel
// does not apply: precision is not fp16, the target lacks an fp16 shape,
// subgroups or shared memory for it, or constant sizes are too small to
// fill a fragment usefully (M < 32, N < 16; a handful of rows is the
// GEMV's). Symbolic sizes qualify. Tiles (each subgroup owning 32 x 32 or
// 32 x 16): 64 x 32 for N <= 32; 64 x 128 for convolutions (a_m_fastest)
// with N >= 128 or symbolic; 128 x 128 (2 x 2 subgroups of 64 x 64) for
// large constant GEMMs that still give 128 workgroups with them, else
// 128 x 64 where those do; 32 x 64 for up to 4096 rows; else 64 x 64 — falling back to 64 x 64 (or none)
// where the target lacks the shared memory or invocations; BK is
// default_coopmat_bk where the shared memory holds it, else 32. A forced
// tile (TargetInfo::coopmat_tile) replaces all of that where the target
// can run it.
//
// Measured on an H200 (fp16, GPU time per kernel): a 2048x4096x4096 MatMul
// runs at ~70 TFLOP/s against ~26 for the scalar kernel; 3x3 convolutions
// at 32x512x7x7 ~9.7 against ~6.7, but at 32x256x28x28 ~9.0 against ~11.3:
// there the scalar im2col loads (gemm_a per element) bound both kernels
// and the cooperative one hides them worse.
// `b_split`: B is fp32 in an fp16 plan (CoopMatConfig::b_split).
std::optional<CoopMatConfig> choose_coopmat(const GemmProblem& p, const TargetInfo& target, ElemType precision,
                                            bool b_split = false);

// How the kernel splits K (shaders/gemm_coopmat.comp): not at all; into
// partial tiles that gemm_splitk_reduce.comp adds (SPLIT_K); or with the
// last workgroup per tile adding them (SPLIT_K and FIXUP).
enum class CoopMatSplitK { kNone, kPartials, kFixup };

// The kernel (kCustom) for `p` with configuration `c`. Its name is
// p.name + "_coopmat<bm>x<bn>".
// When split, the caller adds the GP scratch ([slices][batch][M][N] fp32),
// GEMM_KCHUNK (a multiple of c.bk) and multiplies groups[2] by the
// slice count; for kFixup also the GC counters and GEMM_SPLIT (emit_gemm).
KernelDesc make_coopmat_gemm_kernel(const GemmProblem& p, const CoopMatConfig& c,
                                    CoopMatSplitK split = CoopMatSplitK::kNone);
// K per shared-memory step of the cooperative-matrix kernel for `p` with
// tile `c`, where the shared memory allows it: 64 for MatMul and Gemm tiles
// of up to 64 rows (the transformers' 32 x 64), 32 for larger tiles and for
// implicit-GEMM convolutions (a_m_fastest). On an H100 (fp16 GPU ms, KHR,
// two rounds, bench/results/h100-2026-11-28-session20) 64 took vit_b_16
// 1.090 -> 1.018, bert_base at 128 tokens 0.787 -> 0.721, swin_t 0.872 ->
// 0.851, convnext_tiny 0.802 -> 0.774, but made every convolution slower
// (resnet50 0.991 -> 1.016, mobilenet_v2 0.454 -> 0.464: each A element's
// im2col index math is then held over twice the K per step) and a 4096^3
// MatMul on 128-row tiles too (768 -> 852 us).
int default_coopmat_bk(const GemmProblem& p, const CoopMatConfig& c);

// "16x8x16 f32acc, tile 128x128" — for logs and tests.
std::string describe(const CoopMatConfig& c);

}  // namespace kiln::planner
