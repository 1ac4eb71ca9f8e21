#include "loupe/prof/trace_diff.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "diff_series.h"
#include "diff_text.h"
#include "loupe/prof/rank_test.h"
#include "loupe/prof/safe_text.h"

namespace loupe::prof {

namespace {

// Relative standard error of a median step time: 1.2533 sigma / sqrt(n),
// with sigma estimated as 1.4826 MAD (both exact for normal data).
double median_relative_error(const TraceMetrics& m) {
  if (m.steps < 2 || m.step_time <= 0) return 0;
  return 1.2533 * 1.4826 * m.step_time_mad / m.step_time / std::sqrt(double(m.steps));
}

// The relative change that the spread of a value over runs explains: the
// standard errors of the two sides' means, relative, combined (a side of
// one run adds nothing: its spread is unknown).
double run_spread_noise(const std::vector<double>& base, const std::vector<double>& head) {
  auto relative_error = [](const std::vector<double>& v) {
    if (v.size() < 2) return 0.0;
    double mean = 0, square = 0;
    for (double x : v) mean += x / double(v.size());
    if (mean == 0) return 0.0;
    for (double x : v) square += (x - mean) * (x - mean);
    return std::sqrt(square / double(v.size() - 1) / double(v.size())) / std::fabs(mean);
  };
  double eb = relative_error(base), eh = relative_error(head);
  return std::max(2.0 * std::sqrt(eb * eb + eh * eh), 0.001);
}

DiffRow plain_row(std::string name, std::string unit, double base, double head) {
  DiffRow r{std::move(name), std::move(unit), base, head, head - base, 0, false, -1, {}};
  r.delta_fraction = base != 0 ? r.delta / std::fabs(base) : 0;
  return r;
}

// The row's change in HTA's words, once beyond_noise is set.
void name_change(DiffRow& r) {
  if (r.base == 0 && r.head != 0) r.change = "added";
  else if (r.head == 0 && r.base != 0) r.change = "deleted";
  else if (!r.beyond_noise) r.change = "unchanged";
  else r.change = r.delta > 0 ? "increased" : "decreased";
}

// Counts and bytes are exact: any change is real (beyond rounding of
// per-step averages). Times carry the noise of step-to-step spread.
void mark(DiffRow& r, bool timed, double noise) {
  if (!timed) r.beyond_noise = r.base == 0 ? r.head != 0 : std::fabs(r.delta_fraction) > 1e-6;
  else if (r.base == 0) r.beyond_noise = r.head != 0;
  else r.beyond_noise = std::fabs(r.delta_fraction) > noise;
  name_change(r);
}

// A tested row: beyond noise when the rank test finds the change significant.
void mark_tested(DiffRow& r, const RankTest& test, double significance) {
  r.p_value = test.p_value;
  r.beyond_noise = test.tested && test.p_value < significance;
  name_change(r);
}

// The runs of one side: each run's per-step values and the step index its
// tables by name compare (-1: the median step).
struct Side {
  std::span<const DiffRun> runs;
  std::vector<RunSeries> series;
  std::vector<int64_t> index;
};

Side side_of(std::span<const DiffRun> runs, int64_t step, const char* which) {
  if (runs.empty()) throw std::invalid_argument(fmt::format("loupe diff: no {} run to compare", which));
  Side s{runs, {}, {}};
  for (const DiffRun& run : runs) {
    s.series.push_back(run_series(run.model, run.report));
    const std::vector<int64_t>& numbers = s.series.back().step_numbers;
    if (step < 0) {
      s.index.push_back(-1);
      continue;
    }
    auto it = std::find(numbers.begin(), numbers.end(), step);
    if (it == numbers.end() || run.report.steps.steps.empty()) {
      throw std::invalid_argument(run.report.steps.steps.empty()
                                      ? fmt::format("--step {}: {} has no steps", step, run.name)
                                      : fmt::format("--step {}: {} has no step {} (its steps: {} to {})", step,
                                                    run.name, step, numbers.front(), numbers.back()));
    }
    s.index.push_back(it - numbers.begin());
  }
  return s;
}

// A name's value in each run of a side: its median step's, or the step's asked for.
std::vector<double> run_values(const Side& s, ByName RunSeries::*table, const std::string& name) {
  std::vector<double> out;
  for (size_t i = 0; i < s.series.size(); ++i) {
    const ByName& by = s.series[i].*table;
    auto it = by.find(name);
    out.push_back(it == by.end() ? 0.0 : step_value(it->second, s.series[i].steps(), s.index[i]));
  }
  return out;
}

// A name's values per step in each run of a side (the one step asked for
// alone), for the rank test.
std::vector<std::vector<double>> run_steps(const Side& s, ByName RunSeries::*table, const std::string& name) {
  std::vector<std::vector<double>> out;
  for (size_t i = 0; i < s.series.size(); ++i) {
    const ByName& by = s.series[i].*table;
    auto it = by.find(name);
    std::vector<double> all =
        it == by.end() ? std::vector<double>(s.series[i].steps(), 0.0) : dense_values(it->second, s.series[i].steps());
    out.push_back(s.index[i] < 0 ? all : std::vector<double>{all[size_t(s.index[i])]});
  }
  return out;
}

bool tested(const TraceDiff& d) { return d.significance > 0; }

void sort_by_change(std::vector<DiffRow>& rows) {
  std::stable_sort(rows.begin(), rows.end(),
                   [](const DiffRow& a, const DiffRow& b) { return std::fabs(a.delta) > std::fabs(b.delta); });
}

// A table by name: each side's median over its runs, marked; times tested
// with several runs a side.
std::vector<DiffRow> name_rows(const TraceDiff& d, const Side& b, const Side& h, ByName RunSeries::*table,
                               bool counts) {
  std::set<std::string> names;
  for (const Side* s : {&b, &h}) {
    for (const RunSeries& r : s->series) {
      for (const auto& entry : r.*table) names.insert(entry.first);
    }
  }
  std::vector<DiffRow> rows;
  for (const std::string& n : names) {
    std::vector<double> vb = run_values(b, table, n), vh = run_values(h, table, n);
    DiffRow r = plain_row(n, counts ? "count" : "ns", median(vb), median(vh));
    if (counts || !tested(d)) mark(r, !counts, d.noise_fraction);
    else mark_tested(r, nested_rank_test(run_steps(b, table, n), run_steps(h, table, n)), d.significance);
    rows.push_back(std::move(r));
  }
  sort_by_change(rows);
  return rows;
}

// The path's time per step in each category: the mean over its steps, or
// the whole path's when the trace has no steps.
std::array<double, kPathCategories> path_per_step(const CriticalPath& p) {
  std::array<double, kPathCategories> out{};
  for (size_t c = 0; c < kPathCategories; ++c) {
    if (p.steps.empty()) {
      out[c] = double(p.whole.ns[c]);
      continue;
    }
    for (const CriticalPath::Step& s : p.steps) out[c] += double(s.time.ns[c]);
    out[c] /= double(p.steps.size());
  }
  return out;
}

std::vector<DiffRow> path_rows(const TraceDiff& d, const Side& base, const Side& head) {
  auto values = [](const Side& s, size_t c) {
    std::vector<double> v;
    for (const DiffRun& run : s.runs) v.push_back(path_per_step(run.report.critical_path)[c]);
    return v;
  };
  std::vector<DiffRow> rows;
  for (size_t c = 0; c < kPathCategories; ++c) {
    std::vector<double> b = values(base, c), h = values(head, c);
    DiffRow r = plain_row(std::string(name_of(PathCategory(c))), "ns", median(b), median(h));
    if (r.base == 0 && r.head == 0) continue;
    mark(r, true, tested(d) ? run_spread_noise(b, h) : d.noise_fraction);
    rows.push_back(r);
  }
  sort_by_change(rows);
  return rows;
}

// The device ops' time on the critical path per step, by name: over the
// path's steps (from the first's start to the last's end), per step; the
// whole path's without steps.
std::map<std::string, double> path_ops_per_step(const TraceModel& m, const CriticalPath& p) {
  int64_t from = std::numeric_limits<int64_t>::min(), to = std::numeric_limits<int64_t>::max();
  double steps = 1;
  if (!p.steps.empty()) {
    from = p.steps.front().time.start;
    to = p.steps.back().time.end;
    steps = double(p.steps.size());
  }
  std::map<std::string, double> out;
  for (const PathSegment& s : p.segments) {
    int64_t a = std::max(s.start, from), b = std::min(s.end, to);
    if (s.on_device && b > a) out[m.strings[s.name]] += double(b - a) / steps;
  }
  return out;
}

std::vector<DiffRow> path_op_rows(const TraceDiff& d, const Side& base, const Side& head) {
  auto by_run = [](const Side& s) {
    std::vector<std::map<std::string, double>> out;
    for (const DiffRun& run : s.runs) out.push_back(path_ops_per_step(run.model, run.report.critical_path));
    return out;
  };
  std::vector<std::map<std::string, double>> b = by_run(base), h = by_run(head);
  std::set<std::string> names;
  for (const auto* side : {&b, &h}) {
    for (const auto& run : *side) {
      for (const auto& entry : run) names.insert(entry.first);
    }
  }
  auto values = [](const std::vector<std::map<std::string, double>>& runs, const std::string& name) {
    std::vector<double> v;
    v.reserve(runs.size());
    for (const auto& run : runs) v.push_back(run.count(name) ? run.at(name) : 0.0);
    return v;
  };
  std::vector<DiffRow> rows;
  for (const std::string& n : names) {
    std::vector<double> vb = values(b, n), vh = values(h, n);
    DiffRow r = plain_row(n, "ns", median(vb), median(vh));
    mark(r, true, tested(d) ? run_spread_noise(vb, vh) : d.noise_fraction);
    rows.push_back(std::move(r));
  }
  sort_by_change(rows);
  return rows;
}

// The metrics: each side's median over its runs. With several runs a side
// the step time is tested on its steps and other times are judged by their
// spread over runs.
std::vector<DiffRow> run_metric_rows(const TraceDiff& d, const Side& base, const Side& head) {
  std::vector<DiffRow> rows;
  for (const MetricDef<TraceMetrics>& m : trace_metrics()) {
    if (m.compare == MetricCompare::not_compared) continue;
    std::vector<double> b, h;
    for (const DiffRun& run : base.runs) b.push_back(m.value(run.report.metrics));
    for (const DiffRun& run : head.runs) h.push_back(m.value(run.report.metrics));
    DiffRow r = plain_row(m.name, std::string(name_of(m.unit)), median(b), median(h));
    bool timed = m.compare == MetricCompare::timed;
    if (timed && tested(d) && std::string_view(m.name) == "step_time") {
      std::vector<std::vector<double>> sb, sh;
      for (const RunSeries& s : base.series) sb.push_back(s.step_times);
      for (const RunSeries& s : head.series) sh.push_back(s.step_times);
      mark_tested(r, nested_rank_test(sb, sh), d.significance);
    } else {
      mark(r, timed, !tested(d) ? d.noise_fraction : run_spread_noise(b, h));
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

// The first row (largest change first) that moved the way `delta` did.
const DiffRow* moved_like(const std::vector<DiffRow>& rows, double delta) {
  for (const DiffRow& r : rows) {
    if (r.delta != 0 && (r.delta > 0) == (delta > 0)) return &r;
  }
  return nullptr;
}

// Where the step time's change lies on the critical path: the category
// whose time per step moved most the same way and, where that is device
// work, the op on the path that did.
std::string verdict_of(const TraceDiff& d) {
  auto step = std::find_if(d.metrics.begin(), d.metrics.end(), [](const DiffRow& r) { return r.name == "step_time"; });
  if (step == d.metrics.end() || !step->beyond_noise || step->delta == 0) return "";
  std::string out =
      fmt::format("step_time {} a step ({})", diff_value_text(*step, step->delta, true), diff_percent_text(*step));
  const DiffRow* category = moved_like(d.critical_path, step->delta);
  if (!category) return out + ", none of it in one part of the critical path";
  if (std::fabs(category->delta) <= std::fabs(step->delta)) {
    out += fmt::format(", {} of it on the critical path in {}", diff_value_text(*category, category->delta, true),
                       category->name);
  } else {  // other parts of the path moved the other way: "of it" would not add up
    out += fmt::format(", the critical path's {} {} a step and its other parts {}", category->name,
                       diff_value_text(*category, category->delta, true),
                       diff_value_text(*step, step->delta - category->delta, true));
  }
  bool device_work = category->name == name_of(PathCategory::kernel) || category->name == name_of(PathCategory::copy) ||
                     category->name == name_of(PathCategory::communication);
  const DiffRow* op = device_work ? moved_like(d.critical_path_ops, step->delta) : nullptr;
  if (op) out += fmt::format(", {} in `{}`", diff_value_text(*op, op->delta, true), printable(op->name, 80));
  return out;
}

}  // namespace

double diff_noise_fraction(const TraceMetrics& b, const TraceMetrics& h) {
  // Without steps there is no spread to measure: 1% stands in for it.
  if (b.steps < 2 || h.steps < 2) return 0.01;
  double eb = median_relative_error(b), eh = median_relative_error(h);
  return std::max(2.0 * std::sqrt(eb * eb + eh * eh), 0.001);
}

DiffRow diff_row(std::string name, std::string unit, double base, double head, bool timed, double noise) {
  DiffRow r = plain_row(std::move(name), std::move(unit), base, head);
  mark(r, timed, noise);
  return r;
}

namespace {

template <typename Metrics>
std::vector<DiffRow> rows_of(std::span<const MetricDef<Metrics>> defs, const Metrics& base, const Metrics& head,
                             double noise) {
  std::vector<DiffRow> rows;
  for (const MetricDef<Metrics>& m : defs) {
    if (m.compare == MetricCompare::not_compared) continue;
    rows.push_back(diff_row(m.name, std::string(name_of(m.unit)), m.value(base), m.value(head),
                            m.compare == MetricCompare::timed, noise));
  }
  return rows;
}

template <typename Metrics>
std::vector<std::string> compared(std::span<const MetricDef<Metrics>> defs) {
  std::vector<std::string> names;
  for (const MetricDef<Metrics>& m : defs) {
    if (m.compare != MetricCompare::not_compared) names.emplace_back(m.name);
  }
  return names;
}

}  // namespace

std::vector<DiffRow> metric_rows(const TraceMetrics& base, const TraceMetrics& head, double noise) {
  return rows_of(trace_metrics(), base, head, noise);
}
std::vector<DiffRow> metric_rows(const JobMetrics& base, const JobMetrics& head, double noise) {
  return rows_of(job_metrics(), base, head, noise);
}
std::vector<std::string> trace_diff_metrics() { return compared(trace_metrics()); }
std::vector<std::string> job_diff_metrics() { return compared(job_metrics()); }

TraceDiff diff_runs(std::span<const DiffRun> base, std::span<const DiffRun> head, const DiffOptions& options) {
  Side b = side_of(base, options.step, "base"), h = side_of(head, options.step, "head");
  TraceDiff d;
  d.base_runs = base.size();
  d.head_runs = head.size();
  d.step = options.step;
  for (const DiffRun& run : base) d.base_step_times.push_back(run.report.metrics.step_time);
  for (const DiffRun& run : head) d.head_step_times.push_back(run.report.metrics.step_time);
  if (base.size() > 1 || head.size() > 1) {
    d.significance = options.significance;
    d.noise_fraction = run_spread_noise(d.base_step_times, d.head_step_times);
  } else {
    d.noise_fraction = diff_noise_fraction(base[0].report.metrics, head[0].report.metrics);
  }
  d.metrics = run_metric_rows(d, b, h);
  d.device_ops = name_rows(d, b, h, &RunSeries::device_op_time, false);
  d.device_op_counts = name_rows(d, b, h, &RunSeries::device_op_count, true);
  d.host_spans = name_rows(d, b, h, &RunSeries::host_span_time, false);
  d.launches = name_rows(d, b, h, &RunSeries::launch_count, true);
  d.critical_path = path_rows(d, b, h);
  d.critical_path_ops = path_op_rows(d, b, h);
  d.verdict = verdict_of(d);
  return d;
}

TraceDiff diff_traces(const TraceModel& base, const AnalysisReport& b, const TraceModel& head, const AnalysisReport& h,
                      const DiffOptions& options) {
  DiffRun runs[2] = {{base, b, base.path}, {head, h, head.path}};
  return diff_runs(std::span(runs, 1), std::span(runs + 1, 1), options);
}

FailOn parse_fail_on(const std::string& text, std::span<const std::string> metrics) {
  std::string known;
  for (const std::string& n : metrics) known += (known.empty() ? "" : ", ") + n;
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon + 1 >= text.size()) {
    throw std::invalid_argument(
        fmt::format("--fail-on '{}': expected METRIC:+N% or METRIC:-N (metrics: {})", text, known));
  }
  FailOn f;
  f.text = text;
  f.metric = text.substr(0, colon);
  for (const MetricAlias& a : metric_aliases()) {
    bool renamed = f.metric == a.old_name && std::find(metrics.begin(), metrics.end(), a.name) != metrics.end();
    if (renamed) f.metric = a.name;
  }
  if (std::find(metrics.begin(), metrics.end(), f.metric) == metrics.end()) {
    throw std::invalid_argument(
        fmt::format("--fail-on '{}': unknown metric '{}' (metrics: {})", text, f.metric, known));
  }
  std::string spec = text.substr(colon + 1);
  if (spec[0] != '+' && spec[0] != '-') {
    throw std::invalid_argument(
        fmt::format("--fail-on '{}': the threshold needs a sign, '+' (fail on an increase) or "
                    "'-' (fail on a decrease)",
                    text));
  }
  f.increase = spec[0] == '+';
  spec = spec.substr(1);
  if (!spec.empty() && spec.back() == '%') {
    f.relative = true;
    spec.pop_back();
  }
  size_t used = 0;
  try {
    f.threshold = std::stod(spec, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != spec.size() || !(f.threshold >= 0) || !std::isfinite(f.threshold)) {
    throw std::invalid_argument(fmt::format("--fail-on '{}': '{}' is not a non-negative number", text, spec));
  }
  if (f.relative) f.threshold /= 100.0;
  return f;
}

bool fail_on_crossed(const FailOn& rule, const std::vector<DiffRow>& metrics, std::string* why) {
  for (const DiffRow& r : metrics) {
    if (r.name != rule.metric) continue;
    double change = rule.increase ? r.delta : -r.delta;
    bool beyond_limit;
    if (rule.relative) {
      beyond_limit = r.base == 0 ? change > 0 : change / std::fabs(r.base) > rule.threshold;
    } else {
      beyond_limit = change > rule.threshold;
    }
    if (why) {
      std::string limit = fmt::format("{}{:g}{}", rule.increase ? "+" : "-",
                                      rule.relative ? rule.threshold * 100 : rule.threshold, rule.relative ? "%" : "");
      std::string noise = beyond_limit && !r.beyond_noise ? " but within noise" : "";
      if (!noise.empty() && r.p_value >= 0) noise = fmt::format(" but not significant (p {:.3f})", r.p_value);
      *why = fmt::format("{}: {} -> {} ({}), {} the limit {}{}", r.name, diff_value_text(r, r.base),
                         diff_value_text(r, r.head), diff_percent_text(r), beyond_limit ? "beyond" : "within", limit,
                         noise);
    }
    return beyond_limit && r.beyond_noise;
  }
  return false;
}

}  // namespace loupe::prof
