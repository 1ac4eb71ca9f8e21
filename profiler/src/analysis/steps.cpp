// steps: each step's time split into compute, transfer, idle and compile,
// and how much steps vary.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "analysis/rules.h"
#include "loupe/prof/units.h"

namespace loupe::prof {

int64_t quantile(std::vector<int64_t> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double pos = q * double(v.size() - 1);
  size_t lo = size_t(pos);
  size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + int64_t(std::llround(double(v[hi] - v[lo]) * (pos - double(lo))));
}

}  // namespace loupe::prof

namespace loupe::prof::analysis {

namespace {

// Fewer steps than this say nothing about how step time varies.
constexpr uint64_t kMinStepsForSpread = 3;

// What a step launched: the device most of its operations ran on, and
// when the last of them finished (INT64_MIN when no launch of the step
// is linked to a device operation).
struct StepWork {
  const DeviceActivity* device = nullptr;
  int64_t end = INT64_MIN;
  size_t ops = 0;
};

// The launches of a step are those that started during it on any thread
// of its process: PyTorch launches the backward pass from its autograd
// thread, not from the thread that marks the step. Each is followed by
// its correlation id to the device operation it started.
StepWork step_work(const Context& ctx, const StepRange& s) {
  const Thread* own = ctx.model.thread(s.thread);
  std::map<uint32_t, size_t> launched;  // device -> launches, with or without a linked operation
  std::map<uint32_t, StepWork> by_device;
  for (const ThreadActivity& t : ctx.threads) {
    if (t.launches == nullptr) continue;
    if (t.thread != s.thread) {
      const Thread* other = ctx.model.thread(t.thread);
      if (own == nullptr || other == nullptr || other->process != own->process) continue;
    }
    const Launches& l = *t.launches;
    for (size_t i = lower_bound_time(l.start, s.start); i < l.size() && l.start[i] < s.end; ++i) {
      ++launched[l.device[i]];
      const EventRef* op = ctx.op_of(l.correlation[i]);
      if (op == nullptr) continue;
      const DeviceOps& ops = ctx.model.device_ops[op->track];
      if (ops.kind[op->index] == DeviceOpKind::sync) continue;  // an event wait does no work
      StepWork& w = by_device[ops.device];
      w.end = std::max(w.end, ops.end(op->index));
      ++w.ops;
    }
  }
  StepWork best;
  for (const auto& [device, w] : by_device) {
    if (w.ops > best.ops) best = {ctx.device(device), w.end, w.ops};
  }
  if (best.device != nullptr) return best;
  // Nothing linked: the device the step launched to most, else the first.
  auto most = std::max_element(launched.begin(), launched.end(),
                               [](const auto& a, const auto& b) { return a.second < b.second; });
  if (most != launched.end()) best.device = ctx.device(most->first);
  if (best.device == nullptr && !ctx.devices.empty()) best.device = &ctx.devices.front();
  return best;
}

}  // namespace

// A step's device time is not its host range: the host queues work that
// the device runs later. Each step's device window runs from the end of
// the previous step's window on its thread (the first: from the step's
// start) to when the device finished the work the step launched, or to
// the step's end if that is later (the device waiting for the host is the
// step's too). Windows of one thread's steps follow each other without
// overlap, so their shares add up to the time the steps covered.
void measure_steps(const Context& ctx, AnalysisReport& report) {
  StepStats& st = report.steps;
  std::vector<int64_t> durations;
  std::map<uint32_t, int64_t> window_end;  // by thread: where the last step's window ended
  for (const StepRange& s : ctx.steps) {
    StepStats::Step step;
    step.number = s.number;
    step.start = s.start;
    step.dur = s.end - s.start;
    StepWork work = step_work(ctx, s);
    if (work.ops > 0) ++st.linked;
    auto prev = window_end.find(s.thread);
    step.device_start = prev == window_end.end() ? s.start : prev->second;
    step.device_end = std::max({work.end, s.end, step.device_start});
    window_end[s.thread] = step.device_end;
    if (const DeviceActivity* d = work.device) {
      int64_t a = step.device_start, b = step.device_end;
      int64_t busy = d->busy.covered(a, b), kernels = d->kernels.covered(a, b);
      step.compute_ns = d->compute.covered(a, b);
      step.communication_ns = kernels - step.compute_ns;  // collectives while no compute ran
      step.transfer_ns = busy - kernels;                  // copies while no kernel ran
      step.idle_ns = (b - a) - busy;
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
  deviations.reserve(durations.size());
  for (int64_t d : durations) deviations.push_back(std::abs(d - st.median_ns));
  st.mad_ns = quantile(deviations, 0.5);
}

void rule_steps(const Context& ctx, const AnalysisReport& report, std::vector<Finding>& out) {
  const StepStats& st = report.steps;
  if (st.count == 0) return;
  const double outlier = ctx.options.step_spread_warning;
  // Slow: beyond step_spread times the median (what the title counts, the
  // impact adds up and the listed steps are named by).
  auto is_slow = [&](const StepStats::Step& s) { return double(s.dur) > outlier * double(st.median_ns); };
  int64_t dur = 0, device = 0, compute = 0, communication = 0, transfer = 0, idle = 0, compile = 0, slow = 0;
  uint64_t outliers = 0;
  for (const StepStats::Step& s : st.steps) {
    dur += s.dur;
    device += s.device_end - s.device_start;
    compute += s.compute_ns;
    communication += s.communication_ns;
    transfer += s.transfer_ns;
    idle += s.idle_ns;
    compile += s.compile_ns;
    if (is_slow(s)) {
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
  auto share = [](int64_t x, int64_t of) {
    return fmt::format("{} ({})", format_duration(x), format_percent(double(x) / double(std::max<int64_t>(of, 1))));
  };
  f.evidence.push_back({"median absolute deviation", format_duration(st.mad_ns)});
  for (const StepRange& s : ctx.stub_steps) {
    f.evidence.push_back({"left out", fmt::format("step {} ({}): no device work during it", s.number,
                                                  format_duration(s.end - s.start))});
  }
  // Without a device operation the trace cannot say how a device spent
  // the steps: no shares rather than a device idle 0%.
  const bool devices = !ctx.devices.empty();
  if (devices) {
    f.evidence.push_back(
        {"device time of the steps",
         st.linked > 0
             ? fmt::format("{}: each step's window ends when the device finished the work it launched ({} of {} "
                           "steps linked to their device operations by correlation id)",
                           format_duration(device), format_count(st.linked), format_count(st.count))
             : fmt::format("{}: the trace links no launch to a device operation, so each step's window is its "
                           "own time on the host",
                           format_duration(device))});
    f.evidence.push_back({"device computing", share(compute, device)});
    if (communication > 0) f.evidence.push_back({"device communicating only", share(communication, device)});
    f.evidence.push_back({"device copying only", share(transfer, device)});
    f.evidence.push_back({"device idle", share(idle, device)});
  }
  f.evidence.push_back({"host compiling", share(compile, dur)});
  std::vector<const StepStats::Step*> slowest;
  for (const StepStats::Step& s : st.steps) slowest.push_back(&s);
  size_t shown = std::min<size_t>(slowest.size(), 3);
  std::partial_sort(slowest.begin(), slowest.begin() + long(shown), slowest.end(),
                    [](const auto* a, const auto* b) { return a->dur > b->dur; });
  for (size_t i = 0; i < shown; ++i) {
    const StepStats::Step& s = *slowest[i];
    f.ranges.push_back({s.start, s.start + s.dur});
    // The slowest of steady steps are ordinary: "slow" only if they are.
    const bool slow_step = !too_few && is_slow(s);
    f.evidence.push_back(
        {fmt::format("{} {}", slow_step ? "slow step" : "step", s.number),
         devices ? fmt::format("{}: compile {}; on the device {}: idle {}, compute {}", format_duration(s.dur),
                               format_duration(s.compile_ns), format_duration(s.device_end - s.device_start),
                               format_duration(s.idle_ns), format_duration(s.compute_ns))
                 : fmt::format("{}: compile {}", format_duration(s.dur), format_duration(s.compile_ns))});
  }
  if (too_few) {
    f.suggestion = "record more steps (a profiler schedule with more active steps) to see how step time varies";
  } else if (f.severity == Severity::warning || outliers > 0 || width > ctx.options.steady_width) {
    f.suggestion =
        "look at the slowest steps: what they do that the median step does not (compiles, host work, "
        "synchronisation, data loading) is the cost to remove";
  } else {
    f.suggestion = fmt::format("steps are steady: p10 to p90 spans {} of the median", format_percent(width));
  }
  out.push_back(std::move(f));
}

}  // namespace loupe::prof::analysis
