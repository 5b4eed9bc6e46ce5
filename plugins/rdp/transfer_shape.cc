// Forward shape transfer (SoD² Table 3's F^fs). The host's own shape
// inference (kiln_host_api_t::infer_node_dims, the op registry's functions
// the host re-infers with after every pass) runs on RDP's facts: undef dims
// and shape-data values cross as "?". RDP keeps its own functions only where
// they know more than the host's: numpy broadcasting (a constant other than
// 1 decides a dim the other side leaves undef, which the host's inference
// leaves unknown), so elementwise ops, MatMul's batch dims and Expand;
// sliding windows, whose ceil_mode on symbolic sizes RDP writes without the
// host's min(...) form when no window can start in the end padding; and If,
// whose branches the host's inference does not see. Where both answer, RDP's
// comes first (the refinement rule keeps the first expression) and the
// host's fills in what RDP left undef.
#include <algorithm>
#include <string>

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

// Expand: the input broadcast with the shape its input 1 holds.
bool forward_expand(const NodeRef& n, Facts& f) {
  const std::vector<Expr>* shape = f.values(n.input(1));
  if (!shape) return false;
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

// The host's inference on the facts. Nullopt when the host cannot infer
// the node (no inference for the op, a sub-graph, an invalid combination).
std::optional<bool> forward_by_host(const NodeRef& n, Facts& f) {
  if (!n.g.can_infer_dims()) return std::nullopt;
  std::vector<kiln::plugin::InferInput> inputs(n.in.size());
  for (size_t i = 0; i < n.in.size(); ++i) {
    if (n.in[i] == KILN_NO_ID) continue;
    if (auto dims = f.dims(n.in[i])) {
      inputs[i].dims.emplace();
      for (const Expr& e : *dims) inputs[i].dims->push_back(e.text());
    }
    if (const std::vector<Expr>* vals = f.values(n.in[i])) {
      inputs[i].values.emplace();
      for (const Expr& e : *vals) inputs[i].values->push_back(e.text());
    }
  }
  auto outs = n.g.infer_dims(n.id, inputs);
  if (!outs) return std::nullopt;
  bool changed = false;
  for (size_t k = 0; k < n.out.size() && k < outs->size(); ++k) {
    if (n.out[k] == KILN_NO_ID || !(*outs)[k]) continue;
    std::vector<Expr> dims;
    for (const std::string& text : *(*outs)[k]) dims.push_back(Expr::parse(text));
    changed |= f.set_shape(n.out[k], dims);
  }
  return changed;
}

// RDP's own functions (see the top of the file); false when none applies.
bool forward_own(const NodeRef& n, Facts& f) {
  if (!n.domain.empty()) return false;
  if (broadcasts(n)) return forward_broadcast(n, f);
  if (n.op == "MatMul") return forward_matmul(n, f);
  if (n.op == "Expand") return forward_expand(n, f);
  if (n.op == "Conv") {
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
  if (n.op == "MaxPool" || n.op == "AveragePool" || n.op == "LpPool")
    return forward_window(n, f, f.dim(n.input(0), 1), n.attr_ints("kernel_shape"));
  return false;
}

}  // namespace

bool forward_shapes(const NodeRef& n, Facts& f) {
  if (n.out.empty() || n.output(0) == KILN_NO_ID) return false;
  if (n.domain.empty() && n.op == "If") return forward_if(n, f);
  bool changed = forward_own(n, f);
  const std::optional<bool> host = forward_by_host(n, f);
  changed |= host.value_or(false);
  // An op the host cannot infer that keeps its input's shape (a host
  // without infer_node_dims, or inference refusing what RDP knows).
  if (!host && keeps_input_shape(n))
    if (auto x = f.dims(n.input(0))) changed |= f.set_shape(n.output(0), *x);
  return changed;
}

}  // namespace kiln_rdp
