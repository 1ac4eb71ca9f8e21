// The critical path (docs/analyses.md, "Critical path"): walked back from
// the last event of the run along the dependency that bound each event,
// the one whose time came last. A device op waited for the op before it on
// its stream, for its launch, or for the op its stream was made to wait
// for; a host thread's work followed its previous wait, which ended when
// the device work it waited for did. The path is contiguous: every
// nanosecond from its start to its end is on it once, so a step's share
// of it adds up to the step's time.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <string>

#include "analysis/dependency_graph.h"
#include "analysis/rules.h"
#include "loupe/prof/units.h"

namespace loupe::prof {

std::string_view name_of(PathCategory c) {
  static constexpr std::array<std::string_view, kPathCategories> names = {
      "host compute", "data loading", "launch overhead", "kernels", "copies", "communication", "synchronisation"};
  return size_t(c) < kPathCategories ? names[size_t(c)] : "?";
}

namespace analysis {

namespace {

PathCategory op_category(const Context& ctx, const DeviceOps& ops, size_t i) {
  switch (ops.kind[i]) {
    case DeviceOpKind::kernel:
      return is_collective_kernel(ctx.model.str(ops.name[i])) ? PathCategory::communication : PathCategory::kernel;
    case DeviceOpKind::memcpy:
    case DeviceOpKind::memset: return PathCategory::copy;
    case DeviceOpKind::sync: return PathCategory::synchronisation;
    case DeviceOpKind::other: return PathCategory::kernel;
  }
  return PathCategory::kernel;
}

// The walk's position: the end of a device op, or a time on a host thread.
struct Position {
  enum Kind : uint8_t { device, host, done } kind = done;
  OpRef op;
  uint32_t thread = 0;
};

class PathWalk {
 public:
  explicit PathWalk(const DependencyGraph& graph) : g_(graph) {}

  CriticalPath run() {
    CriticalPath path;
    Position at = last_event();
    // Each step moves to an earlier wait or op; a damaged trace whose
    // dependencies form a cycle stops at this bound, saying so.
    uint64_t bound = 4 * (g_.ctx.model.total_events() + 8);
    for (uint64_t n = 0; at.kind != Position::done; ++n) {
      if (n == bound) {
        path.missing.push_back("the trace's dependencies form a cycle (a damaged trace): the path stops there");
        break;
      }
      at = step_back(at);
    }
    std::reverse(segments_.begin(), segments_.end());
    path.segments = std::move(segments_);
    path.waits_by_time = waits_by_time_;
    path.stream_waits_by_time = stream_waits_by_time_;
    return path;
  }

  // (stream << 32 | index, stop number), sorted.
  using Stops = std::vector<std::pair<uint64_t, int64_t>>;
  static uint64_t key_of(OpRef op) { return uint64_t(op.stream) << 32 | op.index; }

  // The path into the start of `into`, a stop, walked back until it
  // reaches another stop or its start. `budget` bounds the steps of every
  // walk together.
  ArrivalPath arrival(OpRef into, const Stops& stops, uint64_t& budget) {
    segments_.clear();
    cursor_ = g_.end(into);
    Position at = from_op(into);
    if (g_.end(into) > g_.start(into)) segments_.erase(segments_.begin());  // its own run: after the arrival
    ArrivalPath out = walk_to_stop(at, stops, budget);
    out.to = g_.start(into);
    return out;
  }

  // The same into the run's end, from its last event.
  ArrivalPath into_end(const Stops& stops, uint64_t& budget) {
    segments_.clear();
    Position at = last_event();
    int64_t end = cursor_;
    ArrivalPath out = walk_to_stop(at, stops, budget);
    out.to = end;
    return out;
  }

 private:
  ArrivalPath walk_to_stop(Position at, const Stops& stops, uint64_t& budget) {
    ArrivalPath out;
    out.known = true;
    for (; at.kind != Position::done; at = step_back(at)) {
      if (budget == 0) return {};
      --budget;
      if (at.kind != Position::device) continue;
      auto it = std::lower_bound(stops.begin(), stops.end(), std::make_pair(key_of(at.op), INT64_MIN));
      if (it != stops.end() && it->first == key_of(at.op)) {
        out.after = it->second;
        break;
      }
    }
    out.from = cursor_;
    for (const PathSegment& s : segments_) out.ns[size_t(s.category)] += s.end - s.start;
    return out;
  }

  // Where the run ended: the end of its last step, on the step's thread,
  // or the device op that ended last if it ended no earlier (the step
  // waited for it); without either,
  // the host's last work. Threads that merely outlive the work (a
  // watchdog, a profiler's own) are not the run.
  Position last_event() {
    const TraceModel& m = g_.ctx.model;
    Position at;
    int64_t last = std::numeric_limits<int64_t>::min();
    for (const StepRange& s : g_.ctx.steps) {
      if (s.end <= last) continue;
      at = {Position::host, {}, s.thread};
      last = s.end;
    }
    for (uint32_t k = 0; k < g_.streams.size(); ++k) {
      const DeviceOps& ops = *g_.streams[k].ops;
      for (size_t i = 0; i < ops.size(); ++i) {
        if (ops.end(i) < last || (ops.end(i) == last && at.kind == Position::device)) continue;
        at = {Position::device, {k, uint32_t(i)}, 0};
        last = ops.end(i);
      }
    }
    bool anything = at.kind != Position::done;
    auto host = [&](const auto& tracks) {
      for (const auto& t : tracks) {
        for (size_t i = 0; i < t.size(); ++i) {
          if (t.end(i) <= last) continue;
          at = {Position::host, {}, t.thread};
          last = t.end(i);
        }
      }
    };
    if (!anything) {
      host(m.host_spans);
      host(m.launches);
    }
    cursor_ = last;
    return at;
  }

  Position step_back(Position at) { return at.kind == Position::device ? from_op(at.op) : from_host(at.thread); }

  // Adds the stretch [from, cursor) (nothing if from >= cursor) and moves
  // the cursor back to it.
  void emit(int64_t from, PathCategory category, PathSegment where) {
    if (from >= cursor_) return;
    where.start = from;
    where.end = cursor_;
    where.category = category;
    if (!segments_.empty() && segments_.back().start == where.end && segments_.back().category == category &&
        segments_.back().on_device == where.on_device && segments_.back().thread == where.thread &&
        segments_.back().name == where.name && segments_.back().stream == where.stream) {
      segments_.back().start = from;
    } else {
      segments_.push_back(where);
    }
    cursor_ = from;
  }

  static PathSegment on_thread(uint32_t thread) { return {.thread = thread}; }
  PathSegment on_stream(OpRef op, bool named) const {
    const DeviceOps& ops = *g_.streams[op.stream].ops;
    return {.on_device = true, .device = ops.device, .stream = ops.stream, .name = named ? ops.name[op.index] : 0};
  }

  // At the end of a device op: the op ran, after the latest of what it
  // waited for.
  Position from_op(OpRef op) {
    const StreamOps& s = g_.streams[op.stream];
    emit(s.ops->start[op.index], op_category(g_.ctx, *s.ops, op.index), on_stream(op, true));
    int64_t ready = std::numeric_limits<int64_t>::min();
    Position next;
    PathCategory gap = PathCategory::launch_overhead;
    if (s.launcher[op.index] != kNoThread) {
      ready = s.launched[op.index];
      next = {Position::host, {}, s.launcher[op.index]};
    }
    if (op.index > 0 && s.ops->end(op.index - 1) >= ready) {
      ready = s.ops->end(op.index - 1);
      next = {Position::device, {op.stream, op.index - 1}, 0};
    }
    OpRef awaited = g_.stream_wait_before(op.stream, op.index);
    if (awaited.valid() && g_.end(awaited) >= ready) {
      ready = g_.end(awaited);
      next = {Position::device, awaited, 0};
      gap = PathCategory::synchronisation;
    }
    int64_t start = s.ops->start[op.index];
    if (next.kind == Position::done || start - ready > g_.ctx.options.kernel_wait_max_ns) {
      // It waited for something no record shows: most likely an op on
      // another of the device's streams that ended just before it began.
      int64_t from = next.kind == Position::done ? std::numeric_limits<int64_t>::min() : ready;
      OpRef other = g_.ended_last_within(from, start, s.ops->device, op.stream);
      if (other.valid() && g_.end(other) > from) {
        ++stream_waits_by_time_;
        ready = g_.end(other);
        next = {Position::device, other, 0};
        gap = PathCategory::synchronisation;
      }
    }
    if (next.kind == Position::done) return next;  // nothing before it: the path starts here
    emit(ready, gap, on_stream(op, false));
    return next;
  }

  // At a time on a host thread: the thread worked since its last wait,
  // which ended when the op it waited for did.
  Position from_host(uint32_t thread) {
    const HostWait* w = g_.wait_before(thread, cursor_);
    if (w == nullptr) {
      host_work(thread, first_event(thread));
      return {};
    }
    host_work(thread, std::min(w->end, cursor_));
    if (w->awaited.valid() && g_.end(w->awaited) > w->start) {
      waits_by_time_ += w->by_time;
      emit(g_.end(w->awaited), PathCategory::synchronisation, on_thread(thread));
      return {Position::device, w->awaited, 0};
    }
    // It waited for nothing recorded: its own time is on the path.
    emit(w->start, PathCategory::synchronisation, on_thread(thread));
    return {Position::host, {}, thread};
  }

  // The thread's time from `from` to the cursor, split at the edges of its
  // launch calls and DataLoader ranges.
  void host_work(uint32_t thread, int64_t from) {
    if (from >= cursor_ || thread >= g_.launch_calls.size()) return;
    const IntervalSet* sets[] = {&g_.launch_calls[thread], &g_.data_loading[thread]};
    std::vector<int64_t>& cuts = cuts_;  // reused: this runs once per stretch of host time
    cuts.assign({from, cursor_});
    for (const IntervalSet* set : sets) {
      const std::vector<Interval>& parts = set->intervals();
      auto it = std::partition_point(parts.begin(), parts.end(), [&](const Interval& p) { return p.end <= from; });
      for (; it != parts.end() && it->start < cursor_; ++it) {
        if (it->start > from) cuts.push_back(it->start);
        if (it->end < cursor_) cuts.push_back(it->end);
      }
    }
    std::sort(cuts.begin(), cuts.end());
    for (size_t k = cuts.size() - 1; k > 0; --k) {
      int64_t a = cuts[k - 1];
      PathCategory c = g_.data_loading[thread].covered(a, a + 1) > 0   ? PathCategory::data_loading
                       : g_.launch_calls[thread].covered(a, a + 1) > 0 ? PathCategory::launch_overhead
                                                                       : PathCategory::host_compute;
      emit(a, c, on_thread(thread));
    }
  }

  // The start of the thread's first recorded event.
  int64_t first_event(uint32_t thread) const {
    const TraceModel& m = g_.ctx.model;
    int64_t first = cursor_;
    auto scan = [&](const auto& tracks) {
      for (const auto& t : tracks) {
        if (t.thread == thread && t.size() > 0) first = std::min(first, t.start[0]);
      }
    };
    scan(m.host_spans);
    scan(m.launches);
    scan(m.syncs);
    scan(m.transfers);
    scan(m.steps);
    return first;
  }

  const DependencyGraph& g_;
  int64_t cursor_ = 0;
  std::vector<PathSegment> segments_;  // from the last, until reversed
  uint64_t waits_by_time_ = 0, stream_waits_by_time_ = 0;
  std::vector<int64_t> cuts_;
};

// The path within [a, b), by category.
PathBreakdown breakdown(const std::vector<PathSegment>& segments, int64_t a, int64_t b) {
  PathBreakdown out{.start = a, .end = b};
  auto it = std::partition_point(segments.begin(), segments.end(), [&](const PathSegment& s) { return s.end <= a; });
  for (; it != segments.end() && it->start < b; ++it) {
    out.ns[size_t(it->category)] += std::min(b, it->end) - std::max(a, it->start);
  }
  return out;
}

}  // namespace

CriticalPath critical_path(const DependencyGraph& graph) {
  const Context& ctx = graph.ctx;
  CriticalPath path = PathWalk(graph).run();
  for (std::string_view m : missing_evidence(graph)) path.missing.push_back(m);
  if (path.segments.empty()) return path;
  int64_t start = path.segments.front().start, end = path.segments.back().end;
  path.whole = breakdown(path.segments, start, end);
  for (const StepRange& s : ctx.steps) {
    int64_t a = std::max(s.start, start), b = std::min(s.end, end);
    if (a < b) path.steps.push_back({s.number, breakdown(path.segments, a, b)});
  }
  return path;
}

// Each collective's device op, or none (a collective run on the host).
std::vector<OpRef> collective_ops(const DependencyGraph& g) {
  std::vector<OpRef> out;
  for (const Collectives& track : g.ctx.model.collectives) {
    for (size_t i = 0; i < track.size(); ++i) {
      uint32_t k = track.on_device[i] ? g.stream_index(track.device[i], track.stream[i]) : UINT32_MAX;
      OpRef op;
      if (k != UINT32_MAX) {
        const std::vector<int64_t>& starts = g.streams[k].ops->start;
        auto it = std::lower_bound(starts.begin(), starts.end(), track.start[i]);
        if (it != starts.end() && *it == track.start[i]) op = {k, uint32_t(it - starts.begin())};
      }
      out.push_back(op);
    }
  }
  return out;
}

ArrivalPaths arrival_paths(const DependencyGraph& g) {
  std::vector<OpRef> ops = collective_ops(g);
  PathWalk::Stops stops;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].valid()) stops.emplace_back(PathWalk::key_of(ops[i]), int64_t(i));
  }
  std::sort(stops.begin(), stops.end());
  // A walk from each collective ends at the one before it on its path, in
  // practice within a step; the bound keeps a trace that never links them
  // from taking collectives x events steps.
  uint64_t budget = 16 * (g.ctx.model.total_events() + 8);
  ArrivalPaths out;
  out.collectives.resize(ops.size());
  PathWalk walk(g);
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].valid()) out.collectives[i] = walk.arrival(ops[i], stops, budget);
  }
  out.end = walk.into_end(stops, budget);
  return out;
}

}  // namespace analysis

ArrivalPaths arrival_paths(const TraceModel& model, const AnalysisOptions& options) {
  analysis::Context ctx(model, options);
  return analysis::arrival_paths(analysis::DependencyGraph(ctx));
}

CriticalPath critical_path(const TraceModel& model, const AnalysisOptions& options) {
  analysis::Context ctx(model, options);
  return analysis::critical_path(analysis::DependencyGraph(ctx));
}

}  // namespace loupe::prof
