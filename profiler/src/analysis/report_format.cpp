#include "loupe/prof/report_format.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "loupe/prof/safe_text.h"
#include "loupe/prof/units.h"

namespace loupe::prof {

namespace {

const char* severity_color(Severity s) {
  switch (s) {
    case Severity::error: return "\033[1;31m";
    case Severity::warning: return "\033[1;33m";
    case Severity::info: return "\033[1;36m";
  }
  return "";
}

// Findings quote names from the trace: in text for a person they are
// escaped and cut (safe_text.h).
std::string shown(const std::string& s) { return printable(s, kTextNameLimit); }

// "fixing this is predicted to save 1.2 ms a step (34%)", from the what-if
// replay; "" when the finding has no prediction.
std::string saving_text(const Finding& f) {
  if (!f.predicted) return "";
  const char* of = f.predicted_per_step ? "a step" : "of the run";
  if (f.predicted_saving_ns <= 0) return fmt::format("fixing this is predicted to save nothing {}", of);
  return fmt::format("fixing this is predicted to save {} {} ({})", format_duration(f.predicted_saving_ns), of,
                     format_percent(f.predicted_saving_fraction));
}

std::string impact_text(const Finding& f) {
  std::string impact = f.impact_ns == 0 ? "no time impact"
                                        : fmt::format("impact {} ({} of the active window)",
                                                      format_duration(f.impact_ns), format_percent(f.impact_fraction));
  std::string saving = saving_text(f);
  return saving.empty() ? impact : impact + "; " + saving;
}

// A finding in full: title, impact, evidence lined up, suggestion.
std::string finding_text(size_t number, const Finding& f, TextStyle style) {
  const char* reset = style.color ? "\033[0m" : "";
  const char* dim = style.color ? "\033[2m" : "";
  std::string out = fmt::format("\n{}{:>2}. [{}] {}{}  {}\n", style.color ? severity_color(f.severity) : "", number,
                                name_of(f.severity), f.rule, reset, shown(f.title));
  out += fmt::format("    {}{}{}\n", dim, impact_text(f), reset);
  // Values line up after the keys, but a key that names a whole chain of
  // ops ("live at peak: autograd::... > aten::mm") would push every value
  // off the screen: such a key is followed by its value, unaligned.
  constexpr size_t kAlignedKey = 48;
  size_t width = 0;
  for (const auto& [k, v] : f.evidence) {
    if (shown(k).size() <= kAlignedKey) width = std::max(width, shown(k).size());
  }
  for (const auto& [k, v] : f.evidence) out += fmt::format("    {:<{}}  {}\n", shown(k), width, shown(v));
  out += fmt::format("    -> {}\n", shown(f.suggestion));
  return out;
}

}  // namespace

std::string findings_text(const std::vector<Finding>& findings, TextStyle style) {
  std::string out;
  const char* reset = style.color ? "\033[0m" : "";
  size_t collapsed = 0;
  for (size_t i = 0; i < findings.size(); ++i) {
    const Finding& f = findings[i];
    if (style.all || f.severity != Severity::info) {
      out += finding_text(i + 1, f, style);
      continue;
    }
    if (collapsed++ == 0) out += "\n";
    out += fmt::format("{}{:>2}. [{}] {}{}  {}; {}\n", style.color ? severity_color(f.severity) : "", i + 1,
                       name_of(f.severity), f.rule, reset, shown(f.title), impact_text(f));
  }
  if (collapsed > 0) {
    out += fmt::format("({} finding{} of information in one line each: --all shows their evidence and advice)\n",
                       collapsed, collapsed == 1 ? "" : "s");
  }
  return out;
}

// Whether the trace holds what the findings read, before any finding.
std::string completeness_text(const AnalysisReport& r) {
  if (r.incomplete.empty()) return "completeness: no sign of missing events\n";
  std::string out;
  for (const Incompleteness& i : r.incomplete) {
    out += fmt::format("incomplete trace: {}\n", shown(i.text()));
  }
  return out;
}

std::string report_text(const AnalysisReport& r, TextStyle style) {
  std::string out;
  std::string window = r.times_are_order ? "no times recorded, only the order of the events"
                                         : "active window " + format_duration(r.window_end - r.window_start);
  out += fmt::format("{}: {} finding{}, {}\n", shown(r.path), r.findings.size(), r.findings.size() == 1 ? "" : "s",
                     window);
  out += completeness_text(r);
  size_t with_impact = 0;
  for (const Finding& f : r.findings) with_impact += f.impact_ns > 0;
  if (with_impact > 1) {
    out +=
        "(ranked by each finding's own impact; impacts can cover the same time, so they do not add up: "
        "docs/analyses.md)\n";
  }
  out += findings_text(r.findings, style);
  if (r.findings.empty()) out += "\nno findings\n";
  return out;
}

std::string findings_json(const std::vector<Finding>& findings, uint64_t* replaced) {
  using nlohmann::json;
  auto utf8 = [&](const std::string& s) { return valid_utf8(s, replaced); };
  json out = json::array();
  for (const Finding& f : findings) {
    json ev = json::array();
    for (const auto& [k, v] : f.evidence) ev.push_back({{"name", utf8(k)}, {"value", utf8(v)}});
    json ranges = json::array();
    for (const TimeRange& t : f.ranges) ranges.push_back({{"start_ns", t.start}, {"end_ns", t.end}});
    out.push_back({{"rule", f.rule},
                   {"severity", std::string(name_of(f.severity))},
                   {"title", utf8(f.title)},
                   {"impact_ns", f.impact_ns},
                   {"impact_fraction", f.impact_fraction},
                   {"ranges", ranges},
                   {"evidence", ev},
                   {"suggestion", utf8(f.suggestion)},
                   {"devices", f.devices},
                   {"threads", f.threads}});
    if (!f.ranks.empty()) out.back()["ranks"] = f.ranks;
    if (f.predicted) {
      out.back()["predicted_saving"] = {{"ns", f.predicted_saving_ns},
                                        {"fraction", f.predicted_saving_fraction},
                                        {"per", f.predicted_per_step ? "step" : "run"}};
    }
  }
  return out.dump();
}

namespace {

nlohmann::json breakdown_json(const PathBreakdown& b) {
  nlohmann::json ns = nlohmann::json::object();
  for (size_t c = 0; c < kPathCategories; ++c) ns[std::string(name_of(PathCategory(c)))] = b.ns[c];
  return {{"start_ns", b.start}, {"end_ns", b.end}, {"ns_by_category", ns}};
}

nlohmann::json critical_path_json(const CriticalPath& p) {
  nlohmann::json steps = nlohmann::json::array();
  for (const CriticalPath::Step& s : p.steps) {
    nlohmann::json step = breakdown_json(s.time);
    step["number"] = s.number;
    steps.push_back(step);
  }
  nlohmann::json missing = nlohmann::json::array();
  for (std::string_view m : p.missing) missing.push_back(std::string(m));
  nlohmann::json out = breakdown_json(p.whole);
  out["steps"] = steps;
  out["segments"] = p.segments.size();
  out["waits_matched_by_time"] = p.waits_by_time;
  out["stream_waits_by_time"] = p.stream_waits_by_time;
  out["cannot_tell"] = missing;
  return out;
}

}  // namespace

std::string report_json(const AnalysisReport& r) {
  using nlohmann::json;
  // JSON must be valid UTF-8; names from the trace may not be.
  uint64_t replaced = 0;
  auto utf8 = [&](const std::string& s) { return valid_utf8(s, &replaced); };
  json doc;
  doc["schema"] = kReportSchemaVersion;
  doc["trace"] = utf8(r.path);
  doc["window"] = {{"start_ns", r.window_start}, {"end_ns", r.window_end}};
  json incomplete = json::array();
  for (const Incompleteness& i : r.incomplete) {
    incomplete.push_back({{"missing", utf8(i.missing)}, {"untrusted", utf8(i.untrusted)}});
  }
  doc["incomplete"] = incomplete;
  doc["findings"] = json::parse(findings_json(r.findings, &replaced));
  json devices = json::array();
  for (const DeviceIdle& d : r.devices) {
    json causes;
    for (size_t c = 0; c < kGapCauses; ++c) causes[std::string(name_of(GapCause(c)))] = d.cause_ns[c];
    devices.push_back({{"device", d.device},
                       {"window_start_ns", d.window_start},
                       {"window_end_ns", d.window_end},
                       {"busy_ns", d.busy_ns},
                       {"idle_ns", d.idle_ns},
                       {"compute_ns", d.compute_ns},
                       {"collective_ns", d.collective_ns},
                       {"compute_collective_overlap_ns", d.compute_collective_overlap_ns},
                       {"gaps", d.gaps.size()},
                       {"gap_idle_ns_by_cause", causes}});
  }
  doc["devices"] = devices;
  json streams = json::array();
  for (const StreamIdle& s : r.streams) {
    streams.push_back({{"device", s.device},
                       {"stream", s.stream},
                       {"host_wait_ns", s.host_wait_ns},
                       {"kernel_wait_ns", s.kernel_wait_ns},
                       {"other_ns", s.other_ns}});
  }
  doc["streams"] = streams;
  doc["steps"] = {{"count", r.steps.count},
                  {"median_ns", r.steps.median_ns},
                  {"p10_ns", r.steps.p10_ns},
                  {"p90_ns", r.steps.p90_ns},
                  {"mad_ns", r.steps.mad_ns}};
  doc["critical_path"] = critical_path_json(r.critical_path);
  doc["launch_queue_full_ns"] = r.launch_queue_full_ns < 0 ? json(nullptr) : json(r.launch_queue_full_ns);
  doc["metrics"] = json::object();
  for_each_metric(r.metrics, [&](const char* name, const auto& v) { doc["metrics"][name] = v; });
  if (replaced > 0) doc["invalid_utf8_replaced"] = replaced;
  return doc.dump(2) + "\n";
}

std::string findings_markdown(const std::vector<Finding>& findings) {
  auto cell = [](const std::string& text) {
    std::string s = shown(text), out;
    for (char c : s) {
      if (c == '|') out += "\\|";
      else if (c == '\n') out += ' ';
      else out += c;
    }
    return out;
  };
  std::string out;
  out += "| # | severity | rule | finding | impact |\n|---|---|---|---|---|\n";
  for (size_t i = 0; i < findings.size(); ++i) {
    const Finding& f = findings[i];
    out += fmt::format(
        "| {} | {} | `{}` | {} | {} |\n", i + 1, name_of(f.severity), f.rule, cell(f.title),
        f.impact_ns ? fmt::format("{} ({})", format_duration(f.impact_ns), format_percent(f.impact_fraction)) : "-");
  }
  for (size_t i = 0; i < findings.size(); ++i) {
    const Finding& f = findings[i];
    out += fmt::format("\n<details><summary>{}. {}</summary>\n\n", i + 1, cell(f.title));
    for (const auto& [k, v] : f.evidence) out += fmt::format("- **{}**: {}\n", cell(k), cell(v));
    if (f.predicted) out += fmt::format("- **what-if**: {}\n", saving_text(f));
    out += fmt::format("\n**Suggestion:** {}\n</details>\n", cell(f.suggestion));
  }
  return out;
}

std::string report_markdown(const AnalysisReport& r) {
  std::string out = fmt::format("### loupe: {} finding{} in `{}`\n\n", r.findings.size(),
                                r.findings.size() == 1 ? "" : "s", shown(r.path));
  for (const Incompleteness& i : r.incomplete) {
    out += fmt::format("> **Incomplete trace:** {}\n\n", shown(i.text()));
  }
  if (r.findings.empty()) return out + "No findings.\n";
  out += findings_markdown(r.findings);
  return out;
}

}  // namespace loupe::prof
