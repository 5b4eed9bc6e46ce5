// Cooperative-matrix GEMM kernel (see gemm_coopmat.h).
#include "planner/gemm_coopmat.h"

#include <algorithm>
#include <string>
#include <utility>

#include "planner/shader_template.h"

namespace kiln::planner {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

// Workgroups that keep a GPU busy (as in gemm_kernels.cc): 128 x 64 tiles
// only while they still number this many.
constexpr int64_t kBusyTiles = 128;

// The most rows a GEMM takes 32-row tiles for (choose_coopmat).
constexpr int64_t kRows32MaxM = 4096;

constexpr int kBK = 32;        // K per shared-memory step

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool too_small(const ir::Dim& d, int64_t min) { return d.is_const() && d.value() < min; }

// Shared memory bytes of the kernel: A tile, B tile, C staging — the last
// in the tiles' memory with fp32 accumulators (ALIAS_C in the shader).
int64_t shared_bytes(const CoopMatConfig& c) {
  const int64_t a = int64_t{c.bm} * (c.bk + 8) * 2 * c.stages;
  const int64_t b = int64_t{c.bk} * (c.bn + 8) * 2 * (c.b_split ? 2 : 1) * c.stages;
  const int64_t sc = int64_t{c.wm} * c.wn * c.shape.m * (c.bn / c.wn + 4) * (c.shape.f32_accumulator ? 4 : 2);
  return c.shape.f32_accumulator ? std::max(a + b, sc) : a + b + sc;
}

// The GLSL body (shaders/gemm_coopmat.comp describes its shared-memory
// layout). Every loop with a constant trip count is [[unroll]]: with rolled
// loops NVIDIA's compiler kept the fragment arrays out of registers and the
// kernel ran at half the speed (H200, 2048x4096x4096: 33 -> 66 TFLOP/s).
// NT is a multiple of BM, BN and BK (choose_coopmat), so an invocation loads
// the same tile row (or column) at every step and its share of the index
// math (an output pixel's coordinates for a convolution) is hoisted.
std::string coopmat_body(const CoopMatConfig& c, const GemmProblem& p, CoopMatSplitK split) {
  const bool f32 = c.shape.f32_accumulator;
  return fill_shader("gemm_coopmat.comp", ShaderArgs()
                                              .set("FM", c.shape.m)
                                              .set("FN", c.shape.n)
                                              .set("FK", c.shape.k)
                                              .set("BM", c.bm)
                                              .set("BN", c.bn)
                                              .set("BK", c.bk)
                                              .set("SG", c.subgroup_size)
                                              .set("WM", c.wm)
                                              .set("WN", c.wn)
                                              .set("ACC_BITS", f32 ? "32" : "16")
                                              .set("ACC_TYPE", f32 ? "float" : "float16_t")
                                              .set("ACC_ZERO", f32 ? "0.0" : "float16_t(0.0)")
                                              .flag("ALIAS_C", f32)
                                              .flag("A_M_FASTEST", p.a_m_fastest)
                                              .flag("M_MAJOR", p.store_m_major && split != CoopMatSplitK::kFixup)
                                              .flag("B_SPLIT", c.b_split)
                                              .flag("DOUBLE_BUFFER", c.stages == 2)
                                              .flag("SPLIT_K", split != CoopMatSplitK::kNone)
                                              .flag("FIXUP", split == CoopMatSplitK::kFixup));
}

}  // namespace

std::optional<CoopMatShape> pick_coopmat_shape(const TargetInfo& target) {
  if (target.coopmat == CoopMatFlavour::kNone) return std::nullopt;
  std::optional<CoopMatShape> best;
  for (const CoopMatShape& s : target.coopmat_f16_shapes) {
    const bool fits = s.m > 0 && 16 % s.m == 0 && s.n >= 8 && 16 % s.n == 0 && s.k >= 8 && kBK % s.k == 0;
    if (!fits) continue;
    const auto rank = [](const CoopMatShape& x) {
      return std::make_pair(x.f32_accumulator, uint64_t{x.m} * x.n * x.k);
    };
    if (!best || rank(s) > rank(*best)) best = s;
  }
  return best;
}

// Whether `c` makes a kernel the target can run and the body's index math
// holds for: whole fragments per subgroup, fragment columns at multiples of
// 8 halves (the tiles' 16-byte units), every invocation staging the same
// whole number of A and B units per K step (8 halves each: KQ = BK / 8 per
// A row, NQ = BN / 8 per B row), and the shared memory the target has.
bool valid_config(const CoopMatConfig& c, const TargetInfo& target) {
  const int64_t nt = int64_t{c.wm} * c.wn * c.subgroup_size;
  const int sm = c.bm / c.wm, sn = c.bn / c.wn;
  const int64_t kq = c.bk / 8, nq = c.bn / 8;
  return (c.bk == 32 || c.bk == 64) && (c.stages == 1 || c.stages == 2) && c.bk % c.shape.k == 0 &&
         nt <= target.max_workgroup_invocations && c.bm % c.wm == 0 && c.bn % c.wn == 0 && c.bn % 8 == 0 &&
         sm % static_cast<int>(c.shape.m) == 0 && sn % static_cast<int>(c.shape.n) == 0 && sn % 8 == 0 &&
         nt % c.bm == 0 && nt % kq == 0 && nt % nq == 0 && (c.bm * kq) % nt == 0 && (c.bk * nq) % nt == 0 &&
         (!c.b_split || (int64_t{c.shape.m} * (sn / 4)) % c.subgroup_size == 0) &&
         shared_bytes(c) <= target.max_shared_memory;
}

namespace {

// The planner's own tile for `p` (choose_coopmat without a forced tile).
std::optional<CoopMatConfig> planner_choice(const GemmProblem& p, const TargetInfo& target, ElemType precision,
                                            bool b_split) {
  if (precision != ElemType::kF16 || !target.fp16_storage || !target.fp16_arithmetic) return std::nullopt;
  const uint32_t sg = target.subgroup_size;
  if (sg < 4 || sg > 128 || (sg & (sg - 1)) != 0) return std::nullopt;
  const std::optional<CoopMatShape> shape = pick_coopmat_shape(target);
  if (!shape || (b_split && !shape->f32_accumulator)) return std::nullopt;
  if (too_small(p.m, 32) || too_small(p.n, 16)) return std::nullopt;
  CoopMatConfig c;
  c.shape = *shape;
  c.subgroup_size = sg;
  c.b_split = b_split;
  // Tiles as measured on an H200 (gemm_coopmat_test's throughput test).
  if (p.n.is_const() && p.n.value() <= 32) {
    c.bn = 32;
  } else if (p.a_m_fastest && (!p.n.is_const() || p.n.value() >= 128)) {
    // An implicit-GEMM convolution: each A element (im2col index math) is
    // computed once per column tile, so wide tiles pay off most.
    c.bn = 128;
    c.wn = 4;
    // Unless that leaves the GPU idle where 64-column tiles would not need
    // to split K: twice the workgroups, each done sooner, and no reduce
    // pass where 64 x 64 tiles fill the GPU (resnext50_32x4d's 56x56
    // stage, 256 channels over K = 256: 98 workgroups split in four, or
    // 196 whole) or K is too shallow to split (mobilenet_v2's expansions,
    // K = 16..96). With emit_gemm's stem rule, measured together on an
    // H100 (fp16 GPU ms, two rounds, bench/results/h100-2026-11-28-session21):
    // resnext50_32x4d 1.25 -> 1.17, mobilenet_v2 0.456 -> 0.442, mnasnet1_0
    // 0.462 -> 0.452, efficientnet_b0 0.715 -> 0.703, resnet50 0.993 ->
    // 0.975, the rest within 1 %.
    if (p.m.is_const() && p.n.is_const() && p.batch.is_const()) {
      const int64_t rows = ceil_div(p.m.value(), 64) * p.batch.value();
      if (rows * ceil_div(p.n.value(), 128) < busy_tiles(target.compute_units) &&
          choose_split(rows * ceil_div(p.n.value(), 64), p.k, target.compute_units) == 1) {
        c.bn = 64;
        c.wn = 2;
      }
    }
  } else if (p.m.is_const() && p.n.is_const() && p.batch.is_const() && p.m.value() >= 128 && p.n.value() >= 128 &&
             ceil_div(p.m.value(), 128) * ceil_div(p.n.value(), 128) * p.batch.value() >= kBusyTiles) {
    // Large GEMMs (at least one whole tile each, so a batch of small
    // products does not pad to 128 x 128): 128 x 128 tiles of 2 x 2
    // subgroups, each multiplying 4 x 4 fragments per K step (a fragment
    // load per two products, where 32 x 32 per subgroup took one per
    // product). Steady state on an H100
    // (fp16, 4096^3, bench/kernels/steady_models.py, session 20): 526 us
    // (261 TFLOP/s) against 768 for 128 x 64 tiles of 4 x 2 subgroups, 664
    // for 128 x 128 of 4 x 2 double-buffered, 1599 with 64 of K per step.
    c.bm = 128;
    c.bn = 128;
  } else if (p.m.is_const() && p.n.is_const() && p.batch.is_const() &&
             ceil_div(p.m.value(), 128) * ceil_div(p.n.value(), 64) * p.batch.value() >= kBusyTiles) {
    c.bm = 128;
    c.wm = 4;
  }
  // Transformer-sized GEMMs (up to kRows32MaxM rows, a batch-1 sequence or
  // window stack) take 32 x 64 tiles: twice the workgroups of 64 x 64 on
  // a GPU they leave idle, fewer rows of padding (M = 197: 224 rows
  // instead of 256), and fewer grids small enough to need split-K. On an
  // H100 (bench/results/h100-2026-11-26-session13) vit_b_16 fp16 went
  // 1.33 -> 1.24 ms, swin_t 1.00 -> 0.93, bert 0.92 -> 0.89; 64 x 64
  // beyond 4096 rows was not measured. Convolutions keep their wide tiles
  // (32-row ones were slower for resnet50's late layers).
  if (!p.a_m_fastest && c.bm == 64 && c.bn == 64 && p.m.is_const() && p.m.value() <= kRows32MaxM) {
    c.bm = 32;
    if (valid_config(c, target)) return c;
    c.bm = 64;
  }
  if (valid_config(c, target)) return c;
  c.bm = 64;
  c.bn = std::min(c.bn, 64);
  c.wm = c.wn = 2;
  if (valid_config(c, target)) return c;
  return std::nullopt;
}

}  // namespace

int default_coopmat_bk(const GemmProblem& p, const CoopMatConfig& c) { return p.a_m_fastest || c.bm > 64 ? 32 : 64; }

std::optional<CoopMatConfig> choose_coopmat(const GemmProblem& p, const TargetInfo& target, ElemType precision,
                                            bool b_split) {
  std::optional<CoopMatConfig> c = planner_choice(p, target, precision, b_split);
  if (c && default_coopmat_bk(p, *c) != c->bk) {
    CoopMatConfig deeper = *c;
    deeper.bk = default_coopmat_bk(p, *c);
    if (valid_config(deeper, target)) c = deeper;
  }
  // A row prologue's shared memory beside the tiles' (GemmProblem::row_prologue).
  const auto fits = [&](const CoopMatConfig& x) {
    return !p.row_prologue || shared_bytes(x) + row_prologue_bytes(x.bm, int64_t{x.wm} * x.wn * x.subgroup_size) <=
                                  target.max_shared_memory;
  };
  if (c && !fits(*c)) return std::nullopt;
  const std::optional<CoopMatTile>& t = target.coopmat_tile;
  if (!c || !t) return c;
  CoopMatConfig forced = *c;
  if (t->bm > 0) {  // else only the depth and buffering, on the planner's tile
    forced.bm = t->bm;
    forced.bn = t->bn;
    forced.wm = t->wm;
    forced.wn = t->wn;
  }
  forced.bk = t->bk;
  forced.stages = t->stages;
  return valid_config(forced, target) && fits(forced) ? forced : c;
}

KernelDesc make_coopmat_gemm_kernel(const GemmProblem& p, const CoopMatConfig& c, CoopMatSplitK split) {
  // Depth and buffering show in the name where they differ from the
  // defaults, so profiles of a sweep tell the variants apart.
  KernelDesc d = gemm_kernel_base(p, p.name + "_coopmat" + str(c.bm) + "x" + str(c.bn) +
                                         (c.bk != default_coopmat_bk(p, c) ? "k" + str(c.bk) : "") +
                                         (c.stages == 2 ? "db" : ""));
  d.extensions = {"GL_EXT_control_flow_attributes", "GL_EXT_shader_explicit_arithmetic_types_float16",
                  "GL_KHR_memory_scope_semantics",
                  "GL_KHR_shader_subgroup_basic", "GL_NV_cooperative_matrix"};
  d.helpers += p.vector_helpers;
  d.body = coopmat_body(c, p, split);
  d.local_size = {static_cast<uint32_t>(c.wm * c.wn) * c.subgroup_size, 1, 1};
  d.helpers = row_prologue_macros(p, c.bm, d.local_size[0]) + d.helpers;
  d.groups = {ir::Dim::ceil_div(p.n, ir::Dim(c.bn)), ir::Dim::ceil_div(p.m, ir::Dim(c.bm)), p.batch};
  return d;
}

std::string describe(const CoopMatConfig& c) {
  return str(c.shape.m) + "x" + str(c.shape.n) + "x" + str(c.shape.k) +
         (c.shape.f32_accumulator ? " f32acc" : " f16acc") + ", tile " + str(c.bm) + "x" + str(c.bn) + ", " +
         str(c.wm) + "x" + str(c.wn) + " subgroups of " + str(c.subgroup_size) + ", k" + str(c.bk) +
         (c.stages == 2 ? ", double-buffered" : "");
}

}  // namespace kiln::planner
