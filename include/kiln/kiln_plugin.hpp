// Header-only C++ helper for writing Kiln plugins against kiln_plugin.h.
//
// A plugin author derives from kiln::plugin::Pass, implements run() over a
// GraphView and a Rewriter, and lists the passes in a Plugin. Everything
// still crosses the boundary as the C ABI: this header only wraps it. Plugins
// may use exceptions; the trampoline catches anything escaping run() and
// turns it into an error status, so an exception never unwinds into the host.
// It also reads dims for a plugin: DimExpr parses and evaluates the dim text
// the host prints, and GraphView::infer_dims asks the host's own shape
// inference (ABI 1.2), so no plugin writes its own parser or per-op shapes;
// GraphView::op_mapping gives an op's DNNFusion mapping type (ABI 1.3).
// GraphView::target_info says what the device compiled for can do (ABI 1.3).
//
//   class FoldThings : public kiln::plugin::Pass { void run(GraphView&, Rewriter&) override; };
//   static FoldThings fold;
//   static const kiln_pass_t fold_pass = kiln::plugin::make_pass(fold, "acme.fold-things", "...");
//   static const kiln_pass_t* const passes[] = {&fold_pass};
//   static const kiln_plugin_t plugin = kiln::plugin::make_plugin("acme", "1.0", passes, 1);
//   KILN_PLUGIN_DEFINE_QUERY(kiln_plugin_query, plugin)
#pragma once

#include <cctype>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "kiln/kiln_plugin.h"

namespace kiln::plugin {

// Thrown inside a pass to fail it with a code and message.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, kiln_plugin_code_t code = KILN_PLUGIN_INVALID_ARGUMENT)
      : std::runtime_error(message), code_(code) {}
  kiln_plugin_code_t code() const { return code_; }

 private:
  kiln_plugin_code_t code_;
};

// A dim's text form (kiln_dim_t::expr, what rw_set_value_dims takes) parsed
// into a tree, so a plugin can evaluate it with symbol bindings or walk it
// without writing its own parser. The grammar is the host's (ir::Dim):
//   expr := term (('+'|'-') term)*
//   term := atom (('*'|'/'|'%') atom)*          '/' and '%' round to -inf
//   atom := int | symbol | '?' | '(' expr ')' | ('min'|'max'|'cdiv') '(' expr ',' expr ')'
// where a symbol is [A-Za-z_][A-Za-z0-9_]* and cdiv is ceiling division.
// The tree is what the text says, unsimplified (the host simplifies when it
// parses). Immutable; sub-trees are shared.
class DimExpr {
 public:
  enum class Kind : uint8_t { kUnknown, kConst, kSymbol, kOp };
  enum class Op : char { kAdd = '+', kSub = '-', kMul = '*', kFloorDiv = '/', kMod = '%', kCeilDiv = 'c', kMin = 'm', kMax = 'M' };

  DimExpr() = default;  // unknown ("?")
  static DimExpr constant(int64_t value) {
    DimExpr e;
    e.kind_ = Kind::kConst;
    e.value_ = value;
    return e;
  }
  static DimExpr symbol(std::string name) {
    DimExpr e;
    e.kind_ = Kind::kSymbol;
    e.node_ = std::make_shared<const Node>(Node{Op::kAdd, std::move(name), {}});
    return e;
  }
  static DimExpr op(Op op, DimExpr lhs, DimExpr rhs) {
    DimExpr e;
    e.kind_ = Kind::kOp;
    e.node_ = std::make_shared<const Node>(Node{op, {}, {std::move(lhs), std::move(rhs)}});
    return e;
  }

  // Parses `text`; nullopt when it does not parse, with `*error` (if given)
  // saying where and why: "bad dim expression '(h*' at offset 3: expected a dim".
  static std::optional<DimExpr> parse(std::string_view text, std::string* error = nullptr) {
    Parser p{text, 0, {}};
    std::optional<DimExpr> e = p.expr();
    p.skip();
    if (e && p.pos != text.size()) p.fail("unexpected trailing characters"), e.reset();
    if (!e && error)
      *error = "bad dim expression '" + std::string(text) + "' at offset " + std::to_string(p.pos) + ": " + p.what;
    return e;
  }

  Kind kind() const { return kind_; }
  bool is_unknown() const { return kind_ == Kind::kUnknown; }
  bool is_const() const { return kind_ == Kind::kConst; }
  bool is_symbol() const { return kind_ == Kind::kSymbol; }
  int64_t value() const { return value_; }                    // constants only
  const std::string& name() const { return node_->name; }     // symbols only
  Op op() const { return node_->op; }                         // ops only
  const DimExpr& lhs() const { return node_->args[0]; }       // ops only
  const DimExpr& rhs() const { return node_->args[1]; }       // ops only

  // The value with `bindings` for symbols. An unbound symbol or "?" takes
  // `fallback` when given; otherwise, like a division by zero, makes the
  // result nullopt.
  std::optional<int64_t> evaluate(const std::map<std::string, int64_t>& bindings,
                                  std::optional<int64_t> fallback = std::nullopt) const {
    switch (kind_) {
      case Kind::kUnknown: return fallback;
      case Kind::kConst: return value_;
      case Kind::kSymbol: {
        auto it = bindings.find(node_->name);
        return it != bindings.end() ? std::optional<int64_t>(it->second) : fallback;
      }
      case Kind::kOp: break;
    }
    const std::optional<int64_t> a = lhs().evaluate(bindings, fallback), b = rhs().evaluate(bindings, fallback);
    if (!a || !b) return std::nullopt;
    switch (op()) {
      case Op::kAdd: return *a + *b;
      case Op::kSub: return *a - *b;
      case Op::kMul: return *a * *b;
      case Op::kMin: return *a < *b ? *a : *b;
      case Op::kMax: return *a < *b ? *b : *a;
      case Op::kFloorDiv: return *b == 0 ? std::nullopt : std::optional<int64_t>(floor_div(*a, *b));
      case Op::kCeilDiv: return *b == 0 ? std::nullopt : std::optional<int64_t>(-floor_div(-*a, *b));
      case Op::kMod: return *b == 0 ? std::nullopt : std::optional<int64_t>(*a - floor_div(*a, *b) * *b);
    }
    return std::nullopt;
  }

  // Symbols mentioned, appended in order (may repeat).
  void collect_symbols(std::vector<std::string>& out) const {
    if (kind_ == Kind::kSymbol) out.push_back(node_->name);
    if (kind_ == Kind::kOp) lhs().collect_symbols(out), rhs().collect_symbols(out);
  }

  // The text form, fully parenthesized as the host prints: "((h*2)+1)", "cdiv(w,4)", "?".
  std::string to_string() const {
    switch (kind_) {
      case Kind::kUnknown: return "?";
      case Kind::kConst: return std::to_string(value_);
      case Kind::kSymbol: return node_->name;
      case Kind::kOp: break;
    }
    const Op o = op();
    if (o == Op::kMin || o == Op::kMax || o == Op::kCeilDiv)
      return std::string(o == Op::kMin ? "min" : o == Op::kMax ? "max" : "cdiv") + "(" + lhs().to_string() + "," +
             rhs().to_string() + ")";
    return "(" + lhs().to_string() + static_cast<char>(o) + rhs().to_string() + ")";
  }

 private:
  struct Node {
    Op op;
    std::string name;           // symbols
    std::vector<DimExpr> args;  // ops: lhs, rhs (a vector: DimExpr is incomplete here)
  };
  static int64_t floor_div(int64_t a, int64_t b) {
    const int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
  }
  // Recursive descent over the grammar above; `what` says why it stopped.
  struct Parser {
    std::string_view s;
    size_t pos = 0;
    std::string what;

    std::nullopt_t fail(const char* why) {
      if (what.empty()) what = why;
      return std::nullopt;
    }
    void skip() {
      while (pos < s.size() && std::isspace(static_cast<unsigned char>(s[pos]))) ++pos;
    }
    bool eat(char c) {
      skip();
      if (pos < s.size() && s[pos] == c) return ++pos, true;
      return false;
    }
    std::optional<DimExpr> expr() {
      std::optional<DimExpr> e = term();
      while (e) {
        const bool add = eat('+');
        if (!add && !eat('-')) break;
        std::optional<DimExpr> r = term();
        if (!r) return std::nullopt;
        e = op(add ? Op::kAdd : Op::kSub, std::move(*e), std::move(*r));
      }
      return e;
    }
    std::optional<DimExpr> term() {
      std::optional<DimExpr> e = atom();
      while (e) {
        Op o;
        if (eat('*')) o = Op::kMul;
        else if (eat('/')) o = Op::kFloorDiv;
        else if (eat('%')) o = Op::kMod;
        else break;
        std::optional<DimExpr> r = atom();
        if (!r) return std::nullopt;
        e = op(o, std::move(*e), std::move(*r));
      }
      return e;
    }
    std::optional<DimExpr> atom() {
      skip();
      if (pos >= s.size()) return fail("expected a dim");
      const char c = s[pos];
      if (c == '?') return ++pos, DimExpr();
      if (c == '(') {
        ++pos;
        std::optional<DimExpr> e = expr();
        if (e && !eat(')')) return fail("expected ')'");
        return e;
      }
      if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) {
        const size_t start = pos;
        if (c == '-') ++pos;
        while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) ++pos;
        if (pos == start + (c == '-' ? 1u : 0u)) return fail("expected digits");
        int64_t v = 0;
        const auto [end, err] = std::from_chars(s.data() + start, s.data() + pos, v);
        if (err != std::errc() || end != s.data() + pos) return pos = start, fail("integer out of range");
        return constant(v);
      }
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        const size_t start = pos;
        while (pos < s.size() && (std::isalnum(static_cast<unsigned char>(s[pos])) || s[pos] == '_')) ++pos;
        std::string name(s.substr(start, pos - start));
        if ((name == "min" || name == "max" || name == "cdiv") && eat('(')) {
          std::optional<DimExpr> a = expr();
          if (!a) return std::nullopt;
          if (!eat(',')) return fail("expected ','");
          std::optional<DimExpr> b = expr();
          if (!b) return std::nullopt;
          if (!eat(')')) return fail("expected ')'");
          return op(name == "min" ? Op::kMin : name == "max" ? Op::kMax : Op::kCeilDiv, std::move(*a), std::move(*b));
        }
        return symbol(std::move(name));
      }
      return fail("unexpected character");
    }
  };

  Kind kind_ = Kind::kUnknown;
  int64_t value_ = 0;
  std::shared_ptr<const Node> node_;
};

struct Dim {
  bool is_const = false;
  bool is_unknown = true;
  int64_t value = 0;
  std::string expr;
};

struct ValueInfo {
  std::string name;
  int32_t dtype = 0;
  int32_t rank = -1;
  kiln_node_id_t producer = KILN_NO_ID;
  int32_t producer_output = 0;
  bool is_constant = false;
  kiln_region_id_t region = 0;
};

struct NodeInfo {
  std::string op;
  std::string domain;
  std::string name;
  size_t input_count = 0;
  size_t output_count = 0;
  kiln_region_id_t region = 0;
};

struct Use {
  kiln_node_id_t node = KILN_NO_ID;  // KILN_NO_ID: a region output
  size_t index = 0;                  // input index, or region output index
};

// A shape in dim text ("4", "seq", "(h*2)", "?"); nullopt: unknown rank.
using ShapeText = std::optional<std::vector<std::string>>;

// One input of GraphView::infer_dims.
struct InferInput {
  ShapeText dims;
  // Shape data: the elements of a rank <= 1 integer input, when known.
  std::optional<std::vector<std::string>> values;
};

// Read access to the (staged) graph during one pass run.
class GraphView {
 public:
  GraphView(const kiln_host_api_t* host, const kiln_graph_t* graph) : host_(host), g_(graph) {}
  const kiln_host_api_t* host() const { return host_; }
  const kiln_graph_t* raw() const { return g_; }

  size_t region_count() const { return host_->region_count(g_); }
  // A snapshot of the region's node order (safe to iterate while editing).
  std::vector<kiln_node_id_t> nodes(kiln_region_id_t region = 0) const {
    std::vector<kiln_node_id_t> out(host_->region_node_count(g_, region));
    for (size_t i = 0; i < out.size(); ++i) out[i] = host_->region_node_at(g_, region, i);
    return out;
  }
  std::vector<kiln_value_id_t> region_inputs(kiln_region_id_t region = 0) const {
    std::vector<kiln_value_id_t> out(host_->region_input_count(g_, region));
    for (size_t i = 0; i < out.size(); ++i) out[i] = host_->region_input_at(g_, region, i);
    return out;
  }
  std::vector<kiln_value_id_t> region_outputs(kiln_region_id_t region = 0) const {
    std::vector<kiln_value_id_t> out(host_->region_output_count(g_, region));
    for (size_t i = 0; i < out.size(); ++i) out[i] = host_->region_output_at(g_, region, i);
    return out;
  }

  // nullopt for an erased or unknown node.
  std::optional<NodeInfo> node(kiln_node_id_t id) const {
    kiln_node_info_t info{};
    info.struct_size = sizeof(info);
    if (!host_->node_info(g_, id, &info)) return std::nullopt;
    return NodeInfo{info.op ? info.op : "", info.domain ? info.domain : "", info.name ? info.name : "",
                    info.input_count, info.output_count, info.region};
  }
  std::vector<kiln_value_id_t> inputs(kiln_node_id_t id) const {
    auto n = node(id);
    std::vector<kiln_value_id_t> out(n ? n->input_count : 0);
    for (size_t i = 0; i < out.size(); ++i) out[i] = host_->node_input(g_, id, i);
    return out;
  }
  std::vector<kiln_value_id_t> outputs(kiln_node_id_t id) const {
    auto n = node(id);
    std::vector<kiln_value_id_t> out(n ? n->output_count : 0);
    for (size_t i = 0; i < out.size(); ++i) out[i] = host_->node_output(g_, id, i);
    return out;
  }

  kiln_attr_kind_t attr_kind(kiln_node_id_t id, const char* key) const { return host_->attr_kind(g_, id, key); }
  bool has_attr(kiln_node_id_t id, const char* key) const { return attr_kind(id, key) != KILN_ATTR_NONE; }
  int64_t attr_int(kiln_node_id_t id, const char* key, int64_t fallback) const {
    return host_->attr_int(g_, id, key, fallback);
  }
  float attr_float(kiln_node_id_t id, const char* key, float fallback) const {
    return host_->attr_float(g_, id, key, fallback);
  }
  std::string attr_string(kiln_node_id_t id, const char* key, const std::string& fallback = {}) const {
    const char* s = host_->attr_string(g_, id, key);
    return s ? s : fallback;
  }
  std::vector<int64_t> attr_ints(kiln_node_id_t id, const char* key) const {
    std::vector<int64_t> out(host_->attr_ints(g_, id, key, nullptr, 0));
    host_->attr_ints(g_, id, key, out.data(), out.size());
    return out;
  }
  // Attribute names in name order; nullopt when the host cannot list them.
  std::optional<std::vector<std::string>> attr_names(kiln_node_id_t id) const {
    if (!KILN_PLUGIN_HAS_FIELD(host_, kiln_host_api_t, attr_name_at) || !host_->attr_name_at) return std::nullopt;
    std::vector<std::string> out;
    for (size_t i = 0;; ++i) {
      const char* name = host_->attr_name_at(g_, id, i);
      if (!name) break;
      out.emplace_back(name);
    }
    return out;
  }
  std::vector<float> attr_floats(kiln_node_id_t id, const char* key) const {
    std::vector<float> out(host_->attr_floats(g_, id, key, nullptr, 0));
    host_->attr_floats(g_, id, key, out.data(), out.size());
    return out;
  }

  std::optional<ValueInfo> value(kiln_value_id_t id) const {
    kiln_value_info_t info{};
    info.struct_size = sizeof(info);
    if (id == KILN_NO_ID || !host_->value_info(g_, id, &info)) return std::nullopt;
    return ValueInfo{info.name ? info.name : "", info.dtype,          info.rank,  info.producer,
                     info.producer_output,       info.is_constant != 0, info.region};
  }
  bool is_constant(kiln_value_id_t id) const {
    auto v = value(id);
    return v && v->is_constant;
  }
  // Dims of a ranked value; nullopt when the rank is unknown.
  std::optional<std::vector<Dim>> shape(kiln_value_id_t id) const {
    auto v = value(id);
    if (!v || v->rank < 0) return std::nullopt;
    std::vector<Dim> dims;
    for (int32_t a = 0; a < v->rank; ++a) {
      kiln_dim_t d{};
      d.struct_size = sizeof(d);
      if (!host_->value_dim(g_, id, static_cast<size_t>(a), &d)) return std::nullopt;
      dims.push_back(Dim{d.is_const != 0, d.is_unknown != 0, d.value, d.expr ? d.expr : ""});
    }
    return dims;
  }
  // Concrete dims when every dim is a constant.
  std::optional<std::vector<int64_t>> static_shape(kiln_value_id_t id) const {
    auto dims = shape(id);
    if (!dims) return std::nullopt;
    std::vector<int64_t> out;
    for (const Dim& d : *dims) {
      if (!d.is_const) return std::nullopt;
      out.push_back(d.value);
    }
    return out;
  }
  // Raw row-major bytes of a constant (nullptr if not constant).
  const void* constant_data(kiln_value_id_t id, size_t* bytes) const { return host_->value_constant(g_, id, bytes); }
  std::vector<Use> uses(kiln_value_id_t id) const {
    std::vector<Use> out(host_->value_use_count(g_, id));
    for (size_t i = 0; i < out.size(); ++i) host_->value_use_at(g_, id, i, &out[i].node, &out[i].index);
    return out;
  }
  std::optional<std::string> node_annotation(kiln_node_id_t id, const char* key) const {
    const char* s = host_->node_annotation(g_, id, key);
    return s ? std::optional<std::string>(s) : std::nullopt;
  }
  std::optional<std::string> value_annotation(kiln_value_id_t id, const char* key) const {
    const char* s = host_->value_annotation(g_, id, key);
    return s ? std::optional<std::string>(s) : std::nullopt;
  }

  // ABI 1.3: the op's DNNFusion mapping type (a kiln_mapping_t number);
  // KILN_MAPPING_UNKNOWN for an op the host does not know or a host before 1.3.
  int32_t op_mapping(const std::string& domain, const std::string& op) const {
    if (!KILN_PLUGIN_HAS_FIELD(host_, kiln_host_api_t, op_mapping) || !host_->op_mapping) return KILN_MAPPING_UNKNOWN;
    return host_->op_mapping(domain.c_str(), op.c_str());
  }

  // ABI 1.3: the device the pipeline compiles for (shared memory, compute
  // units, subgroup size, ...); nullopt when it runs for none or the host
  // predates 1.3. Fields the host does not know stay zero.
  std::optional<kiln_target_info_t> target_info() const {
    if (!KILN_PLUGIN_HAS_FIELD(host_, kiln_host_api_t, target_info) || !host_->target_info) return std::nullopt;
    kiln_target_info_t info{};
    info.struct_size = sizeof(info);
    if (!host_->target_info(g_, &info)) return std::nullopt;
    return info;
  }

  // ABI 1.2: whether the host can run its shape inference on given dims.
  bool can_infer_dims() const {
    return KILN_PLUGIN_HAS_FIELD(host_, kiln_host_api_t, infer_node_dims) && host_->infer_node_dims;
  }
  // The node's output shapes by the host's own inference on `inputs` (one
  // per node input; constants are the host's own); nullopt when the host
  // cannot infer this node (see kiln_host_api_t::infer_node_dims).
  std::optional<std::vector<ShapeText>> infer_dims(kiln_node_id_t id, const std::vector<InferInput>& inputs) const {
    auto n = node(id);
    if (!n || !can_infer_dims() || inputs.size() != n->input_count) return std::nullopt;
    std::vector<int32_t> ranks;
    std::vector<std::vector<const char*>> dims(inputs.size()), values(inputs.size());
    std::vector<const char* const*> dim_ptrs, value_ptrs;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const ShapeText& shape = inputs[i].dims;
      ranks.push_back(shape ? static_cast<int32_t>(shape->size()) : -1);
      if (shape)
        for (const std::string& d : *shape) dims[i].push_back(d.c_str());
      // The host reads as many values as the dims say (1 for a scalar).
      const bool counted = shape && shape->size() <= 1 && inputs[i].values &&
                           (shape->empty() ? "1" : shape->front()) == std::to_string(inputs[i].values->size());
      if (counted)
        for (const std::string& v : *inputs[i].values) values[i].push_back(v.c_str());
      dim_ptrs.push_back(dims[i].data());
      value_ptrs.push_back(counted ? values[i].data() : nullptr);
    }
    std::vector<int32_t> out_ranks(n->output_count, -1);
    std::vector<const char* const*> out_dims(n->output_count, nullptr);
    if (!host_->infer_node_dims(g_, id, ranks.data(), dim_ptrs.data(), value_ptrs.data(), out_ranks.data(),
                                out_dims.data(), out_ranks.size()))
      return std::nullopt;
    std::vector<ShapeText> out(n->output_count);
    for (size_t k = 0; k < out.size(); ++k) {
      if (out_ranks[k] < 0 || (out_ranks[k] > 0 && !out_dims[k])) continue;
      out[k].emplace();
      for (int32_t a = 0; a < out_ranks[k]; ++a) out[k]->push_back(out_dims[k][a]);
    }
    return out;
  }

 private:
  const kiln_host_api_t* host_;
  const kiln_graph_t* g_;
};

// Staged edits. Every call that the host refuses throws Error (the host also
// remembers the failure and will not commit the run).
class Rewriter {
 public:
  Rewriter(const kiln_host_api_t* host, kiln_rewriter_t* rw) : host_(host), rw_(rw) {}
  kiln_rewriter_t* raw() const { return rw_; }

  kiln_value_id_t add_value(const std::string& name, int32_t dtype, kiln_region_id_t region = 0) {
    return check_id(host_->rw_add_value(rw_, name.c_str(), dtype, region), "add_value");
  }
  kiln_value_id_t add_constant(const std::string& name, int32_t dtype, const std::vector<int64_t>& shape,
                               const void* data, size_t bytes, kiln_region_id_t region = 0) {
    return check_id(
        host_->rw_add_constant(rw_, name.c_str(), dtype, shape.data(), shape.size(), data, bytes, region),
        "add_constant");
  }
  kiln_node_id_t add_node(const std::string& op, const std::vector<kiln_value_id_t>& inputs,
                          const std::vector<kiln_value_id_t>& outputs, const std::string& name = {},
                          kiln_region_id_t region = 0, kiln_node_id_t insert_before = KILN_NO_ID,
                          const std::string& domain = {}) {
    return check_id(host_->rw_add_node(rw_, op.c_str(), domain.c_str(), name.c_str(), inputs.data(), inputs.size(),
                                       outputs.data(), outputs.size(), region, insert_before),
                    "add_node");
  }
  void erase_node(kiln_node_id_t id) { check(host_->rw_erase_node(rw_, id), "erase_node"); }
  void replace_uses(kiln_value_id_t from, kiln_value_id_t to) {
    check(host_->rw_replace_uses(rw_, from, to), "replace_uses");
  }
  void set_input(kiln_node_id_t id, size_t index, kiln_value_id_t v) {
    check(host_->rw_set_input(rw_, id, index, v), "set_input");
  }
  void set_attr_int(kiln_node_id_t id, const char* key, int64_t v) {
    check(host_->rw_set_attr_int(rw_, id, key, v), "set_attr_int");
  }
  void set_attr_float(kiln_node_id_t id, const char* key, float v) {
    check(host_->rw_set_attr_float(rw_, id, key, v), "set_attr_float");
  }
  void set_attr_string(kiln_node_id_t id, const char* key, const std::string& v) {
    check(host_->rw_set_attr_string(rw_, id, key, v.c_str()), "set_attr_string");
  }
  void set_attr_ints(kiln_node_id_t id, const char* key, const std::vector<int64_t>& v) {
    check(host_->rw_set_attr_ints(rw_, id, key, v.data(), v.size()), "set_attr_ints");
  }
  void set_attr_floats(kiln_node_id_t id, const char* key, const std::vector<float>& v) {
    check(host_->rw_set_attr_floats(rw_, id, key, v.data(), v.size()), "set_attr_floats");
  }
  void remove_attr(kiln_node_id_t id, const char* key) { check(host_->rw_remove_attr(rw_, id, key), "remove_attr"); }
  void annotate_node(kiln_node_id_t id, const char* key, const std::string& v) {
    check(host_->rw_annotate_node(rw_, id, key, v.c_str()), "annotate_node");
  }
  void annotate_value(kiln_value_id_t id, const char* key, const std::string& v) {
    check(host_->rw_annotate_value(rw_, id, key, v.c_str()), "annotate_value");
  }
  // ABI 1.3: whether the host can remove annotations (remove_*_annotation).
  bool can_remove_annotations() const {
    return KILN_PLUGIN_HAS_FIELD(host_, kiln_host_api_t, rw_remove_value_annotation) &&
           host_->rw_remove_node_annotation && host_->rw_remove_value_annotation;
  }
  // Removes a node's or value's annotation (absent is fine); throws when the
  // host refuses or predates ABI 1.3 (check can_remove_annotations).
  void remove_node_annotation(kiln_node_id_t id, const char* key) {
    if (!can_remove_annotations()) throw Error("the host cannot remove annotations (ABI < 1.3)", KILN_PLUGIN_UNIMPLEMENTED);
    check(host_->rw_remove_node_annotation(rw_, id, key), "remove_node_annotation");
  }
  void remove_value_annotation(kiln_value_id_t id, const char* key) {
    if (!can_remove_annotations()) throw Error("the host cannot remove annotations (ABI < 1.3)", KILN_PLUGIN_UNIMPLEMENTED);
    check(host_->rw_remove_value_annotation(rw_, id, key), "remove_value_annotation");
  }
  void add_statistic(const char* key, int64_t delta) { host_->rw_add_statistic(rw_, key, delta); }

  bool can_evaluate() const { return KILN_PLUGIN_HAS_FIELD(host_, kiln_host_api_t, evaluate_node) && host_->evaluate_node; }
  // New constants holding the node's outputs, or nullopt if the host cannot
  // evaluate it (see kiln_host_api_t::evaluate_node).
  std::optional<std::vector<kiln_value_id_t>> evaluate(kiln_node_id_t id, size_t output_count) {
    if (!can_evaluate()) return std::nullopt;
    std::vector<kiln_value_id_t> out(output_count, KILN_NO_ID);
    if (!host_->evaluate_node(rw_, id, out.data(), out.size())) return std::nullopt;
    return out;
  }

  // ABI 1.1: whether the host can set a value's dims (set_value_dims).
  bool can_set_value_dims() const {
    return KILN_PLUGIN_HAS_FIELD(host_, kiln_host_api_t, rw_set_value_dims) && host_->rw_set_value_dims;
  }
  // Sets a value's dims, each in the host's Dim text ("4", "seq", "(h*2)",
  // "?"); throws when the host refuses (a constant, text that does not
  // parse, a negative dim) or predates ABI 1.1 (check can_set_value_dims).
  void set_value_dims(kiln_value_id_t id, const std::vector<std::string>& dims) {
    if (!can_set_value_dims()) throw Error("the host cannot set value dims (ABI < 1.1)", KILN_PLUGIN_UNIMPLEMENTED);
    std::vector<const char*> ptrs;
    for (const std::string& d : dims) ptrs.push_back(d.c_str());
    check(host_->rw_set_value_dims(rw_, id, ptrs.data(), ptrs.size()), "set_value_dims");
  }

  void log(kiln_log_level_t level, const std::string& message) const { host_->log(level, message.c_str()); }

 private:
  int32_t check_id(int32_t id, const char* what) {
    if (id == KILN_NO_ID) throw Error(std::string("rewriter ") + what + " was refused", KILN_PLUGIN_INTERNAL);
    return id;
  }
  void check(int32_t ok, const char* what) {
    if (!ok) throw Error(std::string("rewriter ") + what + " was refused", KILN_PLUGIN_INTERNAL);
  }
  const kiln_host_api_t* host_;
  kiln_rewriter_t* rw_;
};

// Copies every attribute of node `from` to node `to` (a node a pass makes
// again: a folded Conv, a cloned view); false when one has a kind the
// rewriter cannot set (a sub-graph), which the caller then decides about.
inline bool copy_node_attrs(const GraphView& g, Rewriter& rw, kiln_node_id_t from, kiln_node_id_t to) {
  auto names = g.attr_names(from);
  if (!names) return false;
  for (const std::string& name : *names) {
    const char* key = name.c_str();
    switch (g.attr_kind(from, key)) {
      case KILN_ATTR_INT: rw.set_attr_int(to, key, g.attr_int(from, key, 0)); break;
      case KILN_ATTR_FLOAT: rw.set_attr_float(to, key, g.attr_float(from, key, 0.0f)); break;
      case KILN_ATTR_STRING: rw.set_attr_string(to, key, g.attr_string(from, key)); break;
      case KILN_ATTR_INTS: rw.set_attr_ints(to, key, g.attr_ints(from, key)); break;
      case KILN_ATTR_FLOATS: rw.set_attr_floats(to, key, g.attr_floats(from, key)); break;
      default: return false;
    }
  }
  return true;
}

class Pass {
 public:
  virtual ~Pass() = default;
  virtual void run(GraphView& graph, Rewriter& rewriter) = 0;
};

namespace detail {
template <typename P>
kiln_plugin_status_t* run_trampoline(void* state, const kiln_host_api_t* host, const kiln_graph_t* graph,
                                     kiln_rewriter_t* rw) {
  try {
    GraphView view(host, graph);
    Rewriter rewriter(host, rw);
    static_cast<P*>(state)->run(view, rewriter);
    return nullptr;
  } catch (const Error& e) {
    return host->make_status(e.code(), e.what());
  } catch (const std::exception& e) {
    return host->make_status(KILN_PLUGIN_INTERNAL, (std::string("uncaught exception: ") + e.what()).c_str());
  } catch (...) {
    return host->make_status(KILN_PLUGIN_INTERNAL, "uncaught exception of unknown type");
  }
}
}  // namespace detail

// A kiln_pass_t whose run calls `pass.run` (pass must outlive the plugin).
template <typename P>
kiln_pass_t make_pass(P& pass, const char* name, const char* description, uint32_t requires_facts = KILN_FACT_SHAPES,
                      uint32_t invalidates_facts = 0, bool required = false, uint32_t provides_facts = 0) {
  kiln_pass_t p{};
  p.struct_size = sizeof(kiln_pass_t);
  p.name = name;
  p.description = description;
  p.requires_facts = requires_facts;
  p.invalidates_facts = invalidates_facts;
  p.run = &detail::run_trampoline<P>;
  p.pass_state = static_cast<void*>(&pass);
  p.provides_facts = provides_facts;
  p.required = required ? 1 : 0;
  return p;
}

inline kiln_plugin_t make_plugin(const char* name, const char* version, const kiln_pass_t* const* passes,
                                 size_t pass_count) {
  kiln_plugin_t p{};
  p.struct_size = sizeof(kiln_plugin_t);
  p.abi_version = KILN_PLUGIN_ABI_VERSION;
  p.name = name;
  p.version = version;
  p.passes = passes;
  p.pass_count = pass_count;
  p.get_interface = nullptr;
  return p;
}

// True when a host of `host_abi_version` accepts what this header speaks.
inline bool host_accepts(uint32_t host_abi_version) {
  return KILN_PLUGIN_ABI_VERSION_MAJOR(host_abi_version) == KILN_PLUGIN_ABI_MAJOR &&
         KILN_PLUGIN_ABI_VERSION_MINOR(host_abi_version) + 1u > KILN_PLUGIN_ABI_MINOR;  // >=, without a type-limits warning at minor 0
}

}  // namespace kiln::plugin

// Defines `extern "C" const kiln_plugin_t* FN(uint32_t)` returning &DESCRIPTOR
// when the host accepts this ABI. Use FN = kiln_plugin_query for a shared
// library (it is exported); any other name for a linked-in plugin.
#define KILN_PLUGIN_DEFINE_QUERY(FN, DESCRIPTOR)                                       \
  extern "C" KILN_PLUGIN_EXPORT const kiln_plugin_t* FN(uint32_t host_abi_version) {   \
    return ::kiln::plugin::host_accepts(host_abi_version) ? &(DESCRIPTOR) : nullptr; \
  }
