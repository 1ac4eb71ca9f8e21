// loupe summary FILE: device ops, transfers, host spans, compiles and
// memory peaks as tables, like `nsys stats`.
#include <fmt/format.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "loupe/prof/safe_text.h"
#include "loupe/prof/statistics.h"
#include "loupe/prof/trace_reader.h"
#include "text_format.h"
#include "trace_input.h"

namespace loupe::cli {

namespace {

struct SummaryArgs {
  std::string path;
  bool csv = false, json = false;
  size_t limit = 20;
  InputArgs input;
};

// The options of `loupe summary`.
void add_options(CLI::App& cmd, SummaryArgs& args) {
  cmd.description("Tables of device ops, transfers, host spans, compiles and memory peaks");
  cmd.add_option("FILE", args.path, kTraceInputHelp)->required();
  auto* csv = cmd.add_flag("--csv", args.csv, "CSV with raw numbers (ns, bytes)");
  cmd.add_flag("--json", args.json, "JSON with raw numbers (ns, bytes)")->excludes(csv);
  cmd.add_option("--limit", args.limit, "rows per table in text output (default 20)");
  add_input_options(cmd, args.input);
}

// Machine output carries raw numbers (ns, bytes, counts), not the text.
std::string raw(const prof::StatCell& c) {
  if (!c.numeric) return c.text;
  if (c.value == double(int64_t(c.value))) return std::to_string(int64_t(c.value));
  return fmt::format("{}", c.value);
}

int run_summary(const SummaryArgs& args) {
  ReadInput in(args.path, args.input);
  if (in->is_job()) throw std::invalid_argument(fmt::format("{} is a job; summarize one rank's trace", args.path));
  std::vector<prof::StatTable> tables = prof::trace_statistics(in.model());
  if (args.json) {
    // JSON must be valid UTF-8; names from the trace may not be.
    uint64_t replaced = 0;
    nlohmann::json doc = nlohmann::json::object();
    for (const auto& t : tables) {
      nlohmann::json rows = nlohmann::json::array();
      for (const auto& r : t.rows) {
        nlohmann::json row;
        for (size_t i = 0; i < r.size(); ++i) {
          if (r[i].numeric) row[t.columns[i]] = r[i].value;
          else row[t.columns[i]] = prof::valid_utf8(r[i].text, &replaced);
        }
        rows.push_back(row);
      }
      doc[t.name] = rows;
    }
    fmt::print("{}\n", doc.dump(2));
    if (replaced > 0) {
      fmt::print(stderr, "loupe: replaced {} invalid UTF-8 sequence{} in names with U+FFFD\n", replaced,
                 replaced == 1 ? "" : "s");
    }
    return kExitOk;
  }
  bool first = true;
  for (const auto& t : tables) {
    if (args.csv) {
      // One CSV block per table, headed by the table's name.
      if (!first) fmt::print("\n");
      fmt::print("# {}\n", t.name);
      std::string line;
      for (size_t i = 0; i < t.columns.size(); ++i) line += (i ? "," : "") + csv_escape(t.columns[i]);
      fmt::print("{}\n", line);
      for (const auto& r : t.rows) {
        line.clear();
        for (size_t i = 0; i < r.size(); ++i) line += (i ? "," : "") + csv_escape(raw(r[i]));
        fmt::print("{}\n", line);
      }
    } else {
      fmt::print("{}{}\n", first ? "" : "\n", t.title);
      if (t.rows.empty()) {
        fmt::print("  (none)\n");
      } else {
        // A kernel's name runs to hundreds of characters (C++ templates):
        // names go last, as in `nsys stats`, so the figures keep their columns.
        const bool name_last = !t.columns.empty() && t.columns.front() == "name";
        auto ordered = [&](std::vector<std::string> cells) {
          if (name_last) std::rotate(cells.begin(), cells.begin() + 1, cells.end());
          return cells;
        };
        TextTable table(ordered(t.columns));
        size_t shown = std::min(t.rows.size(), args.limit);
        for (size_t k = 0; k < shown; ++k) {
          std::vector<std::string> cells;
          for (const auto& c : t.rows[k]) cells.push_back(c.text);
          table.add(ordered(std::move(cells)));
        }
        table.print(stdout, "  ");
        if (shown < t.rows.size()) fmt::print("  ... {} more (--limit)\n", t.rows.size() - shown);
      }
    }
    first = false;
  }
  return kExitOk;
}

}  // namespace

Command add_summary_command(CLI::App& app) { return make_command(app, "summary", add_options, run_summary); }

}  // namespace loupe::cli
