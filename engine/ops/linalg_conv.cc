// Conv and ConvTranspose: shape inference and reference kernels; see
// linalg_conv.h.
//
// float32 Conv is im2col x GEMM per (image, group) with the im2col matrix
// produced row segment by row segment while sgemm packs B (never stored
// whole); 1x1 stride-1 unpadded convolutions hand the input to sgemm as is.
// Depthwise convolutions (one input channel per group) are a direct loop per
// channel, since a GEMM with one row would be all overhead. float32
// ConvTranspose is GEMM (W^T x X) followed by col2im. float16 and float64
// use direct loops accumulating in double.
#include "engine/ops/linalg_internal.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "engine/ops/conv_direct.h"
#include "engine/ops/gemm_kernel.h"
#include "engine/ops/window_util.h"

namespace kiln::ops {

namespace {

std::string dt_name(DType t) { return std::string(dtype_name(t)); }

bool conv_dtype_ok(DType t) { return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kFloat64; }

// Checks dtypes and ranks of X, W and B; returns the common rank or -1 when
// neither X nor W is ranked.
StatusOr<int64_t> check_conv_inputs(const InferContext& ctx) {
  const DType dt = ctx.input_dtype(0);
  if (!conv_dtype_ok(dt)) return ctx.error("X has dtype " + dt_name(dt) + "; expected float16, float32 or float64");
  if (ctx.input_dtype(1) != dt)
    return ctx.error("W has dtype " + dt_name(ctx.input_dtype(1)) + " but X has dtype " + dt_name(dt));
  if (ctx.has_input(2) && ctx.input_dtype(2) != dt)
    return ctx.error("B has dtype " + dt_name(ctx.input_dtype(2)) + " but X has dtype " + dt_name(dt));
  const ir::SymShape& xs = ctx.input_shape(0);
  const ir::SymShape& ws = ctx.input_shape(1);
  if (xs.has_rank && xs.rank() < 3)
    return ctx.error("X must have rank >= 3 ([N, C, spatial...]), got " + xs.to_string());
  if (ws.has_rank && ws.rank() < 3)
    return ctx.error("W must have rank >= 3 ([M, C/group, kernel...]), got " + ws.to_string());
  if (xs.has_rank && ws.has_rank && xs.rank() != ws.rank())
    return ctx.error("X " + xs.to_string() + " and W " + ws.to_string() + " must have the same rank");
  if (ctx.has_input(2) && ctx.input_shape(2).has_rank && ctx.input_shape(2).rank() != 1)
    return ctx.error("B must be 1-D, got " + ctx.input_shape(2).to_string());
  if (xs.has_rank) return xs.rank();
  if (ws.has_rank) return ws.rank();
  return int64_t{-1};
}

ir::Dim dim_or_unknown(const ir::SymShape& s, size_t i) { return s.has_rank ? s.dims[i] : ir::Dim(); }

// Kernel dims: kernel_shape when given (checked against W), else W's.
StatusOr<std::vector<ir::Dim>> kernel_dims(const InferContext& ctx, const WindowAttrs& w, size_t spatial) {
  const ir::SymShape& ws = ctx.input_shape(1);
  std::vector<ir::Dim> k(spatial);
  for (size_t i = 0; i < spatial; ++i) {
    const ir::Dim wd = dim_or_unknown(ws, 2 + i);
    if (w.kernel.empty()) {
      k[i] = wd;
      continue;
    }
    if (wd.is_const() && wd.value() != w.kernel[i])
      return ctx.error("kernel_shape[" + std::to_string(i) + "] = " + std::to_string(w.kernel[i]) +
                       " does not match W " + ws.to_string());
    k[i] = ir::Dim(w.kernel[i]);
  }
  return k;
}

StatusOr<int64_t> read_group(const InferContext& ctx) {
  const int64_t group = ctx.node().attr_int("group", 1);
  if (group < 1) return ctx.error("group = " + std::to_string(group) + " must be positive");
  return group;
}

Status check_bias(const InferContext& ctx, const ir::Dim& m) {
  if (!ctx.has_input(2) || !ctx.input_shape(2).has_rank) return ok_status();
  const ir::Dim& b = ctx.input_shape(2).dims[0];
  if (b.is_const() && m.is_const() && b.value() != m.value())
    return ctx.error("B has " + b.to_string() + " elements but the output has " + m.to_string() + " channels");
  return ok_status();
}

std::string window_desc(const WindowAttrs& w, size_t i, const ir::Dim& in, const ir::Dim& k) {
  const size_t n = w.strides.size();
  return "input " + in.to_string() + ", kernel " + k.to_string() + ", stride " + std::to_string(w.strides[i]) +
         ", dilation " + std::to_string(w.dilations[i]) + ", pads " + std::to_string(w.pads[i]) + "+" +
         std::to_string(w.pads[i + n]);
}

}  // namespace

// ---------------------------------------------------------------------------
// Conv shape inference

Status infer_conv(InferContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const int64_t rank, check_conv_inputs(ctx));
  const DType dt = ctx.input_dtype(0);
  if (rank < 0) {
    ctx.set_output(0, dt, ir::SymShape::unranked());
    return ok_status();
  }
  const size_t spatial = static_cast<size_t>(rank - 2);
  KILN_ASSIGN_OR_RETURN(const WindowAttrs w, read_window_attrs(ctx.node(), spatial, false));
  KILN_ASSIGN_OR_RETURN(const int64_t group, read_group(ctx));
  const ir::SymShape& xs = ctx.input_shape(0);
  const ir::SymShape& ws = ctx.input_shape(1);
  KILN_ASSIGN_OR_RETURN(const std::vector<ir::Dim> k, kernel_dims(ctx, w, spatial));

  const ir::Dim c = dim_or_unknown(xs, 1), wc = dim_or_unknown(ws, 1), m = dim_or_unknown(ws, 0);
  if (c.is_const() && wc.is_const() && c.value() != wc.value() * group)
    return ctx.error("X has " + c.to_string() + " channels but W " + ws.to_string() + " expects W.shape[1] * group = " +
                     wc.to_string() + " * " + std::to_string(group) + " = " + std::to_string(wc.value() * group));
  if (m.is_const() && m.value() % group != 0)
    return ctx.error("W has " + m.to_string() + " output channels, not divisible by group = " + std::to_string(group));
  KILN_RETURN_IF_ERROR(check_bias(ctx, m));

  std::vector<ir::Dim> out = {dim_or_unknown(xs, 0), m};
  for (size_t i = 0; i < spatial; ++i) {
    const ir::Dim in = dim_or_unknown(xs, 2 + i);
    ir::Dim o = window_output_dim(w, i, in, k[i]);
    if (o.is_const() && o.value() <= 0)
      return ctx.error("spatial axis " + std::to_string(i) + " would have output size " + o.to_string() + " (" +
                       window_desc(w, i, in, k[i]) + ")");
    out.push_back(std::move(o));
  }
  ctx.set_output(0, dt, ir::SymShape(std::move(out)));
  return ok_status();
}

// ---------------------------------------------------------------------------
// ConvTranspose shape inference

namespace {

struct TransposeAttrs {
  std::vector<int64_t> output_padding;
  std::vector<int64_t> output_shape;  // spatial sizes; empty when absent
};

StatusOr<TransposeAttrs> read_transpose_attrs(const ir::Node& node, size_t spatial) {
  TransposeAttrs t;
  t.output_padding = node.attr_ints("output_padding", std::vector<int64_t>(spatial, 0));
  if (t.output_padding.size() != spatial)
    return invalid_argument(node.describe() + ": output_padding has " + std::to_string(t.output_padding.size()) +
                            " values, expected " + std::to_string(spatial));
  for (size_t i = 0; i < spatial; ++i)
    if (t.output_padding[i] < 0)
      return invalid_argument(node.describe() + ": output_padding[" + std::to_string(i) + "] = " +
                              std::to_string(t.output_padding[i]) + " must be non-negative");
  if (node.attr("output_shape")) {
    std::vector<int64_t> os = node.attr_ints("output_shape");
    // Some exporters write the full [N, C, spatial...] shape.
    if (os.size() == spatial + 2) os.erase(os.begin(), os.begin() + 2);
    if (os.size() != spatial)
      return invalid_argument(node.describe() + ": output_shape has " + std::to_string(os.size()) +
                              " values, expected " + std::to_string(spatial) + " (one per spatial axis)");
    for (size_t i = 0; i < spatial; ++i)
      if (os[i] <= 0)
        return invalid_argument(node.describe() + ": output_shape[" + std::to_string(i) + "] = " +
                                std::to_string(os[i]) + " must be positive");
    t.output_shape = std::move(os);
  }
  return t;
}

}  // namespace

Status infer_conv_transpose(InferContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const int64_t rank, check_conv_inputs(ctx));
  const DType dt = ctx.input_dtype(0);
  if (rank < 0) {
    ctx.set_output(0, dt, ir::SymShape::unranked());
    return ok_status();
  }
  const size_t spatial = static_cast<size_t>(rank - 2);
  KILN_ASSIGN_OR_RETURN(const WindowAttrs w, read_window_attrs(ctx.node(), spatial, false));
  KILN_ASSIGN_OR_RETURN(const TransposeAttrs t, read_transpose_attrs(ctx.node(), spatial));
  KILN_ASSIGN_OR_RETURN(const int64_t group, read_group(ctx));
  const ir::SymShape& xs = ctx.input_shape(0);
  const ir::SymShape& ws = ctx.input_shape(1);
  KILN_ASSIGN_OR_RETURN(const std::vector<ir::Dim> k, kernel_dims(ctx, w, spatial));

  const ir::Dim c = dim_or_unknown(xs, 1), wc = dim_or_unknown(ws, 0);
  if (c.is_const() && wc.is_const() && c.value() != wc.value())
    return ctx.error("X has " + c.to_string() + " channels but W " + ws.to_string() +
                     " has W.shape[0] = " + wc.to_string() + " (ConvTranspose W is [C, M/group, kernel...])");
  if (c.is_const() && c.value() % group != 0)
    return ctx.error("X has " + c.to_string() + " channels, not divisible by group = " + std::to_string(group));
  const ir::Dim m = dim_or_unknown(ws, 1) * ir::Dim(group);
  KILN_RETURN_IF_ERROR(check_bias(ctx, m));

  std::vector<ir::Dim> out = {dim_or_unknown(xs, 0), m};
  const size_t n = spatial;
  for (size_t i = 0; i < spatial; ++i) {
    const ir::Dim in = dim_or_unknown(xs, 2 + i);
    const int64_t s = w.strides[i];
    ir::Dim o;
    if (!t.output_shape.empty()) {
      o = ir::Dim(t.output_shape[i]);
    } else if (w.auto_pad == AutoPad::kSameUpper || w.auto_pad == AutoPad::kSameLower) {
      o = in * ir::Dim(s);
    } else {
      // s * (in - 1) + output_padding + dilated kernel - pads
      const ir::Dim eff = dilated_kernel(k[i], w.dilations[i]);
      const int64_t extra = t.output_padding[i] - w.pads[i] - w.pads[i + n];
      const ir::Dim base = (in - ir::Dim(1)) * ir::Dim(s);
      o = eff.is_const() ? base + ir::Dim(eff.value() + extra)
                         : (extra >= 0 ? base + eff + ir::Dim(extra) : base + eff - ir::Dim(-extra));
    }
    if (o.is_const() && o.value() <= 0)
      return ctx.error("spatial axis " + std::to_string(i) + " would have output size " + o.to_string() + " (" +
                       window_desc(w, i, in, k[i]) + ", output_padding " + std::to_string(t.output_padding[i]) + ")");
    out.push_back(std::move(o));
  }
  ctx.set_output(0, dt, ir::SymShape(std::move(out)));
  return ok_status();
}

// ---------------------------------------------------------------------------
// Kernels

namespace {

// The im2col matrix of one image and channel group, produced on demand:
// row k = (c, kd, kh, kw), column j = (od, oh, ow).
struct Im2col {
  const float* x;  // first channel of the group
  Geometry3 g;
};

// Writes im2col(k, j0 .. j0+n-1). Walks output rows; within a row the valid
// output columns form one range computed in closed form, so the inner loop
// has no bounds checks (and is a memcpy at stride 1).
void im2col_fill(const void* ctx, int64_t k, int64_t j0, int64_t n, float* dst) {
  const auto& ic = *static_cast<const Im2col*>(ctx);
  const Geometry3& g = ic.g;
  const int64_t kw = k % g.kernel[2];
  int64_t t = k / g.kernel[2];
  const int64_t kh = t % g.kernel[1];
  t /= g.kernel[1];
  const int64_t kd = t % g.kernel[0];
  const int64_t c = t / g.kernel[0];
  int64_t ow = j0 % g.out[2];
  t = j0 / g.out[2];
  int64_t oh = t % g.out[1];
  int64_t od = t / g.out[1];
  const int64_t off = kw * g.dilation[2] - g.pad_begin[2];
  const int64_t sw = g.stride[2];
  // Output columns whose input column is inside [0, in[2]).
  const int64_t lo_all = std::clamp<int64_t>(ceil_div_i64(-off, sw), 0, g.out[2]);
  const int64_t hi_all = std::clamp<int64_t>(floor_div_i64(g.in[2] - 1 - off, sw) + 1, lo_all, g.out[2]);
  while (n > 0) {
    const int64_t run = std::min(n, g.out[2] - ow);
    const int64_t id = od * g.stride[0] - g.pad_begin[0] + kd * g.dilation[0];
    const int64_t ih = oh * g.stride[1] - g.pad_begin[1] + kh * g.dilation[1];
    if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1]) {
      std::fill(dst, dst + run, 0.0f);
    } else {
      const float* src = ic.x + ((c * g.in[0] + id) * g.in[1] + ih) * g.in[2];
      const int64_t lo = std::clamp(lo_all, ow, ow + run), hi = std::clamp(hi_all, lo, ow + run);
      std::fill(dst, dst + (lo - ow), 0.0f);
      if (sw == 1) {
        std::copy(src + lo + off, src + hi + off, dst + (lo - ow));
      } else {
        for (int64_t o = lo; o < hi; ++o) dst[o - ow] = src[o * sw + off];
      }
      std::fill(dst + (hi - ow), dst + run, 0.0f);
    }
    dst += run;
    n -= run;
    ow = 0;
    if (++oh == g.out[1]) {
      oh = 0;
      ++od;
    }
  }
}

// y[i] += w * x[i] for i < n, eight lanes at a time: at -O2 GCC does not
// vectorize loops that need a scalar epilogue, so the lanes are explicit.
void axpy_row(float* y, const float* x, float w, int64_t n) {
  typedef float V __attribute__((vector_size(8 * sizeof(float))));
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    V xv, yv;
    std::memcpy(&xv, x + i, sizeof(V));
    std::memcpy(&yv, y + i, sizeof(V));
    yv += xv * w;
    std::memcpy(y + i, &yv, sizeof(V));
  }
  for (; i < n; ++i) y[i] += w * x[i];
}

// One kernel row of a stride-1 depthwise convolution: yrow[o] += sum over kw
// of wrow[kw] * xrow[o + kw*dilation - pad]. Where every tap is inside the
// input row, VL outputs stay in a register across all taps; the border
// columns take the bounds-checked path. Both add the taps in kw order.
// Compiled per ISA like the sgemm micro-kernel (native vector width, so the
// accumulator never leaves its register).
template <int VL>
[[gnu::always_inline]] inline void depthwise_row_s1_body(float* yrow, const float* xrow, const float* wrow,
                                                         const Geometry3& g) {
  typedef float V __attribute__((vector_size(VL * sizeof(float))));
  const int64_t kw_n = g.kernel[2], dil = g.dilation[2], pad = g.pad_begin[2], in = g.in[2], out = g.out[2];
  // Interior: o - pad >= 0 and o + (kw_n - 1) * dil - pad < in.
  const int64_t lo = std::clamp<int64_t>(pad, 0, out);
  const int64_t hi = std::clamp<int64_t>(in - (kw_n - 1) * dil + pad, lo, out);
  auto border = [&](int64_t o) {
    float acc = yrow[o];
    for (int64_t kw = 0; kw < kw_n; ++kw) {
      const int64_t i = o + kw * dil - pad;
      if (i >= 0 && i < in) acc += wrow[kw] * xrow[i];
    }
    yrow[o] = acc;
  };
  for (int64_t o = 0; o < lo; ++o) border(o);
  int64_t o = lo;
  for (; o + VL <= hi; o += VL) {
    V acc;
    std::memcpy(&acc, yrow + o, sizeof(V));
    const float* xs = xrow + (o - pad);
    for (int64_t kw = 0; kw < kw_n; ++kw) {
      V xv;
      std::memcpy(&xv, xs + kw * dil, sizeof(V));
      acc += xv * wrow[kw];
    }
    std::memcpy(yrow + o, &acc, sizeof(V));
  }
  for (; o < out; ++o) border(o);
}

using DepthwiseRowFn = void (*)(float*, const float*, const float*, const Geometry3&);

void depthwise_row_s1_generic(float* y, const float* x, const float* w, const Geometry3& g) {
  depthwise_row_s1_body<4>(y, x, w, g);
}
#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("avx2,fma"))) void depthwise_row_s1_avx2(float* y, const float* x, const float* w,
                                                               const Geometry3& g) {
  depthwise_row_s1_body<8>(y, x, w, g);
}
__attribute__((target("avx512f"))) void depthwise_row_s1_avx512(float* y, const float* x, const float* w,
                                                                const Geometry3& g) {
  depthwise_row_s1_body<16>(y, x, w, g);
}
#endif

DepthwiseRowFn depthwise_row_s1() {
  static const DepthwiseRowFn fn = [] {
#if defined(__x86_64__) || defined(__i386__)
    if (sgemm_isa_supported(SgemmIsa::kAvx512)) return &depthwise_row_s1_avx512;
    if (sgemm_isa_supported(SgemmIsa::kAvx2)) return &depthwise_row_s1_avx2;
#endif
    return &depthwise_row_s1_generic;
  }();
  return fn;
}

// y = bias + conv(x, w) for one channel of a depthwise convolution; the sum
// runs over kernel offsets in order for every output element.
void depthwise_plane(const float* x, const float* w, float bias, float* y, const Geometry3& g) {
  const int64_t sw = g.stride[2];
  const DepthwiseRowFn row_s1 = depthwise_row_s1();
  for (int64_t od = 0; od < g.out[0]; ++od)
    for (int64_t oh = 0; oh < g.out[1]; ++oh) {
      float* yrow = y + (od * g.out[1] + oh) * g.out[2];
      std::fill(yrow, yrow + g.out[2], bias);
      for (int64_t kd = 0; kd < g.kernel[0]; ++kd) {
        const int64_t id = od * g.stride[0] - g.pad_begin[0] + kd * g.dilation[0];
        if (id < 0 || id >= g.in[0]) continue;
        for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
          const int64_t ih = oh * g.stride[1] - g.pad_begin[1] + kh * g.dilation[1];
          if (ih < 0 || ih >= g.in[1]) continue;
          const float* xrow = x + (id * g.in[1] + ih) * g.in[2];
          const float* wrow = w + (kd * g.kernel[1] + kh) * g.kernel[2];
          if (sw == 1) {
            row_s1(yrow, xrow, wrow, g);
            continue;
          }
          for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
            const int64_t off = kw * g.dilation[2] - g.pad_begin[2];
            const int64_t lo = std::clamp<int64_t>(ceil_div_i64(-off, sw), 0, g.out[2]);
            const int64_t hi = std::clamp<int64_t>(floor_div_i64(g.in[2] - 1 - off, sw) + 1, lo, g.out[2]);
            const float wv = wrow[kw];
            for (int64_t o = lo; o < hi; ++o) yrow[o] += wv * xrow[o * sw + off];
          }
        }
      }
    }
}

Status conv_f32(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y, int64_t group, const Geometry3& g) {
  const int64_t batch = x.dim(0), c = x.dim(1), m = w.dim(0);
  const int64_t cg = c / group, mg = m / group;
  const int64_t kk = g.kernel_size(), k = cg * kk, in_sz = g.in_size(), out_sz = g.out_size();
  const float* xd = x.data<float>();
  const float* wd = w.data<float>();
  const float* bd = bias ? bias->data<float>() : nullptr;
  float* yd = y.data<float>();
  const int threads = cpu_thread_count();

  if (cg == 1 && group > 1) {
    parallel_for(batch * m, threads, [&](int64_t t, int) {
      const int64_t img = t / m, oc = t % m;
      depthwise_plane(xd + (img * c + oc / mg) * in_sz, wd + oc * kk, bd ? bd[oc] : 0.0f, yd + t * out_sz, g);
    });
    return ok_status();
  }

  bool pointwise = kk == 1;
  for (int i = 0; i < 3; ++i) pointwise = pointwise && g.stride[i] == 1 && g.pad_begin[i] == 0 && g.pad_end[i] == 0;
  const int64_t tasks = batch * group;
  const bool task_parallel = tasks >= 2 && (mg * k * out_sz < (int64_t{1} << 22) || tasks >= 2 * threads);
  std::vector<Status> statuses(static_cast<size_t>(tasks));
  auto run_task = [&](int64_t t, int inner_threads) {
    const int64_t img = t / group, gi = t % group;
    const float* xg = xd + (img * c + gi * cg) * in_sz;
    float* yg = yd + (img * m + gi * mg) * out_sz;
    if (bd)
      for (int64_t oc = 0; oc < mg; ++oc) std::fill(yg + oc * out_sz, yg + (oc + 1) * out_sz, bd[gi * mg + oc]);
    const StridedMatrix xm{xg, in_sz, 1};
    const Im2col im2col{xg, g};
    SgemmArgs args;
    args.m = mg;
    args.n = out_sz;
    args.k = k;
    args.a = StridedMatrix{wd + gi * mg * k, k, 1};
    args.b = pointwise ? strided_b_source(&xm) : BSource{im2col_fill, &im2col};
    args.c = yg;
    args.ldc = out_sz;
    args.accumulate = bd != nullptr;
    statuses[static_cast<size_t>(t)] = sgemm(args, inner_threads);
  };
  if (task_parallel) {
    parallel_for(tasks, threads, [&](int64_t t, int) { run_task(t, 1); });
  } else {
    for (int64_t t = 0; t < tasks; ++t) run_task(t, threads);
  }
  for (Status& s : statuses)
    if (!s.ok()) return std::move(s);
  return ok_status();
}

// Direct convolution for float16/float64, accumulating in double.
template <typename T>
void conv_direct(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y, int64_t group, const Geometry3& g) {
  const int64_t batch = x.dim(0), c = x.dim(1), m = w.dim(0);
  const int64_t cg = c / group, mg = m / group, kk = g.kernel_size(), in_sz = g.in_size(), out_sz = g.out_size();
  const T* xd = x.data<T>();
  const T* wd = w.data<T>();
  T* yd = y.data<T>();
  auto mul_add = [](double acc, T xv, T wv) { return acc + to_f64(xv) * to_f64(wv); };
  for (int64_t img = 0; img < batch; ++img)
    for (int64_t oc = 0; oc < m; ++oc) {
      const int64_t gi = oc / mg;
      conv_direct_plane(g, xd + (img * c + gi * cg) * in_sz, wd + oc * cg * kk, cg,
                        bias ? to_f64(bias->data<T>()[oc]) : 0.0, yd + (img * m + oc) * out_sz, mul_add,
                        from_f64<T>);
    }
}

// Scatter-adds one output channel's columns (rows (kd, kh, kw) x input
// positions) into its output plane, kernel offsets in order.
void col2im_plane(const float* col, float bias, float* y, const Geometry3& g) {
  const int64_t in_sz = g.in_size();
  std::fill(y, y + g.out_size(), bias);
  const int64_t sw = g.stride[2];
  for (int64_t kd = 0; kd < g.kernel[0]; ++kd)
    for (int64_t kh = 0; kh < g.kernel[1]; ++kh)
      for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
        const float* crow = col + ((kd * g.kernel[1] + kh) * g.kernel[2] + kw) * in_sz;
        const int64_t off = kw * g.dilation[2] - g.pad_begin[2];
        // Input columns whose output column is inside [0, out[2]).
        const int64_t lo = std::clamp<int64_t>(ceil_div_i64(-off, sw), 0, g.in[2]);
        const int64_t hi = std::clamp<int64_t>(floor_div_i64(g.out[2] - 1 - off, sw) + 1, lo, g.in[2]);
        for (int64_t id = 0; id < g.in[0]; ++id) {
          const int64_t od = id * g.stride[0] - g.pad_begin[0] + kd * g.dilation[0];
          if (od < 0 || od >= g.out[0]) continue;
          for (int64_t ih = 0; ih < g.in[1]; ++ih) {
            const int64_t oh = ih * g.stride[1] - g.pad_begin[1] + kh * g.dilation[1];
            if (oh < 0 || oh >= g.out[1]) continue;
            float* yrow = y + (od * g.out[1] + oh) * g.out[2];
            const float* cin = crow + (id * g.in[1] + ih) * g.in[2];
            if (sw == 1) {
              if (hi > lo) axpy_row(yrow + lo + off, cin + lo, 1.0f, hi - lo);
            } else {
              for (int64_t iw = lo; iw < hi; ++iw) yrow[iw * sw + off] += cin[iw];
            }
          }
        }
      }
}

Status conv_transpose_f32(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y, int64_t group,
                          const Geometry3& g) {
  const int64_t batch = x.dim(0), c = x.dim(1), mg = w.dim(1), m = mg * group, cg = c / group;
  const int64_t kk = g.kernel_size(), in_sz = g.in_size(), out_sz = g.out_size();
  const int64_t rows = mg * kk;
  std::unique_ptr<float[]> col(new (std::nothrow) float[static_cast<size_t>(std::max<int64_t>(rows * in_sz, 1))]);
  if (!col) return out_of_memory("ConvTranspose: cannot allocate the column buffer");
  const float* xd = x.data<float>();
  const float* wd = w.data<float>();
  const float* bd = bias ? bias->data<float>() : nullptr;
  float* yd = y.data<float>();
  const int threads = cpu_thread_count();
  for (int64_t img = 0; img < batch; ++img)
    for (int64_t gi = 0; gi < group; ++gi) {
      // col[(oc, kernel offset), input position] = sum_c W[c, oc, offset] * X[c, position]
      const StridedMatrix xm{xd + (img * c + gi * cg) * in_sz, in_sz, 1};
      SgemmArgs args;
      args.m = rows;
      args.n = in_sz;
      args.k = cg;
      args.a = StridedMatrix{wd + gi * cg * rows, 1, rows};
      args.b = strided_b_source(&xm);
      args.c = col.get();
      args.ldc = in_sz;
      KILN_RETURN_IF_ERROR(sgemm(args, threads));
      parallel_for(mg, threads, [&](int64_t oc, int) {
        const int64_t out_c = gi * mg + oc;
        col2im_plane(col.get() + oc * kk * in_sz, bd ? bd[out_c] : 0.0f, yd + (img * m + out_c) * out_sz, g);
      });
    }
  return ok_status();
}

// Direct transposed convolution for float16/float64 into a double buffer.
template <typename T>
Status conv_transpose_direct(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y, int64_t group,
                             const Geometry3& g) {
  const int64_t batch = x.dim(0), c = x.dim(1), mg = w.dim(1), m = mg * group, cg = c / group;
  const int64_t kk = g.kernel_size(), in_sz = g.in_size(), out_sz = g.out_size();
  const size_t total = static_cast<size_t>(batch * m * out_sz);
  std::unique_ptr<double[]> acc(new (std::nothrow) double[std::max<size_t>(total, 1)]);
  if (!acc) return out_of_memory("ConvTranspose: cannot allocate the accumulation buffer");
  for (int64_t img = 0; img < batch; ++img)
    for (int64_t oc = 0; oc < m; ++oc)
      std::fill(acc.get() + (img * m + oc) * out_sz, acc.get() + (img * m + oc + 1) * out_sz,
                bias ? to_f64(bias->data<T>()[oc]) : 0.0);
  const T* xd = x.data<T>();
  const T* wd = w.data<T>();
  for (int64_t img = 0; img < batch; ++img)
    for (int64_t ic = 0; ic < c; ++ic) {
      const int64_t gi = ic / cg;
      for (int64_t id = 0; id < g.in[0]; ++id)
        for (int64_t ih = 0; ih < g.in[1]; ++ih)
          for (int64_t iw = 0; iw < g.in[2]; ++iw) {
            const double xv = to_f64(xd[(img * c + ic) * in_sz + (id * g.in[1] + ih) * g.in[2] + iw]);
            for (int64_t oc = 0; oc < mg; ++oc) {
              double* out = acc.get() + (img * m + gi * mg + oc) * out_sz;
              const T* wp = wd + (ic * mg + oc) * kk;
              for_each_tap(g, id, ih, iw, g.out, [&](int64_t oi, int64_t ki) { out[oi] += xv * to_f64(wp[ki]); });
            }
          }
    }
  T* yd = y.data<T>();
  for (size_t i = 0; i < total; ++i) yd[i] = from_f64<T>(acc[i]);
  return ok_status();
}

std::vector<int64_t> spatial_of(const Shape& s) { return std::vector<int64_t>(s.begin() + 2, s.end()); }

}  // namespace

StatusOr<Geometry3> conv_geometry(const ir::Node& node, const Shape& x, const Shape& w, const Shape& y) {
  const size_t spatial = x.size() - 2;
  KILN_ASSIGN_OR_RETURN(const WindowAttrs wa, read_window_attrs(node, spatial, false));
  const std::vector<int64_t> in = spatial_of(x), out = spatial_of(y), kernel = spatial_of(w);
  std::vector<int64_t> pb(spatial), pe(spatial);
  for (size_t i = 0; i < spatial; ++i) std::tie(pb[i], pe[i]) = window_pads(wa, i, in[i], kernel[i]);
  auto geom = make_geometry3(in, out, kernel, wa.strides, wa.dilations, pb, pe);
  if (!geom.ok()) return std::move(geom).status().add_context(node.describe());
  return geom;
}

Status conv_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor* bias = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  KILN_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0));
  const int64_t group = ctx.node().attr_int("group", 1);
  KILN_ASSIGN_OR_RETURN(const Geometry3 g, conv_geometry(ctx.node(), x.shape(), w.shape(), y->shape()));
  if (y->numel() == 0) return ok_status();
  switch (x.dtype()) {
    case DType::kFloat32: return conv_f32(x, w, bias, *y, group, g);
    case DType::kFloat16: conv_direct<Half>(x, w, bias, *y, group, g); return ok_status();
    case DType::kFloat64: conv_direct<double>(x, w, bias, *y, group, g); return ok_status();
    default: return ctx.error("unsupported dtype " + dt_name(x.dtype()));
  }
}

Status conv_transpose_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor* bias = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  KILN_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0));
  const size_t spatial = static_cast<size_t>(x.rank() - 2);
  KILN_ASSIGN_OR_RETURN(const WindowAttrs wa, read_window_attrs(ctx.node(), spatial, false));
  KILN_ASSIGN_OR_RETURN(const TransposeAttrs ta, read_transpose_attrs(ctx.node(), spatial));
  const int64_t group = ctx.node().attr_int("group", 1);
  const std::vector<int64_t> in = spatial_of(x.shape()), out = spatial_of(y->shape()), kernel = spatial_of(w.shape());
  std::vector<int64_t> pb(spatial), pe(spatial);
  const bool derived_pads =
      !ta.output_shape.empty() || wa.auto_pad == AutoPad::kSameUpper || wa.auto_pad == AutoPad::kSameLower;
  for (size_t i = 0; i < spatial; ++i) {
    if (!derived_pads) {
      pb[i] = wa.pads[i];
      pe[i] = wa.pads[i + spatial];
      continue;
    }
    // Pads that make the requested output size; SAME_UPPER puts the odd one
    // at the end, everything else at the beginning (ONNX spec).
    const int64_t total = wa.strides[i] * (in[i] - 1) + ta.output_padding[i] +
                          (kernel[i] - 1) * wa.dilations[i] + 1 - out[i];
    const int64_t half = floor_div_i64(total, 2);
    pb[i] = wa.auto_pad == AutoPad::kSameUpper ? half : total - half;
    pe[i] = total - pb[i];
  }
  auto geom = make_geometry3(in, out, kernel, wa.strides, wa.dilations, pb, pe);
  if (!geom.ok()) return std::move(geom).status().add_context(ctx.node().describe());
  if (y->numel() == 0) return ok_status();
  switch (x.dtype()) {
    case DType::kFloat32: return conv_transpose_f32(x, w, bias, *y, group, *geom);
    case DType::kFloat16: return conv_transpose_direct<Half>(x, w, bias, *y, group, *geom);
    case DType::kFloat64: return conv_transpose_direct<double>(x, w, bias, *y, group, *geom);
    default: return ctx.error("unsupported dtype " + dt_name(x.dtype()));
  }
}

}  // namespace kiln::ops
