// RDP's facts and their refinement rule; see analysis.h.
#include "plugins/rdp/analysis.h"

#include <set>

namespace kiln_rdp {

const Fact* Facts::get(kiln_value_id_t v) const {
  return v >= 0 && static_cast<size_t>(v) < facts_.size() ? &facts_[static_cast<size_t>(v)] : nullptr;
}

int Facts::rank(kiln_value_id_t v) const {
  const Fact* f = get(v);
  return f ? f->rank : -1;
}

Expr Facts::dim(kiln_value_id_t v, size_t k) const {
  const Fact* f = get(v);
  return f && f->rank >= 0 && k < f->dims.size() ? f->dims[k] : Expr();
}

std::optional<std::vector<Expr>> Facts::dims(kiln_value_id_t v) const {
  const Fact* f = get(v);
  if (!f || f->rank < 0) return std::nullopt;
  return f->dims;
}

const std::vector<Expr>* Facts::values(kiln_value_id_t v) const {
  const Fact* f = get(v);
  return f && f->has_values ? &f->values : nullptr;
}

std::optional<std::vector<int64_t>> Facts::const_values(kiln_value_id_t v) const {
  const std::vector<Expr>* vals = values(v);
  if (!vals) return std::nullopt;
  std::vector<int64_t> out;
  for (const Expr& e : *vals) {
    if (!e.is_const()) return std::nullopt;
    out.push_back(e.value());
  }
  return out;
}

bool Facts::refine(Expr& have, const Expr& next, bool pinned) {
  if (!next.known() || have.same(next)) return false;
  if (!have.known()) {
    have = next;
    return true;
  }
  if (have.is_const()) {
    if (next.is_const()) ++conflicts_;
    return false;
  }
  // An expression gives way to a constant, except a pinned input symbol.
  if (next.is_const() && !(pinned && have.is_symbol())) {
    have = next;
    return true;
  }
  return false;
}

bool Facts::set_rank(kiln_value_id_t v, int rank) {
  const Fact* f = get(v);
  if (!f || rank < 0 || f->rank >= 0) return false;
  Fact& fact = at(v);
  fact.rank = rank;
  fact.dims.assign(static_cast<size_t>(rank), Expr());
  return bump(v, true);
}

bool Facts::set_dim(kiln_value_id_t v, size_t k, const Expr& e) {
  const Fact* f = get(v);
  if (!f || f->rank < 0 || k >= f->dims.size()) return false;
  // A dim is never negative; such a "fact" comes from an invalid model.
  if (e.is_const() && e.value() < 0) return false;
  Fact& fact = at(v);
  return bump(v, refine(fact.dims[k], e, fact.pinned));
}

bool Facts::set_shape(kiln_value_id_t v, const std::vector<Expr>& dims) {
  if (!get(v)) return false;
  bool changed = set_rank(v, static_cast<int>(dims.size()));
  if (rank(v) != static_cast<int>(dims.size())) return changed;
  for (size_t k = 0; k < dims.size(); ++k) changed |= set_dim(v, k, dims[k]);
  return changed;
}

bool Facts::set_values(kiln_value_id_t v, const std::vector<Expr>& values) {
  const Fact* f = get(v);
  if (!f || values.size() > kMaxValueElements) return false;
  Fact& fact = at(v);
  if (!fact.has_values) {
    fact.has_values = true;
    fact.values.assign(values.size(), Expr());
  } else if (fact.values.size() != values.size()) {
    return false;
  }
  bool changed = false;
  for (size_t i = 0; i < values.size(); ++i) changed |= refine(fact.values[i], values[i], false);
  return bump(v, changed);
}

bool keeps_input_shape(const NodeRef& n) {
  static const std::set<std::string, std::less<>> ops = {
      "Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Erf", "Neg", "Abs", "Reciprocal", "Floor", "Ceil", "Round",
      "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Softsign", "Not",
      "Sign", "Softplus", "Mish", "Elu", "Selu", "Celu", "Gelu", "LeakyRelu", "HardSigmoid", "HardSwish",
      "ThresholdedRelu", "Shrink", "IsNaN", "IsInf", "Clip", "Cast", "CastLike", "Identity", "Dropout",
      "Softmax", "LogSoftmax", "Hardmax", "BatchNormalization", "InstanceNormalization", "LayerNormalization",
      "GroupNormalization", "LpNormalization", "CumSum", "Trilu", "EyeLike", "ScatterElements", "ScatterND"};
  if (n.domain == "kiln") return n.op == "Silu";
  return n.domain.empty() && ops.count(n.op);
}

bool broadcasts(const NodeRef& n) {
  static const std::set<std::string, std::less<>> ops = {
      "Add", "Sub", "Mul", "Div", "Mod", "Pow", "Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual",
      "And", "Or", "Xor", "BitShift", "Sum", "Mean", "Max", "Min", "Where", "PRelu"};
  return n.domain.empty() && ops.count(n.op);
}

std::optional<size_t> norm_axis(int64_t axis, int rank) {
  if (rank < 0) return std::nullopt;
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return std::nullopt;
  return static_cast<size_t>(axis);
}

std::optional<std::vector<int64_t>> input_ints(const NodeRef& n, const Facts& f, size_t i) {
  const kiln_value_id_t v = n.input(i);
  if (v == KILN_NO_ID) return std::nullopt;
  return f.const_values(v);
}

std::optional<std::vector<int64_t>> axes_input(const NodeRef& n, const Facts& f, size_t i) {
  if (n.input(i) != KILN_NO_ID) return input_ints(n, f, i);
  return n.attr_ints("axes");
}

std::optional<std::vector<Expr>> without_axes(const std::vector<Expr>& dims, const std::vector<int64_t>& axes) {
  std::vector<bool> drop(dims.size(), false);
  for (int64_t a : axes) {
    auto k = norm_axis(a, static_cast<int>(dims.size()));
    if (!k) return std::nullopt;
    drop[*k] = true;
  }
  std::vector<Expr> out;
  for (size_t k = 0; k < dims.size(); ++k)
    if (!drop[k]) out.push_back(dims[k]);
  return out;
}

}  // namespace kiln_rdp
