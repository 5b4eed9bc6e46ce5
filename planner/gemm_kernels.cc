// GEMM kernel generators (see gemm_kernels.h).
#include "planner/gemm_kernels.h"

#include <algorithm>
#include <string>

namespace kiln::planner {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

// Few rows: one invocation per output column and K slice; the K slices are
// summed in shared memory. Classifier heads and single-token projections
// (M = 1) would leave a 64-row tile almost empty, and a tile loops over all of
// K in one workgroup; here 8 workgroup rows share K and every invocation
// streams a column of B (contiguous across the workgroup for [K][N] weights).
std::string gemv_body(int64_t mr) {
  const std::string MR = str(mr);
  return R"(
const int GV_X = 32;   // columns per workgroup
const int GV_Y = 8;    // K slices per workgroup
const int GV_MR = )" + MR + R"(;  // rows per workgroup
shared float gv_part[GV_Y][GV_MR * GV_X];

void main() {
  int tx = int(gl_LocalInvocationID.x), ty = int(gl_LocalInvocationID.y);
  int n0 = int(gl_WorkGroupID.x) * GV_X;
  int m0 = int(gl_WorkGroupID.y) * GV_MR;
  int b = int(gl_WorkGroupID.z);
  int n = n0 + tx;
  float acc[GV_MR];
  for (int r = 0; r < GV_MR; ++r) acc[r] = 0.0;
  if (n < GEMM_N) {
    for (int k = ty; k < GEMM_K; k += GV_Y) {
      float bv = gemm_b(b, k, n);
      for (int r = 0; r < GV_MR; ++r)
        if (m0 + r < GEMM_M) acc[r] += gemm_a(b, m0 + r, k) * bv;
    }
  }
  for (int r = 0; r < GV_MR; ++r) gv_part[ty][r * GV_X + tx] = acc[r];
  barrier();
  // GV_MR * GV_X / 4 invocations each sum and store four columns of one row.
  int tid = ty * GV_X + tx;
  if (tid < GV_MR * (GV_X / 4)) {
    int r = tid / (GV_X / 4), q = (tid % (GV_X / 4)) * 4;
    vec4 v = vec4(0.0);
    for (int y = 0; y < GV_Y; ++y)
      v += vec4(gv_part[y][r * GV_X + q], gv_part[y][r * GV_X + q + 1], gv_part[y][r * GV_X + q + 2],
                gv_part[y][r * GV_X + q + 3]);
    if (m0 + r < GEMM_M && n0 + q < GEMM_N) gemm_store4(b, m0 + r, n0 + q, v);
  }
}
)";
}

// The tiled kernel. Workgroup (BN/4) x (BM/TM) invocations computes a BM x BN
// tile of C; invocation (tx, ty) owns columns n0 + 4*tx .. +3 and rows
// m0 + ty + i*TY (i < TM): interleaved rows make all invocations of a
// workgroup row read the same A element (a shared-memory broadcast) while
// the B reads are consecutive vec4s. K advances BK at a time through shared
// tiles; out-of-range elements load as zero, so edges need no other masking
// than the final store.
//
// With `split_k` the grid's z axis also enumerates GEMM_SPLIT slices of K
// (GEMM_KCHUNK each) and the tile's partial sums go to the scratch buffer
// GP [split][batch][M][N]; reduce_body() then adds the slices and stores.
std::string tiled_body(int bm, int bn, int tm, bool a_m_fastest, bool split_k) {
  // Every invocation loads the same tile row (m-fastest) or the same tile
  // column (k-fastest) at every K step (NT is a multiple of BM and BK), so
  // after inlining the row's share of the index math (an output pixel's
  // coordinates for a convolution) is loop-invariant and hoisted.
  const std::string a_loop = a_m_fastest ? R"(    for (int kk = tid / BM; kk < BK; kk += NT / BM) {
      int mm = tid % BM;
)"
                                         : R"(    for (int mm = tid / BK; mm < BM; mm += NT / BK) {
      int kk = tid % BK;
)";
  const std::string range = split_k ? R"(  int b = int(gl_WorkGroupID.z) % GEMM_BATCH;
  int slice = int(gl_WorkGroupID.z) / GEMM_BATCH;
  int k_begin = slice * GEMM_KCHUNK, k_end = min(GEMM_K, k_begin + GEMM_KCHUNK);
)"
                                    : R"(  int b = int(gl_WorkGroupID.z);
  int k_begin = 0, k_end = GEMM_K;
)";
  const std::string store = split_k ? R"(      if (m < GEMM_M) {
        int p = ((slice * GEMM_BATCH + b) * GEMM_M + m) * GEMM_N + n;
        for (int j = 0; j < 4; ++j)
          if (n + j < GEMM_N) GP_data[p + j] = acc[i][j];
      }
)"
                                    : "      if (m < GEMM_M) gemm_store4(b, m, n, acc[i]);\n";
  return R"(
const int BM = )" + str(bm) + R"(, BN = )" + str(bn) + R"(, BK = 16, TM = )" + str(tm) + R"(;
const int TX = BN / 4, TY = BM / TM, NT = TX * TY;
shared float gt_a[BK][BM + 1];  // +1: k-major stores hit distinct banks
shared vec4 gt_b[BK][BN / 4];

void main() {
  int tx = int(gl_LocalInvocationID.x), ty = int(gl_LocalInvocationID.y);
  int tid = ty * TX + tx;
  int n0 = int(gl_WorkGroupID.x) * BN;
  int m0 = int(gl_WorkGroupID.y) * BM;
)" + range + R"(  vec4 acc[TM];
  for (int i = 0; i < TM; ++i) acc[i] = vec4(0.0);
  for (int k0 = k_begin; k0 < k_end; k0 += BK) {
)" + a_loop + R"(      int m = m0 + mm, k = k0 + kk;
      float v = 0.0;
      if (m < GEMM_M && k < k_end) v = gemm_a(b, m, k);
      gt_a[kk][mm] = v;
    }
    for (int kk = tid / BN; kk < BK; kk += NT / BN) {
      int nn = tid % BN;
      int n = n0 + nn, k = k0 + kk;
      float v = 0.0;
      if (n < GEMM_N && k < k_end) v = gemm_b(b, k, n);
      gt_b[kk][nn >> 2][nn & 3] = v;
    }
    barrier();
    for (int kk = 0; kk < BK; ++kk) {
      vec4 bv = gt_b[kk][tx];
      for (int i = 0; i < TM; ++i) acc[i] += gt_a[kk][ty + i * TY] * bv;
    }
    barrier();
  }
  int n = n0 + tx * 4;
  if (n < GEMM_N)
    for (int i = 0; i < TM; ++i) {
      int m = m0 + ty + i * TY;
)" + store + R"(    }
}
)";
}

// Split-K second pass: one invocation per four columns of one output row
// sums the GEMM_SPLIT partial tiles and stores through the op's epilogue.
std::string reduce_body() {
  return R"(
void main() {
  int q = int(gl_GlobalInvocationID.x);
  int nq = (GEMM_N + 3) / 4;
  if (q >= GEMM_BATCH * GEMM_M * nq) return;
  int n = (q % nq) * 4, r = q / nq;
  int m = r % GEMM_M, b = r / GEMM_M;
  vec4 v = vec4(0.0);
  for (int s = 0; s < GEMM_SPLIT; ++s) {
    int p = ((s * GEMM_BATCH + b) * GEMM_M + m) * GEMM_N + n;
    for (int j = 0; j < 4; ++j)
      if (n + j < GEMM_N) v[j] += GP_data[p + j];
  }
  gemm_store4(b, m, n, v);
}
)";
}

// The number of K slices for a tiled GEMM of `tiles` workgroups (0 when
// not constant): enough slices for ~256 workgroups, each slice at least 128
// deep, at most 16. A GPU has on the order of a hundred cores, and at batch
// 1 a late-network convolution (7x7 pixels, 512 channels, K = 4608) would
// otherwise run as 8 workgroups each walking all of K.
int64_t choose_split(int64_t tiles, const ir::Dim& k) {
  if (tiles <= 0 || tiles >= 128 || !k.is_const()) return 1;
  const int64_t by_grid = (256 + tiles - 1) / tiles;
  const int64_t by_depth = k.value() / 128;
  return std::clamp<int64_t>(std::min(by_grid, by_depth), 1, 16);
}

// Tile rows or columns for a constant size (16, 32 or 64).
int pick_tile(const ir::Dim& v) {
  if (v.is_const() && v.value() <= 16) return 16;
  if (v.is_const() && v.value() <= 32) return 32;
  return 64;
}

// Few rows take the GEMV kernel (see gemv_body).
bool use_gemv(const GemmProblem& p) { return p.m.is_const() && p.m.value() <= 4; }

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


KernelDesc make_gemm_kernel(const GemmProblem& p) {
  KernelDesc d;
  d.name = p.name;
  d.family = KernelDesc::Family::kCustom;
  d.tensors = p.tensors;
  d.params = p.params;
  d.params.push_back({"GEMM_BATCH", p.batch});
  d.params.push_back({"GEMM_M", p.m});
  d.params.push_back({"GEMM_N", p.n});
  d.params.push_back({"GEMM_K", p.k});
  d.helpers = p.helpers;
  d.flops = ir::Dim(2) * p.batch * p.m * p.n * p.k;

  if (use_gemv(p)) {
    const int64_t mr = std::max<int64_t>(1, p.m.value());
    d.name += "_gemv";
    d.body = gemv_body(mr);
    d.local_size = {32, 8, 1};
    d.groups = {ir::Dim::ceil_div(p.n, ir::Dim(32)), ir::Dim::ceil_div(p.m, ir::Dim(mr)), p.batch};
    return d;
  }
  // Tile rows and columns shrink for small constant M or N so that few
  // invocations idle on the padding; symbolic sizes take the largest tile.
  const int bm = pick_tile(p.m), bn = pick_tile(p.n);
  const int tm = bm / 16;  // 16 invocation rows
  d.name += "_tile" + str(bm) + "x" + str(bn);
  d.body = tiled_body(bm, bn, tm, p.a_m_fastest, false);
  d.local_size = {static_cast<uint32_t>(bn / 4), 16, 1};
  d.groups = {ir::Dim::ceil_div(p.n, ir::Dim(bn)), ir::Dim::ceil_div(p.m, ir::Dim(bm)), p.batch};
  return d;
}

Status emit_gemm(LoweringContext& ctx, const GemmProblem& p) {
  KernelDesc d = make_gemm_kernel(p);
  const int64_t max_groups = ctx.target().max_workgroup_count_x;
  for (const ir::Dim& g : d.groups)
    if (g.is_const() && g.value() > max_groups)
      return ctx.unsupported("GEMM grid of " + std::to_string(g.value()) + " workgroups exceeds the device's " +
                             std::to_string(max_groups));
  const ir::Dim tiles = d.groups[0] * d.groups[1] * d.groups[2];
  const int64_t split = use_gemv(p) ? 1 : choose_split(tiles.is_const() ? tiles.value() : 0, p.k);
  if (split <= 1) {
    ctx.emit(std::move(d));
    return ok_status();
  }
  // K slices of a multiple of BK, recounted so that none is empty.
  const int64_t chunk = ((p.k.value() + split - 1) / split + 15) / 16 * 16;
  const int64_t slices = (p.k.value() + chunk - 1) / chunk;
  const TensorId scratch = ctx.add_temporary(DType::kFloat32, {ir::Dim(slices) * p.batch * p.m * p.n},
                                             {Storage::kBuffer, ElemType::kF32});
  const int bm = pick_tile(p.m), bn = pick_tile(p.n);
  d.name = p.name + "_splitk_tile" + str(bm) + "x" + str(bn);
  d.body = tiled_body(bm, bn, bm / 16, p.a_m_fastest, true);
  d.params.push_back({"GEMM_KCHUNK", ir::Dim(chunk)});
  // Y stays bound as written in the tile pass although only the reduction
  // stores it: the shared helpers (gemm_store4) need its store accessors.
  d.tensors.push_back(ctx.bind("GP", scratch, true));
  d.groups[2] = p.batch * ir::Dim(slices);
  KernelDesc r = d;
  r.name = p.name + "_splitk_reduce";
  r.body = reduce_body();
  r.params.push_back({"GEMM_SPLIT", ir::Dim(slices)});
  r.tensors.back().written = false;
  r.local_size = {64, 1, 1};
  r.groups = {ir::Dim::ceil_div(p.batch * p.m * ir::Dim::ceil_div(p.n, ir::Dim(4)), ir::Dim(64)), ir::Dim(1),
              ir::Dim(1)};
  r.flops = ir::Dim(0);
  ctx.emit(std::move(d));
  ctx.emit(std::move(r));
  return ok_status();
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

std::string gemm_store4_buffer(const std::string& index) {
  return "void gemm_store4(int b, int m, int n, vec4 v) {\n"
         "  for (int j = 0; j < 4; ++j) {\n"
         "    int nj = n + j;\n"
         "    if (nj < GEMM_N) Y_st(" + index + ", gemm_epilogue(b, m, nj, v[j]));\n"
         "  }\n"
         "}\n";
}

std::string gemm_store4_image(const std::string& setup, const std::string& coords) {
  return "void gemm_store4(int b, int m, int n, vec4 v) {\n"
         "  vec4 r = vec4(0.0);\n"
         "  for (int j = 0; j < 4; ++j)\n"
         "    if (n + j < GEMM_N) r[j] = gemm_epilogue(b, m, n + j, v[j]);\n" +
         setup + "  Y_st4(" + coords + ", r);\n}\n";
}

}  // namespace kiln::planner
