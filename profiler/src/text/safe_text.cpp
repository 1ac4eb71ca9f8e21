#include "loupe/prof/safe_text.h"

#include <fmt/format.h>

#include "loupe/prof/units.h"

namespace loupe::prof {

namespace {

// One step through UTF-8: the length of the well-formed sequence at `i`,
// or of the maximal prefix of one that is ill-formed (at least 1 byte).
struct Utf8Step {
  size_t length;
  bool valid;
};

// The ranges of Table 3-7 of the Unicode standard: the second byte's range
// depends on the first byte (no overlong forms, no surrogates, nothing
// above U+10FFFF); later bytes are 80..BF.
Utf8Step next_utf8(std::string_view s, size_t i) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return {1, true};
  int more = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    more = 1;
  } else if (c == 0xE0) {
    more = 2, lo = 0xA0;
  } else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) {
    more = 2;
  } else if (c == 0xED) {
    more = 2, hi = 0x9F;
  } else if (c == 0xF0) {
    more = 3, lo = 0x90;
  } else if (c >= 0xF1 && c <= 0xF3) {
    more = 3;
  } else if (c == 0xF4) {
    more = 3, hi = 0x8F;
  } else {
    return {1, false};
  }
  size_t n = 1;
  for (int k = 0; k < more; ++k, ++n) {
    if (i + n >= s.size()) return {n, false};
    unsigned char b = static_cast<unsigned char>(s[i + n]);
    if (b < lo || b > hi) return {n, false};
    lo = 0x80, hi = 0xBF;
  }
  return {n, true};
}

uint32_t code_point(std::string_view s, size_t i, size_t length) {
  auto byte = [&](size_t k) { return uint32_t(static_cast<unsigned char>(s[i + k])); };
  switch (length) {
    case 2: return ((byte(0) & 0x1F) << 6) | (byte(1) & 0x3F);
    case 3: return ((byte(0) & 0x0F) << 12) | ((byte(1) & 0x3F) << 6) | (byte(2) & 0x3F);
    case 4: return ((byte(0) & 0x07) << 18) | ((byte(1) & 0x3F) << 12) | ((byte(2) & 0x3F) << 6) | (byte(3) & 0x3F);
  }
  return byte(0);
}

// Characters a terminal acts on instead of showing: C1 controls, the
// bidirectional overrides and isolates, and the line and paragraph
// separators.
bool is_invisible_control(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069) ||
         cp == 0x2028 || cp == 0x2029;
}

bool all_plain_ascii(std::string_view s) {
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c >= 0x7F) return false;
  }
  return true;
}

void append_escaped_byte(std::string& out, unsigned char c) {
  switch (c) {
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    default: out += fmt::format("\\x{:02x}", c);  // a byte: any other is written in hex
  }
}

}  // namespace

std::string printable(std::string_view text) {
  if (all_plain_ascii(text)) return std::string(text);
  std::string out;
  out.reserve(text.size() + 16);
  for (size_t i = 0; i < text.size();) {
    Utf8Step step = next_utf8(text, i);
    if (!step.valid) {
      for (size_t k = 0; k < step.length; ++k) append_escaped_byte(out, static_cast<unsigned char>(text[i + k]));
    } else if (step.length == 1) {
      unsigned char c = static_cast<unsigned char>(text[i]);
      if (c < 0x20 || c == 0x7F) append_escaped_byte(out, c);
      else out += char(c);
    } else if (uint32_t cp = code_point(text, i, step.length); is_invisible_control(cp)) {
      out += fmt::format("\\u{:04x}", cp);
    } else {
      out.append(text.substr(i, step.length));
    }
    i += step.length;
  }
  return out;
}

std::string cut_to(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  size_t keep = max_bytes;
  // Back to the first byte of a character (continuation bytes are 10xxxxxx).
  while (keep > 0 && (static_cast<unsigned char>(text[keep]) & 0xC0) == 0x80) --keep;
  return fmt::format("{}... ({} bytes cut)", text.substr(0, keep), format_count(text.size() - keep));
}

std::string printable(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return printable(text);
  return printable(cut_to(text, max_bytes));
}

std::string valid_utf8(std::string_view text, uint64_t* replaced) {
  std::string out;
  uint64_t n = 0;
  size_t copied = 0;  // text before this index is in `out` or was valid and still to copy
  for (size_t i = 0; i < text.size();) {
    Utf8Step step = next_utf8(text, i);
    if (!step.valid) {
      if (n == 0) out.reserve(text.size() + 8);
      out.append(text.substr(copied, i - copied));
      out += "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER
      ++n;
      copied = i + step.length;
    }
    i += step.length;
  }
  if (replaced) *replaced += n;
  if (n == 0) return std::string(text);
  out.append(text.substr(copied));
  return out;
}

}  // namespace loupe::prof
