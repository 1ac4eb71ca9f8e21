#include "loupe/prof/trace_diff.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "loupe/prof/report_format.h"
#include "loupe/prof/safe_text.h"
#include "loupe/prof/units.h"

namespace loupe::prof {

namespace {

// Relative standard error of a median step time: 1.2533 sigma / sqrt(n),
// with sigma estimated as 1.4826 MAD (both exact for normal data).
double median_relative_error(const TraceMetrics& m) {
  if (m.steps < 2 || m.step_time <= 0) return 0;
  return 1.2533 * 1.4826 * m.step_time_mad / m.step_time / std::sqrt(double(m.steps));
}

DiffRow plain_row(std::string name, std::string unit, double base, double head) {
  DiffRow r{std::move(name), std::move(unit), base, head, head - base, 0, false, {}};
  r.delta_fraction = base != 0 ? r.delta / std::fabs(base) : 0;
  return r;
}

// Counts and bytes are exact: any change is real (beyond rounding of
// per-step averages). Times carry the noise of step-to-step spread.
void mark(DiffRow& r, bool timed, double noise) {
  if (!timed) r.beyond_noise = r.base == 0 ? r.head != 0 : std::fabs(r.delta_fraction) > 1e-6;
  else if (r.base == 0) r.beyond_noise = r.head != 0;
  else r.beyond_noise = std::fabs(r.delta_fraction) > noise;
  if (r.base == 0 && r.head != 0) r.change = "added";
  else if (r.head == 0 && r.base != 0) r.change = "deleted";
  else if (!r.beyond_noise) r.change = "unchanged";
  else r.change = r.delta > 0 ? "increased" : "decreased";
}

// Total duration (or, with `count`, the number of events) per step of
// each name, over a trace.
template <typename Tracks>
std::map<std::string, double> per_name(const TraceModel& m, const Tracks& tracks, double steps, bool count = false) {
  // Sum by string id first: one array slot per id, no lookups per event.
  std::vector<double> by_id(m.strings.size(), 0.0);
  std::vector<bool> seen(m.strings.size(), false);
  for (const auto& t : tracks) {
    for (size_t i = 0; i < t.size(); ++i) {
      by_id[t.name[i]] += count ? 1.0 : double(t.dur[i]);
      seen[t.name[i]] = true;
    }
  }
  std::map<std::string, double> out;
  for (size_t id = 0; id < by_id.size(); ++id) {
    if (seen[id]) out[m.strings[id]] += by_id[id] / std::max(steps, 1.0);
  }
  return out;
}

std::vector<DiffRow> name_rows(const std::map<std::string, double>& base, const std::map<std::string, double>& head,
                               double noise, bool counts = false) {
  std::vector<DiffRow> rows;
  std::map<std::string, std::pair<double, double>> both;
  for (const auto& [n, v] : base) both[n].first = v;
  for (const auto& [n, v] : head) both[n].second = v;
  for (const auto& [n, v] : both) {
    DiffRow r = plain_row(n, counts ? "count" : "ns", v.first, v.second);
    mark(r, !counts, noise);
    rows.push_back(r);
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const DiffRow& a, const DiffRow& b) { return std::fabs(a.delta) > std::fabs(b.delta); });
  return rows;
}

std::string value_text(const DiffRow& r, double v, bool signed_) {
  std::string sign = signed_ && v > 0 ? "+" : "";
  if (r.unit == "ns") return sign + format_duration(int64_t(std::llround(v)));
  if (r.unit == "bytes") return sign + format_bytes(int64_t(std::llround(v)));
  if (r.unit == "fraction") return fmt::format("{}{:.2f} pts", sign, v * 100);
  if (v == std::floor(v) && std::fabs(v) < 9e15) return (v < 0 ? "-" : sign) + format_count(uint64_t(std::fabs(v)));
  return fmt::format("{}{:.3f}", sign, v);
}

std::string value_text(const DiffRow& r, double v) {
  if (r.unit == "fraction") return format_percent(v);
  return value_text(r, v, false);
}

std::string percent_text(const DiffRow& r) {
  if (r.base == 0) return r.head == 0 ? "0%" : "new";
  return fmt::format("{:+.1f}%", r.delta_fraction * 100);
}

// The path's time per step in each category: the mean over its steps, or
// the whole path's when the trace has no steps.
std::array<double, kPathCategories> path_per_step(const CriticalPath& p) {
  std::array<double, kPathCategories> out{};
  for (size_t c = 0; c < kPathCategories; ++c) {
    if (p.steps.empty()) {
      out[c] = double(p.whole.ns[c]);
      continue;
    }
    for (const CriticalPath::Step& s : p.steps) out[c] += double(s.time.ns[c]);
    out[c] /= double(p.steps.size());
  }
  return out;
}

std::vector<DiffRow> path_rows(const CriticalPath& base, const CriticalPath& head, double noise) {
  std::array<double, kPathCategories> b = path_per_step(base), h = path_per_step(head);
  std::vector<DiffRow> rows;
  for (size_t c = 0; c < kPathCategories; ++c) {
    if (b[c] == 0 && h[c] == 0) continue;
    DiffRow r = plain_row(std::string(name_of(PathCategory(c))), "ns", b[c], h[c]);
    mark(r, true, noise);
    rows.push_back(r);
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const DiffRow& x, const DiffRow& y) { return std::fabs(x.delta) > std::fabs(y.delta); });
  return rows;
}

// Where the step time's change lies on the critical path: the category
// whose time per step moved most the same way.
std::string verdict_of(const TraceDiff& d) {
  auto step = std::find_if(d.metrics.begin(), d.metrics.end(), [](const DiffRow& r) { return r.name == "step_time"; });
  if (step == d.metrics.end() || !step->beyond_noise || step->delta == 0) return "";
  std::string out = fmt::format("step_time {} a step ({})", value_text(*step, step->delta, true), percent_text(*step));
  for (const DiffRow& r : d.critical_path) {  // largest change first
    if ((r.delta > 0) != (step->delta > 0) || r.delta == 0) continue;
    return out + fmt::format(", {} of it on the critical path in {}", value_text(r, r.delta, true), r.name);
  }
  return out + ", none of it in one part of the critical path";
}

}  // namespace

double diff_noise_fraction(const TraceMetrics& b, const TraceMetrics& h) {
  // Without steps there is no spread to measure: 1% stands in for it.
  if (b.steps < 2 || h.steps < 2) return 0.01;
  double eb = median_relative_error(b), eh = median_relative_error(h);
  return std::max(2.0 * std::sqrt(eb * eb + eh * eh), 0.001);
}

DiffRow diff_row(std::string name, std::string unit, double base, double head, bool timed, double noise) {
  DiffRow r = plain_row(std::move(name), std::move(unit), base, head);
  mark(r, timed, noise);
  return r;
}

namespace {

template <typename Metrics>
std::vector<DiffRow> rows_of(std::span<const MetricDef<Metrics>> defs, const Metrics& base, const Metrics& head,
                             double noise) {
  std::vector<DiffRow> rows;
  for (const MetricDef<Metrics>& m : defs) {
    if (m.compare == MetricCompare::not_compared) continue;
    rows.push_back(diff_row(m.name, std::string(name_of(m.unit)), m.value(base), m.value(head),
                            m.compare == MetricCompare::timed, noise));
  }
  return rows;
}

template <typename Metrics>
std::vector<std::string> compared(std::span<const MetricDef<Metrics>> defs) {
  std::vector<std::string> names;
  for (const MetricDef<Metrics>& m : defs) {
    if (m.compare != MetricCompare::not_compared) names.emplace_back(m.name);
  }
  return names;
}

}  // namespace

std::vector<DiffRow> metric_rows(const TraceMetrics& base, const TraceMetrics& head, double noise) {
  return rows_of(trace_metrics(), base, head, noise);
}
std::vector<DiffRow> metric_rows(const JobMetrics& base, const JobMetrics& head, double noise) {
  return rows_of(job_metrics(), base, head, noise);
}
std::vector<std::string> trace_diff_metrics() { return compared(trace_metrics()); }
std::vector<std::string> job_diff_metrics() { return compared(job_metrics()); }

TraceDiff diff_traces(const TraceModel& base, const AnalysisReport& b, const TraceModel& head,
                      const AnalysisReport& h) {
  TraceDiff d;
  d.noise_fraction = diff_noise_fraction(b.metrics, h.metrics);
  const TraceMetrics &mb = b.metrics, &mh = h.metrics;
  auto steps_or_1 = [](const TraceMetrics& m) { return double(std::max<uint64_t>(m.steps, 1)); };
  d.metrics = metric_rows(mb, mh, d.noise_fraction);
  d.device_ops = name_rows(per_name(base, base.device_ops, steps_or_1(mb)),
                           per_name(head, head.device_ops, steps_or_1(mh)), d.noise_fraction);
  d.device_op_counts = name_rows(per_name(base, base.device_ops, steps_or_1(mb), true),
                                 per_name(head, head.device_ops, steps_or_1(mh), true), d.noise_fraction, true);
  d.host_spans = name_rows(per_name(base, base.host_spans, steps_or_1(mb)),
                           per_name(head, head.host_spans, steps_or_1(mh)), d.noise_fraction);
  d.launches = name_rows(per_name(base, base.launches, steps_or_1(mb), true),
                         per_name(head, head.launches, steps_or_1(mh), true), d.noise_fraction, true);
  d.critical_path = path_rows(b.critical_path, h.critical_path, d.noise_fraction);
  d.verdict = verdict_of(d);
  return d;
}

FailOn parse_fail_on(const std::string& text, std::span<const std::string> metrics) {
  std::string known;
  for (const std::string& n : metrics) known += (known.empty() ? "" : ", ") + n;
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon + 1 >= text.size()) {
    throw std::invalid_argument(
        fmt::format("--fail-on '{}': expected METRIC:+N% or METRIC:-N (metrics: {})", text, known));
  }
  FailOn f;
  f.text = text;
  f.metric = text.substr(0, colon);
  for (const MetricAlias& a : metric_aliases()) {
    bool renamed = f.metric == a.old_name && std::find(metrics.begin(), metrics.end(), a.name) != metrics.end();
    if (renamed) f.metric = a.name;
  }
  if (std::find(metrics.begin(), metrics.end(), f.metric) == metrics.end()) {
    throw std::invalid_argument(
        fmt::format("--fail-on '{}': unknown metric '{}' (metrics: {})", text, f.metric, known));
  }
  std::string spec = text.substr(colon + 1);
  if (spec[0] != '+' && spec[0] != '-') {
    throw std::invalid_argument(
        fmt::format("--fail-on '{}': the threshold needs a sign, '+' (fail on an increase) or "
                    "'-' (fail on a decrease)",
                    text));
  }
  f.increase = spec[0] == '+';
  spec = spec.substr(1);
  if (!spec.empty() && spec.back() == '%') {
    f.relative = true;
    spec.pop_back();
  }
  size_t used = 0;
  try {
    f.threshold = std::stod(spec, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != spec.size() || !(f.threshold >= 0) || !std::isfinite(f.threshold)) {
    throw std::invalid_argument(fmt::format("--fail-on '{}': '{}' is not a non-negative number", text, spec));
  }
  if (f.relative) f.threshold /= 100.0;
  return f;
}

bool fail_on_crossed(const FailOn& rule, const std::vector<DiffRow>& metrics, std::string* why) {
  for (const DiffRow& r : metrics) {
    if (r.name != rule.metric) continue;
    double change = rule.increase ? r.delta : -r.delta;
    bool crossed;
    if (rule.relative) {
      crossed = r.base == 0 ? change > 0 : change / std::fabs(r.base) > rule.threshold;
    } else {
      crossed = change > rule.threshold;
    }
    if (why) {
      *why =
          fmt::format("{}: {} -> {} ({}), {} the limit {}{}{}", r.name, value_text(r, r.base), value_text(r, r.head),
                      percent_text(r), crossed ? "beyond" : "within", rule.increase ? "+" : "-",
                      rule.relative ? fmt::format("{:g}", rule.threshold * 100) : fmt::format("{:g}", rule.threshold),
                      rule.relative ? "%" : "");
    }
    return crossed;
  }
  return false;
}

namespace {

// A titled text table of at most `limit` rows.
std::string diff_table_text(const std::vector<DiffRow>& rows, size_t limit, const char* title,
                            NameColumn name = NameColumn::first) {
  std::string out = fmt::format("\n{}\n", title);
  std::vector<std::vector<std::string>> cells;  // name, base, head, delta, delta %, mark
  size_t shown = 0;
  for (const DiffRow& r : rows) {
    if (shown++ == limit) break;
    cells.push_back({printable(r.name, kTextNameLimit), value_text(r, r.base), value_text(r, r.head),
                     value_text(r, r.delta, true), percent_text(r), r.beyond_noise ? "* " + r.change : ""});
  }
  std::vector<size_t> w(6, 0);
  std::vector<std::string> header = {"name", "base", "head", "delta", "delta %", ""};
  for (size_t i = 0; i < 6; ++i) w[i] = header[i].size();
  for (const auto& c : cells) {
    for (size_t i = 0; i < 6; ++i) w[i] = std::max(w[i], c[i].size());
  }
  auto line = [&](const std::vector<std::string>& c) {
    std::string figures = fmt::format("{:>{}}  {:>{}}  {:>{}}  {:>{}}", c[1], w[1], c[2], w[2], c[3], w[3], c[4], w[4]);
    std::string s = name == NameColumn::first ? fmt::format("  {:<{}}  {}  {}", c[0], w[0], figures, c[5])
                                              : fmt::format("  {}  {:<{}}  {}", figures, c[5], w[5], c[0]);
    while (!s.empty() && s.back() == ' ') s.pop_back();
    out += s + "\n";
  };
  line(header);
  for (const auto& c : cells) line(c);
  if (rows.size() > limit) out += fmt::format("  ... {} more\n", rows.size() - limit);
  return out;
}

std::string diff_table_markdown(const std::vector<DiffRow>& rows, size_t limit, const char* title) {
  std::string out =
      fmt::format("\n**{}**\n\n| name | base | head | delta | delta % | |\n|---|---:|---:|---:|---:|---|\n", title);
  size_t shown = 0;
  for (const DiffRow& r : rows) {
    if (shown++ == limit) break;
    std::string name = printable(r.name, kTextNameLimit);
    std::replace(name.begin(), name.end(), '`', '\'');
    std::replace(name.begin(), name.end(), '|', '/');
    out += fmt::format("| `{}` | {} | {} | {} | {} | {} |\n", name, value_text(r, r.base), value_text(r, r.head),
                       value_text(r, r.delta, true), percent_text(r), r.beyond_noise ? "**" + r.change + "**" : "");
  }
  return out;
}

std::string diff_rows_json(const std::vector<DiffRow>& rows, uint64_t* replaced) {
  nlohmann::json a = nlohmann::json::array();
  for (const DiffRow& r : rows) {
    a.push_back({{"name", valid_utf8(r.name, replaced)},
                 {"unit", r.unit},
                 {"base", r.base},
                 {"head", r.head},
                 {"delta", r.delta},
                 {"delta_fraction", r.delta_fraction},
                 {"beyond_noise", r.beyond_noise},
                 {"change", r.change}});
  }
  return a.dump();
}

// The tables of a trace's diff after its metrics.
std::vector<DiffTable> tables_of(const TraceDiff& d) {
  return {{.key = "device_ops",
           .title = "device ops: time per step, largest changes first",
           .markdown_title = "Device ops (time per step)",
           .rows = d.device_ops,
           .name = NameColumn::last},
          {.key = "device_op_counts",
           .title = "device ops: count per step, largest changes first",
           .markdown_title = "Device ops (count per step)",
           .rows = d.device_op_counts,
           .name = NameColumn::last},
          {.key = "host_spans",
           .title = "host spans: time per step, largest changes first",
           .markdown_title = "Host spans (time per step)",
           .rows = d.host_spans,
           .name = NameColumn::last},
          {.key = "launches",
           .title = "launch calls: calls per step, largest changes first",
           .markdown_title = "Launch calls (calls per step)",
           .rows = d.launches,
           .name = NameColumn::last},
          {.key = "critical_path",
           .title = "critical path: time per step by what bounds it",
           .markdown_title = "Critical path (time per step, by what bounds it)",
           .rows = d.critical_path}};
}

}  // namespace

std::string diff_tables_text(const std::string& heading, const std::vector<DiffRow>& metrics,
                             std::span<const DiffTable> tables, size_t limit) {
  std::string out = heading + diff_table_text(metrics, metrics.size(), "metrics");
  for (const DiffTable& t : tables) out += diff_table_text(t.rows, limit, t.title, t.name);
  return out;
}

std::string diff_tables_markdown(const std::string& heading, const std::vector<DiffRow>& metrics,
                                 std::span<const DiffTable> tables, size_t limit) {
  std::string out = heading + diff_table_markdown(metrics, metrics.size(), "Metrics");
  for (const DiffTable& t : tables) out += diff_table_markdown(t.rows, limit, t.markdown_title);
  return out;
}

std::string diff_tables_json(const std::string& base, const std::string& head, double noise_fraction,
                             const std::vector<DiffRow>& metrics, std::span<const DiffTable> tables,
                             const std::string& verdict) {
  using nlohmann::json;
  // JSON must be valid UTF-8; names from the traces may not be.
  uint64_t replaced = 0;
  auto rows = [&](const std::vector<DiffRow>& v) { return json::parse(diff_rows_json(v, &replaced)); };
  json doc = {{"schema", kReportSchemaVersion},
              {"base", valid_utf8(base, &replaced)},
              {"head", valid_utf8(head, &replaced)},
              {"noise_fraction", noise_fraction},
              {"metrics", rows(metrics)}};
  for (const DiffTable& t : tables) doc[t.key] = rows(t.rows);
  if (!verdict.empty()) doc["verdict"] = verdict;  // the report's own words and figures: valid UTF-8
  if (replaced > 0) doc["invalid_utf8_replaced"] = replaced;
  return doc.dump(2) + "\n";
}

std::string diff_text(const TraceDiff& d, const std::string& base, const std::string& head, size_t limit) {
  std::string heading = fmt::format(
      "loupe diff {} -> {}\nnoise: changes within {:.1f}% are what step-to-step spread explains; "
      "'*' marks changes beyond it\n",
      printable(base), printable(head), d.noise_fraction * 100);
  if (!d.verdict.empty()) heading += d.verdict + "\n";
  return diff_tables_text(heading, d.metrics, tables_of(d), limit);
}

std::string diff_markdown(const TraceDiff& d, const std::string& base, const std::string& head, size_t limit) {
  std::string heading =
      fmt::format("### loupe diff: `{}` → `{}`\n\nChanges within {:.1f}% are within step-to-step noise.\n",
                  printable(base), printable(head), d.noise_fraction * 100);
  if (!d.verdict.empty()) heading += "\n**" + d.verdict + "**\n";
  return diff_tables_markdown(heading, d.metrics, tables_of(d), limit);
}

std::string diff_json(const TraceDiff& d, const std::string& base, const std::string& head) {
  return diff_tables_json(base, head, d.noise_fraction, d.metrics, tables_of(d), d.verdict);
}

}  // namespace loupe::prof
