#include "diff_series.h"

#include <algorithm>
#include <limits>

namespace loupe::prof {

namespace {

// Step windows sorted by start, for a binary search by time.
class StepWindows {
 public:
  void add(int64_t start, int64_t end, uint32_t index) { windows_.push_back({start, end, index}); }
  void sort() {
    std::sort(windows_.begin(), windows_.end(), [](const Window& a, const Window& b) { return a.start < b.start; });
  }
  // The step whose window holds `t`, or -1.
  int64_t find(int64_t t) const {
    auto it =
        std::upper_bound(windows_.begin(), windows_.end(), t, [](int64_t v, const Window& w) { return v < w.start; });
    if (it == windows_.begin()) return -1;
    --it;
    return t < it->end ? int64_t(it->index) : -1;
  }

 private:
  struct Window {
    int64_t start, end;
    uint32_t index;
  };
  std::vector<Window> windows_;
};

struct Windows {
  StepWindows host, device;
};

Windows step_windows(const AnalysisReport& report, std::vector<int64_t>& numbers) {
  Windows w;
  const StepStats& st = report.steps;
  if (st.steps.empty()) {
    numbers.push_back(0);
    w.host.add(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), 0);
    w.device = w.host;
    return w;
  }
  for (size_t i = 0; i < st.steps.size(); ++i) {
    const StepStats::Step& s = st.steps[i];
    numbers.push_back(s.number);
    w.host.add(s.start, s.start + std::max<int64_t>(s.dur, 1), uint32_t(i));
    if (st.on_device) w.device.add(s.device_start, s.device_end, uint32_t(i));
  }
  if (!st.on_device) w.device = w.host;
  w.host.sort();
  w.device.sort();
  return w;
}

// Sums per (name, step) of each event's duration, or of 1 with `count`.
// Events of a track come in time order, so a name's steps mostly arrive in
// order and add to the last entry; tracks interleaved are sorted after.
template <typename Tracks>
ByName by_step(const TraceModel& m, const Tracks& tracks, const StepWindows& windows, bool count) {
  std::vector<StepValues> by_id(m.strings.size());
  for (const auto& t : tracks) {
    for (size_t i = 0; i < t.size(); ++i) {
      int64_t step = windows.find(t.start[i]);
      if (step < 0) continue;
      StepValues& v = by_id[t.name[i]];
      double x = count ? 1.0 : double(t.dur[i]);
      if (!v.empty() && v.back().first == uint32_t(step)) v.back().second += x;
      else v.push_back({uint32_t(step), x});
    }
  }
  ByName out;
  for (size_t id = 0; id < by_id.size(); ++id) {
    if (by_id[id].empty()) continue;
    StepValues& values = out[m.strings[id]];  // a trace may repeat a string under two ids
    values.insert(values.end(), by_id[id].begin(), by_id[id].end());
  }
  for (auto& [name, values] : out) {
    auto out_of_order = [](const auto& a, const auto& b) { return a.first >= b.first; };
    if (std::adjacent_find(values.begin(), values.end(), out_of_order) == values.end()) continue;
    std::sort(values.begin(), values.end());
    StepValues merged;
    for (const auto& v : values) {
      if (!merged.empty() && merged.back().first == v.first) merged.back().second += v.second;
      else merged.push_back(v);
    }
    values = std::move(merged);
  }
  return out;
}

}  // namespace

RunSeries run_series(const TraceModel& model, const AnalysisReport& report) {
  RunSeries r;
  Windows w = step_windows(report, r.step_numbers);
  const StepStats& st = report.steps;
  for (const StepStats::Step& s : st.steps) {
    if (!s.queue_fill) r.step_times.push_back(double(st.judged_ns(s)));
  }
  r.device_op_time = by_step(model, model.device_ops, w.device, false);
  r.device_op_count = by_step(model, model.device_ops, w.device, true);
  r.host_span_time = by_step(model, model.host_spans, w.host, false);
  r.launch_count = by_step(model, model.launches, w.host, true);
  return r;
}

std::vector<double> dense_values(const StepValues& values, size_t steps) {
  std::vector<double> out(steps, 0.0);
  for (const auto& [step, v] : values) out[step] = v;
  return out;
}

double step_value(const StepValues& values, size_t steps, int64_t index) {
  if (index >= 0) {
    auto it = std::lower_bound(values.begin(), values.end(), uint32_t(index),
                               [](const std::pair<uint32_t, double>& v, uint32_t i) { return v.first < i; });
    return it != values.end() && it->first == uint32_t(index) ? it->second : 0.0;
  }
  return median(dense_values(values, steps));
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace loupe::prof
