// Turning numbers into text a person reads at a glance, and aligned tables.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "loupe/prof/units.h"

namespace loupe::cli {

using prof::format_bytes;
using prof::format_count;
using prof::format_duration;
using prof::format_percent;
std::string format_wall_time(int64_t unix_ns);  // "2026-11-29 14:23:38 UTC"

// Text from a trace, made safe for a terminal and cut to a readable length
// (printable() in loupe/prof/safe_text.h): every cell of every table and
// every name loupe prints goes through it.
std::string shown(std::string_view text);

// A table printed with aligned columns; numeric-looking cells align right.
// Cells are shown() as they are added.
class TextTable {
 public:
  explicit TextTable(const std::vector<std::string>& header);
  void add(std::vector<std::string> row);
  void print(std::FILE* out, const std::string& indent = "") const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// Widths for a streamed table: measured on the first rows, then fixed.
// The cells of these two must already be shown().
std::vector<size_t> column_widths(const std::vector<std::string>& header,
                                  const std::vector<std::vector<std::string>>& rows);
void print_row(std::FILE* out, const std::vector<std::string>& cells, const std::vector<size_t>& widths,
               const std::string& indent = "");

// A CSV cell: printable() (control characters escaped, so no CSV line is
// ever split or forged), then RFC 4180 quoting. Not cut.
std::string csv_escape(std::string_view cell);

}  // namespace loupe::cli
