// Op family 'linalg': MatMul, Gemm, Conv, ConvTranspose and Einsum —
// schemas, symbolic shape inference and reference kernels. MatMul and Gemm
// live here; the others in linalg_conv.cc and linalg_einsum.cc.
//
// float32 runs through the blocked sgemm (gemm_kernel.h) because the
// reference executor runs whole models in tests: convolutions become
// im2col x GEMM with the im2col matrix generated while B is packed (1x1
// convolutions read the input directly), depthwise convolutions use a direct
// loop, and ConvTranspose is GEMM + col2im. Every other dtype takes a plain
// loop accumulating in double (floats) or modular 64-bit integers (ints), so
// it is exact up to the final rounding.
#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <type_traits>

#include "engine/ops/broadcast.h"
#include "engine/ops/gemm_kernel.h"
#include "engine/ops/linalg_internal.h"
#include "engine/ops/op_registry.h"

namespace kiln::ops {

namespace {

std::string dt_name(DType t) { return std::string(dtype_name(t)); }

bool matmul_dtype_ok(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kFloat64 || t == DType::kInt32 ||
         t == DType::kInt64 || t == DType::kUInt32 || t == DType::kUInt64;
}

}  // namespace

// ---------------------------------------------------------------------------
// MatMul (numpy matmul: 1-D promotion, broadcast batch dims)

Status infer_matmul(InferContext& ctx) {
  const DType dt = ctx.input_dtype(0);
  if (ctx.input_dtype(1) != dt)
    return ctx.error("A has dtype " + dt_name(dt) + " but B has dtype " + dt_name(ctx.input_dtype(1)));
  if (!matmul_dtype_ok(dt)) return ctx.error("dtype " + dt_name(dt) + " is not supported (float, int32/64, uint32/64)");
  const ir::SymShape& a = ctx.input_shape(0);
  const ir::SymShape& b = ctx.input_shape(1);
  if ((a.has_rank && a.rank() == 0) || (b.has_rank && b.rank() == 0))
    return ctx.error(std::string(a.has_rank && a.rank() == 0 ? "A" : "B") + " is a scalar; MatMul needs rank >= 1");
  if (!a.has_rank || !b.has_rank) {
    ctx.set_output(0, dt, ir::SymShape::unranked());
    return ok_status();
  }
  const bool a_vec = a.rank() == 1, b_vec = b.rank() == 1;
  std::vector<ir::Dim> ad = a.dims, bd = b.dims;
  if (a_vec) ad.insert(ad.begin(), ir::Dim(1));
  if (b_vec) bd.push_back(ir::Dim(1));
  const ir::Dim& ka = ad[ad.size() - 1];
  const ir::Dim& kb = bd[bd.size() - 2];
  if (ka.is_const() && kb.is_const() && ka.value() != kb.value())
    return ctx.error("inner dimensions differ: A " + a.to_string() + " has K = " + ka.to_string() + " but B " +
                     b.to_string() + " has K = " + kb.to_string());
  ir::SymShape a_batch(std::vector<ir::Dim>(ad.begin(), ad.end() - 2));
  ir::SymShape b_batch(std::vector<ir::Dim>(bd.begin(), bd.end() - 2));
  auto batch = broadcast_shapes(a_batch, b_batch);
  if (!batch.ok())
    return ctx.error("batch dimensions of A " + a.to_string() + " and B " + b.to_string() + " do not broadcast");
  std::vector<ir::Dim> out = batch->dims;
  if (!a_vec) out.push_back(ad[ad.size() - 2]);
  if (!b_vec) out.push_back(bd[bd.size() - 1]);
  ctx.set_output(0, dt, ir::SymShape(std::move(out)));
  return ok_status();
}

namespace {

template <typename T>
constexpr bool kIsFloat = std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, Half>;

// Exact small-matrix product for the dtypes without a fast path: C[m,n] =
// sum_k A(i,k) B(k,j), doubles for floats, modular uint64 for integers.
template <typename T>
void matmul_exact(const T* a, int64_t a_rs, int64_t a_cs, const T* b, int64_t b_rs, int64_t b_cs, T* c, int64_t m,
                  int64_t n, int64_t k) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      if constexpr (kIsFloat<T>) {
        double acc = 0.0;
        for (int64_t p = 0; p < k; ++p) acc += to_f64(a[i * a_rs + p * a_cs]) * to_f64(b[p * b_rs + j * b_cs]);
        c[i * n + j] = from_f64<T>(acc);
      } else {
        uint64_t acc = 0;
        for (int64_t p = 0; p < k; ++p)
          acc += static_cast<uint64_t>(a[i * a_rs + p * a_cs]) * static_cast<uint64_t>(b[p * b_rs + j * b_cs]);
        c[i * n + j] = static_cast<T>(acc);
      }
    }
}

Status first_error(std::vector<Status>& statuses) {
  for (Status& s : statuses)
    if (!s.ok()) return std::move(s);
  return ok_status();
}

Status matmul_kernel(KernelContext& ctx) {
  const Tensor& ta = ctx.input(0);
  const Tensor& tb = ctx.input(1);
  KILN_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0));
  Shape as = ta.shape(), bs = tb.shape();
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  const int64_t m = as[as.size() - 2], k = as[as.size() - 1], n = bs[bs.size() - 1];
  const Shape a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
  KILN_ASSIGN_OR_RETURN(Shape batch, broadcast_shapes(a_batch, b_batch));
  const int64_t batches = shape_numel(batch);
  if (out->numel() == 0) return ok_status();

  // Per-batch offsets (elements) into A and B.
  std::vector<int64_t> a_off(static_cast<size_t>(batches)), b_off(static_cast<size_t>(batches));
  BroadcastIndexer ia(a_batch, batch), ib(b_batch, batch);
  for (int64_t t = 0; t < batches; ++t, ia.next(), ib.next()) {
    a_off[static_cast<size_t>(t)] = ia.index() * m * k;
    b_off[static_cast<size_t>(t)] = ib.index() * k * n;
  }

  if (ta.dtype() != DType::kFloat32) {
    bool done = visit_dtype(ta.dtype(), [&]<typename T>() {
      if constexpr (!std::is_same_v<T, bool>) {
        for (int64_t t = 0; t < batches; ++t)
          matmul_exact<T>(ta.data<T>() + a_off[static_cast<size_t>(t)], k, 1, tb.data<T>() + b_off[static_cast<size_t>(t)],
                          n, 1, out->data<T>() + t * m * n, m, n, k);
      }
    });
    if (!done) return ctx.error("unsupported dtype");
    return ok_status();
  }

  const int threads = cpu_thread_count();
  const float* a = ta.data<float>();
  const float* b = tb.data<float>();
  float* c = out->data<float>();
  // B shared by every batch and A not broadcast: one GEMM with batches*m rows.
  if (shape_numel(b_batch) == 1 && shape_numel(a_batch) == batches) {
    StridedMatrix bm{b, n, 1};
    SgemmArgs args;
    args.m = batches * m;
    args.n = n;
    args.k = k;
    args.a = StridedMatrix{a, k, 1};
    args.b = strided_b_source(&bm);
    args.c = c;
    args.ldc = n;
    return sgemm(args, threads);
  }
  // Small per-batch products run one per thread; large ones use all threads.
  const bool per_batch_threads = batches >= 2 && (m * n * k < (int64_t{1} << 22) || batches >= 4 * threads);
  std::vector<Status> statuses(static_cast<size_t>(batches));
  auto run_batch = [&](int64_t t, int inner_threads) {
    StridedMatrix bm{b + b_off[static_cast<size_t>(t)], n, 1};
    SgemmArgs args;
    args.m = m;
    args.n = n;
    args.k = k;
    args.a = StridedMatrix{a + a_off[static_cast<size_t>(t)], k, 1};
    args.b = strided_b_source(&bm);
    args.c = c + t * m * n;
    args.ldc = n;
    statuses[static_cast<size_t>(t)] = sgemm(args, inner_threads);
  };
  if (per_batch_threads) {
    parallel_for(batches, threads, [&](int64_t t, int) { run_batch(t, 1); });
  } else {
    for (int64_t t = 0; t < batches; ++t) run_batch(t, threads);
  }
  return first_error(statuses);
}

// ---------------------------------------------------------------------------
// Gemm: Y = alpha * A' * B' + beta * C, A' = transA ? A^T : A, likewise B'.

Status infer_gemm(InferContext& ctx) {
  const DType dt = ctx.input_dtype(0);
  if (ctx.input_dtype(1) != dt)
    return ctx.error("A has dtype " + dt_name(dt) + " but B has dtype " + dt_name(ctx.input_dtype(1)));
  if (ctx.has_input(2) && ctx.input_dtype(2) != dt)
    return ctx.error("C has dtype " + dt_name(ctx.input_dtype(2)) + " but A has dtype " + dt_name(dt));
  if (!matmul_dtype_ok(dt)) return ctx.error("dtype " + dt_name(dt) + " is not supported (float, int32/64, uint32/64)");
  if (!dtype_is_float(dt)) {
    const float alpha = ctx.node().attr_float("alpha", 1.0f), beta = ctx.node().attr_float("beta", 1.0f);
    auto integral = [](float v) { return std::isfinite(v) && std::fabs(v) < 9.0e18f && std::nearbyint(v) == v; };
    if (!integral(alpha) || !integral(beta))
      return ctx.error("integer Gemm needs integral alpha and beta, got alpha = " + std::to_string(alpha) +
                       ", beta = " + std::to_string(beta));
  }
  const ir::SymShape& a = ctx.input_shape(0);
  const ir::SymShape& b = ctx.input_shape(1);
  if (a.has_rank && a.rank() != 2) return ctx.error("A must be 2-D, got shape " + a.to_string());
  if (b.has_rank && b.rank() != 2) return ctx.error("B must be 2-D, got shape " + b.to_string());
  const bool trans_a = ctx.node().attr_int("transA", 0) != 0;
  const bool trans_b = ctx.node().attr_int("transB", 0) != 0;
  const ir::Dim m = a.has_rank ? a.dims[trans_a ? 1 : 0] : ir::Dim();
  const ir::Dim ka = a.has_rank ? a.dims[trans_a ? 0 : 1] : ir::Dim();
  const ir::Dim kb = b.has_rank ? b.dims[trans_b ? 1 : 0] : ir::Dim();
  const ir::Dim n = b.has_rank ? b.dims[trans_b ? 0 : 1] : ir::Dim();
  if (ka.is_const() && kb.is_const() && ka.value() != kb.value())
    return ctx.error("inner dimensions differ: A " + a.to_string() + (trans_a ? " (transposed)" : "") + " has K = " +
                     ka.to_string() + " but B " + b.to_string() + (trans_b ? " (transposed)" : "") + " has K = " +
                     kb.to_string());
  if (ctx.has_input(2)) {
    const ir::SymShape& c = ctx.input_shape(2);
    if (c.has_rank) {
      if (c.rank() > 2) return ctx.error("C must have rank <= 2 to broadcast to [M, N], got " + c.to_string());
      const ir::Dim target[2] = {m, n};
      for (int64_t i = 0; i < c.rank(); ++i) {
        const ir::Dim& d = c.dims[static_cast<size_t>(i)];
        const ir::Dim& t = target[2 - c.rank() + i];
        if (d.is_const() && d.value() != 1 && t.is_const() && d.value() != t.value())
          return ctx.error("C " + c.to_string() + " does not broadcast to the output [" + m.to_string() + "," +
                           n.to_string() + "]");
      }
    }
  }
  ctx.set_output(0, dt, ir::SymShape({m, n}));
  return ok_status();
}

Status gemm_kernel(KernelContext& ctx) {
  const Tensor& ta = ctx.input(0);
  const Tensor& tb = ctx.input(1);
  const bool has_c = ctx.has_input(2);
  const bool trans_a = ctx.node().attr_int("transA", 0) != 0;
  const bool trans_b = ctx.node().attr_int("transB", 0) != 0;
  const float alpha = ctx.node().attr_float("alpha", 1.0f);
  const float beta = ctx.node().attr_float("beta", 1.0f);
  KILN_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0));
  const int64_t m = out->dim(0), n = out->dim(1);
  const int64_t k = trans_a ? ta.dim(0) : ta.dim(1);
  const int64_t a_rs = trans_a ? 1 : k, a_cs = trans_a ? m : 1;
  const int64_t b_rs = trans_b ? 1 : n, b_cs = trans_b ? k : 1;
  if (out->numel() == 0) return ok_status();
  // Row/column strides of C broadcast to [m, n].
  int64_t c_rs = 0, c_cs = 0;
  if (has_c) {
    const Shape& cs = ctx.input(2).shape();
    const int64_t c_rows = cs.size() == 2 ? cs[0] : 1;
    const int64_t c_cols = cs.empty() ? 1 : cs.back();
    c_cs = c_cols == 1 ? 0 : 1;
    c_rs = c_rows == 1 ? 0 : c_cols;
  }

  if (ta.dtype() == DType::kFloat32) {
    float* y = out->data<float>();
    const bool add_c = has_c && beta != 0.0f;
    if (add_c) {
      const float* c = ctx.input(2).data<float>();
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) y[i * n + j] = beta * c[i * c_rs + j * c_cs];
    }
    StridedMatrix bm{tb.data<float>(), b_rs, b_cs};
    SgemmArgs args;
    args.m = m;
    args.n = n;
    args.k = k;
    args.alpha = alpha;
    args.a = StridedMatrix{ta.data<float>(), a_rs, a_cs};
    args.b = strided_b_source(&bm);
    args.c = y;
    args.ldc = n;
    args.accumulate = add_c;
    return sgemm(args, cpu_thread_count());
  }

  bool done = visit_dtype(ta.dtype(), [&]<typename T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      const T* a = ta.data<T>();
      const T* b = tb.data<T>();
      const T* c = has_c ? ctx.input(2).data<T>() : nullptr;
      T* y = out->data<T>();
      matmul_exact<T>(a, a_rs, a_cs, b, b_rs, b_cs, y, m, n, k);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          T& v = y[i * n + j];
          if constexpr (kIsFloat<T>) {
            double r = static_cast<double>(alpha) * to_f64(v);
            if (c) r += static_cast<double>(beta) * to_f64(c[i * c_rs + j * c_cs]);
            v = from_f64<T>(r);
          } else {
            // Integral alpha/beta (checked in inference); modular arithmetic.
            uint64_t r = static_cast<uint64_t>(static_cast<int64_t>(alpha)) * static_cast<uint64_t>(v);
            if (c) r += static_cast<uint64_t>(static_cast<int64_t>(beta)) * static_cast<uint64_t>(c[i * c_rs + j * c_cs]);
            v = static_cast<T>(r);
          }
        }
    }
  });
  if (!done) return ctx.error("unsupported dtype");
  return ok_status();
}

}  // namespace

void register_linalg_ops(OpRegistry& r) {
  // A duplicate name is a programmer error in the registration code.
  auto add = [&r](OpSchema schema, MappingType mapping) {
    schema.mapping = mapping;
    [[maybe_unused]] Status s = r.add(std::move(schema));
    assert(s.ok());
  };
  add({"MatMul", "", 2, 2, 1, 1, infer_matmul, matmul_kernel}, MappingType::kManyToMany);
  add({"Gemm", "", 2, 3, 1, 1, infer_gemm, gemm_kernel}, MappingType::kManyToMany);
  add({"Conv", "", 2, 3, 1, 1, infer_conv, conv_kernel}, MappingType::kManyToMany);
  add({"ConvTranspose", "", 2, 3, 1, 1, infer_conv_transpose, conv_transpose_kernel}, MappingType::kManyToMany);
  add({"Einsum", "", 1, -1, 1, 1, infer_einsum, einsum_kernel}, MappingType::kManyToMany);
}

}  // namespace kiln::ops
