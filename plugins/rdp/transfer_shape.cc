// Forward shape transfer functions (SoD² Table 3's F^fs) for the ops whose
// output shape RDP can derive: elementwise and broadcasting ops, linear
// algebra, convolution and pooling windows, data movement, and the ISVDOS
// ops whose shape-deciding inputs are known shape data. An op without a
// function here keeps what the host's shape inference gave its outputs.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "plugins/rdp/analysis.h"

namespace kiln_rdp {
namespace {

// One output dim of numpy broadcasting over `dims` (1 where an input lacks
// the axis). An input dim that is a constant other than 1 decides it (the
// others must be 1 or equal); otherwise all must be known.
Expr broadcast_dim(const std::vector<Expr>& dims) {
  for (const Expr& d : dims)
    if (d.is_const() && d.value() != 1) return d;
  Expr out(1);
  for (const Expr& d : dims) {
    if (!d.known()) return Expr();
    if (d.is_const()) continue;  // a 1
    out = out.is_const() ? d : Expr::max(out, d);
  }
  return out;
}

bool forward_broadcast(const NodeRef& n, Facts& f) {
  int rank = 0;
  std::vector<std::vector<Expr>> shapes;
  for (kiln_value_id_t v : n.in) {
    if (v == KILN_NO_ID) continue;
    auto d = f.dims(v);
    if (!d) return false;
    rank = std::max(rank, static_cast<int>(d->size()));
    shapes.push_back(std::move(*d));
  }
  std::vector<Expr> out(static_cast<size_t>(rank));
  for (int k = 0; k < rank; ++k) {
    std::vector<Expr> col;
    for (const auto& s : shapes) {
      const int i = k - (rank - static_cast<int>(s.size()));
      col.push_back(i >= 0 ? s[static_cast<size_t>(i)] : Expr(1));
    }
    out[static_cast<size_t>(k)] = broadcast_dim(col);
  }
  return f.set_shape(n.output(0), out);
}

// Output size of a sliding window: floor((in + pads - dil*(k-1) - 1)/stride) + 1.
Expr window_out(const Expr& in, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation) {
  return Expr::floor_div(in + Expr(pad - dilation * (kernel - 1) - 1), Expr(stride)) + Expr(1);
}

// Conv and pooling: [N, C, spatial...] -> [N, channels, windows...].
bool forward_window(const NodeRef& n, Facts& f, const Expr& channels, std::vector<int64_t> kernel) {
  auto x = f.dims(n.input(0));
  if (!x || x->size() < 2) return false;
  const size_t spatial = x->size() - 2;
  if (kernel.size() != spatial) return false;
  std::vector<Expr> out = {(*x)[0], channels};
  auto strides = n.attr_ints("strides"), dil = n.attr_ints("dilations"), pads = n.attr_ints("pads");
  const int64_t ceil_mode = n.attr_int("ceil_mode", 0);
  std::string auto_pad = n.g.attr_string(n.id, "auto_pad", "NOTSET");
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t s = i < strides.size() ? strides[i] : 1;
    const int64_t d = i < dil.size() ? dil[i] : 1;
    const Expr& in = (*x)[i + 2];
    if (s <= 0 || d <= 0) return false;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      out.push_back(Expr::ceil_div(in, Expr(s)));
    } else if (auto_pad == "NOTSET" || auto_pad == "VALID" || auto_pad.empty()) {
      if (!pads.empty() && pads.size() != 2 * spatial) return false;
      const int64_t p = auto_pad == "VALID" || pads.empty() ? 0 : pads[i] + pads[i + spatial];
      // ceil_mode drops a last window that would start in the end padding;
      // that cannot happen when the end padding plus the stride is at most
      // the window (d*(k-1)+1), else only a constant input size tells.
      const int64_t window = d * (kernel[i] - 1) + 1;
      const int64_t pad_end = pads.empty() || auto_pad == "VALID" ? 0 : pads[i + spatial];
      if (ceil_mode && in.is_const()) {
        int64_t o = (in.value() + p - window + s - 1) / s + 1;
        if ((o - 1) * s >= in.value() + (pads.empty() ? 0 : pads[i])) --o;
        out.push_back(Expr(o));
      } else if (ceil_mode) {
        out.push_back(pad_end + s <= window ? Expr::ceil_div(in + Expr(p - window), Expr(s)) + Expr(1) : Expr());
      } else {
        out.push_back(window_out(in, kernel[i], p, s, d));
      }
    } else {
      return false;
    }
  }
  return f.set_shape(n.output(0), out);
}

bool forward_matmul(const NodeRef& n, Facts& f) {
  auto a = f.dims(n.input(0)), b = f.dims(n.input(1));
  if (!a || !b || a->empty() || b->empty()) return false;
  std::vector<Expr> ab(a->begin(), a->end() - std::min<size_t>(a->size(), 2));
  std::vector<Expr> bb(b->begin(), b->end() - std::min<size_t>(b->size(), 2));
  const size_t rank = std::max(ab.size(), bb.size());
  std::vector<Expr> out;
  for (size_t k = 0; k < rank; ++k) {
    const size_t ia = k + ab.size(), ib = k + bb.size();
    out.push_back(broadcast_dim({ia >= rank ? ab[ia - rank] : Expr(1), ib >= rank ? bb[ib - rank] : Expr(1)}));
  }
  if (a->size() >= 2) out.push_back((*a)[a->size() - 2]);
  if (b->size() >= 2) out.push_back(b->back());
  return f.set_shape(n.output(0), out);
}

bool forward_gemm(const NodeRef& n, Facts& f) {
  auto a = f.dims(n.input(0)), b = f.dims(n.input(1));
  if (!a || !b || a->size() != 2 || b->size() != 2) return false;
  const bool ta = n.attr_int("transA", 0) != 0, tb = n.attr_int("transB", 0) != 0;
  return f.set_shape(n.output(0), {(*a)[ta ? 1 : 0], (*b)[tb ? 0 : 1]});
}

bool forward_transpose(const NodeRef& n, Facts& f) {
  auto x = f.dims(n.input(0));
  if (!x) return false;
  std::vector<int64_t> perm = n.attr_ints("perm");
  if (perm.empty())
    for (size_t k = x->size(); k-- > 0;) perm.push_back(static_cast<int64_t>(k));
  if (perm.size() != x->size()) return false;
  std::vector<Expr> out;
  for (int64_t p : perm) {
    if (p < 0 || static_cast<size_t>(p) >= x->size()) return false;
    out.push_back((*x)[static_cast<size_t>(p)]);
  }
  return f.set_shape(n.output(0), out);
}

bool forward_concat(const NodeRef& n, Facts& f) {
  int rank = -1;
  for (kiln_value_id_t v : n.in) rank = std::max(rank, f.rank(v));
  auto axis = norm_axis(n.attr_int("axis", 0), rank);
  if (!axis) return false;
  std::vector<Expr> out(static_cast<size_t>(rank));
  Expr sum(0);
  for (kiln_value_id_t v : n.in) {
    if (f.rank(v) != rank) return f.set_rank(n.output(0), rank);
    sum = sum + f.dim(v, *axis);
    for (size_t k = 0; k < out.size(); ++k)
      if (k != *axis && !out[k].is_const() && f.dim(v, k).known()) out[k] = f.dim(v, k);
  }
  out[*axis] = sum;
  return f.set_shape(n.output(0), out);
}

bool forward_gather(const NodeRef& n, Facts& f) {
  auto data = f.dims(n.input(0)), idx = f.dims(n.input(1));
  if (!data || !idx) return false;
  auto axis = norm_axis(n.attr_int("axis", 0), static_cast<int>(data->size()));
  if (!axis) return false;
  std::vector<Expr> out(data->begin(), data->begin() + static_cast<std::ptrdiff_t>(*axis));
  out.insert(out.end(), idx->begin(), idx->end());
  out.insert(out.end(), data->begin() + static_cast<std::ptrdiff_t>(*axis) + 1, data->end());
  return f.set_shape(n.output(0), out);
}

bool forward_flatten(const NodeRef& n, Facts& f) {
  auto x = f.dims(n.input(0));
  if (!x) return false;
  int64_t axis = n.attr_int("axis", 1);
  if (axis < 0) axis += static_cast<int64_t>(x->size());
  if (axis < 0 || axis > static_cast<int64_t>(x->size())) return false;
  const auto mid = x->begin() + static_cast<std::ptrdiff_t>(axis);
  return f.set_shape(n.output(0), {Expr::product({x->begin(), mid}), Expr::product({mid, x->end()})});
}

// Reshape's target from its shape input's values: 0 copies the input dim
// (unless allowzero), -1 is what the element count leaves.
bool forward_reshape(const NodeRef& n, Facts& f) {
  const std::vector<Expr>* target = f.values(n.input(1));
  if (!target) {  // the rank is the target's length
    const Expr len = f.dim(n.input(1), 0);
    return len.is_const() && f.set_rank(n.output(0), static_cast<int>(len.value()));
  }
  auto x = f.dims(n.input(0));
  const bool allowzero = n.attr_int("allowzero", 0) != 0;
  std::vector<Expr> out(target->size());
  int infer = -1;
  for (size_t k = 0; k < target->size(); ++k) {
    const Expr& t = (*target)[k];
    if (t.is_const() && t.value() == -1) infer = static_cast<int>(k);
    else if (t.is_const() && t.value() == 0 && !allowzero) out[k] = x && k < x->size() ? (*x)[k] : Expr();
    else if (!t.is_const() || t.value() > 0) out[k] = t;  // a symbolic entry is a dim (Shape-derived)
  }
  if (infer >= 0 && x) {
    std::vector<Expr> known;
    for (size_t k = 0; k < out.size(); ++k)
      if (static_cast<int>(k) != infer) known.push_back(out[k]);
    out[static_cast<size_t>(infer)] = Expr::quotient(*x, known);
  }
  return f.set_shape(n.output(0), out);
}

bool forward_unsqueeze(const NodeRef& n, Facts& f) {
  auto x = f.dims(n.input(0));
  auto axes = axes_input(n, f, 1);
  if (!x || !axes) return false;
  const int rank = static_cast<int>(x->size() + axes->size());
  std::vector<bool> inserted(static_cast<size_t>(rank), false);
  for (int64_t a : *axes) {
    auto k = norm_axis(a, rank);
    if (!k || inserted[*k]) return false;  // out of range or repeated: invalid
    inserted[*k] = true;
  }
  std::vector<Expr> out;
  size_t next = 0;
  for (int k = 0; k < rank; ++k) out.push_back(inserted[static_cast<size_t>(k)] ? Expr(1) : (*x)[next++]);
  return f.set_shape(n.output(0), out);
}

bool forward_squeeze(const NodeRef& n, Facts& f) {
  auto x = f.dims(n.input(0));
  if (!x) return false;
  auto axes = axes_input(n, f, 1);
  if (!axes) return false;
  if (axes->empty()) {
    for (size_t k = 0; k < x->size(); ++k) {
      if (!(*x)[k].is_const()) return false;  // cannot tell which dims are 1
      if ((*x)[k].value() == 1) axes->push_back(static_cast<int64_t>(k));
    }
  }
  auto out = without_axes(*x, *axes);
  return out && f.set_shape(n.output(0), *out);
}

// Slice length of one axis; symbolic dims only where no clamping is needed
// beyond what max(.,0) expresses.
Expr slice_len(const Expr& dim, int64_t start, int64_t end, int64_t step) {
  if (dim.is_const()) {
    int64_t d = dim.value();
    if (d <= 0) return Expr(0);
    step = std::clamp<int64_t>(step, -(d + 1), d + 1);
    if (start < 0) start += d;
    if (end < 0) end += d;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, d);
      end = std::clamp<int64_t>(end, 0, d);
      return Expr(end > start ? (end - start - 1) / step + 1 : 0);
    }
    start = std::clamp<int64_t>(start, 0, d - 1);
    end = std::clamp<int64_t>(end, -1, d - 1);
    return Expr(start > end ? (start - end - 1) / -step + 1 : 0);
  }
  if (!dim.known() || step <= 0) return Expr();
  constexpr int64_t kOpen = int64_t{1} << 30;  // exporters write INT64_MAX or INT32_MAX
  if (start < 0 || (end < kOpen && end != 0 && end > -kOpen)) {
    // end < 0 counts from the end: [start, dim + end).
    if (start >= 0 && end < 0) return Expr::ceil_div(Expr::max(dim + Expr(end - start), Expr(0)), Expr(step));
    return Expr();
  }
  if (end == 0 || end <= -kOpen) return Expr(0);
  return Expr::ceil_div(start == 0 ? dim : Expr::max(dim - Expr(start), Expr(0)), Expr(step));
}

bool forward_slice(const NodeRef& n, Facts& f) {
  auto x = f.dims(n.input(0));
  if (!x) return false;
  auto starts = input_ints(n, f, 1), ends = input_ints(n, f, 2);
  if (!starts || !ends || starts->size() != ends->size()) return f.set_rank(n.output(0), static_cast<int>(x->size()));
  std::vector<int64_t> axes, steps(starts->size(), 1);
  if (n.input(3) != KILN_NO_ID) {
    auto a = input_ints(n, f, 3);
    if (!a) return f.set_rank(n.output(0), static_cast<int>(x->size()));
    axes = *a;
  } else {
    for (size_t i = 0; i < starts->size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (n.input(4) != KILN_NO_ID) {
    auto s = input_ints(n, f, 4);
    if (!s) return f.set_rank(n.output(0), static_cast<int>(x->size()));
    steps = *s;
  }
  if (axes.size() != starts->size() || steps.size() != starts->size()) return false;
  std::vector<Expr> out = *x;
  for (size_t i = 0; i < axes.size(); ++i) {
    auto k = norm_axis(axes[i], static_cast<int>(x->size()));
    if (!k || steps[i] == 0) return false;
    out[*k] = slice_len((*x)[*k], (*starts)[i], (*ends)[i], steps[i]);
  }
  return f.set_shape(n.output(0), out);
}

bool forward_reduce(const NodeRef& n, Facts& f) {
  auto x = f.dims(n.input(0));
  if (!x) return false;
  std::optional<std::vector<int64_t>> axes = n.attr_ints("axes");
  if (axes->empty() && n.input(1) != KILN_NO_ID) axes = input_ints(n, f, 1);
  if (!axes) return false;
  const bool keep = n.attr_int("keepdims", 1) != 0;
  if (axes->empty() && n.attr_int("noop_with_empty_axes", 0)) return f.set_shape(n.output(0), *x);
  std::vector<bool> reduced(x->size(), axes->empty());
  for (int64_t a : *axes) {
    auto k = norm_axis(a, static_cast<int>(x->size()));
    if (!k) return false;
    reduced[*k] = true;
  }
  std::vector<Expr> out;
  for (size_t k = 0; k < x->size(); ++k) {
    if (!reduced[k]) out.push_back((*x)[k]);
    else if (keep) out.push_back(Expr(1));
  }
  return f.set_shape(n.output(0), out);
}

bool forward_argreduce(const NodeRef& n, Facts& f) {
  auto x = f.dims(n.input(0));
  if (!x) return false;
  auto k = norm_axis(n.attr_int("axis", 0), static_cast<int>(x->size()));
  if (!k) return false;
  std::vector<Expr> out = *x;
  if (n.attr_int("keepdims", 1)) out[*k] = Expr(1);
  else out.erase(out.begin() + static_cast<std::ptrdiff_t>(*k));
  return f.set_shape(n.output(0), out);
}

// An output shape given as an input's values (ConstantOfShape, Expand's
// broadcast with the input).
bool forward_shape_input(const NodeRef& n, Facts& f, size_t input, bool broadcast_with_data) {
  const std::vector<Expr>* shape = f.values(n.input(input));
  if (!shape) return false;
  if (!broadcast_with_data) return f.set_shape(n.output(0), *shape);
  auto x = f.dims(n.input(0));
  if (!x) return false;
  const size_t rank = std::max(x->size(), shape->size());
  std::vector<Expr> out;
  for (size_t k = 0; k < rank; ++k) {
    const size_t ix = k + x->size(), is = k + shape->size();
    out.push_back(broadcast_dim({ix >= rank ? (*x)[ix - rank] : Expr(1), is >= rank ? (*shape)[is - rank] : Expr(1)}));
  }
  return f.set_shape(n.output(0), out);
}

bool forward_tile(const NodeRef& n, Facts& f) {
  auto x = f.dims(n.input(0));
  const std::vector<Expr>* reps = f.values(n.input(1));
  if (!x || !reps || reps->size() != x->size()) return false;
  std::vector<Expr> out;
  for (size_t k = 0; k < x->size(); ++k) out.push_back((*x)[k] * (*reps)[k]);
  return f.set_shape(n.output(0), out);
}

bool forward_pad(const NodeRef& n, Facts& f) {
  auto x = f.dims(n.input(0));
  if (!x) return false;
  std::optional<std::vector<int64_t>> pads = n.attr_ints("pads");
  if (n.input(1) != KILN_NO_ID) pads = input_ints(n, f, 1);
  std::vector<int64_t> axes;
  if (n.input(3) != KILN_NO_ID) {
    auto a = input_ints(n, f, 3);
    if (!a) return f.set_rank(n.output(0), static_cast<int>(x->size()));
    axes = *a;
  } else {
    for (size_t k = 0; k < x->size(); ++k) axes.push_back(static_cast<int64_t>(k));
  }
  if (!pads || pads->size() != 2 * axes.size()) return f.set_rank(n.output(0), static_cast<int>(x->size()));
  std::vector<Expr> out = *x;
  for (size_t i = 0; i < axes.size(); ++i) {
    auto k = norm_axis(axes[i], static_cast<int>(x->size()));
    if (!k) return false;
    out[*k] = out[*k] + Expr((*pads)[i] + (*pads)[i + axes.size()]);
  }
  return f.set_shape(n.output(0), out);
}

// Resize by sizes, or by integral scales (the usual x2 upsampling).
bool forward_resize(const NodeRef& n, Facts& f) {
  auto x = f.dims(n.input(0));
  if (!x) return false;
  if (const std::vector<Expr>* sizes = f.values(n.input(3)); sizes && sizes->size() == x->size())
    return f.set_shape(n.output(0), *sizes);
  size_t bytes = 0;
  const void* data = n.input(2) == KILN_NO_ID ? nullptr : n.g.constant_data(n.input(2), &bytes);
  auto info = n.input(2) == KILN_NO_ID ? std::nullopt : n.g.value(n.input(2));
  if (!data || !info || info->dtype != KILN_PLUGIN_DTYPE_FLOAT32 || bytes != x->size() * sizeof(float))
    return f.set_rank(n.output(0), static_cast<int>(x->size()));
  std::vector<Expr> out;
  for (size_t k = 0; k < x->size(); ++k) {
    float s;
    std::memcpy(&s, static_cast<const char*>(data) + k * sizeof(float), sizeof(float));
    if (s >= 1 && std::floor(s) == s) out.push_back((*x)[k] * Expr(static_cast<int64_t>(s)));
    else if ((*x)[k].is_const())
      out.push_back(Expr(static_cast<int64_t>(std::floor(static_cast<double>((*x)[k].value()) * s))));
    else out.push_back(Expr());
  }
  return f.set_shape(n.output(0), out);
}

bool forward_split(const NodeRef& n, Facts& f) {
  auto x = f.dims(n.input(0));
  if (!x) return false;
  auto axis = norm_axis(n.attr_int("axis", 0), static_cast<int>(x->size()));
  if (!axis) return false;
  std::optional<std::vector<int64_t>> sizes = n.attr_ints("split");
  if (n.input(1) != KILN_NO_ID) sizes = input_ints(n, f, 1);
  const int64_t parts = static_cast<int64_t>(n.out.size());
  const Expr& d = (*x)[*axis];
  bool changed = false;
  for (size_t o = 0; o < n.out.size(); ++o) {
    std::vector<Expr> out = *x;
    if (sizes && sizes->size() == n.out.size()) out[*axis] = Expr((*sizes)[o]);
    // An equal split is exact only when the parts divide the dim (else the
    // last part is shorter).
    else if (sizes && sizes->empty() && d.is_const() && d.value() % parts == 0) out[*axis] = Expr(d.value() / parts);
    else out[*axis] = Expr();
    changed |= f.set_shape(n.out[o], out);
  }
  return changed;
}

bool forward_depth_space(const NodeRef& n, Facts& f, bool to_space) {
  auto x = f.dims(n.input(0));
  const int64_t b = n.attr_int("blocksize", 0);
  if (!x || x->size() != 4 || b <= 0) return false;
  const Expr bb(b * b), e(b);
  if (to_space)
    return f.set_shape(n.output(0), {(*x)[0], Expr::floor_div((*x)[1], bb), (*x)[2] * e, (*x)[3] * e});
  return f.set_shape(n.output(0), {(*x)[0], (*x)[1] * bb, Expr::floor_div((*x)[2], e), Expr::floor_div((*x)[3], e)});
}

bool forward_range(const NodeRef& n, Facts& f) {
  const std::vector<Expr>* s = f.values(n.input(0));
  const std::vector<Expr>* l = f.values(n.input(1));
  const std::vector<Expr>* d = f.values(n.input(2));
  if (!s || !l || !d || s->size() != 1 || l->size() != 1 || d->size() != 1) return f.set_rank(n.output(0), 1);
  const Expr &start = (*s)[0], &limit = (*l)[0], &delta = (*d)[0];
  Expr len;
  if (start.is_const() && limit.is_const() && delta.is_const() && delta.value() != 0)
    len = Expr(std::max<int64_t>(Expr::ceil_div(limit - start, delta).value(), 0));
  else if (start.is_const() && start.value() == 0 && limit.nonneg() && delta.is_const() && delta.value() > 0)
    len = Expr::ceil_div(limit, delta);
  return f.set_shape(n.output(0), {len});
}

bool forward_if(const NodeRef& n, Facts& f) {
  const kiln_region_id_t then_r = n.g.host()->attr_graph(n.g.raw(), n.id, "then_branch");
  const kiln_region_id_t else_r = n.g.host()->attr_graph(n.g.raw(), n.id, "else_branch");
  if (then_r == KILN_NO_ID || else_r == KILN_NO_ID) return false;
  const auto a = n.g.region_outputs(then_r), b = n.g.region_outputs(else_r);
  bool changed = false;
  // Merge: what both branches agree on; a disagreement is nac.
  for (size_t i = 0; i < n.out.size() && i < a.size() && i < b.size(); ++i) {
    const int ra = f.rank(a[i]);
    if (ra < 0 || ra != f.rank(b[i])) continue;
    std::vector<Expr> dims;
    for (size_t k = 0; k < static_cast<size_t>(ra); ++k) {
      const Expr da = f.dim(a[i], k), db = f.dim(b[i], k);
      dims.push_back(da.same(db) ? da : Expr());
    }
    changed |= f.set_shape(n.out[i], dims);
    const std::vector<Expr>*va = f.values(a[i]), *vb = f.values(b[i]);
    if (va && vb && va->size() == vb->size()) {
      std::vector<Expr> vals;
      for (size_t k = 0; k < va->size(); ++k) vals.push_back((*va)[k].same((*vb)[k]) ? (*va)[k] : Expr());
      changed |= f.set_values(n.out[i], vals);
    }
  }
  return changed;
}

}  // namespace

bool forward_shapes(const NodeRef& n, Facts& f) {
  if (n.out.empty() || n.output(0) == KILN_NO_ID) return false;
  const std::string& op = n.op;
  if (keeps_input_shape(n)) {
    auto x = f.dims(n.input(0));
    return x && f.set_shape(n.output(0), *x);
  }
  if (!n.domain.empty()) return false;
  if (broadcasts(n)) return forward_broadcast(n, f);
  if (op == "MatMul") return forward_matmul(n, f);
  if (op == "Gemm") return forward_gemm(n, f);
  if (op == "Conv") {
    auto w = f.dims(n.input(1));
    if (!w || w->size() < 3) return false;
    std::vector<int64_t> kernel = n.attr_ints("kernel_shape");
    if (kernel.empty())
      for (size_t k = 2; k < w->size(); ++k) {
        if (!(*w)[k].is_const()) return false;
        kernel.push_back((*w)[k].value());
      }
    return forward_window(n, f, (*w)[0], kernel);
  }
  if (op == "MaxPool" || op == "AveragePool" || op == "LpPool")
    return forward_window(n, f, f.dim(n.input(0), 1), n.attr_ints("kernel_shape"));
  if (op == "GlobalMaxPool" || op == "GlobalAveragePool" || op == "GlobalLpPool") {
    auto x = f.dims(n.input(0));
    if (!x || x->size() < 2) return false;
    std::vector<Expr> out = {(*x)[0], (*x)[1]};
    out.resize(x->size(), Expr(1));
    return f.set_shape(n.output(0), out);
  }
  if (op == "Transpose") return forward_transpose(n, f);
  if (op == "Concat") return forward_concat(n, f);
  if (op == "Gather") return forward_gather(n, f);
  if (op == "GatherElements") {
    auto idx = f.dims(n.input(1));
    return idx && f.set_shape(n.output(0), *idx);
  }
  if (op == "Flatten") return forward_flatten(n, f);
  if (op == "Reshape") return forward_reshape(n, f);
  if (op == "Unsqueeze") return forward_unsqueeze(n, f);
  if (op == "Squeeze") return forward_squeeze(n, f);
  if (op == "Slice") return forward_slice(n, f);
  if (op.rfind("Reduce", 0) == 0) return forward_reduce(n, f);
  if (op == "ArgMax" || op == "ArgMin") return forward_argreduce(n, f);
  if (op == "Shape") {
    const int r = f.rank(n.input(0));
    if (r < 0) return f.set_rank(n.output(0), 1);
    int64_t start = n.attr_int("start", 0), end = n.attr_int("end", r);
    start = std::clamp<int64_t>(start < 0 ? start + r : start, 0, r);
    end = std::clamp<int64_t>(end < 0 ? end + r : end, 0, r);
    return f.set_shape(n.output(0), {Expr(std::max<int64_t>(end - start, 0))});
  }
  if (op == "Size") return f.set_shape(n.output(0), {});
  if (op == "ConstantOfShape") return forward_shape_input(n, f, 0, false);
  if (op == "Expand") return forward_shape_input(n, f, 1, true);
  if (op == "Tile") return forward_tile(n, f);
  if (op == "Pad") return forward_pad(n, f);
  if (op == "Resize") return forward_resize(n, f);
  if (op == "Split") return forward_split(n, f);
  if (op == "DepthToSpace") return forward_depth_space(n, f, true);
  if (op == "SpaceToDepth") return forward_depth_space(n, f, false);
  if (op == "Range") return forward_range(n, f);
  if (op == "If") return forward_if(n, f);
  if (op == "NonZero") {
    const int r = f.rank(n.input(0));
    return r >= 0 && f.set_shape(n.output(0), {Expr(r), Expr()});
  }
  return false;
}

}  // namespace kiln_rdp
