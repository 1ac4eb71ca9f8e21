// transfer: host-device copies by call site, and the habits that stall
// every step (synchronous reads back, uploads from pageable memory).
//
// A call site is the line that made the copy when the trace records one,
// else the chain of ops and annotations around the copy on its thread
// (PyTorch traces: `aten::item > aten::_local_scalar_dense`). A habit is
// the flagged call sites of one kind and direction under one outermost
// range or one user function (the chain's first name): an input pipeline's
// small reads from a dozen ops are one thing to fix, reported once. The idle a
// copy causes runs from the copy's end, or from the end of the work queued
// before the call returned, to the first operation the host launched after
// the call returned, and counts only when the copy blocked the host (its
// call returned once the copy was done): a copy queued ahead lost the
// device nothing, and while work queued before the call returned was still
// to run, the device was not waiting on the host (idle then is the
// device's own wait, on an event or another stream).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "analysis/rules.h"
#include "loupe/prof/units.h"

namespace loupe::prof::analysis {

namespace {

// The copies of one call site in one direction, or of a habit (its call
// sites added together).
struct Group {
  std::string site;  // file:line, or the enclosing chain; "" when unknown
  CopyKind direction = CopyKind::none;
  uint64_t count = 0, sync = 0, pageable = 0;
  std::vector<int64_t> steps;  // numbers of the steps it happened in
  int64_t bytes = 0, host_ns = 0;
  int64_t copy_bytes = 0, copy_ns = 0;                // over transfers whose device copy is known
  std::map<uint32_t, std::vector<Interval>> windows;  // per device: from the transfer to the next op
  bool device_traced = false;                         // some transfer's device has operations in the trace
  std::vector<TimeRange> ranges;
  std::vector<uint32_t> threads;

  void add(const Group& o) {
    count += o.count;
    sync += o.sync;
    pageable += o.pageable;
    steps.insert(steps.end(), o.steps.begin(), o.steps.end());
    bytes += o.bytes;
    host_ns += o.host_ns;
    copy_bytes += o.copy_bytes;
    copy_ns += o.copy_ns;
    for (const auto& [dev, w] : o.windows) windows[dev].insert(windows[dev].end(), w.begin(), w.end());
    device_traced |= o.device_traced;
    ranges.insert(ranges.end(), o.ranges.begin(), o.ranges.end());
    for (uint32_t t : o.threads) {
      if (std::find(threads.begin(), threads.end(), t) == threads.end()) threads.push_back(t);
    }
  }
};

// What a call site's copies mostly are ("mostly": at least half; the
// title then counts only those).
enum class Habit { none, sync_read, pageable_upload };

Habit habit_of(const Group& g) {
  if (g.direction == CopyKind::device_to_host && 2 * g.sync >= g.count) return Habit::sync_read;
  if (g.direction == CopyKind::host_to_device && 2 * g.pageable >= g.count) return Habit::pageable_upload;
  return Habit::none;
}

// The outermost range or user function of a call site: the first name of
// its chain (a file:line is its own).
std::string outermost(const std::string& site) { return site.substr(0, site.find(" > ")); }

// The device idle a group's copies caused: over the union of their windows
// on each device, the time no operation ran.
int64_t caused_idle(const Context& ctx, const Group& g) {
  int64_t idle = 0;
  for (const auto& [dev, windows] : g.windows) {
    const DeviceActivity* d = ctx.device(dev);
    IntervalSet caused(windows);
    for (const Interval& w : caused.intervals()) idle += (w.end - w.start) - d->busy.covered(w.start, w.end);
  }
  return idle;
}

// The number of a step under way at time t (on any thread), if any. Steps
// come in time order and overlap only across threads, so the one holding t
// is among the last few that started by then.
std::optional<int64_t> step_at(const Context& ctx, int64_t t) {
  auto k = std::upper_bound(ctx.steps.begin(), ctx.steps.end(), t,
                            [](int64_t v, const StepRange& s) { return v < s.start; });
  for (int n = 0; k != ctx.steps.begin() && n < 8; ++n) {
    --k;
    if (k->end > t) return k->number;
  }
  return std::nullopt;
}

// The device idle window a transfer caused: from the end of its copy, or
// of the last op queued before the call returned that runs after the copy,
// to the first operation launched after the call returned (or whose launch
// is not recorded), when the copy blocked the host (the call was still
// running when the device began the copy, as a read back or an upload from
// pageable memory is; a copy queued ahead of time was not; without the
// device copy, the transfer's own synchronous flag says). Busy time inside
// the window (ops of other streams) is taken out by the caller. Empty
// otherwise.
constexpr int kMaxQueuedOpsAfterCopy = 4096;

std::optional<Interval> caused_window(const Context& ctx, const DeviceActivity& d, const Transfers& t, size_t i) {
  int64_t copy_end = t.end(i);
  bool blocking = t.synchronous[i];
  if (const EventRef* op = ctx.op_of(t.correlation[i])) {
    const DeviceOps& ops = ctx.model.device_ops[op->track];
    copy_end = ops.end(op->index);
    blocking = t.end(i) > ops.start[op->index];
  }
  if (!blocking) return std::nullopt;
  // The device runs what was queued before the call returned, then waits
  // for the first op launched after it: the idle from the end of the queued
  // work until then (busy time taken out by the caller) is the host's
  // block. Idle before a queued op starts is the device's own wait (an
  // event, another stream), which the host's block did not cause. A
  // bounded search keeps a trace with no later launch from costing a scan
  // of everything after.
  const DeviceOps* stream = nullptr;
  size_t k = 0;
  int64_t t_from = copy_end, queued_end = copy_end;
  for (int tries = 0; tries < kMaxQueuedOpsAfterCopy; ++tries) {
    OpAt next = first_op_from(d, t_from);
    if (next.stream == nullptr) return std::nullopt;  // nothing after it: the end of the device's work
    const EventRef* launch = ctx.launch_of(next.stream->correlation[next.index]);
    if (launch == nullptr || ctx.model.launches[launch->track].start[launch->index] >= t.end(i)) {
      stream = next.stream;
      k = next.index;
      break;
    }
    queued_end = std::max(queued_end, next.stream->end(next.index));
    t_from = next.stream->start[next.index] + 1;
  }
  if (stream == nullptr) return std::nullopt;
  int64_t from = std::max(queued_end, d.window_start), to = std::min(stream->start[k], d.window_end);
  if (to <= from) return std::nullopt;
  return Interval{from, to};
}

// An upload from pageable memory holds the host for as long as the driver
// stages the data (CUDA copies pageable memory into its own pinned buffer
// before the call returns, as loupe's runtime does), whenever the device
// then starts the copy: while the call runs, the thread queues nothing,
// and device idle inside the call is the upload's.
std::optional<Interval> staging_window(const DeviceActivity& d, const Transfers& t, size_t i) {
  if (t.direction[i] != CopyKind::host_to_device || t.host_memory[i] != HostMemory::pageable) return std::nullopt;
  const int64_t from = std::max(t.start[i], d.window_start), to = std::min(t.end(i), d.window_end);
  if (to <= from) return std::nullopt;
  return Interval{from, to};
}

std::string times(uint64_t n) { return fmt::format("{} time{}", format_count(n), n == 1 ? "" : "s"); }

// How many of a call site's copies were of the kind the title names: a
// site is reported when at least half are, and the title must not claim
// the rest.
std::string times_of(uint64_t n, uint64_t count) {
  return n == count ? times(count) : fmt::format("{} of {} times", format_count(n), format_count(count));
}

// The title and the suggestion of a flagged group: a habit of synchronous
// reads, or of uploads from pageable memory.
void title_and_advice(Finding& f, const Group& g, bool sync_read, const std::string& where,
                      const std::string& idle_after) {
  if (sync_read) {
    f.title =
        fmt::format("synchronous device-to-host read at {}: {}, {}", where, times_of(g.sync, g.count), idle_after);
    f.suggestion =
        "keep the value on the device and read it every N steps (accumulate metrics on the device); if it must "
        "be read each step, copy it asynchronously into pinned memory and read it one step later";
  } else {
    f.title =
        fmt::format("upload from pageable host memory at {}: {}, {}", where, times_of(g.pageable, g.count), idle_after);
    f.suggestion =
        "upload from pinned (page-locked) host memory with an asynchronous copy on a second stream, and prepare "
        "the next batch one step ahead (double buffering)";
  }
}

// Every copy grouped by call site and direction.
std::map<std::pair<std::string, CopyKind>, Group> copies_by_site(const Context& ctx) {
  const TraceModel& m = ctx.model;
  std::map<std::pair<std::string, CopyKind>, Group> groups;
  for (const Transfers& t : m.transfers) {
    for (size_t i = 0; i < t.size(); ++i) {
      std::string site =
          t.callsite[i] != 0 ? ctx.callsite_text(t.callsite[i]) : ctx.enclosing_chain(t.thread, t.start[i]);
      Group& g = groups[{site, t.direction[i]}];
      g.site = site;
      g.direction = t.direction[i];
      ++g.count;
      g.sync += t.synchronous[i];
      g.pageable += t.host_memory[i] == HostMemory::pageable;
      g.bytes += t.bytes[i];
      if (auto step = step_at(ctx, t.start[i])) g.steps.push_back(*step);
      g.host_ns += t.dur[i];
      if (const EventRef* op = ctx.op_of(t.correlation[i])) {
        g.copy_bytes += t.bytes[i];
        g.copy_ns += m.device_ops[op->track].dur[op->index];
      }
      if (const DeviceActivity* d = ctx.device(t.device[i])) {
        g.device_traced = true;
        if (std::optional<Interval> w = caused_window(ctx, *d, t, i)) g.windows[t.device[i]].push_back(*w);
        if (std::optional<Interval> w = staging_window(*d, t, i)) g.windows[t.device[i]].push_back(*w);
      }
      g.ranges.push_back({t.start[i], t.end(i)});
      if (std::find(g.threads.begin(), g.threads.end(), t.thread) == g.threads.end()) g.threads.push_back(t.thread);
    }
  }
  return groups;
}

// A habit: the call sites of one kind and direction under one outermost
// name, added together.
struct HabitGroup {
  Habit habit = Habit::none;
  Group total;
  std::vector<const Group*> sites;
};

std::vector<HabitGroup> habits_of(const std::map<std::pair<std::string, CopyKind>, Group>& sites) {
  std::map<std::tuple<std::string, CopyKind, Habit>, HabitGroup> habits;
  for (const auto& [key, g] : sites) {
    Habit h = habit_of(g);
    if (h == Habit::none) continue;
    HabitGroup& hg = habits[{outermost(g.site), g.direction, h}];
    hg.habit = h;
    hg.total.site = hg.sites.empty() ? g.site : outermost(g.site);
    hg.total.direction = g.direction;
    hg.total.add(g);
    hg.sites.push_back(&g);
  }
  std::vector<HabitGroup> out;
  out.reserve(habits.size());
  for (auto& [key, hg] : habits) out.push_back(std::move(hg));
  return out;
}

// Recurring every step: in enough of the steps, and in more than one (one
// step cannot show recurrence), not merely as many times as there are
// steps (a dataset uploaded before the loop is not a per-step copy).
// Without steps, "every step" cannot be told: a habit is reported once it
// recurs enough, as information, and says so.
bool recurs(const Context& ctx, const Group& g, size_t in_steps) {
  if (ctx.distinct_steps == 0) return g.count >= ctx.options.recurring_without_steps;
  return in_steps >= 2 && double(in_steps) >= ctx.options.recurring_per_step * double(ctx.distinct_steps);
}

// The call sites of a habit of more than one, the costliest first, each
// with its count and the idle it caused alone.
void site_evidence(const Context& ctx, const HabitGroup& hg, Finding& f) {
  constexpr size_t kShownSites = 8;
  std::vector<std::pair<int64_t, const Group*>> by_cost;
  for (const Group* g : hg.sites) by_cost.emplace_back(caused_idle(ctx, *g), g);
  std::stable_sort(by_cost.begin(), by_cost.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second->count > b.second->count;
  });
  for (size_t i = 0; i < std::min(by_cost.size(), kShownSites); ++i) {
    const auto& [idle, g] = by_cost[i];
    f.evidence.push_back({"call site", fmt::format("{}: {}, device idle {}", g->site.empty() ? "unknown" : g->site,
                                                   times(g->count), format_duration(idle))});
  }
  if (by_cost.size() > kShownSites) {
    f.evidence.push_back({"call site", fmt::format("{} more", format_count(by_cost.size() - kShownSites))});
  }
}

std::string achieved_bandwidth(const TraceModel& m, const Group& g, const std::vector<uint32_t>& devices) {
  int64_t bw_bytes = g.copy_ns > 0 ? g.copy_bytes : g.bytes, bw_ns = g.copy_ns > 0 ? g.copy_ns : g.host_ns;
  if (bw_ns <= 0) return "";
  double achieved = double(bw_bytes) / (double(bw_ns) * 1e-9);
  std::string vs;
  for (uint32_t dev : devices) {
    const Device* d = m.device(dev);
    if (d && d->copy_bandwidth > 0) vs = fmt::format(" of {} nominal", format_byte_rate(double(d->copy_bandwidth)));
  }
  return fmt::format("{}{} ({})", format_byte_rate(achieved), vs,
                     g.copy_ns > 0 ? "device copy time" : "host call time");
}

// A habit's figures: how often, how much, how blocking, what it cost.
void figures_evidence(const Context& ctx, const Group& g, size_t in_steps, const std::string& idle,
                      const std::vector<uint32_t>& devices, Finding& f) {
  const bool has_steps = ctx.distinct_steps > 0;
  f.evidence.push_back({"direction", std::string(name_of(g.direction))});
  if (has_steps) {
    f.evidence.push_back(
        {"count", fmt::format("{} ({:.2f} per step)", format_count(g.count), ctx.per_step(double(g.count)))});
    f.evidence.push_back(
        {"steps with one", fmt::format("{} of {}", format_count(in_steps), format_count(ctx.distinct_steps))});
  } else {
    f.evidence.push_back({"count", fmt::format("{} (the trace has no steps: whether they recur in each step cannot be "
                                               "told)",
                                               format_count(g.count))});
  }
  f.evidence.push_back({"bytes", fmt::format("{} ({} each on average)", format_bytes(g.bytes),
                                             format_bytes(g.bytes / int64_t(std::max<uint64_t>(g.count, 1))))});
  f.evidence.push_back({"synchronous", fmt::format("{} of {}", format_count(g.sync), format_count(g.count))});
  f.evidence.push_back(
      {"from pageable memory", fmt::format("{} of {}", format_count(g.pageable), format_count(g.count))});
  f.evidence.push_back({"host time in the calls", format_duration(g.host_ns)});
  f.evidence.push_back({"device idle caused", idle});
  if (std::string bw = achieved_bandwidth(ctx.model, g, devices); !bw.empty()) {
    f.evidence.push_back({"achieved bandwidth", bw});
  }
}

void report_habit(const Context& ctx, HabitGroup& hg, std::vector<Finding>& out) {
  Group& g = hg.total;
  std::sort(g.steps.begin(), g.steps.end());
  size_t in_steps = size_t(std::unique(g.steps.begin(), g.steps.end()) - g.steps.begin());
  if (!recurs(ctx, g, in_steps)) return;
  const bool has_steps = ctx.distinct_steps > 0;
  int64_t idle_ns = caused_idle(ctx, g);
  std::vector<uint32_t> devices;
  for (const auto& [dev, windows] : g.windows) devices.push_back(dev);
  std::string where = g.site.empty() ? "an unknown call site" : g.site;
  if (hg.sites.size() > 1) where += fmt::format(" ({} call sites)", format_count(hg.sites.size()));
  std::string when = has_steps ? " every step" : "";
  // Without operations on the device (JAX on its CPU backend records none)
  // there is no device time to measure idle against.
  std::string idle = g.device_traced ? format_duration(idle_ns) : "cannot tell: no operations of its device are traced";
  // A pageable upload's cost begins inside the call, while it stages.
  const bool stages = g.direction == CopyKind::host_to_device && g.pageable > 0;
  const std::string_view when_idle = stages ? "during and after them" : "after them";
  std::string idle_after = g.device_traced
                               ? fmt::format("device idle {} {}", idle, when_idle)
                               : fmt::format("device idle {} cannot be told (no device operations traced)", when_idle);
  Finding f;
  f.rule = "transfer";
  f.devices = devices;
  f.threads = g.threads;
  f.impact_ns = idle_ns;
  title_and_advice(f, g, hg.habit == Habit::sync_read, where + when, idle_after);
  if (hg.sites.size() == 1) {
    f.evidence.push_back({"call site", where});
  } else {
    f.evidence.push_back({"habit", fmt::format("{} call sites under {}", format_count(hg.sites.size()),
                                               g.site.empty() ? "nothing recorded" : g.site)});
    site_evidence(ctx, hg, f);
  }
  figures_evidence(ctx, g, in_steps, idle, devices, f);
  // The fix, for both habits: the host no longer waits for the copy.
  f.fix.async_copies_within = g.ranges;
  f.fix.within_threads = g.threads;
  // The viewer highlights the largest few.
  std::sort(g.ranges.begin(), g.ranges.end(),
            [](const TimeRange& a, const TimeRange& b) { return a.end - a.start > b.end - b.start; });
  g.ranges.resize(std::min<size_t>(g.ranges.size(), 20));
  f.ranges = std::move(g.ranges);
  // A habit of every step is a problem by what it costs the device; one
  // that cannot be told to recur is information.
  if (has_steps) {
    grade_by_share(ctx, ctx.options.transfer_warning_fraction, f);
  } else {
    f.severity = Severity::info;
  }
  out.push_back(std::move(f));
}

}  // namespace

void rule_transfer(const Context& ctx, const AnalysisReport&, std::vector<Finding>& out) {
  std::map<std::pair<std::string, CopyKind>, Group> sites = copies_by_site(ctx);
  for (HabitGroup& hg : habits_of(sites)) report_habit(ctx, hg, out);
}

}  // namespace loupe::prof::analysis
