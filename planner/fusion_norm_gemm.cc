// A LayerNormalization folded into the MatMul reading it (see
// fusion_norm_gemm.h).
#include "planner/fusion_norm_gemm.h"

#include <string>

#include "planner/fusion.h"
#include "planner/gemm_kernels.h"
#include "planner/lower_util.h"

namespace kiln::planner {
namespace {

// X's element at row m, column k (X of `rank` dims, rows its first rank - 1
// dims flattened). A buffer reads one flat index; a view (fusion_views.h)
// reads by coordinates, whose row part depends on m alone and hoists out of
// the GEMM's K loop (a view's X_ld decomposes its flat index on every call).
std::string x_read(size_t rank) {
  const std::string row = join_args(row_major_coords("X", 0, rank - 1, "m"));
  return "float kiln_norm_x(int m, int k) {\n#ifdef X_IS_VIEW\n  return X_at(" + row +
         ", k);\n#else\n  return X_ld(m * GEMM_K + k);\n#endif\n}\n";
}

// The row prologue (GemmProblem::row_prologue): GEMM_THREADS / GEMM_TILE_ROWS
// lanes per tile row, neighbouring invocations on neighbouring k of a row,
// add up the row's differences from its first element and their squares
// (shifted, so that a mean far from zero cancels no digits), then the
// row's first lane combines its lanes' sums in order: mean and 1 / sigma in
// kiln_row_stats. One pass over the rows, eight loads in flight per
// invocation (issued before any is used: a rolled loop waited for each
// load in turn, and the pass made ConvNeXt's GEMMs twice as slow on an
// H200); the tile's rows then sit in the cache for the K loop's loads.
std::string prologue(const std::string& epsilon) {
  return "#define GEMM_ROW_PROLOGUE 1\n"
         "shared float kiln_row_sum[GEMM_THREADS];\n"
         "shared float kiln_row_sq[GEMM_THREADS];\n"
         "shared vec2 kiln_row_stats[GEMM_TILE_ROWS];\n"
         "int kiln_row0;\n"
         "void gemm_row_prologue(int b, int m0, int tid) {\n"
         "  const int lanes = GEMM_THREADS / GEMM_TILE_ROWS;\n"
         "  kiln_row0 = m0;\n"
         "  int r = tid / lanes, lane = tid % lanes, m = m0 + r;\n"
         "  float x0 = 0.0, s = 0.0, q = 0.0;\n"
         "  if (r < GEMM_TILE_ROWS && m < GEMM_M) {\n"
         "    x0 = kiln_norm_x(m, 0);\n"
         "    for (int k0 = lane; k0 < GEMM_K; k0 += 8 * lanes) {\n"
         "      float v[8];\n"
         "      for (int u = 0; u < 8; ++u) {\n"
         "        int k = k0 + u * lanes;\n"
         "        v[u] = k < GEMM_K ? kiln_norm_x(m, k) : x0;\n"
         "      }\n"
         "      for (int u = 0; u < 8; ++u) {\n"
         "        float d = v[u] - x0;\n"
         "        s += d;\n"
         "        q += d * d;\n"
         "      }\n"
         "    }\n"
         "  }\n"
         "  kiln_row_sum[tid] = s;\n"
         "  kiln_row_sq[tid] = q;\n"
         "  barrier();\n"
         "  if (lane == 0 && r < GEMM_TILE_ROWS) {\n"
         "    s = 0.0;\n"
         "    q = 0.0;\n"
         "    for (int l = 0; l < lanes; ++l) {\n"
         "      s += kiln_row_sum[tid + l];\n"
         "      q += kiln_row_sq[tid + l];\n"
         "    }\n"
         "    float mean = s / float(GEMM_K);\n"
         "    float var = max(q / float(GEMM_K) - mean * mean, 0.0);\n"
         "    kiln_row_stats[r] = vec2(x0 + mean, inversesqrt(var + " + epsilon + "));\n"
         "  }\n"
         "}\n";
}

bool is_layer_norm(const ir::Node& n) { return n.domain.empty() && n.op == "LayerNormalization"; }

// Whether `v` holds `k` values along one axis: [K] or [1, ..., 1, K].
bool per_column(const std::vector<ir::Dim>& v, int64_t k) {
  if (v.empty() || !v.back().is_const() || v.back().value() != k) return false;
  for (size_t i = 0; i + 1 < v.size(); ++i)
    if (!v[i].is_const() || v[i].value() != 1) return false;
  return true;
}

}  // namespace

std::optional<size_t> norm_gemm_index(const ir::Graph& graph, const FusionGroup& group) {
  if (group.in_subgraph || group.nodes.size() < 2) return std::nullopt;
  const ir::Node& norm = graph.node(group.nodes[0]);
  const ir::Node& mm = graph.node(group.nodes[1]);
  if (!is_layer_norm(norm) || norm.inputs.size() < 2 || norm.outputs.empty()) return std::nullopt;
  for (size_t i = 1; i < norm.outputs.size(); ++i)
    if (norm.outputs[i] != ir::kNoValue) return std::nullopt;
  if (!mm.domain.empty() || mm.op != "MatMul" || mm.inputs.size() != 2 || mm.inputs[0] != norm.outputs[0])
    return std::nullopt;
  const Tensor* w = node_input_constant(graph, mm, 1);
  if (!w || w->rank() != 2) return std::nullopt;
  for (size_t k = 2; k < group.nodes.size(); ++k)
    for (ir::ValueId in : graph.node(group.nodes[k]).inputs)
      if (in == norm.outputs[0]) return std::nullopt;
  return 1;
}

StatusOr<std::vector<KernelDesc>> lower_norm_gemm(PlanBuilder& builder, const ir::Graph& graph,
                                                  const FusionGroup& group) {
  const ir::Node& norm = graph.node(group.nodes[0]);
  const ir::Node& mm = graph.node(group.nodes[1]);
  const auto refuse = [&](const std::string& why) {
    return unimplemented(mm.describe() + " reading " + norm.describe() + " " + why);
  };
  for (ir::ValueId v : {norm.inputs[0], norm.inputs[1], mm.outputs[0]})
    if (!builder.value_ranked(v)) return refuse("has a tensor of unknown rank");
  const std::vector<ir::Dim>& sx = builder.value_shape(norm.inputs[0]);
  const size_t rank = sx.size();
  const int64_t axis = norm.attr_int("axis", -1);
  if (rank < 2 || (axis != -1 && axis != static_cast<int64_t>(rank) - 1))
    return refuse("does not normalize the last axis of a matrix");
  if (!sx.back().is_const()) return refuse("normalizes an axis of unknown length");
  const int64_t k = sx.back().value();
  const bool has_beta = norm.inputs.size() > 2 && norm.inputs[2] != ir::kNoValue;
  if (!per_column(builder.value_shape(norm.inputs[1]), k) ||
      (has_beta && (!builder.value_ranked(norm.inputs[2]) || !per_column(builder.value_shape(norm.inputs[2]), k))))
    return refuse("has a scale or bias of other than one value per column");

  LoweringContext ctx(builder, graph, mm.id);
  const Tensor* w = ctx.input_constant(1);
  if (w->dim(0) != k) return refuse("has a weight not over the normalized axis");
  const int64_t n = w->dim(1);
  const std::vector<ir::Dim>& sy = ctx.output_shape(0);
  if (sy.size() != rank) return refuse("has an output of another rank");
  ir::Dim rows(1);
  for (size_t i = 0; i + 1 < rank; ++i) rows = rows * sx[i];

  GemmProblem p;
  p.name = "normmatmul";
  p.m = rows;
  p.n = ir::Dim(n);
  p.k = ir::Dim(k);
  p.a_tensor = "X";
  p.b_tensor = "B";
  p.row_prologue = true;
  p.tensors.push_back(ctx.bind("X", builder.tensor_of(norm.inputs[0])));
  p.tensors.push_back(ctx.bind("G", builder.tensor_of(norm.inputs[1])));
  std::string beta;
  if (has_beta) {
    p.tensors.push_back(ctx.bind("Be", builder.tensor_of(norm.inputs[2])));
    beta = " + Be_ld(k)";
  }
  p.tensors.push_back(ctx.bind("B", ctx.add_constant(*w, {Storage::kBuffer, ctx.input_elem_type(1)})));
  // An image packed on another axis than the last (N) is written through a
  // row-major scratch and copied.
  const GemmOutput out = bind_gemm_output(ctx, ctx.layout(ctx.output(0)).packed_axis == static_cast<int>(rank) - 1);
  p.tensors.push_back(out.y);

  std::string h = x_read(rank) + prologue(glsl_float(norm.attr_float("epsilon", 1e-5f)));
  h += "float gemm_a(int b, int m, int k) {\n  vec2 s = kiln_row_stats[m - kiln_row0];\n"
       "  return (kiln_norm_x(m, k) - s.x) * s.y * G_ld(k)" + beta + ";\n}\n";
  h += "float gemm_b(int b, int k, int n) { return B_ld(k * GEMM_N + n); }\n";
  h += "float gemm_epilogue(int b, int m, int n, float acc) { return acc; }\n";
  h += out.is_buffer() ? gemm_store4_buffer("m * GEMM_N + nj")
                       : gemm_store4_image(decompose_rows(rank), row_coords(rank, "n"));
  p.helpers = std::move(h);
  // The tensor-core kernel's 16-byte A units: 8 elements of a row, each
  // normalized, where X is no view (a view's runs need not be contiguous).
  if (k % 8 == 0)
    p.vector_helpers =
        "#ifndef X_IS_VIEW\n#define GEMM_A8 1\nuvec4 gemm_a8(int b, int m, int k) {\n"
        "  uvec4 u = X_ld8h(m * GEMM_K + k);\n  vec2 s = kiln_row_stats[m - kiln_row0];\n"
        "  uint w[4] = uint[4](u.x, u.y, u.z, u.w);\n"
        "  for (int i = 0; i < 4; ++i) {\n    int c = k + 2 * i;\n    vec2 v = unpackHalf2x16(w[i]);\n"
        "    v = (v - s.x) * s.y * vec2(G_ld(c), G_ld(c + 1))" +
        (has_beta ? std::string(" + vec2(Be_ld(c), Be_ld(c + 1))") : std::string()) +
        ";\n    w[i] = packHalf2x16(v);\n  }\n  return uvec4(w[0], w[1], w[2], w[3]);\n}\n#endif\n";
  if (n % 8 == 0)
    p.vector_helpers += "#define GEMM_B8 1\nuvec4 gemm_b8(int b, int k, int n) { return B_ld8h(k * GEMM_N + n); }\n";
  KILN_RETURN_IF_ERROR(emit_gemm(ctx, p));
  finish_gemm_output(ctx, out);
  std::vector<KernelDesc> kernels = builder.take_pending_kernels();
  return kernels;
}

}  // namespace kiln::planner
