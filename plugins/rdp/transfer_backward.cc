// Backward shape transfer functions (SoD² Table 3's F^bs): what a node's
// output shape and its other inputs imply about an input. Only equalities
// the op's definition forces are used: an elementwise input has the output's
// shape; a broadcasting input equals the output on an axis where every
// other input is 1 or absent; MatMul/Gemm contraction dims agree; a Conv's
// input channels are the weight's times the groups; a Concat input is the
// output minus the others; a Reshape input keeps the element count.
#include "plugins/rdp/analysis.h"

namespace kiln_rdp {
namespace {

bool backward_broadcast(const NodeRef& n, Facts& f) {
  auto out = f.dims(n.output(0));
  if (!out) return false;
  const int rank = static_cast<int>(out->size());
  bool changed = false;
  for (size_t i = 0; i < n.in.size(); ++i) {
    const kiln_value_id_t v = n.in[i];
    if (v == KILN_NO_ID) continue;
    // The rank: the output's, when every other input is known to be lower.
    bool others_lower = true;
    for (size_t j = 0; j < n.in.size(); ++j)
      if (j != i && n.in[j] != KILN_NO_ID && (f.rank(n.in[j]) < 0 || f.rank(n.in[j]) >= rank)) others_lower = false;
    if (others_lower) changed |= f.set_rank(v, rank);
    const int r = f.rank(v);
    if (r < 0 || r > rank) continue;
    for (int k = 0; k < r; ++k) {
      const size_t ok = static_cast<size_t>(k + rank - r);
      const Expr& want = (*out)[ok];
      if (!want.known()) continue;
      // An output dim of 1 means every input is 1 there.
      if (want.is_const() && want.value() == 1) {
        changed |= f.set_dim(v, static_cast<size_t>(k), Expr(1));
        continue;
      }
      bool others_one = true;
      for (size_t j = 0; j < n.in.size(); ++j) {
        if (j == i || n.in[j] == KILN_NO_ID) continue;
        const int rj = f.rank(n.in[j]);
        if (rj < 0) others_one = false;
        const int kj = static_cast<int>(ok) - (rank - rj);
        if (rj >= 0 && kj >= 0) {
          const Expr d = f.dim(n.in[j], static_cast<size_t>(kj));
          if (!(d.is_const() && d.value() == 1)) others_one = false;
        }
      }
      if (others_one) changed |= f.set_dim(v, static_cast<size_t>(k), want);
    }
  }
  return changed;
}

// Sets dim `ka` of `a` and dim `kb` of `b` to whichever of them is known.
bool unify(Facts& f, kiln_value_id_t a, size_t ka, kiln_value_id_t b, size_t kb) {
  const Expr da = f.dim(a, ka), db = f.dim(b, kb);
  return f.set_dim(a, ka, db) | f.set_dim(b, kb, da);
}

bool backward_matmul(const NodeRef& n, Facts& f) {
  const kiln_value_id_t a = n.input(0), b = n.input(1), y = n.output(0);
  const int ra = f.rank(a), rb = f.rank(b), ry = f.rank(y);
  if (ra < 1 || rb < 1) return false;
  bool changed = unify(f, a, static_cast<size_t>(ra - 1), b, static_cast<size_t>(rb >= 2 ? rb - 2 : 0));
  if (ry < 1) return changed;
  if (rb >= 2) changed |= unify(f, b, static_cast<size_t>(rb - 1), y, static_cast<size_t>(ry - 1));
  if (ra >= 2) changed |= unify(f, a, static_cast<size_t>(ra - 2), y, static_cast<size_t>(ry - (rb >= 2 ? 2 : 1)));
  // Batch dims: one operand without batch dims leaves the output's to the other.
  if (ra >= 2 && rb == 2 && ry == ra)
    for (int k = 0; k < ra - 2; ++k) changed |= unify(f, a, static_cast<size_t>(k), y, static_cast<size_t>(k));
  if (rb >= 2 && ra == 2 && ry == rb)
    for (int k = 0; k < rb - 2; ++k) changed |= unify(f, b, static_cast<size_t>(k), y, static_cast<size_t>(k));
  return changed;
}

bool backward_gemm(const NodeRef& n, Facts& f) {
  const kiln_value_id_t a = n.input(0), b = n.input(1), y = n.output(0);
  if (f.rank(a) != 2 || f.rank(b) != 2) return false;
  const size_t ta = n.attr_int("transA", 0) ? 1 : 0, tb = n.attr_int("transB", 0) ? 1 : 0;
  bool changed = unify(f, a, 1 - ta, b, tb);
  if (f.rank(y) == 2) changed |= unify(f, a, ta, y, 0) | unify(f, b, 1 - tb, y, 1);
  return changed;
}

bool backward_conv(const NodeRef& n, Facts& f) {
  const kiln_value_id_t x = n.input(0), w = n.input(1), y = n.output(0);
  const int rx = f.rank(x);
  bool changed = false;
  if (rx < 0 && f.rank(w) >= 3) changed |= f.set_rank(x, f.rank(w));
  if (f.rank(x) < 2 || f.rank(w) < 2) return changed;
  const int64_t group = n.attr_int("group", 1);
  changed |= f.set_dim(x, 1, f.dim(w, 1) * Expr(group));
  if (f.rank(y) >= 2) changed |= unify(f, x, 0, y, 0) | unify(f, w, 0, y, 1);
  return changed;
}

bool backward_concat(const NodeRef& n, Facts& f) {
  auto out = f.dims(n.output(0));
  if (!out) return false;
  auto axis = norm_axis(n.attr_int("axis", 0), static_cast<int>(out->size()));
  if (!axis) return false;
  bool changed = false;
  int unknown = -1, unknowns = 0;
  Expr others(0);
  for (size_t i = 0; i < n.in.size(); ++i) {
    changed |= f.set_rank(n.in[i], static_cast<int>(out->size()));
    for (size_t k = 0; k < out->size(); ++k)
      if (k != *axis) changed |= f.set_dim(n.in[i], k, (*out)[k]);
    const Expr d = f.dim(n.in[i], *axis);
    if (d.known()) others = others + d;
    else unknown = static_cast<int>(i), ++unknowns;
  }
  if (unknowns == 1) changed |= f.set_dim(n.in[static_cast<size_t>(unknown)], *axis, (*out)[*axis] - others);
  return changed;
}

// The one unknown input dim of a Reshape, from the element count.
bool backward_reshape(const NodeRef& n, Facts& f) {
  auto out = f.dims(n.output(0));
  auto x = f.dims(n.input(0));
  if (!out || !x) return false;
  int unknown = -1;
  std::vector<Expr> rest;
  for (size_t k = 0; k < x->size(); ++k) {
    if ((*x)[k].known()) rest.push_back((*x)[k]);
    else if (unknown >= 0) return false;
    else unknown = static_cast<int>(k);
  }
  if (unknown < 0) return false;
  return f.set_dim(n.input(0), static_cast<size_t>(unknown), Expr::quotient(*out, rest));
}

bool backward_transpose(const NodeRef& n, Facts& f) {
  auto out = f.dims(n.output(0));
  if (!out) return false;
  std::vector<int64_t> perm = n.attr_ints("perm");
  if (perm.empty())
    for (size_t k = out->size(); k-- > 0;) perm.push_back(static_cast<int64_t>(k));
  if (perm.size() != out->size()) return false;
  bool changed = f.set_rank(n.input(0), static_cast<int>(out->size()));
  for (size_t k = 0; k < perm.size(); ++k)
    if (perm[k] >= 0 && static_cast<size_t>(perm[k]) < out->size())
      changed |= f.set_dim(n.input(0), static_cast<size_t>(perm[k]), (*out)[k]);
  return changed;
}

// Unsqueeze: the input is the output without the inserted axes.
bool backward_unsqueeze(const NodeRef& n, Facts& f) {
  auto out = f.dims(n.output(0));
  auto axes = axes_input(n, f, 1);
  if (!out || !axes) return false;
  auto in = without_axes(*out, *axes);
  return in && f.set_shape(n.input(0), *in);
}

}  // namespace

bool backward_shapes(const NodeRef& n, Facts& f) {
  if (n.out.empty() || n.output(0) == KILN_NO_ID || n.in.empty() || n.input(0) == KILN_NO_ID) return false;
  const std::string& op = n.op;
  if (keeps_input_shape(n)) {
    auto out = f.dims(n.output(0));
    return out && f.set_shape(n.input(0), *out);
  }
  if (!n.domain.empty()) return false;
  if (broadcasts(n)) return backward_broadcast(n, f);
  if (op == "MatMul") return backward_matmul(n, f);
  if (op == "Gemm") return backward_gemm(n, f);
  if (op == "Conv") return backward_conv(n, f);
  if (op == "Concat") return backward_concat(n, f);
  if (op == "Reshape") return backward_reshape(n, f);
  if (op == "Transpose") return backward_transpose(n, f);
  if (op == "Unsqueeze") return backward_unsqueeze(n, f);
  if (op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool" || op == "GlobalMaxPool") {
    const kiln_value_id_t x = n.input(0), y = n.output(0);
    bool changed = f.set_rank(x, f.rank(y));
    if (f.rank(x) >= 2 && f.rank(y) >= 2) changed |= unify(f, x, 0, y, 0) | unify(f, x, 1, y, 1);
    return changed;
  }
  return false;
}

}  // namespace kiln_rdp
