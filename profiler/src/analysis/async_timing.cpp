// async-timing: a timing whose device work finishes well after it ends
// measured dispatch, not execution.
//
// Only ranges the program declared to be timings (span kind `timing`, at any
// depth) are judged. Every other range marks code, not a measurement: a
// framework's annotations (PyTorch's record_function, ProfilerStep#N, the
// NVTX ranges JAX and PyTorch emit) and a program's own ranges end before
// their device work by design in an asynchronous program, and nothing says
// anyone read a clock around them. A trace that declares no timing (every
// imported one) gets no finding: it cannot tell.
#include <fmt/format.h>

#include <map>

#include "analysis/rules.h"
#include "loupe/prof/units.h"

namespace loupe::prof::analysis {

void rule_async_timing(const Context& ctx, const AnalysisReport&, std::vector<Finding>& out) {
  const TraceModel& m = ctx.model;
  struct ByName {
    uint64_t ranges = 0, flagged = 0;
    int64_t range_ns = 0;
    std::vector<Interval> unseen;  // from each range's end to its work's end
    std::vector<int64_t> lags;
    std::vector<TimeRange> where;
    std::map<uint32_t, uint64_t> sites;
    uint32_t thread = 0;
  };
  std::map<std::pair<uint32_t, StringId>, ByName> names;
  for (const ThreadActivity& t : ctx.threads) {
    if (t.spans == nullptr || t.launches == nullptr) continue;
    const HostSpans& s = *t.spans;
    const Launches& l = *t.launches;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s.kind[i] != SpanKind::timing || s.dur[i] <= 0) continue;
      size_t a = lower_bound_time(l.start, s.start[i]), b = lower_bound_time(l.start, s.end(i));
      if (a == b) continue;
      // When did the device finish the kernels this range launched? Copies
      // are the transfer rule's: a range that only queues uploads is
      // loading data, not timing a computation.
      int64_t finished = INT64_MIN;
      for (size_t k = a; k < b; ++k) {
        if (const EventRef* op = ctx.op_of(l.correlation[k])) {
          const DeviceOps& ops = m.device_ops[op->track];
          if (ops.kind[op->index] == DeviceOpKind::kernel) finished = std::max(finished, ops.end(op->index));
        }
      }
      if (finished == INT64_MIN) continue;
      ByName& n = names[{t.thread, s.name[i]}];
      n.thread = t.thread;
      ++n.ranges;
      int64_t lag = finished - s.end(i);
      if (lag >= ctx.options.min_gap_ns && double(lag) >= ctx.options.async_min_lag_ratio * double(s.dur[i])) {
        ++n.flagged;
        n.unseen.push_back({s.end(i), finished});
        n.range_ns += s.dur[i];
        n.lags.push_back(lag);
        if (n.where.size() < 20) n.where.push_back({s.start[i], finished});
        if (s.callsite[i] != 0) ++n.sites[s.callsite[i]];
      }
    }
  }
  for (auto& [key, n] : names) {
    // Most instances must lag: a range that is usually synchronised and
    // lags once is not a timing mistake.
    if (n.flagged == 0 || 2 * n.flagged < n.ranges) continue;
    std::nth_element(n.lags.begin(), n.lags.begin() + long(n.lags.size() / 2), n.lags.end());
    int64_t median_lag = n.lags[n.lags.size() / 2];
    const std::string& name = m.str(key.second);
    // Consecutive ranges' unseen work overlaps when the device runs behind:
    // count the time once.
    int64_t unseen_ns = IntervalSet(n.unseen).length();
    Finding f;
    f.rule = "async-timing";
    f.severity = Severity::warning;
    f.threads = {n.thread};
    f.impact_ns = unseen_ns;  // device time the ranges did not see
    f.title = fmt::format("timing `{}` ends before the device work it launched: {} of {} times, typically {} early",
                          name, format_count(n.flagged), format_count(n.ranges), format_duration(median_lag));
    f.evidence.push_back({"timing", name});
    f.evidence.push_back({"on", thread_label(ctx, n.thread)});
    f.evidence.push_back(
        {"instances that lag", fmt::format("{} of {}", format_count(n.flagged), format_count(n.ranges))});
    f.evidence.push_back({"time inside those ranges", format_duration(n.range_ns)});
    f.evidence.push_back({"device work after they ended", format_duration(unseen_ns)});
    for (const auto& [site, count] : n.sites) {
      f.evidence.push_back({"timing started at", fmt::format("{} (x{})", ctx.callsite_text(site), count)});
    }
    f.ranges = std::move(n.where);
    f.suggestion = fmt::format(
        "`{}` measures dispatch, not execution: wait for the device before reading the clock "
        "(rt::synchronize with loupe's runtime, torch.cuda.synchronize() or CUDA events in PyTorch, "
        "block_until_ready() in JAX)",
        name);
    out.push_back(std::move(f));
  }
}

}  // namespace loupe::prof::analysis
