// tiny-kernels: kernels shorter than the host time it took to issue them
// (their share of a launch call, or the whole eager op around it), and
// whether the device sat idle waiting for launches: only then is a program
// launch-bound, and that idle time is what fusing would win back.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>

#include "analysis/rules.h"
#include "loupe/prof/units.h"

namespace loupe::prof::analysis {

namespace {

struct KernelCounts {
  uint64_t kernels = 0, tiny = 0;
  int64_t kernel_ns = 0, tiny_ns = 0, tiny_launch_ns = 0;
  std::map<StringId, uint64_t> tiny_names;
  std::map<uint32_t, uint64_t> tiny_sites;  // call site -> tiny kernels launched from there
  std::vector<uint32_t> devices;
};

// The ops a runtime ran eagerly, by thread: its runtime spans named
// "eager <op>", each around the launch of that op's kernel and carrying the
// user's line. Issuing such a kernel cost the host the whole span (looking
// the op up, allocating its output, launching), not only the launch call.
class EagerOps {
 public:
  explicit EagerOps(const Context& ctx) {
    for (const ThreadActivity& t : ctx.threads) {
      if (t.spans == nullptr) continue;
      std::vector<uint32_t> mine;
      for (size_t i = 0; i < t.spans->size(); ++i) {
        if (is_eager_op(t.spans->kind[i], ctx.model.str(t.spans->name[i]))) mine.push_back(uint32_t(i));
      }
      if (!mine.empty()) threads_[t.thread] = {t.spans, std::move(mine)};
    }
  }
  // The innermost eager-op span holding time t on `thread`, or -1.
  int64_t at(uint32_t thread, int64_t t) const {
    auto it = threads_.find(thread);
    if (it == threads_.end()) return -1;
    const HostSpans& s = *it->second.spans;
    const std::vector<uint32_t>& idx = it->second.eager;
    // Spans are sorted by start: the innermost one holding t is among the
    // last few that started by t (an eager op nests another at most rarely).
    auto k = std::upper_bound(idx.begin(), idx.end(), t, [&](int64_t v, uint32_t i) { return v < s.start[i]; });
    for (int steps = 0; k != idx.begin() && steps < 4; ++steps) {
      --k;
      if (s.end(*k) > t) return *k;
    }
    return -1;
  }
  const HostSpans& spans(uint32_t thread) const { return *threads_.at(thread).spans; }

 private:
  struct Thread {
    const HostSpans* spans;
    std::vector<uint32_t> eager;
  };
  std::map<uint32_t, Thread> threads_;
};

// What a launch call costs the host, from the calls themselves: each one's
// duration, capped at the median of the calls of that name on its thread,
// since a call far above its median was blocked (on a full launch queue,
// say) rather than launching; and, for a graph launch, shared by all the
// kernels it launched (a CUDA graph launch issues hundreds at once).
class LaunchCost {
 public:
  explicit LaunchCost(const Context& ctx) : ctx_(ctx), graph_(ctx.model.strings.size(), false) {
    for (const Launches& l : ctx.model.launches) {
      for (size_t i = 0; i < l.size(); ++i) {
        size_t g = index_of(l.thread, l.name[i]);
        if (g == groups_.size()) groups_.push_back({l.thread, l.name[i], 0, {}});
        groups_[g].durations.push_back(l.dur[i]);
      }
    }
    for (Group& g : groups_) {
      std::nth_element(g.durations.begin(), g.durations.begin() + long(g.durations.size() / 2), g.durations.end());
      g.median = g.durations[g.durations.size() / 2];
      std::vector<int64_t>().swap(g.durations);
      graph_[g.name] = ctx.model.str(g.name).find("GraphLaunch") != std::string::npos;
    }
    for (const DeviceOps& s : ctx.model.device_ops) {
      for (size_t i = 0; i < s.size(); ++i) {
        const EventRef* l = s.kind[i] == DeviceOpKind::sync ? nullptr : ctx.launch_of(s.correlation[i]);
        if (l != nullptr && is_graph_launch(*l)) ++graph_ops_[s.correlation[i]];
      }
    }
  }
  // The host time of the launch `l`, without its blocked part.
  int64_t of_call(const EventRef& l) const {
    const Launches& ls = ctx_.model.launches[l.track];
    return std::min(ls.dur[l.index], groups_[index_of(ls.thread, ls.name[l.index])].median);
  }
  // The share of it one of its device ops carries.
  int64_t per_op(const EventRef& l, uint64_t correlation) const { return of_call(l) / int64_t(ops_of(l, correlation)); }
  // How many device ops the launch started: one, but for a graph launch.
  uint32_t ops_of(const EventRef& l, uint64_t correlation) const {
    if (!is_graph_launch(l)) return 1;
    auto it = graph_ops_.find(correlation);
    return it == graph_ops_.end() ? 1 : std::max<uint32_t>(it->second, 1);
  }

 private:
  struct Group {
    uint32_t thread;
    StringId name;
    int64_t median;
    std::vector<int64_t> durations;
  };
  // A handful of groups (threads times launch calls): a flat table, looked
  // up from the last hit, since launches of one name come in runs.
  size_t index_of(uint32_t thread, StringId name) const {
    auto matches = [&](size_t i) { return groups_[i].thread == thread && groups_[i].name == name; };
    if (last_ < groups_.size() && matches(last_)) return last_;
    for (size_t i = 0; i < groups_.size(); ++i) {
      if (matches(i)) return last_ = i;
    }
    return groups_.size();
  }
  bool is_graph_launch(const EventRef& l) const { return graph_[ctx_.model.launches[l.track].name[l.index]]; }

  const Context& ctx_;
  std::vector<Group> groups_;
  mutable size_t last_ = 0;
  std::vector<bool> graph_;                           // per string: a graph launch call?
  std::unordered_map<uint64_t, uint32_t> graph_ops_;  // device ops per graph launch
};

KernelCounts count_kernels(const Context& ctx) {
  const TraceModel& m = ctx.model;
  EagerOps eager(ctx);
  LaunchCost cost(ctx);
  KernelCounts k;
  std::vector<uint64_t> charged;  // launches whose host time is counted, once each
  for (const DeviceOps& s : m.device_ops) {
    bool any = false;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s.kind[i] != DeviceOpKind::kernel) continue;
      ++k.kernels;
      k.kernel_ns += s.dur[i];
      // The host time it took to issue the kernel: its share of its launch
      // call, or the whole eager op around that call.
      int64_t launch_ns = -1, call_ns = 0;
      uint32_t site = 0;
      if (const EventRef* l = ctx.launch_of(s.correlation[i])) {
        const Launches& ls = m.launches[l->track];
        launch_ns = cost.per_op(*l, s.correlation[i]);
        call_ns = cost.of_call(*l);
        if (int64_t op = eager.at(ls.thread, ls.start[l->index]); op >= 0) {
          // Less any time the op waited (for room in a full launch queue,
          // say): a device-bound program's ops wait, they do not issue.
          const HostSpans& spans = eager.spans(ls.thread);
          int64_t from = spans.start[size_t(op)], to = spans.end(size_t(op));
          const ThreadActivity* th = ctx.thread(ls.thread);
          int64_t waited = th != nullptr ? th->blocked.covered(from, to) : 0;
          launch_ns = std::max(launch_ns, spans.dur[size_t(op)] - waited);
          call_ns = launch_ns;
          site = spans.callsite[size_t(op)];
        }
      }
      bool tiny = launch_ns >= 0 ? s.dur[i] < launch_ns : s.dur[i] < ctx.options.tiny_kernel_ns;
      if (!tiny) continue;
      if (site != 0) ++k.tiny_sites[site];
      any = true;
      ++k.tiny;
      k.tiny_ns += s.dur[i];
      if (const EventRef* l = launch_ns >= 0 ? ctx.launch_of(s.correlation[i]) : nullptr) {
        if (cost.ops_of(*l, s.correlation[i]) > 1) {
          charged.push_back(s.correlation[i]);  // counted once, below
        } else {
          k.tiny_launch_ns += call_ns;
        }
      }
      ++k.tiny_names[s.name[i]];
    }
    if (any && std::find(k.devices.begin(), k.devices.end(), s.device) == k.devices.end())
      k.devices.push_back(s.device);
  }
  // A graph launch that issued several tiny kernels counts once.
  std::sort(charged.begin(), charged.end());
  charged.erase(std::unique(charged.begin(), charged.end()), charged.end());
  for (uint64_t c : charged) k.tiny_launch_ns += cost.of_call(*ctx.launch_of(c));
  return k;
}

// The device idle waiting for the host to launch: gaps shorter than
// min_gap whose next op was launched after the gap began (the rhythm of a
// launch-bound program: each kernel ends before the next is issued), and
// the longer gaps the idle-gap rule put down to launching (an eager op's
// dispatch can outlast min_gap).
int64_t idle_waiting_for_launches(const Context& ctx, const AnalysisReport& report) {
  int64_t idle = 0;
  for (const DeviceActivity& d : ctx.devices) {
    for (const Interval& gap : d.busy.gaps(d.window_start, d.window_end, 1)) {
      if (gap.end - gap.start >= ctx.options.min_gap_ns) continue;
      OpAt next = first_op_from(d, gap.end);
      if (next.stream == nullptr) continue;
      const EventRef* l = ctx.launch_of(next.stream->correlation[next.index]);
      if (l != nullptr && ctx.model.launches[l->track].start[l->index] >= gap.start) idle += gap.end - gap.start;
    }
  }
  for (const DeviceIdle& d : report.devices) idle += d.cause_ns[size_t(GapCause::launch)];
  return idle;
}

// A launch counts as eager when no runtime span of a jitted call encloses it
// (the runtime names those spans "jit <function>").
uint64_t count_eager_launches(const Context& ctx, uint64_t* total) {
  uint64_t eager = 0;
  bool any_jit = false;
  *total = 0;
  for (const ThreadActivity& t : ctx.threads) {
    if (t.launches == nullptr) continue;
    *total += t.launches->size();
    std::vector<Interval> jit;
    if (t.spans != nullptr) {
      for (size_t i = 0; i < t.spans->size(); ++i) {
        if (t.spans->kind[i] == SpanKind::runtime && ctx.model.str(t.spans->name[i]).rfind("jit ", 0) == 0) {
          jit.push_back({t.spans->start[i], t.spans->end(i)});
        }
      }
    }
    any_jit |= !jit.empty();
    IntervalSet in_jit(jit);
    for (size_t i = 0; i < t.launches->size(); ++i) {
      int64_t s = t.launches->start[i];
      if (in_jit.covered(s, s + 1) == 0) ++eager;
    }
  }
  return any_jit || eager < *total ? eager : 0;
}

}  // namespace

double tiny_kernel_fraction(const Context& ctx) {
  KernelCounts k = count_kernels(ctx);
  return k.kernels == 0 ? 0 : double(k.tiny) / double(k.kernels);
}

void rule_tiny_kernels(const Context& ctx, const AnalysisReport& report, std::vector<Finding>& out) {
  const AnalysisOptions& opt = ctx.options;
  KernelCounts k = count_kernels(ctx);
  if (k.kernels == 0) return;
  double fraction = double(k.tiny) / double(k.kernels);
  if (fraction < opt.tiny_fraction_warning || k.tiny < opt.tiny_min_kernels) return;
  // Many small kernels cost nothing while the launches keep ahead of the
  // device: launch-bound means the device waited for them.
  int64_t waiting = idle_waiting_for_launches(ctx, report);
  int64_t window = ctx.window();
  double waiting_fraction = window > 0 ? double(waiting) / double(window) : 0;
  if (waiting_fraction < opt.launch_bound_fraction) return;
  uint64_t launches = 0;
  uint64_t eager = count_eager_launches(ctx, &launches);
  Finding f;
  f.rule = "tiny-kernels";
  f.severity = Severity::warning;
  f.devices = k.devices;
  // What fusing would win back: the device's wait for the launches.
  f.impact_ns = waiting;
  f.title = fmt::format(
      "{} of {} kernels ({}) run shorter than it took to launch them, and the device sat idle {} "
      "({} of its window) waiting for launches: the program is launch-bound",
      format_count(k.tiny), format_count(k.kernels), format_percent(fraction), format_duration(waiting),
      format_percent(waiting_fraction));
  f.evidence.push_back(
      {"tiny kernels", fmt::format("{} ({} of kernels)", format_count(k.tiny), format_percent(fraction))});
  f.evidence.push_back({"their device time",
                        fmt::format("{} ({} of kernel time)", format_duration(k.tiny_ns),
                                    format_percent(double(k.tiny_ns) / double(std::max<int64_t>(k.kernel_ns, 1))))});
  f.evidence.push_back({"host time in their launch calls", format_duration(k.tiny_launch_ns)});
  f.evidence.push_back(
      {"device idle waiting for launches",
       fmt::format("{} ({} of the active window)", format_duration(waiting), format_percent(waiting_fraction))});
  if (ctx.distinct_steps > 0) {
    f.evidence.push_back({"launches per step", fmt::format("{:.1f}", ctx.per_step(double(launches)))});
  }
  if (eager > 0) {
    f.evidence.push_back(
        {"launched eagerly (outside jit)", fmt::format("{} of {}", format_count(eager), format_count(launches))});
  }
  // Where they were launched from, most first (eager ops carry the line).
  std::vector<std::pair<uint64_t, uint32_t>> sites;
  for (auto& [site, n] : k.tiny_sites) sites.push_back({n, site});
  std::sort(sites.begin(), sites.end(),
            [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  for (size_t i = 0; i < sites.size() && i < 5; ++i) {
    f.evidence.push_back(
        {"call site", fmt::format("{} (x{})", ctx.callsite_text(sites[i].second), format_count(sites[i].first))});
  }
  std::vector<std::pair<uint64_t, StringId>> names;
  for (auto& [name, n] : k.tiny_names) names.push_back({n, name});
  std::sort(names.begin(), names.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = 0; i < names.size() && i < 5; ++i) {
    f.evidence.push_back(
        {"tiny kernel", fmt::format("{} (x{})", ctx.model.str(names[i].second), format_count(names[i].first))});
  }
  f.suggestion = eager > 0 ? "jit the whole step so that the element-wise chain fuses into a few kernels, instead of "
                             "running each operation eagerly"
                           : "fuse the small operations (jit larger functions) so that each kernel does more work "
                             "than its launch costs";
  if (ctx.window() > 0) f.ranges.push_back({ctx.window_start, ctx.window_end});
  out.push_back(std::move(f));
}

}  // namespace loupe::prof::analysis
