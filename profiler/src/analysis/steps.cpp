// steps: each step's time split into compute, transfer, idle and compile,
// and how much steps vary.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "analysis/rules.h"
#include "loupe/prof/units.h"

namespace loupe::prof::analysis {

int64_t quantile(std::vector<int64_t> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double pos = q * double(v.size() - 1);
  size_t lo = size_t(pos);
  size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + int64_t(std::llround(double(v[hi] - v[lo]) * (pos - double(lo))));
}

namespace {

// Fewer steps than this say nothing about how step time varies.
constexpr uint64_t kMinStepsForSpread = 3;

// The device a step's thread launched to most during the step.
const DeviceActivity* step_device(const Context& ctx, const StepRange& s) {
  const ThreadActivity* t = ctx.thread(s.thread);
  if (t != nullptr && t->launches != nullptr) {
    std::map<uint32_t, size_t> counts;
    const Launches& l = *t->launches;
    for (size_t i = lower_bound_time(l.start, s.start); i < l.size() && l.start[i] < s.end; ++i) ++counts[l.device[i]];
    if (!counts.empty()) {
      auto best = std::max_element(counts.begin(), counts.end(),
                                   [](const auto& a, const auto& b) { return a.second < b.second; });
      if (const DeviceActivity* d = ctx.device(best->first)) return d;
    }
  }
  return ctx.devices.empty() ? nullptr : &ctx.devices.front();
}

}  // namespace

void measure_steps(const Context& ctx, AnalysisReport& report) {
  StepStats& st = report.steps;
  std::vector<int64_t> durations;
  for (const StepRange& s : ctx.steps) {
    StepStats::Step step;
    step.number = s.number;
    step.start = s.start;
    step.dur = s.end - s.start;
    if (const DeviceActivity* d = step_device(ctx, s)) {
      int64_t busy = d->busy.covered(s.start, s.end), kernels = d->kernels.covered(s.start, s.end);
      step.compute_ns = d->compute.covered(s.start, s.end);
      step.communication_ns = kernels - step.compute_ns;  // collectives while no compute ran
      step.transfer_ns = busy - kernels;                  // copies while no kernel ran
      step.idle_ns = step.dur - busy;
    }
    step.compile_ns = ctx.compile_all.covered(s.start, s.end);
    durations.push_back(step.dur);
    st.steps.push_back(step);
  }
  st.count = st.steps.size();
  if (durations.empty()) return;
  st.median_ns = quantile(durations, 0.5);
  st.p10_ns = quantile(durations, 0.1);
  st.p90_ns = quantile(durations, 0.9);
  std::vector<int64_t> deviations;
  for (int64_t d : durations) deviations.push_back(std::abs(d - st.median_ns));
  st.mad_ns = quantile(deviations, 0.5);
}

void rule_steps(const Context& ctx, const AnalysisReport& report, std::vector<Finding>& out) {
  const StepStats& st = report.steps;
  if (st.count == 0) return;
  const double outlier = ctx.options.step_spread_warning;
  int64_t dur = 0, compute = 0, communication = 0, transfer = 0, idle = 0, compile = 0, slow = 0;
  uint64_t outliers = 0;
  for (const StepStats::Step& s : st.steps) {
    dur += s.dur;
    compute += s.compute_ns;
    communication += s.communication_ns;
    transfer += s.transfer_ns;
    idle += s.idle_ns;
    compile += s.compile_ns;
    if (double(s.dur) > outlier * double(st.median_ns)) {
      slow += s.dur - st.median_ns;
      ++outliers;
    }
  }
  double spread = st.median_ns > 0 ? double(st.p90_ns) / double(st.median_ns) : 0;
  // p10 to p90 around the median: what "steady" is judged by.
  double width = st.median_ns > 0 ? double(st.p90_ns - st.p10_ns) / double(st.median_ns) : 0;
  bool too_few = st.count < kMinStepsForSpread;
  std::vector<uint32_t> threads;
  for (const StepRange& s : ctx.steps) {
    if (std::find(threads.begin(), threads.end(), s.thread) == threads.end()) threads.push_back(s.thread);
  }
  Finding f;
  f.rule = "steps";
  f.severity = !too_few && spread >= outlier ? Severity::warning : Severity::info;
  f.threads = threads;
  // The time slow steps (beyond step_spread times the median) took over the
  // median: what making them ordinary would save. Nothing is an outlier
  // among too few steps.
  f.impact_ns = too_few ? 0 : slow;
  f.title = fmt::format("{} step{}{}, median {} (p10 {}, p90 {})", format_count(ctx.distinct_steps),
                        ctx.distinct_steps == 1 ? "" : "s",
                        threads.size() > 1 ? fmt::format(" on {} threads", threads.size()) : "",
                        format_duration(st.median_ns), format_duration(st.p10_ns), format_duration(st.p90_ns));
  if (too_few) {
    f.title += ": too few steps to tell how step time varies";
  } else if (f.severity == Severity::warning) {
    f.title += fmt::format(": step time varies, p90 is {:.1f}x the median", spread);
  } else if (outliers > 0) {
    f.title += fmt::format("; {} slow step{}", format_count(outliers), outliers == 1 ? "" : "s");
  } else if (width > ctx.options.steady_width) {
    f.title += fmt::format(": p10 to p90 spans {} of the median", format_percent(width));
  }
  auto share = [&](int64_t x) { return fmt::format("{} ({})", format_duration(x), format_percent(double(x) / double(std::max<int64_t>(dur, 1)))); };
  f.evidence.push_back({"median absolute deviation", format_duration(st.mad_ns)});
  for (const StepRange& s : ctx.stub_steps) {
    f.evidence.push_back({"left out", fmt::format("step {} ({}): no device work during it", s.number,
                                                  format_duration(s.end - s.start))});
  }
  // Without a device operation the trace cannot say how a device spent
  // the steps: no shares rather than a device idle 0%.
  const bool devices = !ctx.devices.empty();
  if (devices) {
    f.evidence.push_back({"device computing", share(compute)});
    if (communication > 0) f.evidence.push_back({"device communicating only", share(communication)});
    f.evidence.push_back({"device copying only", share(transfer)});
    f.evidence.push_back({"device idle", share(idle)});
  }
  f.evidence.push_back({"host compiling", share(compile)});
  std::vector<const StepStats::Step*> slowest;
  for (const StepStats::Step& s : st.steps) slowest.push_back(&s);
  size_t shown = std::min<size_t>(slowest.size(), 3);
  std::partial_sort(slowest.begin(), slowest.begin() + long(shown), slowest.end(),
                    [](const auto* a, const auto* b) { return a->dur > b->dur; });
  for (size_t i = 0; i < shown; ++i) {
    const StepStats::Step& s = *slowest[i];
    f.ranges.push_back({s.start, s.start + s.dur});
    f.evidence.push_back({fmt::format("slow step {}", s.number),
                          devices ? fmt::format("{}: compile {}, idle {}, compute {}", format_duration(s.dur),
                                                format_duration(s.compile_ns), format_duration(s.idle_ns),
                                                format_duration(s.compute_ns))
                                  : fmt::format("{}: compile {}", format_duration(s.dur),
                                                format_duration(s.compile_ns))});
  }
  if (too_few) {
    f.suggestion = "record more steps (a profiler schedule with more active steps) to see how step time varies";
  } else if (f.severity == Severity::warning || outliers > 0 || width > ctx.options.steady_width) {
    f.suggestion = "look at the slowest steps: what they do that the median step does not (compiles, host work, "
                   "synchronisation, data loading) is the cost to remove";
  } else {
    f.suggestion = fmt::format("steps are steady: p10 to p90 spans {} of the median", format_percent(width));
  }
  out.push_back(std::move(f));
}

}  // namespace loupe::prof::analysis
