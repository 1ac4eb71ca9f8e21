// A diff's rows as text, Markdown and JSON.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "diff_text.h"
#include "loupe/prof/report_format.h"
#include "loupe/prof/safe_text.h"
#include "loupe/prof/trace_diff.h"
#include "loupe/prof/units.h"

namespace loupe::prof {

std::string diff_value_text(const DiffRow& r, double v, bool signed_) {
  if (r.unit == "fraction" && !signed_) return format_percent(v);
  std::string sign = signed_ && v > 0 ? "+" : "";
  if (r.unit == "ns") return sign + format_duration(int64_t(std::llround(v)));
  if (r.unit == "bytes") return sign + format_bytes(int64_t(std::llround(v)));
  if (r.unit == "fraction") return fmt::format("{}{:.2f} pts", sign, v * 100);
  if (v == std::floor(v) && std::fabs(v) < 9e15) return (v < 0 ? "-" : sign) + format_count(uint64_t(std::fabs(v)));
  return fmt::format("{}{:.3f}", sign, v);
}

std::string diff_percent_text(const DiffRow& r) {
  if (r.base == 0) return r.head == 0 ? "0%" : "new";
  return fmt::format("{:+.1f}%", r.delta_fraction * 100);
}

std::string diff_mark_text(const DiffRow& r, MarkStyle style) {
  std::string mark;
  if (r.beyond_noise) mark = style == MarkStyle::markdown ? "**" + r.change + "**" : "* " + r.change;
  if (r.p_value < 0) return mark;
  std::string p = r.p_value < 0.001 ? "p < 0.001" : fmt::format("p {:.3f}", r.p_value);
  return mark.empty() ? p : mark + ", " + p;
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
    cells.push_back({printable(r.name, kTextNameLimit), diff_value_text(r, r.base), diff_value_text(r, r.head),
                     diff_value_text(r, r.delta, true), diff_percent_text(r), diff_mark_text(r)});
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
    out +=
        fmt::format("| `{}` | {} | {} | {} | {} | {} |\n", name, diff_value_text(r, r.base), diff_value_text(r, r.head),
                    diff_value_text(r, r.delta, true), diff_percent_text(r), diff_mark_text(r, MarkStyle::markdown));
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
    if (r.p_value >= 0) a.back()["p_value"] = r.p_value;
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
           .rows = d.critical_path},
          {.key = "critical_path_ops",
           .title = "critical path: device ops' time on it per step, largest changes first",
           .markdown_title = "Critical path (device ops' time on it per step)",
           .rows = d.critical_path_ops,
           .name = NameColumn::last}};
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

std::string diff_tables_json(const std::string& base, const std::string& head, const DiffJsonHeader& header,
                             const std::vector<DiffRow>& metrics, std::span<const DiffTable> tables) {
  using nlohmann::json;
  // JSON must be valid UTF-8; names from the traces may not be.
  uint64_t replaced = 0;
  auto rows = [&](const std::vector<DiffRow>& v) { return json::parse(diff_rows_json(v, &replaced)); };
  json doc = {{"schema", kReportSchemaVersion},
              {"base", valid_utf8(base, &replaced)},
              {"head", valid_utf8(head, &replaced)},
              {"noise_fraction", header.noise_fraction}};
  if (header.base_runs > 1 || header.head_runs > 1) {
    doc["runs"] = {{"base", header.base_runs},
                   {"head", header.head_runs},
                   {"base_step_time", header.base_step_times},
                   {"head_step_time", header.head_step_times}};
    doc["test"] = {{"name", "rank test over steps blocked by run"}, {"significance", header.significance}};
  }
  if (header.step >= 0) doc["step"] = header.step;
  doc["metrics"] = rows(metrics);
  for (const DiffTable& t : tables) doc[t.key] = rows(t.rows);
  if (!header.verdict.empty()) doc["verdict"] = header.verdict;  // the report's own words and figures: valid UTF-8
  if (replaced > 0) doc["invalid_utf8_replaced"] = replaced;
  return doc.dump(2) + "\n";
}

namespace {

// What the tables by name compare, and what marks a change, in words;
// with several runs, each run's median step.
std::string basis_text(const TraceDiff& d, MarkStyle style) {
  const char* marker = style == MarkStyle::markdown ? "bold" : "'*'";
  std::string steps = d.step >= 0 ? fmt::format("step {}", d.step) : "the median step";
  if (d.significance > 0) {
    auto times = [](const std::vector<double>& v) {
      std::string out;
      for (double t : v) out += (out.empty() ? "" : ", ") + format_duration(int64_t(std::llround(t)));
      return out;
    };
    return fmt::format(
        "{} runs against {}; by name: {} of each run, the median over runs; step times and times by name tested "
        "with a rank test over steps blocked by run, {} marking p < {:g}; other times beyond the runs' spread "
        "({:.1f}%)\nmedian step by run: base {}; head {}",
        d.head_runs, d.base_runs, steps, marker, d.significance, d.noise_fraction * 100, times(d.base_step_times),
        times(d.head_step_times));
  }
  return fmt::format(
      "by name: {}; changes within {:.1f}% are what step-to-step spread explains, {} marks changes beyond it", steps,
      d.noise_fraction * 100, marker);
}

}  // namespace

std::string diff_text(const TraceDiff& d, const std::string& base, const std::string& head, size_t limit) {
  std::string heading =
      fmt::format("loupe diff {} -> {}\n{}\n", printable(base), printable(head), basis_text(d, MarkStyle::text));
  if (!d.verdict.empty()) heading += d.verdict + "\n";
  return diff_tables_text(heading, d.metrics, tables_of(d), limit);
}

std::string diff_markdown(const TraceDiff& d, const std::string& base, const std::string& head, size_t limit) {
  std::string heading = fmt::format("### loupe diff: `{}` → `{}`\n\n{}.\n", printable(base), printable(head),
                                    basis_text(d, MarkStyle::markdown));
  if (!d.verdict.empty()) heading += "\n**" + d.verdict + "**\n";
  return diff_tables_markdown(heading, d.metrics, tables_of(d), limit);
}

std::string diff_json(const TraceDiff& d, const std::string& base, const std::string& head) {
  DiffJsonHeader header{.noise_fraction = d.noise_fraction,
                        .verdict = d.verdict,
                        .base_runs = d.base_runs,
                        .head_runs = d.head_runs,
                        .base_step_times = d.base_step_times,
                        .head_step_times = d.head_step_times,
                        .step = d.step,
                        .significance = d.significance};
  return diff_tables_json(base, head, header, d.metrics, tables_of(d));
}

}  // namespace loupe::prof
