// Template lookup and filling (see shader_template.h for the syntax).
#include "planner/shader_template.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <vector>

namespace kiln::planner {
namespace {

bool is_name(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

class Filler {
 public:
  Filler(std::string_view name, const ShaderArgs& args) : name_(name), args_(args) {}

  StatusOr<std::string> run(std::string_view text) {
    // One //@if per stack entry: whether its enclosing lines are kept, and
    // whether the current branch is.
    struct Branch {
      bool outer, on, in_else;
    };
    std::vector<Branch> stack;
    bool active = true;
    int line_no = 0;
    while (!text.empty()) {
      const size_t end = text.find('\n');
      const std::string_view line = end == std::string_view::npos ? text : text.substr(0, end + 1);
      text.remove_prefix(line.size());
      ++line_no;
      line_ = line_no;
      const std::string_view t = trim(line);
      if (t.starts_with("//!")) continue;
      if (t.starts_with("//@")) {
        const std::string_view d = trim(t.substr(3));
        if (d.starts_with("if ")) {
          const std::string_view flag = trim(d.substr(3));
          if (!is_name(flag)) return error("bad flag name in '" + std::string(t) + "'");
          mentioned_.insert(std::string(flag));
          bool on = false;
          if (active) {
            const auto it = args_.flags().find(std::string(flag));
            if (it == args_.flags().end()) return error("no value for flag '" + std::string(flag) + "'");
            on = it->second;
          }
          stack.push_back({active, on, false});
          active = active && on;
        } else if (d == "else") {
          if (stack.empty() || stack.back().in_else) return error("//@else without //@if");
          stack.back().in_else = true;
          active = stack.back().outer && !stack.back().on;
        } else if (d == "end") {
          if (stack.empty()) return error("//@end without //@if");
          active = stack.back().outer;
          stack.pop_back();
        } else if (d.starts_with("section")) {
          return error("a template with sections is filled one section at a time ('file.glsl#section')");
        } else {
          return error("unknown directive '" + std::string(t) + "'");
        }
        continue;
      }
      // A placeholder alone on its line stands for whole lines.
      if (t.size() > 2 && t.front() == '@' && t.back() == '@' && is_name(t.substr(1, t.size() - 2))) {
        const std::string key(t.substr(1, t.size() - 2));
        mentioned_.insert(key);
        if (!active) continue;
        KILN_ASSIGN_OR_RETURN(const std::string* value, lookup(key));
        // Each non-empty line of the value gets the placeholder's indent.
        const std::string_view indent = line.substr(0, line.find('@'));
        for (size_t pos = 0; pos < value->size();) {
          const size_t eol = std::min(value->find('\n', pos), value->size());
          if (eol > pos) out_.append(indent).append(*value, pos, eol - pos);
          out_ += '\n';
          pos = eol + 1;
        }
        continue;
      }
      KILN_RETURN_IF_ERROR(inline_line(line, active));
    }
    if (!stack.empty()) return error("//@if without //@end at the end of the template");
    for (const auto& [key, value] : args_.texts())
      if (!mentioned_.count(key)) return error("argument '" + key + "' is not a placeholder of the template", 0);
    for (const auto& [key, value] : args_.flags())
      if (!mentioned_.count(key)) return error("flag '" + key + "' is not used by the template", 0);
    return std::move(out_);
  }

 private:
  // Copies `line` replacing each @NAME@ (only records names when inactive).
  Status inline_line(std::string_view line, bool active) {
    while (true) {
      const size_t open = line.find('@');
      if (open == std::string_view::npos) break;
      const size_t close = line.find('@', open + 1);
      const std::string_view key =
          close == std::string_view::npos ? std::string_view() : line.substr(open + 1, close - open - 1);
      if (!is_name(key)) return error("stray '@' (placeholders are @NAME@)");
      mentioned_.insert(std::string(key));
      if (active) {
        out_ += line.substr(0, open);
        KILN_ASSIGN_OR_RETURN(const std::string* value, lookup(std::string(key)));
        out_ += *value;
      }
      line.remove_prefix(close + 1);
    }
    if (active) out_ += line;
    return ok_status();
  }

  StatusOr<const std::string*> lookup(const std::string& key) {
    const auto it = args_.texts().find(key);
    if (it == args_.texts().end()) return error("no value for placeholder @" + key + "@");
    return &it->second;
  }

  Status error(const std::string& what, int line = -1) const {
    const int at = line < 0 ? line_ : line;
    return invalid_argument("shader template '" + std::string(name_) + "'" +
                            (at > 0 ? " line " + std::to_string(at) : std::string()) + ": " + what);
  }

  std::string_view name_;
  const ShaderArgs& args_;
  std::set<std::string> mentioned_;
  std::string out_;
  int line_ = 0;
};

// The lines of `text` after `//@section <name>` up to the next section.
StatusOr<std::string_view> section(std::string_view text, std::string_view name) {
  size_t begin = std::string_view::npos;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end = std::min(text.find('\n', pos), text.size() - 1) + 1;
    const std::string_view t = trim(text.substr(pos, end - pos));
    if (t.starts_with("//@section")) {
      if (begin != std::string_view::npos) return text.substr(begin, pos - begin);
      if (trim(t.substr(10)) == name) begin = end;
    }
    pos = end;
  }
  if (begin != std::string_view::npos) return text.substr(begin);
  return not_found("shader template has no section '" + std::string(name) + "'");
}

}  // namespace

ShaderArgs& ShaderArgs::set(const std::string& name, std::string text) {
  texts_[name] = std::move(text);
  return *this;
}

ShaderArgs& ShaderArgs::set(const std::string& name, int64_t value) { return set(name, std::to_string(value)); }

ShaderArgs& ShaderArgs::flag(const std::string& name, bool on) {
  flags_[name] = on;
  return *this;
}

StatusOr<std::string> try_fill_shader(std::string_view name, const ShaderArgs& args) {
  const size_t hash = name.find('#');
  const std::string_view file = name.substr(0, hash);
  for (const EmbeddedShader& s : embedded_shaders()) {
    if (s.name != file) continue;
    if (hash == std::string_view::npos) return Filler(name, args).run(s.text);
    KILN_ASSIGN_OR_RETURN(std::string_view text, section(s.text, name.substr(hash + 1)));
    return Filler(name, args).run(text);
  }
  return not_found("no shader template '" + std::string(file) + "' in shaders/");
}

StatusOr<std::string> fill_template_text(std::string_view what, std::string_view text, const ShaderArgs& args) {
  return Filler(what, args).run(text);
}

std::string fill_shader(std::string_view name, const ShaderArgs& args) {
  StatusOr<std::string> text = try_fill_shader(name, args);
  if (!text.ok()) {
    std::fprintf(stderr, "kiln: %s\n", text.status().to_string().c_str());
    std::abort();
  }
  return std::move(text).value();
}

}  // namespace kiln::planner
