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
  int64_t first = INT64_MAX;  // when the first of them started
  int64_t end = INT64_MIN;
  size_t ops = 0;
};

// The launches of a step are those that started during it on any thread
// of its process: PyTorch launches the backward pass from its autograd
// thread, not from the thread that marks the step. Each is followed by
// its correlation id to the device operation it started.
StepWork step_work(const Context& ctx, const StepRange& s) {
  std::map<uint32_t, size_t> launched;  // device -> launches, with or without a linked operation
  std::map<uint32_t, StepWork> by_device;
  ctx.for_each_step_launch(s, [&](const Launches& l, size_t i) {
    if (l.device[i] != kUnknownDevice) ++launched[l.device[i]];
    const EventRef* op = ctx.op_of(l.correlation[i]);
    if (op == nullptr) return;
    const DeviceOps& ops = ctx.model.device_ops[op->track];
    if (ops.kind[op->index] == DeviceOpKind::sync) return;  // an event wait does no work
    StepWork& w = by_device[ops.device];
    w.first = std::min(w.first, ops.start[op->index]);
    w.end = std::max(w.end, ops.end(op->index));
    ++w.ops;
  });
  StepWork best;
  for (const auto& [device, w] : by_device) {
    if (w.ops > best.ops) best = {ctx.device(device), w.first, w.end, w.ops};
  }
  if (best.device != nullptr) return best;
  // Nothing linked: the device the step launched to most, else the first.
  auto most = std::max_element(launched.begin(), launched.end(),
                               [](const auto& a, const auto& b) { return a.second < b.second; });
  if (most != launched.end()) best.device = ctx.device(most->first);
  if (best.device == nullptr && !ctx.devices.empty()) best.device = &ctx.devices.front();
  return best;
}

// Where a thread's first step's device window starts: at the step's start,
// unless the device was then still running work queued before it (launched
// before the profile began, or by another thread), which is not the step's:
// then where that work ended, at the latest when the step's own work began.
int64_t first_window_start(const StepWork& work, int64_t start) {
  const DeviceActivity* d = work.device;
  if (d == nullptr || work.ops == 0 || work.first <= start || d->busy.covered(start, start + 1) == 0) return start;
  std::vector<Interval> holes = d->busy.gaps(start, work.first, 1);
  return holes.empty() ? work.first : holes.front().start;
}

// The first steps of a profile, while the host runs ahead filling the
// launch queue (or a pipeline's first stages), take the host far less time
// than their device windows, which hold the device catching up: neither
// their host time nor their window is the step's cost, and they are left
// out of the times judged. A host ahead in every step has no steady state
// to leave them out of: then none is marked.
void mark_queue_fill(const Context& ctx, StepStats& st) {
  size_t fill = 0;
  for (const StepStats::Step& s : st.steps) {
    if (double(s.dur) * ctx.options.step_spread_warning >= double(s.device_end - s.device_start)) break;
    ++fill;
  }
  if (fill == st.steps.size()) return;
  for (size_t i = 0; i < fill; ++i) st.steps[i].queue_fill = true;
}

}  // namespace

// A step's device time is not its host range: the host queues work that
// the device runs later. Each step's device window runs from the end of
// the previous step's window on its thread (the first: from the step's
// start) to when the device finished the work the step launched, or to
// the step's end if that is later (the device waiting for the host is the
// step's too). Windows of one thread's steps follow each other without
// overlap, so their shares add up to the time the steps covered. Step
// times are judged on those windows when every step is linked to its
// device work: a host that blocks in one step's read and runs ahead in the
// next varies where the device does not.
void measure_steps(const Context& ctx, AnalysisReport& report) {
  StepStats& st = report.steps;
  std::map<uint32_t, int64_t> window_end;  // by thread: where the last step's window ended
  for (const StepRange& s : ctx.steps) {
    StepStats::Step step;
    step.number = s.number;
    step.start = s.start;
    step.dur = s.end - s.start;
    StepWork work = step_work(ctx, s);
    if (work.ops > 0) ++st.linked;
    auto prev = window_end.find(s.thread);
    step.device_start = prev == window_end.end() ? first_window_start(work, s.start) : prev->second;
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
    st.steps.push_back(step);
  }
  st.count = st.steps.size();
  if (st.count == 0) return;
  st.on_device = st.linked == st.count;
  if (st.on_device) mark_queue_fill(ctx, st);
  std::vector<int64_t> durations;
  for (const StepStats::Step& s : st.steps) {
    if (!s.queue_fill) durations.push_back(st.judged_ns(s));
  }
  st.judged = durations.size();
  st.median_ns = quantile(durations, 0.5);
  st.p10_ns = quantile(durations, 0.1);
  st.p90_ns = quantile(durations, 0.9);
  std::vector<int64_t> deviations;
  deviations.reserve(durations.size());
  for (int64_t d : durations) deviations.push_back(std::abs(d - st.median_ns));
  st.mad_ns = quantile(deviations, 0.5);
}

namespace {

// Slow: a judged time beyond step_spread times the median (what the title
// counts, the impact adds up and the listed steps are named by). A queue
// fill step is not judged, and nothing is an outlier among too few steps.
bool is_slow(const Context& ctx, const StepStats& st, const StepStats::Step& s) {
  return st.judged >= kMinStepsForSpread && !s.queue_fill &&
         double(st.judged_ns(s)) > ctx.options.step_spread_warning * double(st.median_ns);
}

// What the step times were judged on, and which first steps only filled
// the launch queue.
void judged_evidence(const Context& ctx, const StepStats& st, Finding& f) {
  if (st.on_device) {
    f.evidence.push_back(
        {"step time judged on", "device windows: every step is linked to the device work it launched"});
  } else if (!ctx.devices.empty()) {
    f.evidence.push_back({"step time judged on",
                          fmt::format("host time: {} of {} steps are linked to their device work by correlation id, "
                                      "so device windows cannot be compared",
                                      format_count(st.linked), format_count(st.count))});
  }
  size_t fill = 0;
  int64_t host = 0, device = 0;
  for (const StepStats::Step& s : st.steps) {
    if (!s.queue_fill) break;
    ++fill;
    host += s.dur;
    device += s.device_end - s.device_start;
  }
  if (fill == 0) return;
  f.evidence.push_back(
      {"queue fill", fmt::format("the first {}: the host ran ahead of the device (host {}, device windows {}) while "
                                 "the launch queue filled; left out of the step times judged",
                                 fill == 1 ? "step" : fmt::format("{} steps", format_count(fill)),
                                 format_duration(host), format_duration(device))});
}

// The device's time in the steps, split four ways (no shares without a
// device operation rather than a device idle 0%).
void device_split_evidence(const Context& ctx, const StepStats& st, Finding& f) {
  if (ctx.devices.empty()) return;
  int64_t device = 0, compute = 0, communication = 0, transfer = 0, idle = 0;
  for (const StepStats::Step& s : st.steps) {
    device += s.device_end - s.device_start;
    compute += s.compute_ns;
    communication += s.communication_ns;
    transfer += s.transfer_ns;
    idle += s.idle_ns;
  }
  auto share = [&](int64_t x) {
    return fmt::format("{} ({})", format_duration(x), format_percent(double(x) / double(std::max<int64_t>(device, 1))));
  };
  f.evidence.push_back(
      {"device time of the steps",
       st.linked > 0
           ? fmt::format("{}: each step's window ends when the device finished the work it launched ({} of {} "
                         "steps linked to their device operations by correlation id)",
                         format_duration(device), format_count(st.linked), format_count(st.count))
           : fmt::format("{}: the trace links no launch to a device operation, so each step's window is its "
                         "own time on the host",
                         format_duration(device))});
  f.evidence.push_back({"device computing", share(compute)});
  if (communication > 0) f.evidence.push_back({"device communicating only", share(communication)});
  f.evidence.push_back({"device copying only", share(transfer)});
  f.evidence.push_back({"device idle", share(idle)});
}

// The three longest steps by the judged time, "slow" only those that are
// (the slowest of steady steps are ordinary).
void slowest_evidence(const Context& ctx, const StepStats& st, Finding& f) {
  std::vector<const StepStats::Step*> slowest;
  for (const StepStats::Step& s : st.steps) slowest.push_back(&s);
  size_t shown = std::min<size_t>(slowest.size(), 3);
  std::partial_sort(slowest.begin(), slowest.begin() + long(shown), slowest.end(),
                    [&](const auto* a, const auto* b) { return st.judged_ns(*a) > st.judged_ns(*b); });
  for (size_t i = 0; i < shown; ++i) {
    const StepStats::Step& s = *slowest[i];
    f.ranges.push_back({s.start, s.start + s.dur});
    const bool slow = is_slow(ctx, st, s);
    std::string what = ctx.devices.empty()
                           ? fmt::format("{}: compile {}", format_duration(s.dur), format_duration(s.compile_ns))
                           : fmt::format("{} on the device (host {}{}): idle {}, compute {}; compile {}",
                                         format_duration(s.device_end - s.device_start), format_duration(s.dur),
                                         s.queue_fill ? ", queue fill" : "", format_duration(s.idle_ns),
                                         format_duration(s.compute_ns), format_duration(s.compile_ns));
    f.evidence.push_back({fmt::format("{} {}", slow ? "slow step" : "step", s.number), what});
  }
}

}  // namespace

void rule_steps(const Context& ctx, const AnalysisReport& report, std::vector<Finding>& out) {
  const StepStats& st = report.steps;
  if (st.count == 0) return;
  const double outlier = ctx.options.step_spread_warning;
  const bool too_few = st.judged < kMinStepsForSpread;
  int64_t host = 0, compile = 0, slow = 0;
  uint64_t outliers = 0;
  for (const StepStats::Step& s : st.steps) {
    host += s.dur;
    compile += s.compile_ns;
    if (is_slow(ctx, st, s)) {
      slow += st.judged_ns(s) - st.median_ns;
      ++outliers;
    }
  }
  double spread = st.median_ns > 0 ? double(st.p90_ns) / double(st.median_ns) : 0;
  // p10 to p90 around the median: what "steady" is judged by.
  double width = st.median_ns > 0 ? double(st.p90_ns - st.p10_ns) / double(st.median_ns) : 0;
  std::vector<uint32_t> threads;
  for (const StepRange& s : ctx.steps) {
    if (std::find(threads.begin(), threads.end(), s.thread) == threads.end()) threads.push_back(s.thread);
  }
  Finding f;
  f.rule = "steps";
  f.severity = !too_few && spread >= outlier ? Severity::warning : Severity::info;
  f.threads = threads;
  // What making the slow steps ordinary would save.
  f.impact_ns = slow;
  f.title = fmt::format("{} step{}{}, median {} (p10 {}, p90 {})", format_count(ctx.distinct_steps),
                        ctx.distinct_steps == 1 ? "" : "s",
                        threads.size() > 1 ? fmt::format(" on {} threads", threads.size()) : "",
                        format_duration(st.median_ns), format_duration(st.p10_ns), format_duration(st.p90_ns));
  if (st.on_device) f.title += " on the device";
  if (too_few) {
    f.title += ": too few steps to tell how step time varies";
  } else if (f.severity == Severity::warning) {
    f.title += fmt::format(": step time varies, p90 is {:.1f}x the median", spread);
  } else if (outliers > 0) {
    f.title += fmt::format("; {} slow step{}", format_count(outliers), outliers == 1 ? "" : "s");
  } else if (width > ctx.options.steady_width) {
    f.title += fmt::format(": p10 to p90 spans {} of the median", format_percent(width));
  }
  judged_evidence(ctx, st, f);
  f.evidence.push_back({"median absolute deviation", format_duration(st.mad_ns)});
  for (const StepRange& s : ctx.stub_steps) {
    f.evidence.push_back({"left out", fmt::format("step {} ({}): no device work during it", s.number,
                                                  format_duration(s.end - s.start))});
  }
  device_split_evidence(ctx, st, f);
  f.evidence.push_back(
      {"host compiling", fmt::format("{} ({})", format_duration(compile),
                                     format_percent(double(compile) / double(std::max<int64_t>(host, 1))))});
  slowest_evidence(ctx, st, f);
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
