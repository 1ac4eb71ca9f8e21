// tiny-kernels: kernels shorter than the host time it took to issue them
// (their launch, or the whole eager op around it), launches per step, and
// operations run eagerly outside any jitted function.
#include <fmt/format.h>

#include <algorithm>
#include <map>

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
        if (t.spans->kind[i] == SpanKind::runtime && ctx.model.str(t.spans->name[i]).rfind("eager ", 0) == 0)
          mine.push_back(uint32_t(i));
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

KernelCounts count_kernels(const Context& ctx) {
  const TraceModel& m = ctx.model;
  EagerOps eager(ctx);
  KernelCounts k;
  for (const DeviceOps& s : m.device_ops) {
    bool any = false;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s.kind[i] != DeviceOpKind::kernel) continue;
      ++k.kernels;
      k.kernel_ns += s.dur[i];
      // The host time it took to issue the kernel: its launch call, or the
      // whole eager op around that call.
      int64_t launch_ns = -1;
      uint32_t site = 0;
      if (const EventRef* l = ctx.launch_of(s.correlation[i])) {
        const Launches& ls = m.launches[l->track];
        launch_ns = ls.dur[l->index];
        if (int64_t op = eager.at(ls.thread, ls.start[l->index]); op >= 0) {
          // Less any time the op waited (for room in a full launch queue,
          // say): a device-bound program's ops wait, they do not issue.
          const HostSpans& spans = eager.spans(ls.thread);
          int64_t from = spans.start[size_t(op)], to = spans.end(size_t(op));
          const ThreadActivity* th = ctx.thread(ls.thread);
          int64_t waited = th != nullptr ? th->blocked.covered(from, to) : 0;
          launch_ns = std::max(launch_ns, spans.dur[size_t(op)] - waited);
          site = spans.callsite[size_t(op)];
        }
      }
      bool tiny = launch_ns >= 0 ? s.dur[i] < launch_ns : s.dur[i] < ctx.options.tiny_kernel_ns;
      if (!tiny) continue;
      if (site != 0) ++k.tiny_sites[site];
      any = true;
      ++k.tiny;
      k.tiny_ns += s.dur[i];
      k.tiny_launch_ns += std::max<int64_t>(launch_ns, 0);
      ++k.tiny_names[s.name[i]];
    }
    if (any && std::find(k.devices.begin(), k.devices.end(), s.device) == k.devices.end()) k.devices.push_back(s.device);
  }
  return k;
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

void rule_tiny_kernels(const Context& ctx, const AnalysisReport&, std::vector<Finding>& out) {
  const AnalysisOptions& opt = ctx.options;
  KernelCounts k = count_kernels(ctx);
  if (k.kernels == 0) return;
  double fraction = double(k.tiny) / double(k.kernels);
  if (fraction < opt.tiny_fraction_warning || k.tiny < opt.tiny_min_kernels) return;
  uint64_t launches = 0;
  uint64_t eager = count_eager_launches(ctx, &launches);
  Finding f;
  f.rule = "tiny-kernels";
  f.severity = Severity::warning;
  f.devices = k.devices;
  // What fusing would save: the host time spent launching them.
  f.impact_ns = k.tiny_launch_ns;
  f.title = fmt::format("{} of {} kernels ({}) run shorter than it took to launch them: the program is launch-bound",
                        format_count(k.tiny), format_count(k.kernels), format_percent(fraction));
  f.evidence.push_back({"tiny kernels", fmt::format("{} ({} of kernels)", format_count(k.tiny), format_percent(fraction))});
  f.evidence.push_back({"their device time", fmt::format("{} ({} of kernel time)", format_duration(k.tiny_ns),
                                                         format_percent(double(k.tiny_ns) / double(std::max<int64_t>(k.kernel_ns, 1))))});
  f.evidence.push_back({"host time launching them", format_duration(k.tiny_launch_ns)});
  if (ctx.distinct_steps > 0) {
    f.evidence.push_back({"launches per step", fmt::format("{:.1f}", ctx.per_step(double(launches)))});
  }
  if (eager > 0) {
    f.evidence.push_back({"launched eagerly (outside jit)", fmt::format("{} of {}", format_count(eager), format_count(launches))});
  }
  // Where they were launched from, most first (eager ops carry the line).
  std::vector<std::pair<uint64_t, uint32_t>> sites;
  for (auto& [site, n] : k.tiny_sites) sites.push_back({n, site});
  std::sort(sites.begin(), sites.end(),
            [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  for (size_t i = 0; i < sites.size() && i < 5; ++i) {
    f.evidence.push_back({"call site", fmt::format("{} (x{})", ctx.callsite_text(sites[i].second),
                                                   format_count(sites[i].first))});
  }
  std::vector<std::pair<uint64_t, StringId>> names;
  for (auto& [name, n] : k.tiny_names) names.push_back({n, name});
  std::sort(names.begin(), names.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = 0; i < names.size() && i < 5; ++i) {
    f.evidence.push_back({"tiny kernel", fmt::format("{} (x{})", ctx.model.str(names[i].second), format_count(names[i].first))});
  }
  f.suggestion = eager > 0 ? "jit the whole step so that the element-wise chain fuses into a few kernels, instead of "
                             "running each operation eagerly"
                           : "fuse the small operations (jit larger functions) so that each kernel does more work "
                             "than its launch costs";
  if (ctx.window() > 0) f.ranges.push_back({ctx.window_start, ctx.window_end});
  out.push_back(std::move(f));
}

}  // namespace loupe::prof::analysis
