// The JSON writer; see json_writer.h.
#include "engine/base/json_writer.h"

#include <cstdio>

namespace kiln {

std::string json_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_ += pending_newline_ ? "," : ", ";
    first_.back() = false;
  }
  if (pending_newline_) {
    out_ += '\n';
    out_.append(2 * first_.size(), ' ');
    pending_newline_ = false;
  }
}

void JsonWriter::open(char bracket) {
  before_value();
  out_ += bracket;
  first_.push_back(true);
}

void JsonWriter::close(char bracket) {
  first_.pop_back();
  if (pending_newline_) {
    out_ += '\n';
    out_.append(2 * first_.size(), ' ');
    pending_newline_ = false;
  }
  out_ += bracket;
}

JsonWriter& JsonWriter::begin_object() {
  open('{');
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  close('}');
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  open('[');
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  close(']');
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view name) {
  before_value();
  out_ += '"';
  out_ += json_escape(name);
  out_ += "\": ";
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::string(std::string_view s) {
  before_value();
  out_ += '"';
  out_ += json_escape(s);
  out_ += '"';
  return *this;
}

JsonWriter& JsonWriter::number(double v) {
  before_value();
  out_ += std::to_string(v);
  return *this;
}

JsonWriter& JsonWriter::number(int64_t v) {
  before_value();
  out_ += std::to_string(v);
  return *this;
}

JsonWriter& JsonWriter::number(uint64_t v) {
  before_value();
  out_ += std::to_string(v);
  return *this;
}

JsonWriter& JsonWriter::boolean(bool v) {
  before_value();
  out_ += v ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::null() {
  before_value();
  out_ += "null";
  return *this;
}

JsonWriter& JsonWriter::raw(std::string_view json) {
  before_value();
  out_ += json;
  return *this;
}

JsonWriter& JsonWriter::members(std::string_view object_json) {
  const size_t open = object_json.find('{');
  const size_t close = object_json.rfind('}');
  if (open == std::string_view::npos || close == std::string_view::npos || close <= open) return *this;
  std::string_view inner = object_json.substr(open + 1, close - open - 1);
  while (!inner.empty() && (inner.front() == ' ' || inner.front() == '\n')) inner.remove_prefix(1);
  while (!inner.empty() && (inner.back() == ' ' || inner.back() == '\n')) inner.remove_suffix(1);
  if (inner.empty()) return *this;
  before_value();
  out_ += inner;
  return *this;
}

JsonWriter& JsonWriter::newline() {
  pending_newline_ = true;
  return *this;
}

}  // namespace kiln
