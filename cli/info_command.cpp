// loupe info FILE: what a trace holds, without loading its events; for a
// job's folder, its ranks.
#include <fmt/format.h>

#include <filesystem>
#include <system_error>

#include "commands.h"
#include "loupe/prof/completeness.h"
#include "loupe/prof/job.h"
#include "loupe/prof/open_input.h"
#include "loupe/prof/trace_format.h"
#include "loupe/prof/trace_query.h"
#include "text_format.h"
#include "trace_input.h"

namespace loupe::cli {

namespace {

// The options of `loupe info`.
struct InfoArgs {
  std::string path;
  InputArgs input;
};

void add_options(CLI::App& cmd, InfoArgs& args) {
  cmd.description("Show what a trace file holds: version, producer, duration, counts, devices; or a job's ranks");
  cmd.add_option("FILE", args.path, kTraceInputHelp)->required();
  add_input_options(cmd, args.input);
}

// A job: its index, and what it lacks.
int print_job(const std::string& dir) {
  prof::Job job = prof::read_job(dir);
  fmt::print("job        {} ({} ranks{})\n", shown(dir), job.world_size,
             job.backend.empty() ? "" : ", " + shown(job.backend));
  TextTable ranks({"rank", "trace", "host", "events", "imported from"});
  for (const prof::JobRank& r : job.ranks) {
    ranks.add({std::to_string(r.rank), r.trace, r.host.empty() ? "?" : r.host, format_count(r.events), r.source});
  }
  fmt::print("\n");
  ranks.print(stdout, "  ");
  if (!job.missing.empty()) fmt::print("missing    {}\n", prof::ranks_label(job.missing));
  for (const prof::JobFailure& f : job.failures) fmt::print("failed     {}\n", shown(f.error));
  return kExitOk;
}

// What the metadata says the trace lacks; the events' own signs (graph
// replays) need them loaded, which `loupe analyze` does.
void print_completeness(std::FILE* out, const prof::TraceInfo& info) {
  std::vector<prof::Incompleteness> incomplete = prof::incomplete_by_meta(info);
  if (incomplete.empty()) {
    std::optional<prof::HostOpNumbering> n = prof::host_op_numbering(info.meta);
    fmt::print(out, "complete   no sign of missing events in the metadata{} (`loupe analyze` checks the events)\n",
               n ? fmt::format(": {} of the {} host ops its source numbered", format_count(uint64_t(n->held)),
                               format_count(uint64_t(n->numbered)))
                 : "");
  }
  for (const prof::Incompleteness& i : incomplete) {
    fmt::print(out, "INCOMPLETE {}\n", shown(i.text()));
  }
}

// What a trace holds, as summarize_trace() or summarize_model() found it.
int print_summary(const std::string& path, const prof::TraceSummary& s) {
  uint64_t total = 0;
  for (const auto& c : s.counts) total += c.rows;
  std::FILE* out = stdout;
  fmt::print(out, "trace      {} ({})\n", shown(path), format_bytes(int64_t(s.file_bytes)));
  fmt::print(out, "format     {}.{} (written by {})\n", s.info.format_major, s.info.format_minor,
             s.info.producer.empty() ? "?" : shown(s.info.producer));
  fmt::print(out, "status     {}\n", s.info.status.empty() ? "?" : shown(s.info.status));
  if (s.info.origin_wall_ns != 0) fmt::print(out, "started    {}\n", format_wall_time(s.info.origin_wall_ns));
  fmt::print(out, "duration   {} (events from {} to {})\n", format_duration(s.end_ns - s.start_ns),
             format_duration(s.start_ns), format_duration(s.end_ns));
  fmt::print(out, "events     {}\n", format_count(total));
  fmt::print(out, "dropped    {} (a ring full, or no memory for one, while recording)\n",
             format_count(s.info.dropped_events));
  if (s.info.lost_events > 0 || s.info.meta.count("write_error")) {
    fmt::print(out, "lost       {} (write error: {})\n", format_count(s.info.lost_events),
               s.info.meta.count("write_error") ? shown(s.info.meta.at("write_error")) : "?");
  }
  if (auto it = s.info.meta.find("skipped_events"); it != s.info.meta.end()) {
    fmt::print(out, "skipped    {} (unknown kinds at import)\n", shown(it->second));
  }
  print_completeness(out, s.info);

  fmt::print(out, "\n");
  TextTable counts({"table", "rows"});
  for (const auto& c : s.counts) counts.add({c.table, format_count(c.rows)});
  counts.print(out);

  fmt::print(out, "\ndevices\n");
  if (s.devices.empty()) fmt::print(out, "  (none)\n");
  TextTable devices({"id", "name", "kind", "memory", "streams", "kernels"});
  for (const auto& d : s.devices) {
    int streams = 0;
    for (const auto& st : s.streams) streams += st.device == d.id;
    devices.add({std::to_string(d.id), d.name, std::string(prof::name_of(d.kind)),
                 d.memory_capacity > 0 ? format_bytes(d.memory_capacity) : "?", std::to_string(streams),
                 d.detail.empty() ? "-" : d.detail});
  }
  if (!s.devices.empty()) devices.print(out, "  ");

  fmt::print(out, "\nthreads\n");
  if (s.threads.empty()) fmt::print(out, "  (none)\n");
  TextTable threads({"id", "name", "os tid", "dropped"});
  for (const auto& t : s.threads) {
    threads.add({std::to_string(t.id), t.name, std::to_string(t.os_tid), format_count(t.dropped_events)});
  }
  if (!s.threads.empty()) threads.print(out, "  ");
  return kExitOk;
}

// Another profiler's trace (or a profile folder's): what it becomes.
// Another profiler's trace: the file read (a profile folder's run's) and
// what it holds; a profile of several hosts: its job.
int print_foreign(const InfoArgs& args) {
  ReadInput in(args.path, args.input);
  if (in->is_job()) return print_job(in->job_dir);
  prof::TraceSummary s = prof::summarize_model(in.model());
  std::error_code ec;
  s.file_bytes = std::filesystem::file_size(in->plan.source, ec);
  return print_summary(in->plan.source, s);
}

int print_info_of(const InfoArgs& args) {
  prof::InputPlan plan = prof::plan_input(args.path);
  if (plan.kind == prof::InputKind::job) return print_job(args.path);
  if (plan.kind == prof::InputKind::loupe_trace) return print_info(args.path);
  return print_foreign(args);
}

}  // namespace

int print_info(const std::string& path) {
  if (prof::is_job(path)) return print_job(path);
  return print_summary(path, prof::summarize_trace(path));
}

Command add_info_command(CLI::App& app) { return make_command(app, "info", add_options, print_info_of); }

}  // namespace loupe::cli
