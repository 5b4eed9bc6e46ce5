// The profile's JSON form (see model.h): written by `kiln tune`, read by the
// plugin, which links no engine code and so brings this small reader (the
// subset of RFC 8259 a profile uses: objects, arrays, strings with simple
// escapes, numbers, true/false/null).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>

#include "plugins/tmmodel/model.h"

namespace kiln::tmmodel {

namespace {

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    if (static_cast<unsigned char>(ch) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", ch);
      out += buf;
      continue;
    }
    out += ch;
  }
  return out + "\"";
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", std::isfinite(v) ? v : 0.0);
  return buf;
}

std::string numbers(const std::vector<double>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + number(v[i]);
  return out + "]";
}

struct Json {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = kNull;
  double num = 0;
  std::string str;
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> members;
  const Json* get(const std::string& key) const {
    for (const auto& [k, v] : members)
      if (k == key) return &v;
    return nullptr;
  }
};

class Reader {
 public:
  explicit Reader(const std::string& text) : s_(text) {}
  bool document(Json* out) {
    if (!value(out, 0)) return false;
    skip();
    if (pos_ != s_.size()) return fail("text after the document");
    return true;
  }
  std::string error() const { return "offset " + std::to_string(pos_) + ": " + error_; }

 private:
  bool fail(const std::string& what) {
    if (error_.empty()) error_ = what;
    return false;
  }
  void skip() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t')) ++pos_;
  }
  bool literal(const char* word) {
    const std::string w = word;
    if (s_.compare(pos_, w.size(), w) != 0) return fail("expected a value");
    pos_ += w.size();
    return true;
  }
  bool string(std::string* out) {
    if (pos_ >= s_.size() || s_[pos_] != '"') return fail("expected a string");
    ++pos_;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char ch = s_[pos_++];
      if (ch == '\\') {
        if (pos_ >= s_.size()) break;
        const char e = s_[pos_++];
        if (e == 'n') ch = '\n';
        else if (e == 't') ch = '\t';
        else if (e == 'u') {
          if (pos_ + 4 > s_.size()) return fail("truncated \\u escape");
          ch = static_cast<char>(std::strtol(s_.substr(pos_, 4).c_str(), nullptr, 16) & 0x7f);
          pos_ += 4;
        } else ch = e;
      }
      out->push_back(ch);
    }
    if (pos_ >= s_.size()) return fail("unterminated string");
    ++pos_;
    return true;
  }
  bool value(Json* out, int depth) {
    if (depth > 64) return fail("nesting too deep");
    skip();
    if (pos_ >= s_.size()) return fail("unexpected end");
    const char ch = s_[pos_];
    if (ch == '{') {
      out->kind = Json::kObject;
      ++pos_;
      skip();
      if (pos_ < s_.size() && s_[pos_] == '}') return ++pos_, true;
      for (;;) {
        skip();
        std::pair<std::string, Json> member;
        if (!string(&member.first)) return false;
        skip();
        if (pos_ >= s_.size() || s_[pos_++] != ':') return fail("expected ':'");
        if (!value(&member.second, depth + 1)) return false;
        out->members.push_back(std::move(member));
        skip();
        if (pos_ < s_.size() && s_[pos_] == ',') { ++pos_; continue; }
        if (pos_ < s_.size() && s_[pos_] == '}') return ++pos_, true;
        return fail("expected ',' or '}'");
      }
    }
    if (ch == '[') {
      out->kind = Json::kArray;
      ++pos_;
      skip();
      if (pos_ < s_.size() && s_[pos_] == ']') return ++pos_, true;
      for (;;) {
        out->items.emplace_back();
        if (!value(&out->items.back(), depth + 1)) return false;
        skip();
        if (pos_ < s_.size() && s_[pos_] == ',') { ++pos_; continue; }
        if (pos_ < s_.size() && s_[pos_] == ']') return ++pos_, true;
        return fail("expected ',' or ']'");
      }
    }
    if (ch == '"') return out->kind = Json::kString, string(&out->str);
    if (ch == 't') return out->kind = Json::kBool, out->num = 1, literal("true");
    if (ch == 'f') return out->kind = Json::kBool, literal("false");
    if (ch == 'n') return literal("null");
    char* end = nullptr;
    out->num = std::strtod(s_.c_str() + pos_, &end);
    if (end == s_.c_str() + pos_) return fail("expected a value");
    out->kind = Json::kNumber;
    pos_ = static_cast<size_t>(end - s_.c_str());
    return true;
  }

  const std::string& s_;
  size_t pos_ = 0;
  std::string error_;
};

}  // namespace

std::string profile_model_json(const Profile& p, int indent) {
  const std::string pad(static_cast<size_t>(indent), ' '), in = pad + "  ";
  std::ostringstream o;
  o << "{\n";
  o << in << "\"device\": " << quoted(p.device_name) << ",\n";
  o << in << "\"driver\": " << quoted(p.driver_version) << ",\n";
  o << in << "\"kiln\": " << quoted(p.kiln_version) << ",\n";
  o << in << "\"subgroup_size\": " << p.subgroup_size << ",\n";
  o << in << "\"beta_image_ns\": " << numbers(p.beta_image) << ",\n";
  o << in << "\"beta_buffer_ns\": " << numbers(p.beta_buffer) << ",\n";
  o << in << "\"thrash_d\": " << number(p.thrash_d) << ",\n";
  o << in << "\"cache_lines\": " << p.cache_lines << ",\n";
  o << in << "\"stream_scale_image\": " << number(p.stream_scale_image) << ",\n";
  o << in << "\"stream_scale_buffer\": " << number(p.stream_scale_buffer) << ",\n";
  o << in << "\"warp_width\": " << p.warp_width << ",\n";
  o << in << "\"warps_in_flight\": {";
  bool first = true;
  for (const auto& [g, k] : p.warps_in_flight) {
    o << (first ? "" : ", ") << "\"" << g << "\": " << number(k);
    first = false;
  }
  o << "},\n";
  o << in << "\"spearman_image\": " << number(p.spearman_image) << ",\n";
  o << in << "\"spearman_buffer\": " << number(p.spearman_buffer) << ",\n";
  o << in << "\"spearman_thread\": " << number(p.spearman_thread) << ",\n";
  o << in << "\"spearman_integrated\": " << number(p.spearman_integrated) << "\n";
  o << pad << "}";
  return o.str();
}

std::optional<Profile> parse_profile(const std::string& text, std::string* error) {
  Json doc;
  Reader reader(text);
  auto failed = [&](const std::string& what) -> std::optional<Profile> {
    if (error) *error = what;
    return std::nullopt;
  };
  if (!reader.document(&doc)) return failed(reader.error());
  const Json* m = doc.get("model");
  if (m == nullptr || m->kind != Json::kObject) return failed("no \"model\" object");
  Profile p;
  auto str = [&](const char* key, std::string* out) {
    const Json* v = m->get(key);
    if (v && v->kind == Json::kString) *out = v->str;
  };
  auto num = [&](const char* key, double* out) -> bool {
    const Json* v = m->get(key);
    if (!v || v->kind != Json::kNumber || !std::isfinite(v->num)) return false;
    *out = v->num;
    return true;
  };
  auto vec = [&](const char* key, std::vector<double>* out) -> bool {
    const Json* v = m->get(key);
    if (!v || v->kind != Json::kArray || v->items.size() != static_cast<size_t>(kFeatureCount)) return false;
    for (const Json& x : v->items) {
      if (x.kind != Json::kNumber || !std::isfinite(x.num)) return false;
      out->push_back(x.num);
    }
    return true;
  };
  str("device", &p.device_name);
  str("driver", &p.driver_version);
  str("kiln", &p.kiln_version);
  double subgroup = 0, lines = 0;
  num("subgroup_size", &subgroup);
  p.subgroup_size = static_cast<uint32_t>(std::max(0.0, subgroup));
  if (!vec("beta_image_ns", &p.beta_image)) return failed("\"beta_image_ns\" is not " + std::to_string(kFeatureCount) + " numbers");
  if (!vec("beta_buffer_ns", &p.beta_buffer)) return failed("\"beta_buffer_ns\" is not " + std::to_string(kFeatureCount) + " numbers");
  if (!num("thrash_d", &p.thrash_d) || p.thrash_d <= 0) return failed("\"thrash_d\" is not a positive number");
  if (!num("cache_lines", &lines) || lines < 1) return failed("\"cache_lines\" is not a positive number");
  p.cache_lines = static_cast<int>(std::min(lines, 1e9));
  if (!num("stream_scale_image", &p.stream_scale_image) || !num("stream_scale_buffer", &p.stream_scale_buffer))
    return failed("\"stream_scale_image\" / \"stream_scale_buffer\" missing");
  double width = 0;
  if (!num("warp_width", &width) || width < 1 || width > 1024) return failed("\"warp_width\" is not a number in 1..1024");
  p.warp_width = static_cast<int>(width);
  const Json* g = m->get("warps_in_flight");
  if (!g || g->kind != Json::kObject || g->members.empty()) return failed("\"warps_in_flight\" is not a non-empty object");
  for (const auto& [key, v] : g->members) {
    const int size = std::atoi(key.c_str());
    if (size <= 0 || v.kind != Json::kNumber || !(v.num > 0))
      return failed("\"warps_in_flight\" entry '" + key + "' is not group size: warps");
    p.warps_in_flight[size] = v.num;
  }
  num("spearman_image", &p.spearman_image);
  num("spearman_buffer", &p.spearman_buffer);
  num("spearman_thread", &p.spearman_thread);
  num("spearman_integrated", &p.spearman_integrated);
  return p;
}

}  // namespace kiln::tmmodel
