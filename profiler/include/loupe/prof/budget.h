// Performance budgets for CI: limits on a run's metrics, read from TOML,
// checked against an analysis report (`loupe check`).
//
//   recompiles_max = 0
//   idle_fraction_max = 0.15
//   sync_transfers_per_step_max = 0
//   peak_memory_fraction_max = 0.9
//   tiny_kernel_fraction_max = 0.5
//   step_time_max = "25ms"
//   straggler_fraction_max = 0.02   # a job's (loupe check job/)
//
// A key is `<metric>_max` for each budgeted metric (metrics.h).
//   [thresholds]            # optional: analysis parameters by name
//   min_gap = "50us"
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "loupe/prof/analysis.h"

namespace loupe::prof {

// A malformed budget: names the file, the line and the problem.
class BudgetError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Budget {
  struct Limit {
    std::string key;     // as written in the file
    std::string metric;  // the metric it limits
    double max = 0;      // in the metric's unit
    bool job = false;    // a job's metric
  };
  std::vector<Limit> limits;                                    // in file order
  std::vector<std::pair<std::string, std::string>> thresholds;  // analysis parameters
};

// The budget keys loupe knows, with what each limits. A job's keys limit
// what its ranks do together (job_analysis.h checks them); the others
// limit one trace, and on a job every rank.
struct BudgetKey {
  std::string key, metric;
  const char* description;
  MetricUnit unit;
  bool job = false;
};
std::vector<BudgetKey> budget_keys();

// Parses TOML text; `source` names it in errors. Throws BudgetError.
Budget parse_budget(const std::string& text, const std::string& source);
Budget read_budget_file(const std::string& path);

struct BudgetResult {
  std::string key;
  double limit = 0, actual = 0;
  bool passed = true;
  std::string actual_text, limit_text;  // as a person reads them
};

// A trace's keys against the report; throws BudgetError for a job's key.
std::vector<BudgetResult> check_budget(const Budget& budget, const AnalysisReport& report);

// One limit against the value it limits, as a person reads both ("12.3%",
// "3", "25.000 ms", "1.5 MiB"); `where` follows the value ("(rank 3)").
BudgetResult budget_result(const Budget::Limit& limit, double actual, const std::string& where = "");

// The analysis options the budget's [thresholds] set (checked when parsed).
AnalysisOptions analysis_options(const Budget& budget);

// `loupe check`: the analysis the budget's thresholds configure, run on
// `model`, against the budget's limits.
std::vector<BudgetResult> check_budget(const Budget& budget, const TraceModel& model);

// JUnit XML that CI servers show as test results: one test case per limit.
std::string budget_junit(const std::vector<BudgetResult>& results, const std::string& trace);

}  // namespace loupe::prof
