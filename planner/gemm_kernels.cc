// GEMM kernel generators (see gemm_kernels.h).
#include "planner/gemm_kernels.h"

#include <algorithm>
#include <string>

#include "planner/gemm_coopmat.h"
#include "planner/shader_template.h"

namespace kiln::planner {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

// Few rows: one invocation per output column and K slice; the K slices are
// summed in shared memory. Classifier heads and single-token projections
// (M = 1) would leave a 64-row tile almost empty, and a tile loops over all of
// K in one workgroup; here 8 workgroup rows share K and every invocation
// streams a column of B (contiguous across the workgroup for [K][N] weights).
std::string gemv_body(int64_t mr, int gv_x) {
  return fill_shader("gemm_gemv.comp", ShaderArgs().set("GV_MR", mr).set("GV_X", gv_x));
}

// GEMV columns per workgroup: 32 (a warp reads 64 or 128 contiguous bytes
// of a B row per step), or 16 or 8 when that leaves fewer than two
// workgroups per compute unit. A classifier head is all of a GEMV's work:
// on an H100 (132 SMs) resnet50's 2048 x 1000 fp16 head in 32 workgroups
// read its 4 MB at 122 GB/s (33.5 us).
int gemv_columns(const ir::Dim& n, const ir::Dim& batch, int64_t compute_units) {
  if (!n.is_const() || !batch.is_const() || compute_units <= 0) return 32;
  for (int x : {32, 16})
    if ((n.value() + x - 1) / x * batch.value() >= 2 * compute_units) return x;
  return 8;
}

// The shape of a tiled kernel: each workgroup computes a BM x BN tile of C
// with (BN/4) x (BM/TM) invocations (always 16 invocation rows), each
// holding a TM x 4 register block.
struct TileConfig {
  int bm = 64, bn = 64, tm = 4, bk = 16;
  bool latency_bound = false;  // chosen for a small grid (choose_tile)
};

// The tiled kernel. Invocation (tx, ty) owns columns n0 + 4*tx .. +3, so the
// B reads of a workgroup row are consecutive vec4s. Its rows interleave
// with the other invocation rows' so that a warp reads few distinct A
// addresses (shared-memory broadcasts): with TM >= 4 it owns TM/4 groups of
// four consecutive rows, m0 + 4*(ty + g*TY) .. +3, read as one vec4 each
// (per K step 1 + TM/4 vec4 loads feed 4*TM FMAs instead of 1 + TM loads),
// with TM < 4 (tiles of 16 and 32 rows) the single rows m0 + ty + i*TY.
// K advances BK at a time through shared tiles; out-of-range elements load
// as zero, so edges need no other masking than the final store. The next K
// step's global loads are issued into registers before the current step's
// FMAs, so their latency hides behind the arithmetic even when a GPU runs
// only a workgroup or two per core (a batch-1 network's convolutions).
//
// With `split_k` the grid's z axis also enumerates GEMM_SPLIT slices of K
// (GEMM_KCHUNK each) and the tile's partial sums go to the scratch buffer
// GP [split][batch][M][N]; reduce_body() then adds the slices and stores,
// or with `fixup` the last workgroup of each tile does (serial split-K: see
// emit_gemm); with `atomic` too, the workgroups atomicAdd their partial
// tiles into one sum instead (GA [batch][M][N]). Where the output is
// m-major (GemmProblem::store_m_major) neighbouring invocations own
// neighbouring rows instead and GP is [split][batch][N][M] (not with a
// fix-up, whose slices keep the row-major order).
//
// An operand read from an fp16 buffer is kept in fp16 registers between its
// global load and its shared-memory store (@A_T@, @B_T@): converted to
// float at once, the conversion waited for the load before the K step's
// multiplies, exposing the latency the prefetch exists to hide (gemm_tile.comp).
std::string tiled_body(const TileConfig& c, const GemmProblem& p, bool split_k, bool fixup = false,
                       bool atomic = false) {
  // NT is a multiple of BM and of BK, so every invocation loads the same
  // tile row (m-fastest: neighbouring invocations read neighbouring m) or
  // the same tile column (k-fastest) at every K step; after inlining, the
  // row's share of the index math (an output pixel's coordinates for a
  // convolution) is loop-invariant and hoisted.
  ShaderArgs args;
  // One operand's prefetch registers: @X_T@, @X_F@, @X_ZERO@, @X_LOAD@.
  const auto stage = [&](const char* x, bool half, const std::string& load) {
    const std::string X = x;
    args.set(X + "_T", half ? "float16_t" : "float")
        .set(X + "_F", half ? "float" : "")
        .set(X + "_ZERO", half ? "float16_t(0.0)" : "0.0")
        .set(X + "_LOAD", half ? "float16_t(" + load + ")" : load);
  };
  const bool a_half = half_buffer_operand(p, p.a_tensor);
  stage("A", a_half, "gemm_a(b, m, k)");
  if (a_half && p.gemm_a_h) args.set("A_LOAD", "gemm_a_h(b, m, k)");
  stage("B", half_buffer_operand(p, p.b_tensor), "gemm_b(b, k, n)");
  return fill_shader("gemm_tile.comp", args
                                           .set("BM", c.bm)
                                           .set("BN", c.bn)
                                           .set("TM", c.tm)
                                           .set("BK", c.bk)
                                           .flag("A_M_FASTEST", p.a_m_fastest)
                                           .flag("QUADS", c.tm >= 4)
                                           .flag("M_MAJOR", p.store_m_major && !fixup)
                                           .flag("SPLIT_K", split_k)
                                           .flag("FIXUP", fixup)
                                           .flag("ATOMIC", atomic));
}

// Split-K second pass: one invocation (or REDUCE_LANES of them) per four
// columns of one output row sums the GEMM_SPLIT partial tiles and stores
// through the op's epilogue.
std::string reduce_body() { return fill_shader("gemm_splitk_reduce.comp"); }

// Invocations that share one output's slices in the reduce pass: with 8 or
// more slices 4 lanes (2 with 4 or more) each add every 4th (2nd) slice and
// meet through subgroup shuffles, where the device has them. A batch-1
// pass has few outputs for the loads in flight it needs: on an H100 4 lanes
// took resnet50's 43 passes (up to 16 slices) from 1.037 to 1.015 GPU ms,
// mobilenet_v2 0.456 -> 0.451, the rest unchanged (bench/results/
// h100-2026-11-27-session15).
int64_t reduce_lanes(int64_t slices, const TargetInfo& target) {
  if (!target.subgroup_shuffle || target.subgroup_size < 4) return 1;
  return slices >= 8 ? 4 : slices >= 4 ? 2 : 1;
}

}  // namespace

// The reduce pass after `tile_pass`, a split-K kernel whose last tensor is
// the GP scratch it writes: the same tensors and parameters (the shared
// helpers need Y's store accessors although only this pass stores it), GP
// read, GEMM_SPLIT slices, reduce_lanes invocations per four outputs;
// REDUCE_M_MAJOR where the tile pass wrote GP transposed (store_m_major).
KernelDesc splitk_reduce_kernel(const GemmProblem& p, const KernelDesc& tile_pass, int64_t slices,
                                const TargetInfo& target) {
  KernelDesc r = gemm_kernel_base(p, p.name + "_splitk_reduce");
  r.tensors = tile_pass.tensors;
  r.tensors.back().written = false;
  r.params = tile_pass.params;
  r.params.push_back({"GEMM_SPLIT", ir::Dim(slices)});
  r.body = reduce_body();
  const int64_t lanes = reduce_lanes(slices, target);
  if (p.store_m_major) r.helpers = "#define REDUCE_M_MAJOR 1\n" + r.helpers;
  if (lanes > 1) {
    r.helpers = "#define REDUCE_LANES " + std::to_string(lanes) + "\n" + r.helpers;
    r.extensions.push_back("GL_KHR_shader_subgroup_basic");
    r.extensions.push_back("GL_KHR_shader_subgroup_shuffle");
  }
  r.local_size = {static_cast<uint32_t>(lanes > 1 ? 128 : 64), 1, 1};
  r.helpers = row_prologue_macros(p, 1, 1) + r.helpers;
  r.groups = {ir::Dim::ceil_div(p.batch * p.m * ir::Dim::ceil_div(p.n, ir::Dim(4)) * ir::Dim(lanes),
                                ir::Dim(static_cast<int64_t>(r.local_size[0]))),
              ir::Dim(1), ir::Dim(1)};
  r.flops = ir::Dim(0);
  return r;
}

namespace {

// Workgroups that keep a GPU busy: on the order of a hundred cores, a
// workgroup or two each.
constexpr int64_t kBusyTiles = 128;

// At most this many output tiles (batch x grid) get a split-K fix-up: its
// counters are model state, 4 bytes a tile, held for the model's life.
// choose_split splits only grids under kBusyTiles; a split_k hint on a
// huge grid takes the two-pass route instead.
constexpr int64_t kMaxFixupTiles = 1 << 16;

// The most FLOPs (2 M N K) of a 1x1 convolution that emit_gemm keeps off
// the tensor cores in fp16 whatever its grid (see emit_gemm).
constexpr int64_t kSmallPointwiseFlops = 32'000'000;

}  // namespace

// The number of K slices for a tiled GEMM of `tiles` workgroups (0 when
// not constant): enough slices for ~256 workgroups, each slice at least 64
// deep, at most 16. At batch 1 a late-network convolution (7x7 pixels, 512
// channels, K = 4608) would otherwise run as 8 workgroups each walking all
// of K. Measured on an H100 (fp16, bench/results/h100-2026-11-27-session15,
// GPU ms): splitting less loses far more than the reduce passes cost —
// slices at least 512 deep took resnet50 from 1.059 to 1.512 ms with 21
// fewer dispatches, mobilenet_v2 0.486 -> 0.789 — and 64 rather than 128
// gained resnet50 1.059 -> 1.037, mobilenet_v2 0.486 -> 0.456,
// efficientnet_b0 0.740 -> 0.707 (4-8 more reduce passes), the
// transformers unchanged; aiming at ~512 workgroups instead of ~256 did not
// pay (vit_b_16 1.156 -> 1.192).
//
// "Busy" is kBusyTiles or the device's compute units where fewer: a device
// of few cores (lavapipe's CPU threads, a small mobile GPU) is filled by a
// few workgroups, and splitting for hundreds only adds reduce passes. On
// lavapipe (2 threads) that took mobilenet_v2 from 58 to 39 dispatches,
// resnet18 42 -> 24, efficientnet_b0 135 -> 116, and each 2-7 % faster
// (kiln bench, two alternating rounds, session 17); an H100 or H200 (132
// units) is unchanged.
int64_t busy_tiles(int64_t compute_units) {
  return compute_units > 0 ? std::min(kBusyTiles, compute_units) : kBusyTiles;
}

int64_t choose_split(int64_t tiles, const ir::Dim& k, int64_t compute_units) {
  const int64_t busy = busy_tiles(compute_units);
  if (tiles <= 0 || tiles >= busy || !k.is_const()) return 1;
  const int64_t by_grid = (2 * busy + tiles - 1) / tiles;
  const int64_t by_depth = k.value() / 64;
  return std::clamp<int64_t>(std::min(by_grid, by_depth), 1, 16);
}

namespace {

// Tile rows or columns for a constant size (16, 32 or 64).
int pick_tile(const ir::Dim& v) {
  if (v.is_const() && v.value() <= 16) return 16;
  if (v.is_const() && v.value() <= 32) return 32;
  return 64;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The tile for `p`. Tile rows and columns shrink for small constant M or N
// so that few invocations idle on the padding; symbolic sizes take 64.
// Large constant GEMMs (many output pixels, as in a convolution at high
// resolution or batch) take 128 x 64 tiles with an 8 x 4 block per
// invocation: half the shared-memory reads per FMA of the 64 x 64 tile and
// twice the arithmetic per global load. Only while the bigger tiles still
// number kBusyTiles, though: at batch 1 (a 56x56 ResNet stage is M = 3136,
// N = 64..256, i.e. 25..100 such tiles) twice as many 64 x 64 tiles spread
// the same work over more of the GPU's cores.
TileConfig choose_rows_and_columns(const GemmProblem& p) {
  if (p.hint.tile_m) return {*p.hint.tile_m, *p.hint.tile_n, *p.hint.tile_m == 128 ? 8 : *p.hint.tile_m / 16};
  if (p.m.is_const() && p.n.is_const() && p.batch.is_const() && p.m.value() >= 1024 && p.n.value() > 32 &&
      ceil_div(p.m.value(), 128) * ceil_div(p.n.value(), 64) * p.batch.value() >= kBusyTiles)
    return {128, 64, 8};
  const int bm = pick_tile(p.m), bn = pick_tile(p.n);
  return {bm, bn, bm / 16};  // 16 invocation rows
}

// The shared memory of a tiled kernel's A and B tiles (gemm_tile.comp).
int64_t tile_shared_bytes(const TileConfig& c) {
  const int64_t a_row = c.tm >= 4 ? (c.bm / 4 + 1) * 16 : (c.bm + 1) * 4;
  return c.bk * (a_row + c.bn * 4);
}

// A unit-stride 1x1 convolution of little work (at most kSmallGemmFlops) whose tiles
// would leave a large GPU mostly idle is bound by latency, not arithmetic:
// its few workgroups each walk K one shared-memory step after another, a
// global load's latency per step, and split-K adds a reduce dispatch (~3-5
// us on an H200) to fill the GPU. Such a convolution takes tiles halved
// (down to 32 x 32) until the grid keeps the GPU busy, and K steps as deep
// as K asks (16, 32 or 64) — where that leaves at most kMaxUnsplitSteps
// steps, so that it needs no split; otherwise it keeps its tiles and split.
// Measured on an H200, node by node, against the plain tiles
// (bench/results/h200-2026-11-29-session27): mobilenet_v2's 14x14
// expansions (M = 196, K = 64, 9.6 MFLOP) 6.8 -> 4.7 us, shufflenet_v2's
// 14x14 convolutions 9.2 -> 5.8 us and its channel-shuffle view
// convolutions 14.0 -> 10.0 us, squeezenet1_1's squeeze and expand 1x1s
// 0.5-3.2 us each, densenet121's unsplit 1x1s 2-3 us each; the same small
// tiles lost where they still needed a split (densenet121's 1x1s over K =
// 512-1000, 0.6-1.7 us each) and on the other shapes: 3x3 and grouped
// convolutions (squeezenet1_1's expand 3x3s +1.3-6.4 us, regnet_y_800mf's
// grouped 3x3s +4-13 us), the fused conv-sums, swin_t's 4x4 patchify stem
// (13.7 -> 35.3 us), resnet18's strided 1x1 downsampling convolutions
// (+2.3 and +6.6 us in fp32 at 14x14 and 7x7). A device of few compute units
// (lavapipe) is busy with any grid, and an unknown one keeps the plain tiles.
constexpr int64_t kSmallGemmFlops = 64'000'000;
constexpr int64_t kMaxUnsplitSteps = 4;

bool latency_bound(const GemmProblem& p, const TileConfig& c, const TargetInfo& target) {
  if (!target.gemm_sweep.latency_tiles || target.compute_units == 0 || p.hint.tile_m || p.hint.split_k ||
      p.conv_units != GemmProblem::ConvUnits::kPointwise || !p.m.is_const() || !p.n.is_const() ||
      !p.k.is_const() || !p.batch.is_const())
    return false;
  const int64_t flops = 2 * p.m.value() * p.n.value() * p.k.value() * p.batch.value();
  const int64_t tiles = ceil_div(p.m.value(), c.bm) * ceil_div(p.n.value(), c.bn) * p.batch.value();
  return flops <= kSmallGemmFlops && tiles < busy_tiles(target.compute_units);
}

// Whether the tiles `c` and `p`'s row prologue (if any) fit the target's
// shared memory.
bool fits_shared_memory(const GemmProblem& p, const TileConfig& c, const TargetInfo& target) {
  const int64_t prologue = p.row_prologue ? row_prologue_bytes(c.bm, (c.bn / 4) * (c.bm / c.tm)) : 0;
  return tile_shared_bytes(c) + prologue <= target.max_shared_memory;
}

TileConfig choose_tile(const GemmProblem& p, const TargetInfo& target) {
  TileConfig c = choose_rows_and_columns(p);
  if (latency_bound(p, c, target)) {
    const int64_t busy = busy_tiles(target.compute_units);
    const auto tiles = [&](const TileConfig& t) {
      return ceil_div(p.m.value(), t.bm) * ceil_div(p.n.value(), t.bn) * p.batch.value();
    };
    TileConfig small = c;
    // Halve the longer side (rows where even) until the grid is busy.
    while (tiles(small) < busy && (small.bm > 32 || small.bn > 32)) {
      if (small.bn <= 32 || (small.bm >= small.bn && small.bm > 32))
        small.bm /= 2;
      else
        small.bn /= 2;
      small.tm = small.bm / 16;
    }
    const int64_t k = p.k.value();
    small.bk = k <= 16 ? 16 : k <= 32 ? 32 : 64;
    small.latency_bound = true;
    if (ceil_div(k, small.bk) <= kMaxUnsplitSteps && fits_shared_memory(p, small, target)) c = small;
  }
  if (target.gemm_sweep.tile_k != 0) {
    TileConfig forced = c;
    forced.bk = target.gemm_sweep.tile_k;
    if (fits_shared_memory(p, forced, target)) c = forced;
  }
  return c;
}

std::string tile_name(const TileConfig& c) {
  return "tile" + str(c.bm) + "x" + str(c.bn) + (c.bk == 16 ? "" : "k" + str(c.bk));
}

// Few rows take the GEMV kernel (see gemv_body).
bool use_gemv(const GemmProblem& p) { return p.m.is_const() && p.m.value() <= 4 && !p.row_prologue; }

// At most the sweep's slices, where it sets a limit.
int64_t limit_split(int64_t split, const TargetInfo& target) {
  return target.gemm_sweep.max_split > 0 ? std::min<int64_t>(split, target.gemm_sweep.max_split) : split;
}

// The split-K slices of the scalar kernel for `p` on tiles `c` (`tiles` of
// them, 0 when not constant): a split_k hint's (where K is constant to
// cut), else choose_split's — never for choose_tile's latency-bound tiles —
// at most the sweep's limit.
int64_t choose_scalar_split(const GemmProblem& p, const TileConfig& c, int64_t tiles, const TargetInfo& target) {
  if (use_gemv(p)) return 1;
  if (p.hint.split_k && p.k.is_const()) return std::min<int64_t>(*p.hint.split_k, p.k.value());
  const int64_t split = c.latency_bound ? 1 : choose_split(tiles, p.k, target.compute_units);
  return limit_split(split, target);
}


// A kMap kernel copying `src` (a row-major buffer of dst's shape) into
// `dst`: the second half of bind_gemm_output's scratch route.
KernelDesc make_copy_kernel(std::string name, KernelTensor src, KernelTensor dst) {
  KernelDesc d;
  d.name = std::move(name);
  d.family = KernelDesc::Family::kMap;
  d.body = "v = " + src.name + "_ld(oi);";
  dst.written = true;
  src.written = false;
  d.tensors = {std::move(src), std::move(dst)};
  return d;
}

}  // namespace


KernelDesc gemm_kernel_base(const GemmProblem& p, std::string name) {
  KernelDesc d;
  d.name = std::move(name);
  d.family = KernelDesc::Family::kCustom;
  d.tensors = p.tensors;
  d.params = p.params;
  d.params.push_back({"GEMM_BATCH", p.batch});
  d.params.push_back({"GEMM_M", p.m});
  d.params.push_back({"GEMM_N", p.n});
  d.params.push_back({"GEMM_K", p.k});
  d.helpers = p.helpers;
  d.flops = ir::Dim(2) * p.batch * p.m * p.n * p.k;
  return d;
}

std::string row_prologue_macros(const GemmProblem& p, int64_t rows, int64_t threads) {
  if (!p.row_prologue) return std::string();
  return "#define GEMM_TILE_ROWS " + std::to_string(rows) + "\n#define GEMM_THREADS " + std::to_string(threads) + "\n";
}

bool half_buffer_operand(const GemmProblem& p, const std::string& name) {
  if (name.empty()) return false;
  for (const KernelTensor& t : p.tensors)
    if (t.name == name) return t.layout.type == ElemType::kF16 && t.layout.storage == Storage::kBuffer;
  return false;
}

namespace {

// The scalar kernel for `p` (kCustom) on tiles `c` (choose_tile's). Variant by constant sizes: M <= 4 a GEMV
// (threads along N, K split across the workgroup and reduced in shared
// memory), otherwise a tiled kernel with BM in {16, 32, 64} rows and BN in
// {16, 32, 64} columns (BM = 128, BN = 64 for large constant M and N when
// such tiles still fill the GPU), BK = 16 — or, for a latency-bound 1x1
// convolution on a GPU of many compute units, tiles down to 32 x 32 and BK
// up to 64 (choose_tile in the .cc) — A and B tiles staged in shared memory
// (the next K step's prefetched into registers meanwhile) and each
// invocation holding a TM x 4 register block, TM = BM / 16. The target's
// compute units (0: unknown) narrow the GEMV's column tiles for large GPUs
// (gemv_columns in the .cc) and bound the latency-bound tiles; its
// gemm_sweep forces choices for sweeps.
KernelDesc make_gemm_kernel(const GemmProblem& p, const TargetInfo& target, const TileConfig& c) {
  const int64_t compute_units = target.compute_units;
  KernelDesc d = gemm_kernel_base(p, p.name);

  if (use_gemv(p)) {
    const int64_t mr = std::max<int64_t>(1, p.m.value());
    const int gv_x = p.hint.gemv_columns.value_or(gemv_columns(p.n, p.batch, compute_units));
    d.name += "_gemv";
    d.body = gemv_body(mr, gv_x);
    d.local_size = {static_cast<uint32_t>(gv_x), static_cast<uint32_t>(256 / gv_x), 1};
    d.groups = {ir::Dim::ceil_div(p.n, ir::Dim(gv_x)), ir::Dim::ceil_div(p.m, ir::Dim(mr)), p.batch};
    return d;
  }
  d.name += "_" + tile_name(c);
  d.body = tiled_body(c, p, false);
  d.local_size = {static_cast<uint32_t>(c.bn / 4), static_cast<uint32_t>(c.bm / c.tm), 1};
  d.helpers = row_prologue_macros(p, c.bm, int64_t{d.local_size[0]} * d.local_size[1]) + d.helpers;
  d.groups = {ir::Dim::ceil_div(p.n, ir::Dim(c.bn)), ir::Dim::ceil_div(p.m, ir::Dim(c.bm)), p.batch};
  return d;
}

// How the fp16 plan's GEMM `p` may use the cooperative-matrix kernel, by
// the float tensors it reads in fp32 (weights the precision policy keeps):
// none, or only B and the epilogue's (bias) with an fp16 A — the kernel
// then multiplies by B's fp16 halves (b_split) — or not at all: rounding an
// fp32 A to fp16 in shared memory would undo the policy, so such a GEMM
// takes the scalar kernel, which computes in fp32.
enum class CoopMatUse { kPlain, kSplitB, kNo };
CoopMatUse coopmat_use(const GemmProblem& p) {
  bool f32_a = false, f32_b = false, f32_other = false;
  for (const KernelTensor& t : p.tensors) {
    if (t.written || t.layout.type != ElemType::kF32) continue;
    if (t.name == p.a_tensor) f32_a = true;
    else if (t.name == p.b_tensor) f32_b = true;
    else f32_other = true;
  }
  if (!f32_a && !f32_b && !f32_other) return CoopMatUse::kPlain;
  if (p.a_tensor.empty() || p.b_tensor.empty() || f32_a) return CoopMatUse::kNo;
  return f32_b ? CoopMatUse::kSplitB : CoopMatUse::kPlain;
}

// Fails when one dimension of `d`'s grid exceeds what the device dispatches.
Status check_grid(LoweringContext& ctx, const KernelDesc& d) {
  const int64_t max_groups = ctx.target().max_workgroup_count_x;
  for (const ir::Dim& g : d.groups)
    if (g.is_const() && g.value() > max_groups)
      return ctx.unsupported("GEMM grid of " + std::to_string(g.value()) + " workgroups exceeds the device's " +
                             std::to_string(max_groups));
  return ok_status();
}

// The tensor-core kernel `d` (configuration `c`) for `p`, whole or with K
// split into `split` slices.
Status emit_coopmat_gemm(LoweringContext& ctx, const GemmProblem& p, const CoopMatConfig& c, KernelDesc d,
                         int64_t split) {
  if (split <= 1) {
    KILN_RETURN_IF_ERROR(check_grid(ctx, d));
    ctx.emit(std::move(d));
    return ok_status();
  }
  const ir::Dim cm_tiles = d.groups[0] * d.groups[1] * d.groups[2];
  // (choose_split splits only constant grids over a constant K.)
  const int64_t chunk = ((p.k.value() + split - 1) / split + c.bk - 1) / c.bk * c.bk;
  const int64_t slices = (p.k.value() + chunk - 1) / chunk;
  const TensorId scratch = ctx.add_temporary(DType::kFloat32, {ir::Dim(slices) * p.batch * p.m * p.n},
                                             {Storage::kBuffer, ElemType::kF32});
  // Only on request (kiln.kernel splitk_reduce=fused). On an H100 it
  // is right (the device tests and the zoo, session 13; an earlier
  // build gave NaNs) but slower: every default split as a fix-up took
  // resnet50 1.07 -> 1.74 GPU ms, vit_b_16 1.25 -> 1.34, convnext_tiny
  // 0.84 -> 0.98 with 43, 25 and 21 fewer dispatches
  // (bench/results/h100-2026-11-26-session13): the last workgroup of a
  // tile adds up to 16 slices alone while the rest of the GPU idles.
  if (p.hint.splitk_reduce == SplitKReduce::kFused && slices > 1 && cm_tiles.value() <= kMaxFixupTiles) {
    KernelDesc f = make_coopmat_gemm_kernel(p, c, CoopMatSplitK::kFixup);
    f.name += "_splitk_fixup";
    const TensorId counters = ctx.add_state(DType::kInt32, {cm_tiles.value()}, ElemType::kI32);
    f.params.push_back({"GEMM_KCHUNK", ir::Dim(chunk)});
    f.params.push_back({"GEMM_SPLIT", ir::Dim(slices)});
    f.tensors.push_back(ctx.bind("GP", scratch, true));
    f.tensors.back().coherent = true;
    f.tensors.push_back(ctx.bind("GC", counters, true));
    f.groups[2] = p.batch * ir::Dim(slices);
    KILN_RETURN_IF_ERROR(check_grid(ctx, f));
    ctx.emit(std::move(f));
    return ok_status();
  }
  KernelDesc part = make_coopmat_gemm_kernel(p, c, CoopMatSplitK::kPartials);
  part.name = p.name + "_splitk" + d.name.substr(p.name.size());
  part.params.push_back({"GEMM_KCHUNK", ir::Dim(chunk)});
  part.tensors.push_back(ctx.bind("GP", scratch, true));
  part.groups[2] = p.batch * ir::Dim(slices);
  KILN_RETURN_IF_ERROR(check_grid(ctx, part));
  KernelDesc r = splitk_reduce_kernel(p, part, slices, ctx.target());
  ctx.emit(std::move(part));
  ctx.emit(std::move(r));
  return ok_status();
}

// The scalar tiled kernel (or GEMV) for `p`, K split as its grid and hint ask.
Status emit_scalar_gemm(LoweringContext& ctx, const GemmProblem& problem) {
  // The scalar kernel stores m-major only where its A loads run along m
  // too (a convolution's): a MatMul stored through a view to NCHW
  // (ConvNeXt's fc2, fp32 on an H200) lost in its split tile pass what
  // the reduce pass gained (+15 / -11 us over 17 GEMMs; bench/results/
  // h200-2026-11-29-session26 call 5). The tensor-core kernel keeps it.
  GemmProblem p = problem;
  p.store_m_major = p.store_m_major && p.a_m_fastest;
  const TileConfig c = choose_tile(p, ctx.target());
  KernelDesc d = make_gemm_kernel(p, ctx.target(), c);
  KILN_RETURN_IF_ERROR(check_grid(ctx, d));
  const ir::Dim tiles = d.groups[0] * d.groups[1] * d.groups[2];
  const int64_t split = choose_scalar_split(p, c, tiles.is_const() ? tiles.value() : 0, ctx.target());
  if (split <= 1) {
    ctx.emit(std::move(d));
    return ok_status();
  }
  // K slices of a multiple of BK, recounted so that none is empty.
  const int64_t chunk = ((p.k.value() + split - 1) / split + c.bk - 1) / c.bk * c.bk;
  const int64_t slices = (p.k.value() + chunk - 1) / chunk;
  d.params.push_back({"GEMM_KCHUNK", ir::Dim(chunk)});
  d.groups[2] = p.batch * ir::Dim(slices);
  // Split-K without a second dispatch (stream-K's fix-up): the last
  // workgroup to finish a tile stores it, saving the reduce pass and its
  // barrier (~2.4 us each on an H100; 43 of resnet50's 164 dispatches at
  // batch 1). It needs memory that outlives the run (an arrival counter per
  // tile and, for the atomic one, the running sums), so constant sizes.
  const ir::Dim tiles_2d = d.groups[0] * d.groups[1] * p.batch;
  const bool constant_tiles = tiles_2d.is_const() && tiles_2d.value() <= kMaxFixupTiles;
  const bool constant_output = p.batch.is_const() && p.m.is_const() && p.n.is_const();
  // Two ways to add the slices in the tile kernel itself, each only on
  // request (kiln.kernel splitk_reduce): "atomic", where the device adds
  // floats atomically in buffers, every workgroup adds its partial tile
  // into one sum and the last only reads it back; "fused", the last
  // workgroup adds all slices itself (deterministic). Both save the reduce
  // dispatch and lose more than it costs on an H200 (bench/results/
  // h200-2026-11-26-splitk): with the atomic fix-up resnet50 took 1.33 GPU
  // ms against 1.18 with the reduce pass, mobilenet_v2 0.53 against 0.48,
  // convnext_tiny 1.48 against 1.34 (the atomics of up to 16 slices meet
  // at the same addresses); the slice-summing one made resnet50's
  // convolutions 1.98 ms against 1.3 on an H100 (the few tiles of a batch-1
  // late layer each summed on one core). So the reduce pass is the default.
  const SplitKReduce reduce = p.hint.splitk_reduce.value_or(SplitKReduce::kSeparate);
  if (reduce == SplitKReduce::kAtomic && constant_tiles && constant_output && ctx.target().float32_atomic_add) {
    const TensorId sums = ctx.add_state(DType::kFloat32, {p.batch.value() * p.m.value() * p.n.value()},
                                        ElemType::kF32);
    const TensorId counters = ctx.add_state(DType::kInt32, {tiles_2d.value()}, ElemType::kI32);
    d.name = p.name + "_splitk_atomic_" + tile_name(c);
    d.body = tiled_body(c, p, true, true, true);
    d.params.push_back({"GEMM_SPLIT", ir::Dim(slices)});
    d.extensions.push_back("GL_EXT_shader_atomic_float");
    d.tensors.push_back(ctx.bind("GA", sums, true));
    d.tensors.back().coherent = true;
    d.tensors.push_back(ctx.bind("GC", counters, true));
    ctx.emit(std::move(d));
    return ok_status();
  }
  const TensorId scratch = ctx.add_temporary(DType::kFloat32, {ir::Dim(slices) * p.batch * p.m * p.n},
                                             {Storage::kBuffer, ElemType::kF32});
  d.name = p.name + "_splitk_" + tile_name(c);
  d.body = tiled_body(c, p, true);
  // Y stays bound as written in the tile pass although only the reduction
  // stores it: the shared helpers (gemm_store4) need its store accessors.
  d.tensors.push_back(ctx.bind("GP", scratch, true));
  if (reduce == SplitKReduce::kFused && constant_tiles) {
    const TensorId counters = ctx.add_state(DType::kInt32, {tiles_2d.value()}, ElemType::kI32);
    d.name = p.name + "_splitk_fixup_" + tile_name(c);
    d.body = tiled_body(c, p, true, true);
    d.params.push_back({"GEMM_SPLIT", ir::Dim(slices)});
    d.tensors.back().coherent = true;
    d.tensors.push_back(ctx.bind("GC", counters, true));
    ctx.emit(std::move(d));
    return ok_status();
  }
  KernelDesc r = splitk_reduce_kernel(p, d, slices, ctx.target());
  ctx.emit(std::move(d));
  ctx.emit(std::move(r));
  return ok_status();
}

}  // namespace

Status emit_gemm(LoweringContext& ctx, const GemmProblem& problem) {
  GemmProblem p = problem;
  KILN_ASSIGN_OR_RETURN(p.hint, kernel_hint(ctx.node()));
  // A row prologue gives each tile row at least one invocation: a tile
  // hint of (BN / 4) * TM < BM invocations cannot run one.
  if (p.row_prologue && p.hint.tile_m && p.hint.tile_n && *p.hint.tile_n < 4 * (*p.hint.tile_m == 128 ? 8 : *p.hint.tile_m / 16))
    return unimplemented("a kiln.kernel tile of fewer invocations than rows, with a row prologue");
  // fp16 on a device with cooperative matrices: the tensor-core kernel.
  // When its grid is so small for the depth of K that the GPU would idle
  // while a few workgroups walk all of K, it splits K: each slice's
  // workgroups write fp32 partial tiles that the scalar kernel's reduce pass
  // adds and stores (at batch 1 a transformer's 197 x 768 x 3072 projection
  // is 48 tiles; resnet50's 3x3 convs of layer3/layer4 4-8 tiles over K =
  // 2304-4608, which took 0.25-0.55 ms each unsplit on an H200) — or, with
  // splitk_reduce=fused, the last workgroup per tile adds them.
  const CoopMatUse use = coopmat_use(p);
  if (!use_gemv(p) && p.hint.coopmat.value_or(true) && !p.hint.tile_m && !p.hint.split_k && use != CoopMatUse::kNo)
    if (const std::optional<CoopMatConfig> c =
            choose_coopmat(p, ctx.target(), ctx.float_type(), use == CoopMatUse::kSplitB)) {
      KernelDesc d = make_coopmat_gemm_kernel(p, *c);
      const ir::Dim cm_tiles = d.groups[0] * d.groups[1] * d.groups[2];
      const int64_t split = limit_split(
          choose_split(cm_tiles.is_const() ? cm_tiles.value() : 0, p.k, ctx.target().compute_units), ctx.target());
      // 1x1 convolutions narrower than 128 output channels that would split
      // K run on the scalar split-K kernel instead: on an H100 (fp16 against
      // the fp32 plan's scalar kernel, node by node, bench/results/
      // h100-2026-11-27-session14) their tensor-core split took 1.2-1.56x
      // as long (mobilenet_v2's and efficientnet_b0's 14x14 and 28x28
      // projections, resnet50's layer-1 1x1 256 -> 64), the staging of a
      // 64x64 tile per 32-deep K step outweighing its math. Larger kernels
      // whose A units are channel runs keep the tensor cores: there the
      // scalar kernel in fp16 was the slow one (densenet121's 3x3 128 -> 32
      // convolutions 43 us against 32 in fp32), and moving them took
      // densenet121 from 2.88 to 2.00 fp16 GPU ms, regnet_y_800mf 0.99 ->
      // 0.76, resnext50_32x4d 1.17 -> 1.13, resnet50 0.98 -> 0.95 (H100,
      // two rounds, bench/results/h100-2026-11-28-session21).
      const bool narrow_split_conv = split > 1 && p.a_m_fastest && c->bn < 128 &&
                                     p.conv_units != GemmProblem::ConvUnits::kChannelRuns;
      // So do 1x1 convolutions of any width that would split K, and those
      // of at most 196 output pixels (a batch-1 network's 14x14 and 7x7
      // stages) whole, since the scalar kernel stages fp16 operands in fp16
      // registers: on an H200, node by node in two rounds
      // (bench/results/h200-2026-11-29-session24), the tensor-core split
      // took 1.1-1.3x the scalar kernel's time for efficientnet_b0's,
      // mnasnet1_0's and mobilenet_v2's 7x7 expansions and projections
      // (192-1280 channels), resnet50's 1x1 convolutions of its 56x56 and
      // 28x28 stages and 49 x 512 x 2048, and the whole 64x64 tensor-core
      // tiles 1.05-1.15x for the 14x14 ones (efficientnet_b0 196 x 480 x 80,
      // 196 x 672 x 112). Wide and deep ones keep the tensor cores
      // (resnet50's 49 x 2048 x 512 took 0.95x, 196 x 512 x 1024 0.8x).
      const bool pointwise = p.conv_units == GemmProblem::ConvUnits::kPointwise ||
                             p.conv_units == GemmProblem::ConvUnits::kStridedPointwise;
      const bool sizes = p.m.is_const() && p.n.is_const() && p.k.is_const() && p.batch.is_const();
      const bool wide_and_deep =
          sizes && (p.n.value() >= 2048 || (p.m.value() >= 128 && p.n.value() >= 512 && p.k.value() >= 1024));
      // And those of little work at any size (at most kSmallPointwiseFlops):
      // shufflenet_v2's and mobilenet_v3_large's 28x28 and 56x56 ones
      // (2-26 MFLOP, 58-240 channels) took 1.15-1.4x the scalar kernel's
      // time on whole 64x64 tensor-core tiles (H200, node by node,
      // bench/results/h200-2026-11-29-session25 call 5).
      const int64_t flops = sizes ? 2 * p.m.value() * p.n.value() * p.k.value() * p.batch.value() : 0;
      const bool small_pointwise =
          pointwise && sizes && !wide_and_deep &&
          (split > 1 || p.m.value() * p.batch.value() <= 196 || flops <= kSmallPointwiseFlops);
      // Gathered A units over more than one K step (an RGB stem's 7x7 or
      // 4x4 patchify convolution, K = 147 or 48) take the scalar kernel:
      // eight tap-and-pixel index computations per unit, and on an H100
      // resnet50's stem took 54.7 us on the tensor cores against 35.5 in
      // the scalar fp16 kernel, convnext_tiny's 18.7 against 16.4; the 3x3
      // RGB stems (K = 27, one step) stay (9.8 against 11.0).
      const bool gathered_stem = p.conv_units == GemmProblem::ConvUnits::kGathered && p.k.is_const() &&
                                 p.k.value() > c->bk;
      // A forced tile (TargetInfo::coopmat_tile, a sweep's) is timed as it is.
      if ((!narrow_split_conv && !small_pointwise && !gathered_stem) || ctx.target().coopmat_tile)
        return emit_coopmat_gemm(ctx, p, *c, std::move(d), split);
    }
  return emit_scalar_gemm(ctx, p);
}

GemmOutput bind_gemm_output(LoweringContext& ctx, bool image_store4_ok) {
  GemmOutput o;
  o.output = ctx.output(0);
  o.y = ctx.bind("Y", o.output, true);
  if (o.y.layout.storage == Storage::kImage && !image_store4_ok) {
    o.scratch = ctx.add_temporary(ctx.output_dtype(0), ctx.shape(o.output), {Storage::kBuffer, o.y.layout.type});
    o.y = ctx.bind("Y", o.scratch, true);
  }
  return o;
}

void finish_gemm_output(LoweringContext& ctx, const GemmOutput& out) {
  if (out.scratch == kNoTensor) return;
  ctx.emit(make_copy_kernel("gemm_copy_out", ctx.bind("S", out.scratch), ctx.bind("Y", out.output, true)));
}

Status emit_nchw_gemm(LoweringContext& ctx, GemmProblem& p) {
  // An image packed on channels takes four channels of one pixel per store.
  const GemmOutput out = bind_gemm_output(ctx, ctx.layout(ctx.output(0)).packed_axis == 1);
  p.tensors.push_back(out.y);
  if (out.is_buffer()) {
    p.store_m_major = true;
    p.helpers += gemm_store4_buffer("(b * Y_D1 + nj) * GEMM_M + m");
  } else {
    p.helpers += gemm_store4_image("  int o1 = m % Y_D3, o0 = m / Y_D3;\n", "b, n, o0, o1");
  }
  KILN_RETURN_IF_ERROR(emit_gemm(ctx, p));
  finish_gemm_output(ctx, out);
  return ok_status();
}

std::string gemm_store4_buffer(const std::string& index) {
  return fill_shader("gemm_store.glsl", ShaderArgs().flag("IMAGE", false).set("INDEX", index));
}

std::string gemm_store4_image(const std::string& setup, const std::string& coords) {
  return fill_shader("gemm_store.glsl", ShaderArgs().flag("IMAGE", true).set("SETUP", setup).set("COORDS", coords));
}

}  // namespace kiln::planner
