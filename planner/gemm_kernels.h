// Matrix-multiply kernels shared by the MatMul, Gemm and Conv lowerings.
//
// Every heavy linear-algebra op is a batched GEMM once its operands are
// described as functions: MatMul reads A and B through accessors with
// broadcast batches, Gemm transposes and scales, Conv is an implicit GEMM
// whose A operand is the im2col matrix computed on the fly. So the tiled
// kernel is written once here and each lowering supplies three small GLSL
// functions (how to read A and B, how to store four results); the kernel
// owns the tiling, the shared-memory staging, the register blocking and the
// edge masking, and picks its variant (GEMV for a handful of rows, tiles of
// 16/32/64/128 rows otherwise) from the sizes known at plan time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/ir/dim.h"
#include "engine/base/status.h"
#include "planner/kernel.h"
#include "planner/lowering.h"
#include "planner/plan_hints.h"

namespace kiln::planner {

// C[b, m, n] = sum_k A(b, m, k) * B(b, k, n) for b < batch, m < M, n < N.
//
// `helpers` must define (GLSL, after the tensors' accessors):
//   float gemm_a(int b, int m, int k);   called only with m < GEMM_M, k < GEMM_K
//   float gemm_b(int b, int k, int n);   called only with k < GEMM_K, n < GEMM_N
//   void gemm_store4(int b, int m, int n, vec4 v);
//       stores C[b, m, n + j] = v[j]; n is a multiple of 4 and m < GEMM_M,
//       n < GEMM_N; lanes with n + j >= GEMM_N must be dropped.
// The kernel declares the int parameters GEMM_BATCH, GEMM_M, GEMM_N, GEMM_K
// which the helpers may use; the tensor names "GP" and "GC" are reserved
// (split-K scratch and arrival counters, see emit_gemm).
struct GemmProblem {
  std::string name;
  ir::Dim batch = ir::Dim(1);
  ir::Dim m, n, k;
  std::vector<KernelTensor> tensors;
  std::vector<KernelParam> params;
  std::string helpers;
  // Optional 16-byte reads for the cooperative-matrix kernel only (GLSL,
  // after `helpers`), each defined with its macro where the lowering knows
  // the operand is contiguous along the unit and the sizes keep every unit
  // whole and 16-byte aligned (e.g. K % 8 == 0 for a row-major A):
  //   #define GEMM_A8  uvec4 gemm_a8(int b, int m, int k);  A(b, m, k .. k+7)
  //   #define GEMM_B8  uvec4 gemm_b8(int b, int k, int n);  B(b, k, n .. n+7)
  // as 8 packed halves; called with k (n) a multiple of 8 and the whole unit
  // inside the operand. The tensors' X_ld8h accessors (glsl_codegen.h)
  // give one load where the tensor is an fp16 buffer.
  std::string vector_helpers;
  // The tensors gemm_a and gemm_b read, when each reads one tensor's values
  // (empty: unknown). In an fp16 plan with an fp32 B (a weight the
  // precision policy keeps) and an fp16 A, the cooperative-matrix kernel
  // then still applies, multiplying by B's fp16 halves (CoopMatConfig).
  std::string a_tensor, b_tensor;
  // Order of the A-tile loads: consecutive invocations walk k (A row-major
  // in k, e.g. MatMul) or m (A's rows are contiguous per k, e.g. the im2col
  // matrix of an NCHW buffer, where neighbouring m are neighbouring pixels).
  bool a_m_fastest = false;
  // How the tensor-core kernel stages an implicit-GEMM convolution's A
  // units (8 consecutive k): kNone for a MatMul/Gemm; kPointwise for a 1x1
  // convolution (K = input channels, emit_gemm routes the small ones) whose
  // output pixels are its input pixels, kStridedPointwise for one with
  // strides or padding (each output pixel finds its input pixel);
  // for a larger kernel (K ordered tap-major, K = tap x CG + c) kChannelRuns
  // when a unit is 8 channels of one tap (CG a multiple of 8: one input
  // pixel's index math, GEMM_A8), kGathered when each of its 8 elements
  // finds its own tap and pixel (an RGB stem's CG = 3). emit_gemm routes by it.
  enum class ConvUnits : uint8_t { kNone, kPointwise, kStridedPointwise, kChannelRuns, kGathered };
  ConvUnits conv_units = ConvUnits::kNone;
  // `helpers` also define float16_t gemm_a_h(b, m, k): A's element as its
  // fp16 buffer stores it, which the scalar kernel's fp16 staging reads
  // instead of converting gemm_a's float back (a padded convolution's read,
  // whose conversion the padding branch keeps apart; gemm_tile.comp).
  bool gemm_a_h = false;
  // gemm_store4's index is contiguous in m: an image-major [images,
  // channels, pixels] buffer, where one channel's output pixels are
  // adjacent (a convolution's NCHW output). The kernels then give
  // neighbouring invocations neighbouring m when they store — with n
  // neighbouring, a warp's 32 stores land in 32 memory sectors, each for
  // 2 or 4 bytes — and split-K partials go to GP transposed,
  // [split][batch][N][M], so that the reduce pass reads them in that order
  // too (emit_nchw_gemm and lower_conv set it for buffer outputs).
  bool store_m_major = false;
  // `helpers` define GEMM_ROW_PROLOGUE and
  //   void gemm_row_prologue(int b, int m0, int tid);
  // which every invocation of a tiled kernel (scalar or tensor-core) runs
  // for its tile of rows m0 .. m0 + GEMM_TILE_ROWS - 1 before the K loop,
  // a barrier following, so that gemm_a can read what it computed (a
  // LayerNormalization's row statistics: fusion_norm_gemm.h). Every kernel
  // of the problem gets the macros GEMM_TILE_ROWS (its tile's rows) and
  // GEMM_THREADS (its invocations, at least GEMM_TILE_ROWS), 1 and 1 in a
  // split-K reduce pass, which runs no prologue. The prologue's shared
  // memory stays within row_prologue_bytes; emit_gemm picks no GEMV for it.
  bool row_prologue = false;
  // The node's kiln.kernel hint (plan_hints.h); emit_gemm fills it in. A
  // tile or split_k hint selects the scalar tiled kernel with that tile and
  // split (GEMV for M <= 4 is kept: it has no tiles).
  KernelHint hint;
};

// The most shared memory a row prologue (GemmProblem::row_prologue) takes
// in a kernel of `rows` tile rows and `threads` invocations: 8 bytes each.
constexpr int64_t row_prologue_bytes(int64_t rows, int64_t threads) { return 8 * (rows + threads); }
// "#define GEMM_TILE_ROWS <rows>" and "#define GEMM_THREADS <threads>" lines
// where `p` has a row prologue, else nothing.
std::string row_prologue_macros(const GemmProblem& p, int64_t rows, int64_t threads);

// Whether gemm_a (gemm_b) of `p` reads its tensor `name` (p.a_tensor /
// p.b_tensor; empty: unknown, and then not) from an fp16 buffer.
bool half_buffer_operand(const GemmProblem& p, const std::string& name);
// What every GEMM kernel variant shares: `p`'s tensors, params, helpers and
// FLOPs plus GEMM_BATCH/M/N/K, as a kCustom kernel named `name` (the
// variant adds body, local size and groups).
KernelDesc gemm_kernel_base(const GemmProblem& p, std::string name);

// The number of K slices for a GEMM grid of `tiles` workgroups (0: not
// constant) over `k` on a device of `compute_units` (0: unknown): 1 (no
// split) for grids that fill the device or a symbolic K, else enough
// slices for about two workgroups per busy unit, each slice at least 64
// deep, at most 16 (the measurements are in gemm_kernels.cc).
int64_t choose_split(int64_t tiles, const ir::Dim& k, int64_t compute_units);
// The workgroups that keep a device of `compute_units` (0: unknown) busy:
// 128, or its compute units where fewer. choose_split splits only grids
// below it.
int64_t busy_tiles(int64_t compute_units);

// The second pass of a split-K GEMM whose first pass is `tile_pass` (its
// last tensor the GP scratch of `slices` partial tiles, which this pass
// reads): adds the slices and stores through gemm_store4. Float partials,
// or with "#define REDUCE_INT" in p.helpers int32 ones passed through the
// helpers' ivec4 gemm_acc_finish(b, m, n, acc) (shaders/gemm_splitk_reduce.comp).
KernelDesc splitk_reduce_kernel(const GemmProblem& p, const KernelDesc& tile_pass, int64_t slices,
                                const TargetInfo& target);

// Emits the kernels for `p`: make_gemm_kernel's, or — when a tiled GEMM
// with constant sizes would have few workgroups for a deep K, or a split_k
// hint asks — a split-K kernel whose grid also enumerates K slices, each
// writing its partial tile to a float scratch buffer named "GP". The
// slices are then added up in slice order and stored through gemm_store4
// (so the op's epilogue applies once), either
//  - fused (`<name>_splitk_fixup_tileMxN`, one dispatch) where the grid has
//    a constant size (at most 65536 tiles): each workgroup counts its
//    arrival in a per-tile int counter "GC" (a PlanTensor::Origin::kState
//    buffer, zero between dispatches); the last to arrive at its tile sums
//    the slices and resets the counter; or
//  - separate (`<name>_splitk_tileMxN` then `<name>_splitk_reduce`), for
//    symbolic grids.
// The kiln.kernel hint `splitk_reduce=separate|fused` picks one (fused
// stays a request). Both give the same bits. ctx.unsupported when a
// constant grid dimension exceeds the device's workgroup-count limit (the
// node then runs on the host).
Status emit_gemm(LoweringContext& ctx, const GemmProblem& p);

// What a GEMM kernel of a lowering writes for the node's output 0: the
// output itself ("Y"), or, when the output is an image whose packed axis is
// not the GEMM's N axis (`image_store4_ok` false: the kernel could not store
// four consecutive texel lanes), a row-major scratch buffer "Y" of the same
// shape that finish_gemm_output() then copies into the output.
struct GemmOutput {
  KernelTensor y;
  TensorId output = kNoTensor;
  TensorId scratch = kNoTensor;
  bool is_buffer() const { return y.layout.storage == Storage::kBuffer; }
};
GemmOutput bind_gemm_output(LoweringContext& ctx, bool image_store4_ok);
// Emits the scratch -> output copy when bind_gemm_output made a scratch.
void finish_gemm_output(LoweringContext& ctx, const GemmOutput& out);

// Finishes and emits a GEMM whose output is ctx's output 0, an image-major
// [images, channels, H, W] tensor with batch = images, M = H * W output
// pixels and N = channels (a group-1 1x1 conv's shape: the fused
// depthwise-pointwise and conv-sum GEMMs): binds it as "Y" (through
// bind_gemm_output's scratch where it is an image not packed on channels),
// appends gemm_store4 to p.helpers, emits the kernels and the scratch copy.
Status emit_nchw_gemm(LoweringContext& ctx, GemmProblem& p);

// gemm_store4 definitions (GLSL) that pass every lane through the
// caller's `float gemm_epilogue(int b, int m, int n, float acc)` (bias,
// alpha/beta, ...; called only for n < GEMM_N):
//  - buffer output: one Y_st per lane at `index`, a GLSL int expression of
//    b, m and the lane's column `nj`;
//  - image output (packed along the GEMM's N axis): `setup` statements
//    (may declare locals from b, m, n) then Y_st4(`coords`, v).
std::string gemm_store4_buffer(const std::string& index);
std::string gemm_store4_image(const std::string& setup, const std::string& coords);

// For gemm_store4_image of a GEMM whose rows (b * GEMM_M + m) are Y's
// leading axes flattened and whose N is Y's last axis (lower_linalg.cc):
// statements declaring Y's coordinates c0 .. c<rank-2> of the row, and
// "c0, .., c<rank-2>, <column>".
std::string decompose_rows(size_t y_rank);
std::string row_coords(size_t y_rank, const std::string& column);

// The MatMul and Gemm lowerings of lower_linalg.cc with a constant B cut
// into column chunks of at most `max_constant_bytes` each, or of the
// device's storage-buffer range when that is smaller (register_linalg_lowerings
// passes no limit of its own); tests pass a few KiB to exercise the split
// with small weights on any device.
Status lower_matmul_limited(LoweringContext& ctx, uint64_t max_constant_bytes);
Status lower_gemm_limited(LoweringContext& ctx, uint64_t max_constant_bytes);

// A 1x1 Conv's weight [Co, Ci, 1, 1] as the GEMM's B, [Ci][Co] row-major
// (lower_conv.cc; the fused DW/PW and scaled-conv GEMMs read it so).
StatusOr<Tensor> transpose_pointwise_weight(const Tensor& w);

// The gemm_epilogue (GLSL) of a group-1 1x1 conv's GEMM lowered in `ctx`:
// its bias (input 2, bound on `p` as "Bias") added per output channel n,
// or nothing where it has none (the fused DW/PW and scaled-conv GEMMs).
std::string pointwise_bias_epilogue(LoweringContext& ctx, GemmProblem& p);

// GLSL statements that return `scale` times tensor `x`'s element at image
// `img` (an expression), channel `c` and the GEMM's output pixel m, where x
// is a buffer of [images, channels, pixels...] with `spatial` pixel axes and
// GEMM_M pixels (a unit-stride pointwise convolution's A). One flat index
// into x's [channel][pixel] plane; or, where the fusion planner has made x
// a view (`x_IS_VIEW`: a channel shuffle's Reshape-Transpose-Reshape-Slice),
// coordinates — a view's x_ld decomposes its flat index with a division per
// axis on every call, while the pixel's coordinates depend on m alone and
// the GEMM kernels hoist them out of their K loop (lower_conv.cc).
std::string pointwise_plane_read(const std::string& x, const std::string& img, const std::string& c, size_t spatial,
                                 const std::string& scale = "");

// A depthwise Conv's weight [C, 1, k...] as [kk][C] (lower_conv.cc): one
// kernel tap's weights for consecutive channels are adjacent, so four
// channels load as one vec4.
StatusOr<Tensor> repack_depthwise_taps(const Tensor& w);

// Entry points of lower_conv.cc, registered by register_linalg_lowerings.
Status lower_conv(LoweringContext& ctx);
Status lower_conv_transpose(LoweringContext& ctx);

}  // namespace kiln::planner
