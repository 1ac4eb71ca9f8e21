// communication: collective kernels (NCCL, RCCL) are communication, not
// compute. What costs a step is the collective time no compute kernel
// overlaps (exposed communication), as HTA's comm/comp overlap measures it:
// time the step would lose if the collectives were perfectly hidden.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "analysis/rules.h"
#include "loupe/prof/units.h"

namespace loupe::prof::analysis {

namespace {

struct Collective {
  uint64_t count = 0;
  int64_t time_ns = 0, exposed_ns = 0;
};

// Per collective name: count, time, and the part of its time no compute
// kernel overlapped.
std::map<std::string, Collective> collectives_by_name(const Context& ctx, const DeviceActivity& d) {
  std::map<std::string, Collective> by_name;
  for (const DeviceOps* s : d.streams) {
    for (size_t i = 0; i < s->size(); ++i) {
      if (s->kind[i] != DeviceOpKind::kernel) continue;
      const std::string& name = ctx.model.str(s->name[i]);
      if (!is_collective_kernel(name)) continue;
      Collective& c = by_name[name];
      ++c.count;
      c.time_ns += s->dur[i];
      c.exposed_ns += s->dur[i] - d.compute.covered(s->start[i], s->end(i));
    }
  }
  return by_name;
}

// Exposed communication per step, in each step's device window (the
// collectives a step launched run after it ends on the host).
std::vector<int64_t> exposed_per_step(const StepStats& steps, const IntervalSet& exposed) {
  std::map<int64_t, int64_t> by_number;  // steps on several threads count once
  for (const StepStats::Step& s : steps.steps) {
    int64_t& e = by_number[s.number];
    e = std::max(e, exposed.covered(s.device_start, s.device_end));
  }
  std::vector<int64_t> out;
  out.reserve(by_number.size());
  for (const auto& [number, e] : by_number) out.push_back(e);
  return out;
}

void add_finding(const Context& ctx, const StepStats& steps, const DeviceActivity& d, std::vector<Finding>& out) {
  IntervalSet exposed = IntervalSet::subtract(d.collectives, d.compute);
  int64_t total = d.collectives.length(), hidden = total - exposed.length();
  double window = double(std::max<int64_t>(ctx.window(), 1));
  Finding f;
  f.rule = "communication";
  f.devices = {d.device};
  f.impact_ns = exposed.length();  // inside the device's window, so within the active window
  f.severity =
      double(f.impact_ns) >= ctx.options.communication_warning_fraction * window ? Severity::warning : Severity::info;
  f.title = fmt::format(
      "{}: {} of collective communication not overlapped by compute ({} of the window); {} of "
      "collective time overlaps compute",
      device_label(ctx, d.device), format_duration(exposed.length()), format_percent(double(exposed.length()) / window),
      format_percent(double(hidden) / double(std::max<int64_t>(total, 1))));
  f.evidence.push_back({"collective time", format_duration(total)});
  f.evidence.push_back({"overlapped by compute", format_duration(hidden)});
  f.evidence.push_back({"exposed", format_duration(exposed.length())});
  if (std::vector<int64_t> per_step = exposed_per_step(steps, exposed); !per_step.empty()) {
    auto [lo, hi] = std::minmax_element(per_step.begin(), per_step.end());
    f.evidence.push_back({"exposed per step", fmt::format("median {} over {} steps (from {} to {})",
                                                          format_duration(quantile(per_step, 0.5)), per_step.size(),
                                                          format_duration(*lo), format_duration(*hi))});
  }
  std::map<std::string, Collective> by_name = collectives_by_name(ctx, d);
  std::vector<std::pair<std::string, Collective>> costly(by_name.begin(), by_name.end());
  std::sort(costly.begin(), costly.end(),
            [](const auto& a, const auto& b) { return a.second.exposed_ns > b.second.exposed_ns; });
  for (size_t i = 0; i < costly.size() && i < 5; ++i) {
    const auto& [name, c] = costly[i];
    f.evidence.push_back({"collective", fmt::format("{}: {} kernels, {}, {} exposed", name, format_count(c.count),
                                                    format_duration(c.time_ns), format_duration(c.exposed_ns))});
  }
  for (const Interval& p : exposed.intervals()) {
    if (f.ranges.size() == 20) break;
    f.ranges.push_back({p.start, p.end});
  }
  f.suggestion = hidden * 2 < total
                     ? "most collective time runs with no compute beside it: overlap it (smaller DDP buckets so that "
                       "the all-reduce starts during the backward pass, FSDP prefetching, communication on its own "
                       "stream); if the collectives themselves are slow, compare the ranks: one that arrives late "
                       "makes every other wait inside the collective"
                     : "most collective time is hidden behind compute; what remains exposed is the tail of each "
                       "step's communication";
  // Under the warning share the advice still holds, but its gain is small:
  // say so first, so that a few microseconds are not read as a problem.
  if (f.severity == Severity::info) {
    f.suggestion = fmt::format("minor: {} of the window, under the {} at which this rule warns; {}",
                               format_percent(double(f.impact_ns) / window),
                               format_percent(ctx.options.communication_warning_fraction), f.suggestion);
  }
  out.push_back(std::move(f));
}

}  // namespace

void rule_communication(const Context& ctx, const AnalysisReport& report, std::vector<Finding>& out) {
  for (const DeviceActivity& d : ctx.devices) {
    if (!d.collectives.empty()) add_finding(ctx, report.steps, d, out);
  }
}

}  // namespace loupe::prof::analysis
