#include "analysis/replay.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <tuple>

namespace loupe::prof::analysis {

namespace {

constexpr int64_t kNever = std::numeric_limits<int64_t>::min();

// What a device op waited for, as recorded: its launch, the op before it
// on its stream, and the op its stream was made to wait for (recorded, or
// found by time as the critical path does: an op that started long after
// all of those waited for something on another stream of its device).
struct OpDeps {
  int64_t launched = kNever, follows = kNever, awaited_end = kNever;
  uint32_t thread = kNoThread;
  OpRef awaited;
  int64_t ready() const { return std::max({launched, follows, awaited_end}); }
};

// `infer`: look for a stream wait by time (a binary search per device);
// the typical delays need only launches and stream order.
OpDeps deps_of(const DependencyGraph& g, uint32_t stream, uint32_t index, bool infer = true) {
  const StreamOps& s = g.streams[stream];
  OpDeps d;
  if (s.launcher[index] != kNoThread) {
    d.launched = s.launched[index];
    d.thread = s.launcher[index];
  }
  if (index > 0) d.follows = s.ops->end(index - 1);
  d.awaited = g.stream_wait_before(stream, index);
  if (d.awaited.valid()) d.awaited_end = g.end(d.awaited);
  int64_t start = s.ops->start[index];
  int64_t ready = d.ready();
  if (infer && (ready == kNever || start - ready > g.ctx.options.kernel_wait_max_ns)) {
    OpRef other = g.ended_last_within(ready, start, s.ops->device, stream);
    if (other.valid() && g.end(other) > ready) {
      d.awaited = other;
      d.awaited_end = g.end(other);
    }
  }
  return d;
}

int64_t median(std::vector<int64_t>& v) {
  if (v.empty()) return 0;
  auto mid = v.begin() + std::ptrdiff_t(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

}  // namespace

// Per stream, the median delay of an op after its launch where the launch
// bound it, and after the op before it where that op bound it: what a
// dependency that did not bind would cost if a change made it bind.
ReplayBasis::ReplayBasis(const DependencyGraph& g) : graph(g), typical(g.streams.size()), waits_by_end(g.waits.size()) {
  std::vector<int64_t> launch, follow;
  for (uint32_t k = 0; k < g.streams.size(); ++k) {
    launch.clear();
    follow.clear();
    const DeviceOps& ops = *g.streams[k].ops;
    for (uint32_t i = 0; i < ops.size(); ++i) {
      OpDeps d = deps_of(g, k, i, false);
      int64_t ready = d.ready();
      // Longer after it than that, the op waited for something else.
      if (ready == kNever || ops.start[i] - ready > g.ctx.options.kernel_wait_max_ns) continue;
      if (ready == d.follows) follow.push_back(ops.start[i] - ready);
      if (ready == d.launched) launch.push_back(ops.start[i] - ready);
    }
    typical[k] = {median(launch), median(follow)};
  }
  for (uint32_t t = 0; t < g.waits.size(); ++t) {
    std::vector<uint32_t>& order = waits_by_end[t];
    const std::vector<HostWait>& w = g.waits[t];
    order.resize(w.size());
    for (uint32_t i = 0; i < w.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) { return w[x].end < w[y].end; });
  }
}

Replay::Replay(const ReplayBasis& basis, const ReplayChanges& changes) : b_(basis), g_(basis.graph), c_(changes) {
  run();
}

// A kernel or copy takes its recorded time, times its factor. An event
// wait op does no work: it lasts until the op it waited for (the op on
// another stream of its device that ended last within it) has ended, and
// as long after that as it did.
int64_t Replay::duration(uint32_t stream, uint32_t index, int64_t start) const {
  const DeviceOps& ops = *g_.streams[stream].ops;
  int64_t dur = ops.dur[index];
  if (ops.kind[index] == DeviceOpKind::sync) {
    OpRef awaited = g_.ended_last_within(ops.start[index], ops.end(index), ops.device, stream);
    if (!awaited.valid() || done_[awaited.stream] <= awaited.index) return dur;
    return std::max<int64_t>(0, op_end(awaited) + (ops.end(index) - g_.end(awaited)) - start);
  }
  if (c_.op_factor.empty() || c_.op_factor[stream].empty()) return dur;
  return int64_t(std::llround(double(dur) * double(c_.op_factor[stream][index])));
}

int64_t Replay::replayed_at(uint32_t stream, uint32_t index) const {
  const DeviceOps& ops = *g_.streams[stream].ops;
  return ops.kind[index] == DeviceOpKind::sync ? ops.end(index) : ops.start[index];
}

int64_t Replay::cut_before(uint32_t thread, int64_t t) const {
  if (thread >= c_.host_cuts.size() || c_.host_cuts[thread].empty()) return 0;
  return c_.host_cuts[thread].covered(std::numeric_limits<int64_t>::min() / 2, t);
}

int64_t Replay::host_time(uint32_t thread, int64_t t) const {
  int64_t offset = 0;
  if (thread < threads_.size()) {
    const ThreadState& s = threads_[thread];
    auto it = std::upper_bound(s.wait_ends.begin(), s.wait_ends.end(), t);
    if (it != s.wait_ends.begin()) offset = s.offsets[size_t(it - s.wait_ends.begin()) - 1];
  }
  return t - cut_before(thread, t) + offset;
}

// The op starts after the latest of what it depends on, each plus its
// delay: the measured one for the dependency that bound it, the typical
// one (at most the slack it had) for the others.
void Replay::replay_op(uint32_t stream, uint32_t index) {
  OpDeps d = deps_of(g_, stream, index);
  int64_t start = g_.streams[stream].ops->start[index];
  int64_t ready = d.ready();
  auto delay = [&](int64_t at, int64_t typical) { return at == ready ? start - at : std::min(start - at, typical); };
  int64_t replayed = ready == kNever ? start : kNever;
  const ReplayBasis::Typical& typical = b_.typical[stream];
  if (d.launched != kNever) {
    replayed = std::max(replayed, host_time(d.thread, d.launched) + delay(d.launched, typical.launch_ns));
  }
  if (d.follows != kNever) {
    replayed = std::max(replayed, op_end({stream, index - 1}) + delay(d.follows, typical.follow_ns));
  }
  if (d.awaited.valid() && done_[d.awaited.stream] > d.awaited.index) {
    replayed = std::max(replayed, op_end(d.awaited) + delay(d.awaited_end, typical.follow_ns));
  }
  if (replayed == kNever) replayed = start;  // what it waited for was not replayed before it: as recorded
  end_[stream][index] = replayed + duration(stream, index, replayed);
  done_[stream] = index + 1;
  last_op_end_ = std::max(last_op_end_, end_[stream][index]);
}

// The wait ends once what it waited for has, plus the time it took to
// return then; a wait for nothing recorded, or for work done before it
// began, takes its own time.
void Replay::replay_wait(uint32_t thread, uint32_t index) {
  const HostWait& w = g_.waits[thread][index];
  ThreadState& s = threads_[thread];
  WaitChange change = c_.waits.empty() || c_.waits[thread].empty() ? WaitChange::none : c_.waits[thread][index];
  int64_t start = host_time(thread, w.start);
  int64_t own = (w.end - w.start) - (cut_before(thread, w.end) - cut_before(thread, w.start));
  int64_t end = start + own;
  const OpRef x = w.awaited;
  bool binds = x.valid() && done_[x.stream] > x.index && g_.end(x) > w.start && g_.end(x) <= w.end;
  switch (change) {
    case WaitChange::none:
      if (binds) {
        int64_t back = w.end - g_.end(x);
        end = std::max(start + std::min(own, back), op_end(x) + back);
      }
      break;
    case WaitChange::removed: end = start; break;
    case WaitChange::asynchronous:
      end = start + std::min(own, thread < c_.queue_call_ns.size() ? c_.queue_call_ns[thread] : 0);
      break;
  }
  // A wait inside another (one call seen twice) ends no earlier than it.
  if (!s.wait_ends.empty() && s.wait_ends.back() > w.start) end = std::max(end, host_time(thread, s.wait_ends.back()));
  s.wait_ends.push_back(w.end);
  s.offsets.push_back(end - w.end + cut_before(thread, w.end));
}

// Ops by start (event wait ops by end) and host waits by end, merged in
// recorded time order: whatever an event depends on happened before it,
// so it is replayed first.
void Replay::run() {
  end_.resize(g_.streams.size());
  done_.assign(g_.streams.size(), 0);
  for (uint32_t k = 0; k < g_.streams.size(); ++k) end_[k].resize(g_.streams[k].ops->size());
  threads_.resize(g_.waits.size());
  // (time, 0 for a host wait or 1 for an op, thread or stream): at one
  // time, waits go first, so that a launch made just as a wait returned
  // is replayed after it.
  using Next = std::tuple<int64_t, int, uint32_t>;
  std::priority_queue<Next, std::vector<Next>, std::greater<>> queue;
  auto push_thread = [&](uint32_t t) {
    const std::vector<uint32_t>& order = b_.waits_by_end[t];
    if (threads_[t].next < order.size()) queue.emplace(g_.waits[t][order[threads_[t].next]].end, 0, t);
  };
  auto push_stream = [&](uint32_t k) {
    if (done_[k] < end_[k].size()) queue.emplace(replayed_at(k, done_[k]), 1, k);
  };
  for (uint32_t t = 0; t < threads_.size(); ++t) push_thread(t);
  for (uint32_t k = 0; k < g_.streams.size(); ++k) push_stream(k);
  while (!queue.empty()) {
    auto [time, kind, id] = queue.top();
    queue.pop();
    if (kind == 0) {
      replay_wait(id, b_.waits_by_end[id][threads_[id].next++]);
      push_thread(id);
    } else {
      replay_op(id, done_[id]);
      push_stream(id);
    }
  }
}

}  // namespace loupe::prof::analysis
