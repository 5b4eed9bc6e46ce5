// Parses the graph IR's textual form; see text.h for the grammar.
//
// A character-level recursive-descent parser: the grammar is small, and
// shapes contain dim expressions that a token stream would only split up.
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>

#include "engine/base/limits.h"
#include "engine/ir/text.h"

namespace kiln::ir {

namespace {

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '/' || c == '-';
}

class Parser {
 public:
  Parser(std::string_view s, const ParseOptions& o) : s_(s), opts_(o) {}

  StatusOr<std::unique_ptr<Graph>> parse() {
    g_ = std::make_unique<Graph>();
    KILN_RETURN_IF_ERROR(expect("graph"));
    KILN_RETURN_IF_ERROR(expect("@"));
    KILN_ASSIGN_OR_RETURN(g_->name, read_name_or_string());
    for (;;) {
      skip_ws();
      if (peek_word("opset")) {
        KILN_RETURN_IF_ERROR(expect("opset"));
        KILN_ASSIGN_OR_RETURN(int64_t opset, read_int());
        g_->opset = opset;
      } else if (peek_word("producer")) {
        KILN_RETURN_IF_ERROR(expect("producer"));
        KILN_ASSIGN_OR_RETURN(g_->producer, read_string());
      } else {
        break;
      }
    }
    scopes_.emplace_back();
    KILN_RETURN_IF_ERROR(parse_region_body(kMainRegion));
    skip_ws();
    if (pos_ != s_.size()) return error("unexpected text after the graph");
    return std::move(g_);
  }

 private:
  // --- lexical helpers ------------------------------------------------------
  Status error(const std::string& what) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos_ && i < s_.size(); ++i) {
      if (s_[i] == '\n') { ++line; col = 1; } else { ++col; }
    }
    return invalid_argument("IR text line " + std::to_string(line) + ", column " + std::to_string(col) + ": " + what);
  }
  void skip_ws() {
    for (;;) {
      while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      if (pos_ + 1 < s_.size() && s_[pos_] == '/' && s_[pos_ + 1] == '/') {  // comment
        while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
        continue;
      }
      return;
    }
  }
  bool peek(char c) {
    skip_ws();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  bool peek_word(std::string_view w) {
    skip_ws();
    if (s_.substr(pos_, w.size()) != w) return false;
    const size_t end = pos_ + w.size();
    return end >= s_.size() || !is_name_char(s_[end]);
  }
  bool eat(std::string_view tok) {
    skip_ws();
    if (s_.substr(pos_, tok.size()) == tok) {
      pos_ += tok.size();
      return true;
    }
    return false;
  }
  Status expect(std::string_view tok) {
    if (!eat(tok)) return error("expected '" + std::string(tok) + "'");
    return ok_status();
  }
  std::string read_word() {
    skip_ws();
    size_t start = pos_;
    while (pos_ < s_.size() && is_name_char(s_[pos_])) ++pos_;
    return std::string(s_.substr(start, pos_ - start));
  }
  StatusOr<std::string> read_string() {
    skip_ws();
    if (pos_ >= s_.size() || s_[pos_] != '"') return error("expected a string");
    ++pos_;
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (c == '\\' && pos_ < s_.size()) {
        char e = s_[pos_++];
        if (e == 'n') {
          out += '\n';
        } else if (e == 'x' && pos_ + 2 <= s_.size()) {
          out += static_cast<char>(std::strtol(std::string(s_.substr(pos_, 2)).c_str(), nullptr, 16));
          pos_ += 2;
        } else {
          out += e;
        }
      } else {
        out += c;
      }
    }
    if (pos_ >= s_.size()) return error("unterminated string");
    ++pos_;
    return out;
  }
  StatusOr<std::string> read_name_or_string() {
    skip_ws();
    if (peek('"')) return read_string();
    std::string w = read_word();
    if (w.empty()) return error("expected a name");
    return w;
  }
  StatusOr<int64_t> read_int() {
    skip_ws();
    size_t start = pos_;
    if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    if (pos_ == start) return error("expected an integer");
    errno = 0;
    long long v = std::strtoll(std::string(s_.substr(start, pos_ - start)).c_str(), nullptr, 10);
    if (errno == ERANGE) return error("integer out of range");
    return static_cast<int64_t>(v);
  }
  // A number token: returns it as text and whether it is a float.
  StatusOr<std::pair<std::string, bool>> read_number() {
    skip_ws();
    size_t start = pos_;
    if (pos_ < s_.size() && (s_[pos_] == '-' || s_[pos_] == '+')) ++pos_;
    if (s_.substr(pos_, 3) == "nan" || s_.substr(pos_, 3) == "inf") {
      pos_ += 3;
      return std::make_pair(std::string(s_.substr(start, pos_ - start)), true);
    }
    bool is_float = false;
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (std::isdigit(static_cast<unsigned char>(c))) {
        ++pos_;
      } else if (c == '.' || c == 'e' || c == 'E') {
        is_float = true;
        ++pos_;
        if ((c == 'e' || c == 'E') && pos_ < s_.size() && (s_[pos_] == '-' || s_[pos_] == '+')) ++pos_;
      } else {
        break;
      }
    }
    if (pos_ == start) return error("expected a number");
    return std::make_pair(std::string(s_.substr(start, pos_ - start)), is_float);
  }
  static double to_double(const std::string& t) {
    if (t == "nan" || t == "-nan" || t == "+nan") return std::numeric_limits<double>::quiet_NaN();
    if (t == "inf" || t == "+inf") return std::numeric_limits<double>::infinity();
    if (t == "-inf") return -std::numeric_limits<double>::infinity();
    return std::strtod(t.c_str(), nullptr);
  }

  // --- values -----------------------------------------------------------------
  StatusOr<std::string> read_value_name() {
    KILN_RETURN_IF_ERROR(expect("%"));
    if (pos_ < s_.size() && s_[pos_] == '"') return read_string();
    size_t start = pos_;
    while (pos_ < s_.size() && is_name_char(s_[pos_])) ++pos_;
    if (pos_ == start) return error("expected a value name after '%'");
    return std::string(s_.substr(start, pos_ - start));
  }
  ValueId lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->find(name);
      if (f != it->end()) return f->second;
    }
    return kNoValue;
  }
  StatusOr<ValueId> read_use() {
    if (eat("none")) return kNoValue;
    KILN_ASSIGN_OR_RETURN(std::string name, read_value_name());
    ValueId id = lookup(name);
    if (id == kNoValue) return error("use of undefined value %" + name);
    return id;
  }
  Status declare(const std::string& name, ValueId id) {
    if (lookup(name) != kNoValue) return error("value %" + name + " is defined twice");
    scopes_.back()[name] = id;
    return ok_status();
  }

  // dtype '[' dims ']'
  StatusOr<std::pair<DType, SymShape>> read_type() {
    std::string dt = read_word();
    DType dtype = dtype_from_name(dt);
    if (dtype == DType::kUndefined && dt != "undef") return error("unknown dtype '" + dt + "'");
    KILN_RETURN_IF_ERROR(expect("["));
    size_t start = pos_;
    int depth = 0;
    while (pos_ < s_.size() && !(depth == 0 && s_[pos_] == ']')) {
      if (s_[pos_] == '(') ++depth;
      if (s_[pos_] == ')') --depth;
      ++pos_;
    }
    if (pos_ >= s_.size()) return error("unterminated shape");
    std::string_view body = s_.substr(start, pos_ - start);
    ++pos_;  // ']'
    if (body == "*") return std::make_pair(dtype, SymShape::unranked());
    std::vector<Dim> dims;
    size_t item_start = 0;
    depth = 0;
    for (size_t i = 0; i <= body.size(); ++i) {
      if (i < body.size() && body[i] == '(') ++depth;
      if (i < body.size() && body[i] == ')') --depth;
      if (i == body.size() || (depth == 0 && body[i] == ',')) {
        std::string_view item = body.substr(item_start, i - item_start);
        item_start = i + 1;
        if (item.find_first_not_of(" \t\n") == std::string_view::npos) {
          if (i == body.size() && dims.empty()) break;  // "[]": a scalar
          return error("empty dim in shape");
        }
        auto d = Dim::parse(item);
        if (!d.ok()) return error(d.status().message());
        dims.push_back(std::move(d).value());
      }
    }
    return std::make_pair(dtype, SymShape(std::move(dims)));
  }

  // dense< [dtype shape] ( '[' numbers ']' | elided ) >
  StatusOr<Tensor> read_dense(DType dtype, const SymShape* declared) {
    KILN_RETURN_IF_ERROR(expect("dense<"));
    Shape shape;
    if (!declared) {
      KILN_ASSIGN_OR_RETURN(auto type, read_type());
      if (!type.second.is_static()) return error("tensor attribute needs a static shape");
      dtype = type.first;
      shape = type.second.concrete();
    } else {
      if (!declared->is_static()) return error("constant needs a static shape");
      shape = declared->concrete();
    }
    if (declared && eat("external(")) return read_external(dtype, shape);
    const bool elided = eat("elided");
    if (elided && !opts_.allow_elided_constants)
      return error("constant data was elided when printed; cannot parse it back");
    // Listed values take at least two characters each ("0,"): a shape with
    // more elements than the rest of the text could list is refused before
    // its memory is allocated (a fuzzed f32[666666666,1] asked for 2.6 GB).
    constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
    int64_t elements = 1;
    for (int64_t d : shape) {
      if (d <= 0) {  // empty, or a negative extent Tensor::allocate refuses
        elements = 0;
        break;
      }
      elements = elements > kMax / d ? kMax : elements * d;
    }
    if (!elided && elements > (static_cast<int64_t>(s_.size() - pos_) + 1) / 2)
      return error("shape " + shape_to_string(shape) + " needs " + std::to_string(elements) +
                   " values, more than the rest of the text can list");
    // An elided constant lists nothing, so only the tensor limit bounds the
    // zeros it stands for (fuzz_text_parser: f16[8666666666] asked for 17 GB).
    const int64_t width = static_cast<int64_t>(dtype_size(dtype));
    const int64_t bytes = width > 0 && elements > kMax / width ? kMax : elements * width;
    if (Status fits = check_tensor_bytes(bytes, "constant " + shape_to_string(shape)); !fits.ok())
      return error(fits.message());
    auto t = Tensor::allocate(dtype, shape);
    if (!t.ok()) return error(t.status().message());
    Tensor tensor = std::move(t).value();
    if (!elided) {
      KILN_RETURN_IF_ERROR(expect("["));
      int64_t i = 0;
      while (!peek(']')) {
        if (i) KILN_RETURN_IF_ERROR(expect(","));
        KILN_ASSIGN_OR_RETURN(auto num, read_number());
        if (i >= tensor.numel()) return error("too many elements for shape " + shape_to_string(shape));
        if (dtype_is_float(dtype) || num.second) tensor.set_f64(i, to_double(num.first));
        else set_int(tensor, i, std::strtoll(num.first.c_str(), nullptr, 10));
        ++i;
      }
      KILN_RETURN_IF_ERROR(expect("]"));
      if (i != tensor.numel())
        return error("expected " + std::to_string(tensor.numel()) + " elements, got " + std::to_string(i));
    }
    KILN_RETURN_IF_ERROR(expect(">"));
    return tensor;
  }
  // `external(ID)>` after a constant's `dense<`: its data from the caller.
  StatusOr<Tensor> read_external(DType dtype, const Shape& shape) {
    KILN_ASSIGN_OR_RETURN(int64_t id, read_int());
    KILN_RETURN_IF_ERROR(expect(")"));
    KILN_RETURN_IF_ERROR(expect(">"));
    if (!opts_.external_constant) return error("constant " + std::to_string(id) + " is external; no reader was given");
    auto t = opts_.external_constant(id, dtype, shape);
    if (!t.ok()) return error("external constant " + std::to_string(id) + ": " + t.status().message());
    if (t->dtype() != dtype || t->shape() != shape)
      return error("external constant " + std::to_string(id) + " is " + std::string(dtype_name(t->dtype())) +
                   shape_to_string(t->shape()) + ", declared " + std::string(dtype_name(dtype)) + shape_to_string(shape));
    return std::move(t).value();
  }

  static void set_int(Tensor& t, int64_t i, int64_t v) {
    visit_dtype(t.dtype(), [&]<typename T>() {
      if constexpr (std::is_same_v<T, Half>) t.data<T>()[i] = Half(static_cast<float>(v));
      else if constexpr (std::is_same_v<T, bool>) t.data<T>()[i] = v != 0;
      else t.data<T>()[i] = static_cast<T>(v);
    });
  }

  StatusOr<Attribute> read_attr(RegionId current) {
    skip_ws();
    if (peek_word("region")) {
      KILN_RETURN_IF_ERROR(expect("region"));
      RegionId r = g_->add_region(current);
      scopes_.emplace_back();
      KILN_RETURN_IF_ERROR(parse_region_body(r));
      scopes_.pop_back();
      return Attribute::of_graph(r);
    }
    if (s_.substr(pos_, 6) == "dense<") {
      KILN_ASSIGN_OR_RETURN(Tensor t, read_dense(DType::kUndefined, nullptr));
      return Attribute::of_tensor(std::move(t));
    }
    if (eat("ints[]")) return Attribute::of_ints({});
    if (eat("floats[]")) return Attribute::of_floats({});
    if (eat("strings[]")) return Attribute::of_strings({});
    if (peek('"')) {
      KILN_ASSIGN_OR_RETURN(std::string s, read_string());
      return Attribute::of_string(std::move(s));
    }
    if (eat("[")) {
      if (peek('"')) {
        std::vector<std::string> strings;
        do {
          KILN_ASSIGN_OR_RETURN(std::string s, read_string());
          strings.push_back(std::move(s));
        } while (eat(","));
        KILN_RETURN_IF_ERROR(expect("]"));
        return Attribute::of_strings(std::move(strings));
      }
      std::vector<std::pair<std::string, bool>> nums;
      bool any_float = false;
      do {
        KILN_ASSIGN_OR_RETURN(auto n, read_number());
        any_float |= n.second;
        nums.push_back(std::move(n));
      } while (eat(","));
      KILN_RETURN_IF_ERROR(expect("]"));
      if (any_float) {
        std::vector<float> fs;
        for (auto& n : nums) fs.push_back(static_cast<float>(to_double(n.first)));
        return Attribute::of_floats(std::move(fs));
      }
      std::vector<int64_t> is;
      for (auto& n : nums) is.push_back(std::strtoll(n.first.c_str(), nullptr, 10));
      return Attribute::of_ints(std::move(is));
    }
    KILN_ASSIGN_OR_RETURN(auto n, read_number());
    if (n.second) return Attribute::of_float(static_cast<float>(to_double(n.first)));
    return Attribute::of_int(std::strtoll(n.first.c_str(), nullptr, 10));
  }

  // Optional `#{key = "value", ...}` (node or value annotations).
  Status read_annotations(std::map<std::string, std::string>& out) {
    if (!eat("#{")) return ok_status();
    if (eat("}")) return ok_status();
    do {
      KILN_ASSIGN_OR_RETURN(std::string key, read_name_or_string());
      KILN_RETURN_IF_ERROR(expect("="));
      if (!peek('"')) return error("annotation '" + key + "' needs a string value");
      KILN_ASSIGN_OR_RETURN(std::string value, read_string());
      if (out.count(key)) return error("annotation '" + key + "' given twice");
      out[key] = std::move(value);
    } while (eat(","));
    return expect("}");
  }

  // '{' (input|const|node)* 'return' uses '}'
  Status parse_region_body(RegionId rid) {
    KILN_RETURN_IF_ERROR(expect("{"));
    for (;;) {
      skip_ws();
      if (peek_word("input")) {
        KILN_RETURN_IF_ERROR(expect("input"));
        KILN_ASSIGN_OR_RETURN(std::string name, read_value_name());
        KILN_RETURN_IF_ERROR(expect(":"));
        KILN_ASSIGN_OR_RETURN(auto type, read_type());
        ValueId id = g_->add_input(name, type.first, std::move(type.second), rid);
        KILN_RETURN_IF_ERROR(read_annotations(g_->value(id).annotations));
        KILN_RETURN_IF_ERROR(declare(name, id));
      } else if (peek_word("const")) {
        KILN_RETURN_IF_ERROR(expect("const"));
        KILN_ASSIGN_OR_RETURN(std::string name, read_value_name());
        KILN_RETURN_IF_ERROR(expect(":"));
        KILN_ASSIGN_OR_RETURN(auto type, read_type());
        std::map<std::string, std::string> annotations;
        KILN_RETURN_IF_ERROR(read_annotations(annotations));
        KILN_RETURN_IF_ERROR(expect("="));
        KILN_ASSIGN_OR_RETURN(Tensor t, read_dense(type.first, &type.second));
        ValueId id = g_->add_constant(name, std::move(t), rid);
        g_->value(id).annotations = std::move(annotations);
        KILN_RETURN_IF_ERROR(declare(name, id));
      } else if (peek_word("return")) {
        KILN_RETURN_IF_ERROR(expect("return"));
        if (!peek('}')) {
          do {
            KILN_ASSIGN_OR_RETURN(ValueId id, read_use());
            if (id == kNoValue) return error("a region cannot return 'none'");
            g_->add_output(id, rid);
          } while (eat(","));
        }
        return expect("}");
      } else if (peek('}')) {
        return error("region ends without 'return'");
      } else {
        KILN_RETURN_IF_ERROR(parse_node(rid));
      }
    }
  }

  Status parse_node(RegionId rid) {
    std::vector<std::string> out_names;  // "" for none
    if (peek('%') || peek_word("none")) {
      do {
        if (eat("none")) {
          out_names.emplace_back();
        } else {
          KILN_ASSIGN_OR_RETURN(std::string n, read_value_name());
          out_names.push_back(std::move(n));
        }
      } while (eat(","));
      KILN_RETURN_IF_ERROR(expect("="));
    }
    std::string domain;
    skip_ws();
    if (peek('"')) {
      KILN_ASSIGN_OR_RETURN(domain, read_string());
      KILN_RETURN_IF_ERROR(expect("::"));
    }
    std::string op = read_word();
    if (op.empty()) return error("expected an op name");
    KILN_RETURN_IF_ERROR(expect("("));
    std::vector<ValueId> inputs;
    if (!peek(')')) {
      do {
        KILN_ASSIGN_OR_RETURN(ValueId id, read_use());
        inputs.push_back(id);
      } while (eat(","));
    }
    KILN_RETURN_IF_ERROR(expect(")"));
    std::map<std::string, Attribute> attrs;
    if (eat("{")) {
      if (!peek('}')) {
        do {
          KILN_ASSIGN_OR_RETURN(std::string key, read_name_or_string());
          KILN_RETURN_IF_ERROR(expect("="));
          KILN_ASSIGN_OR_RETURN(Attribute a, read_attr(rid));
          if (attrs.count(key)) return error("attribute '" + key + "' given twice");
          attrs[key] = std::move(a);
        } while (eat(","));
      }
      KILN_RETURN_IF_ERROR(expect("}"));
    }
    std::map<std::string, std::string> node_annotations;
    KILN_RETURN_IF_ERROR(read_annotations(node_annotations));
    std::vector<ValueId> outputs;
    if (!out_names.empty()) {
      KILN_RETURN_IF_ERROR(expect(":"));
      for (size_t i = 0; i < out_names.size(); ++i) {
        if (i) KILN_RETURN_IF_ERROR(expect(","));
        if (out_names[i].empty()) {
          KILN_RETURN_IF_ERROR(expect("none"));
          outputs.push_back(kNoValue);
          continue;
        }
        KILN_ASSIGN_OR_RETURN(auto type, read_type());
        ValueId id = g_->add_value(out_names[i], type.first, std::move(type.second), rid);
        KILN_RETURN_IF_ERROR(read_annotations(g_->value(id).annotations));
        KILN_RETURN_IF_ERROR(declare(out_names[i], id));
        outputs.push_back(id);
      }
    }
    std::string node_name;
    if (eat("loc(")) {
      KILN_ASSIGN_OR_RETURN(node_name, read_string());
      KILN_RETURN_IF_ERROR(expect(")"));
    }
    NodeId nid = g_->add_node(op, std::move(inputs), std::move(outputs), std::move(attrs), std::move(node_name), rid);
    g_->node(nid).domain = std::move(domain);
    g_->node(nid).annotations = std::move(node_annotations);
    return ok_status();
  }

  std::string_view s_;
  const ParseOptions& opts_;
  size_t pos_ = 0;
  std::unique_ptr<Graph> g_;
  std::vector<std::map<std::string, ValueId>> scopes_;
};

}  // namespace

StatusOr<std::unique_ptr<Graph>> parse_graph(std::string_view text, const ParseOptions& options) {
  return Parser(text, options).parse();
}

}  // namespace kiln::ir
