// `loupe check job/`: a job's budgets against the job's metrics, and a
// trace's budgets against every rank, where the worst rank decides.
#include <fmt/format.h>

#include "loupe/prof/job_analysis.h"

namespace loupe::prof {

namespace {

// A trace's key on every rank: the largest value, and whose it is.
BudgetResult worst_rank(const Budget::Limit& l, const JobReport& report) {
  double worst = 0;
  int64_t rank = -1;
  for (const auto& [r, metrics] : report.rank_metrics) {
    double v = metric_value(metrics, l.metric);
    if (rank < 0 || v > worst) {
      worst = v;
      rank = r;
    }
  }
  if (rank < 0) return budget_result(l, 0, " (no rank could be read)");
  return budget_result(l, worst, fmt::format(" (rank {}, the worst of {})", rank, report.rank_metrics.size()));
}

}  // namespace

std::vector<BudgetResult> check_job_budget(const Budget& budget, const JobReport& report) {
  std::vector<BudgetResult> out;
  for (const Budget::Limit& l : budget.limits) {
    out.push_back(l.job ? budget_result(l, metric_value(report.metrics, l.metric)) : worst_rank(l, report));
  }
  return out;
}

}  // namespace loupe::prof
