// `loupe check job/`: a job's budgets against the job's metrics, and a
// trace's budgets against every rank, where the worst rank decides.
#include <fmt/format.h>

#include <map>

#include "loupe/prof/job_analysis.h"

namespace loupe::prof {

namespace {

// A job's keys and the metric each limits.
const std::map<std::string, double JobMetrics::*>& job_keys() {
  static const std::map<std::string, double JobMetrics::*> keys = {
      {"straggler_fraction_max", &JobMetrics::straggler_fraction},
      {"collective_wait_fraction_max", &JobMetrics::collective_wait_fraction},
      {"exposed_communication_fraction_max", &JobMetrics::exposed_communication_fraction},
      {"imbalance_fraction_max", &JobMetrics::imbalance_fraction},
  };
  return keys;
}

BudgetResult result(const Budget::Limit& l, double actual, const std::string& where) {
  return {l.key,
          l.max,
          actual,
          actual <= l.max,
          format_budget_value(l.key, actual) + where,
          format_budget_value(l.key, l.max)};
}

// A trace's key on every rank: the largest value, and whose it is.
BudgetResult worst_rank(const Budget::Limit& l, const JobReport& report) {
  Budget one{.limits = {l}};
  double worst = 0;
  int64_t rank = -1;
  for (const auto& [r, metrics] : report.rank_metrics) {
    AnalysisReport ranks_report;
    ranks_report.metrics = metrics;
    double v = check_budget(one, ranks_report).front().actual;
    if (rank < 0 || v > worst) {
      worst = v;
      rank = r;
    }
  }
  if (rank < 0) return result(l, 0, " (no rank could be read)");
  return result(l, worst, fmt::format(" (rank {}, the worst of {})", rank, report.rank_metrics.size()));
}

}  // namespace

std::vector<BudgetResult> check_job_budget(const Budget& budget, const JobReport& report) {
  std::vector<BudgetResult> out;
  for (const Budget::Limit& l : budget.limits) {
    if (auto it = job_keys().find(l.key); it != job_keys().end()) {
      out.push_back(result(l, report.metrics.*(it->second), ""));
    } else if (l.key == "ranks_left_out_max") {
      out.push_back(result(l, double(report.metrics.ranks_left_out), ""));
    } else {
      out.push_back(worst_rank(l, report));
    }
  }
  return out;
}

}  // namespace loupe::prof
