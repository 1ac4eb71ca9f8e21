#include "import/decimal.h"

#include <algorithm>
#include <limits>

namespace loupe::prof::import {

namespace {

// 128-bit arithmetic holds 36 significant digits times any power of ten
// that still fits the result in 64 bits.
__extension__ typedef unsigned __int128 u128;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

}  // namespace

namespace {

// The common case, fast: up to 18 digits with at most `scale` of them after
// the point ("1669783687464181", "4458676522690.655"). Nothing to round.
std::optional<int64_t> simple_decimal(std::string_view text, int scale) {
  size_t i = 0, n = text.size();
  bool negative = n > 0 && text[0] == '-';
  i += negative;
  int64_t v = 0;
  int digits = 0, fraction = -1;
  for (; i < n; ++i) {
    char c = text[i];
    if (is_digit(c)) {
      if (++digits > 18) return std::nullopt;  // may not fit: the exact path takes it
      v = v * 10 + (c - '0');
      if (fraction >= 0) ++fraction;
    } else if (c == '.' && fraction < 0) {
      fraction = 0;
    } else {
      return std::nullopt;
    }
  }
  if (digits == 0 || digits > 18 || fraction > scale || fraction == 0) return std::nullopt;
  int shift = scale - std::max(fraction, 0);
  static constexpr int64_t kPow10[] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000};
  if (shift > 9 || __builtin_mul_overflow(v, kPow10[shift], &v)) return std::nullopt;
  return negative ? -v : v;
}

}  // namespace

ScaledDecimal parse_scaled_decimal(std::string_view text, int scale) {
  text = trim(text);
  if (scale >= 0 && scale <= 9) {
    if (std::optional<int64_t> v = simple_decimal(text, scale)) return {v};
  }
  const ScaledDecimal not_a_number{}, out_of_range{std::nullopt, true};
  size_t i = 0, n = text.size();
  bool negative = false;
  if (i < n && (text[i] == '-' || text[i] == '+')) negative = text[i++] == '-';
  // Significant digits accumulate in a 128-bit integer; once it holds 36
  // digits, further integer digits only raise the exponent and further
  // fraction digits are dropped (they cannot change a rounding to the
  // nearest integer with halves away from zero, at any scale used here).
  constexpr int kMaxDigits = 36;
  u128 mantissa = 0;
  int digits = 0;
  int64_t exponent = 0;
  bool any = false;
  for (; i < n && is_digit(text[i]); ++i) {
    any = true;
    if (digits < kMaxDigits) {
      mantissa = mantissa * 10 + unsigned(text[i] - '0');
      if (mantissa != 0) ++digits;
    } else {
      ++exponent;
    }
  }
  if (i < n && text[i] == '.') {
    ++i;
    for (; i < n && is_digit(text[i]); ++i) {
      any = true;
      if (digits < kMaxDigits) {
        mantissa = mantissa * 10 + unsigned(text[i] - '0');
        if (mantissa != 0) ++digits;
        --exponent;
      }
    }
  }
  if (!any) return not_a_number;
  if (i < n && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    bool exp_negative = false;
    if (i < n && (text[i] == '-' || text[i] == '+')) exp_negative = text[i++] == '-';
    if (i >= n || !is_digit(text[i])) return not_a_number;
    int64_t e = 0;
    for (; i < n && is_digit(text[i]); ++i) e = std::min<int64_t>(e * 10 + (text[i] - '0'), 100000);
    exponent += exp_negative ? -e : e;
  }
  if (i != n) return not_a_number;
  exponent += scale;

  constexpr u128 kLimit = u128(std::numeric_limits<int64_t>::max());
  if (mantissa == 0) return {int64_t(0)};
  if (exponent >= 0) {
    if (exponent > 19) return out_of_range;
    for (int64_t k = 0; k < exponent; ++k) {
      mantissa *= 10;
      if (mantissa > kLimit) return out_of_range;
    }
  } else {
    if (exponent < -38) {
      mantissa = 0;  // far below one: rounds to zero
    } else {
      u128 divisor = 1;
      for (int64_t k = 0; k < -exponent; ++k) divisor *= 10;
      u128 q = mantissa / divisor, r = mantissa % divisor;
      if (r * 2 >= divisor) ++q;  // halves away from zero
      mantissa = q;
    }
  }
  if (mantissa > kLimit) return out_of_range;
  return {negative ? -int64_t(mantissa) : int64_t(mantissa)};
}

std::optional<int64_t> parse_integer(std::string_view text) {
  text = trim(text);
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    uint64_t v = 0;
    if (text.size() > 18) return std::nullopt;
    for (size_t i = 2; i < text.size(); ++i) {
      char c = text[i];
      int d = is_digit(c)              ? c - '0'
              : (c >= 'a' && c <= 'f') ? c - 'a' + 10
              : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                       : -1;
      if (d < 0) return std::nullopt;
      v = v * 16 + unsigned(d);
    }
    if (v > uint64_t(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return int64_t(v);
  }
  size_t i = (!text.empty() && (text[0] == '-' || text[0] == '+')) ? 1 : 0;
  if (i < text.size() && text.find_first_not_of("0123456789", i) == std::string_view::npos) {
    return scaled_decimal(text, 0);  // plain digits: exact
  }
  // "7.0", "1e3": whole numbers written otherwise; "12.5" is not one.
  std::optional<int64_t> v = scaled_decimal(text, 0);
  std::optional<int64_t> tenfold = scaled_decimal(text, 1);
  if (!v || !tenfold || *tenfold != *v * 10) return std::nullopt;
  return v;
}

}  // namespace loupe::prof::import
