// loupe sql FILE "SELECT ...": ad-hoc read-only queries, as a table or CSV.
#include <fmt/format.h>

#include "commands.h"
#include "loupe/prof/open_input.h"
#include "loupe/prof/trace_query.h"
#include "text_format.h"

namespace loupe::cli {

namespace {

struct SqlArgs {
  std::string path, sql;
  bool csv = false;
  double timeout = prof::kDefaultQueryTimeoutSeconds;
};

// The options of `loupe sql`.
void add_options(CLI::App& cmd, SqlArgs& args) {
  cmd.description("Run a read-only SQL query on a trace file (docs/trace-format.md has the schema)");
  cmd.add_option("FILE", args.path, "trace file")->required();
  cmd.add_option("QUERY", args.sql, "one SQL statement, e.g. \"SELECT count(*) FROM device_ops\"")->required();
  cmd.add_flag("--csv", args.csv, "print CSV instead of an aligned table");
  cmd.add_option("--timeout", args.timeout,
                 fmt::format("stop a query that runs longer than this many seconds (default {:g}; 0: no limit)",
                             prof::kDefaultQueryTimeoutSeconds))
      ->check(CLI::NonNegativeNumber);
}

// Column widths come from the first rows; later rows stream through so that
// a query over millions of rows needs no memory for them.
constexpr size_t kRowsForWidths = 1000;

// SQL runs on a loupe trace file; another profiler's trace is named as
// such, with the command that makes one of it.
void check_is_loupe_trace(const std::string& path) {
  prof::InputPlan plan = prof::plan_input(path);
  if (plan.kind == prof::InputKind::loupe_trace) return;
  if (plan.is_job()) {
    throw std::invalid_argument(fmt::format(
        "{}: a job's folder; `loupe sql` queries one trace file: one of its ranks' (`loupe info {}` lists them)", path,
        path));
  }
  throw std::invalid_argument(
      fmt::format("{}: not a loupe trace file; `loupe sql` queries one: `loupe import {} -o trace.db` makes one of it",
                  path, path));
}

int run_sql(const SqlArgs& args) {
  check_is_loupe_trace(args.path);
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> buffered;
  std::vector<size_t> widths;
  uint64_t rows = 0;
  auto cells_of = [](const prof::QueryRow& row) {
    std::vector<std::string> cells;
    for (const auto& v : row) cells.push_back(v ? shown(*v) : "NULL");
    return cells;
  };
  auto flush_buffered = [&] {
    widths = column_widths(header, buffered);
    print_row(stdout, header, widths);
    for (const auto& r : buffered) print_row(stdout, r, widths);
    buffered.clear();
  };
  prof::query_trace(
      args.path, args.sql,
      [&](const std::vector<std::string>& cols) {
        for (const std::string& c : cols) header.push_back(shown(c));
        if (args.csv) {
          std::string line;
          for (size_t i = 0; i < cols.size(); ++i) line += (i ? "," : "") + csv_escape(cols[i]);
          fmt::print("{}\n", line);
        }
      },
      [&](const prof::QueryRow& row) {
        ++rows;
        if (args.csv) {
          std::string line;
          for (size_t i = 0; i < row.size(); ++i) line += (i ? "," : "") + (row[i] ? csv_escape(*row[i]) : "");
          fmt::print("{}\n", line);
          return;
        }
        if (widths.empty()) {
          buffered.push_back(cells_of(row));
          if (buffered.size() == kRowsForWidths) flush_buffered();
        } else {
          print_row(stdout, cells_of(row), widths);
        }
      },
      args.timeout);
  if (!args.csv) {
    if (widths.empty()) flush_buffered();
    std::fflush(stdout);
    fmt::print(stderr, "({} row{})\n", rows, rows == 1 ? "" : "s");
  }
  return kExitOk;
}

}  // namespace

Command add_sql_command(CLI::App& app) { return make_command(app, "sql", add_options, run_sql); }

}  // namespace loupe::cli
