// straggler: the rank that makes the others wait. At each matched
// collective the last rank to arrive holds everyone: the others wait from
// their arrival to its. A rank that is last in most steps is the finding.
// What it cost the job is, per step, how much later it came than the next
// latest rank (had it come with them, the step would have ended that much
// sooner); what it was doing instead comes from its own summary against
// the median of the others: more compute (and which kernels), or more
// idle device time (and why).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "job_analysis/job_context.h"
#include "loupe/prof/units.h"

namespace loupe::prof::job {

std::map<size_t, Lateness> lateness_by_rank(const JobContext& ctx, std::set<int64_t>& units) {
  std::map<size_t, Lateness> by_rank;
  for (size_t i = 0; i < ctx.matched.size(); ++i) {
    const Record& m = ctx.matched[i];
    int64_t unit = ctx.unit_of(i);
    if (ctx.by_step && unit == kNoStep) continue;
    units.insert(unit);
    if (m.lateness() < ctx.tolerance(m)) continue;
    Lateness& l = by_rank[m.last];
    l.units.insert(unit);
    int64_t& worst = l.worst_in_unit[unit];
    worst = std::max(worst, m.lateness());
    ++l.collectives;
    l.others_waited_ns += m.total_wait();
    if (l.ranges.size() < 20) l.ranges.push_back({m.second_arrival, m.last_arrival});
  }
  return by_rank;
}

namespace {

// The median of the other ranks' value of a step figure, over `units`.
int64_t median_step_figure(const JobContext& ctx, size_t rank, const std::set<int64_t>& steps,
                           int64_t RankSummary::Step::*figure, bool others) {
  std::vector<int64_t> values;
  for (size_t r = 0; r < ctx.ranks.size(); ++r) {
    if ((r == rank) == others) continue;
    for (const RankSummary::Step& s : ctx.ranks[r].steps) {
      if (steps.count(s.number)) values.push_back(s.*figure);
    }
  }
  return quantile(std::move(values), 0.5);
}

// The kernel whose time on `rank` most exceeds the median other rank's.
std::pair<std::string, int64_t> slower_kernel(const JobContext& ctx, size_t rank) {
  std::pair<std::string, int64_t> best{"", 0};
  for (const auto& [name, ns] : ctx.ranks[rank].kernels) {
    std::vector<int64_t> others;
    for (size_t r = 0; r < ctx.ranks.size(); ++r) {
      if (r == rank) continue;
      int64_t t = 0;
      for (const auto& [n, v] : ctx.ranks[r].kernels) {
        if (n == name) t = v;
      }
      others.push_back(t);
    }
    int64_t extra = ns - quantile(std::move(others), 0.5);
    if (extra > best.second) best = {name, extra};
  }
  return best;
}

// What the straggler did in the steps it was late, against the others.
void add_instead(const JobContext& ctx, size_t rank, const Lateness& l, Finding& f) {
  if (!ctx.by_step || ctx.ranks[rank].steps.empty()) {
    f.evidence.push_back({"doing instead", "cannot tell from this trace: it has no steps to compare"});
    return;
  }
  using Step = RankSummary::Step;
  int64_t compute = median_step_figure(ctx, rank, l.units, &Step::compute_ns, false);
  int64_t others_compute = median_step_figure(ctx, rank, l.units, &Step::compute_ns, true);
  int64_t idle = median_step_figure(ctx, rank, l.units, &Step::idle_ns, false);
  int64_t others_idle = median_step_figure(ctx, rank, l.units, &Step::idle_ns, true);
  f.evidence.push_back(
      {"compute per late step", fmt::format("{} against {} on the other ranks (median)", format_duration(compute),
                                            format_duration(others_compute))});
  f.evidence.push_back({"device idle per late step", fmt::format("{} against {} on the other ranks (median)",
                                                                 format_duration(idle), format_duration(others_idle))});
  if (auto [name, extra] = slower_kernel(ctx, rank); extra > 0) {
    f.evidence.push_back(
        {"slower kernel", fmt::format("`{}`: {} more in total than on the median other rank ({} per "
                                      "step it was late)",
                                      name, format_duration(extra), format_duration(extra / int64_t(l.units.size())))});
  }
  if (!ctx.ranks[rank].idle.empty() && idle > others_idle) {
    const auto& [cause, ns] = ctx.ranks[rank].idle.front();
    f.evidence.push_back({"its idle gaps", fmt::format("mostly {} ({} in all)", cause, format_duration(ns))});
  }
}

Finding straggler_finding(const JobContext& ctx, size_t rank, const Lateness& l, size_t units) {
  int64_t lost = 0;
  for (const auto& [unit, worst] : l.worst_in_unit) lost += worst;
  lost = std::min(lost, ctx.window());
  std::vector<int64_t> worst;
  for (const auto& [unit, w] : l.worst_in_unit) worst.push_back(w);
  const char* unit_word = ctx.by_step ? "steps" : "collectives";
  Finding f;
  f.rule = "straggler";
  f.ranks = {ctx.ranks[rank].rank};
  f.impact_ns = lost;
  f.severity = l.units.size() * 2 > units ? Severity::warning : Severity::info;
  f.title = fmt::format(
      "rank {} arrived last at collectives in {} of {} {}, a median {} after the next latest rank; "
      "the job lost up to {} waiting for it",
      ctx.ranks[rank].rank, l.units.size(), units, unit_word, format_duration(quantile(worst, 0.5)),
      format_duration(lost));
  f.evidence.push_back({"last at", fmt::format("{} collectives", format_count(l.collectives))});
  f.evidence.push_back({"the other ranks waited", format_duration(l.others_waited_ns)});
  add_instead(ctx, rank, l, f);
  f.ranges = l.ranges;
  f.suggestion =
      "make this rank's work per step match the others': look at its slower kernels or idle gaps below; a "
      "rank that is slow in every step often has a slower GPU, a busier host or more data to load";
  return f;
}

}  // namespace

void rule_stragglers(const JobContext& ctx, const JobReport&, std::vector<Finding>& findings) {
  std::set<int64_t> units;
  std::map<size_t, Lateness> by_rank = lateness_by_rank(ctx, units);
  for (const auto& [rank, l] : by_rank) {
    if (units.size() >= 2 && double(l.units.size()) > ctx.options.straggler_fraction * double(units.size())) {
      findings.push_back(straggler_finding(ctx, rank, l, units.size()));
    }
  }
}

}  // namespace loupe::prof::job
