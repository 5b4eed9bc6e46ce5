// The tiled integer GEMM, scalar and on packed int8 dot products; see gemm_int.h.
#include "planner/gemm_int.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <string>

#include "planner/plan_hints.h"
#include "planner/shader_template.h"

namespace kiln::planner {
namespace {

struct IntTile {
  int64_t bm, bn, tm;
};

// 64 invocations, each a TM x 4 block: 32 x 32 tiles, or 16 x 32 for a few
// rows (a single-row MatMul would otherwise mask half the tile); 64 x 64
// tiles of 128 invocations, each 8 x 4, when M and N are both 64 or more
// (or symbolic): twice the work per invocation for each tile load (a 256 x
// 512 x 256 QLinearMatMul on lavapipe: wall median 56-77 ms instead of
// 88-96 ms).
IntTile choose_int_tile(const GemmProblem& p) {
  const bool few_rows = p.m.is_const() && p.m.value() <= 16;
  const bool large = (!p.m.is_const() || p.m.value() >= 64) && (!p.n.is_const() || p.n.value() >= 64);
  if (large) return {64, 64, 8};
  return few_rows ? IntTile{16, 32, 2} : IntTile{32, 32, 4};
}

std::string tile_suffix(const IntTile& t) { return std::to_string(t.bm) + "x" + std::to_string(t.bn); }

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Emits `d` unless a constant grid dimension exceeds the device's limit.
Status emit_tiled_grid(LoweringContext& ctx, KernelDesc d) {
  const int64_t max_groups = ctx.target().max_workgroup_count_x;
  for (const ir::Dim& g : d.groups)
    if (g.is_const() && g.value() > max_groups)
      return ctx.unsupported("integer GEMM grid of " + std::to_string(g.value()) + " workgroups exceeds the device's " +
                             std::to_string(max_groups));
  ctx.emit(std::move(d));
  return ok_status();
}

Status emit_tiled(LoweringContext& ctx, KernelDesc d, const IntTile& t, const GemmProblem& p) {
  d.local_size = {static_cast<uint32_t>(t.bn / 4), static_cast<uint32_t>(t.bm / t.tm), 1};
  d.groups = {ir::Dim::ceil_div(p.n, ir::Dim(t.bn)), ir::Dim::ceil_div(p.m, ir::Dim(t.bm)), p.batch};
  return emit_tiled_grid(ctx, std::move(d));
}

// The int8 cooperative-matrix kernel's configuration (shaders/
// gemm_int8_coopmat.comp): fragment shape, workgroup tile, subgroup grid.
struct Int8CoopMat {
  CoopMatShape shape;
  int bm = 64, bn = 64, wm = 2, wn = 2;
  uint32_t sg = 32;
};

constexpr int kInt8CoopMatBK = 64;  // K per shared-memory step: 4 units of 16 int8

// Whether the shader's index math holds for `c` and the target runs it:
// whole fragments per subgroup, every invocation staging the same whole
// number of A units (BM rows of BK / 16) and B units (BN columns of BK /
// 16) with one row or column per invocation, and the shared memory.
bool valid_int8_coopmat(const Int8CoopMat& c, bool a_m_fastest, const TargetInfo& t) {
  const int64_t nt = int64_t{c.wm} * c.wn * c.sg, kq = kInt8CoopMatBK / 16;
  const int sm = c.bm / c.wm, sn = c.bn / c.wn;
  const int64_t tiles = int64_t{c.bm + c.bn} * (kq + 1) * 16;
  const int64_t staging = int64_t{c.wm} * c.wn * c.shape.m * (sn + 4) * 4;
  return nt <= t.max_workgroup_invocations && c.bm % c.wm == 0 && c.bn % c.wn == 0 &&
         sm % static_cast<int>(c.shape.m) == 0 && sn % static_cast<int>(c.shape.n) == 0 && sn % 4 == 0 &&
         (a_m_fastest ? nt % c.bm == 0 : nt % kq == 0) && (c.bm * kq) % nt == 0 && nt % c.bn == 0 &&
         (c.bn * kq) % nt == 0 && std::max(tiles, staging) <= t.max_shared_memory;
}

// The configuration for `p`, or nullopt where the target has no int8
// fragment shape that divides the tiles (m | 16, n | 16 with n >= 8,
// k | 32) or subgroups for it, or the problem is too small to fill a
// fragment usefully (M < 16 or N < 16: the dot-product kernel's). Tiles as
// the fp16 kernel's (gemm_coopmat.h): 64 x 128 for a convolution with
// N >= 128 (its A, im2col index math per element, is read once per
// column tile), 32 x 64 for at most 32 rows, else 64 x 64.
std::optional<Int8CoopMat> choose_int8_coopmat(const GemmProblem& p, const TargetInfo& t) {
  const uint32_t sg = t.subgroup_size;
  if (t.coopmat == CoopMatFlavour::kNone || sg < 4 || sg > 128 || (sg & (sg - 1)) != 0) return std::nullopt;
  if ((p.m.is_const() && p.m.value() < 16) || (p.n.is_const() && p.n.value() < 16)) return std::nullopt;
  std::optional<CoopMatShape> best;
  for (const CoopMatShape& s : t.coopmat_s8_shapes) {
    const bool fits = s.m > 0 && 16 % s.m == 0 && s.n >= 8 && 16 % s.n == 0 && s.k >= 16 && 32 % s.k == 0;
    if (fits && (!best || uint64_t{s.m} * s.n * s.k > uint64_t{best->m} * best->n * best->k)) best = s;
  }
  if (!best) return std::nullopt;
  Int8CoopMat c;
  c.shape = *best;
  c.sg = sg;
  if (p.a_m_fastest && (!p.n.is_const() || p.n.value() >= 128)) {
    c.bn = 128;
    c.wn = 4;
  } else if (p.m.is_const() && p.m.value() <= 32) {
    c.bm = 32;
    c.wm = 1;
  }
  if (valid_int8_coopmat(c, p.a_m_fastest, t)) return c;
  c = Int8CoopMat{c.shape, 64, 64, 2, 2, sg};
  if (valid_int8_coopmat(c, p.a_m_fastest, t)) return c;
  return std::nullopt;
}

// ivec4 gemm_acc_finish(b, m, n, acc): acc + (a_offset - za) * (sum over k
// of B'), the end of both int8 kernels, shared with the split-K reduce pass.
std::string acc_finish_helper(int a_offset) {
  return "ivec4 gemm_acc_finish(int b, int m, int n, ivec4 acc) {\n  ivec4 s = ivec4(0);\n"
         "  for (int j = 0; j < 4; ++j)\n    if (n + j < GEMM_N) s[j] = gemm_b_colsum(b, n + j);\n"
         "  return acc + (" + std::to_string(a_offset) + " - gemm_a_zero(b, m)) * s;\n}\n";
}

// Emits the int8 kernel `d` for `p` (p.helpers with acc_finish_helper)
// whole, or — where its grid is small for the device over a deep K
// (choose_split, as the float GEMM) — with the grid's z also enumerating
// slices of K (`k_step` deep, or a multiple) that write raw int32 sums to
// the GP scratch, then the reduce pass, which finishes and stores them.
// `body(split_k)` gives the kernel's GLSL.
Status emit_int8_split(LoweringContext& ctx, GemmProblem p, KernelDesc d, int64_t k_step,
                       const std::function<std::string(bool)>& body) {
  const ir::Dim tiles = d.groups[0] * d.groups[1] * d.groups[2];
  const int64_t split = choose_split(tiles.is_const() ? tiles.value() : 0, p.k, ctx.target().compute_units);
  const int64_t chunk = split > 1 ? ceil_div(ceil_div(p.k.value(), split), k_step) * k_step : 0;
  const int64_t slices = split > 1 ? ceil_div(p.k.value(), chunk) : 1;
  if (slices <= 1) {
    d.body = body(false);
    return emit_tiled_grid(ctx, std::move(d));
  }
  d.name.insert(p.name.size(), "_splitk");
  d.body = body(true);
  d.params.push_back({"GEMM_KCHUNK", ir::Dim(chunk)});
  d.groups[2] = p.batch * ir::Dim(slices);
  const TensorId scratch = ctx.add_temporary(DType::kInt32, {ir::Dim(slices) * p.batch * p.m * p.n},
                                             {Storage::kBuffer, ElemType::kI32});
  d.tensors.push_back(ctx.bind("GP", scratch, true));
  p.helpers = "#define REDUCE_INT\n" + p.helpers;
  KernelDesc r = splitk_reduce_kernel(p, d, slices, ctx.target());
  KILN_RETURN_IF_ERROR(emit_tiled_grid(ctx, std::move(d)));
  ctx.emit(std::move(r));
  return ok_status();
}

// The int8 cooperative-matrix kernel for `p` (helpers as the dot-product
// path's), split as emit_int8_split decides.
Status emit_int8_coopmat_gemm(LoweringContext& ctx, GemmProblem p, const Int8CoopMat& c, bool a_unsigned) {
  const int a_offset = a_unsigned ? 128 : 0;
  p.helpers += acc_finish_helper(a_offset);
  KernelDesc d = gemm_kernel_base(p, p.name + "_int8cm" + std::to_string(c.bm) + "x" + std::to_string(c.bn));
  d.helpers += p.vector_helpers;
  d.extensions = {"GL_EXT_control_flow_attributes", "GL_EXT_shader_explicit_arithmetic_types_int8",
                  "GL_KHR_memory_scope_semantics", "GL_KHR_shader_subgroup_basic", "GL_NV_cooperative_matrix",
                  "GL_NV_integer_cooperative_matrix"};
  d.local_size = {static_cast<uint32_t>(c.wm * c.wn) * c.sg, 1, 1};
  d.groups = {ir::Dim::ceil_div(p.n, ir::Dim(c.bn)), ir::Dim::ceil_div(p.m, ir::Dim(c.bm)), p.batch};
  return emit_int8_split(ctx, p, std::move(d), kInt8CoopMatBK, [&](bool split_k) {
    return fill_shader("gemm_int8_coopmat.comp", ShaderArgs()
                                                     .set("FM", c.shape.m)
                                                     .set("FN", c.shape.n)
                                                     .set("FK", c.shape.k)
                                                     .set("BM", c.bm)
                                                     .set("BN", c.bn)
                                                     .set("BK", kInt8CoopMatBK)
                                                     .set("SG", c.sg)
                                                     .set("WM", c.wm)
                                                     .set("WN", c.wn)
                                                     .set("A_OFFSET", a_offset)
                                                     .flag("A_M_FASTEST", p.a_m_fastest)
                                                     .flag("SPLIT_K", split_k));
  });
}

}  // namespace

Status emit_int_gemm(LoweringContext& ctx, const GemmProblem& p) {
  const IntTile t = choose_int_tile(p);
  KernelDesc d = gemm_kernel_base(p, p.name + "_int_tile" + tile_suffix(t));
  d.body = fill_shader("gemm_int_tile.comp", ShaderArgs()
                                                 .set("BM", t.bm)
                                                 .set("BN", t.bn)
                                                 .set("TM", t.tm)
                                                 .flag("A_M_FASTEST", p.a_m_fastest));
  return emit_tiled(ctx, std::move(d), t, p);
}

bool int8_dot_available(const LoweringContext& ctx) {
  constexpr uint32_t kVulkan13 = (1u << 22) | (3u << 12);  // SPIR-V 1.6: the dot products are core
  if (!ctx.target().integer_dot_product || ctx.target().vulkan_version < kVulkan13) return false;
  const StatusOr<KernelHint> hint = kernel_hint(ctx.node());  // checked before planning (check_plan_hints)
  return !hint.ok() || hint->int8_dot.value_or(true);
}

Status emit_int8_dot_gemm(LoweringContext& ctx, const GemmProblem& p, bool a_unsigned) {
  if (const std::optional<Int8CoopMat> c = choose_int8_coopmat(p, ctx.target()))
    return emit_int8_coopmat_gemm(ctx, p, *c, a_unsigned);
  const IntTile t = choose_int_tile(p);
  GemmProblem q = p;
  q.helpers += acc_finish_helper(0);
  KernelDesc d = gemm_kernel_base(q, p.name + "_int8dot_tile" + tile_suffix(t));
  d.extensions.push_back("GL_EXT_spirv_intrinsics");
  d.local_size = {static_cast<uint32_t>(t.bn / 4), static_cast<uint32_t>(t.bm / t.tm), 1};
  d.groups = {ir::Dim::ceil_div(p.n, ir::Dim(t.bn)), ir::Dim::ceil_div(p.m, ir::Dim(t.bm)), p.batch};
  // K per step: 8 words of 4 (gemm_int8_dot.comp's BKW).
  return emit_int8_split(ctx, q, std::move(d), 32, [&](bool split_k) {
    return fill_shader("gemm_int8_dot.comp", ShaderArgs()
                                                 .set("BM", t.bm)
                                                 .set("BN", t.bn)
                                                 .set("TM", t.tm)
                                                 .flag("A_M_FASTEST", p.a_m_fastest)
                                                 .flag("A_UNSIGNED", a_unsigned)
                                                 .flag("SPLIT_K", split_k));
  });
}

}  // namespace kiln::planner
