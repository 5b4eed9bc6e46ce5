// GLSL compute shader -> OpenCL C (see glsl_to_opencl.h).
#include "plugins/opencl/glsl_to_opencl.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <regex>
#include <set>
#include <sstream>

namespace kiln::opencl {
namespace {

struct Buffer {
  std::string type;   // element type as GLSL spells it (float, int, vec4, ...)
  std::string array;  // the array's name (x_data)
  bool readonly = false;
  bool restrict_ = false;
  bool coherent = false;
  // `const global`: read-only and not coherent. A coherent binding is read
  // back after the dispatch's own stores (through another binding of the
  // same buffer: the split-K reduce fused with LayerNorm); NVIDIA's
  // compiler may read a `const global` argument through its non-coherent
  // read-only cache, so such a binding is declared writable.
  bool is_const() const { return readonly && !coherent; }
};

// An image binding: a texture read with texelFetch (`NAME_tex`) or a
// storage image written with imageStore (`NAME_img`); glsl_codegen never
// reads and writes one image in one kernel (in-place writes are buffers
// only, planner/inplace.cc), so OpenCL C 1.2's read_only / write_only
// access qualifiers always fit.
struct Image {
  std::string name;
  bool written = false;
};

struct Shared {
  std::string decl;  // "float tile[64][65]"
  std::string name;
  // For a shared vector or array of vectors: the name in the GLSL body,
  // the array's rank (0 for a single vector) and the lane type.
  std::string glsl_name;
  int rank = 0;
  std::string lane_type;  // "" when the element is not a vector
};

// The scalar type of a GLSL vector type's lanes ("" for a non-vector).
std::string lane_type_of(const std::string& glsl_type) {
  static const std::regex vector(R"(^(|i|u)vec[234]$)");
  std::smatch m;
  if (!std::regex_match(glsl_type, m, vector)) return "";
  return m[1] == "i" ? "int" : m[1] == "u" ? "uint" : "float";
}

// One token of the shader body: identifiers and numbers whole, every other
// character alone; spaces and comments kept as they are.
struct Token {
  enum Kind { kIdent, kNumber, kPunct, kSpace } kind;
  std::string text;
  bool in_directive = false;  // part of a preprocessor line
};

std::vector<Token> lex(const std::string& s) {
  std::vector<Token> out;
  bool line_start = true, directive = false;
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == '\n') {
      // A directive continues over a backslash-newline.
      const bool continued = directive && !out.empty() && out.back().text == "\\";
      if (!continued) directive = false;
      out.push_back({Token::kSpace, "\n", directive});
      line_start = true;
      ++i;
      continue;
    }
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      size_t e = s.find('\n', i);
      if (e == std::string::npos) e = s.size();
      out.push_back({Token::kSpace, s.substr(i, e - i), directive});
      i = e;
      continue;
    }
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      size_t e = s.find("*/", i + 2);
      e = e == std::string::npos ? s.size() : e + 2;
      out.push_back({Token::kSpace, s.substr(i, e - i), directive});
      i = e;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      out.push_back({Token::kSpace, std::string(1, c), directive});
      ++i;
      continue;
    }
    if (c == '#' && line_start) directive = true;
    line_start = false;
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t e = i;
      while (e < s.size() && (std::isalnum(static_cast<unsigned char>(s[e])) || s[e] == '_')) ++e;
      out.push_back({Token::kIdent, s.substr(i, e - i), directive});
      i = e;
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) ||
        (c == '.' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      size_t e = i;
      while (e < s.size() && (std::isalnum(static_cast<unsigned char>(s[e])) || s[e] == '.' ||
                              ((s[e] == '+' || s[e] == '-') && (s[e - 1] == 'e' || s[e - 1] == 'E'))))
        ++e;
      out.push_back({Token::kNumber, s.substr(i, e - i), directive});
      i = e;
      continue;
    }
    out.push_back({Token::kPunct, std::string(1, c), directive});
    ++i;
  }
  return out;
}

size_t next_solid(const std::vector<Token>& t, size_t i) {
  while (i < t.size() && t[i].kind == Token::kSpace) ++i;
  return i;
}

std::string cl_type(const std::string& glsl_type) {
  static const std::map<std::string, std::string> types = {
      {"vec4", "float4"}, {"ivec4", "int4"}, {"uvec4", "uint4"}, {"vec2", "float2"}, {"ivec2", "int2"}};
  const auto it = types.find(glsl_type);
  return it == types.end() ? glsl_type : it->second;
}

class Translator {
 public:
  Translator(const std::string& glsl, const std::vector<int64_t>& spec) : glsl_(glsl), spec_(spec) {}

  StatusOr<TranslatedKernel> run() {
    KILN_RETURN_IF_ERROR(split_declarations());
    KILN_ASSIGN_OR_RETURN(std::string body, rewrite_functions(code_.str()));
    std::ostringstream s;
    // The prelude's image part (a sampler and texelFetch / imageStore) only
    // where images are bound: a device without image support rejects
    // sampler_t.
    if (!images_.empty()) s << "#define KILN_IMAGES 1\n";
    s << opencl_prelude() << "\n";
    s << defines_.str() << constants_.str();
    if (out_.has_push) s << "typedef struct { int p[" << out_.push_count << "]; } KilnPush;\n";
    // The buffers and images every function sees (hidden parameters), in
    // binding order: kernel argument k is binding k.
    std::vector<std::string> params, args, kernel_params;
    std::ostringstream buffer_starts;
    for (size_t binding = 0; binding < out_.bindings; ++binding) {
      if (const auto i = images_.find(binding); i != images_.end()) {
        params.push_back(std::string(i->second.written ? "write_only" : "read_only") + " image2d_t " + i->second.name);
        args.push_back(i->second.name);
        kernel_params.push_back(params.back());
        continue;
      }
      const Buffer& b = buffers_.at(binding);
      const std::string space = std::string(b.is_const() ? "const " : "") + "global " + (b.coherent ? "volatile " : "");
      params.push_back(space + cl_type(b.type) + "* " + (b.restrict_ ? "restrict " : "") + b.array);
      args.push_back(b.array);
      // The kernel receives the buffer and a byte offset into it (a tensor
      // placed in the run's arena) and passes the offset pointer down.
      kernel_params.push_back(space + cl_type(b.type) + "* " + b.array + "_kiln_buffer");
      buffer_starts << "  " << params.back() << " = (" << space << cl_type(b.type) << "*)((" << space << "char*)"
                    << b.array << "_kiln_buffer + " << b.array << "_kiln_offset);\n";
    }
    if (out_.has_push) {
      params.push_back("KilnPush kiln_pc");
      kernel_params.push_back("KilnPush kiln_pc");
      args.push_back("kiln_pc");
    }
    out_.offset_args.assign(out_.bindings, -1);
    for (size_t binding = 0; binding < out_.bindings; ++binding) {
      if (images_.count(binding)) continue;
      out_.offset_args[binding] = static_cast<int>(kernel_params.size());
      kernel_params.push_back("ulong " + buffers_.at(binding).array + "_kiln_offset");
    }
    for (const Shared& sh : shared_) {
      params.push_back("local " + sh.decl);
      args.push_back(sh.name);
    }
    for (const Shared& p : privates_) {
      params.push_back(p.decl);
      args.push_back(p.name);
    }
    s << "#define KILN_PARAMS " << join(params) << "\n";
    s << "#define KILN_ARGS " << join(args) << "\n";
    s << aliases_.str() << "\n";
    s << body << "\n";
    s << "kernel __attribute__((reqd_work_group_size(" << out_.local_size[0] << ", " << out_.local_size[1] << ", "
      << out_.local_size[2] << "))) void kiln_kernel(" << join(kernel_params) << ") {\n";
    s << buffer_starts.str();
    for (const Shared& sh : shared_) s << "  local " << sh.decl << ";\n";
    for (const Shared& p : privates_) s << "  " << p.decl << ";\n";
    s << "  kg_main(KILN_ARGS);\n}\n";
    out_.source = s.str();
    return std::move(out_);
  }

 private:
  static std::string join(const std::vector<std::string>& parts) {
    std::string s;
    for (const std::string& p : parts) s += (s.empty() ? "" : ", ") + p;
    return s;
  }

  // The declarations glsl_codegen emits one per line: version, extensions,
  // workgroup size, specialization and push constants, buffers, shared
  // arrays. Everything else is code.
  Status split_declarations() {
    static const std::regex local_size(R"(^layout\(local_size_x = (\d+), local_size_y = (\d+), local_size_z = (\d+)\) in;)");
    static const std::regex spec(R"(^layout\(constant_id = (\d+)\) const int (\w+) = 1;)");
    static const std::regex push(R"(^layout\(push_constant\) uniform KilnPush \{ int p\[(\d+)\]; \} kiln_pc;)");
    static const std::regex buffer(
        R"(^layout\(std430, set = 0, binding = (\d+)\) ([a-z ]*)buffer \w+ \{ (\w+) (\w+)\[\]; \};)");
    static const std::regex storage_image(
        R"(^layout\(set = 0, binding = (\d+), (\w+)\) uniform writeonly image2D (\w+);)");
    static const std::regex texture(R"(^layout\(set = 0, binding = (\d+)\) uniform sampler2D (\w+);)");
    static const std::regex shared(R"(^shared (\w+) ((\w+)(\[[^;]*\])+);)");
    static const std::regex shared_scalar(R"(^shared (\w+) (\w+);)");
    std::istringstream in(glsl_);
    std::string line;
    bool saw_local_size = false;
    while (std::getline(in, line)) {
      std::smatch m;
      if (line.rfind("#version", 0) == 0 || line.rfind("#extension", 0) == 0) continue;
      if (std::regex_search(line, m, local_size)) {
        for (int k = 0; k < 3; ++k) out_.local_size[k] = static_cast<uint32_t>(std::stoul(m[k + 1].str()));
        saw_local_size = true;
      } else if (std::regex_search(line, m, spec)) {
        const size_t id = std::stoul(m[1].str());
        if (id >= spec_.size()) return invalid_argument("specialization constant " + m[1].str() + " has no value");
        defines_ << "#define " << m[2].str() << " (" << spec_[id] << ")\n";
      } else if (std::regex_search(line, m, push)) {
        out_.has_push = true;
        out_.push_count = std::stoul(m[1].str());
      } else if (std::regex_search(line, m, buffer)) {
        const size_t binding = std::stoul(m[1].str());
        Buffer b;
        const std::string quals = m[2].str();
        b.readonly = quals.find("readonly") != std::string::npos;
        b.restrict_ = quals.find("restrict") != std::string::npos;
        b.coherent = quals.find("coherent") != std::string::npos;
        b.type = m[3].str();
        b.array = m[4].str();
        const auto first = buffers_.find(binding);
        if (first == buffers_.end()) {
          buffers_[binding] = b;
        } else {
          // Another view of the same binding: the same memory, another type.
          aliases_ << "#define " << b.array << " ((" << (first->second.is_const() ? "const " : "") << "global "
                   << (first->second.coherent ? "volatile " : "") << cl_type(b.type) << "*)" << first->second.array
                   << ")\n";
        }
      } else if (std::regex_search(line, m, storage_image)) {
        // Images are CL_RGBA / CL_FLOAT (the runtime's); an fp16 image
        // would be CL_HALF_FLOAT, which the fp32-only backend never plans.
        if (m[2].str() != "rgba32f")
          return unimplemented("the OpenCL backend stores fp32 images only; the shader declares `" + line + "`");
        KILN_RETURN_IF_ERROR(add_image(std::stoul(m[1].str()), m[3].str(), true));
      } else if (std::regex_search(line, m, texture)) {
        KILN_RETURN_IF_ERROR(add_image(std::stoul(m[1].str()), m[2].str(), false));
      } else if (std::regex_search(line, m, shared)) {
        const std::string declarator = m[2].str();
        shared_.push_back({m[1].str() + " " + declarator, m[3].str(), m[3].str(),
                           static_cast<int>(std::count(declarator.begin(), declarator.end(), '[')),
                           lane_type_of(m[1].str())});
      } else if (std::regex_search(line, m, shared_scalar)) {
        // A one-element local array under another name; the macro makes
        // the GLSL name its element.
        shared_.push_back({m[1].str() + " " + m[2].str() + "_kiln_local[1]", m[2].str() + "_kiln_local", m[2].str(),
                           0, lane_type_of(m[1].str())});
        aliases_ << "#define " << m[2].str() << " (" << m[2].str() << "_kiln_local[0])\n";
      } else if (line.rfind("layout(", 0) == 0) {
        return unimplemented("the OpenCL translation does not know the declaration `" + line + "`");
      } else {
        code_ << line << "\n";
      }
    }
    if (!saw_local_size) return invalid_argument("the shader declares no workgroup size");
    // GLSL's control-flow attributes (GL_EXT_control_flow_attributes:
    // [[unroll]] on the loops of conv_depthwise_rows and the tensor-core
    // kernels) have no OpenCL C 1.2 spelling; the compiler unrolls loops of
    // constant trip count by itself, so they go.
    static const std::regex attribute(R"(\[\[\s*(unroll|dont_unroll|flatten|dont_flatten)\s*\]\]\s*)");
    std::string code = std::regex_replace(code_.str(), attribute, "");
    // PoCL (3.1) miscompiles a kernel whose barriers follow a return, even
    // one that whole workgroups take (it reads stale private values after
    // the barrier). The linearly numbered kernels return from the groups
    // past KILN_GROUPS, which a 1-D grid of exactly KILN_GROUPS groups never
    // launches: with barriers, the guard goes and the runtime checks that
    // grid (requires_exact_grid).
    static const std::string guard = "if (kiln_group >= KILN_GROUPS) return;";
    if (code.find("barrier()") != std::string::npos) {
      for (size_t at = code.find(guard); at != std::string::npos; at = code.find(guard, at)) {
        code.replace(at, guard.size(), "/* group guard removed: exact grid */");
        out_.requires_exact_grid = true;
      }
    }
    code_.str(code);
    // Bindings are kernel arguments in binding order; a gap would shift them.
    std::set<size_t> bindings;
    for (const auto& [binding, b] : buffers_) bindings.insert(binding);
    for (const auto& [binding, i] : images_) bindings.insert(binding);
    size_t expect = 0;
    for (size_t binding : bindings)
      if (binding != expect++) return invalid_argument("the shader's bindings are not 0..n-1");
    out_.bindings = bindings.size();
    out_.image_bindings.assign(bindings.size(), false);
    for (const auto& [binding, i] : images_) out_.image_bindings[binding] = true;
    return ok_status();
  }

  Status add_image(size_t binding, const std::string& name, bool written) {
    if (buffers_.count(binding) || images_.count(binding))
      return invalid_argument("binding " + std::to_string(binding) + " is declared twice with an image");
    images_[binding] = Image{name, written};
    return ok_status();
  }

  // Functions: hidden parameters, kg_ names, overloadable; program-scope
  // constants and structs made OpenCL C.
  StatusOr<std::string> rewrite_functions(const std::string& code) {
    std::vector<Token> t = lex(code);
    std::set<std::string> functions;
    std::set<size_t> definitions;  // token index of a definition's name
    int braces = 0, parens = 0;
    for (size_t i = 0; i < t.size(); ++i) {
      const Token& k = t[i];
      if (k.in_directive) continue;
      if (k.kind == Token::kPunct) {
        if (k.text == "{") ++braces;
        else if (k.text == "}") --braces;
        else if (k.text == "(") ++parens;
        else if (k.text == ")") --parens;
        continue;
      }
      if (k.kind != Token::kIdent || braces != 0 || parens != 0) continue;
      const size_t n = next_solid(t, i + 1);
      if (n >= t.size() || t[n].kind != Token::kIdent) continue;
      const size_t p = next_solid(t, n + 1);
      if (p >= t.size() || t[p].text != "(") continue;
      functions.insert(t[n].text);
      definitions.insert(n);
    }
    // GLSL array constructors (`int[2](a, b)`, only ever initializers in
    // the kernels) are C initializer lists.
    std::map<size_t, size_t> array_ctors;  // first token -> its `(`; the matching `)` becomes `}`
    std::set<size_t> ctor_closes;
    for (size_t i = 0; i < t.size(); ++i) {
      if (t[i].kind != Token::kIdent) continue;
      const size_t open = next_solid(t, i + 1);
      if (open >= t.size() || t[open].text != "[") continue;
      size_t close = open + 1;
      while (close < t.size() && t[close].text != "]" && t[close].text != ";") ++close;
      const size_t paren = next_solid(t, close + 1);
      if (close >= t.size() || t[close].text != "]" || paren >= t.size() || t[paren].text != "(") continue;
      int depth = 0;
      for (size_t j = paren; j < t.size(); ++j) {
        if (t[j].text == "(") ++depth;
        if (t[j].text == ")" && --depth == 0) {
          array_ctors[i] = paren;
          ctor_closes.insert(j);
          break;
        }
      }
    }
    Edits edits = out_parameters(t, definitions);
    for (const auto& [i, text] : lane_stores(t).before) edits.before[i] += text;
    std::ostringstream s;
    braces = parens = 0;
    bool statement_start = true;
    for (size_t i = 0; i < t.size(); ++i) {
      const Token& k = t[i];
      if (const auto b = edits.before.find(i); b != edits.before.end()) s << b->second;
      if (const auto r = edits.replace.find(i); r != edits.replace.end()) {
        s << r->second;
        continue;
      }
      if (const auto ctor = array_ctors.find(i); ctor != array_ctors.end()) {
        s << "{";
        i = ctor->second;
        ++parens;
        continue;
      }
      if (ctor_closes.count(i)) {
        s << "}";
        --parens;
        continue;
      }
      if (!k.in_directive && k.kind == Token::kPunct) {
        if (k.text == "{") ++braces;
        else if (k.text == "}") --braces;
        else if (k.text == "(") ++parens;
        else if (k.text == ")") --parens;
      }
      if (k.kind == Token::kIdent && !k.in_directive && braces == 0 && parens == 0 && statement_start) {
        // A scalar constant may size arrays (shared ones in the kernel's
        // parameter list included): a macro, as C wants a constant
        // expression, placed before every function (KILN_PARAMS uses it).
        if (k.text == "const") {
          std::vector<std::pair<std::string, std::string>> constants;
          if (const size_t end = scalar_constants(t, i, constants); end != 0) {
            const std::string type = t[next_solid(t, i + 1)].text;
            for (const auto& [name, expr] : constants)
              constants_ << "#define " << name << " ((" << type << ")(" << expr << "))\n";
            i = end;
            continue;
          }
          s << "constant";
          statement_start = false;
          continue;
        }
        // Per-invocation globals (`int oc0;`, `int oc0, oc1;`): OpenCL C
        // 1.2 has no program-scope private variables (and OpenCL C 2.0+
        // would make them one `global` shared by every work-item: a race
        // NVIDIA showed), so each is a one-element array of the kernel,
        // passed down like the buffers, and a macro naming its element.
        if (k.text != "const" && k.text != "struct") {
          std::vector<std::string> names;
          size_t j = next_solid(t, i + 1);
          while (j < t.size() && t[j].kind == Token::kIdent) {
            names.push_back(t[j].text);
            const size_t sep = next_solid(t, j + 1);
            if (sep < t.size() && t[sep].text == ",") {
              j = next_solid(t, sep + 1);
              continue;
            }
            j = sep;
            break;
          }
          if (!names.empty() && j < t.size() && t[j].text == ";") {
            for (const std::string& name : names) {
              privates_.push_back({k.text + " " + name + "_kiln_private[1]", name + "_kiln_private"});
              aliases_ << "#define " << name << " (" << name << "_kiln_private[0])\n";
            }
            i = j;
            continue;
          }
        }
        if (k.text == "struct") {
          const size_t n = next_solid(t, i + 1);
          if (n < t.size() && t[n].kind == Token::kIdent)
            s << "typedef struct " << t[n].text << " " << t[n].text << "; ";
        }
      }
      if (k.kind != Token::kSpace && !k.in_directive)
        statement_start = braces == 0 && parens == 0 && (k.text == ";" || k.text == "}");
      if (k.kind == Token::kIdent && functions.count(k.text)) {
        const size_t p = next_solid(t, i + 1);
        if (p < t.size() && t[p].text == "(") {
          const size_t after = next_solid(t, p + 1);
          const bool empty = after < t.size() && t[after].text == ")";
          const bool definition = definitions.count(i) > 0;
          s << "kg_" << k.text;
          for (size_t j = i + 1; j <= p; ++j) s << t[j].text;
          s << (definition ? "KILN_PARAMS" : "KILN_ARGS") << (empty ? "" : ", ");
          i = p;
          ++parens;
          continue;
        }
      }
      // A definition's return type: make the function overloadable.
      if (k.kind == Token::kIdent && !k.in_directive && braces == 0 && parens == 0) {
        const size_t n = next_solid(t, i + 1);
        if (n < t.size() && definitions.count(n)) s << "KILN_OVL ";
      }
      s << k.text;
    }
    return s.str();
  }

  // For `const T NAME = EXPR, NAME2 = EXPR2;` with a scalar T: the
  // (name, expression) pairs and the index of the `;`; 0 for anything else.
  static size_t scalar_constants(const std::vector<Token>& t, size_t i,
                                 std::vector<std::pair<std::string, std::string>>& out) {
    static const std::set<std::string> scalars = {"int", "uint", "float", "bool"};
    const size_t type = next_solid(t, i + 1);
    if (type >= t.size() || !scalars.count(t[type].text)) return 0;
    size_t j = next_solid(t, type + 1);
    while (j < t.size()) {
      if (t[j].kind != Token::kIdent) return 0;
      const std::string name = t[j].text;
      const size_t eq = next_solid(t, j + 1);
      if (eq >= t.size() || t[eq].text != "=") return 0;
      std::string expr;
      int depth = 0;
      for (j = eq + 1; j < t.size(); ++j) {
        const std::string& x = t[j].text;
        if (depth == 0 && (x == "," || x == ";")) break;
        if (x == "(" || x == "[") ++depth;
        if (x == ")" || x == "]") --depth;
        if (t[j].kind != Token::kSpace) expr += (expr.empty() ? "" : " ") + x;
      }
      if (j >= t.size()) return 0;
      out.emplace_back(name, expr);
      if (t[j].text == ";") return j;
      j = next_solid(t, j + 1);
    }
    return 0;
  }

  // Token edits the main rewrite applies: text before a token (text after
  // token i goes before token i + 1), a token replaced (by "" to drop it).
  struct Edits {
    std::map<size_t, std::string> before, replace;
  };

  // The index of the `)` matching the `(` at `open`.
  static size_t matching_paren(const std::vector<Token>& t, size_t open) {
    int depth = 0;
    for (size_t j = open; j < t.size(); ++j) {
      if (t[j].text == "(") ++depth;
      if (t[j].text == ")" && --depth == 0) return j;
    }
    return t.size();
  }

  // The [first, last] solid tokens of each comma-separated item in (open, close).
  static std::vector<std::pair<size_t, size_t>> items(const std::vector<Token>& t, size_t open, size_t close) {
    std::vector<std::pair<size_t, size_t>> out;
    int depth = 0;
    size_t first = t.size(), last = t.size();
    for (size_t j = open + 1; j <= close; ++j) {
      const std::string& x = t[j].text;
      if (j == close || (depth == 0 && x == ",")) {
        if (first != t.size()) out.emplace_back(first, last);
        first = last = t.size();
        continue;
      }
      if (x == "(" || x == "[") ++depth;
      if (x == ")" || x == "]") --depth;
      if (t[j].kind == Token::kSpace) continue;
      if (first == t.size()) first = j;
      last = j;
    }
    return out;
  }

  // A store into one lane of a shared vector (`gt_b[k][n >> 2][n & 3] = v;`,
  // each invocation writing its own lane of a vec4 others write too). In
  // OpenCL C a vector lane is not a memory location of its own: compilers
  // store the lane as a load, insert and store of the whole vector, which
  // loses the lanes neighbouring invocations wrote in between (a GPU runs
  // them at once; a CPU implementation one after another, so PoCL never
  // shows it). SPIR-V from GLSL stores the lane alone. So the lane is
  // stored as a scalar through a pointer: `((local float*)&gt_b[k][n >> 2])[n & 3] = v;`
  // (assignments, compound assignments and ++/-- after it).
  Edits lane_stores(const std::vector<Token>& t) const {
    Edits e;
    std::map<std::string, const Shared*> vectors;
    for (const Shared& sh : shared_)
      if (!sh.lane_type.empty()) vectors[sh.glsl_name] = &sh;
    if (vectors.empty()) return e;
    for (size_t i = 0; i < t.size(); ++i) {
      if (t[i].kind != Token::kIdent || t[i].in_directive) continue;
      const auto v = vectors.find(t[i].text);
      if (v == vectors.end()) continue;
      size_t prev = i;
      while (prev > 0 && t[prev - 1].kind == Token::kSpace) --prev;
      if (prev > 0 && t[prev - 1].text == ".") continue;  // a member of something else
      // The subscripts after the name: the array's, then the lane's.
      std::vector<size_t> opens;
      size_t j = next_solid(t, i + 1);
      while (j < t.size() && t[j].text == "[") {
        opens.push_back(j);
        int depth = 0;
        for (; j < t.size(); ++j) {
          if (t[j].text == "[") ++depth;
          if (t[j].text == "]" && --depth == 0) break;
        }
        j = next_solid(t, j + 1);
      }
      if (opens.size() != static_cast<size_t>(v->second->rank) + 1 || j >= t.size()) continue;
      if (!is_assignment(t, j)) continue;
      e.before[i] += "((local " + v->second->lane_type + "*)&";
      e.before[opens.back()] += ")";
    }
    return e;
  }

  // Whether the solid tokens from `j` assign to what precedes them: `=` (not
  // `==`), `op=` for an arithmetic or bitwise op, `<<=`, `>>=`, `++`, `--`.
  static bool is_assignment(const std::vector<Token>& t, size_t j) {
    auto at = [&](size_t k) { return k < t.size() ? t[k].text : std::string(); };
    const std::string a = at(j), b = at(j + 1), c = at(j + 2);
    if (a == "=") return b != "=";
    if ((a == "+" || a == "-") && b == a) return true;
    static const std::set<std::string> ops = {"+", "-", "*", "/", "%", "&", "|", "^"};
    if (ops.count(a) && b == "=") return true;
    return (a == "<" || a == ">") && b == a && c == "=";
  }

  // GLSL out/inout parameters are references; OpenCL C passes pointers:
  // the parameter becomes `T* name`, its uses in the body `(*name)`, and
  // the caller's argument `&(arg)`.
  static Edits out_parameters(const std::vector<Token>& t, const std::set<size_t>& definitions) {
    Edits e;
    std::map<std::string, std::set<size_t>> out_args;  // function -> indices of its out parameters
    for (size_t d : definitions) {
      const size_t open = next_solid(t, d + 1), close = matching_paren(t, open);
      const auto params = items(t, open, close);
      for (size_t k = 0; k < params.size(); ++k) {
        const auto [first, last] = params[k];
        if (t[first].text != "out" && t[first].text != "inout") continue;
        out_args[t[d].text].insert(k);
        e.replace[first] = "";
        e.before[last] = "*";
        size_t body = next_solid(t, close + 1);
        if (body >= t.size() || t[body].text != "{") continue;  // a prototype
        int depth = 0;
        for (size_t j = body; j < t.size(); ++j) {
          if (t[j].text == "{") ++depth;
          if (t[j].text == "}" && --depth == 0) break;
          if (t[j].kind != Token::kIdent || t[j].text != t[last].text) continue;
          size_t prev = j;
          while (prev > 0 && t[prev - 1].kind == Token::kSpace) --prev;
          if (prev > 0 && t[prev - 1].text == ".") continue;  // a member, not the parameter
          e.replace[j] = "(*" + t[j].text + ")";
        }
      }
    }
    for (size_t i = 0; i < t.size(); ++i) {
      const auto f = out_args.find(t[i].text);
      if (t[i].kind != Token::kIdent || f == out_args.end() || definitions.count(i)) continue;
      const size_t open = next_solid(t, i + 1);
      if (open >= t.size() || t[open].text != "(") continue;
      const auto args = items(t, open, matching_paren(t, open));
      for (size_t k : f->second) {
        if (k >= args.size()) continue;
        e.before[args[k].first] += "&(";
        e.before[args[k].second + 1] += ")";
      }
    }
    return e;
  }

  const std::string& glsl_;
  const std::vector<int64_t>& spec_;
  TranslatedKernel out_;
  std::ostringstream defines_, constants_, aliases_, code_;
  std::map<size_t, Buffer> buffers_;
  std::map<size_t, Image> images_;
  std::vector<Shared> shared_;
  std::vector<Shared> privates_;  // per-invocation globals
};

}  // namespace

StatusOr<TranslatedKernel> glsl_to_opencl(const std::string& glsl, const std::vector<int64_t>& spec) {
  return Translator(glsl, spec).run();
}

}  // namespace kiln::opencl
