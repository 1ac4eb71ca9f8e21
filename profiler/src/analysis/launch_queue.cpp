// Launch queues: per stream, how many ops were launched and not yet
// started, over time (HTA's queue length), and how long the host waited
// for room in a full queue where the trace records it.
#include <algorithm>

#include "analysis/context.h"
#include "analysis/rules.h"

namespace loupe::prof {

namespace {

// Launch times and start times, each sorted, merged into the queue's steps.
LaunchQueue queue_of(const DeviceOps& ops, std::vector<int64_t> launched, std::vector<int64_t> started) {
  LaunchQueue q{.device = ops.device, .stream = ops.stream};
  std::sort(launched.begin(), launched.end());
  std::sort(started.begin(), started.end());
  size_t a = 0, b = 0;
  int64_t length = 0, area = 0;
  while (a < launched.size() || b < started.size()) {
    bool start = b < started.size() && (a == launched.size() || started[b] <= launched[a]);
    int64_t t = start ? started[b++] : launched[a++];
    if (!q.time.empty()) area += length * (t - q.time.back());
    length += start ? -1 : 1;
    if (!q.time.empty() && q.time.back() == t) {
      q.length.back() = length;
    } else {
      q.time.push_back(t);
      q.length.push_back(length);
    }
  }
  // Of the lengths once all that happened at a time is counted: the order
  // of a launch and a start at the same time is an artefact of the clock.
  for (int64_t l : q.length) q.max_length = std::max(q.max_length, l);
  int64_t span = q.time.empty() ? 0 : q.time.back() - q.time.front();
  q.mean_length = span > 0 ? double(area) / double(span) : 0;
  return q;
}

}  // namespace

// Only the launches are indexed (not a whole Context): the viewer builds
// these tracks as it opens a trace.
std::vector<LaunchQueue> launch_queues(const TraceModel& model) {
  std::vector<std::pair<uint64_t, analysis::EventRef>> entries;
  for (uint32_t k = 0; k < model.launches.size(); ++k) {
    const Launches& l = model.launches[k];
    for (uint32_t i = 0; i < l.size(); ++i) {
      if (l.correlation[i] != 0) entries.push_back({l.correlation[i], {k, i}});
    }
  }
  analysis::CorrelationIndex launch_of;
  launch_of.build(std::move(entries));
  std::vector<LaunchQueue> out;
  for (const DeviceOps& ops : model.device_ops) {
    std::vector<int64_t> launched, started;
    for (size_t i = 0; i < ops.size(); ++i) {
      const analysis::EventRef* l = launch_of.find(ops.correlation[i]);
      if (l == nullptr) continue;
      launched.push_back(std::min(model.launches[l->track].start[l->index], ops.start[i]));
      started.push_back(ops.start[i]);
    }
    if (!launched.empty()) out.push_back(queue_of(ops, std::move(launched), std::move(started)));
  }
  return out;
}

namespace analysis {

// loupe's runtime records a "launch queue full" wait whenever a launch
// waits for room; no other source says why a launch call took long, so a
// trace without one cannot tell (-1) rather than says none.
int64_t launch_queue_full_ns(const Context& ctx) {
  int64_t blocked = -1;
  for (const HostSpans& t : ctx.model.host_spans) {
    for (size_t i = 0; i < t.size(); ++i) {
      if (t.kind[i] != SpanKind::wait || ctx.model.str(t.name[i]) != "launch queue full") continue;
      blocked = std::max<int64_t>(blocked, 0) + t.dur[i];
    }
  }
  return blocked;
}

}  // namespace analysis

}  // namespace loupe::prof
