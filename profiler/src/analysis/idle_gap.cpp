// idle-gap: when each device sat idle inside its active window, and why.
#include <fmt/format.h>

#include <algorithm>

#include "analysis/rules.h"
#include "loupe/prof/units.h"

namespace loupe::prof::analysis {

namespace {

// The operation that ended a gap: the first one on the device starting at
// or after `t`, over all streams.
struct OpAt {
  const DeviceOps* stream = nullptr;
  size_t index = 0;
};

OpAt first_op_from(const DeviceActivity& d, int64_t t) {
  OpAt best;
  for (const DeviceOps* s : d.streams) {
    size_t i = lower_bound_time(s->start, t);
    while (i < s->size() && s->kind[i] == DeviceOpKind::sync) ++i;  // waits do not end a gap
    if (i < s->size() && (best.stream == nullptr || s->start[i] < best.stream->start[best.index])) best = {s, i};
  }
  return best;
}

std::string compile_detail(const Context& ctx, int64_t a, int64_t b) {
  for (const Compiles& c : ctx.model.compiles) {
    for (size_t i = 0; i < c.size(); ++i) {
      if (c.kind[i] != CompileKind::hit && c.start[i] < b && c.end(i) > a) {
        // Ahead of time (compile_for) is a start-up cost paid once, which
        // the user chose: say so, so that it is not mistaken for a recompile.
        return fmt::format("{}compile of {}", c.kind[i] == CompileKind::aot ? "ahead-of-time " : "",
                           ctx.model.str(c.function[i]));
      }
    }
  }
  return "compile";
}

std::string blocked_detail(const Context& ctx, const ThreadActivity* t, int64_t a, int64_t b) {
  for (const Transfers& tr : ctx.model.transfers) {
    if (t != nullptr && tr.thread != t->thread) continue;
    size_t i = lower_bound_time(tr.start, b);
    while (i-- > 0) {
      if (tr.end(i) <= a) break;
      if (!tr.synchronous[i]) continue;
      std::string site = ctx.callsite_text(tr.callsite[i]);
      return fmt::format("synchronous {} copy{}{}", name_of(tr.direction[i]), site.empty() ? "" : " at ", site);
    }
  }
  return "waiting on the device";
}

// What the host did while the device idled in [a, b): docs/analyses.md
// gives the order of priority and why.
IdleGap classify(const Context& ctx, const DeviceActivity& d, int64_t a, int64_t b) {
  const AnalysisOptions& opt = ctx.options;
  IdleGap g{a, b, GapCause::unknown, ""};
  // Whose work ended the gap, and when was it launched?
  OpAt next = first_op_from(d, b);
  const ThreadActivity* t = nullptr;
  int64_t host_end = b;  // the host's part of the gap ends when it launched the next op
  if (next.stream != nullptr) {
    if (const EventRef* l = ctx.launch_of(next.stream->correlation[next.index])) {
      const Launches& launches = ctx.model.launches[l->track];
      int64_t launched = launches.start[l->index];
      if (launched < a) {
        g.detail = "the next operation was already queued: the device started it late (an event or another "
                   "stream it waited on, or the device's own scheduling)";
        return g;
      }
      t = ctx.thread(launches.thread);
      host_end = std::min(b, launched);
    }
  }
  int64_t len = std::max<int64_t>(host_end - a, 1);
  double need = opt.cause_min_coverage * double(len);
  const IntervalSet& compile = t ? t->compile : ctx.compile_all;
  const IntervalSet& blocked = t ? t->blocked : ctx.blocked_all;
  if (double(compile.covered(a, host_end)) >= need) {
    g.cause = GapCause::compile;
    g.detail = compile_detail(ctx, a, host_end);
    return g;
  }
  if (double(blocked.covered(a, host_end)) >= need) {
    g.cause = GapCause::sync;
    g.detail = blocked_detail(ctx, t, a, host_end);
    return g;
  }
  // Host work: the thread sat in one of its own ranges, launching nothing.
  auto host_work = [&](const ThreadActivity& th) -> bool {
    if (th.spans == nullptr) return false;
    int64_t span = th.deepest_user_span(a + (host_end - a) / 2);
    if (span < 0 || th.launches_in(a, host_end) > 0) return false;
    int64_t covered = std::min(host_end, th.spans->end(size_t(span))) - std::max(a, th.spans->start[size_t(span)]);
    if (double(covered) < need) return false;
    g.cause = GapCause::host_work;
    g.detail = fmt::format("host in `{}` on {}", ctx.model.str(th.spans->name[size_t(span)]),
                           thread_label(ctx, th.thread));
    return true;
  };
  size_t launches = 0;
  if (t != nullptr) {
    if (host_work(*t)) return g;
    launches = t->launches_in(a, host_end);
  } else {
    for (const ThreadActivity& th : ctx.threads) {
      if (host_work(th)) return g;
    }
    for (const ThreadActivity& th : ctx.threads) launches += th.launches_in(a, b);
  }
  if (launches > 0 || (t != nullptr && host_end - a < opt.min_gap_ns)) {
    g.cause = GapCause::launch;
    g.detail = launches > 0 ? fmt::format("the host issued {} launch{} during the gap", launches, launches == 1 ? "" : "es")
                            : "launch latency";
  }
  return g;
}

}  // namespace

std::string device_label(const Context& ctx, uint32_t device) {
  const Device* d = ctx.model.device(device);
  return d ? fmt::format("device {} ({})", device, d->name) : fmt::format("device {}", device);
}

std::string thread_label(const Context& ctx, uint32_t thread) {
  const Thread* t = ctx.model.thread(thread);
  return t ? fmt::format("thread `{}`", t->name) : fmt::format("thread {}", thread);
}

void measure_idle(const Context& ctx, AnalysisReport& report) {
  const AnalysisOptions& opt = ctx.options;
  for (const DeviceActivity& d : ctx.devices) {
    DeviceIdle di;
    di.device = d.device;
    di.window_start = d.window_start;
    di.window_end = d.window_end;
    di.busy_ns = d.busy.length();
    di.idle_ns = (d.window_end - d.window_start) - di.busy_ns;
    for (const Interval& gap : d.busy.gaps(d.window_start, d.window_end, opt.min_gap_ns)) {
      IdleGap g = classify(ctx, d, gap.start, gap.end);
      di.cause_ns[size_t(g.cause)] += g.end - g.start;
      di.gaps.push_back(std::move(g));
    }
    report.devices.push_back(std::move(di));

    // HTA's classes, stream by stream, between consecutive operations.
    for (const DeviceOps* s : d.streams) {
      StreamIdle si{s->device, s->stream, 0, 0, 0};
      int64_t prev_end = INT64_MIN;
      for (size_t i = 0; i < s->size(); ++i) {
        if (s->kind[i] == DeviceOpKind::sync) continue;  // waiting is idle
        int64_t gap = prev_end == INT64_MIN ? 0 : s->start[i] - prev_end;
        prev_end = std::max(prev_end, s->end(i));
        if (gap <= 0) continue;
        const EventRef* l = ctx.launch_of(s->correlation[i]);
        if (l != nullptr && ctx.model.launches[l->track].start[l->index] > s->start[i] - gap) {
          si.host_wait_ns += gap;
        } else if (gap < opt.kernel_wait_max_ns) {
          si.kernel_wait_ns += gap;
        } else {
          si.other_ns += gap;
        }
      }
      report.streams.push_back(si);
    }
  }
}

void rule_idle_gap(const Context& ctx, const AnalysisReport& report, std::vector<Finding>& out) {
  const AnalysisOptions& opt = ctx.options;
  static constexpr const char* kSuggestions[] = {
      "compile before the loop (compile_for) and stop the recompiles the recompile finding lists; "
      "ahead-of-time compiles cost their time once, at start-up",
      "take the synchronous transfers out of the loop: keep values on the device and read them every N steps; "
      "upload from pinned memory asynchronously",
      "move that host work off the critical path: prepare the next batch on another thread (or stream) while the "
      "device works",
      "the host cannot issue work fast enough: jit larger functions so that operations fuse into fewer, longer "
      "kernels",
      "look at the timeline around the largest gaps: the trace does not say what the host was doing",
  };
  for (const DeviceIdle& d : report.devices) {
    if (d.gaps.empty()) continue;
    int64_t window = d.window_end - d.window_start;
    int64_t in_gaps = 0;
    for (const IdleGap& g : d.gaps) in_gaps += g.end - g.start;
    double fraction = window > 0 ? double(d.idle_ns) / double(window) : 0;
    Finding f;
    f.rule = "idle-gap";
    f.severity = fraction >= opt.idle_error_fraction     ? Severity::error
                 : fraction >= opt.idle_warning_fraction ? Severity::warning
                                                         : Severity::info;
    f.title = fmt::format("{} idle {} of its active window: {} in {} gap{} of at least {}",
                          device_label(ctx, d.device), format_percent(fraction), format_duration(in_gaps),
                          format_count(d.gaps.size()), d.gaps.size() == 1 ? "" : "s", format_duration(opt.min_gap_ns));
    f.impact_ns = in_gaps;
    f.devices = {d.device};
    f.evidence.push_back({"active window", fmt::format("{} ({} to {})", format_duration(window),
                                                       format_duration(d.window_start), format_duration(d.window_end))});
    f.evidence.push_back({"busy (union of all streams)", format_duration(d.busy_ns)});
    f.evidence.push_back({"idle", fmt::format("{} ({})", format_duration(d.idle_ns), format_percent(fraction))});
    size_t dominant = 0;
    for (size_t c = 0; c < 5; ++c) {
      if (d.cause_ns[c] == 0) continue;
      if (d.cause_ns[c] > d.cause_ns[dominant]) dominant = c;
      f.evidence.push_back({fmt::format("cause: {}", name_of(GapCause(c))),
                            fmt::format("{} ({} of gap time)", format_duration(d.cause_ns[c]),
                                        format_percent(double(d.cause_ns[c]) / double(in_gaps)))});
    }
    if (d.cause_ns[dominant] == 0) dominant = size_t(GapCause::unknown);
    std::vector<const IdleGap*> largest;
    for (const IdleGap& g : d.gaps) largest.push_back(&g);
    size_t shown = std::min<size_t>(largest.size(), size_t(std::max(opt.largest_gaps, 0)));
    std::partial_sort(largest.begin(), largest.begin() + long(shown), largest.end(),
                      [](const IdleGap* x, const IdleGap* y) { return x->end - x->start > y->end - y->start; });
    for (size_t i = 0; i < shown; ++i) {
      const IdleGap& g = *largest[i];
      f.ranges.push_back({g.start, g.end});
      f.evidence.push_back({fmt::format("gap at {}", format_duration(g.start)),
                            fmt::format("{}: {}{}{}", format_duration(g.end - g.start), name_of(g.cause),
                                        g.detail.empty() ? "" : ", ", g.detail)});
    }
    f.suggestion = kSuggestions[dominant];
    out.push_back(std::move(f));
  }
}

}  // namespace loupe::prof::analysis
