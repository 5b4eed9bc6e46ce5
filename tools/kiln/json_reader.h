// A small JSON reader for the kiln tool's own documents (`kiln bench compare`
// reads the JSON that `kiln bench` and the bench/ scripts write). RFC 8259
// values: objects (member order kept), arrays, strings with every escape
// (\uXXXX incl. surrogate pairs, to UTF-8), numbers (as double), true, false,
// null. Errors say where: "line L, column C: what was expected".
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/base/status.h"

namespace kiln::cli {

struct JsonValue {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<JsonValue> items;                             // kArray
  std::vector<std::pair<std::string, JsonValue>> members;  // kObject, in document order

  bool is_null() const { return kind == Kind::kNull; }
  bool is_number() const { return kind == Kind::kNumber; }
  bool is_string() const { return kind == Kind::kString; }
  bool is_object() const { return kind == Kind::kObject; }
  bool is_array() const { return kind == Kind::kArray; }
  // The member `key` of an object (the last one if repeated), or nullptr when
  // this is not an object or has no such member.
  const JsonValue* get(std::string_view key) const;
  // get(key) when it is a string / a number, else nullptr.
  const std::string* get_string(std::string_view key) const;
  const double* get_number(std::string_view key) const;
};

// Parses one JSON document (surrounding whitespace allowed, nothing else).
// Nesting deeper than 512 levels is an error rather than a stack overflow.
StatusOr<JsonValue> parse_json(std::string_view text);

}  // namespace kiln::cli
