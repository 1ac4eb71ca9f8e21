// critical-path: what bounds the run, from its critical path
// (critical_path.cpp). A description, not a fault: it costs nothing by
// itself (impact 0, severity info), and tells which fixes can pay: only
// time on the path can be saved.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <string>

#include "analysis/rules.h"
#include "loupe/prof/units.h"

namespace loupe::prof::analysis {

namespace {

// The categories of a breakdown, most time first, those with none left out.
std::vector<PathCategory> by_time(const PathBreakdown& b) {
  std::vector<PathCategory> order;
  for (size_t c = 0; c < kPathCategories; ++c) {
    if (b.ns[c] > 0) order.push_back(PathCategory(c));
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](PathCategory x, PathCategory y) { return b.ns[size_t(x)] > b.ns[size_t(y)]; });
  return order;
}

std::string shares(const PathBreakdown& b) {
  double total = double(std::max<int64_t>(b.end - b.start, 1));
  std::string out;
  for (PathCategory c : by_time(b)) {
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", name_of(c), format_percent(double(b.ns[size_t(c)]) / total));
  }
  return out;
}

std::string advice(PathCategory c) {
  switch (c) {
    case PathCategory::host_compute:
      return "the host sets the pace: the device waits for the program's own code (Python, the framework's "
             "dispatch). Faster kernels save nothing until the host is faster: fewer, larger ops (torch.compile, "
             "jax.jit, CUDA graphs), less Python per step";
    case PathCategory::data_loading:
      return "the input pipeline sets the pace: load batches in DataLoader workers (num_workers > 0, "
             "persistent_workers=True), with pin_memory and prefetching";
    case PathCategory::launch_overhead:
      return "launching sets the pace: each kernel costs more to launch than to run; fuse kernels "
             "(torch.compile, jax.jit) or replay them as a CUDA graph";
    case PathCategory::kernel:
      return "the device's kernels set the pace: host-side changes save nothing; make the kernels on the path "
             "faster (mixed precision, better algorithms, larger batches per kernel)";
    case PathCategory::copy:
      return "copies set the pace: overlap them with compute on another stream, from pinned memory, or avoid them";
    case PathCategory::communication:
      return "communication sets the pace: overlap collectives with compute (gradient bucketing), or compress "
             "them; analyse the job to see whether a slower rank is what they wait for";
    case PathCategory::synchronisation:
      return "waits set the pace: streams or the host wait on each other for work the trace does not show as the "
             "cause; look at the synchronising calls on the path";
  }
  return "";
}

}  // namespace

void rule_critical_path(const Context& ctx, const AnalysisReport& report, std::vector<Finding>& out) {
  const CriticalPath& path = report.critical_path;
  const PathBreakdown& whole = path.whole;
  int64_t length = whole.end - whole.start;
  if (path.segments.empty() || length <= 0) return;
  std::vector<PathCategory> order = by_time(whole);
  PathCategory top = order.front();
  Finding f;
  f.rule = "critical-path";
  f.severity = Severity::info;
  f.title = fmt::format("the critical path is bound by {}: {} of its {}", name_of(top),
                        format_percent(double(whole.ns[size_t(top)]) / double(length)), format_duration(length));
  f.ranges.push_back({whole.start, whole.end});
  f.evidence.push_back({"critical path", fmt::format("{} {}, to {}", format_duration(length),
                                                     ctx.time_text(whole.start), format_duration(whole.end))});
  for (PathCategory c : order) {
    f.evidence.push_back(
        {std::string(name_of(c)), fmt::format("{} ({})", format_duration(whole.ns[size_t(c)]),
                                              format_percent(double(whole.ns[size_t(c)]) / double(length)))});
  }
  if (!path.steps.empty()) {
    PathBreakdown sum;
    for (const CriticalPath::Step& s : path.steps) {
      sum.end += s.time.end - s.time.start;
      for (size_t c = 0; c < kPathCategories; ++c) sum.ns[c] += s.time.ns[c];
    }
    size_t n = path.steps.size();
    f.evidence.push_back({"per step", fmt::format("{} step{}, {} a step on average: {}", n, n == 1 ? "" : "s",
                                                  format_duration(sum.end / int64_t(n)), shares(sum))});
  }
  if (path.waits_by_time > 0) {
    f.evidence.push_back({"waits matched by time", fmt::format("{}", path.waits_by_time)});
  }
  if (path.stream_waits_by_time > 0) {
    f.evidence.push_back({"stream waits inferred by time", fmt::format("{}", path.stream_waits_by_time)});
  }
  for (std::string_view m : path.missing) f.evidence.push_back({"cannot tell", std::string(m)});
  f.suggestion = advice(top);
  out.push_back(std::move(f));
}

}  // namespace loupe::prof::analysis
