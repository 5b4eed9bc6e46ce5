// JsonWriter: one small writer for the JSON Kiln produces (libkiln's
// session, run, plugin and device descriptions; the kiln tool's --stats and
// bench documents), instead of JSON concatenated by hand in every producer.
// Commas and escaping are its job; the caller says what comes next.
//
//   JsonWriter w;
//   w.begin_object().key("gpu_ms").number(1.5).key("kernels").begin_array();
//   ... w.end_array().end_object();
//   std::string json = w.take();
//
// Numbers print as std::to_string does (six decimals for doubles), the
// format `kiln run --stats` has always written. No dependency on the rest
// of the engine, so the tool can link it without the engine.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

// Escapes `s` for the inside of a JSON string literal (quotes, backslashes,
// control characters as \u00XX).
std::string json_escape(std::string_view s);

class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  // An object member's name; the value call that follows is its value.
  JsonWriter& key(std::string_view name);
  JsonWriter& string(std::string_view s);
  JsonWriter& number(double v);
  JsonWriter& number(int64_t v);
  JsonWriter& number(uint64_t v);
  JsonWriter& number(uint32_t v) { return number(static_cast<uint64_t>(v)); }
  JsonWriter& number(int v) { return number(static_cast<int64_t>(v)); }
  JsonWriter& boolean(bool v);
  JsonWriter& null();
  // A value that is already JSON (a document from another producer).
  JsonWriter& raw(std::string_view json);
  // The members of the JSON object `object_json` spliced into the object
  // being written ("{}" adds nothing).
  JsonWriter& members(std::string_view object_json);
  // A line break plus two spaces per open level before the next item, for
  // documents people read (`kiln run --stats`).
  JsonWriter& newline();

  const std::string& str() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  void before_value();
  void open(char bracket);
  void close(char bracket);
  std::string out_;
  std::vector<bool> first_;  // per open level: no item written yet
  bool after_key_ = false;
  bool pending_newline_ = false;
};

}  // namespace kiln
