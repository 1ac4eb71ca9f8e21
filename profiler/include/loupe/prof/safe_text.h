// Strings from a trace are untrusted: a kernel, thread or device name can
// hold terminal escape sequences (OSC 52 writes the clipboard, ESC[2J
// clears the screen, CR/LF forge output lines), NUL bytes, invalid UTF-8,
// or megabytes of text. Every such string passes through one of these
// before it reaches a terminal or a JSON document.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace loupe::prof {

// Names in text meant for a person are cut to this many bytes.
inline constexpr size_t kTextNameLimit = 1024;

// Safe to print on a terminal: control characters become visible escapes
// (\n, \r, \t, \x1b, \x00, and \u009b for C1 controls), as do the Unicode
// controls that reorder or break lines (U+202A-U+202E, U+2066-U+2069,
// U+2028, U+2029) and each byte of invalid UTF-8 (\xff). Nothing is
// dropped; a NUL never ends the string early.
std::string printable(std::string_view text);

// printable(), after cutting the text to at most `max_bytes` (at a
// character boundary), with "... (N bytes cut)" appended when it was cut.
std::string printable(std::string_view text, size_t max_bytes);

// Cuts `text` to at most `max_bytes` at a UTF-8 character boundary and
// appends "... (N bytes cut)"; returns it unchanged when it fits.
std::string cut_to(std::string_view text, size_t max_bytes);

// Valid UTF-8 for JSON: each maximal invalid subsequence (as the Unicode
// standard defines it, section 3.9) becomes U+FFFD. Adds the number of
// replacements to `*replaced` when given.
std::string valid_utf8(std::string_view text, uint64_t* replaced = nullptr);

}  // namespace loupe::prof
