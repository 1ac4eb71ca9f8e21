// memory: allocated and reserved memory per device, the peak against
// capacity, pressure signals (retries, out-of-memory), and what was live at
// the peak, by call site.
#include <fmt/format.h>

#include <algorithm>

#include "analysis/memory_blocks.h"
#include "analysis/memory_live.h"
#include "analysis/memory_oom.h"
#include "analysis/rules.h"
#include "loupe/prof/units.h"

namespace loupe::prof::analysis {

namespace {

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

// One device's memory, as its events tell it.
struct DeviceMemory {
  int64_t capacity = 0;
  size_t peak = 0;  // the event with the most allocated
  int64_t peak_reserved = 0;
  uint64_t retries = 0, ooms = 0;
  size_t first_oom = 0;  // the first out-of-memory event, when ooms > 0
  std::vector<TimeRange> ooms_at;
  std::vector<Interval> retry_waits;
  int64_t high_ns = 0;             // time above the high-water fraction of capacity
  std::vector<TimeRange> high;     // that time, its adjacent stretches merged
  std::vector<Interval> pressure;  // that time, one interval per event (retry waits join it later)
  LiveBlocks at_peak;              // the trace's blocks live at the peak
  // Bytes the allocator held before the first event (the running total it
  // reports, less that event's own bytes), and how much of it was still
  // held at the peak: blocks the trace never shows, typically a model's
  // weights and its optimizer's state allocated before profiling began.
  int64_t before_trace = 0, before_trace_at_peak = 0;
  bool totals_from_trace_start = false;  // the device is in meta's kMetaTotalsFromTraceStart
  bool sampled = false;                  // its events are samples at step ends (kMetaMemorySampled)
  bool one_moment = false;               // its events are one moment, a memory profile (kMetaMemoryOneMoment)
};

// The peak, the reserved high, the retries (with the waits holding them)
// and the out-of-memory events.
void find_peak_retries_and_ooms(const MemoryEvents& me, const std::vector<Interval>& retrying, DeviceMemory& dm) {
  for (size_t i = 0; i < me.size(); ++i) {
    if (me.allocated[i] > me.allocated[dm.peak]) dm.peak = i;
    dm.peak_reserved = std::max(dm.peak_reserved, me.reserved[i]);
    if (me.kind[i] == MemoryEventKind::retry) {
      ++dm.retries;
      if (const Interval* r = span_at(retrying, me.time[i])) dm.retry_waits.push_back(*r);
    }
    if (me.kind[i] == MemoryEventKind::oom) {
      if (dm.ooms++ == 0) dm.first_oom = i;
      dm.ooms_at.push_back({me.time[i], me.time[i] + 1});
    }
  }
}

// Time above the high-water fraction of capacity: allocated is constant
// between events.
void find_high_water(const MemoryEvents& me, double high_fraction, DeviceMemory& dm) {
  if (dm.capacity <= 0) return;
  double limit = high_fraction * double(dm.capacity);
  for (size_t i = 0; i + 1 < me.size(); ++i) {
    if (double(me.allocated[i]) < limit) continue;
    dm.high_ns += me.time[i + 1] - me.time[i];
    dm.pressure.push_back({me.time[i], me.time[i + 1]});
    if (!dm.high.empty() && dm.high.back().end == me.time[i]) dm.high.back().end = me.time[i + 1];
    else dm.high.push_back({me.time[i], me.time[i + 1]});
  }
}

// What was live at the peak, and how much of what was held before the trace
// was still held then.
void live_at_peak(const Context& ctx, const MemoryEvents& me, DeviceMemory& dm) {
  LiveBlocks live = live_after(ctx, me, dm.peak);
  dm.before_trace = allocated_before(me);
  dm.before_trace_at_peak = std::max<int64_t>(0, dm.before_trace - live.freed_from_before);
  dm.at_peak = std::move(live);
}

// Memory costs no time by itself: the impact is the time spent under
// pressure, above the high-water fraction of capacity or waiting in
// allocator retries (fragmentation can force those well below it).
int64_t pressure_ns(std::vector<Interval> pressure, const std::vector<Interval>& retry_waits) {
  pressure.insert(pressure.end(), retry_waits.begin(), retry_waits.end());
  return IntervalSet(std::move(pressure)).length();
}

// The peak, each out-of-memory, and the first ten stretches above the
// high-water mark and retry waits.
void add_ranges(Finding& f, const MemoryEvents& me, const DeviceMemory& dm) {
  f.ranges.push_back({me.time[dm.peak], me.time[dm.peak] + 1});
  f.ranges.insert(f.ranges.end(), dm.ooms_at.begin(), dm.ooms_at.end());
  f.ranges.insert(f.ranges.end(), dm.high.begin(), dm.high.begin() + long(std::min<size_t>(dm.high.size(), 10)));
  for (size_t k = 0; k < dm.retry_waits.size() && k < 10; ++k)
    f.ranges.push_back({dm.retry_waits[k].start, dm.retry_waits[k].end});
}

// Stated even when 0, so that a reader knows the peak's blocks are all in
// the trace rather than wondering whether anything was missed.
std::string before_trace_text(const DeviceMemory& dm, int64_t peak_bytes) {
  constexpr std::string_view kHow = "the first memory event's running total less its own bytes";
  if (dm.totals_from_trace_start) {
    return "cannot tell from this trace: its running total counts only what was allocated while it recorded (PyTorch's "
           "host memory), so blocks held from before, such as the parameters, are in no total";
  }
  if (dm.before_trace <= 0) return fmt::format("0 B ({}): every block live at the peak is in the trace", kHow);
  return fmt::format("{} ({}); {} of it still held at the peak ({} of the peak), in blocks the trace does not show",
                     format_bytes(dm.before_trace), kHow, format_bytes(dm.before_trace_at_peak),
                     format_percent(double(dm.before_trace_at_peak) / double(std::max<int64_t>(1, peak_bytes))));
}

void add_evidence(Finding& f, const Context& ctx, const MemoryEvents& me, const DeviceMemory& dm,
                  const std::string& of_capacity) {
  const AnalysisOptions& opt = ctx.options;
  int64_t peak_bytes = me.allocated[dm.peak];
  int64_t retry_ns = IntervalSet(dm.retry_waits).length();
  f.evidence.push_back({"peak allocated", fmt::format("{}{}", format_bytes(peak_bytes), of_capacity)});
  if (dm.sampled) {
    f.evidence.push_back({"sampled",
                          "what was live at step ends only (the framework tells of no allocation): the "
                          "peak within a step, and what a step allocated and freed, are not in the trace"});
  }
  if (dm.one_moment) {
    f.evidence.push_back({"one moment",
                          "a memory profile: what was live when it was taken, with no allocation or "
                          "free; the run's own peak, before or after, is not in it"});
  }
  // An allocator reserves at least what it hands out: a reserved total of
  // 0 beside allocated memory is one the source did not record.
  f.evidence.push_back({"peak reserved", dm.peak_reserved > 0
                                             ? format_bytes(dm.peak_reserved)
                                             : "cannot tell from this trace: it records no reserved total"});
  if (me.reserved[dm.peak] > 0) {
    f.evidence.push_back(
        {"fragmentation at the peak",
         fmt::format("{} reserved but not allocated ({})", format_bytes(me.reserved[dm.peak] - peak_bytes),
                     format_percent(double(me.reserved[dm.peak] - peak_bytes) / double(me.reserved[dm.peak])))});
  }
  if (dm.capacity > 0) {
    f.evidence.push_back({fmt::format("time above {} of capacity", format_percent(opt.memory_high_fraction)),
                          format_duration(dm.high_ns)});
  }
  f.evidence.push_back({"retries (cache flushed to allocate)", format_count(dm.retries)});
  if (dm.retries > 0) f.evidence.push_back({"time in allocator retries", format_duration(retry_ns)});
  f.evidence.push_back({"out-of-memory", format_count(dm.ooms)});
  f.evidence.push_back({"allocated before the trace began", before_trace_text(dm, peak_bytes)});
  add_live_categories(f, "peak", dm.at_peak);
  add_live_sites(f, "peak", dm.at_peak.sites);
}

// Where the largest share of the peak came from: a call site, or the
// memory held from before the trace began.
std::string largest_share(const DeviceMemory& dm) {
  int64_t top = dm.at_peak.sites.empty() ? 0 : dm.at_peak.sites.front().second.first;
  if (dm.before_trace_at_peak > top) {
    return fmt::format(" (the largest share, {}, was held before the trace began)",
                       format_bytes(dm.before_trace_at_peak));
  }
  if (dm.at_peak.sites.empty() || dm.at_peak.sites.front().first.empty()) return "";
  return fmt::format(" (most of it was allocated at {})", dm.at_peak.sites.front().first);
}

std::string memory_suggestion(Severity severity, const DeviceMemory& dm) {
  if (severity == Severity::info && dm.capacity <= 0) {
    return "no allocator retry or out-of-memory; the trace gives no capacity, so how near the peak came to it cannot "
           "be told from this trace";
  }
  if (severity == Severity::info) return "no memory pressure";
  return fmt::format(
      "lower the live memory at the peak{}: use memory-linear algorithms (fused attention instead of "
      "materialised scores), smaller batches or sequence lengths, or release buffers before the peak",
      largest_share(dm));
}

Finding memory_finding(const Context& ctx, const MemoryEvents& me, DeviceMemory dm) {
  const AnalysisOptions& opt = ctx.options;
  int64_t peak_bytes = me.allocated[dm.peak];
  double fraction = dm.capacity > 0 ? double(peak_bytes) / double(dm.capacity) : 0;
  Finding f;
  f.rule = "memory";
  f.devices = {me.device};
  f.severity = dm.ooms > 0                                              ? Severity::error
               : dm.retries > 0 || fraction >= opt.memory_high_fraction ? Severity::warning
                                                                        : Severity::info;
  std::string of_capacity =
      dm.capacity > 0 ? fmt::format(" of {} ({})", format_bytes(dm.capacity), format_percent(fraction)) : "";
  f.title = dm.one_moment ? fmt::format("{}: {}{} live when the memory profile was taken", device_label(ctx, me.device),
                                        format_bytes(peak_bytes), of_capacity)
                          : fmt::format("{}: peak {}{}{} {}", device_label(ctx, me.device),
                                        dm.sampled ? "of the step-end samples " : "", format_bytes(peak_bytes),
                                        of_capacity, ctx.time_text(me.time[dm.peak]));
  if (dm.retries > 0 || dm.ooms > 0) {
    f.title += fmt::format("; {} retr{}, {} out-of-memory", format_count(dm.retries), dm.retries == 1 ? "y" : "ies",
                           format_count(dm.ooms));
  }
  f.impact_ns = pressure_ns(std::move(dm.pressure), dm.retry_waits);
  add_ranges(f, me, dm);
  add_evidence(f, ctx, me, dm, of_capacity);
  f.suggestion = memory_suggestion(f.severity, dm);
  if (dm.ooms > 0) add_oom_post_mortem(f, ctx, me, dm.first_oom, dm.capacity, dm.at_peak.sites);
  return f;
}

}  // namespace

void rule_memory(const Context& ctx, const AnalysisReport&, std::vector<Finding>& out) {
  const TraceModel& m = ctx.model;
  const std::vector<Interval> retrying = retry_spans(ctx);
  for (const MemoryEvents& me : m.memory) {
    if (me.size() == 0) continue;
    const Device* dev = m.device(me.device);
    DeviceMemory dm;
    dm.capacity = dev ? dev->memory_capacity : 0;
    dm.totals_from_trace_start = meta_lists_device(m, kMetaTotalsFromTraceStart, me.device);
    dm.sampled = meta_lists_device(m, kMetaMemorySampled, me.device);
    dm.one_moment = meta_lists_device(m, kMetaMemoryOneMoment, me.device);
    find_peak_retries_and_ooms(me, retrying, dm);
    find_high_water(me, ctx.options.memory_high_fraction, dm);
    live_at_peak(ctx, me, dm);
    out.push_back(memory_finding(ctx, me, std::move(dm)));
  }
}

}  // namespace loupe::prof::analysis
