// Exact conversion of decimal number text to integers: trace formats write
// times as microseconds with a fraction ("1681234567890.123"), which a
// double cannot hold to the nanosecond. Converting the text itself rounds
// once, so imported times never drift.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace loupe::prof::import {

// The JSON number `text` (optionally signed, with a fraction and an
// exponent) times 10^`scale`, rounded to the nearest integer (halves away
// from zero). No value when `text` is not a number or the result does not
// fit in 64 bits, and `out_of_range` says which. Surrounding spaces are
// ignored.
struct ScaledDecimal {
  std::optional<int64_t> value;
  bool out_of_range = false;  // a number, but too large for 64 bits
};
ScaledDecimal parse_scaled_decimal(std::string_view text, int scale);
inline std::optional<int64_t> scaled_decimal(std::string_view text, int scale) {
  return parse_scaled_decimal(text, scale).value;
}

// Microseconds as text to nanoseconds: scaled_decimal(text, 3).
inline std::optional<int64_t> micros_to_nanos(std::string_view text) { return scaled_decimal(text, 3); }

// A whole number written in decimal, or in hex with a 0x prefix (ROCm
// writes stream handles as "0x0"); surrounding spaces are allowed.
std::optional<int64_t> parse_integer(std::string_view text);

}  // namespace loupe::prof::import
