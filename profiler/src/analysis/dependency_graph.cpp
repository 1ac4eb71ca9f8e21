#include "analysis/dependency_graph.h"

#include <algorithm>
#include <limits>
#include <set>
#include <string>
#include <utility>

namespace loupe::prof::analysis {

namespace {

constexpr uint32_t kNoStream = UINT32_MAX;

uint64_t stream_key(uint32_t device, uint32_t stream) { return uint64_t(device) << 32 | stream; }

}  // namespace

DependencyGraph::DependencyGraph(const Context& context) : ctx(context) {
  index_streams();
  index_ends();
  index_stream_waits();
  index_host_waits();
  index_host_work();
}

// One StreamOps per device-op track, in the model's order, so that an
// EventRef of an op (Context::op_of) is also its OpRef.
void DependencyGraph::index_streams() {
  const TraceModel& m = ctx.model;
  streams.resize(m.device_ops.size());
  for (size_t k = 0; k < m.device_ops.size(); ++k) {
    const DeviceOps& ops = m.device_ops[k];
    StreamOps& s = streams[k];
    s.ops = &ops;
    s.launched.resize(ops.size());
    s.launcher.assign(ops.size(), kNoThread);
    for (size_t i = 0; i < ops.size(); ++i) {
      const EventRef* l = ops.correlation[i] == 0 ? nullptr : ctx.launch_of(ops.correlation[i]);
      s.launched[i] = l ? std::min(m.launches[l->track].start[l->index], ops.start[i]) : ops.start[i];
      if (l) s.launcher[i] = m.launches[l->track].thread;
    }
    s.launched_max = s.launched;
    s.end_max.resize(ops.size());
    for (size_t i = 0; i < ops.size(); ++i) {
      if (i > 0) s.launched_max[i] = std::max(s.launched_max[i], s.launched_max[i - 1]);
      s.end_max[i] = i > 0 ? std::max(ops.end(i), s.end_max[i - 1]) : ops.end(i);
    }
  }
}

uint32_t DependencyGraph::stream_index(uint32_t device, uint32_t stream) const {
  const TraceModel& m = ctx.model;
  auto it = std::partition_point(m.device_ops.begin(), m.device_ops.end(), [&](const DeviceOps& s) {
    return stream_key(s.device, s.stream) < stream_key(device, stream);
  });
  if (it == m.device_ops.end() || it->device != device || it->stream != stream) return kNoStream;
  return uint32_t(it - m.device_ops.begin());
}

OpRef DependencyGraph::last_launched_by(uint32_t stream, int64_t t) const {
  const std::vector<int64_t>& at = streams[stream].launched_max;
  size_t k = size_t(std::upper_bound(at.begin(), at.end(), t) - at.begin());
  return k == 0 ? OpRef{} : OpRef{stream, uint32_t(k - 1)};
}

OpRef DependencyGraph::last_ending_launched_by(uint32_t device, int64_t t) const {
  OpRef best;
  for (uint32_t k = 0; k < streams.size(); ++k) {
    if (device != kUnknownDevice && streams[k].ops->device != device) continue;
    OpRef op = last_launched_by(k, t);
    if (op.valid() && (!best.valid() || end(op) > end(best))) best = op;
  }
  return best;
}

// Per device, its ops by end: each stream's ops already are (a stream runs
// one op at a time; one that is not, from overlapping records, is sorted
// first), so the streams are merged by a heap of their heads, in
// O(ops log streams).
void DependencyGraph::index_ends() {
  auto by_end = [&](OpRef x, OpRef y) { return end(x) < end(y); };
  for (uint32_t k = 0; k < streams.size();) {
    uint32_t first = k, device = streams[k].ops->device;
    by_end_devices_.push_back(device);       // tracks are sorted by (device, stream)
    std::vector<std::vector<OpRef>> sorted;  // per stream of the device: empty when its own order is by end
    size_t total = 0;
    for (; k < streams.size() && streams[k].ops->device == device; ++k) {
      const DeviceOps& ops = *streams[k].ops;
      total += ops.size();
      std::vector<OpRef>& order = sorted.emplace_back();
      bool in_order = true;
      for (uint32_t i = 1; i < ops.size() && in_order; ++i) in_order = ops.end(i - 1) <= ops.end(i);
      if (in_order) continue;
      order.resize(ops.size());
      for (uint32_t i = 0; i < ops.size(); ++i) order[i] = {k, i};
      std::stable_sort(order.begin(), order.end(), by_end);
    }
    auto at = [&](uint32_t stream, uint32_t i) {
      const std::vector<OpRef>& order = sorted[stream - first];
      return order.empty() ? OpRef{stream, i} : order[i];
    };
    std::vector<OpRef>& out = by_end_.emplace_back();
    out.reserve(total);
    std::vector<std::pair<OpRef, uint32_t>> heads;  // (the stream's next op, its position), a heap by end
    auto later = [&](const auto& a, const auto& b) { return by_end(b.first, a.first); };
    for (uint32_t s = first; s < k; ++s) {
      if (streams[s].ops->size() > 0) heads.push_back({at(s, 0), 0});
    }
    std::make_heap(heads.begin(), heads.end(), later);
    while (!heads.empty()) {
      std::pop_heap(heads.begin(), heads.end(), later);
      auto [op, pos] = heads.back();
      heads.pop_back();
      out.push_back(op);
      if (pos + 1 < streams[op.stream].ops->size()) {
        heads.push_back({at(op.stream, pos + 1), pos + 1});
        std::push_heap(heads.begin(), heads.end(), later);
      }
    }
  }
}

// On one device: the op that ended last within [a, b], on a stream other
// than `skip`.
OpRef DependencyGraph::ended_last_on(size_t device, int64_t a, int64_t b, uint32_t skip) const {
  const std::vector<OpRef>& ops = by_end_[device];
  auto it = std::upper_bound(ops.begin(), ops.end(), b, [&](int64_t t, OpRef op) { return t < end(op); });
  while (it != ops.begin()) {
    OpRef op = *--it;
    if (end(op) < a) break;
    if (op.stream != skip) return op;
  }
  return {};
}

OpRef DependencyGraph::ended_last_within(int64_t a, int64_t b, uint32_t device, uint32_t skip) const {
  OpRef best;
  for (size_t d = 0; d < by_end_devices_.size(); ++d) {
    if (device != kUnknownDevice && by_end_devices_[d] != device) continue;
    OpRef op = ended_last_on(d, a, b, skip);
    if (op.valid() && (!best.valid() || end(op) > end(best))) best = op;
  }
  return best;
}

OpRef DependencyGraph::awaited_by(const SyncRow& row) const {
  auto on_stream = [&](uint32_t stream, int64_t t) {
    uint32_t k = stream == kUnknownStream ? kNoStream : stream_index(row.device, stream);
    return k == kNoStream ? OpRef{} : last_launched_by(k, t);
  };
  switch (row.kind) {
    case SyncKind::device: return last_ending_launched_by(row.device, row.start);
    case SyncKind::stream:
      if (row.stream == kUnknownStream) return last_ending_launched_by(row.device, row.start);
      return on_stream(row.stream, row.start);
    case SyncKind::event:
    case SyncKind::stream_wait:
      if (!is_trace_time(row.recorded_at)) return {};
      return on_stream(row.event_stream, row.recorded_at);
  }
  return {};
}

void DependencyGraph::index_stream_waits() {
  for (const Syncs& t : ctx.model.syncs) {
    for (size_t i = 0; i < t.size(); ++i) {
      has_sync_records = true;
      if (t.kind[i] != SyncKind::stream_wait || t.stream[i] == kUnknownStream) continue;
      uint32_t k = stream_index(t.device[i], t.stream[i]);
      if (k == kNoStream) continue;
      SyncRow row{.start = t.start[i],
                  .kind = t.kind[i],
                  .device = t.device[i],
                  .event_stream = t.event_stream[i],
                  .recorded_at = t.recorded_at[i]};
      streams[k].waits.push_back(uint32_t(stream_waits.size()));
      stream_waits.push_back({t.start[i], awaited_by(row)});
    }
  }
  for (StreamOps& s : streams) {
    std::sort(s.waits.begin(), s.waits.end(),
              [&](uint32_t a, uint32_t b) { return stream_waits[a].start < stream_waits[b].start; });
  }
}

OpRef DependencyGraph::stream_wait_before(uint32_t stream, uint32_t index) const {
  const StreamOps& s = streams[stream];
  int64_t after = index > 0 ? s.launched[index - 1] : std::numeric_limits<int64_t>::min();
  auto first =
      std::partition_point(s.waits.begin(), s.waits.end(), [&](uint32_t w) { return stream_waits[w].start <= after; });
  OpRef best;
  for (auto it = first; it != s.waits.end() && stream_waits[*it].start <= s.launched[index]; ++it) {
    OpRef op = stream_waits[*it].awaited;
    if (op.valid() && (!best.valid() || end(op) > end(best))) best = op;
  }
  return best;
}

// Every thread's blocking calls: synchronising calls with their record,
// synchronous copies, and wait spans without a record (matched by time).
void DependencyGraph::index_host_waits() {
  const TraceModel& m = ctx.model;
  uint32_t threads = 0;
  auto count = [&](const auto& tracks) {
    for (const auto& t : tracks) threads = std::max(threads, t.thread + 1);
  };
  count(m.host_spans);
  count(m.launches);
  count(m.transfers);
  count(m.syncs);
  count(m.steps);
  waits.resize(threads);
  std::set<std::pair<uint32_t, int64_t>> recorded;  // (thread, start) of the calls a record names
  for (const Syncs& t : m.syncs) {
    if (t.thread >= threads) continue;
    for (size_t i = 0; i < t.size(); ++i) {
      if (t.kind[i] == SyncKind::stream_wait) continue;  // the host does not wait
      SyncRow row{.start = t.start[i],
                  .kind = t.kind[i],
                  .device = t.device[i],
                  .stream = t.stream[i],
                  .event_stream = t.event_stream[i],
                  .recorded_at = t.recorded_at[i]};
      waits[t.thread].push_back({t.start[i], t.end(i), awaited_by(row), false});
      recorded.insert({t.thread, t.start[i]});
    }
  }
  for (const Transfers& t : m.transfers) {
    if (t.thread >= threads) continue;
    for (size_t i = 0; i < t.size(); ++i) {
      if (!t.synchronous[i]) continue;
      const EventRef* op = t.correlation[i] == 0 ? nullptr : ctx.op_of(t.correlation[i]);
      waits[t.thread].push_back({t.start[i], t.end(i), op ? OpRef{op->track, op->index} : OpRef{}, false});
    }
  }
  for (const HostSpans& t : m.host_spans) {
    if (t.thread >= threads) continue;
    for (size_t i = 0; i < t.size(); ++i) {
      if (t.kind[i] != SpanKind::wait || recorded.count({t.thread, t.start[i]})) continue;
      waits[t.thread].push_back({t.start[i], t.end(i), ended_last_within(t.start[i], t.end(i)), true});
    }
  }
  for (std::vector<HostWait>& w : waits) {
    std::sort(w.begin(), w.end(), [](const HostWait& a, const HostWait& b) { return a.start < b.start; });
  }
}

const HostWait* DependencyGraph::wait_before(uint32_t thread, int64_t t) const {
  if (thread >= waits.size()) return nullptr;
  const std::vector<HostWait>& w = waits[thread];
  auto it = std::partition_point(w.begin(), w.end(), [&](const HostWait& x) { return x.start < t; });
  return it == w.begin() ? nullptr : &*(it - 1);
}

// Where each thread's time went besides waiting: launch calls, and the
// input pipeline (PyTorch names its iterator's ranges "enumerate(DataLoader)#...").
void DependencyGraph::index_host_work() {
  const TraceModel& m = ctx.model;
  launch_calls.resize(waits.size());
  data_loading.resize(waits.size());
  for (const Launches& t : m.launches) {
    if (t.thread >= waits.size()) continue;
    std::vector<Interval> calls(t.size());
    for (size_t i = 0; i < t.size(); ++i) calls[i] = {t.start[i], t.end(i)};
    launch_calls[t.thread] = IntervalSet(std::move(calls));
  }
  std::vector<bool> loads(m.strings.size());
  for (size_t id = 0; id < m.strings.size(); ++id) loads[id] = m.strings[id].find("DataLoader") != std::string::npos;
  for (const HostSpans& t : m.host_spans) {
    if (t.thread >= waits.size()) continue;
    std::vector<Interval> loading;
    for (size_t i = 0; i < t.size(); ++i) {
      if (loads[t.name[i]]) loading.push_back({t.start[i], t.end(i)});
    }
    data_loading[t.thread] = IntervalSet(std::move(loading));
  }
}

std::vector<std::string_view> missing_evidence(const DependencyGraph& g) {
  std::vector<std::string_view> out;
  bool waits = std::any_of(g.waits.begin(), g.waits.end(), [](const auto& w) { return !w.empty(); });
  if (waits && !g.has_sync_records) {
    out.push_back(
        "no synchronisation records (Kineto's cuda_sync): each host wait is matched by time to the device op "
        "that ended last within it");
  }
  bool launched = std::any_of(g.streams.begin(), g.streams.end(), [](const StreamOps& s) {
    return std::any_of(s.launcher.begin(), s.launcher.end(), [](uint32_t t) { return t != kNoThread; });
  });
  if (!g.streams.empty() && !launched) {
    out.push_back("no launch is linked to its device op: the path cannot cross from the device to the host");
  }
  if (!g.ctx.model.collectives.empty()) {
    out.push_back(
        "collectives wait for the other ranks, which this trace does not hold: communication on the path may be "
        "waiting for a slower rank (analyse the job)");
  }
  return out;
}

}  // namespace loupe::prof::analysis
