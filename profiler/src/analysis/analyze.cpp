#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>

#include "analysis/context.h"
#include "analysis/rules.h"
#include "loupe/prof/analysis.h"
#include "loupe/prof/units.h"

namespace loupe::prof {

using namespace analysis;

std::string_view name_of(Severity s) {
  static constexpr std::string_view names[] = {"info", "warning", "error"};
  return size_t(s) < 3 ? names[size_t(s)] : "?";
}

bool is_collective_kernel(std::string_view name) {
  // ncclKernel_AllReduce_RING_LL_Sum_float, ncclDevKernel_Generic (NCCL
  // 2.19 on), and RCCL's kernels, which keep these names.
  return name.starts_with("ncclKernel") || name.starts_with("ncclDevKernel") || name.starts_with("rcclKernel");
}

namespace analysis {

void grade_by_share(const Context& ctx, double warning_fraction, Finding& f) {
  double window = double(std::max<int64_t>(ctx.window(), 1));
  f.severity = double(f.impact_ns) >= warning_fraction * window ? Severity::warning : Severity::info;
  if (f.severity == Severity::info) {
    f.suggestion =
        fmt::format("minor: {} of the window, under the {} at which this rule warns; {}",
                    format_percent(double(f.impact_ns) / window), format_percent(warning_fraction), f.suggestion);
  }
}

}  // namespace analysis

std::string_view name_of(GapCause c) {
  static constexpr std::string_view names[kGapCauses] = {"compile",     "sync",        "host-work", "launch",
                                                         "between-ops", "device-wait", "unknown"};
  return size_t(c) < kGapCauses ? names[size_t(c)] : "?";
}

namespace {

using Rule = void (*)(const Context&, const AnalysisReport&, std::vector<Finding>&);
// reads_device_work: the rule's figures need every operation the device
// ran (idle, overlap), so an incomplete trace makes them untrustworthy.
struct RuleEntry {
  const char* name;
  Rule run;
  bool reads_device_work;
};
constexpr RuleEntry kRules[] = {
    {"recompile", rule_recompile, false},
    {"transfer", rule_transfer, true},
    {"idle-gap", rule_idle_gap, true},
    {"memory", rule_memory, false},
    {"leak", rule_leak, false},
    {"tiny-kernels", rule_tiny_kernels, false},
    {"async-timing", rule_async_timing, false},
    {"no-accelerator", rule_no_accelerator, false},
    {"steps", rule_steps, true},
    {"communication", rule_communication, true},
    {"copies", rule_copies, true},
    {"critical-path", rule_critical_path, true},
};

// On an incomplete trace, a finding whose figures need all device work
// says what is missing and what not to trust, and is never an error: the
// idle it measures may be work the trace does not hold.
void mark_incomplete(const std::vector<Incompleteness>& incomplete, std::vector<Finding>& findings) {
  if (incomplete.empty()) return;
  for (Finding& f : findings) {
    auto rule =
        std::find_if(std::begin(kRules), std::end(kRules), [&](const RuleEntry& r) { return f.rule == r.name; });
    if (rule == std::end(kRules) || !rule->reads_device_work) continue;
    if (f.severity == Severity::error) f.severity = Severity::warning;
    for (const Incompleteness& i : incomplete) {
      f.evidence.push_back({"incomplete trace", i.text()});
    }
  }
}

// A threshold by name: how to read and write it. Durations are ns and
// accept a unit ("20us", "5ms"); fractions accept a percentage ("15%").
struct Parameter {
  const char* name;
  const char* description;
  std::function<void(AnalysisOptions&, double)> set;
  std::function<double(const AnalysisOptions&)> get;
  bool duration;
  double max;  // the largest value the member's type holds
};

// The largest value a parameter of type T takes. For integers, a bound
// that converts back exactly (half the type's range, as an integer), far
// beyond any sensible threshold.
template <typename T>
double largest_value() {
  if constexpr (std::is_floating_point_v<T>) {
    return std::numeric_limits<double>::max();
  } else {
    constexpr T half = std::numeric_limits<T>::max() / 2;
    return std::min(double(half), 0x1p52);
  }
}

template <typename T>
Parameter param(const char* name, const char* description, T AnalysisOptions::*member, bool duration = false) {
  return {name,
          description,
          [member](AnalysisOptions& o, double v) { o.*member = T(v); },
          [member](const AnalysisOptions& o) { return double(o.*member); },
          duration,
          largest_value<T>()};
}

const std::vector<Parameter>& parameters() {
  static const std::vector<Parameter> table = {
      param("min_gap", "idle-gap: shortest device gap reported (ns; units allowed)", &AnalysisOptions::min_gap_ns,
            true),
      param("largest_gaps", "idle-gap: how many of the largest gaps a finding lists", &AnalysisOptions::largest_gaps),
      param("host_slowdown",
            "idle-gap: how many times a typical profiled run's time the host's bookkeeping ops (aten::view...) take "
            "when the host itself is slow",
            &AnalysisOptions::host_slowdown),
      param("idle_warning", "idle-gap: idle fraction of the window that makes a warning",
            &AnalysisOptions::idle_warning_fraction),
      param("idle_error", "idle-gap: idle fraction of the window that makes an error",
            &AnalysisOptions::idle_error_fraction),
      param("cause_min_coverage", "idle-gap: share of a gap a host activity must cover to be its cause",
            &AnalysisOptions::cause_min_coverage),
      param("kernel_wait_max", "idle-gap: longest stream gap counted as kernel wait (HTA's consecutive_kernel_delay)",
            &AnalysisOptions::kernel_wait_max_ns, true),
      param("warmup_steps", "recompile: steps whose compiles count as warm-up", &AnalysisOptions::warmup_steps),
      param("recompile_error", "recompile: compile time share of the window that makes an error",
            &AnalysisOptions::recompile_error_fraction),
      param("recurring_per_step",
            "transfer: share of steps with a transfer from one call site that counts as every step",
            &AnalysisOptions::recurring_per_step),
      param("recurring_without_steps", "transfer: count that counts as recurring in a trace without steps",
            &AnalysisOptions::recurring_without_steps),
      param("transfer_warning", "transfer: device idle a habit caused, as a share of the window, that makes a warning",
            &AnalysisOptions::transfer_warning_fraction),
      param("tiny_kernel", "tiny-kernels: duration under which a kernel without a launch is tiny (ns; units allowed)",
            &AnalysisOptions::tiny_kernel_ns, true),
      param("tiny_fraction", "tiny-kernels: share of kernels that must be tiny for a warning",
            &AnalysisOptions::tiny_fraction_warning),
      param("tiny_min_kernels", "tiny-kernels: fewest tiny kernels for a warning", &AnalysisOptions::tiny_min_kernels),
      param("launch_bound", "tiny-kernels: share of the window the device must idle waiting for launches",
            &AnalysisOptions::launch_bound_fraction),
      param("async_lag_ratio", "async-timing: device work after the range ends, as a share of the range",
            &AnalysisOptions::async_min_lag_ratio),
      param("memory_high", "memory: share of capacity above which memory is under pressure",
            &AnalysisOptions::memory_high_fraction),
      param("leak_min_growth", "leak: growth of live memory over the steps, as a share of the peak, worth a finding",
            &AnalysisOptions::leak_min_growth_fraction),
      param("step_spread", "steps: p90 over median step time that makes a warning",
            &AnalysisOptions::step_spread_warning),
      param("steady_width", "steps: p10 to p90 width, as a share of the median, under which steps are steady",
            &AnalysisOptions::steady_width),
      param("communication_warning",
            "communication: exposed collective time, as a share of the window, that makes a warning",
            &AnalysisOptions::communication_warning_fraction),
      param("copy_shown", "copies: copy-only device time, as a share of the window, worth a finding",
            &AnalysisOptions::copy_shown_fraction),
      param("copy_warning", "copies: copy-only device time, as a share of the window, that makes a warning",
            &AnalysisOptions::copy_warning_fraction),
      param("device_bound", "copies: share of its window a device is busy at which it sets the pace",
            &AnalysisOptions::device_bound_fraction),
  };
  return table;
}

}  // namespace

std::vector<AnalysisParameter> analysis_parameters() {
  std::vector<AnalysisParameter> out;
  const AnalysisOptions defaults;
  for (const Parameter& p : parameters()) out.push_back({p.name, p.description, p.get(defaults), p.duration});
  return out;
}

void set_analysis_parameter(AnalysisOptions& options, const std::string& name, const std::string& value) {
  for (const Parameter& p : parameters()) {
    if (name != p.name) continue;
    double v = parse_number(value, p.duration);
    if (!(v >= 0) || !std::isfinite(v))
      throw std::invalid_argument(fmt::format("{} must be a non-negative number", name));
    if (v > p.max) throw std::invalid_argument(fmt::format("{} = {} is too large", name, value));
    p.set(options, v);
    return;
  }
  throw std::invalid_argument(fmt::format("unknown analysis parameter '{}'", name));
}

std::vector<std::string> analysis_rules() {
  std::vector<std::string> names;
  for (const RuleEntry& r : kRules) names.emplace_back(r.name);
  return names;
}

AnalysisReport analyze(const TraceModel& model, const AnalysisOptions& options) {
  for (const std::string& r : options.rules) {
    bool known = std::any_of(std::begin(kRules), std::end(kRules), [&](const RuleEntry& e) { return r == e.name; });
    if (!known) {
      std::string all;
      for (const RuleEntry& e : kRules) all += (all.empty() ? "" : ", ") + std::string(e.name);
      throw std::invalid_argument(fmt::format("unknown rule '{}' (rules: {})", r, all));
    }
  }
  Context ctx(model, options);
  AnalysisReport report;
  report.path = model.path;
  report.window_start = ctx.window_start;
  report.window_end = ctx.window_end;
  report.times_are_order = ctx.times_are_order;
  report.incomplete = check_completeness(ctx);
  measure_idle(ctx, report);
  measure_steps(ctx, report);
  // One graph for the critical path and the findings' predictions.
  DependencyGraph graph(ctx);
  report.critical_path = critical_path(graph);
  report.launch_queue_full_ns = launch_queue_full_ns(ctx);

  for (const RuleEntry& r : kRules) {
    bool selected =
        options.rules.empty() || std::find(options.rules.begin(), options.rules.end(), r.name) != options.rules.end();
    if (selected) r.run(ctx, report, report.findings);
  }
  mark_incomplete(report.incomplete, report.findings);
  double window = double(std::max<int64_t>(ctx.window(), 1));
  for (Finding& f : report.findings) f.impact_fraction = double(f.impact_ns) / window;
  predict_fixes(graph, report.findings);
  std::stable_sort(report.findings.begin(), report.findings.end(), [](const Finding& a, const Finding& b) {
    if (a.impact_ns != b.impact_ns) return a.impact_ns > b.impact_ns;
    return a.severity > b.severity;
  });

  // The figures budgets and diffs compare.
  TraceMetrics& mt = report.metrics;
  mt.steps = ctx.distinct_steps;
  mt.step_time = double(report.steps.median_ns);
  mt.step_time_mad = double(report.steps.mad_ns);
  int64_t idle = 0, window_sum = 0;
  for (const DeviceIdle& d : report.devices) {
    idle += d.idle_ns;
    window_sum += d.window_end - d.window_start;
  }
  mt.idle_fraction = window_sum > 0 ? double(idle) / double(window_sum) : 0;
  for (const Compiles& c : model.compiles) {
    for (size_t i = 0; i < c.size(); ++i) mt.compiles += c.kind[i] == CompileKind::miss;
  }
  mt.recompiles = recompiles_after_warmup(ctx);
  uint64_t sync = 0;
  int64_t bytes = 0;
  for (const Transfers& t : model.transfers) {
    for (size_t i = 0; i < t.size(); ++i) {
      sync += t.synchronous[i];
      bytes += t.bytes[i];
    }
  }
  mt.sync_transfers_per_step = ctx.per_step(double(sync));
  mt.transfer_bytes_per_step = ctx.per_step(double(bytes));
  for (const MemoryEvents& me : model.memory) {
    int64_t peak = 0;
    for (int64_t a : me.allocated) peak = std::max(peak, a);
    const Device* d = model.device(me.device);
    double fraction = d && d->memory_capacity > 0 ? double(peak) / double(d->memory_capacity) : 0;
    mt.peak_memory = std::max(mt.peak_memory, peak);
    mt.peak_memory_fraction = std::max(mt.peak_memory_fraction, fraction);
  }
  mt.tiny_kernel_fraction = tiny_kernel_fraction(ctx);
  for (const DeviceOps& s : model.device_ops) {
    mt.device_ops += s.size();
    for (DeviceOpKind k : s.kind) mt.kernels += k == DeviceOpKind::kernel;
  }
  mt.kernels_per_step = ctx.per_step(double(mt.kernels));
  return report;
}

}  // namespace loupe::prof
