#include "analysis/context.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "loupe/prof/units.h"

namespace loupe::prof::analysis {

namespace {

int64_t overlap(int64_t a, int64_t b, int64_t start, int64_t end) { return std::min(b, end) - std::max(a, start); }

}  // namespace

bool is_step_marker(std::string_view name) {
  if (name.rfind("ProfilerStep#", 0) == 0) return true;
  if (name == "step" || name == "Step") return true;
  return (name.rfind("step ", 0) == 0 || name.rfind("Step ", 0) == 0 || name.rfind("step#", 0) == 0) &&
         name.size() > 5 && std::isdigit(static_cast<unsigned char>(name.back()));
}

namespace {

int64_t step_number_of(std::string_view name, int64_t fallback) {
  size_t i = name.size();
  while (i > 0 && std::isdigit(static_cast<unsigned char>(name[i - 1]))) --i;
  if (i == name.size()) return fallback;
  return std::stoll(std::string(name.substr(i)));
}

}  // namespace

OpAt first_op_from(const DeviceActivity& d, int64_t t) {
  OpAt best;
  for (const DeviceOps* s : d.streams) {
    size_t i = lower_bound_time(s->start, t);
    while (i < s->size() && s->kind[i] == DeviceOpKind::sync) ++i;
    if (i < s->size() && (best.stream == nullptr || s->start[i] < best.stream->start[best.index])) best = {s, i};
  }
  return best;
}

void CorrelationIndex::build(std::vector<std::pair<uint64_t, EventRef>> entries) {
  uint64_t max_id = 0;
  for (const auto& e : entries) max_id = std::max(max_id, e.first);
  if (max_id <= 4 * entries.size() + 1024) {
    dense_.assign(max_id + 1, EventRef{});
    present_.assign(max_id + 1, false);
    for (const auto& [id, ref] : entries) {
      dense_[id] = ref;
      present_[id] = true;
    }
    return;
  }
  std::sort(entries.begin(), entries.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  sorted_ = std::move(entries);
}

const EventRef* CorrelationIndex::find(uint64_t correlation) const {
  if (correlation == 0) return nullptr;
  if (!dense_.empty()) return correlation < dense_.size() && present_[correlation] ? &dense_[correlation] : nullptr;
  auto it = std::lower_bound(sorted_.begin(), sorted_.end(), correlation,
                             [](const auto& p, uint64_t c) { return p.first < c; });
  return it != sorted_.end() && it->first == correlation ? &it->second : nullptr;
}

Context::Context(const TraceModel& m, const AnalysisOptions& opt) : model(m), options(opt) {
  auto order = m.info.meta.find(kMetaTimesAreOrder);
  times_are_order = order != m.info.meta.end() && order->second == "1";
  index_devices();
  index_correlations();
  index_threads();
  index_steps();
}

std::string Context::time_text(int64_t t) const {
  return times_are_order ? fmt::format("at entry {}", t + 1) : fmt::format("at {}", format_duration(t));
}

// Devices: busy time as the union over all streams, never a per-stream
// sum. A stream waiting on an event (a sync op) is not busy: the device
// does no work for it.
void Context::index_devices() {
  const TraceModel& m = model;
  std::map<uint32_t, DeviceActivity> by_device;
  // Whether each string names a collective, decided once per name.
  std::vector<int8_t> collective(m.strings.size(), -1);
  auto is_collective = [&](StringId name) {
    if (collective[name] < 0) collective[name] = is_collective_kernel(m.str(name)) ? 1 : 0;
    return collective[name] == 1;
  };
  for (const DeviceOps& s : m.device_ops) {
    std::vector<Interval> all, compute, comm, copy;
    all.reserve(s.size());
    for (size_t i = 0; i < s.size(); ++i) {
      if (s.kind[i] == DeviceOpKind::sync) continue;
      Interval iv{s.start[i], s.end(i)};
      all.push_back(iv);
      if (s.kind[i] != DeviceOpKind::kernel) copy.push_back(iv);
      else (is_collective(s.name[i]) ? comm : compute).push_back(iv);
    }
    if (all.empty()) continue;
    DeviceActivity& d = by_device[s.device];
    d.device = s.device;
    d.streams.push_back(&s);
    d.busy = IntervalSet::unite(d.busy, IntervalSet::from_sorted(all));
    d.compute = IntervalSet::unite(d.compute, IntervalSet::from_sorted(compute));
    d.collectives = IntervalSet::unite(d.collectives, IntervalSet::from_sorted(comm));
    d.copies = IntervalSet::unite(d.copies, IntervalSet::from_sorted(copy));
  }
  for (auto& [id, d] : by_device) {
    d.kernels = IntervalSet::unite(d.compute, d.collectives);
    d.window_start = d.busy.intervals().front().start;
    d.window_end = d.busy.intervals().back().end;
    devices.push_back(std::move(d));
  }
  if (!devices.empty()) {
    window_start = devices.front().window_start;
    window_end = devices.front().window_end;
    for (const DeviceActivity& d : devices) {
      window_start = std::min(window_start, d.window_start);
      window_end = std::max(window_end, d.window_end);
    }
  } else {
    window_start = m.start_ns;
    window_end = m.end_ns;
  }
}

// Correlation ids, both ways.
void Context::index_correlations() {
  const TraceModel& m = model;
  std::vector<std::pair<uint64_t, EventRef>> launches, ops;
  for (uint32_t t = 0; t < m.launches.size(); ++t) {
    const Launches& l = m.launches[t];
    for (uint32_t i = 0; i < l.size(); ++i) {
      if (l.correlation[i] != 0) launches.push_back({l.correlation[i], {t, i}});
    }
  }
  for (uint32_t t = 0; t < m.device_ops.size(); ++t) {
    const DeviceOps& o = m.device_ops[t];
    for (uint32_t i = 0; i < o.size(); ++i) {
      if (o.correlation[i] != 0) ops.push_back({o.correlation[i], {t, i}});
    }
  }
  launch_by_correlation_.build(std::move(launches));
  op_by_correlation_.build(std::move(ops));
}

// Host threads: what blocked them and what compiled on them.
void Context::index_threads() {
  const TraceModel& m = model;
  std::map<uint32_t, ThreadActivity> by_thread;
  std::map<uint32_t, std::vector<Interval>> compile, blocked;
  for (const HostSpans& s : m.host_spans) {
    ThreadActivity& t = by_thread[s.thread];
    t.spans = &s;
    for (uint32_t i = 0; i < s.size(); ++i) {
      if (s.kind[i] == SpanKind::compile) compile[s.thread].push_back({s.start[i], s.end(i)});
      if (s.kind[i] == SpanKind::wait) blocked[s.thread].push_back({s.start[i], s.end(i)});
      if (s.kind[i] == SpanKind::user || s.kind[i] == SpanKind::timing || s.kind[i] == SpanKind::runtime) {
        if (t.code_by_depth.size() <= s.depth[i]) t.code_by_depth.resize(s.depth[i] + 1);
        t.code_by_depth[s.depth[i]].push_back(i);
      }
    }
  }
  for (const Launches& l : m.launches) by_thread[l.thread].launches = &l;
  for (const Compiles& c : m.compiles) {
    for (size_t i = 0; i < c.size(); ++i) {
      if (c.kind[i] != CompileKind::hit) compile[c.thread].push_back({c.start[i], c.end(i)});
    }
  }
  for (const Transfers& t : m.transfers) {
    for (size_t i = 0; i < t.size(); ++i) {
      if (t.synchronous[i]) blocked[t.thread].push_back({t.start[i], t.end(i)});
    }
  }
  for (auto& [id, v] : compile) by_thread[id].compile = IntervalSet(v);
  for (auto& [id, v] : blocked) by_thread[id].blocked = IntervalSet(v);
  for (auto& [id, t] : by_thread) {
    t.thread = id;
    compile_all = IntervalSet::unite(compile_all, t.compile);
    blocked_all = IntervalSet::unite(blocked_all, t.blocked);
    threads.push_back(std::move(t));
  }
}

// Steps: the steps table, else host spans named like steps.
void Context::index_steps() {
  const TraceModel& m = model;
  for (const Steps& s : m.steps) {
    for (size_t i = 0; i < s.size(); ++i) steps.push_back({s.thread, s.number[i], s.start[i], s.end(i)});
  }
  if (steps.empty()) {
    for (const HostSpans& s : m.host_spans) {
      for (size_t i = 0; i < s.size(); ++i) {
        const std::string& name = m.str(s.name[i]);
        if (is_step_marker(name)) {
          steps.push_back({s.thread, step_number_of(name, int64_t(steps.size())), s.start[i], s.end(i)});
        }
      }
    }
  }
  std::sort(steps.begin(), steps.end(), [](const StepRange& a, const StepRange& b) {
    return a.start != b.start ? a.start < b.start : a.thread < b.thread;
  });
  drop_stub_steps();
  std::vector<int64_t> numbers;
  for (const StepRange& s : steps) numbers.push_back(s.number);
  std::sort(numbers.begin(), numbers.end());
  distinct_steps = size_t(std::unique(numbers.begin(), numbers.end()) - numbers.begin());
}

// A step marker during which no device worked and its thread launched
// nothing (PyTorch opens one more ProfilerStep after the last, and a
// profiler schedule can end inside one) is not a step: counting it would
// put a step of a few microseconds among the real ones. Without devices
// (a CPU-only trace) every step stays.
void Context::drop_stub_steps() {
  if (devices.empty()) return;
  std::erase_if(steps, [&](const StepRange& s) {
    for (const DeviceActivity& d : devices) {
      if (d.busy.covered(s.start, s.end) > 0) return false;
    }
    const ThreadActivity* t = thread(s.thread);
    if (t != nullptr && t->launches_in(s.start, s.end) > 0) return false;
    stub_steps.push_back(s);
    return true;
  });
}

std::vector<uint32_t> ThreadActivity::code_spans_at(int64_t t, uint32_t max_depth) const {
  std::vector<uint32_t> out;
  for (size_t depth = 0; depth < code_by_depth.size() && depth <= max_depth; ++depth) {
    const std::vector<uint32_t>& at = code_by_depth[depth];
    auto it = std::partition_point(at.begin(), at.end(), [&](uint32_t i) { return spans->start[i] <= t; });
    if (it == at.begin()) continue;
    uint32_t i = *(it - 1);
    if (spans->end(i) > t) out.push_back(i);
  }
  return out;
}

int64_t ThreadActivity::deepest_code_span_covering(int64_t a, int64_t b, int64_t need, const TraceModel& model) const {
  for (size_t d = code_by_depth.size(); d-- > 0;) {
    const std::vector<uint32_t>& at = code_by_depth[d];
    // Spans at one depth do not overlap: sorted by end as by start.
    auto it = std::partition_point(at.begin(), at.end(), [&](uint32_t i) { return spans->end(i) <= a; });
    for (; it != at.end() && spans->start[*it] < b; ++it) {
      if (overlap(a, b, spans->start[*it], spans->end(*it)) >= need && !is_step_marker(model.str(spans->name[*it]))) {
        return *it;
      }
    }
  }
  return -1;
}

int64_t ThreadActivity::code_covered(int64_t a, int64_t b) const {
  if (code_by_depth.empty()) return 0;
  const std::vector<uint32_t>& at = code_by_depth[0];
  int64_t covered = 0;
  auto it = std::partition_point(at.begin(), at.end(), [&](uint32_t i) { return spans->end(i) <= a; });
  for (; it != at.end() && spans->start[*it] < b; ++it) covered += overlap(a, b, spans->start[*it], spans->end(*it));
  return covered;
}

size_t ThreadActivity::launches_in(int64_t a, int64_t b) const {
  if (launches == nullptr) return 0;
  return lower_bound_time(launches->start, b) - lower_bound_time(launches->start, a);
}

const DeviceActivity* Context::device(uint32_t id) const {
  for (const DeviceActivity& d : devices) {
    if (d.device == id) return &d;
  }
  return nullptr;
}

const ThreadActivity* Context::thread(uint32_t id) const {
  auto it = std::lower_bound(threads.begin(), threads.end(), id,
                             [](const ThreadActivity& t, uint32_t k) { return t.thread < k; });
  return it != threads.end() && it->thread == id ? &*it : nullptr;
}

const StepRange* Context::step_at(uint32_t thread_id, int64_t t) const {
  // Steps are sorted by start; those of one thread do not overlap.
  auto it = std::partition_point(steps.begin(), steps.end(), [&](const StepRange& s) { return s.start <= t; });
  while (it != steps.begin()) {
    --it;
    if (it->thread == thread_id) return it->end > t ? &*it : nullptr;
  }
  return nullptr;
}

const EventRef* Context::launch_of(uint64_t correlation) const { return launch_by_correlation_.find(correlation); }
const EventRef* Context::op_of(uint64_t correlation) const { return op_by_correlation_.find(correlation); }

bool is_eager_op(SpanKind kind, std::string_view name) {
  return kind == SpanKind::runtime && name.starts_with("eager ");
}

namespace {

// A chain that fits on a line. With Python frames: from the innermost
// frame of the user's code (the call site an engineer edits), then the ops
// it ran, then the innermost element. Otherwise the outermost element
// (the phase: "## forward ##") and the innermost three.
std::string shorten_chain(const std::vector<std::string_view>& names) {
  std::vector<std::string_view> kept;
  size_t user = names.size();
  bool python = false;
  for (size_t i = 0; i < names.size(); ++i) {
    if (!is_python_frame(names[i])) continue;
    python = true;
    if (!is_library_file(names[i])) user = i;
  }
  if (python) {
    if (user < names.size()) kept.push_back(names[user]);
    for (size_t i = user < names.size() ? user + 1 : 0; i < names.size(); ++i) {
      if (!is_python_frame(names[i]) || i + 1 == names.size()) kept.push_back(names[i]);
    }
  } else {
    kept = names;
  }
  constexpr size_t kLongest = 5;
  std::string out;
  for (size_t i = 0; i < kept.size(); ++i) {
    if (kept.size() > kLongest && i > 0 && i + 3 < kept.size()) {
      if (i == 1) out += " > …";
      continue;
    }
    out += (out.empty() ? "" : " > ") + std::string(kept[i]);
  }
  return out;
}

}  // namespace

std::string Context::enclosing_chain(uint32_t thread_id, int64_t t, uint32_t max_depth) const {
  const ThreadActivity* th = thread(thread_id);
  if (th == nullptr || th->spans == nullptr) return "";
  std::vector<std::string_view> names;
  for (uint32_t i : th->code_spans_at(t, max_depth)) {
    const std::string& name = model.str(th->spans->name[i]);
    if (!is_step_marker(name)) names.push_back(name);  // a different name each step: not where, but when
  }
  return shorten_chain(names);
}

bool Context::inside_op(uint32_t thread_id, int64_t t) const {
  const ThreadActivity* th = thread(thread_id);
  if (th == nullptr || th->spans == nullptr) return false;
  for (uint32_t i : th->code_spans_at(t)) {
    const std::string& name = model.str(th->spans->name[i]);
    if (!is_python_frame(name) && !is_step_marker(name)) return true;
  }
  return false;
}

std::string Context::stack_text(uint32_t id) const {
  constexpr int kFrames = 4;
  std::string out = callsite_text(id);
  const CallSite* c = model.callsite(id);
  for (int n = 1; c != nullptr && c->parent != 0; ++n) {
    c = model.callsite(c->parent);
    if (c == nullptr) break;
    if (n == kFrames) return out + " < …";
    out += fmt::format(" < {}:{}", model.str(c->file), c->line);
  }
  return out;
}

std::string Context::callsite_text(uint32_t id) const {
  const CallSite* c = model.callsite(id);
  if (c == nullptr) return "";
  return fmt::format("{}:{}", model.str(c->file), c->line);
}

}  // namespace loupe::prof::analysis
