// Whether a value measured over the steps of several runs (a step time, a
// kernel's time per step) moved between two sets of runs, as `loupe diff
// --base A1 A2 A3 --head B1 B2 B3` asks.
//
// Steps within one run are correlated (the machine's load, clocks and data
// placement are shared by all of them), so a step is not an independent
// measurement and a test that treats it as one calls noise a change. The
// test here is a rank test over steps blocked by run: every step of every
// run is ranked together (midranks for ties), and the ranks are analysed as
// a nested design, steps within runs within sides. The difference of the
// two sides' mean ranks is judged against how much runs of the same side
// differ (the mean square of runs within sides, runs - 2 degrees of
// freedom): a run, not a step, is the independent unit. Where runs of a side
// differ no more than steps within a run do (that mean square is not above
// the steps' own), there is no run effect to allow for and the steps'
// variation is used (all steps pooled, steps - 2 degrees of freedom: then
// the test is the Wilcoxon-Mann-Whitney rank-sum test in its t form).
// Ranks make it indifferent to the slow outlier steps that training runs
// have (a checkpoint, a compile). docs/analyses.md gives the formulas.
#pragma once

#include <span>
#include <vector>

namespace loupe::prof {

struct RankTest {
  bool tested = false;  // false: too few values (fewer than 3 in all, or a side without any)
  double t = 0;         // > 0 when head ranks above base
  double degrees_of_freedom = 0;
  double p_value = 1;           // two-sided
  double p_increase = 1;        // one-sided: head's values higher than base's
  double p_decrease = 1;        // one-sided: lower
  bool runs_vary_more = false;  // the run-to-run variation was the yardstick
};

// Each inner vector is one run's values (one per step).
RankTest nested_rank_test(std::span<const std::vector<double>> base_runs,
                          std::span<const std::vector<double>> head_runs);

// The probability that Student's t with `dof` degrees of freedom exceeds `t`.
double student_t_upper_tail(double t, double dof);

}  // namespace loupe::prof
