// Cooperative-matrix GEMM kernel (see gemm_coopmat.h).
#include "planner/gemm_coopmat.h"

#include <algorithm>
#include <string>
#include <utility>

namespace kiln::planner {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

// Workgroups that keep a GPU busy (as in gemm_kernels.cc): 128 x 64 tiles
// only while they still number this many.
constexpr int64_t kBusyTiles = 128;
constexpr int kBK = 32;        // K per shared-memory step

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool too_small(const ir::Dim& d, int64_t min) { return d.is_const() && d.value() < min; }

// Shared memory bytes of the kernel: A tile, B tile, C staging.
int64_t shared_bytes(const CoopMatConfig& c) {
  const int64_t a = int64_t{c.bm} * (kBK + 8) * 2;
  const int64_t b = int64_t{kBK} * (c.bn + 8) * 2;
  const int64_t sc = int64_t{c.wm} * c.wn * c.shape.m * (c.bn / c.wn + 4) * (c.shape.f32_accumulator ? 4 : 2);
  return a + b + sc;
}

// The GLSL body. Layout in shared memory (all strides and fragment offsets
// multiples of 16 bytes, as cooperative-matrix loads and stores want):
//   ca_tile[BM][LDA]  A rows (k contiguous), LDA = BK + 8 halves (the pad
//                     spreads consecutive rows over banks)
//   cb_tile[BK][LDB]  B rows (n contiguous), LDB = BN + 8 halves
//   cc_tile[WM * WN][FM][SCS] per subgroup, one row of its accumulator
//                     fragments while they are written out; SCS = SN + 4.
// Subgroup s owns the SM x SN block at rows (s / WN) * SM, columns
// (s % WN) * SN of the tile: TM x TN fragments. Every loop with a constant
// trip count is [[unroll]]: with rolled loops NVIDIA's compiler kept the
// fragment arrays out of registers and the kernel ran at half the speed
// (H200, 2048x4096x4096: 33 -> 66 TFLOP/s).
std::string coopmat_body(const CoopMatConfig& c, bool a_m_fastest) {
  const bool f32 = c.shape.f32_accumulator;
  const std::string acc_bits = f32 ? "32" : "16";
  const std::string acc_elem = f32 ? "float" : "float16_t";
  const std::string acc_zero = f32 ? "0.0" : "float16_t(0.0)";
  // NT is a multiple of BM, BN and BK (choose_coopmat), so an invocation
  // loads the same tile row (or column) at every step and its share of the
  // index math (an output pixel's coordinates for a convolution) is hoisted.
  const std::string a_elem = a_m_fastest ? "      int mm = tid % BM, kk = tid / BM + j * (NT / BM);\n"
                                         : "      int kk = tid % BK, mm = tid / BK + j * (NT / BK);\n";
  const std::string b_elem = "      int nn = tid % BN, kk = tid / BN + j * (NT / BN);\n";
  const auto load = [&](const std::string& k_start) {
    return "    [[unroll]] for (int j = 0; j < A_LD; ++j) {\n" + a_elem +
           "      int m = m0 + mm, k = " + k_start +
           " + kk;\n"
           "      pa[j] = float16_t(0.0);\n"
           "      if (m < GEMM_M && k < k_end) pa[j] = float16_t(gemm_a(b, m, k));\n"
           "    }\n"
           "    [[unroll]] for (int j = 0; j < B_LD; ++j) {\n" +
           b_elem + "      int n = n0 + nn, k = " + k_start +
           " + kk;\n"
           "      pb[j] = float16_t(0.0);\n"
           "      if (n < GEMM_N && k < k_end) pb[j] = float16_t(gemm_b(b, k, n));\n"
           "    }\n";
  };
  return R"(
const int FM = )" + str(c.shape.m) + R"(, FN = )" + str(c.shape.n) + R"(, FK = )" + str(c.shape.k) + R"(;
const int BM = )" + str(c.bm) + R"(, BN = )" + str(c.bn) + R"(, BK = )" + str(kBK) + R"(;
const int SG = )" + str(c.subgroup_size) + R"(, WM = )" + str(c.wm) + R"(, WN = )" + str(c.wn) + R"(;
const int NT = WM * WN * SG;  // invocations: a WM x WN grid of subgroups
const int SM = BM / WM, SN = BN / WN, TM = SM / FM, TN = SN / FN;
const int LDA = BK + 8, LDB = BN + 8, SCS = SN + 4;
const int A_LD = BM * BK / NT, B_LD = BN * BK / NT;  // tile elements each invocation loads
shared float16_t ca_tile[BM * LDA];
shared float16_t cb_tile[BK * LDB];
shared )" + acc_elem + R"( cc_tile[WM * WN * FM * SCS];

void main() {
  int tid = int(gl_LocalInvocationID.x);
  int sg = int(gl_SubgroupID), lane = int(gl_SubgroupInvocationID);
  int sm0 = (sg / WN) * SM, sn0 = (sg % WN) * SN;
  int n0 = int(gl_WorkGroupID.x) * BN;
  int m0 = int(gl_WorkGroupID.y) * BM;
  int b = int(gl_WorkGroupID.z);
  int k_end = GEMM_K;
  fcoopmatNV<)" + acc_bits + R"(, gl_ScopeSubgroup, FM, FN> acc[TM * TN];
  [[unroll]] for (int i = 0; i < TM * TN; ++i) acc[i] = fcoopmatNV<)" + acc_bits + R"(, gl_ScopeSubgroup, FM, FN>()" + acc_zero + R"();
  float16_t pa[A_LD], pb[B_LD];  // the next K step's tile elements
  {
)" + load("0") + R"(  }
  for (int k0 = 0; k0 < k_end; k0 += BK) {
    [[unroll]] for (int j = 0; j < A_LD; ++j) {
)" + a_elem + R"(      ca_tile[mm * LDA + kk] = pa[j];
    }
    [[unroll]] for (int j = 0; j < B_LD; ++j) {
)" + b_elem + R"(      cb_tile[kk * LDB + nn] = pb[j];
    }
    barrier();
    if (k0 + BK < k_end) {
)" + load("k0 + BK") + R"(    }
    [[unroll]] for (int kk = 0; kk < BK; kk += FK) {
      fcoopmatNV<16, gl_ScopeSubgroup, FM, FK> fa[TM];
      fcoopmatNV<16, gl_ScopeSubgroup, FK, FN> fb[TN];
      [[unroll]] for (int i = 0; i < TM; ++i)
        coopMatLoadNV(fa[i], ca_tile, uint((sm0 + i * FM) * LDA + kk), uint(LDA), false);
      [[unroll]] for (int j = 0; j < TN; ++j)
        coopMatLoadNV(fb[j], cb_tile, uint(kk * LDB + sn0 + j * FN), uint(LDB), false);
      [[unroll]] for (int i = 0; i < TM; ++i)
        [[unroll]] for (int j = 0; j < TN; ++j) acc[i * TN + j] = coopMatMulAddNV(fa[i], fb[j], acc[i * TN + j]);
    }
    barrier();
  }
  // Out: one fragment row at a time through this subgroup's staging rows.
  int sc0 = sg * FM * SCS;
  [[unroll]] for (int i = 0; i < TM; ++i) {
    [[unroll]] for (int j = 0; j < TN; ++j) coopMatStoreNV(acc[i * TN + j], cc_tile, uint(sc0 + j * FN), uint(SCS), false);
    barrier();
    for (int q = lane; q < FM * (SN / 4); q += SG) {
      int r = q / (SN / 4), cq = (q % (SN / 4)) * 4;
      int m = m0 + sm0 + i * FM + r, n = n0 + sn0 + cq;
      int o = sc0 + r * SCS + cq;
      if (m < GEMM_M && n < GEMM_N)
        gemm_store4(b, m, n, vec4(float(cc_tile[o]), float(cc_tile[o + 1]), float(cc_tile[o + 2]),
                                  float(cc_tile[o + 3])));
    }
    barrier();
  }
}
)";
}

}  // namespace

std::optional<CoopMatShape> pick_coopmat_shape(const TargetInfo& target) {
  if (target.coopmat != CoopMatFlavour::kNV) return std::nullopt;
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
// holds for: whole fragments per subgroup, a grid of invocations that is a
// multiple of BM, BN and BK and loads whole tile elements, and the shared
// memory the target has.
bool valid_config(const CoopMatConfig& c, const TargetInfo& target) {
  const int64_t nt = int64_t{c.wm} * c.wn * c.subgroup_size;
  const int sm = c.bm / c.wm, sn = c.bn / c.wn;
  return nt <= target.max_workgroup_invocations && c.bm % c.wm == 0 && c.bn % c.wn == 0 &&
         sm % static_cast<int>(c.shape.m) == 0 && sn % static_cast<int>(c.shape.n) == 0 && sn % 8 == 0 &&
         nt % c.bm == 0 && nt % c.bn == 0 && nt % kBK == 0 && (int64_t{c.bm} * kBK) % nt == 0 &&
         (int64_t{c.bn} * kBK) % nt == 0 && shared_bytes(c) <= target.max_shared_memory;
}

std::optional<CoopMatConfig> choose_coopmat(const GemmProblem& p, const TargetInfo& target, ElemType precision) {
  if (precision != ElemType::kF16 || !target.fp16_storage || !target.fp16_arithmetic) return std::nullopt;
  const uint32_t sg = target.subgroup_size;
  if (sg < 4 || sg > 128 || (sg & (sg - 1)) != 0) return std::nullopt;
  const std::optional<CoopMatShape> shape = pick_coopmat_shape(target);
  if (!shape) return std::nullopt;
  if (too_small(p.m, 32) || too_small(p.n, 16)) return std::nullopt;
  CoopMatConfig c;
  c.shape = *shape;
  c.subgroup_size = sg;
  // Tiles as measured on an H200 (gemm_coopmat_test's throughput test).
  if (p.n.is_const() && p.n.value() <= 32) {
    c.bn = 32;
  } else if (p.a_m_fastest && (!p.n.is_const() || p.n.value() >= 128)) {
    // An implicit-GEMM convolution: each A element (im2col index math) is
    // computed once per column tile, so wide tiles pay off most.
    c.bn = 128;
    c.wn = 4;
  } else if (p.m.is_const() && p.n.is_const() && p.batch.is_const() &&
             ceil_div(p.m.value(), 128) * ceil_div(p.n.value(), 64) * p.batch.value() >= kBusyTiles) {
    c.bm = 128;
    c.wm = 4;
  }
  if (valid_config(c, target)) return c;
  c.bm = 64;
  c.bn = std::min(c.bn, 64);
  c.wm = c.wn = 2;
  if (valid_config(c, target)) return c;
  return std::nullopt;
}

KernelDesc make_coopmat_gemm_kernel(const GemmProblem& p, const CoopMatConfig& c) {
  KernelDesc d = gemm_kernel_base(p, p.name + "_coopmat" + str(c.bm) + "x" + str(c.bn));
  d.extensions = {"GL_EXT_control_flow_attributes", "GL_EXT_shader_explicit_arithmetic_types_float16",
                  "GL_KHR_memory_scope_semantics",
                  "GL_KHR_shader_subgroup_basic", "GL_NV_cooperative_matrix"};
  d.body = coopmat_body(c, p.a_m_fastest);
  d.local_size = {static_cast<uint32_t>(c.wm * c.wn) * c.subgroup_size, 1, 1};
  d.groups = {ir::Dim::ceil_div(p.n, ir::Dim(c.bn)), ir::Dim::ceil_div(p.m, ir::Dim(c.bm)), p.batch};
  return d;
}

std::string describe(const CoopMatConfig& c) {
  return str(c.shape.m) + "x" + str(c.shape.n) + "x" + str(c.shape.k) +
         (c.shape.f32_accumulator ? " f32acc" : " f16acc") + ", tile " + str(c.bm) + "x" + str(c.bn) + ", " +
         str(c.wm) + "x" + str(c.wn) + " subgroups of " + str(c.subgroup_size);
}

}  // namespace kiln::planner
