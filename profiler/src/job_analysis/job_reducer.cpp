// The reduce of a job's analysis, streaming: each rank's summary is taken
// as it comes, in rank order. Its clock is aligned against the ranks
// before it, its collectives are folded into the job's records and freed,
// and what it waited is kept as two sums, so the reduce never holds every
// rank's collectives. A rank without collectives, or from another run, is
// set aside with a problem; a rank that shares nothing with the ranks
// before it waits until one links it, and is used with its own clock if
// none does.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "job_analysis/clock_alignment.h"
#include "job_analysis/collective_table.h"
#include "job_analysis/job_context.h"
#include "loupe/prof/safe_text.h"
#include "loupe/prof/units.h"

namespace loupe::prof {

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

// A job's rules, in the order docs/analyses.md ("Jobs") describes them.
// Ranks compared on their own traces have no matched collectives, from
// which a straggler rule finds nothing.
struct JobRuleEntry {
  const char* name;
  void (*run)(const job::JobContext&, const JobReport&, std::vector<Finding>&);
};
constexpr JobRuleEntry kJobRules[] = {
    {"straggler", job::rule_stragglers},
    {"collectives", job::rule_collectives},
    {"imbalance", job::rule_imbalance},
    {"critical-path", job::rule_critical_path},
};

// The rules `options` selects (all when it names none), their findings
// into the report.
void run_rules(const job::JobContext& ctx, const JobAnalysisOptions& options, JobReport& report) {
  for (const JobRuleEntry& r : kJobRules) {
    bool selected =
        options.rules.empty() || std::find(options.rules.begin(), options.rules.end(), r.name) != options.rules.end();
    if (selected) r.run(ctx, report, report.findings);
  }
}

// The median over values rounded to ns.
template <typename T, typename F>
double median_of(const std::vector<T>& items, F figure) {
  std::vector<int64_t> v;
  v.reserve(items.size());
  for (const T& item : items) v.push_back(int64_t(std::llround(double(figure(item)))));
  return double(quantile(std::move(v), 0.5));
}

// The job's metrics (metrics.h) from the findings and the figures; its
// steps and collectives are counted where they are matched.
void measure(const job::JobContext& ctx, JobReport& r) {
  JobMetrics& m = r.metrics;
  double window = double(ctx.window());
  for (const Finding& f : r.findings) {
    if (f.rule == "straggler") m.straggler_fraction = std::max(m.straggler_fraction, double(f.impact_ns) / window);
    if (f.rule == "collectives") m.exposed_communication_fraction = double(f.impact_ns) / window;
  }
  int64_t waited = 0;
  for (const RankFigures& f : r.figures) waited += f.wait_ns;
  if (!r.figures.empty()) m.collective_wait_fraction = double(waited) / (window * double(r.figures.size()));
  m.imbalance_fraction = job::imbalance_of(ctx).share;
  m.ranks_left_out = uint64_t(std::max<int64_t>(r.world_size - int64_t(r.ranks.size()), 0));
  m.step_time = median_of(r.rank_metrics, [](const auto& rank) { return rank.second.step_time; });
  m.compute_per_step = median_of(r.figures, [](const RankFigures& f) { return f.compute_ns; });
}

std::vector<int64_t> ranks_of(const std::vector<std::pair<int64_t, std::string>>& incomplete) {
  std::vector<int64_t> out;
  out.reserve(incomplete.size());
  for (const auto& [rank, missing] : incomplete) out.push_back(rank);
  return out;
}

// Ranks whose own traces are incomplete (completeness.h): what the first
// lacks, and that the figures from their device work cannot be trusted.
std::string incomplete_problem(const std::vector<std::pair<int64_t, std::string>>& incomplete) {
  return fmt::format(
      "{}: incomplete trace{} (rank {}: {}); the figures from their device work (compute, exposed communication, "
      "waits) cannot be trusted",
      ranks_label(ranks_of(incomplete)), incomplete.size() == 1 ? "" : "s", incomplete.front().first,
      incomplete.front().second);
}

// The findings' shares of the window, the metrics, and the findings by
// impact: the report's last figures, from the context its rules judged.
// With ranks whose traces are incomplete, no finding is an error, and
// each says which ranks.
void judge(const job::JobContext& ctx, const std::vector<std::pair<int64_t, std::string>>& incomplete,
           JobReport& report) {
  for (Finding& f : report.findings) {
    f.impact_fraction = double(f.impact_ns) / double(ctx.window());
    if (incomplete.empty()) continue;
    if (f.severity == Severity::error) f.severity = Severity::warning;
    f.evidence.push_back({"incomplete traces", ranks_label(ranks_of(incomplete))});
  }
  measure(ctx, report);
  std::stable_sort(report.findings.begin(), report.findings.end(),
                   [](const Finding& a, const Finding& b) { return a.impact_ns > b.impact_ns; });
}

std::vector<JobCollective> timeline_of(job::JobContext& ctx) {
  std::vector<JobCollective> out;
  out.reserve(ctx.matched.size());
  for (job::Record& m : ctx.matched) {
    const RankSummary::Kind& kind = ctx.kinds[m.kind];
    std::sort(m.parts.begin(), m.parts.end(), [](const auto& a, const auto& b) { return a.rank < b.rank; });
    out.push_back({.group = kind.group,
                   .name = kind.name,
                   .bytes = std::max(kind.in_bytes, kind.out_bytes),
                   .step = m.step(),
                   .index = m.index,
                   .last_rank = ctx.ranks[m.last].rank,
                   .last_arrival = m.last_arrival,
                   .parts = std::move(m.parts)});
  }
  return out;
}

// Ranks without collectives: why, and what becomes of them (compared on
// their own traces when no two ranks' collectives matched).
std::string silent_problem(const std::vector<int64_t>& silent, uint64_t kernels, bool compared) {
  std::string why = kernels == 0
                        ? "no collectives in the trace"
                        : fmt::format(
                              "no collectives in the trace: its {} NCCL kernels carry no collective arguments "
                              "(PyTorch's profiler writes them from 2.1 on), so which collective each is cannot "
                              "be told from this trace",
                              kernels);
  if (compared) {
    return fmt::format(
        "{}: {}; compared on their own traces only (steps, compute, exposed communication): aligning the clocks, "
        "the waits for the last rank, the stragglers and the collectives' kinds and bandwidth need collectives "
        "matched across ranks",
        ranks_label(silent), why);
  }
  return fmt::format("{}: {}; nothing to compare with the other ranks, left out of the cross-rank analyses",
                     ranks_label(silent), why);
}

std::string unaligned_problem(const job::JobContext& ctx) {
  std::vector<int64_t> unaligned;
  for (const RankClock& c : ctx.clocks) {
    if (!c.aligned) unaligned.push_back(c.rank);
  }
  if (unaligned.empty()) return "";
  return fmt::format(
      "{}: no collective in common with rank {} or a rank aligned with it; their clocks are used as they are, so "
      "their waits may be off by the clocks' difference",
      ranks_label(unaligned), ctx.clocks.front().rank);
}

// The job's extent on the aligned timeline, and the distinct steps of its
// matched collectives.
void place_window(job::JobContext& ctx, JobReport& report) {
  bool any = false;
  for (size_t r = 0; r < ctx.ranks.size(); ++r) {
    const RankSummary& s = ctx.ranks[r];
    if (s.window_end <= s.window_start) continue;
    int64_t start = ctx.aligned(r, s.window_start), end = ctx.aligned(r, s.window_end);
    ctx.window_start = any ? std::min(ctx.window_start, start) : start;
    ctx.window_end = any ? std::max(ctx.window_end, end) : end;
    any = true;
  }
  report.window_ns = ctx.window_end - ctx.window_start;
  std::vector<int64_t> steps;
  for (const job::Record& m : ctx.matched) {
    if (m.step() != kNoStep) steps.push_back(m.step());
  }
  std::sort(steps.begin(), steps.end());
  report.metrics.steps = std::unique(steps.begin(), steps.end()) - steps.begin();
  ctx.by_step = report.metrics.steps > 0;
}

}  // namespace

std::vector<std::string> job_rules() {
  std::vector<std::string> names;
  for (const JobRuleEntry& r : kJobRules) names.emplace_back(r.name);
  return names;
}

struct JobReducer::State {
  Job job;
  JobAnalysisOptions options;
  job::JobContext ctx{.options = options};
  job::CollectiveTable table;
  // Per rank: the records it took part in, as runs of record ids (one run
  // when it took part in the same collectives as the ranks before it),
  // and the sum of its arrivals: with the records' last arrivals, its wait.
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> runs;
  std::vector<job::TimeSum> arrival_sums;
  std::vector<size_t> pending;  // ranks not aligned yet, collectives kept
  job::JobTail tail;            // the path into the job's end
  std::vector<std::string> unreadable, other_runs;
  std::vector<RankSummary> silent;  // ranks without collectives
  uint64_t silent_kernels = 0;      // their NCCL kernels
  bool silent_compared = false;     // compared on their own traces
  // Ranks whose traces lack device work, and the first thing each lacks.
  std::vector<std::pair<int64_t, std::string>> incomplete;
  std::vector<std::pair<int64_t, TraceMetrics>> rank_metrics;  // every rank added, in order

  State(const Job& j, const JobAnalysisOptions& o) : job(j), options(o) {}

  int64_t origin_of(size_t r) const { return ctx.ranks[r].origin_wall_ns - ctx.ranks.front().origin_wall_ns; }
  void fold(size_t r);
  void keep_paths(size_t r, int64_t shift, const std::vector<uint32_t>& ids);
  bool try_align(size_t r);
  void align_pending();
  std::vector<int64_t> waits() const;
  std::vector<std::string> problems() const;
  void compare_own_traces(JobReport& report);
};

void JobReducer::State::fold(size_t r) {
  RankSummary& s = ctx.ranks[r];
  std::vector<job::KindRef> kinds = table.intern(s);
  int64_t shift = origin_of(r) - ctx.clocks[r].offset_ns;
  std::vector<uint32_t> ids;
  ids.reserve(s.collectives.size());
  for (const RankSummary::Collective& c : s.collectives) {
    uint32_t id = table.find_or_add(kinds[c.kind], c);
    ids.push_back(id);
    if (id == job::CollectiveTable::kNone) continue;  // not the same collective: the orders differ
    job::Record& rec = table.records[id];
    int64_t arrival = shift + c.start, end = shift + c.end;
    rec.add(uint32_t(r), arrival, end);
    arrival_sums[r] += arrival;
    if (ctx.clocks[r].aligned && !rec.anchored) {
      rec.anchored = true;
      rec.anchor = uint32_t(r);
      rec.anchor_end = end;
    }
    if (options.keep_timeline) rec.parts.push_back({s.rank, arrival, end});
    if (!runs[r].empty() && runs[r].back().second + 1 == id) {
      runs[r].back().second = id;
    } else {
      runs[r].emplace_back(id, id);
    }
  }
  keep_paths(r, shift, ids);
  std::vector<RankSummary::Collective>().swap(s.collectives);
}

// Where rank r arrived last, its path into the collective is the job's.
void JobReducer::State::keep_paths(size_t r, int64_t shift, const std::vector<uint32_t>& ids) {
  const std::vector<RankSummary::Collective>& collectives = ctx.ranks[r].collectives;
  for (size_t i = 0; i < collectives.size(); ++i) {
    if (ids[i] == job::CollectiveTable::kNone || table.records[ids[i]].last != r) continue;
    const RankSummary::Collective& c = collectives[i];
    table.records[ids[i]].path = {.known = c.path_known,
                                  .after = c.after < 0 ? UINT32_MAX : ids[size_t(c.after)],
                                  .from = shift + c.path_from,
                                  .ns = c.path_ns};
  }
  const RankSummary& s = ctx.ranks[r];
  if (shift + s.tail_to > tail.to) {
    tail = {.path = {.known = s.tail_known,
                     .after = s.tail_after < 0 ? UINT32_MAX : ids[size_t(s.tail_after)],
                     .from = shift + s.tail_from,
                     .ns = s.tail_ns},
            .rank = uint32_t(r),
            .to = shift + s.tail_to};
  }
}

bool JobReducer::State::try_align(size_t r) {
  const RankSummary& s = ctx.ranks[r];
  std::optional<RankClock> clock = job::align_rank(table, table.intern(s), s, origin_of(r), ctx.ranks);
  if (!clock) return false;
  ctx.clocks[r] = *clock;
  fold(r);
  return true;
}

// Folds every waiting rank that the ranks folded since link to the
// aligned ones.
void JobReducer::State::align_pending() {
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t i = 0; i < pending.size(); ++i) {
      if (!try_align(pending[i])) continue;
      pending.erase(pending.begin() + ptrdiff_t(i));
      progress = true;
      break;
    }
  }
}

std::vector<int64_t> JobReducer::State::waits() const {
  std::vector<job::TimeSum> last_sums(table.records.size() + 1, 0);  // prefix sums of the last arrivals
  for (size_t i = 0; i < table.records.size(); ++i) last_sums[i + 1] = last_sums[i] + table.records[i].last_arrival;
  std::vector<int64_t> out;
  for (size_t r = 0; r < runs.size(); ++r) {
    job::TimeSum total = -arrival_sums[r];
    for (const auto& [first, last] : runs[r]) total += last_sums[last + 1] - last_sums[first];
    out.push_back(int64_t(total));
  }
  return out;
}

JobReducer::JobReducer(const Job& job, const JobAnalysisOptions& options)
    : state_(std::make_unique<State>(job, options)) {
  std::vector<std::string> known = job_rules();
  for (const std::string& r : options.rules) {
    if (std::find(known.begin(), known.end(), r) == known.end()) {
      throw std::invalid_argument(
          fmt::format("unknown rule '{}' of a job (a job's rules: {})", r, fmt::join(known, ", ")));
    }
  }
}

JobReducer::~JobReducer() = default;

void JobReducer::add_problem(std::string problem) { state_->unreadable.push_back(std::move(problem)); }

void JobReducer::add(RankSummary summary) {
  State& st = *state_;
  if (!st.rank_metrics.empty() && summary.rank <= st.rank_metrics.back().first) {
    throw JobError(fmt::format("rank {}'s summary came after rank {}'s: the reduce takes ranks in increasing order",
                               summary.rank, st.rank_metrics.back().first));
  }
  st.rank_metrics.emplace_back(summary.rank, summary.metrics);
  if (!summary.incomplete.empty()) st.incomplete.emplace_back(summary.rank, summary.incomplete.front());
  if (summary.collectives.empty()) {
    st.silent_kernels += summary.collective_kernels;
    st.silent.push_back(std::move(summary));
    return;
  }
  if (!st.ctx.ranks.empty()) {
    if (std::string why = apart(st.ctx.ranks.front(), summary); !why.empty()) {
      st.other_runs.push_back(why);
      return;
    }
  }
  size_t r = st.ctx.ranks.size();
  st.ctx.clocks.push_back({.rank = summary.rank});
  st.ctx.ranks.push_back(std::move(summary));
  st.runs.emplace_back();
  st.arrival_sums.push_back(0);
  if (r == 0) {
    st.ctx.origin_wall_ns = st.ctx.ranks[0].origin_wall_ns;
    st.ctx.clocks[0] = {.rank = st.ctx.ranks[0].rank, .aligned = true, .via = st.ctx.ranks[0].rank};
    st.fold(0);
  } else if (st.try_align(r)) {
    st.align_pending();
  } else {
    st.pending.push_back(r);
  }
}

std::vector<std::string> JobReducer::State::problems() const {
  std::vector<std::string> out = unreadable;
  if (!job.missing.empty()) {
    out.push_back(fmt::format("{}: no trace in the job ({} of {})", ranks_label(job.missing), job.missing.size(),
                              job.world_size));
  }
  for (const JobFailure& f : job.failures) out.push_back(fmt::format("{}: not imported: {}", f.source, f.error));
  out.insert(out.end(), other_runs.begin(), other_runs.end());
  if (!silent.empty()) {
    std::vector<int64_t> ranks;
    for (const RankSummary& s : silent) ranks.push_back(s.rank);
    out.push_back(silent_problem(ranks, silent_kernels, silent_compared));
  }
  if (std::string why = unaligned_problem(ctx); !why.empty()) out.push_back(why);
  if (!incomplete.empty()) out.push_back(incomplete_problem(incomplete));
  return out;
}

JobReport JobReducer::finish() {
  State& st = *state_;
  job::JobContext& ctx = st.ctx;
  // A report of no rank would read as a job with nothing wrong: a CI gate
  // would pass on files it could not read.
  if (st.rank_metrics.empty()) {
    std::vector<std::string> why = st.problems();
    throw JobError(fmt::format("{}: no rank of the job could be read{}{}", printable(st.job.dir),
                               why.empty() ? "" : ": ", why.empty() ? "" : why.front()));
  }
  for (size_t r : st.pending) st.fold(r);  // linked to no aligned rank: on their own clocks
  st.pending.clear();
  ctx.waits = st.waits();
  JobCriticalPath path = job::critical_path_of(ctx, st.table.records, st.tail);
  ctx.kinds = std::move(st.table.kinds);
  for (job::Record& rec : st.table.records) {
    if (rec.ranks >= 2) ctx.matched.push_back(std::move(rec));
  }
  std::vector<job::Record>().swap(st.table.records);

  JobReport report;
  report.dir = st.job.dir;
  report.world_size = st.job.world_size;
  report.rank_metrics = std::move(st.rank_metrics);
  for (const RankSummary& s : ctx.ranks) {
    report.ranks.push_back(s.rank);
    report.figures.push_back({.rank = s.rank});
  }
  report.clocks = ctx.clocks;
  if (ctx.ranks.size() >= 2) report.critical_path = std::move(path);
  report.origin_wall_ns = ctx.origin_wall_ns;
  report.metrics.collectives = ctx.matched.size();
  place_window(ctx, report);
  if (ctx.ranks.size() < 2 && ctx.ranks.size() + st.silent.size() >= 2) {
    st.compare_own_traces(report);
  } else {
    job::measure_figures(ctx, report);
    if (ctx.ranks.size() >= 2) run_rules(ctx, st.options, report);
    judge(ctx, st.incomplete, report);
  }
  if (st.options.keep_timeline) report.timeline = timeline_of(ctx);
  report.problems = st.problems();
  return report;
}

// Fewer than two ranks' collectives matched (their NCCL kernels carry no
// collective arguments, as in HTA's sampled traces): the ranks are still
// compared on what each one's own trace shows, each on its own clock, by
// step number: their compute (imbalance) and their exposed communication.
// Whatever needs the collectives matched (clocks, waits, stragglers,
// kinds) is left out, and the problems say so.
void JobReducer::State::compare_own_traces(JobReport& report) {
  job::JobContext own{.options = options};
  own.ranks = silent;  // copies: without collectives a summary is small
  own.ranks.insert(own.ranks.end(), ctx.ranks.begin(), ctx.ranks.end());
  std::sort(own.ranks.begin(), own.ranks.end(),
            [](const RankSummary& a, const RankSummary& b) { return a.rank < b.rank; });
  std::vector<int64_t> numbers;
  report.figures.clear();
  for (const RankSummary& s : own.ranks) {
    own.window_end = std::max(own.window_end, s.window_end - s.window_start);
    own.unmatched_collective_kernels += s.collective_kernels;
    report.own_traces.push_back(s.rank);
    report.figures.push_back({.rank = s.rank, .matched = false});
    for (const RankSummary::Step& step : s.steps) numbers.push_back(step.number);
  }
  std::sort(numbers.begin(), numbers.end());
  report.metrics.steps = std::unique(numbers.begin(), numbers.end()) - numbers.begin();
  report.window_ns = own.window_end;
  own.by_step = report.metrics.steps > 0;
  job::measure_figures(own, report);
  run_rules(own, options, report);
  silent_compared = true;
  judge(own, incomplete, report);
}

JobReport reduce_job(const Job& job, std::vector<RankSummary> ranks, std::vector<std::string> problems,
                     const JobAnalysisOptions& options) {
  JobReducer reducer(job, options);
  for (std::string& p : problems) reducer.add_problem(std::move(p));
  for (RankSummary& s : ranks) reducer.add(std::move(s));
  return reducer.finish();
}

}  // namespace loupe::prof
