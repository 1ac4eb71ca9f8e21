// Turning numbers into text a person reads at a glance, and aligned tables.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "loupe/prof/units.h"

namespace loupe::cli {

using prof::format_bytes;
using prof::format_count;
using prof::format_duration;
using prof::format_percent;
std::string format_wall_time(int64_t unix_ns);  // "2026-11-29 14:23:38 UTC"

// A table printed with aligned columns; numeric-looking cells align right.
class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) : header_(std::move(header)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print(std::FILE* out, const std::string& indent = "") const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// Widths for a streamed table: measured on the first rows, then fixed.
std::vector<size_t> column_widths(const std::vector<std::string>& header,
                                  const std::vector<std::vector<std::string>>& rows);
void print_row(std::FILE* out, const std::vector<std::string>& cells, const std::vector<size_t>& widths,
               const std::string& indent = "");

// CSV with RFC 4180 quoting.
std::string csv_escape(const std::string& cell);

}  // namespace loupe::cli
