// The tiled integer GEMM, scalar and on packed int8 dot products; see gemm_int.h.
#include "planner/gemm_int.h"

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

Status emit_tiled(LoweringContext& ctx, KernelDesc d, const IntTile& t, const GemmProblem& p) {
  d.local_size = {static_cast<uint32_t>(t.bn / 4), static_cast<uint32_t>(t.bm / t.tm), 1};
  d.groups = {ir::Dim::ceil_div(p.n, ir::Dim(t.bn)), ir::Dim::ceil_div(p.m, ir::Dim(t.bm)), p.batch};
  const int64_t max_groups = ctx.target().max_workgroup_count_x;
  for (const ir::Dim& g : d.groups)
    if (g.is_const() && g.value() > max_groups)
      return ctx.unsupported("integer GEMM grid of " + std::to_string(g.value()) + " workgroups exceeds the device's " +
                             std::to_string(max_groups));
  ctx.emit(std::move(d));
  return ok_status();
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
  const IntTile t = choose_int_tile(p);
  KernelDesc d = gemm_kernel_base(p, p.name + "_int8dot_tile" + tile_suffix(t));
  d.body = fill_shader("gemm_int8_dot.comp", ShaderArgs()
                                                 .set("BM", t.bm)
                                                 .set("BN", t.bn)
                                                 .set("TM", t.tm)
                                                 .flag("A_M_FASTEST", p.a_m_fastest)
                                                 .flag("A_UNSIGNED", a_unsigned));
  d.extensions.push_back("GL_EXT_spirv_intrinsics");
  return emit_tiled(ctx, std::move(d), t, p);
}

}  // namespace kiln::planner
