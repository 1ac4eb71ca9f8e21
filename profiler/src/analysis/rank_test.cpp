#include "loupe/prof/rank_test.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace loupe::prof {

namespace {

// The continued fraction of the regularised incomplete beta function,
// evaluated by the modified Lentz method; converges fast for
// x < (a + 1) / (a + b + 2).
double beta_fraction(double a, double b, double x) {
  const double tiny = 1e-300, eps = 1e-15;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  if (std::fabs(d) < tiny) d = tiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 300; ++m) {
    double m2 = 2.0 * m;
    double even = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
    d = 1 + even * d;
    c = 1 + even / c;
    d = 1 / (std::fabs(d) < tiny ? tiny : d);
    c = std::fabs(c) < tiny ? tiny : c;
    h *= d * c;
    double odd = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
    d = 1 + odd * d;
    c = 1 + odd / c;
    d = 1 / (std::fabs(d) < tiny ? tiny : d);
    c = std::fabs(c) < tiny ? tiny : c;
    double step = d * c;
    h *= step;
    if (std::fabs(step - 1) < eps) break;
  }
  return h;
}

// I_x(a, b), the regularised incomplete beta function.
double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  double log_front = std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  if (x < (a + 1) / (a + b + 2)) return std::exp(log_front) * beta_fraction(a, b, x) / a;
  return 1 - std::exp(log_front) * beta_fraction(b, a, 1 - x) / b;
}

// Midranks (1-based) of all values, in the order given.
std::vector<double> midranks(const std::vector<double>& values) {
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return values[a] < values[b]; });
  std::vector<double> rank(values.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j < order.size() && values[order[j]] == values[order[i]]) ++j;
    double mid = (double(i) + double(j) + 1) / 2;  // ranks i+1 .. j
    for (size_t k = i; k < j; ++k) rank[order[k]] = mid;
    i = j;
  }
  return rank;
}

// Sums of squares of the nested design, on ranks.
struct NestedSums {
  double n[2] = {0, 0}, mean[2] = {0, 0};  // steps and mean rank per side (0 base, 1 head)
  double runs = 0, between_runs = 0, within_runs = 0;
};

NestedSums nested_sums(std::span<const std::vector<double>> base_runs, std::span<const std::vector<double>> head_runs) {
  std::vector<double> all;
  for (auto side : {base_runs, head_runs}) {
    for (const std::vector<double>& run : side) all.insert(all.end(), run.begin(), run.end());
  }
  std::vector<double> rank = midranks(all);
  NestedSums s;
  std::vector<std::pair<int, std::pair<size_t, size_t>>> runs;  // side, [begin, end) in `rank`
  size_t at = 0;
  for (int side = 0; side < 2; ++side) {
    for (const std::vector<double>& run : side == 0 ? base_runs : head_runs) {
      if (run.empty()) continue;
      runs.push_back({side, {at, at + run.size()}});
      for (size_t i = at; i < at + run.size(); ++i) s.mean[side] += rank[i];
      s.n[side] += double(run.size());
      at += run.size();
    }
  }
  for (int side = 0; side < 2; ++side) s.mean[side] /= std::max(s.n[side], 1.0);
  for (const auto& [side, range] : runs) {
    double sum = 0, count = double(range.second - range.first);
    for (size_t i = range.first; i < range.second; ++i) sum += rank[i];
    double run_mean = sum / count;
    s.between_runs += count * (run_mean - s.mean[side]) * (run_mean - s.mean[side]);
    for (size_t i = range.first; i < range.second; ++i) s.within_runs += (rank[i] - run_mean) * (rank[i] - run_mean);
  }
  s.runs = double(runs.size());
  return s;
}

}  // namespace

double student_t_upper_tail(double t, double dof) {
  if (!(dof > 0)) return std::isnan(t) ? 1 : 0.5;
  if (std::isinf(t)) return t > 0 ? 0 : 1;
  double tail = 0.5 * incomplete_beta(dof / 2, 0.5, dof / (dof + t * t));
  return t >= 0 ? tail : 1 - tail;
}

RankTest nested_rank_test(std::span<const std::vector<double>> base_runs,
                          std::span<const std::vector<double>> head_runs) {
  NestedSums s = nested_sums(base_runs, head_runs);
  RankTest r;
  double total = s.n[0] + s.n[1];
  if (s.n[0] == 0 || s.n[1] == 0 || total < 3) return r;
  r.tested = true;
  double runs_dof = s.runs - 2, steps_dof = total - s.runs;
  double runs_square = runs_dof > 0 ? s.between_runs / runs_dof : 0;
  double steps_square = steps_dof > 0 ? s.within_runs / steps_dof : 0;
  double error_square;
  if (runs_dof > 0 && runs_square > steps_square) {
    r.runs_vary_more = true;
    error_square = runs_square;
    r.degrees_of_freedom = runs_dof;
  } else {
    error_square = (s.between_runs + s.within_runs) / (total - 2);
    r.degrees_of_freedom = total - 2;
  }
  double difference = s.mean[1] - s.mean[0];
  double standard_error = std::sqrt(error_square * (1 / s.n[0] + 1 / s.n[1]));
  if (standard_error == 0) {
    // Every step of a run ranks alike and every run of a side alike: the
    // sides are either identical or fully apart.
    r.t = difference == 0 ? 0 : std::copysign(INFINITY, difference);
  } else {
    r.t = difference / standard_error;
  }
  r.p_increase = student_t_upper_tail(r.t, r.degrees_of_freedom);
  r.p_decrease = student_t_upper_tail(-r.t, r.degrees_of_freedom);
  r.p_value = std::min(1.0, 2 * std::min(r.p_increase, r.p_decrease));
  return r;
}

}  // namespace loupe::prof
