// Expr: one element of RDP's value domain (SoD² Fig. 2) as the plugin sees it.
//
// The plugin speaks only the ABI, where a dim crosses as text in the host's
// Dim syntax ("64", "seq", "((h*2)+1)", "?"). RDP must do arithmetic on such
// dims (a Concat's sum, the -1 of a Reshape, the values of a shape
// computation) and compare them, so it keeps a small expression tree whose
// printed form is that same syntax: what it hands back through
// rw_set_value_dims parses on the host, which simplifies further.
//
// An Expr is undef (nothing known yet: the lattice's top), a known constant,
// a symbolic constant (a named input dim) or an op-inferred expression over
// them. Two Exprs are the same fact when their printed forms are equal; the
// folding below keeps equal quantities printing alike in the common cases
// (constants folded, constants on the right of products, a*b/b -> a).
//
// Values are immutable; sub-trees are shared. Not thread-safe to mutate (it
// never is mutated).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln_rdp {

class Expr {
 public:
  Expr() = default;  // undef
  Expr(int64_t c);   // NOLINT: a known constant converts implicitly
  static Expr symbol(const std::string& name);
  // Parses the host's Dim text; undef for "?", empty or unparsable text (an
  // unparsable dim is as good as unknown to the analysis).
  static Expr parse(const std::string& text);

  bool known() const { return kind_ != Kind::kUndef; }
  bool is_const() const { return kind_ == Kind::kConst; }
  bool is_symbol() const { return kind_ == Kind::kSymbol; }
  int64_t value() const { return value_; }  // only for constants
  // The host's Dim syntax; "?" when undef.
  const std::string& text() const { return text_; }
  // Same known quantity (by printed form); undef is never the same as anything.
  bool same(const Expr& o) const { return known() && o.known() && text_ == o.text_; }
  // True when the value cannot be negative: constants >= 0, symbols (they
  // name dims) and +, *, /, %, min, max, cdiv of such.
  bool nonneg() const;

  friend Expr operator+(const Expr& a, const Expr& b);
  friend Expr operator-(const Expr& a, const Expr& b);
  friend Expr operator*(const Expr& a, const Expr& b);
  static Expr floor_div(const Expr& a, const Expr& b);
  static Expr ceil_div(const Expr& a, const Expr& b);
  static Expr mod(const Expr& a, const Expr& b);
  static Expr min(const Expr& a, const Expr& b);
  static Expr max(const Expr& a, const Expr& b);

  // The product of `factors` (1 for none); undef if any is undef.
  static Expr product(const std::vector<Expr>& factors);
  // prod(num) / prod(den) for an exact division (a Reshape's -1, a backward
  // Reshape): factors that appear on both sides cancel and constants fold,
  // so [b, s, 64] / [b, 64] is s. Undef if any factor is undef.
  static Expr quotient(const std::vector<Expr>& num, const std::vector<Expr>& den);

 private:
  enum class Kind : uint8_t { kUndef, kConst, kSymbol, kOp };
  struct Node;  // op and operands, defined in expr.cc
  static Expr make(char op, const Expr& a, const Expr& b);
  // Non-constant factors of a product tree, and its constant coefficient.
  void factors(std::vector<Expr>& out, int64_t& coefficient) const;

  Kind kind_ = Kind::kUndef;
  int64_t value_ = 0;
  std::shared_ptr<const Node> node_;
  std::string text_ = "?";
};

}  // namespace kiln_rdp
