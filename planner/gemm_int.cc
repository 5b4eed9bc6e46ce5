// The tiled integer GEMM; see gemm_int.h.
#include "planner/gemm_int.h"

#include <string>

#include "planner/shader_template.h"

namespace kiln::planner {

Status emit_int_gemm(LoweringContext& ctx, const GemmProblem& p) {
  // 64 invocations, each a TM x 4 block: 32 x 32 tiles, or 16 x 32 for a
  // few rows (a single-row MatMul would otherwise mask half the tile); 64 x
  // 64 tiles of 128 invocations, each 8 x 4, when M and N are both 64 or
  // more (or symbolic): twice the work per invocation for each tile load
  // (a 256 x 512 x 256 QLinearMatMul on lavapipe: wall median 56-77 ms
  // instead of 88-96 ms).
  const bool few_rows = p.m.is_const() && p.m.value() <= 16;
  const bool large = (!p.m.is_const() || p.m.value() >= 64) && (!p.n.is_const() || p.n.value() >= 64);
  int64_t bm = few_rows ? 16 : 32, bn = 32, tm = few_rows ? 2 : 4;
  if (large) bm = 64, bn = 64, tm = 8;
  KernelDesc d = gemm_kernel_base(p, p.name + "_int_tile" + std::to_string(bm) + "x" + std::to_string(bn));
  d.body = fill_shader("gemm_int_tile.comp",
                       ShaderArgs().set("BM", bm).set("BN", bn).set("TM", tm).flag("A_M_FASTEST", p.a_m_fastest));
  d.local_size = {static_cast<uint32_t>(bn / 4), static_cast<uint32_t>(bm / tm), 1};
  d.groups = {ir::Dim::ceil_div(p.n, ir::Dim(bn)), ir::Dim::ceil_div(p.m, ir::Dim(bm)), p.batch};
  const int64_t max_groups = ctx.target().max_workgroup_count_x;
  for (const ir::Dim& g : d.groups)
    if (g.is_const() && g.value() > max_groups)
      return ctx.unsupported("integer GEMM grid of " + std::to_string(g.value()) + " workgroups exceeds the device's " +
                             std::to_string(max_groups));
  ctx.emit(std::move(d));
  return ok_status();
}

}  // namespace kiln::planner
