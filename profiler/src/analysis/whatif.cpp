// What-if: a WhatIf turned into changes to the events of the dependency
// graph (which waits go or stop blocking, which ops shrink, which host
// time is skipped), the graph replayed with them, and the steps' times
// read off the replay.
#include "analysis/whatif.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <numeric>
#include <regex>
#include <stdexcept>
#include <string>

#include "analysis/replay.h"
#include "analysis/rules.h"
#include "loupe/prof/analysis.h"
#include "loupe/prof/python_frames.h"

namespace loupe::prof {

bool site_matches(std::string_view site, std::string_view file, uint32_t line) {
  std::string_view want = site;
  uint32_t want_line = 0;
  size_t colon = site.rfind(':');
  if (colon != std::string_view::npos && colon + 1 < site.size()) {
    std::string_view digits = site.substr(colon + 1);
    auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), want_line);
    if (error == std::errc() && end == digits.data() + digits.size()) want = site.substr(0, colon);
    else want_line = 0;
  }
  if (want.empty() || (want_line != 0 && want_line != line) || !file.ends_with(want)) return false;
  // At a path component's start: "train.py" is not "my_train.py".
  return file.size() == want.size() || want.front() == '/' || file[file.size() - want.size() - 1] == '/';
}

namespace analysis {

namespace {

// Which events a list of sites names, remembering which sites named any.
class SiteMatcher {
 public:
  SiteMatcher(const TraceModel& model, const std::vector<std::string>& sites)
      : m_(model), sites_(sites), used_(sites.size()), frame_(model.strings.size(), -1) {}

  // The call site or one of its callers is at a site.
  bool callsite(uint32_t id) {
    for (int depth = 0; id != 0 && depth < 256; ++depth) {  // bounded: a damaged file's parents may loop
      const CallSite* c = m_.callsite(id);
      if (c == nullptr) return false;
      if (at(m_.str(c->file), c->line)) return true;
      id = c->parent;
    }
    return false;
  }
  // A span named as a Python frame ("train.py(12): step") at a site.
  bool frame(StringId name) {
    int8_t& known = frame_[name];
    if (known < 0) {
      std::optional<PythonFrame> f = parse_python_frame(m_.str(name));
      known = f && at(f->file, f->line) ? 1 : 0;
    }
    return known == 1;
  }
  std::vector<std::string> unmatched() const {
    std::vector<std::string> out;
    for (size_t i = 0; i < sites_.size(); ++i) {
      if (!used_[i]) out.push_back(sites_[i]);
    }
    return out;
  }

 private:
  bool at(std::string_view file, uint32_t line) {
    bool any = false;
    for (size_t i = 0; i < sites_.size(); ++i) {
      if (!site_matches(sites_[i], file, line)) continue;
      used_[i] = true;
      any = true;
    }
    return any;
  }
  const TraceModel& m_;
  const std::vector<std::string>& sites_;
  std::vector<bool> used_;
  std::vector<int8_t> frame_;  // per string: -1 not looked at, 0 no, 1 a frame at a site
};

// Per thread: the time of spans at a site (their call site, or a Python
// frame's name), and of transfers at a site or inside such a span.
struct SiteRanges {
  std::vector<IntervalSet> spans, transfers;
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> transfer_rows;  // per thread: (track, index)
};

SiteRanges ranges_at(const DependencyGraph& g, SiteMatcher& match) {
  const TraceModel& m = g.ctx.model;
  SiteRanges out;
  out.spans.resize(g.waits.size());
  out.transfers.resize(g.waits.size());
  out.transfer_rows.resize(g.waits.size());
  for (const HostSpans& t : m.host_spans) {
    if (t.thread >= g.waits.size()) continue;
    std::vector<Interval> parts;
    for (size_t i = 0; i < t.size(); ++i) {
      if (match.callsite(t.callsite[i]) || match.frame(t.name[i])) parts.push_back({t.start[i], t.end(i)});
    }
    out.spans[t.thread] = IntervalSet(std::move(parts));
  }
  for (uint32_t k = 0; k < m.transfers.size(); ++k) {
    const Transfers& t = m.transfers[k];
    if (t.thread >= g.waits.size()) continue;
    std::vector<Interval> parts;
    for (uint32_t i = 0; i < t.size(); ++i) {
      if (!match.callsite(t.callsite[i]) && out.spans[t.thread].covered(t.start[i], t.start[i] + 1) == 0) continue;
      parts.push_back({t.start[i], std::max(t.end(i), t.start[i] + 1)});
      out.transfer_rows[t.thread].push_back({k, i});
    }
    out.transfers[t.thread] = IntervalSet::unite(out.transfers[t.thread], IntervalSet(std::move(parts)));
  }
  return out;
}

// Each thread's recorded extent: its first event's start to its last
// event's end ({INT64_MAX, INT64_MIN} for a thread with none).
std::vector<Interval> thread_extents(const TraceModel& m, size_t threads) {
  std::vector<Interval> out(threads, {INT64_MAX, INT64_MIN});
  auto scan = [&](const auto& tracks) {
    for (const auto& t : tracks) {
      if (t.thread >= threads) continue;
      for (size_t i = 0; i < t.size(); ++i) {
        out[t.thread] = {std::min(out[t.thread].start, t.start[i]), std::max(out[t.thread].end, t.end(i))};
      }
    }
  };
  scan(m.host_spans);
  scan(m.launches);
  scan(m.transfers);
  scan(m.syncs);
  scan(m.compiles);
  scan(m.steps);
  return out;
}

bool inside(const std::vector<IntervalSet>& sets, uint32_t thread, int64_t t) {
  return thread < sets.size() && sets[thread].covered(t, t + 1) > 0;
}

// Ranges a WhatIf names directly, per thread: on its threads, or on all.
std::vector<IntervalSet> ranges_within(const WhatIf& w, const std::vector<TimeRange>& ranges, size_t threads) {
  std::vector<Interval> parts;
  parts.reserve(ranges.size());
  for (const TimeRange& r : ranges) parts.push_back({r.start, std::max(r.end, r.start + 1)});
  IntervalSet set(std::move(parts));
  std::vector<IntervalSet> out(threads);
  for (size_t t = 0; t < threads; ++t) {
    bool listed = w.within_threads.empty() ||
                  std::find(w.within_threads.begin(), w.within_threads.end(), t) != w.within_threads.end();
    if (listed) out[t] = set;
  }
  return out;
}

class ChangeBuilder {
 public:
  ChangeBuilder(const DependencyGraph& graph, const WhatIf& change, Prediction& p) : g_(graph), w_(change), p_(p) {}

  ReplayChanges build() {
    size_t threads = g_.waits.size();
    c_.waits.resize(threads);
    c_.host_cuts.resize(threads);
    cuts_.resize(threads);
    queue_calls();
    waits_and_transfers();
    scale_ops();
    if (w_.drop_recompiles) drop_recompiles();
    if (w_.remove_host_gaps) remove_host_gaps();
    std::vector<IntervalSet> host_within = ranges_within(w_, w_.remove_host_within, threads);
    for (size_t t = 0; t < threads; ++t) {
      for (const Interval& part : host_within[t].intervals()) cuts_[t].push_back(part);
    }
    p_.host_stretches_removed += w_.remove_host_within.size();
    for (size_t t = 0; t < threads; ++t) c_.host_cuts[t] = IntervalSet(std::move(cuts_[t]));
    return std::move(c_);
  }

 private:
  // An asynchronous copy's call takes what a launch takes on its thread
  // (the median; only asked for when some copy is made asynchronous).
  void queue_calls() {
    c_.queue_call_ns.assign(g_.waits.size(), 0);
    if (w_.async_copies_at.empty() && w_.async_copies_within.empty()) return;
    for (const Launches& t : g_.ctx.model.launches) {
      if (t.thread < g_.waits.size() && t.size() > 0) c_.queue_call_ns[t.thread] = quantile(t.dur, 0.5);
    }
  }

  void waits_and_transfers() {
    SiteMatcher syncs(g_.ctx.model, w_.remove_syncs_at), removed(g_.ctx.model, w_.remove_transfers_at),
        async(g_.ctx.model, w_.async_copies_at);
    SiteRanges sync_at = ranges_at(g_, syncs), removed_at = ranges_at(g_, removed), async_at = ranges_at(g_, async);
    std::vector<IntervalSet> sync_within = ranges_within(w_, w_.remove_syncs_within, g_.waits.size()),
                             async_within = ranges_within(w_, w_.async_copies_within, g_.waits.size());
    for (uint32_t t = 0; t < g_.waits.size(); ++t) {
      const std::vector<HostWait>& waits = g_.waits[t];
      c_.waits[t].assign(waits.size(), WaitChange::none);
      for (size_t i = 0; i < waits.size(); ++i) {
        int64_t s = waits[i].start;
        WaitChange& change = c_.waits[t][i];
        if (inside(removed_at.transfers, t, s) || inside(sync_at.spans, t, s) || inside(sync_at.transfers, t, s) ||
            inside(sync_within, t, s)) {
          change = WaitChange::removed;
        } else if (inside(async_at.transfers, t, s) || inside(async_within, t, s)) {
          change = WaitChange::asynchronous;
        }
        p_.waits_changed += change != WaitChange::none;
      }
    }
    remove_transfers(removed_at);
    for (SiteMatcher* m : {&syncs, &removed, &async}) {
      for (std::string& s : m->unmatched()) p_.unmatched.push_back(std::move(s));
    }
  }

  // A removed transfer's copy takes no time on the device, and its call
  // none on the host.
  void remove_transfers(const SiteRanges& at) {
    const TraceModel& m = g_.ctx.model;
    for (uint32_t t = 0; t < at.transfer_rows.size(); ++t) {
      for (auto [k, i] : at.transfer_rows[t]) {
        const Transfers& tr = m.transfers[k];
        cuts_[t].push_back({tr.start[i], tr.end(i)});
        ++p_.transfers_removed;
        const EventRef* op = tr.correlation[i] == 0 ? nullptr : g_.ctx.op_of(tr.correlation[i]);
        if (op != nullptr) factor(op->track)[op->index] = 0;
      }
    }
  }

  std::vector<float>& factor(uint32_t stream) {
    if (c_.op_factor.empty()) c_.op_factor.resize(g_.streams.size());
    std::vector<float>& f = c_.op_factor[stream];
    if (f.empty()) f.assign(g_.streams[stream].ops->size(), 1.0f);
    return f;
  }

  void scale_ops() {
    const TraceModel& m = g_.ctx.model;
    std::vector<float> by_name;  // per string: the product of the factors whose regex matches it
    if (!w_.scale_kernels.empty()) {
      by_name.assign(m.strings.size(), 1.0f);
      for (const WhatIf::KernelScale& s : w_.scale_kernels) {
        std::regex re;
        try {
          re = std::regex(s.regex, std::regex::ECMAScript);
        } catch (const std::regex_error& e) {
          throw std::invalid_argument("--scale-kernels: '" + s.regex + "' is not a regular expression: " + e.what());
        }
        for (size_t id = 0; id < m.strings.size(); ++id) {
          if (std::regex_search(m.strings[id], re)) by_name[id] *= float(s.factor);
        }
      }
    }
    for (uint32_t k = 0; k < g_.streams.size(); ++k) {
      const DeviceOps& ops = *g_.streams[k].ops;
      float stream_factor = 1.0f;
      for (const WhatIf::StreamScale& s : w_.scale_streams) {
        if (s.device == ops.device && s.stream == ops.stream) stream_factor *= float(s.factor);
      }
      for (uint32_t i = 0; i < ops.size(); ++i) {
        float f = stream_factor * (by_name.empty() ? 1.0f : by_name[ops.name[i]]);
        if (f == 1.0f) continue;
        factor(k)[i] *= f;
        ++p_.ops_scaled;
      }
    }
  }

  void drop_recompiles() {
    for (auto [thread, time] : late_compiles(g_.ctx)) {
      if (thread >= cuts_.size()) continue;
      cuts_[thread].push_back(time);
      ++p_.compiles_dropped;
    }
  }

  // On each thread, the time outside its calls that touch the device.
  void remove_host_gaps() {
    const TraceModel& m = g_.ctx.model;
    std::vector<std::vector<Interval>> calls(g_.waits.size());
    auto add = [&](const auto& tracks) {
      for (const auto& t : tracks) {
        if (t.thread >= calls.size()) continue;
        for (size_t i = 0; i < t.size(); ++i) calls[t.thread].push_back({t.start[i], t.end(i)});
      }
    };
    add(m.launches);
    add(m.transfers);
    add(m.syncs);
    add(m.compiles);
    std::vector<Interval> extents = thread_extents(m, g_.waits.size());
    for (uint32_t t = 0; t < g_.waits.size(); ++t) {
      for (const HostWait& w : g_.waits[t]) calls[t].push_back({w.start, w.end});
      if (extents[t].start >= extents[t].end) continue;
      for (const Interval& gap : IntervalSet(std::move(calls[t])).gaps(extents[t].start, extents[t].end, 1)) {
        cuts_[t].push_back(gap);
        ++p_.host_stretches_removed;
      }
    }
  }

  const DependencyGraph& g_;
  const WhatIf& w_;
  Prediction& p_;
  ReplayChanges c_;
  std::vector<std::vector<Interval>> cuts_;
};

// Per step, the last op it launched on each stream (event waits left
// out): a stream's ops end in order, so that op ends the step's work there.
std::vector<std::vector<OpRef>> last_ops_of_steps(const Context& ctx) {
  std::vector<std::vector<OpRef>> out(ctx.steps.size());
  for (size_t k = 0; k < ctx.steps.size(); ++k) {
    std::vector<OpRef>& last = out[k];
    ctx.for_each_step_launch(ctx.steps[k], [&](const Launches& l, size_t i) {
      const EventRef* op = ctx.op_of(l.correlation[i]);
      if (op == nullptr || ctx.model.device_ops[op->track].kind[op->index] == DeviceOpKind::sync) return;
      auto it = std::find_if(last.begin(), last.end(), [&](OpRef r) { return r.stream == op->track; });
      if (it == last.end()) last.push_back({op->track, op->index});
      else it->index = std::max(it->index, op->index);
    });
  }
  return out;
}

}  // namespace

// Each step's time as the steps rule judges it on the device: from the
// end of the previous step's window on its thread (the first: from its
// start) to when the device finished the work the step launched, or the
// step ended if later. A host that runs ahead of its device does not make
// its steps shorter: the device's pace does. `host` and `op_end` give the
// recorded or the replayed clock.
template <typename HostTime, typename OpEnd>
std::vector<int64_t> Predictor::step_times(HostTime host, OpEnd op_end) const {
  const Context& ctx = graph_.ctx;
  std::vector<int64_t> out;
  std::map<uint32_t, int64_t> window_end;  // by thread
  for (size_t k = 0; k < ctx.steps.size(); ++k) {
    const StepRange& s = ctx.steps[k];
    int64_t end = host(s.thread, s.end);
    for (OpRef op : step_ops_[k]) end = std::max(end, op_end(op));
    auto prev = window_end.find(s.thread);
    int64_t start = prev == window_end.end() ? host(s.thread, s.start) : prev->second;
    end = std::max(end, start);
    out.push_back(end - start);
    window_end[s.thread] = end;
  }
  return out;
}

Predictor::Predictor(const DependencyGraph& graph)
    : graph_(graph),
      basis_(graph),
      step_ops_(last_ops_of_steps(graph.ctx)),
      extents_(thread_extents(graph.ctx.model, graph.waits.size())) {
  measured_ = step_times([](uint32_t, int64_t t) { return t; }, [&](OpRef op) { return graph.end(op); });
  for (const StreamOps& s : graph.streams) {
    if (!s.end_max.empty()) measured_last_op_end_ = std::max(measured_last_op_end_, s.end_max.back());
  }
}

Prediction Predictor::predict(const WhatIf& change) const {
  Prediction p;
  ReplayChanges changes = ChangeBuilder(graph_, change, p).build();
  Replay replay(basis_, changes);
  read_times(replay, p);
  for (std::string_view m : missing_evidence(graph_)) p.missing.emplace_back(m);
  return p;
}

void Predictor::read_times(const Replay& replay, Prediction& p) const {
  const Context& ctx = graph_.ctx;
  std::vector<int64_t> predicted = step_times([&](uint32_t thread, int64_t t) { return replay.host_time(thread, t); },
                                              [&](OpRef op) { return replay.op_end(op); });
  for (size_t i = 0; i < ctx.steps.size(); ++i) p.steps.push_back({ctx.steps[i].number, measured_[i], predicted[i]});
  // The mean leaves out the warm-up steps (the recompile rule's), whose
  // first compiles and allocations no fix is about; all of them when
  // nothing else is left.
  size_t warm = std::min<size_t>(size_t(std::max<int64_t>(ctx.options.warmup_steps, 0)), measured_.size());
  if (warm == measured_.size()) warm = 0;
  if (!measured_.empty()) {
    auto n = int64_t(measured_.size() - warm);
    p.mean_measured_ns = std::accumulate(measured_.begin() + std::ptrdiff_t(warm), measured_.end(), int64_t{0}) / n;
    p.mean_predicted_ns = std::accumulate(predicted.begin() + std::ptrdiff_t(warm), predicted.end(), int64_t{0}) / n;
    p.warmup_steps = warm;
  }
  int64_t measured_end = run_end([](uint32_t, int64_t t) { return t; }, measured_last_op_end_);
  int64_t predicted_end =
      run_end([&](uint32_t thread, int64_t t) { return replay.host_time(thread, t); }, replay.last_op_end());
  p.measured_ns = std::max<int64_t>(0, measured_end - ctx.model.start_ns);
  p.predicted_ns = std::max<int64_t>(0, predicted_end - ctx.model.start_ns);
}

// Where the run ends on a clock: the last op's end or the last host
// event's, whichever is later; the trace's start when it has neither.
template <typename HostTime>
int64_t Predictor::run_end(HostTime host, int64_t last_op_end) const {
  int64_t last = last_op_end;
  for (uint32_t t = 0; t < extents_.size(); ++t) {
    if (extents_[t].start <= extents_[t].end) last = std::max(last, host(t, extents_[t].end));
  }
  return last == INT64_MIN ? graph_.ctx.model.start_ns : last;
}

}  // namespace analysis

Prediction what_if(const TraceModel& model, const WhatIf& change) { return what_if(model, change, {}); }

Prediction what_if(const TraceModel& model, const WhatIf& change, const AnalysisOptions& options) {
  analysis::Context ctx(model, options);
  analysis::DependencyGraph graph(ctx);
  return analysis::Predictor(graph).predict(change);
}

}  // namespace loupe::prof
