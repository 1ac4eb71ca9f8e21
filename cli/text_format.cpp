#include "text_format.h"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>

#include "loupe/prof/safe_text.h"

namespace loupe::cli {

std::string shown(std::string_view text) { return prof::printable(text, prof::kTextNameLimit); }

std::string format_wall_time(int64_t unix_ns) {
  std::time_t secs = std::time_t(unix_ns / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

namespace {
bool looks_numeric(const std::string& s) {
  if (s.empty()) return false;
  size_t digits = 0;
  for (char c : s) {
    if (c >= '0' && c <= '9') ++digits;
    else if (c != '.' && c != '-' && c != ',' && c != '+' && c != 'e' && c != '%') return false;
  }
  return digits > 0;
}
}  // namespace

std::vector<size_t> column_widths(const std::vector<std::string>& header,
                                  const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> w(header.size());
  for (size_t i = 0; i < header.size(); ++i) w[i] = header[i].size();
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], r[i].size());
  }
  return w;
}

void print_row(std::FILE* out, const std::vector<std::string>& cells, const std::vector<size_t>& widths,
               const std::string& indent) {
  std::string line = indent;
  for (size_t i = 0; i < cells.size(); ++i) {
    size_t width = i < widths.size() ? widths[i] : 0;
    bool last = i + 1 == cells.size();
    if (looks_numeric(cells[i])) {
      line += fmt::format("{:>{}}", cells[i], width);
    } else if (last) {
      line += cells[i];
    } else {
      line += fmt::format("{:<{}}", cells[i], width);
    }
    if (!last) line += "  ";
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), out);
}

TextTable::TextTable(const std::vector<std::string>& header) {
  for (const std::string& h : header) header_.push_back(shown(h));
}

void TextTable::add(std::vector<std::string> row) {
  for (std::string& cell : row) cell = shown(cell);
  rows_.push_back(std::move(row));
}

void TextTable::print(std::FILE* out, const std::string& indent) const {
  std::vector<size_t> widths = column_widths(header_, rows_);
  print_row(out, header_, widths, indent);
  for (const auto& r : rows_) print_row(out, r, widths, indent);
}

std::string csv_escape(std::string_view text) {
  std::string cell = prof::printable(text);
  if (cell.find_first_of(",\"") == std::string::npos) return cell;
  std::string out = "\"";
  for (char c : cell) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace loupe::cli
