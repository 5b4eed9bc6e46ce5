// Op family 'pooling': MaxPool (with optional Indices), AveragePool,
// LpPool and their Global* forms — schemas, symbolic shape inference and
// reference kernels.
//
// Windows follow window_util.h (the same output-size rule as Conv). With
// ceil_mode, windows that would start in the end padding are dropped
// (PyTorch's rule, which later ONNX versions adopted). Padding never takes
// part in a max or an Lp norm; AveragePool counts it only with
// count_include_pad, and then only the explicit padding, not the overhang
// that ceil_mode adds. Kernels work in double (exact for every supported
// dtype's values) and run planes (image, channel) in parallel.
#include <cassert>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/ops/gemm_kernel.h"
#include "engine/ops/op_registry.h"
#include "engine/ops/window_util.h"

namespace kiln::ops {

namespace {

enum class PoolKind { kMax, kAverage, kLp };

std::string dt_name(DType t) { return std::string(dtype_name(t)); }

bool pool_dtype_ok(PoolKind kind, DType t) {
  const bool is_float = t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kFloat64;
  if (kind == PoolKind::kMax) return is_float || t == DType::kInt8 || t == DType::kUInt8;
  return is_float;
}

Status check_pool_input(const InferContext& ctx, PoolKind kind, int64_t min_rank) {
  const DType dt = ctx.input_dtype(0);
  if (!pool_dtype_ok(kind, dt))
    return ctx.error("X has dtype " + dt_name(dt) +
                     (kind == PoolKind::kMax ? "; expected float16, float32, float64, int8 or uint8"
                                             : "; expected float16, float32 or float64"));
  const ir::SymShape& xs = ctx.input_shape(0);
  if (xs.has_rank && xs.rank() < min_rank)
    return ctx.error("X must have rank >= " + std::to_string(min_rank) + " ([N, C, spatial...]), got " +
                     xs.to_string());
  return ok_status();
}

StatusOr<int64_t> read_lp_p(const InferContext& ctx) {
  const int64_t p = ctx.node().attr_int("p", 2);
  if (p < 1) return ctx.error("p = " + std::to_string(p) + " must be >= 1");
  return p;
}

template <PoolKind kKind>
Status infer_pool(InferContext& ctx) {
  KILN_RETURN_IF_ERROR(check_pool_input(ctx, kKind, 3));
  const DType dt = ctx.input_dtype(0);
  const ir::SymShape& xs = ctx.input_shape(0);
  if (kKind == PoolKind::kMax) {
    const int64_t order = ctx.node().attr_int("storage_order", 0);
    if (order != 0 && order != 1)
      return ctx.error("storage_order = " + std::to_string(order) + " must be 0 (row major) or 1 (column major)");
  }
  if (kKind == PoolKind::kLp) KILN_RETURN_IF_ERROR(read_lp_p(ctx).status());
  if (!xs.has_rank) {
    ctx.set_output(0, dt, ir::SymShape::unranked());
    if (ctx.num_outputs() > 1) ctx.set_output(1, DType::kInt64, ir::SymShape::unranked());
    return ok_status();
  }
  const size_t spatial = static_cast<size_t>(xs.rank() - 2);
  KILN_ASSIGN_OR_RETURN(const WindowAttrs w, read_window_attrs(ctx.node(), spatial, true));
  for (size_t i = 0; i < 2 * spatial; ++i)
    if (w.pads[i] >= w.kernel[i % spatial])
      return ctx.error("pads[" + std::to_string(i) + "] = " + std::to_string(w.pads[i]) +
                       " must be smaller than kernel_shape[" + std::to_string(i % spatial) +
                       "] = " + std::to_string(w.kernel[i % spatial]));
  std::vector<ir::Dim> out = {xs.dims[0], xs.dims[1]};
  for (size_t i = 0; i < spatial; ++i) {
    ir::Dim o = window_output_dim(w, i, xs.dims[2 + i], ir::Dim(w.kernel[i]));
    if (o.is_const() && o.value() <= 0)
      return ctx.error("spatial axis " + std::to_string(i) + " would have output size " + o.to_string() + " (input " +
                       xs.dims[2 + i].to_string() + ", kernel " + std::to_string(w.kernel[i]) + ", stride " +
                       std::to_string(w.strides[i]) + ", dilation " + std::to_string(w.dilations[i]) + ")");
    out.push_back(std::move(o));
  }
  ctx.set_output(0, dt, ir::SymShape(out));
  if (ctx.num_outputs() > 1) ctx.set_output(1, DType::kInt64, ir::SymShape(std::move(out)));
  return ok_status();
}

template <PoolKind kKind>
Status infer_global_pool(InferContext& ctx) {
  KILN_RETURN_IF_ERROR(check_pool_input(ctx, kKind, 2));
  if (kKind == PoolKind::kLp) KILN_RETURN_IF_ERROR(read_lp_p(ctx).status());
  const ir::SymShape& xs = ctx.input_shape(0);
  if (!xs.has_rank) {
    ctx.set_output(0, ctx.input_dtype(0), ir::SymShape::unranked());
    return ok_status();
  }
  std::vector<ir::Dim> out = {xs.dims[0], xs.dims[1]};
  out.resize(xs.dims.size(), ir::Dim(1));
  ctx.set_output(0, ctx.input_dtype(0), ir::SymShape(std::move(out)));
  return ok_status();
}

// ---------------------------------------------------------------------------
// Kernels

template <typename T>
double load(T v) {
  if constexpr (std::is_same_v<T, Half>) {
    return static_cast<double>(static_cast<float>(v));
  } else {
    return static_cast<double>(v);
  }
}

template <typename T>
T store(double v) {
  if constexpr (std::is_same_v<T, Half>) {
    return Half(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

// Max that lets NaN win, as PyTorch does.
inline bool takes_over(double v, double best) { return v > best || (std::isnan(v) && !std::isnan(best)); }

struct PoolParams {
  PoolKind kind = PoolKind::kMax;
  Geometry3 g;
  bool count_include_pad = false;
  bool column_major = false;  // MaxPool storage_order
  int64_t p = 2;              // LpPool
};

// Number of window taps along one axis that lie in [lo, hi).
int64_t taps_in(int64_t start, int64_t kernel, int64_t dilation, int64_t lo, int64_t hi) {
  int64_t n = 0;
  for (int64_t t = 0; t < kernel; ++t) n += start + t * dilation >= lo && start + t * dilation < hi;
  return n;
}

// Pools one (image, channel) plane. `indices` may be null.
template <typename T>
void pool_plane(const PoolParams& pp, const T* x, T* y, int64_t* indices, int64_t plane_offset) {
  const Geometry3& g = pp.g;
  int64_t out_i = 0;
  for (int64_t od = 0; od < g.out[0]; ++od)
    for (int64_t oh = 0; oh < g.out[1]; ++oh)
      for (int64_t ow = 0; ow < g.out[2]; ++ow, ++out_i) {
        const int64_t sd = od * g.stride[0] - g.pad_begin[0];
        const int64_t sh = oh * g.stride[1] - g.pad_begin[1];
        const int64_t sw = ow * g.stride[2] - g.pad_begin[2];
        double acc = pp.kind == PoolKind::kMax ? -std::numeric_limits<double>::infinity() : 0.0;
        int64_t best = -1, valid = 0;
        for (int64_t kd = 0; kd < g.kernel[0]; ++kd) {
          const int64_t id = sd + kd * g.dilation[0];
          if (id < 0 || id >= g.in[0]) continue;
          for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
            const int64_t ih = sh + kh * g.dilation[1];
            if (ih < 0 || ih >= g.in[1]) continue;
            for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
              const int64_t iw = sw + kw * g.dilation[2];
              if (iw < 0 || iw >= g.in[2]) continue;
              const int64_t at = (id * g.in[1] + ih) * g.in[2] + iw;
              const double v = load(x[at]);
              ++valid;
              switch (pp.kind) {
                case PoolKind::kMax:
                  if (best < 0 || takes_over(v, acc)) {
                    acc = v;
                    best = pp.column_major ? id + ih * g.in[0] + iw * g.in[0] * g.in[1] : at;
                  }
                  break;
                case PoolKind::kAverage: acc += v; break;
                case PoolKind::kLp: acc += std::pow(std::fabs(v), static_cast<double>(pp.p)); break;
              }
            }
          }
        }
        double result = acc;
        if (pp.kind == PoolKind::kMax) {
          // A window entirely in the padding (only possible with dilation).
          if constexpr (std::is_integral_v<T>) {
            if (best < 0) result = static_cast<double>(std::numeric_limits<T>::lowest());
          }
          if (indices) indices[out_i] = best < 0 ? -1 : plane_offset + best;
        } else if (pp.kind == PoolKind::kAverage) {
          int64_t count = valid;
          if (pp.count_include_pad)
            count = taps_in(sd, g.kernel[0], g.dilation[0], -g.pad_begin[0], g.in[0] + g.pad_end[0]) *
                    taps_in(sh, g.kernel[1], g.dilation[1], -g.pad_begin[1], g.in[1] + g.pad_end[1]) *
                    taps_in(sw, g.kernel[2], g.dilation[2], -g.pad_begin[2], g.in[2] + g.pad_end[2]);
          result = count > 0 ? acc / static_cast<double>(count) : std::numeric_limits<double>::quiet_NaN();
        } else {
          result = std::pow(acc, 1.0 / static_cast<double>(pp.p));
        }
        y[out_i] = store<T>(result);
      }
}

template <PoolKind kKind>
Status pool_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  KILN_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0));
  Tensor* indices = nullptr;
  if (kKind == PoolKind::kMax && ctx.num_outputs() > 1) {
    KILN_ASSIGN_OR_RETURN(indices, ctx.allocate_output(1));
  }
  const size_t spatial = static_cast<size_t>(x.rank() - 2);
  KILN_ASSIGN_OR_RETURN(const WindowAttrs w, read_window_attrs(ctx.node(), spatial, true));
  const std::vector<int64_t> in(x.shape().begin() + 2, x.shape().end());
  const std::vector<int64_t> out(y->shape().begin() + 2, y->shape().end());
  std::vector<int64_t> pb(spatial), pe(spatial);
  for (size_t i = 0; i < spatial; ++i) {
    const auto pads = window_pads(w, i, in[i], w.kernel[i]);
    pb[i] = pads.first;
    pe[i] = pads.second;
  }
  PoolParams pp;
  pp.kind = kKind;
  auto geom = make_geometry3(in, out, w.kernel, w.strides, w.dilations, pb, pe);
  if (!geom.ok()) return std::move(geom).status().add_context(ctx.node().describe());
  pp.g = *geom;
  pp.count_include_pad = ctx.node().attr_int("count_include_pad", 0) != 0;
  pp.column_major = ctx.node().attr_int("storage_order", 0) == 1;
  pp.p = ctx.node().attr_int("p", 2);
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t in_sz = pp.g.in_size(), out_sz = pp.g.out_size();
  if (y->numel() == 0) return ok_status();
  bool done = visit_dtype(x.dtype(), [&]<typename T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      const T* xd = x.data<T>();
      T* yd = y->data<T>();
      int64_t* id = indices ? indices->data<int64_t>() : nullptr;
      parallel_for(planes, cpu_thread_count(), [&](int64_t p, int) {
        pool_plane<T>(pp, xd + p * in_sz, yd + p * out_sz, id ? id + p * out_sz : nullptr, p * in_sz);
      });
    }
  });
  if (!done) return ctx.error("unsupported dtype " + dt_name(x.dtype()));
  return ok_status();
}

template <PoolKind kKind>
Status global_pool_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  KILN_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0));
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t plane = planes == 0 ? 0 : x.numel() / planes;
  const double p = static_cast<double>(ctx.node().attr_int("p", 2));
  bool done = visit_dtype(x.dtype(), [&]<typename T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      const T* xd = x.data<T>();
      T* yd = y->data<T>();
      for (int64_t pl = 0; pl < planes; ++pl) {
        const T* src = xd + pl * plane;
        double acc = kKind == PoolKind::kMax ? -std::numeric_limits<double>::infinity() : 0.0;
        for (int64_t i = 0; i < plane; ++i) {
          const double v = load(src[i]);
          if (kKind == PoolKind::kMax) {
            if (i == 0 || takes_over(v, acc)) acc = v;
          } else if (kKind == PoolKind::kAverage) {
            acc += v;
          } else {
            acc += std::pow(std::fabs(v), p);
          }
        }
        if (kKind == PoolKind::kAverage) acc = plane > 0 ? acc / static_cast<double>(plane) : 0.0;
        if (kKind == PoolKind::kLp) acc = std::pow(acc, 1.0 / p);
        yd[pl] = store<T>(acc);
      }
    }
  });
  if (!done) return ctx.error("unsupported dtype " + dt_name(x.dtype()));
  return ok_status();
}

}  // namespace

void register_pooling_ops(OpRegistry& r) {
  // A duplicate name is a programmer error in the registration code.
  auto add = [&r](OpSchema schema, MappingType mapping) {
    schema.mapping = mapping;
    [[maybe_unused]] Status s = r.add(std::move(schema));
    assert(s.ok());
  };
  add({"MaxPool", "", 1, 1, 1, 2, infer_pool<PoolKind::kMax>, pool_kernel<PoolKind::kMax>}, MappingType::kManyToMany);
  add({"AveragePool", "", 1, 1, 1, 1, infer_pool<PoolKind::kAverage>, pool_kernel<PoolKind::kAverage>}, MappingType::kManyToMany);
  add({"LpPool", "", 1, 1, 1, 1, infer_pool<PoolKind::kLp>, pool_kernel<PoolKind::kLp>}, MappingType::kManyToMany);
  add({"GlobalMaxPool", "", 1, 1, 1, 1, infer_global_pool<PoolKind::kMax>, global_pool_kernel<PoolKind::kMax>}, MappingType::kManyToMany);
  add({"GlobalAveragePool", "", 1, 1, 1, 1, infer_global_pool<PoolKind::kAverage>,
       global_pool_kernel<PoolKind::kAverage>}, MappingType::kManyToMany);
  add({"GlobalLpPool", "", 1, 1, 1, 1, infer_global_pool<PoolKind::kLp>, global_pool_kernel<PoolKind::kLp>}, MappingType::kManyToMany);
}

}  // namespace kiln::ops
