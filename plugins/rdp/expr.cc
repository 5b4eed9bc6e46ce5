// RDP's symbolic expressions: folding, printing in the host's Dim syntax,
// reading it back (parsed by kiln_plugin.hpp's DimExpr), and product
// quotients; see expr.h.
#include "plugins/rdp/expr.h"

#include <algorithm>
#include <optional>

#include "kiln/kiln_plugin.hpp"

namespace kiln_rdp {

struct Expr::Node {
  char op;  // + - * / % and c (ceil div), m (min), M (max)
  Expr a, b;
};

namespace {

// Constant folding never wraps: dims from a model may be anything, and a
// result that does not fit in int64 folds to undef (unknown to the
// analysis) instead of a wrapped size. (The plugin sees only the ABI, so
// these are local rather than the engine's checked_math.h.)
Expr add_c(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return Expr();
  return Expr(r);
}
Expr sub_c(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_sub_overflow(a, b, &r)) return Expr();
  return Expr(r);
}
Expr mul_c(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return Expr();
  return Expr(r);
}

// Floor division for b != 0; false for INT64_MIN / -1, which overflows.
bool fdiv(int64_t a, int64_t b, int64_t& q) {
  if (a == INT64_MIN && b == -1) return false;
  q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return true;
}

bool positive(const Expr& e) { return e.is_const() && e.value() > 0; }

// The host's text, parsed by kiln_plugin.hpp, rebuilt with Expr's own
// folding operators (left to right, as the host folds while it parses).
Expr from_tree(const kiln::plugin::DimExpr& d) {
  using Op = kiln::plugin::DimExpr::Op;
  switch (d.kind()) {
    case kiln::plugin::DimExpr::Kind::kUnknown: return Expr();
    case kiln::plugin::DimExpr::Kind::kConst: return Expr(d.value());
    case kiln::plugin::DimExpr::Kind::kSymbol: return Expr::symbol(d.name());
    case kiln::plugin::DimExpr::Kind::kOp: break;
  }
  const Expr a = from_tree(d.lhs()), b = from_tree(d.rhs());
  switch (d.op()) {
    case Op::kAdd: return a + b;
    case Op::kSub: return a - b;
    case Op::kMul: return a * b;
    case Op::kFloorDiv: return Expr::floor_div(a, b);
    case Op::kCeilDiv: return Expr::ceil_div(a, b);
    case Op::kMod: return Expr::mod(a, b);
    case Op::kMin: return Expr::min(a, b);
    case Op::kMax: return Expr::max(a, b);
  }
  return Expr();
}

}  // namespace

Expr::Expr(int64_t c) : kind_(Kind::kConst), value_(c), text_(std::to_string(c)) {}

Expr Expr::symbol(const std::string& name) {
  Expr e;
  e.kind_ = Kind::kSymbol;
  e.text_ = name;
  return e;
}

Expr Expr::parse(const std::string& text) {
  const std::optional<kiln::plugin::DimExpr> tree = kiln::plugin::DimExpr::parse(text);
  return tree ? from_tree(*tree) : Expr();
}

Expr Expr::make(char op, const Expr& a, const Expr& b) {
  Expr e;
  e.kind_ = Kind::kOp;
  e.node_ = std::make_shared<const Node>(Node{op, a, b});
  if (op == 'c' || op == 'm' || op == 'M')
    e.text_ = std::string(op == 'c' ? "cdiv" : op == 'm' ? "min" : "max") + "(" + a.text_ + "," + b.text_ + ")";
  else
    e.text_ = "(" + a.text_ + op + b.text_ + ")";
  return e;
}

bool Expr::nonneg() const {
  switch (kind_) {
    case Kind::kUndef: return false;
    case Kind::kConst: return value_ >= 0;
    case Kind::kSymbol: return true;
    case Kind::kOp: return node_->op != '-' && node_->a.nonneg() && node_->b.nonneg();
  }
  return false;
}

Expr operator+(const Expr& a, const Expr& b) {
  if (!a.known() || !b.known()) return Expr();
  if (a.is_const() && b.is_const()) return add_c(a.value_, b.value_);
  if (a.is_const() && a.value_ == 0) return b;
  if (b.is_const() && b.value_ == 0) return a;
  if (b.is_const() && b.value_ < 0 && b.value_ != INT64_MIN) return a - Expr(-b.value_);  // "(h-1)", not "(h+-1)"
  if (b.is_const() && a.kind_ == Expr::Kind::kOp && (a.node_->op == '+' || a.node_->op == '-') &&
      a.node_->b.is_const()) {
    const Expr c = a.node_->op == '+' ? add_c(b.value_, a.node_->b.value_) : sub_c(b.value_, a.node_->b.value_);
    if (c.known()) return a.node_->a + c;
  }
  return Expr::make('+', a, b);
}

Expr operator-(const Expr& a, const Expr& b) {
  if (!a.known() || !b.known()) return Expr();
  if (a.is_const() && b.is_const()) return sub_c(a.value_, b.value_);
  if (b.is_const() && b.value_ == 0) return a;
  if (a.same(b)) return Expr(0);
  if (a.kind_ == Expr::Kind::kOp && a.node_->op == '+') {
    if (a.node_->b.same(b)) return a.node_->a;
    if (a.node_->a.same(b)) return a.node_->b;
  }
  return Expr::make('-', a, b);
}

Expr operator*(const Expr& a, const Expr& b) {
  if (!a.known() || !b.known()) return Expr();
  if (a.is_const() && b.is_const()) return mul_c(a.value_, b.value_);
  if (a.is_const()) return b * a;  // constants go right
  if (b.is_const() && b.value_ == 0) return Expr(0);
  if (b.is_const() && b.value_ == 1) return a;
  if (b.is_const() && a.kind_ == Expr::Kind::kOp && a.node_->op == '*' && a.node_->b.is_const()) {
    const Expr c = mul_c(a.node_->b.value_, b.value_);
    if (c.known()) return a.node_->a * c;
  }
  return Expr::make('*', a, b);
}

Expr Expr::floor_div(const Expr& a, const Expr& b) {
  if (!a.known() || !b.known() || (b.is_const() && b.value_ == 0)) return Expr();
  if (a.is_const() && b.is_const()) {
    int64_t q = 0;
    return fdiv(a.value_, b.value_, q) ? Expr(q) : Expr();
  }
  if (b.is_const() && b.value_ == 1) return a;
  if (a.same(b)) return Expr(1);
  if (a.kind_ == Kind::kOp && a.node_->op == '*') {
    if (a.node_->b.same(b)) return a.node_->a;
    if (a.node_->a.same(b)) return a.node_->b;
    if (positive(b) && positive(a.node_->b) && a.node_->b.value_ % b.value_ == 0)
      return a.node_->a * Expr(a.node_->b.value_ / b.value_);
  }
  if (positive(b) && a.kind_ == Kind::kOp && a.node_->op == '/' && positive(a.node_->b)) {
    const Expr c = mul_c(a.node_->b.value_, b.value_);
    if (c.known()) return floor_div(a.node_->a, c);
  }
  return make('/', a, b);
}

Expr Expr::ceil_div(const Expr& a, const Expr& b) {
  if (!a.known() || !b.known() || (b.is_const() && b.value_ == 0)) return Expr();
  if (a.is_const() && b.is_const()) {
    int64_t q = 0;
    if (a.value_ == INT64_MIN || !fdiv(-a.value_, b.value_, q) || q == INT64_MIN) return Expr();
    return Expr(-q);
  }
  if (b.is_const() && b.value_ == 1) return a;
  if (a.same(b)) return Expr(1);
  // An exact division rounds neither way.
  if (a.kind_ == Kind::kOp && a.node_->op == '*') {
    const Expr exact = floor_div(a, b);
    if (exact.kind_ != Kind::kOp || exact.node_->op != '/') return exact;
  }
  return make('c', a, b);
}

Expr Expr::mod(const Expr& a, const Expr& b) {
  if (!a.known() || !b.known() || (b.is_const() && b.value_ == 0)) return Expr();
  if (a.is_const() && b.is_const()) {
    if (b.value_ == -1) return Expr(0);  // INT64_MIN / -1 overflows
    int64_t r = a.value_ % b.value_;
    if (r != 0 && ((r < 0) != (b.value_ < 0))) r += b.value_;
    return Expr(r);
  }
  if ((b.is_const() && b.value_ == 1) || a.same(b)) return Expr(0);
  if (a.kind_ == Kind::kOp && a.node_->op == '*') {
    if (a.node_->b.same(b) || a.node_->a.same(b)) return Expr(0);
    if (positive(b) && positive(a.node_->b) && a.node_->b.value_ % b.value_ == 0) return Expr(0);
  }
  if (positive(b) && a.kind_ == Kind::kOp && a.node_->op == '%' && positive(a.node_->b) &&
      a.node_->b.value_ % b.value_ == 0)
    return mod(a.node_->a, b);
  return make('%', a, b);
}

Expr Expr::min(const Expr& a, const Expr& b) {
  if (!a.known() || !b.known()) return Expr();
  if (a.is_const() && b.is_const()) return Expr(std::min(a.value_, b.value_));
  return a.same(b) ? a : make('m', a, b);
}

Expr Expr::max(const Expr& a, const Expr& b) {
  if (!a.known() || !b.known()) return Expr();
  if (a.is_const() && b.is_const()) return Expr(std::max(a.value_, b.value_));
  return a.same(b) ? a : make('M', a, b);
}

void Expr::factors(std::vector<Expr>& out, int64_t& coefficient) const {
  if (is_const()) {
    // A constant that would overflow the coefficient stays a factor of its own.
    int64_t c;
    if (__builtin_mul_overflow(coefficient, value_, &c)) out.push_back(*this);
    else coefficient = c;
  } else if (kind_ == Kind::kOp && node_->op == '*')
    node_->a.factors(out, coefficient), node_->b.factors(out, coefficient);
  else out.push_back(*this);
}

Expr Expr::product(const std::vector<Expr>& factors) {
  Expr p(1);
  for (const Expr& f : factors) p = p * f;
  return p;
}

Expr Expr::quotient(const std::vector<Expr>& num, const std::vector<Expr>& den) {
  std::vector<Expr> n, d;
  int64_t cn = 1, cd = 1;
  for (const Expr& e : num) {
    if (!e.known()) return Expr();
    e.factors(n, cn);
  }
  for (const Expr& e : den) {
    if (!e.known()) return Expr();
    e.factors(d, cd);
  }
  for (auto it = d.begin(); it != d.end();) {
    auto hit = std::find_if(n.begin(), n.end(), [&](const Expr& f) { return f.same(*it); });
    if (hit == n.end()) {
      ++it;
      continue;
    }
    n.erase(hit);
    it = d.erase(it);
  }
  if (cd != 0 && !(cd == -1 && cn == INT64_MIN) && cn % cd == 0) cn /= cd, cd = 1;
  n.push_back(Expr(cn));
  d.push_back(Expr(cd));
  return floor_div(product(n), product(d));
}

}  // namespace kiln_rdp
