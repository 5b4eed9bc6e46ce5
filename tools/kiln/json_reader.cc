#include "tools/kiln/json_reader.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace kiln::cli {

const JsonValue* JsonValue::get(std::string_view key) const {
  if (kind != Kind::kObject) return nullptr;
  for (auto it = members.rbegin(); it != members.rend(); ++it)
    if (it->first == key) return &it->second;
  return nullptr;
}

const std::string* JsonValue::get_string(std::string_view key) const {
  const JsonValue* v = get(key);
  return v && v->is_string() ? &v->string : nullptr;
}

const double* JsonValue::get_number(std::string_view key) const {
  const JsonValue* v = get(key);
  return v && v->is_number() ? &v->number : nullptr;
}

namespace {

constexpr int kMaxDepth = 512;

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  StatusOr<JsonValue> document() {
    JsonValue v;
    KILN_RETURN_IF_ERROR(value(v, 0));
    skip_space();
    if (pos_ != text_.size()) return error("unexpected text after the JSON value");
    return v;
  }

 private:
  Status error(const std::string& what) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return invalid_argument("line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + what);
  }

  void skip_space() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }

  bool literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  Status value(JsonValue& out, int depth) {
    if (depth > kMaxDepth) return error("nesting deeper than " + std::to_string(kMaxDepth) + " levels");
    skip_space();
    if (pos_ >= text_.size()) return error("unexpected end of input, expected a value");
    const char c = text_[pos_];
    if (c == '{') return object(out, depth);
    if (c == '[') return array(out, depth);
    if (c == '"') {
      out.kind = JsonValue::Kind::kString;
      return string(out.string);
    }
    if (c == '-' || (c >= '0' && c <= '9')) return number(out);
    if (literal("true")) {
      out.kind = JsonValue::Kind::kBool;
      out.boolean = true;
      return ok_status();
    }
    if (literal("false")) {
      out.kind = JsonValue::Kind::kBool;
      return ok_status();
    }
    if (literal("null")) return ok_status();
    return error(std::string("unexpected character '") + c + "', expected a value");
  }

  Status object(JsonValue& out, int depth) {
    out.kind = JsonValue::Kind::kObject;
    ++pos_;  // '{'
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == '}') {
      ++pos_;
      return ok_status();
    }
    while (true) {
      skip_space();
      if (pos_ >= text_.size() || text_[pos_] != '"') return error("expected a string key");
      std::string key;
      KILN_RETURN_IF_ERROR(string(key));
      skip_space();
      if (pos_ >= text_.size() || text_[pos_] != ':') return error("expected ':' after the key \"" + key + "\"");
      ++pos_;
      JsonValue v;
      KILN_RETURN_IF_ERROR(value(v, depth + 1));
      out.members.emplace_back(std::move(key), std::move(v));
      skip_space();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == '}') {
        ++pos_;
        return ok_status();
      }
      return error("expected ',' or '}' in an object");
    }
  }

  Status array(JsonValue& out, int depth) {
    out.kind = JsonValue::Kind::kArray;
    ++pos_;  // '['
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == ']') {
      ++pos_;
      return ok_status();
    }
    while (true) {
      JsonValue v;
      KILN_RETURN_IF_ERROR(value(v, depth + 1));
      out.items.push_back(std::move(v));
      skip_space();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == ']') {
        ++pos_;
        return ok_status();
      }
      return error("expected ',' or ']' in an array");
    }
  }

  StatusOr<uint32_t> hex4() {
    if (pos_ + 4 > text_.size()) return error("truncated \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = text_[pos_++];
      v <<= 4;
      if (h >= '0' && h <= '9') {
        v |= static_cast<uint32_t>(h - '0');
      } else if (h >= 'a' && h <= 'f') {
        v |= static_cast<uint32_t>(h - 'a' + 10);
      } else if (h >= 'A' && h <= 'F') {
        v |= static_cast<uint32_t>(h - 'A' + 10);
      } else {
        --pos_;
        return error("bad hex digit in a \\u escape");
      }
    }
    return v;
  }

  static void append_utf8(std::string& s, uint32_t cp) {
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else if (cp < 0x800) {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      s += static_cast<char>(0xE0 | (cp >> 12));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      s += static_cast<char>(0xF0 | (cp >> 18));
      s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  Status string(std::string& out) {
    ++pos_;  // opening quote
    while (true) {
      if (pos_ >= text_.size()) return error("unterminated string");
      const char c = text_[pos_];
      if (c == '"') {
        ++pos_;
        return ok_status();
      }
      if (static_cast<unsigned char>(c) < 0x20) return error("control character in a string");
      if (c != '\\') {
        out += c;
        ++pos_;
        continue;
      }
      ++pos_;
      if (pos_ >= text_.size()) return error("unterminated string");
      const char e = text_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          KILN_ASSIGN_OR_RETURN(uint32_t cp, hex4());
          if (cp >= 0xD800 && cp < 0xDC00 && text_.substr(pos_, 2) == "\\u") {
            pos_ += 2;
            KILN_ASSIGN_OR_RETURN(uint32_t low, hex4());
            if (low < 0xDC00 || low >= 0xE000) return error("unpaired surrogate in a \\u escape");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xD800 && cp < 0xE000) {
            cp = 0xFFFD;  // a lone surrogate cannot be UTF-8; keep the text readable
          }
          append_utf8(out, cp);
          break;
        }
        default:
          --pos_;
          return error(std::string("bad escape '\\") + e + "' in a string");
      }
    }
  }

  Status number(JsonValue& out) {
    const size_t start = pos_;
    if (text_[pos_] == '-') ++pos_;
    auto digits = [&] {
      const size_t d0 = pos_;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
      return pos_ > d0;
    };
    if (!digits()) return error("expected digits in a number");
    if (pos_ < text_.size() && text_[pos_] == '.') {
      ++pos_;
      if (!digits()) return error("expected digits after '.' in a number");
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      if (!digits()) return error("expected digits in a number's exponent");
    }
    const std::string token(text_.substr(start, pos_ - start));
    errno = 0;
    out.kind = JsonValue::Kind::kNumber;
    out.number = std::strtod(token.c_str(), nullptr);
    if (errno == ERANGE && std::isinf(out.number)) {
      pos_ = start;
      return error("number out of range: " + token);
    }
    return ok_status();
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

StatusOr<JsonValue> parse_json(std::string_view text) { return Parser(text).document(); }

}  // namespace kiln::cli
