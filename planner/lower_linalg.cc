// Lowerings of the 'linalg' op family: MatMul and Gemm here, Conv and
// ConvTranspose in lower_conv.cc; all of them run on the tiled GEMM kernels
// of gemm_kernels.h.
//
// Constant right-hand operands (the weights of linear layers) are uploaded
// once as row-major [K][N] buffers in the activation precision, whatever
// layout the planner would give the initializer, so the kernel's B tile reads
// consecutive columns — in column chunks, one GEMM dispatch each, when the
// weight exceeds what one descriptor can address; activations are read
// through their accessors.
// Integer MatMul/Gemm stay on the host: the kernels accumulate in float.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
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

// A float constant (derived from the node's input `input`) uploaded as a
// row-major buffer in the precision the planner gives that input.
TensorId upload_float(LoweringContext& ctx, Tensor t, size_t input) {
  return ctx.add_constant(std::move(t), {Storage::kBuffer, ctx.input_elem_type(input)});
}

// ---------------------------------------------------------------------------
// Weights larger than a descriptor can address.
//
// A storage-buffer descriptor spans at most maxStorageBufferRange bytes (128
// MiB on lavapipe and many mobile GPUs), and a classifier weight can be
// larger (vgg11's first Linear, 25088 x 4096, is 392 MiB in fp32). Such a
// constant B is uploaded as column chunks [.., K, width], each its own
// constant that binds whole, and the GEMM runs once per chunk: the chunk's
// kernel sees GEMM_N = width and stores its columns at GEMM_N0 .. of an
// output row of GEMM_NY columns. Both are parameters (specialization
// constants), so chunks of one width share a pipeline, and the output needs
// no copy. Chunks start at multiples of 4 (an image store writes the four
// columns of a texel, a chunk's last texel being padded only at the end of
// the row), at multiples of 64 (the widest tile) when that costs no extra
// chunk, and are balanced so that the last one is not a sliver.
//
// Limits: K is not split, so four columns (4 * K elements per batch of B)
// must fit in one descriptor, else the node runs on the host. Gemm's C is
// sliced with B when it is a constant varying along N; a C that would still
// not fit, a 1-D B, and activations (A, Y, a non-constant B) larger than the
// range are not split here (a huge intermediate is out of scope: the planner
// checks only constants against the range).

// How B's N columns are cut: `count` chunks of `width` columns, the last
// one narrower when `width` does not divide N.
struct ColumnSplit {
  int64_t width = 0;
  int64_t count = 1;
  bool split() const { return count > 1; }
};

int64_t round_up(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

// The split of a constant B (the node's input 1) of `numel` elements in `n`
// columns into chunks of at most `max_bytes` each in B's device precision:
// one chunk when the whole fits.
StatusOr<ColumnSplit> split_columns(LoweringContext& ctx, int64_t numel, int64_t n, uint64_t max_bytes) {
  const uint64_t depth = n > 0 ? static_cast<uint64_t>(numel / n) : 0;  // batch * K
  const uint64_t column_bytes = depth * elem_bytes(ctx.input_elem_type(1));
  if (column_bytes * static_cast<uint64_t>(n) <= max_bytes) return ColumnSplit{n, 1};
  const int64_t max_width = static_cast<int64_t>(max_bytes / column_bytes) / 4 * 4;
  if (max_width < 4)
    return ctx.unsupported("the weight needs splitting along K: 4 of its columns (" +
                           std::to_string(4 * column_bytes) + " bytes) exceed the storage-buffer range of " +
                           std::to_string(max_bytes) + " bytes");
  const int64_t count = (n + max_width - 1) / max_width;
  const int64_t even = (n + count - 1) / count;
  const int64_t width = round_up(even, 64) <= max_width ? round_up(even, 64) : round_up(even, 4);
  return ColumnSplit{width, (n + width - 1) / width};
}

// Columns [begin, begin + width) of `w`, a [outer][k][n] tensor (or with
// `trans`, outer = 1, its transpose [n][k]), as a row-major [outer][k][width]
// tensor of shape `shape`. Bytes are copied as they are (any dtype).
StatusOr<Tensor> column_slice(const Tensor& w, bool trans, int64_t k, int64_t n, int64_t begin, int64_t width,
                              Shape shape) {
  KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(w.dtype(), std::move(shape)));
  const size_t es = dtype_size(w.dtype());
  const auto* src = static_cast<const char*>(w.raw_data());
  auto* dst = static_cast<char*>(t.raw_data());
  const auto at = [es](int64_t i) { return static_cast<size_t>(i) * es; };
  if (!trans) {
    const int64_t rows = n > 0 ? w.numel() / n : 0;  // outer * k
    for (int64_t r = 0; r < rows; ++r) std::memcpy(dst + at(r * width), src + at(r * n + begin), at(width));
    return t;
  }
  for (int64_t kk = 0; kk < k; ++kk)
    for (int64_t j = 0; j < width; ++j) std::memcpy(dst + at(kk * width + j), src + at((begin + j) * k + kk), es);
  return t;
}

// `shape` with its last dim replaced by `width`.
Shape with_last(Shape shape, int64_t width) {
  shape.back() = width;
  return shape;
}

// The parameters placing a chunk's columns in the output (see above).
void add_column_params(GemmProblem& p, int64_t begin, int64_t n) {
  p.params.push_back({"GEMM_N0", ir::Dim(begin)});
  p.params.push_back({"GEMM_NY", ir::Dim(n)});
}

}  // namespace

std::string decompose_rows(size_t y_rank) {
  std::string s;
  if (y_rank < 2) return s;
  s += "  int row = b * GEMM_M + m;\n";
  for (size_t k = y_rank - 1; k-- > 1;)
    s += "  int c" + std::to_string(k) + " = row % " + dn("Y", k) + "; row /= " + dn("Y", k) + ";\n";
  s += "  int c0 = row;\n";
  return s;
}

std::string row_coords(size_t y_rank, const std::string& column) {
  std::string s;
  for (size_t k = 0; k + 1 < y_rank; ++k) s += "c" + std::to_string(k) + ", ";
  return s + column;
}

// ---------------------------------------------------------------------------
// MatMul: numpy matmul with 1-D promotion and broadcast batch dims.
//
// Y's row-major index of (batch b, row m, column n) is (b*M + m)*N + n also
// when A or B is 1-D (the dropped axes have size 1), so stores need no case
// analysis. When B has no batch axes, A's batch folds into M (one GEMM with
// batch*M rows: a transformer's [1, seq, d] x [d, e] fills whole tiles).

Status lower_matmul_limited(LoweringContext& ctx, uint64_t max_constant_bytes) {
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

  // A constant B (2-D or more) too large for one descriptor is cut into
  // column chunks; a 1-D B has a single column.
  const Tensor* w = ctx.input_constant(1);
  ColumnSplit cols;
  if (w && !b_vec) {
    KILN_ASSIGN_OR_RETURN(cols, split_columns(ctx, w->numel(), w->shape().back(),
                                              std::min(max_constant_bytes, ctx.target().max_storage_buffer_range)));
  }
  const std::string row_n = cols.split() ? "GEMM_NY" : "GEMM_N";
  const std::string col = cols.split() ? "GEMM_N0 + " : "";

  GemmProblem base;
  base.name = cols.split() ? "matmul_cols" : "matmul";
  base.a_tensor = "A";
  base.b_tensor = "B";
  base.tensors.push_back(ctx.bind("A", ctx.input(0)));
  // Images store four texel lanes along their packed axis: that must be N.
  const bool image_ok = !b_vec && ctx.layout(ctx.output(0)).packed_axis == static_cast<int>(sy.size()) - 1;
  const GemmOutput out = bind_gemm_output(ctx, image_ok);
  // Stored through a view that makes the rows contiguous (ConvNeXt's
  // channels-last Linear back to NCHW): neighbouring invocations store
  // neighbouring rows (same results).
  base.store_m_major = out.is_buffer() && ctx.m_major_store_hint();
  base.m = fold ? batch * m : m;
  base.batch = fold ? ir::Dim(1) : batch;
  base.k = k;
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
  // 16-byte units along K of A's rows (every row starts at a multiple of 8).
  if (k.is_const() && k.value() % 8 == 0)
    base.vector_helpers += fold ? "#define GEMM_A8 1\nuvec4 gemm_a8(int b, int m, int k) { return A_ld8h(m * GEMM_K + k); }\n"
                                : "#define GEMM_A8 1\nuvec4 gemm_a8(int b, int m, int k) {\n"
                                  "  return A_ld8h((gemm_a_batch(b) * GEMM_M + m) * GEMM_K + k);\n}\n";
  if (out.is_buffer()) {
    h += gemm_store4_buffer("(b * GEMM_M + m) * " + row_n + " + " + col + "nj");
  } else {
    h += gemm_store4_image(decompose_rows(sy.size()), row_coords(sy.size(), col + "n"));
  }
  base.helpers = std::move(h);

  for (int64_t c = 0; c < cols.count; ++c) {
    GemmProblem p = base;
    TensorId b;
    if (!w) {
      p.n = n;
      b = ctx.input(1);
    } else if (!cols.split()) {
      p.n = n;
      b = upload_float(ctx, *w, 1);
    } else {
      const int64_t begin = c * cols.width, width = std::min(cols.width, n.value() - begin);
      p.n = ir::Dim(width);
      add_column_params(p, begin, n.value());
      KILN_ASSIGN_OR_RETURN(Tensor chunk, column_slice(*w, false, w->dim(w->rank() - 2), n.value(), begin, width,
                                                       with_last(w->shape(), width)));
      b = upload_float(ctx, std::move(chunk), 1);
    }
    p.tensors.push_back(ctx.bind("B", b));
    p.tensors.push_back(out.y);
    if (p.n.is_const() && p.n.value() % 8 == 0)
      p.vector_helpers += "#define GEMM_B8 1\nuvec4 gemm_b8(int b, int k, int n) {\n"
                          "  return B_ld8h((gemm_b_batch(b) * GEMM_K + k) * GEMM_N + n);\n}\n";
    KILN_RETURN_IF_ERROR(emit_gemm(ctx, p));
  }
  finish_gemm_output(ctx, out);
  return ok_status();
}

// ---------------------------------------------------------------------------
// Gemm: Y = alpha * A' * B' + beta * C, C unidirectionally broadcast to [M, N].
//
// A constant B is uploaded as [K][N] (transposed when the node reads it
// transposed), in column chunks when it exceeds the range (see above).

Status lower_gemm_limited(LoweringContext& ctx, uint64_t max_constant_bytes) {
  if (!dtype_is_float(ctx.input_dtype(0))) return ctx.unsupported("integer Gemm accumulates exactly on the host");
  const std::vector<ir::Dim>& sa = ctx.input_shape(0);
  const std::vector<ir::Dim>& sb = ctx.input_shape(1);
  const std::vector<ir::Dim>& sy = ctx.output_shape(0);
  if (sa.size() != 2 || sb.size() != 2) return ctx.error("Gemm operands must be 2-D");
  const bool trans_a = ctx.node().attr_int("transA", 0) != 0;
  const bool trans_b = ctx.node().attr_int("transB", 0) != 0;
  const double alpha = ctx.node().attr_float("alpha", 1.0f);
  const double beta = ctx.node().attr_float("beta", 1.0f);

  const Tensor* w = ctx.input_constant(1);
  ColumnSplit cols;
  if (w) {
    const int64_t n = w->dim(trans_b ? 0 : 1);
    KILN_ASSIGN_OR_RETURN(cols, split_columns(ctx, w->numel(), n,
                                              std::min(max_constant_bytes, ctx.target().max_storage_buffer_range)));
  }
  const std::string row_n = cols.split() ? "GEMM_NY" : "GEMM_N";
  const std::string col = cols.split() ? "GEMM_N0 + " : "";

  GemmProblem base;
  base.name = cols.split() ? "gemm_cols" : "gemm";
  base.a_tensor = "A";
  base.b_tensor = "B";
  base.m = sy[0];
  base.k = trans_a ? sa[0] : sa[1];
  base.a_m_fastest = trans_a;  // A^T is [K][M]: neighbouring m are adjacent
  base.tensors.push_back(ctx.bind("A", ctx.input(0)));
  std::string h = trans_a ? "float gemm_a(int b, int m, int k) { return A_at(k, m); }\n"
                          : "float gemm_a(int b, int m, int k) { return A_at(m, k); }\n";
  if (w) {
    h += "float gemm_b(int b, int k, int n) { return B_ld(k * GEMM_N + n); }\n";
  } else {
    h += trans_b ? "float gemm_b(int b, int k, int n) { return B_at(n, k); }\n"
                 : "float gemm_b(int b, int k, int n) { return B_at(k, n); }\n";
  }
  std::string epi = "acc";
  if (alpha != 1.0) epi = glsl_float(alpha) + " * acc";
  // C, when it counts: sliced with B's columns when it is a constant that
  // varies along N (it then reads the chunk's own column n), else read at
  // the output column.
  const Tensor* c_const = nullptr;
  std::optional<KernelTensor> c_whole;
  if (ctx.has_input(2) && beta != 0.0) {
    const std::vector<ir::Dim>& sc = ctx.input_shape(2);
    if (sc.size() > 2) return ctx.error("Gemm C must have rank <= 2");
    c_const = ctx.input_constant(2);
    const bool c_sliced = cols.split() && c_const && c_const->rank() >= 1 && c_const->shape().back() != 1;
    if (!c_sliced) c_const = nullptr;
    // Per axis of C (right-aligned to [M, N]): a constant 1 reads 0, else
    // the coordinate (checked at run time when symbolic).
    const std::string coord[2] = {"m", c_sliced ? "n" : "(" + col + "n)"};
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
    if (!c_sliced) c_whole = ctx.bind("C", ctx.input(2));
  }
  h += "float gemm_epilogue(int b, int m, int n, float acc) { return " + epi + "; }\n";
  if (!trans_a && base.k.is_const() && base.k.value() % 8 == 0)
    base.vector_helpers = "#define GEMM_A8 1\nuvec4 gemm_a8(int b, int m, int k) { return A_ld8h(m * GEMM_K + k); }\n";
  const GemmOutput out = bind_gemm_output(ctx, ctx.layout(ctx.output(0)).packed_axis == 1);
  base.store_m_major = out.is_buffer() && ctx.m_major_store_hint();  // as MatMul's
  h += out.is_buffer() ? gemm_store4_buffer("m * " + row_n + " + " + col + "nj")
                       : gemm_store4_image("", "m, " + col + "n");
  base.helpers = std::move(h);

  for (int64_t c = 0; c < cols.count; ++c) {
    GemmProblem p = base;
    if (!w) {
      p.n = sy[1];
      p.tensors.push_back(ctx.bind("B", ctx.input(1)));
    } else {
      const int64_t wn = w->dim(trans_b ? 0 : 1), wk = w->dim(trans_b ? 1 : 0);
      const int64_t begin = c * cols.width, width = std::min(cols.width, wn - begin);
      p.n = ir::Dim(width);
      Tensor kn = *w;
      if (trans_b || cols.split()) {
        KILN_ASSIGN_OR_RETURN(kn, column_slice(*w, trans_b, wk, wn, begin, width, {wk, width}));
      }
      p.tensors.push_back(ctx.bind("B", upload_float(ctx, std::move(kn), 1)));
      if (cols.split()) add_column_params(p, begin, wn);
      if (c_const) {
        // C is [N] or [M', N] here: its rows sliced like B's.
        const int64_t cn = c_const->shape().back();
        KILN_ASSIGN_OR_RETURN(Tensor cs, column_slice(*c_const, false, c_const->numel() / cn, cn, begin, width,
                                                      with_last(c_const->shape(), width)));
        p.tensors.push_back(ctx.bind("C", upload_float(ctx, std::move(cs), 2)));
      }
    }
    if (c_whole) p.tensors.push_back(*c_whole);
    p.tensors.push_back(out.y);
    // B is [K][N] row-major here unless a transposed activation.
    if ((w || !trans_b) && p.n.is_const() && p.n.value() % 8 == 0)
      p.vector_helpers += "#define GEMM_B8 1\nuvec4 gemm_b8(int b, int k, int n) { return B_ld8h(k * GEMM_N + n); }\n";
    KILN_RETURN_IF_ERROR(emit_gemm(ctx, p));
  }
  finish_gemm_output(ctx, out);
  return ok_status();
}

namespace {

Status lower_matmul(LoweringContext& ctx) { return lower_matmul_limited(ctx, UINT64_MAX); }
Status lower_gemm(LoweringContext& ctx) { return lower_gemm_limited(ctx, UINT64_MAX); }

}  // namespace

void register_linalg_lowerings(LoweringRegistry& r) {
  r.add("", "MatMul", lower_matmul);
  r.add("", "Gemm", lower_gemm);
  r.add("", "Conv", lower_conv);
  r.add("", "ConvTranspose", lower_conv_transpose);
}

}  // namespace kiln::planner
