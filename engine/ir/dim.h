// Dim: one dimension of a symbolic shape.
//
// A dim is a known constant, a named symbol ("seq", "h"), an expression over
// symbols ("(h*2)", "((w+1)/2)"), or unknown (the bottom of what shape
// inference can say). This is the value domain of SoD²'s rank-and-dimension
// propagation; shape inference is written once in terms of Dim arithmetic, so
// the same function answers both for concrete shapes (everything folds to
// constants) and for symbolic ones (expressions build up).
//
// Dims are immutable values; expression nodes are shared, never mutated.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/status.h"

namespace kiln::ir {

class Dim {
 public:
  enum class Kind : uint8_t { kUnknown, kConst, kSymbol, kExpr };
  enum class Op : uint8_t { kAdd, kSub, kMul, kFloorDiv, kCeilDiv, kMod, kMin, kMax };

  Dim() = default;  // unknown
  Dim(int64_t value) : kind_(Kind::kConst), value_(value) {}  // NOLINT: implicit by design
  Dim(int value) : Dim(static_cast<int64_t>(value)) {}        // NOLINT
  static Dim unknown() { return Dim(); }
  static Dim symbol(std::string name);

  Kind kind() const { return kind_; }
  bool is_unknown() const { return kind_ == Kind::kUnknown; }
  bool is_const() const { return kind_ == Kind::kConst; }
  bool is_symbol() const { return kind_ == Kind::kSymbol; }
  bool is_expr() const { return kind_ == Kind::kExpr; }
  // True for constants, symbols and expressions: everything but unknown.
  bool is_known() const { return kind_ != Kind::kUnknown; }
  int64_t value() const { return value_; }        // only for constants
  const std::string& symbol_name() const;          // only for symbols
  Op op() const;                                    // only for expressions
  const Dim& lhs() const;                           // only for expressions
  const Dim& rhs() const;                           // only for expressions

  // Arithmetic with folding and light simplification (x+0, x*1, x*0, c1+c2,
  // (a*b)/b). Any unknown operand makes the result unknown.
  friend Dim operator+(const Dim& a, const Dim& b);
  friend Dim operator-(const Dim& a, const Dim& b);
  friend Dim operator*(const Dim& a, const Dim& b);
  static Dim floor_div(const Dim& a, const Dim& b);
  static Dim ceil_div(const Dim& a, const Dim& b);
  static Dim mod(const Dim& a, const Dim& b);
  static Dim min(const Dim& a, const Dim& b);
  static Dim max(const Dim& a, const Dim& b);

  // Structural equality (symbols by name; unknown never equals anything, not
  // even another unknown, since two unknown dims need not be the same size).
  bool same_as(const Dim& other) const;
  // Evaluates with symbol bindings; nullopt if unknown or a symbol is unbound,
  // or on division by zero.
  std::optional<int64_t> evaluate(const std::map<std::string, int64_t>& bindings) const;
  // Symbols this dim mentions, appended to `out` (may repeat).
  void collect_symbols(std::vector<std::string>& out) const;

  // "3", "seq", "(h*2)", "?".
  std::string to_string() const;
  // Parses what to_string prints. Grammar: expr := term (('+'|'-') term)*;
  // term := atom (('*'|'/'|'%'|'\'') atom)* where '\'' is ceil-div written "cdiv";
  // atom := int | symbol | '?' | '(' expr ')' | ('min'|'max'|'cdiv') '(' expr ',' expr ')'.
  static StatusOr<Dim> parse(std::string_view text);

 private:
  struct ExprNode;
  static Dim make_expr(Op op, Dim a, Dim b);

  Kind kind_ = Kind::kUnknown;
  int64_t value_ = 0;
  std::shared_ptr<const ExprNode> node_;  // symbol name or expression
};

// A possibly unranked symbolic shape.
struct SymShape {
  bool has_rank = false;
  std::vector<Dim> dims;

  SymShape() = default;
  explicit SymShape(std::vector<Dim> d) : has_rank(true), dims(std::move(d)) {}
  static SymShape unranked() { return SymShape(); }
  static SymShape from_concrete(const std::vector<int64_t>& shape);

  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  // True when ranked and every dim is a constant.
  bool is_static() const;
  // Concrete dims, when is_static().
  std::vector<int64_t> concrete() const;
  bool same_as(const SymShape& other) const;
  std::string to_string() const;  // "[1,3,h,w]", "[*]" when unranked
};

}  // namespace kiln::ir
