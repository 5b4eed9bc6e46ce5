// Symbolic dims: construction, folding, printing and parsing; see dim.h.
#include "engine/ir/dim.h"

#include <cctype>
#include <charconv>

#include "engine/base/checked_math.h"

namespace kiln::ir {

struct Dim::ExprNode {
  Op op = Op::kAdd;
  Dim a, b;
  std::string name;  // for symbols
};

namespace {
// Constant folding never wraps: a result that does not fit in int64 (dims,
// pads or repeats from a model or a plugin may be anything) folds to an
// unknown dim, and evaluate() to nullopt, instead of a wrapped size. The
// ops' shape inference and the tensor-size checks turn that into an error
// naming the node.

// Floor division; nullopt for b == 0 and for INT64_MIN / -1.
std::optional<int64_t> floor_div_i(int64_t a, int64_t b) {
  if (b == 0 || (a == INT64_MIN && b == -1)) return std::nullopt;
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
std::optional<int64_t> ceil_div_i(int64_t a, int64_t b) {
  std::optional<int64_t> neg_a = checked_sub(0, a);
  if (!neg_a) return std::nullopt;
  std::optional<int64_t> q = floor_div_i(*neg_a, b);
  if (!q) return std::nullopt;
  return checked_sub(0, *q);
}
std::optional<int64_t> floor_mod_i(int64_t a, int64_t b) {
  if (b == 0) return std::nullopt;
  if (b == -1) return 0;  // a % -1 is 0, but INT64_MIN / -1 overflows
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
// A folded constant, or unknown when it did not fit.
Dim const_or_unknown(std::optional<int64_t> v) { return v ? Dim(*v) : Dim(); }

// `d` is an expression `x <op> c` with a positive constant c.
bool has_positive_const_rhs(const Dim& d, Dim::Op op) {
  return d.is_expr() && d.op() == op && d.rhs().is_const() && d.rhs().value() > 0;
}

const char* op_token(Dim::Op op) {
  switch (op) {
    case Dim::Op::kAdd: return "+";
    case Dim::Op::kSub: return "-";
    case Dim::Op::kMul: return "*";
    case Dim::Op::kFloorDiv: return "/";
    case Dim::Op::kMod: return "%";
    case Dim::Op::kCeilDiv: return "cdiv";
    case Dim::Op::kMin: return "min";
    case Dim::Op::kMax: return "max";
  }
  return "?";
}
}  // namespace

Dim Dim::symbol(std::string name) {
  Dim d;
  d.kind_ = Kind::kSymbol;
  auto n = std::make_shared<ExprNode>();
  n->name = std::move(name);
  d.node_ = std::move(n);
  return d;
}

const std::string& Dim::symbol_name() const { return node_->name; }
Dim::Op Dim::op() const { return node_->op; }
const Dim& Dim::lhs() const { return node_->a; }
const Dim& Dim::rhs() const { return node_->b; }

Dim Dim::make_expr(Op op, Dim a, Dim b) {
  Dim d;
  d.kind_ = Kind::kExpr;
  auto n = std::make_shared<ExprNode>();
  n->op = op;
  n->a = std::move(a);
  n->b = std::move(b);
  d.node_ = std::move(n);
  return d;
}

Dim operator+(const Dim& a, const Dim& b) {
  if (a.is_unknown() || b.is_unknown()) return Dim();
  if (a.is_const() && b.is_const()) return const_or_unknown(checked_add(a.value(), b.value()));
  if (a.is_const() && a.value() == 0) return b;
  if (b.is_const() && b.value() == 0) return a;
  // (x + c1) + c2 -> x + (c1 + c2)
  if (b.is_const() && a.is_expr() && a.op() == Dim::Op::kAdd && a.rhs().is_const()) {
    if (std::optional<int64_t> c = checked_add(a.rhs().value(), b.value())) return a.lhs() + Dim(*c);
  }
  // (x - c1) + c2 -> x + (c2 - c1): a window of size 1 is ((h-1)+1) = h
  if (b.is_const() && a.is_expr() && a.op() == Dim::Op::kSub && a.rhs().is_const()) {
    std::optional<int64_t> c = checked_sub(b.value(), a.rhs().value());
    if (c && *c != INT64_MIN) return *c < 0 ? a.lhs() - Dim(-*c) : a.lhs() + Dim(*c);
  }
  return Dim::make_expr(Dim::Op::kAdd, a, b);
}

Dim operator-(const Dim& a, const Dim& b) {
  if (a.is_unknown() || b.is_unknown()) return Dim();
  if (a.is_const() && b.is_const()) return const_or_unknown(checked_sub(a.value(), b.value()));
  if (b.is_const() && b.value() == 0) return a;
  if (a.same_as(b)) return Dim(0);
  // (x + c) - c -> x
  if (a.is_expr() && a.op() == Dim::Op::kAdd && a.rhs().same_as(b)) return a.lhs();
  // (x + y) - x -> y
  if (a.is_expr() && a.op() == Dim::Op::kAdd && a.lhs().same_as(b)) return a.rhs();
  return Dim::make_expr(Dim::Op::kSub, a, b);
}

Dim operator*(const Dim& a, const Dim& b) {
  if (a.is_unknown() || b.is_unknown()) return Dim();
  if (a.is_const() && b.is_const()) return const_or_unknown(checked_mul(a.value(), b.value()));
  if ((a.is_const() && a.value() == 0) || (b.is_const() && b.value() == 0)) return Dim(0);
  if (a.is_const() && a.value() == 1) return b;
  if (b.is_const() && b.value() == 1) return a;
  // (x * c1) * c2 -> x * (c1 * c2), so scaled dims compare equal however
  // the factors were grouped.
  if (b.is_const() && a.is_expr() && a.op() == Dim::Op::kMul && a.rhs().is_const()) {
    if (std::optional<int64_t> c = checked_mul(a.rhs().value(), b.value())) return a.lhs() * Dim(*c);
  }
  if (a.is_const() && b.is_expr() && b.op() == Dim::Op::kMul && b.rhs().is_const()) {
    if (std::optional<int64_t> c = checked_mul(b.rhs().value(), a.value())) return b.lhs() * Dim(*c);
  }
  // Keep constants on the right so that equal products print the same way.
  if (a.is_const()) return Dim::make_expr(Dim::Op::kMul, b, a);
  return Dim::make_expr(Dim::Op::kMul, a, b);
}

Dim Dim::floor_div(const Dim& a, const Dim& b) {
  if (a.is_unknown() || b.is_unknown()) return Dim();
  if (b.is_const() && b.value() == 0) return Dim();
  if (a.is_const() && b.is_const()) return const_or_unknown(floor_div_i(a.value(), b.value()));
  if (b.is_const() && b.value() == 1) return a;
  if (a.same_as(b)) return Dim(1);
  // (x*b)/b -> x and (b*x)/b -> x
  if (a.is_expr() && a.op() == Op::kMul) {
    if (a.rhs().same_as(b)) return a.lhs();
    if (a.lhs().same_as(b)) return a.rhs();
  }
  if (b.is_const() && b.value() > 0) {
    const int64_t c = b.value();
    // (x * c1) / c -> x * (c1 / c) when c divides c1
    if (has_positive_const_rhs(a, Op::kMul) && a.rhs().value() % c == 0) return a.lhs() * Dim(a.rhs().value() / c);
    // (x / c1) / c -> x / (c1 * c): floor division by positive divisors composes
    if (has_positive_const_rhs(a, Op::kFloorDiv)) {
      if (std::optional<int64_t> c2 = checked_mul(a.rhs().value(), c)) return floor_div(a.lhs(), Dim(*c2));
    }
  }
  return make_expr(Op::kFloorDiv, a, b);
}

Dim Dim::ceil_div(const Dim& a, const Dim& b) {
  if (a.is_unknown() || b.is_unknown()) return Dim();
  if (b.is_const() && b.value() == 0) return Dim();
  if (a.is_const() && b.is_const()) return const_or_unknown(ceil_div_i(a.value(), b.value()));
  if (b.is_const() && b.value() == 1) return a;
  if (a.same_as(b)) return Dim(1);
  // An exact division rounds neither way: (x*b) cdiv b -> x
  if (a.is_expr() && a.op() == Op::kMul) {
    if (a.rhs().same_as(b)) return a.lhs();
    if (a.lhs().same_as(b)) return a.rhs();
  }
  if (has_positive_const_rhs(a, Op::kMul) && b.is_const() && b.value() > 0 && a.rhs().value() % b.value() == 0)
    return a.lhs() * Dim(a.rhs().value() / b.value());
  return make_expr(Op::kCeilDiv, a, b);
}

Dim Dim::mod(const Dim& a, const Dim& b) {
  if (a.is_unknown() || b.is_unknown()) return Dim();
  if (b.is_const() && b.value() == 0) return Dim();
  if (a.is_const() && b.is_const()) return const_or_unknown(floor_mod_i(a.value(), b.value()));
  if (b.is_const() && b.value() == 1) return Dim(0);
  if (a.same_as(b)) return Dim(0);
  // (x * b) % b -> 0 and (b * x) % b -> 0
  if (a.is_expr() && a.op() == Op::kMul && (a.rhs().same_as(b) || a.lhs().same_as(b))) return Dim(0);
  if (b.is_const() && b.value() > 0) {
    const int64_t c = b.value();
    // (x * c1) % c -> 0 when c divides c1
    if (has_positive_const_rhs(a, Op::kMul) && a.rhs().value() % c == 0) return Dim(0);
    // (x % c1) % c -> x % c when c divides c1 (x % c1 keeps x's residue mod c)
    if (has_positive_const_rhs(a, Op::kMod) && a.rhs().value() % c == 0) return mod(a.lhs(), b);
  }
  return make_expr(Op::kMod, a, b);
}

Dim Dim::min(const Dim& a, const Dim& b) {
  if (a.is_unknown() || b.is_unknown()) return Dim();
  if (a.is_const() && b.is_const()) return Dim(std::min(a.value(), b.value()));
  if (a.same_as(b)) return a;
  return make_expr(Op::kMin, a, b);
}

Dim Dim::max(const Dim& a, const Dim& b) {
  if (a.is_unknown() || b.is_unknown()) return Dim();
  if (a.is_const() && b.is_const()) return Dim(std::max(a.value(), b.value()));
  if (a.same_as(b)) return a;
  return make_expr(Op::kMax, a, b);
}

bool Dim::same_as(const Dim& o) const {
  if (kind_ != o.kind_) return false;
  switch (kind_) {
    case Kind::kUnknown: return false;
    case Kind::kConst: return value_ == o.value_;
    case Kind::kSymbol: return node_->name == o.node_->name;
    case Kind::kExpr:
      if (node_ == o.node_) return true;
      return node_->op == o.node_->op && node_->a.same_as(o.node_->a) && node_->b.same_as(o.node_->b);
  }
  return false;
}

std::optional<int64_t> Dim::evaluate(const std::map<std::string, int64_t>& bindings) const {
  switch (kind_) {
    case Kind::kUnknown: return std::nullopt;
    case Kind::kConst: return value_;
    case Kind::kSymbol: {
      auto it = bindings.find(node_->name);
      if (it == bindings.end()) return std::nullopt;
      return it->second;
    }
    case Kind::kExpr: break;
  }
  auto a = node_->a.evaluate(bindings);
  auto b = node_->b.evaluate(bindings);
  if (!a || !b) return std::nullopt;
  switch (node_->op) {
    case Op::kAdd: return checked_add(*a, *b);
    case Op::kSub: return checked_sub(*a, *b);
    case Op::kMul: return checked_mul(*a, *b);
    case Op::kFloorDiv: return floor_div_i(*a, *b);
    case Op::kCeilDiv: return ceil_div_i(*a, *b);
    case Op::kMod: return floor_mod_i(*a, *b);
    case Op::kMin: return std::min(*a, *b);
    case Op::kMax: return std::max(*a, *b);
  }
  return std::nullopt;
}

void Dim::collect_symbols(std::vector<std::string>& out) const {
  if (kind_ == Kind::kSymbol) out.push_back(node_->name);
  if (kind_ == Kind::kExpr) {
    node_->a.collect_symbols(out);
    node_->b.collect_symbols(out);
  }
}

std::string Dim::to_string() const {
  switch (kind_) {
    case Kind::kUnknown: return "?";
    case Kind::kConst: return std::to_string(value_);
    case Kind::kSymbol: return node_->name;
    case Kind::kExpr: break;
  }
  const Op op = node_->op;
  if (op == Op::kMin || op == Op::kMax || op == Op::kCeilDiv)
    return std::string(op_token(op)) + "(" + node_->a.to_string() + "," + node_->b.to_string() + ")";
  return "(" + node_->a.to_string() + op_token(op) + node_->b.to_string() + ")";
}

namespace {
// Recursive-descent parser over the grammar in dim.h.
class DimParser {
 public:
  explicit DimParser(std::string_view s) : s_(s) {}

  StatusOr<Dim> parse_all() {
    KILN_ASSIGN_OR_RETURN(Dim d, parse_expr());
    skip_ws();
    if (pos_ != s_.size()) return error("unexpected trailing characters");
    return d;
  }

 private:
  Status error(const std::string& what) {
    return invalid_argument("bad dim expression '" + std::string(s_) + "' at offset " +
                            std::to_string(pos_) + ": " + what);
  }
  void skip_ws() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool eat(char c) {
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  StatusOr<Dim> parse_expr() {
    KILN_ASSIGN_OR_RETURN(Dim lhs, parse_term());
    for (;;) {
      if (eat('+')) {
        KILN_ASSIGN_OR_RETURN(Dim rhs, parse_term());
        lhs = lhs + rhs;
      } else if (eat('-')) {
        KILN_ASSIGN_OR_RETURN(Dim rhs, parse_term());
        lhs = lhs - rhs;
      } else {
        return lhs;
      }
    }
  }
  StatusOr<Dim> parse_term() {
    KILN_ASSIGN_OR_RETURN(Dim lhs, parse_atom());
    for (;;) {
      if (eat('*')) {
        KILN_ASSIGN_OR_RETURN(Dim rhs, parse_atom());
        lhs = lhs * rhs;
      } else if (eat('/')) {
        KILN_ASSIGN_OR_RETURN(Dim rhs, parse_atom());
        lhs = Dim::floor_div(lhs, rhs);
      } else if (eat('%')) {
        KILN_ASSIGN_OR_RETURN(Dim rhs, parse_atom());
        lhs = Dim::mod(lhs, rhs);
      } else {
        return lhs;
      }
    }
  }
  StatusOr<Dim> parse_atom() {
    skip_ws();
    if (pos_ >= s_.size()) return error("expected a dim");
    char c = s_[pos_];
    if (c == '?') {
      ++pos_;
      return Dim();
    }
    if (c == '(') {
      ++pos_;
      KILN_ASSIGN_OR_RETURN(Dim d, parse_expr());
      if (!eat(')')) return error("expected ')'");
      return d;
    }
    if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) {
      size_t start = pos_;
      if (c == '-') ++pos_;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      if (pos_ == start + (c == '-' ? 1u : 0u)) return error("expected digits");
      // from_chars, not stoll: a dim from a model or a plugin may have any
      // number of digits, and the engine does not use exceptions.
      int64_t v = 0;
      const char* first = s_.data() + start;
      const char* last = s_.data() + pos_;
      auto [end, ec] = std::from_chars(first, last, v);
      if (ec != std::errc() || end != last) return error("the number does not fit in int64");
      return Dim(v);
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t start = pos_;
      while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_'))
        ++pos_;
      std::string name(s_.substr(start, pos_ - start));
      if ((name == "min" || name == "max" || name == "cdiv") && eat('(')) {
        KILN_ASSIGN_OR_RETURN(Dim a, parse_expr());
        if (!eat(',')) return error("expected ','");
        KILN_ASSIGN_OR_RETURN(Dim b, parse_expr());
        if (!eat(')')) return error("expected ')'");
        if (name == "min") return Dim::min(a, b);
        if (name == "max") return Dim::max(a, b);
        return Dim::ceil_div(a, b);
      }
      return Dim::symbol(std::move(name));
    }
    return error(std::string("unexpected character '") + c + "'");
  }

  std::string_view s_;
  size_t pos_ = 0;
};
}  // namespace

StatusOr<Dim> Dim::parse(std::string_view text) { return DimParser(text).parse_all(); }

SymShape SymShape::from_concrete(const std::vector<int64_t>& shape) {
  std::vector<Dim> dims;
  dims.reserve(shape.size());
  for (int64_t d : shape) dims.emplace_back(d);
  return SymShape(std::move(dims));
}

bool SymShape::is_static() const {
  if (!has_rank) return false;
  for (const Dim& d : dims)
    if (!d.is_const()) return false;
  return true;
}

std::vector<int64_t> SymShape::concrete() const {
  std::vector<int64_t> out;
  out.reserve(dims.size());
  for (const Dim& d : dims) out.push_back(d.is_const() ? d.value() : -1);
  return out;
}

bool SymShape::same_as(const SymShape& o) const {
  if (has_rank != o.has_rank) return false;
  if (!has_rank) return true;
  if (dims.size() != o.dims.size()) return false;
  for (size_t i = 0; i < dims.size(); ++i)
    if (!dims[i].same_as(o.dims[i])) return false;
  return true;
}

std::string SymShape::to_string() const {
  if (!has_rank) return "[*]";
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ",";
    s += dims[i].to_string();
  }
  return s + "]";
}

}  // namespace kiln::ir
