// completeness: whether the trace holds the device work that the rules
// reading it (idle-gap, communication, transfer, steps) need. Each sign is
// read from the trace itself:
//  - events the recorder dropped or could not write (loupe's captures);
//  - host ops numbered one by one by the source (Kineto's External id) of
//    which the trace holds under half: sampled or cut after recording, and
//    the device work of the ops it lacks is missing with them;
//  - CUDA graph replays whose recorded operations cover under half of the
//    time from their first to their last: a replay's kernels run back to
//    back, so either the trace lacks some of them or the device waited
//    inside the graph, and the trace cannot tell which.
#include "loupe/prof/completeness.h"

#include <fmt/format.h>

#include <charconv>
#include <unordered_map>

#include "analysis/context.h"
#include "analysis/intervals.h"
#include "analysis/rules.h"
#include "loupe/prof/units.h"

namespace loupe::prof {

namespace {

std::optional<int64_t> meta_number(const std::map<std::string, std::string>& meta, const char* key) {
  auto it = meta.find(key);
  if (it == meta.end()) return std::nullopt;
  int64_t v = 0;
  const std::string& s = it->second;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

constexpr const char* kUntrustedDeviceWork =
    "device idle and its causes, exposed communication, the idle that transfers caused and the steps' device split";

}  // namespace

std::optional<HostOpNumbering> host_op_numbering(const std::map<std::string, std::string>& meta) {
  std::optional<int64_t> held = meta_number(meta, kMetaHostOpIds), numbered = meta_number(meta, kMetaHostOpIdSpan);
  if (!held || !numbered || *numbered == 0 || *held > *numbered) return std::nullopt;
  return HostOpNumbering{*held, *numbered};
}

std::vector<Incompleteness> incomplete_by_meta(const TraceInfo& info) {
  std::vector<Incompleteness> out;
  if (info.dropped_events > 0 || info.lost_events > 0) {
    out.push_back({fmt::format("the recorder dropped {} events (a buffer full) and lost {} (a write error)",
                               format_count(info.dropped_events), format_count(info.lost_events)),
                   "every figure of the threads and devices that lost events: `loupe info` names the threads"});
  }
  if (std::optional<HostOpNumbering> n = host_op_numbering(info.meta); n && n->sparse()) {
    out.push_back(
        {fmt::format("host ops: the trace holds {} of the {} its source numbered ({}): it was sampled or "
                     "cut after recording, and whatever device work the ops it lacks launched is missing with them",
                     format_count(uint64_t(n->held)), format_count(uint64_t(n->numbered)), format_percent(n->share())),
         kUntrustedDeviceWork});
  }
  return out;
}

namespace analysis {

namespace {

bool is_graph_launch(std::string_view name) { return name.find("GraphLaunch") != std::string_view::npos; }

// One replay of a CUDA graph: its recorded operations.
struct Replay {
  int64_t first = INT64_MAX, last = INT64_MIN;
  uint32_t device = 0;
  std::vector<Interval> ops;
};

std::unordered_map<uint64_t, Replay> graph_replays(const Context& ctx) {
  const TraceModel& m = ctx.model;
  std::unordered_map<uint64_t, Replay> replays;
  for (const Launches& l : m.launches) {
    for (size_t i = 0; i < l.size(); ++i) {
      if (l.correlation[i] != 0 && is_graph_launch(m.str(l.name[i]))) replays[l.correlation[i]];
    }
  }
  if (replays.empty()) return replays;
  for (const DeviceOps& s : m.device_ops) {
    for (size_t i = 0; i < s.size(); ++i) {
      auto it = replays.find(s.correlation[i]);
      if (it == replays.end() || s.kind[i] == DeviceOpKind::sync) continue;
      Replay& r = it->second;
      r.first = std::min(r.first, s.start[i]);
      r.last = std::max(r.last, s.end(i));
      r.device = s.device;
      r.ops.push_back({s.start[i], s.end(i)});
    }
  }
  return replays;
}

// Replays mostly idle between their first and last recorded operation,
// when the idle inside them is at least this share of the window: less
// cannot change a verdict.
constexpr double kReplayIdleShare = 0.01;

std::optional<Incompleteness> idle_graph_replays(const Context& ctx) {
  std::unordered_map<uint64_t, Replay> replays = graph_replays(ctx);
  size_t unrecorded = 0, idle_replays = 0;
  std::map<uint32_t, std::vector<Interval>> spans;  // by device
  for (auto& [corr, r] : replays) {
    if (r.ops.empty()) {
      ++unrecorded;
      continue;
    }
    IntervalSet own(std::move(r.ops));
    if (2 * own.length() >= r.last - r.first) continue;
    ++idle_replays;
    spans[r.device].push_back({r.first, r.last});
  }
  int64_t idle = 0;
  for (const auto& [dev, list] : spans) {
    const DeviceActivity* d = ctx.device(dev);
    if (d == nullptr) continue;
    IntervalSet inside(list);
    for (const Interval& w : inside.intervals()) idle += (w.end - w.start) - d->busy.covered(w.start, w.end);
  }
  double window = double(std::max<int64_t>(ctx.window(), 1));
  if (unrecorded == 0 && double(idle) < kReplayIdleShare * window) return std::nullopt;
  std::string missing = "CUDA graph replays";
  if (idle_replays > 0) {
    missing += fmt::format(
        " mostly idle between their first and last recorded operation: {} of {} ({} of device "
        "idle inside them, {} of the window); the trace lacks some of their kernels, or the "
        "device waited inside the graph, and cannot tell which",
        format_count(idle_replays), format_count(replays.size()), format_duration(idle),
        format_percent(double(idle) / window));
  }
  if (unrecorded > 0) {
    missing += fmt::format("{} with no operation recorded at all: {} of {}", idle_replays > 0 ? ";" : "",
                           format_count(unrecorded), format_count(replays.size()));
  }
  return Incompleteness{missing, "device idle inside graph replays and its causes, and what overlaps it"};
}

}  // namespace

std::vector<Incompleteness> check_completeness(const Context& ctx) {
  std::vector<Incompleteness> out = incomplete_by_meta(ctx.model.info);
  if (std::optional<Incompleteness> g = idle_graph_replays(ctx)) out.push_back(std::move(*g));
  return out;
}

}  // namespace analysis

}  // namespace loupe::prof
