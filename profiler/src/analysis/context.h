// What every rule needs, computed once per analysis: each device's busy
// time (the union of its operations over all streams), the links between
// launches and device operations, each host thread's compile and blocking
// intervals, and the steps.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/intervals.h"
#include "loupe/prof/analysis.h"
#include "loupe/prof/python_frames.h"  // is_python_frame, is_library_file
#include "loupe/prof/trace_model.h"

namespace loupe::prof::analysis {

// A range that marks a training step ("ProfilerStep#3", "step 12"): it says
// when, not where, so it is never a call site or a cause.
bool is_step_marker(std::string_view name);

// loupe's runtime dispatching one op eagerly (looking it up, allocating its
// output, launching): its runtime spans are named "eager <op>".
bool is_eager_op(SpanKind kind, std::string_view name);

struct DeviceActivity {
  uint32_t device = 0;
  std::vector<const DeviceOps*> streams;
  IntervalSet busy;         // all operations
  IntervalSet kernels;      // kernels only
  IntervalSet compute;      // kernels that are not collectives
  IntervalSet collectives;  // collective kernels
  IntervalSet copies;       // memcpy and memset
  int64_t window_start = 0, window_end = 0;
};

// A device operation, by stream and index.
struct OpAt {
  const DeviceOps* stream = nullptr;  // null: none
  size_t index = 0;
};
// The first operation on the device, over all streams, starting at or
// after t; event waits (sync ops) do not count, they do no work.
OpAt first_op_from(const DeviceActivity& d, int64_t t);

// A row of a track, by index.
struct EventRef {
  uint32_t track = 0;
  uint32_t index = 0;
};

// Correlation id -> event. Ids are usually dense (a counter), so a direct
// table indexed by id is used when it stays small next to the number of
// events; otherwise a sorted array and binary search.
class CorrelationIndex {
 public:
  void build(std::vector<std::pair<uint64_t, EventRef>> entries);
  const EventRef* find(uint64_t correlation) const;

 private:
  std::vector<EventRef> dense_;
  std::vector<bool> present_;
  std::vector<std::pair<uint64_t, EventRef>> sorted_;
};

struct ThreadActivity {
  uint32_t thread = 0;
  const HostSpans* spans = nullptr;    // may be null
  const Launches* launches = nullptr;  // may be null
  IntervalSet compile;                 // compile spans and compile events that compiled
  IntervalSet blocked;                 // wait spans and synchronous transfers
  // Spans that mark code (user, timing and runtime: framework ops such as
  // aten::to) by depth: spans at one depth do not overlap, so each list is
  // sorted by start and by end, and binary search finds the one at a time.
  std::vector<std::vector<uint32_t>> code_by_depth;

  // The spans that mark code open at time t, outermost first, down to
  // max_depth.
  std::vector<uint32_t> code_spans_at(int64_t t, uint32_t max_depth = UINT32_MAX) const;
  // The deepest span that marks code, other than a step marker, covering
  // at least `need` ns of [a, b); -1 if none.
  int64_t deepest_code_span_covering(int64_t a, int64_t b, int64_t need, const TraceModel& model) const;
  // How much of [a, b) the outermost spans that mark code cover.
  int64_t code_covered(int64_t a, int64_t b) const;
  // Launches that started in [a, b).
  size_t launches_in(int64_t a, int64_t b) const;
};

struct StepRange {
  uint32_t thread = 0;
  int64_t number = 0, start = 0, end = 0;
};

class Context {
 public:
  Context(const TraceModel& model, const AnalysisOptions& options);

  const TraceModel& model;
  const AnalysisOptions& options;
  std::vector<DeviceActivity> devices;       // devices that ran something, by id
  int64_t window_start = 0, window_end = 0;  // over all devices (or the trace)
  std::vector<ThreadActivity> threads;       // threads that recorded, by id
  IntervalSet compile_all, blocked_all;      // over all threads
  std::vector<StepRange> steps;              // in time order, without stubs
  std::vector<StepRange> stub_steps;         // step markers with no device work, left out

  int64_t window() const { return window_end - window_start; }
  const DeviceActivity* device(uint32_t id) const;
  const ThreadActivity* thread(uint32_t id) const;
  // The step of this thread under way at time t, or nullptr.
  const StepRange* step_at(uint32_t thread, int64_t t) const;

  // The launch that started the device op with this correlation id, and
  // the device op a correlation id names; nullptr when there is none.
  const EventRef* launch_of(uint64_t correlation) const;
  const EventRef* op_of(uint64_t correlation) const;

  // Calls f(launches, i) for each launch of a step: those that started in
  // its range on any thread of its process (PyTorch launches the backward
  // pass from its autograd thread, not from the thread that marks the step).
  // A template, not a std::function: it runs once per launch of every step.
  template <typename F>
  void for_each_step_launch(const StepRange& s, F&& f) const {
    const Thread* own = model.thread(s.thread);
    for (const ThreadActivity& t : threads) {
      if (t.launches == nullptr) continue;
      if (t.thread != s.thread) {
        const Thread* other = model.thread(t.thread);
        if (own == nullptr || other == nullptr || other->process != own->process) continue;
      }
      const Launches& l = *t.launches;
      for (size_t i = lower_bound_time(l.start, s.start); i < l.size() && l.start[i] < s.end; ++i) f(l, i);
    }
  }

  // "file:line" of a call site, or "" for none.
  std::string callsite_text(uint32_t id) const;
  // The call site and its callers: "model.py:7 < train.py:4 < train.py:10",
  // innermost first, the first four frames and "< …" for more.
  std::string stack_text(uint32_t id) const;
  // Where an event happened when the trace has no call site for it: the
  // chain of spans that enclose it on its thread, outermost first, step
  // markers left out ("## forward ## > aten::to > aten::copy_"); "" when
  // nothing encloses it. With max_depth, the chain stops at that depth: a
  // span's own chain, without what was open inside it at that moment.
  std::string enclosing_chain(uint32_t thread, int64_t t, uint32_t max_depth = UINT32_MAX) const;
  // Whether the thread was inside an op or a range at time t (a span that
  // marks code other than a Python frame or a step marker): working, not
  // merely running Python, which an idle thread waiting on a lock does.
  bool inside_op(uint32_t thread, int64_t t) const;
  // Distinct step numbers (steps on several threads at once count once).
  size_t distinct_steps = 0;
  // The trace's times are only the order of its events (kMetaTimesAreOrder).
  bool times_are_order = false;
  // "at 1.208 s", or "at entry 88" (counted from 1) where the times are
  // only an order.
  std::string time_text(int64_t t) const;
  // count per distinct step; the count itself when there are no steps.
  double per_step(double count) const { return distinct_steps == 0 ? count : count / double(distinct_steps); }

 private:
  void index_devices();
  void index_correlations();
  void index_threads();
  void index_steps();
  void drop_stub_steps();
  CorrelationIndex launch_by_correlation_, op_by_correlation_;
};

}  // namespace loupe::prof::analysis
