// memory: allocated and reserved memory per device, the peak against
// capacity, pressure signals (retries, out-of-memory), and what was live at
// the peak, by call site.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>

#include "analysis/rules.h"
#include "loupe/prof/units.h"

namespace loupe::prof::analysis {

namespace {

// Where a block was allocated: its call site, or, in a trace without call
// sites (a Kineto trace's memory events carry none), the chain of ops open
// at that time on the one thread inside an op then. With several threads
// inside ops at once it cannot be told which allocated: "" (unknown).
std::string allocation_site(const Context& ctx, uint32_t callsite, int64_t t) {
  if (callsite != 0) return ctx.callsite_text(callsite);
  const ThreadActivity* found = nullptr;
  for (const ThreadActivity& th : ctx.threads) {
    if (!ctx.inside_op(th.thread, t)) continue;
    if (found != nullptr) return "";
    found = &th;
  }
  return found == nullptr ? "" : ctx.enclosing_chain(found->thread, t);
}

// The host's waits in allocator retries (the runtime's wait spans named
// "allocator retry", around flushing the cache), sorted by start.
std::vector<Interval> retry_spans(const Context& ctx) {
  std::vector<Interval> out;
  for (const ThreadActivity& t : ctx.threads) {
    if (t.spans == nullptr) continue;
    const HostSpans& s = *t.spans;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s.kind[i] == SpanKind::wait && ctx.model.str(s.name[i]) == "allocator retry")
        out.push_back({s.start[i], s.end(i)});
    }
  }
  std::sort(out.begin(), out.end(), [](const Interval& a, const Interval& b) { return a.start < b.start; });
  return out;
}

// The retry span holding time t (a retry event is recorded inside its span).
const Interval* span_at(const std::vector<Interval>& spans, int64_t t) {
  auto k = std::upper_bound(spans.begin(), spans.end(), t, [](int64_t v, const Interval& i) { return v < i.start; });
  for (int n = 0; k != spans.begin() && n < 8; ++n) {
    --k;
    if (k->end >= t) return &*k;
  }
  return nullptr;
}

}  // namespace

void rule_memory(const Context& ctx, const AnalysisReport&, std::vector<Finding>& out) {
  const TraceModel& m = ctx.model;
  const AnalysisOptions& opt = ctx.options;
  const std::vector<Interval> retrying = retry_spans(ctx);
  for (const MemoryEvents& me : m.memory) {
    if (me.size() == 0) continue;
    const Device* dev = m.device(me.device);
    int64_t capacity = dev ? dev->memory_capacity : 0;
    size_t peak = 0;
    int64_t peak_reserved = 0;
    uint64_t retries = 0, ooms = 0;
    std::vector<TimeRange> ooms_at;
    std::vector<Interval> pressure;  // above the high-water mark, or retrying
    std::vector<Interval> retry_waits;
    for (size_t i = 0; i < me.size(); ++i) {
      if (me.allocated[i] > me.allocated[peak]) peak = i;
      peak_reserved = std::max(peak_reserved, me.reserved[i]);
      if (me.kind[i] == MemoryEventKind::retry) {
        ++retries;
        if (const Interval* r = span_at(retrying, me.time[i])) retry_waits.push_back(*r);
      }
      if (me.kind[i] == MemoryEventKind::oom) {
        ++ooms;
        ooms_at.push_back({me.time[i], me.time[i] + 1});
      }
    }
    // Time above the high-water fraction of capacity: allocated is constant
    // between events.
    int64_t high_ns = 0;
    std::vector<TimeRange> high;
    if (capacity > 0) {
      double limit = opt.memory_high_fraction * double(capacity);
      for (size_t i = 0; i + 1 < me.size(); ++i) {
        if (double(me.allocated[i]) < limit) continue;
        high_ns += me.time[i + 1] - me.time[i];
        pressure.push_back({me.time[i], me.time[i + 1]});
        if (!high.empty() && high.back().end == me.time[i]) high.back().end = me.time[i + 1];
        else high.push_back({me.time[i], me.time[i + 1]});
      }
    }
    // Replay up to the peak to know what was live there.
    struct Block {
      int64_t bytes;
      uint32_t callsite;
      int64_t time;
    };
    std::unordered_map<uint64_t, Block> live;
    for (size_t i = 0; i <= peak; ++i) {
      if (me.kind[i] == MemoryEventKind::alloc) live[me.address[i]] = {me.bytes[i], me.callsite[i], me.time[i]};
      if (me.kind[i] == MemoryEventKind::free) live.erase(me.address[i]);
    }
    std::map<std::string, std::pair<int64_t, uint64_t>> by_site;  // bytes, blocks
    for (const auto& [addr, b] : live) {
      std::pair<int64_t, uint64_t>& site = by_site[allocation_site(ctx, b.callsite, b.time)];
      site.first += b.bytes;
      ++site.second;
    }
    std::vector<std::pair<std::string, std::pair<int64_t, uint64_t>>> sites(by_site.begin(), by_site.end());
    std::sort(sites.begin(), sites.end(), [](const auto& a, const auto& b) { return a.second.first > b.second.first; });

    int64_t peak_bytes = me.allocated[peak];
    double fraction = capacity > 0 ? double(peak_bytes) / double(capacity) : 0;
    Finding f;
    f.rule = "memory";
    f.devices = {me.device};
    f.severity = ooms > 0                                              ? Severity::error
                 : retries > 0 || fraction >= opt.memory_high_fraction ? Severity::warning
                                                                       : Severity::info;
    std::string of_capacity =
        capacity > 0 ? fmt::format(" of {} ({})", format_bytes(capacity), format_percent(fraction)) : "";
    f.title = fmt::format("{}: peak {}{} at {}", device_label(ctx, me.device), format_bytes(peak_bytes), of_capacity,
                          format_duration(me.time[peak]));
    if (retries > 0 || ooms > 0) {
      f.title += fmt::format("; {} retr{}, {} out-of-memory", format_count(retries), retries == 1 ? "y" : "ies",
                             format_count(ooms));
    }
    // Memory costs no time by itself: the impact is the time spent under
    // pressure, above the high-water fraction of capacity or waiting in
    // allocator retries (fragmentation can force those well below it).
    int64_t retry_ns = IntervalSet(retry_waits).length();
    pressure.insert(pressure.end(), retry_waits.begin(), retry_waits.end());
    f.impact_ns = IntervalSet(std::move(pressure)).length();
    f.ranges.push_back({me.time[peak], me.time[peak] + 1});
    f.ranges.insert(f.ranges.end(), ooms_at.begin(), ooms_at.end());
    f.ranges.insert(f.ranges.end(), high.begin(), high.begin() + long(std::min<size_t>(high.size(), 10)));
    for (size_t k = 0; k < retry_waits.size() && k < 10; ++k)
      f.ranges.push_back({retry_waits[k].start, retry_waits[k].end});
    f.evidence.push_back({"peak allocated", fmt::format("{}{}", format_bytes(peak_bytes), of_capacity)});
    f.evidence.push_back({"peak reserved", format_bytes(peak_reserved)});
    if (me.reserved[peak] > 0) {
      f.evidence.push_back(
          {"fragmentation at the peak",
           fmt::format("{} reserved but not allocated ({})", format_bytes(me.reserved[peak] - peak_bytes),
                       format_percent(double(me.reserved[peak] - peak_bytes) / double(me.reserved[peak])))});
    }
    if (capacity > 0) {
      f.evidence.push_back({fmt::format("time above {} of capacity", format_percent(opt.memory_high_fraction)),
                            format_duration(high_ns)});
    }
    f.evidence.push_back({"retries (cache flushed to allocate)", format_count(retries)});
    if (retries > 0) f.evidence.push_back({"time in allocator retries", format_duration(retry_ns)});
    f.evidence.push_back({"out-of-memory", format_count(ooms)});
    for (size_t k = 0; k < sites.size() && k < 5; ++k) {
      const std::string& site = sites[k].first;
      f.evidence.push_back({fmt::format("live at peak: {}", site.empty() ? "unknown call site" : site),
                            fmt::format("{} in {} block{}", format_bytes(sites[k].second.first),
                                        format_count(sites[k].second.second), sites[k].second.second == 1 ? "" : "s")});
    }
    std::string top = sites.empty() ? "" : sites.front().first;
    if (f.severity == Severity::info) {
      f.suggestion = "no memory pressure";
    } else {
      f.suggestion = fmt::format(
          "lower the live memory at the peak{}: use memory-linear algorithms (fused attention instead of "
          "materialised scores), smaller batches or sequence lengths, or release buffers before the peak",
          top.empty() ? "" : fmt::format(" (most of it was allocated at {})", top));
    }
    out.push_back(std::move(f));
  }
}

}  // namespace loupe::prof::analysis
