// analyze_job: the map (summarize_rank on every core, a rank at a time per
// core) and the reduce (align, match, the three rules). A rank that cannot
// be read, or has no collectives, is named in the report's problems and
// the rest are analysed.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "job_analysis/job_context.h"
#include "loupe/prof/trace_reader.h"
#include "loupe/prof/units.h"

namespace loupe::prof {

namespace job {

std::string ranks_label(const std::vector<int64_t>& ranks) {
  if (ranks.size() == 1) return fmt::format("rank {}", ranks[0]);
  std::vector<std::string> parts;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (j - i >= 2) {
      parts.push_back(fmt::format("{}-{}", ranks[i], ranks[j]));
    } else {
      for (size_t k = i; k <= j; ++k) parts.push_back(std::to_string(ranks[k]));
    }
    i = j + 1;
  }
  std::string out = "ranks ";
  for (size_t i = 0; i < parts.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
  }
  return out;
}

}  // namespace job

namespace {

// How far apart two ranks' clocks may be (NTP keeps hosts within
// milliseconds; a minute is far beyond any clock error): ranks whose
// traces do not overlap within it ran at different times.
constexpr int64_t kClockSlackNs = int64_t(60) * 1'000'000'000;

// Why `s` cannot share `reference`'s timeline, or "": its trace does not
// overlap the reference's on the wall clock (another run), or its origin
// is too far to compute with.
std::string apart(const RankSummary& reference, const RankSummary& s) {
  int64_t d = 0;
  if (__builtin_sub_overflow(s.origin_wall_ns, reference.origin_wall_ns, &d) || std::abs(d) >= job::kMaxJobTimeNs) {
    return fmt::format("rank {}: its wall clock is too far from rank {}'s to compare; left out", s.rank,
                       reference.rank);
  }
  int64_t start = d + s.window_start, end = d + s.window_end;
  if (end + kClockSlackNs < reference.window_start || start - kClockSlackNs > reference.window_end) {
    int64_t gap = start > reference.window_end ? start - reference.window_end : reference.window_start - end;
    return fmt::format(
        "rank {}: its trace is {} {} rank {}'s on the wall clock, far beyond any clock error: it is "
        "a trace of another run; left out",
        s.rank, format_duration(gap), start > reference.window_end ? "after" : "before", reference.rank);
  }
  return "";
}

// Ranks without collectives say nothing about the others; ranks of
// another run cannot share the first's timeline.
std::vector<RankSummary> usable(std::vector<RankSummary> ranks, std::vector<std::string>& problems) {
  std::vector<RankSummary> out;
  std::vector<int64_t> silent;
  uint64_t kernels = 0;  // collective kernels of the silent ranks
  for (RankSummary& s : ranks) {
    if (s.collectives.empty()) {
      silent.push_back(s.rank);
      kernels += s.collective_kernels;
      continue;
    }
    if (!out.empty()) {
      if (std::string why = apart(out.front(), s); !why.empty()) {
        problems.push_back(why);
        continue;
      }
    }
    out.push_back(std::move(s));
  }
  if (!silent.empty()) {
    std::string why = kernels == 0
                          ? "no collectives in the trace"
                          : fmt::format(
                                "no collectives in the trace: its {} NCCL kernels carry no collective arguments "
                                "(PyTorch's profiler writes them from 2.1 on), so which collective each is cannot "
                                "be told from this trace",
                                kernels);
    problems.push_back(
        fmt::format("{}: {}; nothing to compare with the other ranks, left out of the cross-rank "
                    "analyses",
                    job::ranks_label(silent), why));
  }
  return out;
}

// The figures a job's budgets limit, from the findings and the figures.
JobMetrics job_metrics(const job::JobContext& ctx, const JobReport& r) {
  JobMetrics m;
  double window = double(ctx.window());
  for (const Finding& f : r.findings) {
    if (f.rule == "straggler") m.straggler_fraction = std::max(m.straggler_fraction, double(f.impact_ns) / window);
    if (f.rule == "collectives") m.exposed_communication_fraction = double(f.impact_ns) / window;
  }
  int64_t waited = 0;
  for (const RankFigures& f : r.figures) waited += f.wait_ns;
  if (!r.figures.empty()) m.collective_wait_fraction = double(waited) / (window * double(r.figures.size()));
  m.imbalance_fraction = ctx.imbalance_fraction;
  m.ranks_left_out = uint64_t(std::max<int64_t>(r.world_size - int64_t(r.ranks.size()), 0));
  return m;
}

std::vector<JobCollective> timeline_of(const job::JobContext& ctx) {
  std::vector<JobCollective> out;
  out.reserve(ctx.matched.size());
  for (const job::Matched& m : ctx.matched) {
    JobCollective c{.group = m.kind->group,
                    .name = m.kind->name,
                    .bytes = std::max(m.kind->in_bytes, m.kind->out_bytes),
                    .step = m.step(),
                    .index = m.index,
                    .last_rank = ctx.ranks[m.ranks[m.last].rank].rank,
                    .last_arrival = m.last_arrival};
    for (const job::Arrival& a : m.ranks) c.parts.push_back({ctx.ranks[a.rank].rank, a.arrival, a.end});
    out.push_back(std::move(c));
  }
  return out;
}

void note_unaligned(const job::JobContext& ctx, std::vector<std::string>& problems) {
  std::vector<int64_t> unaligned;
  for (const RankClock& c : ctx.clocks) {
    if (!c.aligned) unaligned.push_back(c.rank);
  }
  if (unaligned.empty()) return;
  problems.push_back(
      fmt::format("{}: no collective in common with rank {} or a rank aligned with it; their clocks "
                  "are used as they are, so their waits may be off by the clocks' difference",
                  job::ranks_label(unaligned), ctx.clocks.front().rank));
}

}  // namespace

JobReport reduce_job(const Job& job_index, std::vector<RankSummary> summaries, std::vector<std::string> problems,
                     const JobAnalysisOptions& options) {
  JobReport report;
  report.dir = job_index.dir;
  report.world_size = job_index.world_size;
  if (!job_index.missing.empty()) {
    problems.push_back(fmt::format("{}: no trace in the job ({} of {})", job::ranks_label(job_index.missing),
                                   job_index.missing.size(), job_index.world_size));
  }
  for (const JobFailure& f : job_index.failures)
    problems.push_back(fmt::format("{}: not imported: {}", f.source, f.error));
  for (const RankSummary& s : summaries) report.rank_metrics.emplace_back(s.rank, s.metrics);
  std::vector<RankSummary> ranks = usable(std::move(summaries), problems);
  for (const RankSummary& s : ranks) report.ranks.push_back(s.rank);
  job::JobContext ctx{.options = options, .ranks = ranks};
  ctx.matched = job::match_collectives(ranks);
  if (!ranks.empty()) ctx.origin_wall_ns = ranks.front().origin_wall_ns;
  ctx.by_step = std::any_of(ctx.matched.begin(), ctx.matched.end(), [](const auto& m) { return m.step() != kNoStep; });
  job::align_clocks(ctx);
  note_unaligned(ctx, problems);
  report.clocks = ctx.clocks;
  report.collectives = ctx.matched.size();
  report.window_ns = ctx.window_end - ctx.window_start;
  std::vector<int64_t> steps;
  for (const job::Matched& m : ctx.matched) {
    if (m.step() != kNoStep) steps.push_back(m.step());
  }
  std::sort(steps.begin(), steps.end());
  report.steps = std::unique(steps.begin(), steps.end()) - steps.begin();
  for (const RankSummary& s : ranks) report.figures.push_back({.rank = s.rank});
  if (ranks.size() >= 2) {
    job::rule_stragglers(ctx, report);
    job::rule_collectives(ctx, report);
    job::rule_imbalance(ctx, report);
  }
  for (Finding& f : report.findings) f.impact_fraction = double(f.impact_ns) / double(ctx.window());
  report.metrics = job_metrics(ctx, report);
  if (options.keep_timeline) report.timeline = timeline_of(ctx);
  std::stable_sort(report.findings.begin(), report.findings.end(),
                   [](const Finding& a, const Finding& b) { return a.impact_ns > b.impact_ns; });
  report.problems = std::move(problems);
  return report;
}

JobReport analyze_job(const std::string& dir, const JobAnalysisOptions& options) {
  Job job_index = read_job(dir);
  size_t n = job_index.ranks.size();
  std::vector<std::optional<RankSummary>> summaries(n);
  std::vector<std::string> errors(n);
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) {
      const JobRank& r = job_index.ranks[i];
      try {
        summaries[i] = summarize_rank(job_index.trace_path(r), r.rank, options.rank);
        summaries[i]->host = r.host.empty() ? summaries[i]->host : r.host;
      } catch (const std::exception& e) {
        errors[i] = fmt::format("rank {}: cannot be read, left out: {}", r.rank, e.what());
      }
    }
  };
  unsigned cores = options.workers ? options.workers : std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (unsigned i = 1; i < std::min<size_t>(cores, n); ++i) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  std::vector<RankSummary> ok;
  std::vector<std::string> problems;
  for (size_t i = 0; i < n; ++i) {
    if (summaries[i]) ok.push_back(std::move(*summaries[i]));
    else problems.push_back(errors[i]);
  }
  return reduce_job(job_index, std::move(ok), std::move(problems), options);
}

}  // namespace loupe::prof
