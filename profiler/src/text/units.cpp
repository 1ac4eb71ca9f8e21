#include "loupe/prof/units.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>
#include <string>

namespace loupe::prof {

std::string format_duration(int64_t ns) {
  double v = double(ns);
  double a = std::fabs(v);
  if (a < 1e3) return fmt::format("{} ns", ns);
  if (a < 1e6) return fmt::format("{:.3f} us", v / 1e3);
  if (a < 1e9) return fmt::format("{:.3f} ms", v / 1e6);
  return fmt::format("{:.3f} s", v / 1e9);
}

namespace {
std::string scaled_bytes(double v) {
  double a = std::fabs(v);
  if (a < 1024) return fmt::format("{:.0f} B", v);
  if (a < 1024.0 * 1024) return fmt::format("{:.1f} KiB", v / 1024);
  if (a < 1024.0 * 1024 * 1024) return fmt::format("{:.1f} MiB", v / (1024.0 * 1024));
  return fmt::format("{:.2f} GiB", v / (1024.0 * 1024 * 1024));
}
}  // namespace

std::string format_bytes(int64_t bytes) {
  if (bytes > -1024 && bytes < 1024) return fmt::format("{} B", bytes);
  return scaled_bytes(double(bytes));
}

std::string format_byte_rate(double bytes_per_second) { return scaled_bytes(bytes_per_second) + "/s"; }

std::string format_count(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string format_percent(double fraction) { return fmt::format("{:.1f}%", fraction * 100.0); }

double parse_number(const std::string& text, bool duration) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    throw std::invalid_argument(fmt::format("'{}' is not a number", text));
  }
  std::string unit = text.substr(used);
  if (unit.empty()) return v;
  if (unit == "%") return v / 100.0;
  if (duration) {
    if (unit == "ns") return v;
    if (unit == "us") return v * 1e3;
    if (unit == "ms") return v * 1e6;
    if (unit == "s") return v * 1e9;
  }
  throw std::invalid_argument(fmt::format("unknown unit '{}' in '{}'", unit, text));
}

}  // namespace loupe::prof
