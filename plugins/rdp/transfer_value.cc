// Forward value transfer (SoD² Table 3's F^fv) for shape data: the element
// values of small integer tensors that shape computations build (Shape ->
// Gather -> Unsqueeze -> Concat -> Reshape, Range bounds, ConstantOfShape's
// shape). Shape turns dims into values (the ISDO update of Alg. 1, line 23);
// arithmetic, Gather, Slice, Concat, Squeeze/Unsqueeze, Cast, Where and
// comparisons carry them on.
#include <algorithm>
#include <functional>

#include "plugins/rdp/analysis.h"

namespace kiln_rdp {
namespace {

using Vals = std::vector<Expr>;

// Elementwise over two value vectors with scalar broadcasting; nullopt when
// the lengths do not broadcast.
std::optional<Vals> zip(const Vals& a, const Vals& b, const std::function<Expr(const Expr&, const Expr&)>& fn) {
  if (a.size() != b.size() && a.size() != 1 && b.size() != 1) return std::nullopt;
  const size_t len = std::max(a.size(), b.size());
  Vals out;
  for (size_t i = 0; i < len; ++i) out.push_back(fn(a[a.size() == 1 ? 0 : i], b[b.size() == 1 ? 0 : i]));
  return out;
}

// Integer Div truncates; on non-negative operands that is floor division.
Expr int_div(const Expr& a, const Expr& b) { return a.nonneg() && b.nonneg() ? Expr::floor_div(a, b) : Expr(); }

Expr equal(const Expr& a, const Expr& b) {
  if (a.is_const() && b.is_const()) return Expr(a.value() == b.value() ? 1 : 0);
  if (a.same(b)) return Expr(1);
  // A dim expression is never negative (Reshape's -1 test).
  if ((a.nonneg() && b.is_const() && b.value() < 0) || (b.nonneg() && a.is_const() && a.value() < 0)) return Expr(0);
  return Expr();
}

std::optional<Expr> binary(const std::string& op, const Expr& a, const Expr& b) {
  if (op == "Add") return a + b;
  if (op == "Sub") return a - b;
  if (op == "Mul") return a * b;
  if (op == "Div") return int_div(a, b);
  if (op == "Mod") return a.nonneg() && b.nonneg() ? Expr::mod(a, b) : Expr();
  if (op == "Max") return Expr::max(a, b);
  if (op == "Min") return Expr::min(a, b);
  if (op == "Equal") return equal(a, b);
  return std::nullopt;
}

// Integers and bool (comparisons feed Where).
bool is_int(int32_t dtype) { return kiln_plugin_dtype_is_int(dtype) || dtype == KILN_PLUGIN_DTYPE_BOOL; }

// Gather on a 1-D (or 0-D index) value vector.
std::optional<Vals> gather(const Vals& data, const std::vector<int64_t>& idx) {
  Vals out;
  for (int64_t i : idx) {
    if (i < 0) i += static_cast<int64_t>(data.size());
    if (i < 0 || static_cast<size_t>(i) >= data.size()) return std::nullopt;
    out.push_back(data[static_cast<size_t>(i)]);
  }
  return out;
}

std::optional<Vals> slice(const NodeRef& n, const Facts& f, const Vals& data) {
  auto starts = input_ints(n, f, 1), ends = input_ints(n, f, 2);
  if (!starts || !ends || starts->size() != 1 || ends->size() != 1) return std::nullopt;
  int64_t step = 1;
  if (n.input(4) != KILN_NO_ID) {
    auto s = input_ints(n, f, 4);
    if (!s || s->size() != 1 || (*s)[0] == 0) return std::nullopt;
    step = (*s)[0];
  }
  const int64_t d = static_cast<int64_t>(data.size());
  if (d == 0) return Vals{};
  int64_t start = (*starts)[0], end = (*ends)[0];
  if (start < 0) start += d;
  if (end < 0) end += d;
  Vals out;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, d);
    end = std::clamp<int64_t>(end, 0, d);
    for (int64_t i = start; i < end; i += step) out.push_back(data[static_cast<size_t>(i)]);
  } else {
    start = std::clamp<int64_t>(start, 0, d - 1);
    end = std::clamp<int64_t>(end, -1, d - 1);
    for (int64_t i = start; i > end; i += step) out.push_back(data[static_cast<size_t>(i)]);
  }
  return out;
}

}  // namespace

bool forward_values(const NodeRef& n, Facts& f) {
  const kiln_value_id_t y = n.output(0);
  const Fact* out = f.get(y);
  if (!out || !n.domain.empty() || !is_int(out->dtype) || out->rank > 1) return false;
  const std::string& op = n.op;
  const Vals* a = f.values(n.input(0));
  if (op == "Shape") {
    auto dims = f.dims(n.input(0));
    if (!dims) return false;
    const int64_t r = static_cast<int64_t>(dims->size());
    int64_t start = n.attr_int("start", 0), end = n.attr_int("end", r);
    start = std::clamp<int64_t>(start < 0 ? start + r : start, 0, r);
    end = std::clamp<int64_t>(end < 0 ? end + r : end, 0, r);
    return f.set_values(y, Vals(dims->begin() + start, dims->begin() + std::max(start, end)));
  }
  if (op == "Size") {
    auto dims = f.dims(n.input(0));
    return dims && f.set_values(y, {Expr::product(*dims)});
  }
  if (op == "Identity" || op == "Cast" || op == "Reshape" || op == "Squeeze" || op == "Unsqueeze" || op == "Flatten")
    return a && f.set_values(y, *a);
  if (op == "Concat") {
    Vals all;
    for (kiln_value_id_t v : n.in) {
      const Vals* p = f.values(v);
      if (!p) return false;
      all.insert(all.end(), p->begin(), p->end());
    }
    return f.set_values(y, all);
  }
  if (op == "Gather") {
    auto idx = input_ints(n, f, 1);
    if (!a || !idx || f.rank(n.input(0)) != 1) return false;
    auto g = gather(*a, *idx);
    return g && f.set_values(y, *g);
  }
  if (op == "Slice") {
    if (!a || f.rank(n.input(0)) != 1) return false;
    auto s = slice(n, f, *a);
    return s && f.set_values(y, *s);
  }
  if (op == "Where") {
    auto cond = input_ints(n, f, 0);
    const Vals *x = f.values(n.input(1)), *z = f.values(n.input(2));
    if (!cond || !x || !z) return false;
    const size_t len = std::max({cond->size(), x->size(), z->size()});
    Vals sel;
    for (size_t i = 0; i < len; ++i) {
      auto pick = [&](size_t size) { return size == 1 ? 0 : i; };
      if ((cond->size() != 1 && cond->size() != len) || (x->size() != 1 && x->size() != len) ||
          (z->size() != 1 && z->size() != len))
        return false;
      sel.push_back((*cond)[pick(cond->size())] ? (*x)[pick(x->size())] : (*z)[pick(z->size())]);
    }
    return f.set_values(y, sel);
  }
  if (op == "Range") {
    auto s = input_ints(n, f, 0), l = input_ints(n, f, 1), d = input_ints(n, f, 2);
    if (!s || !l || !d || s->size() != 1 || l->size() != 1 || d->size() != 1 || (*d)[0] == 0) return false;
    Vals r;
    for (int64_t v = (*s)[0]; ((*d)[0] > 0 ? v < (*l)[0] : v > (*l)[0]); v += (*d)[0]) {
      if (r.size() == kMaxValueElements) return false;
      r.push_back(Expr(v));
    }
    return f.set_values(y, r);
  }
  const Vals* b = f.values(n.input(1));
  if (!a || !b) return false;
  if (n.in.size() != 2 && op != "Max" && op != "Min") return false;
  if (!binary(op, Expr(0), Expr(0))) return false;  // not an op with a value rule
  auto r = zip(*a, *b, [&](const Expr& x, const Expr& z) { return *binary(op, x, z); });
  return r && f.set_values(y, *r);
}

}  // namespace kiln_rdp
