// loupe import IN [-o OUT] [--format F]: another profiler's trace as a
// loupe trace (PyTorch/Kineto JSON, JAX profiler JSON, Chrome trace JSON,
// Nsight Systems SQLite export). With several inputs (or --job), one per
// rank of a distributed run: a job, a folder of rank traces and an index.
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "commands.h"
#include "loupe/prof/import.h"
#include "loupe/prof/job.h"
#include "text_format.h"

namespace loupe::cli {

namespace {

struct ImportArgs {
  std::vector<std::string> in;
  std::string out;
  bool job = false;
  std::string format = "auto";
  bool quiet = false;
};

// The options of `loupe import`.
void add_options(CLI::App& cmd, ImportArgs& args) {
  cmd.description(fmt::format("Turn a trace of another profiler into a loupe trace: {} (JSON plain or gzipped)",
                              prof::import_format_titles()));
  cmd.add_option("IN", args.in, "trace to import; several: one per rank of a job")->required();
  cmd.add_option("-o,--out", args.out,
                 "loupe trace to write (default: IN with its extension replaced by .db); for a job, its folder");
  cmd.add_flag("--job", args.job, "make a job (a folder of rank traces and job.json) even of one input");
  std::vector<std::string> names;
  for (std::string_view name : prof::import_format_choices()) names.emplace_back(name);
  cmd.add_option("--format", args.format,
                 fmt::format("input format: {} (from the content), {}", names.front(), prof::import_format_names(1)))
      ->check(CLI::IsMember(names));
  cmd.add_flag("-q,--quiet", args.quiet, "print nothing on success");
}

// trace.json.gz -> trace.db, report.sqlite -> report.db, snapshot.pickle ->
// snapshot.db, beside the input.
std::string default_output(const std::string& in) {
  std::string base = in;
  auto strip = [&](std::string_view suffix) {
    if (base.size() > suffix.size() && base.ends_with(suffix)) {
      base.resize(base.size() - suffix.size());
      return true;
    }
    return false;
  };
  strip(".gz");
  if (!strip(".json") && !strip(".sqlite3") && !strip(".pickle")) strip(".sqlite");
  std::string out = base + ".db";
  if (out == in) out = base + ".loupe.db";
  return out;
}

// A job: its ranks as they were imported, then what it lacks, on stderr.
int run_job_import(const ImportArgs& args) {
  if (args.out.empty()) throw std::invalid_argument("a job needs its folder: -o FOLDER");
  auto t0 = std::chrono::steady_clock::now();
  prof::Job job = prof::import_job(args.in, args.out, {.format = prof::parse_import_format(args.format)});
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!args.quiet) {
    fmt::print("imported a job of {} ranks{} into {} in {:.2f} s\n", job.world_size,
               job.backend.empty() ? "" : " (" + job.backend + ")", shown(job.dir), secs);
    for (const prof::JobRank& r : job.ranks) {
      fmt::print("  rank {:<6} {:>12} events  {}  <- {}\n", r.rank, format_count(r.events), shown(r.trace),
                 shown(r.source));
    }
  }
  for (const prof::JobFailure& f : job.failures) fmt::print(stderr, "loupe: not imported: {}\n", shown(f.error));
  if (!job.missing.empty()) {
    fmt::print(stderr, "loupe: the job lacks {} of its {} ranks: {}\n", job.missing.size(), job.world_size,
               prof::ranks_label(job.missing));
  }
  return job.complete() ? kExitOk : kExitFailed;
}

int run_import(const ImportArgs& args) {
  if (args.job || args.in.size() > 1) return run_job_import(args);
  const std::string& in = args.in.front();
  prof::ImportOptions options{.format = prof::parse_import_format(args.format)};
  std::string out = args.out.empty() ? default_output(in) : args.out;
  auto t0 = std::chrono::steady_clock::now();
  prof::ImportResult r = prof::import_trace(in, out, options);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (args.quiet) return kExitOk;
  fmt::print("imported {} ({}, {} of {}, {} events) in {:.2f} s ({:.0f} MB/s)\n", shown(in),
             prof::import_format_name(r.format), format_bytes(int64_t(r.input_bytes)),
             prof::import_format_container(r.format), format_count(r.source_events), secs,
             double(r.input_bytes) / 1e6 / std::max(secs, 1e-9));
  std::string tables;
  for (const auto& [table, rows] : r.rows_by_table) {
    if (rows > 0) tables += fmt::format("{}{} {}", tables.empty() ? "" : ", ", table, format_count(rows));
  }
  if (std::getenv("LOUPE_IMPORT_TIMES")) {
    fmt::print("times      read {:.3f} s, map {:.3f} s, write {:.3f} s\n", r.read_seconds, r.map_seconds,
               r.write_seconds);
  }
  fmt::print("wrote {}: {} rows{}\n", shown(out), format_count(r.rows_written),
             tables.empty() ? "" : " (" + tables + ")");
  if (r.skipped > 0) {
    fmt::print("skipped {} source events:\n", format_count(r.skipped));
    for (const auto& [why, n] : r.skipped_by_kind) fmt::print("  {:>10}  {}\n", format_count(n), shown(why));
  }
  return kExitOk;
}

}  // namespace

Command add_import_command(CLI::App& app) { return make_command(app, "import", add_options, run_import); }

}  // namespace loupe::cli
