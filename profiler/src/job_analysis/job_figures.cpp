// A job's figures, measured before its rules judge: per rank, the medians
// over its steps of its compute, step time and exposed communication, what
// it waited in collectives and how often it came last; and the kinds of
// collective with their waits, transfers and bandwidths.
#include <set>

#include "job_analysis/job_context.h"

namespace loupe::prof::job {

namespace {

int64_t median_of_steps(const RankSummary& s, int64_t RankSummary::Step::*figure) {
  std::vector<int64_t> values;
  values.reserve(s.steps.size());
  for (const RankSummary::Step& st : s.steps) values.push_back(st.*figure);
  return quantile(std::move(values), 0.5);
}

}  // namespace

void measure_figures(const JobContext& ctx, JobReport& report) {
  report.kinds = collective_stats(ctx);
  for (size_t r = 0; r < ctx.ranks.size(); ++r) {
    RankFigures& f = report.figures[r];
    f.compute_ns = median_of_steps(ctx.ranks[r], &RankSummary::Step::compute_ns);
    f.step_ns = median_of_steps(ctx.ranks[r], &RankSummary::Step::time_ns);
    f.communication_ns = median_of_steps(ctx.ranks[r], &RankSummary::Step::communication_ns);
    if (r < ctx.waits.size()) f.wait_ns = ctx.waits[r];
  }
  std::set<int64_t> units;
  for (const auto& [rank, l] : lateness_by_rank(ctx, units)) report.figures[rank].last_arrivals = l.collectives;
}

}  // namespace loupe::prof::job
