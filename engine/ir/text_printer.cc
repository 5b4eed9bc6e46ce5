// Prints the graph IR's textual form; see text.h for the grammar.
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <unordered_map>

#include "engine/ir/text.h"

namespace kiln::ir {

namespace {

// A name printed without quotes: the characters of a word, and no "//",
// which the parser takes for the start of a comment (found by
// fuzz_rewriter: an attribute named "//").
bool is_plain_name(const std::string& s) {
  if (s.empty() || s.find("//") != std::string::npos) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '/' || c == '-')) return false;
  return true;
}

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// Floats always carry a '.', 'e', "nan" or "inf" so they parse back as floats.
std::string format_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s = buf;
  // Prefer the shortest form that round-trips a float when the value is one.
  std::snprintf(buf, sizeof buf, "%.9g", v);
  if (std::strtod(buf, nullptr) == v) s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

class Printer {
 public:
  Printer(const Graph& g, const PrintOptions& o) : g_(g), opts_(o) { assign_names(); }

  std::string print() {
    out_ += "graph @" + (is_plain_name(g_.name) ? g_.name : quote(g_.name.empty() ? "main" : g_.name));
    out_ += " opset " + std::to_string(g_.opset);
    if (!g_.producer.empty()) out_ += " producer " + quote(g_.producer);
    out_ += " ";
    print_region(kMainRegion, 0);
    out_ += "\n";
    return std::move(out_);
  }

 private:
  void assign_names() {
    std::set<std::string> used;
    names_.resize(g_.num_values());
    for (size_t i = 0; i < g_.num_values(); ++i) {
      const std::string& n = g_.value(static_cast<ValueId>(i)).name;
      std::string chosen = n.empty() ? "v" + std::to_string(i) : n;
      while (!used.insert(chosen).second) chosen = chosen + "#" + std::to_string(i);
      names_[i] = is_plain_name(chosen) ? "%" + chosen : "%" + quote(chosen);
    }
  }

  const std::string& name(ValueId id) const { return names_[static_cast<size_t>(id)]; }

  std::string type_of(ValueId id) const {
    const Value& v = g_.value(id);
    return std::string(dtype_name(v.dtype)) + v.shape.to_string();
  }

  void indent(int depth) { out_.append(static_cast<size_t>(depth) * 2, ' '); }

  void print_region(RegionId rid, int depth) {
    const Region& r = g_.region(rid);
    out_ += "{\n";
    for (ValueId in : r.inputs) {
      indent(depth + 1);
      out_ += "input " + name(in) + " : " + type_of(in);
      print_annotations(g_.value(in).annotations);
      out_ += "\n";
    }
    for (size_t i = 0; i < g_.num_values(); ++i) {
      const Value& v = g_.value(static_cast<ValueId>(i));
      if (!v.is_constant() || v.region != rid) continue;
      indent(depth + 1);
      out_ += "const " + name(v.id) + " : " + type_of(v.id);
      print_annotations(v.annotations);
      out_ += " = ";
      if (opts_.external_constants_over >= 0 && v.constant.numel() > opts_.external_constants_over)
        out_ += "dense<external(" + std::to_string(i) + ")>";
      else
        print_tensor(v.constant, false);
      out_ += "\n";
    }
    for (NodeId nid : r.nodes) print_node(g_.node(nid), depth + 1);
    indent(depth + 1);
    out_ += "return";
    for (size_t i = 0; i < r.outputs.size(); ++i) out_ += (i ? ", " : " ") + name(r.outputs[i]);
    out_ += "\n";
    indent(depth);
    out_ += "}";
  }

  void print_tensor(const Tensor& t, bool with_type) {
    out_ += "dense<";
    if (with_type) out_ += std::string(dtype_name(t.dtype())) + shape_to_string(t.shape()) + " ";
    if (opts_.elide_constants_over >= 0 && t.numel() > opts_.elide_constants_over) {
      out_ += "elided>";
      return;
    }
    out_ += "[";
    const bool is_float = dtype_is_float(t.dtype());
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (i) out_ += ",";
      out_ += is_float ? format_float(t.get_f64(i)) : std::to_string(t.get_i64(i));
    }
    out_ += "]>";
  }

  void print_attr(const Attribute& a, int depth) {
    switch (a.kind) {
      case AttrKind::kInt: out_ += std::to_string(a.i); break;
      case AttrKind::kFloat: out_ += format_float(a.f); break;
      case AttrKind::kString: out_ += quote(a.s); break;
      case AttrKind::kInts:
        if (a.ints.empty()) { out_ += "ints[]"; break; }
        out_ += "[";
        for (size_t i = 0; i < a.ints.size(); ++i) out_ += (i ? "," : "") + std::to_string(a.ints[i]);
        out_ += "]";
        break;
      case AttrKind::kFloats:
        if (a.floats.empty()) { out_ += "floats[]"; break; }
        out_ += "[";
        for (size_t i = 0; i < a.floats.size(); ++i) out_ += (i ? "," : "") + format_float(a.floats[i]);
        out_ += "]";
        break;
      case AttrKind::kStrings:
        if (a.strings.empty()) { out_ += "strings[]"; break; }
        out_ += "[";
        for (size_t i = 0; i < a.strings.size(); ++i) out_ += (i ? "," : "") + quote(a.strings[i]);
        out_ += "]";
        break;
      case AttrKind::kTensor: print_tensor(a.tensor, true); break;
      case AttrKind::kGraph:
        out_ += "region ";
        print_region(a.region, depth);
        break;
    }
  }

  // ` #{key = "value", ...}`, nothing when there are none. Values are always
  // strings, so the form needs no type rules of its own.
  void print_annotations(const std::map<std::string, std::string>& annotations) {
    if (annotations.empty()) return;
    out_ += " #{";
    bool first = true;
    for (const auto& [key, value] : annotations) {
      out_ += first ? "" : ", ";
      first = false;
      out_ += (is_plain_name(key) ? key : quote(key)) + " = " + quote(value);
    }
    out_ += "}";
  }

  void print_node(const Node& n, int depth) {
    indent(depth);
    for (size_t i = 0; i < n.outputs.size(); ++i)
      out_ += (i ? ", " : "") + (n.outputs[i] == kNoValue ? std::string("none") : name(n.outputs[i]));
    out_ += n.outputs.empty() ? "" : " = ";
    if (!n.domain.empty()) out_ += quote(n.domain) + "::";
    out_ += n.op + "(";
    for (size_t i = 0; i < n.inputs.size(); ++i)
      out_ += (i ? ", " : "") + (n.inputs[i] == kNoValue ? std::string("none") : name(n.inputs[i]));
    out_ += ")";
    if (!n.attrs.empty()) {
      out_ += " {";
      bool first = true;
      for (const auto& [key, a] : n.attrs) {
        out_ += first ? "" : ", ";
        first = false;
        out_ += (is_plain_name(key) ? key : quote(key)) + " = ";
        print_attr(a, depth);
      }
      out_ += "}";
    }
    print_annotations(n.annotations);
    if (!n.outputs.empty()) {
      out_ += " :";
      for (size_t i = 0; i < n.outputs.size(); ++i) {
        out_ += i ? ", " : " ";
        if (n.outputs[i] == kNoValue) {
          out_ += "none";
          continue;
        }
        out_ += type_of(n.outputs[i]);
        print_annotations(g_.value(n.outputs[i]).annotations);
      }
    }
    if (opts_.print_locations && !n.name.empty()) out_ += " loc(" + quote(n.name) + ")";
    out_ += "\n";
  }

  const Graph& g_;
  const PrintOptions& opts_;
  std::vector<std::string> names_;
  std::string out_;
};

}  // namespace

std::string print_graph(const Graph& graph, const PrintOptions& options) { return Printer(graph, options).print(); }

}  // namespace kiln::ir
