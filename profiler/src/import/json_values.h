// Reading the values of a JSON trace with simdjson's On-Demand API, fast
// and leniently: keys as written, strings without copying when they have
// no escapes, numbers as their text (converted exactly by decimal.h), and
// integers written as strings. Inline: they run for every field of every
// event.
#pragma once

#include <fmt/format.h>
#include <simdjson.h>

#include <cstdint>
#include <cstring>
#include <deque>
#include <optional>
#include <string>
#include <string_view>

#include "import/decimal.h"

namespace loupe::prof::import {

namespace od = simdjson::ondemand;

inline bool is_space(int c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// The text of a field's key as written (no escapes): keys loupe looks for
// never contain escapes, so a key with one is returned as "\\" and matches
// nothing.
inline std::string_view key_text(od::field& field) {
  const char* p = field.key().raw();
  const char* q = p;
  while (*q != '"') {
    if (*q == '\\') return "\\";
    ++q;
  }
  return {p, size_t(q - p)};
}

struct TypeError {
  std::string what;
};

// The type of a value from its first byte (what simdjson itself looks at),
// without going through its error-checked accessors.
inline od::json_type type_of(od::value& v) {
  std::string_view tok = v.raw_json_token();
  switch (tok.empty() ? 0 : tok[0]) {
    case '"': return od::json_type::string;
    case '{': return od::json_type::object;
    case '[': return od::json_type::array;
    case 't':
    case 'f': return od::json_type::boolean;
    case 'n': return od::json_type::null;
    default: return od::json_type::number;  // the first byte: any other begins a number
  }
}

// A string value without copying when it has no escapes (nearly always).
// The raw token runs from the opening quote to just before the next
// structural character: the closing quote, then perhaps spaces.
inline std::string_view string_of(od::value& v, std::string_view field, std::deque<std::string>* arena = nullptr) {
  std::string_view tok = v.raw_json_token();
  if (tok.empty() || tok[0] != '"') throw TypeError{fmt::format("'{}' is not a string", field)};
  size_t close = tok.size() - 1;
  while (close > 0 && tok[close] != '"') --close;
  std::string_view content = tok.substr(1, close == 0 ? 0 : close - 1);
  bool escaped = false;
  if (content.size() < 32) {
    for (char c : content) escaped |= c == '\\';
  } else {
    escaped = std::memchr(content.data(), '\\', content.size()) != nullptr;
  }
  if (!escaped) return content;
  std::string_view unescaped = v.get_string();  // in the parser's buffer, reused by its next document
  if (!arena) return unescaped;
  return arena->emplace_back(unescaped);
}

// A name: a string, or (leniently) a number written as its text.
inline std::string_view text_of(od::value& v, std::string_view field, std::deque<std::string>* arena) {
  if (type_of(v) == od::json_type::number) {
    std::string_view tok = v.raw_json_token();
    double unused = v.get_double();  // validates the number
    (void)unused;
    while (!tok.empty() && is_space(tok.back())) tok.remove_suffix(1);
    return tok;
  }
  return string_of(v, field, arena);
}

// The text of a number (or of a string holding one): exact decimal
// conversion happens on it, never through a double.
inline std::string_view number_text(od::value& v, std::string_view field) {
  std::string_view tok = v.raw_json_token();
  if (tok.empty()) throw TypeError{fmt::format("'{}' is not a number", field)};
  if (tok[0] == '"') {
    size_t close = tok.find_last_of('"');
    return tok.substr(1, close == 0 ? 0 : close - 1);
  }
  if (tok[0] == '-' || (tok[0] >= '0' && tok[0] <= '9')) return tok;
  throw TypeError{fmt::format("'{}' is not a number", field)};
}

// An integer argument, leniently: a number or a string holding one
// (ROCm writes "size": "2560" and "stream": "0x0"). Nothing otherwise.
inline std::optional<int64_t> lenient_int(od::value& v) {
  std::string_view tok = v.raw_json_token();
  if (tok.empty()) return std::nullopt;
  if (tok[0] == '"') {
    size_t close = tok.find_last_of('"');
    return parse_integer(tok.substr(1, close == 0 ? 0 : close - 1));
  }
  if (tok[0] == '-' || (tok[0] >= '0' && tok[0] <= '9')) return parse_integer(tok);
  return std::nullopt;
}

}  // namespace loupe::prof::import
