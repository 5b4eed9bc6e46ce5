// Lowerings of the 'linalg' op family: MatMul and Gemm here, Conv and
// ConvTranspose in lower_conv.cc; all of them run on the tiled GEMM kernels
// of gemm_kernels.h.
//
// Constant right-hand operands (the weights of linear layers) are uploaded
// once as row-major [K][N] buffers in the activation precision, whatever
// layout the planner would give the initializer, so the kernel's B tile reads
// consecutive columns; activations are read through their accessors.
// Integer MatMul/Gemm stay on the host: the kernels accumulate in float.
#include <string>
#include <vector>

#include "planner/gemm_kernels.h"
#include "planner/lower_util.h"
#include "planner/lowering.h"

namespace kiln::planner {
namespace {

std::string dn(const std::string& t, size_t k) { return t + "_D" + std::to_string(k); }

// GLSL `int <fn>(int b)`: the linear batch index into operand `t` (batch
// axes = the first `op_batch` of its dims) for output batch index b over
// the first `out_batch` dims of Y, with numpy broadcasting (operand axes
// right-aligned; a constant 1 reads index 0, a symbolic dim is checked at
// run time).
std::string batch_index_fn(const std::string& fn, const std::string& t, const std::vector<ir::Dim>& op_dims,
                           size_t op_batch, size_t out_batch) {
  std::string s = "int " + fn + "(int b) {\n  int idx = 0, stride = 1, c;\n";
  for (size_t j = out_batch; j-- > 0;) {
    s += "  c = b % " + dn("Y", j) + "; b /= " + dn("Y", j) + ";\n";
    if (j + op_batch < out_batch) continue;  // the operand has no such axis
    const size_t ja = j + op_batch - out_batch;
    const ir::Dim& d = op_dims[ja];
    if (d.is_const() && d.value() == 1) continue;
    const std::string c = d.is_const() ? "c" : "(" + dn(t, ja) + " == 1 ? 0 : c)";
    s += "  idx += " + c + " * stride; stride *= " + dn(t, ja) + ";\n";
  }
  return s + "  return idx;\n}\n";
}

// Statements decomposing the row index `r` (consumed) into Y's coordinates
// c0 .. c<rank-2> (Y's last axis is the GEMM's N axis), declared here.
std::string decompose_rows(size_t y_rank) {
  std::string s;
  if (y_rank < 2) return s;
  s += "  int row = b * GEMM_M + m;\n";
  for (size_t k = y_rank - 1; k-- > 1;)
    s += "  int c" + std::to_string(k) + " = row % " + dn("Y", k) + "; row /= " + dn("Y", k) + ";\n";
  s += "  int c0 = row;\n";
  return s;
}

std::string row_coords(size_t y_rank) {
  std::string s;
  for (size_t k = 0; k + 1 < y_rank; ++k) s += "c" + std::to_string(k) + ", ";
  return s + "n";
}

// A float constant uploaded as a row-major buffer of the activation precision.
TensorId upload_float(LoweringContext& ctx, Tensor t) {
  return ctx.add_constant(std::move(t), {Storage::kBuffer, ctx.float_type()});
}

// ---------------------------------------------------------------------------
// MatMul: numpy matmul with 1-D promotion and broadcast batch dims.
//
// Y's row-major index of (batch b, row m, column n) is (b*M + m)*N + n also
// when A or B is 1-D (the dropped axes have size 1), so stores need no case
// analysis. When B has no batch axes, A's batch folds into M (one GEMM with
// batch*M rows: a transformer's [1, seq, d] x [d, e] fills whole tiles).

Status lower_matmul(LoweringContext& ctx) {
  if (!dtype_is_float(ctx.input_dtype(0))) return ctx.unsupported("integer MatMul accumulates exactly on the host");
  const std::vector<ir::Dim>& sa = ctx.input_shape(0);
  const std::vector<ir::Dim>& sb = ctx.input_shape(1);
  const std::vector<ir::Dim>& sy = ctx.output_shape(0);
  if (sa.empty() || sb.empty()) return ctx.error("MatMul operands must have rank >= 1");
  const bool a_vec = sa.size() == 1, b_vec = sb.size() == 1;
  const ir::Dim m = a_vec ? ir::Dim(1) : sa[sa.size() - 2];
  const ir::Dim k = sa.back();
  const ir::Dim n = b_vec ? ir::Dim(1) : sb.back();
  const size_t out_batch = sy.size() - (a_vec ? 0 : 1) - (b_vec ? 0 : 1);
  const size_t a_batch = a_vec ? 0 : sa.size() - 2, b_batch = b_vec ? 0 : sb.size() - 2;
  ir::Dim batch(1);
  for (size_t j = 0; j < out_batch; ++j) batch = batch * sy[j];
  const bool fold = b_batch == 0;

  GemmProblem p;
  p.name = "matmul";
  const TensorId a = ctx.input(0);
  p.tensors.push_back(ctx.bind("A", a));
  TensorId b;
  if (const Tensor* w = ctx.input_constant(1)) {
    b = upload_float(ctx, *w);
  } else {
    b = ctx.input(1);
  }
  p.tensors.push_back(ctx.bind("B", b));

  // Images store four texel lanes along their packed axis: that must be N.
  const bool image_ok = !b_vec && ctx.layout(ctx.output(0)).packed_axis == static_cast<int>(sy.size()) - 1;
  const GemmOutput out = bind_gemm_output(ctx, image_ok);
  p.tensors.push_back(out.y);

  p.m = fold ? batch * m : m;
  p.batch = fold ? ir::Dim(1) : batch;
  p.n = n;
  p.k = k;
  std::string h;
  if (fold) {
    h += "float gemm_a(int b, int m, int k) { return A_ld(m * GEMM_K + k); }\n";
  } else {
    h += batch_index_fn("gemm_a_batch", "A", sa, a_batch, out_batch);
    h += "float gemm_a(int b, int m, int k) { return A_ld((gemm_a_batch(b) * GEMM_M + m) * GEMM_K + k); }\n";
  }
  h += batch_index_fn("gemm_b_batch", "B", sb, b_batch, out_batch);
  h += "float gemm_b(int b, int k, int n) { return B_ld((gemm_b_batch(b) * GEMM_K + k) * GEMM_N + n); }\n";
  h += "float gemm_epilogue(int b, int m, int n, float acc) { return acc; }\n";
  if (out.is_buffer()) {
    h += gemm_store4_buffer("(b * GEMM_M + m) * GEMM_N + nj");
  } else {
    h += gemm_store4_image(decompose_rows(sy.size()), row_coords(sy.size()));
  }
  p.helpers = std::move(h);
  KILN_RETURN_IF_ERROR(emit_gemm(ctx, p));
  finish_gemm_output(ctx, out);
  return ok_status();
}

// ---------------------------------------------------------------------------
// Gemm: Y = alpha * A' * B' + beta * C, C unidirectionally broadcast to [M, N].

// A copy of 2-D `w` as [K][N]: transposed when the node reads it transposed.
StatusOr<Tensor> repack_kn(const Tensor& w, bool trans) {
  if (!trans) return w;
  const int64_t rows = w.dim(0), cols = w.dim(1);
  KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(w.dtype(), {cols, rows}));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) t.set_f64(c * rows + r, w.get_f64(r * cols + c));
  return t;
}

Status lower_gemm(LoweringContext& ctx) {
  if (!dtype_is_float(ctx.input_dtype(0))) return ctx.unsupported("integer Gemm accumulates exactly on the host");
  const std::vector<ir::Dim>& sa = ctx.input_shape(0);
  const std::vector<ir::Dim>& sb = ctx.input_shape(1);
  const std::vector<ir::Dim>& sy = ctx.output_shape(0);
  if (sa.size() != 2 || sb.size() != 2) return ctx.error("Gemm operands must be 2-D");
  const bool trans_a = ctx.node().attr_int("transA", 0) != 0;
  const bool trans_b = ctx.node().attr_int("transB", 0) != 0;
  const double alpha = ctx.node().attr_float("alpha", 1.0f);
  const double beta = ctx.node().attr_float("beta", 1.0f);

  GemmProblem p;
  p.name = "gemm";
  p.m = sy[0];
  p.n = sy[1];
  p.k = trans_a ? sa[0] : sa[1];
  p.a_m_fastest = trans_a;  // A^T is [K][M]: neighbouring m are adjacent
  p.tensors.push_back(ctx.bind("A", ctx.input(0)));
  std::string h = trans_a ? "float gemm_a(int b, int m, int k) { return A_at(k, m); }\n"
                          : "float gemm_a(int b, int m, int k) { return A_at(m, k); }\n";
  if (const Tensor* w = ctx.input_constant(1)) {
    KILN_ASSIGN_OR_RETURN(Tensor kn, repack_kn(*w, trans_b));
    p.tensors.push_back(ctx.bind("B", upload_float(ctx, std::move(kn))));
    h += "float gemm_b(int b, int k, int n) { return B_ld(k * GEMM_N + n); }\n";
  } else {
    p.tensors.push_back(ctx.bind("B", ctx.input(1)));
    h += trans_b ? "float gemm_b(int b, int k, int n) { return B_at(n, k); }\n"
                 : "float gemm_b(int b, int k, int n) { return B_at(k, n); }\n";
  }
  std::string epi = "acc";
  if (alpha != 1.0) epi = glsl_float(alpha) + " * acc";
  if (ctx.has_input(2) && beta != 0.0) {
    const std::vector<ir::Dim>& sc = ctx.input_shape(2);
    if (sc.size() > 2) return ctx.error("Gemm C must have rank <= 2");
    p.tensors.push_back(ctx.bind("C", ctx.input(2)));
    // Per axis of C (right-aligned to [M, N]): a constant 1 reads 0, else
    // the coordinate (checked at run time when symbolic).
    const char* coord[2] = {"m", "n"};
    std::vector<std::string> cc;
    for (size_t i = 0; i < sc.size(); ++i) {
      const std::string c = coord[2 - sc.size() + i];
      const ir::Dim& d = sc[i];
      if (d.is_const() && d.value() == 1) cc.push_back("0");
      else if (d.is_const()) cc.push_back(c);
      else cc.push_back("(" + dn("C", i) + " == 1 ? 0 : " + c + ")");
    }
    if (cc.empty()) cc.push_back("0");  // rank 0 is seen as [1]
    const std::string load = "C_at(" + join_args(cc) + ")";
    epi += " + " + (beta == 1.0 ? load : glsl_float(beta) + " * " + load);
  }
  h += "float gemm_epilogue(int b, int m, int n, float acc) { return " + epi + "; }\n";

  const GemmOutput out = bind_gemm_output(ctx, ctx.layout(ctx.output(0)).packed_axis == 1);
  p.tensors.push_back(out.y);
  h += out.is_buffer() ? gemm_store4_buffer("m * GEMM_N + nj") : gemm_store4_image("", "m, n");
  p.helpers = std::move(h);
  KILN_RETURN_IF_ERROR(emit_gemm(ctx, p));
  finish_gemm_output(ctx, out);
  return ok_status();
}

}  // namespace

void register_linalg_lowerings(LoweringRegistry& r) {
  r.add("", "MatMul", lower_matmul);
  r.add("", "Gemm", lower_gemm);
  r.add("", "Conv", lower_conv);
  r.add("", "ConvTranspose", lower_conv_transpose);
}

}  // namespace kiln::planner
