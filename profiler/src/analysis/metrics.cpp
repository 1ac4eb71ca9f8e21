#include "loupe/prof/metrics.h"

#include <fmt/format.h>

#include <stdexcept>

namespace loupe::prof {

std::string_view name_of(MetricUnit u) {
  switch (u) {
    case MetricUnit::count: return "count";
    case MetricUnit::ns: return "ns";
    case MetricUnit::bytes: return "bytes";
    case MetricUnit::fraction: return "fraction";
  }
  return "?";
}

#define LOUPE_TRACE_METRIC_ROW(name, type, unit, compare, budgeted, description) \
  {#name,    MetricUnit::unit, MetricCompare::compare,                           \
   budgeted, description,      [](const TraceMetrics& m) { return double(m.name); }},
#define LOUPE_JOB_METRIC_ROW(name, type, unit, compare, budgeted, description) \
  {#name,    MetricUnit::unit, MetricCompare::compare,                         \
   budgeted, description,      [](const JobMetrics& m) { return double(m.name); }},

namespace {

const MetricDef<TraceMetrics> kTraceMetrics[] = {LOUPE_TRACE_METRICS(LOUPE_TRACE_METRIC_ROW)};
const MetricDef<JobMetrics> kJobMetrics[] = {LOUPE_JOB_METRICS(LOUPE_JOB_METRIC_ROW)};

// Renamed when each metric got one name everywhere (trace JSON schema 2).
const MetricAlias kAliases[] = {
    {"recompiles_after_warmup", "recompiles_max", 1},  // budget key
    {"step_time_ms_max", "step_time_max", 1e6},        // budget key, in milliseconds
    {"kernel_count", "kernels", 1},                    // --fail-on metric
};

const char* compared(MetricCompare c) {
  switch (c) {
    case MetricCompare::timed: return "beyond noise";
    case MetricCompare::exact: return "any change";
    case MetricCompare::not_compared: return "-";
  }
  return "?";
}

template <typename Metrics>
std::string rows(std::span<const MetricDef<Metrics>> defs) {
  std::string out;
  for (const MetricDef<Metrics>& d : defs) {
    out += fmt::format("| `{}` | {} | {} | {} | {} |\n", d.name, name_of(d.unit), compared(d.compare),
                       d.budgeted ? fmt::format("`{}_max`", d.name) : "-", d.description);
  }
  return out;
}

template <typename Metrics>
double value_of(std::span<const MetricDef<Metrics>> defs, const Metrics& m, std::string_view name) {
  for (const MetricDef<Metrics>& d : defs) {
    if (name == d.name) return d.value(m);
  }
  throw std::invalid_argument(fmt::format("unknown metric '{}'", name));
}

}  // namespace

double metric_value(const TraceMetrics& m, std::string_view name) { return value_of(trace_metrics(), m, name); }
double metric_value(const JobMetrics& m, std::string_view name) { return value_of(job_metrics(), m, name); }

std::span<const MetricDef<TraceMetrics>> trace_metrics() { return kTraceMetrics; }
std::span<const MetricDef<JobMetrics>> job_metrics() { return kJobMetrics; }
std::span<const MetricAlias> metric_aliases() { return kAliases; }

std::string metrics_markdown() {
  std::string head = "| metric | unit | `loupe diff` marks | budget key | what it is |\n|---|---|---|---|---|\n";
  return "A trace's:\n\n" + head + rows(trace_metrics()) + "\nA job's:\n\n" + head + rows(job_metrics());
}

}  // namespace loupe::prof
