// A job's report as text, JSON and Markdown. The findings are worded as a
// single trace's are (report_format.h); around them, the job's ranks,
// their clocks, the collectives by kind and each rank's figures.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "job_analysis/job_context.h"
#include "loupe/prof/report_format.h"
#include "loupe/prof/safe_text.h"
#include "loupe/prof/units.h"

namespace loupe::prof {

namespace {

// Up to this many ranks are listed one by one; beyond, the extremes.
constexpr size_t kRanksListed = 16;

std::string shown(const std::string& s) { return printable(s, kTextNameLimit); }

std::string signed_duration(int64_t ns) { return (ns < 0 ? "-" : "+") + format_duration(ns < 0 ? -ns : ns); }

std::string clocks_text(const JobReport& r) {
  std::vector<const RankClock*> listed;
  for (const RankClock& c : r.clocks) listed.push_back(&c);
  std::string out =
      "\nclocks, aligned on the ends of the collectives (offset from the reference rank; residual: the "
      "largest disagreement left):\n";
  if (listed.size() > kRanksListed) {
    std::sort(listed.begin(), listed.end(),
              [](const RankClock* a, const RankClock* b) { return a->residual_ns > b->residual_ns; });
    listed.resize(5);
    out += fmt::format("  the {} largest residuals of {} ranks:\n", listed.size(), r.clocks.size());
  }
  for (const RankClock* c : listed) {
    if (!c->aligned) {
      out += fmt::format("  rank {:<5} not aligned (no collective in common)\n", c->rank);
    } else if (c->rank == c->via) {
      out += fmt::format("  rank {:<5} the reference\n", c->rank);
    } else {
      out +=
          fmt::format("  rank {:<5} {:>12}  residual {:>10}  ({} collectives with rank {})\n", c->rank,
                      signed_duration(c->offset_ns), format_duration(c->residual_ns), format_count(c->matched), c->via);
    }
  }
  return out;
}

std::string kinds_text(const JobReport& r) {
  if (r.kinds.empty()) return "";
  std::string out = "\ncollectives (median per rank and collective):\n";
  for (const CollectiveStats& k : r.kinds) {
    out +=
        fmt::format("  {} in group `{}` ({} ranks), {}: {} matched, wait {}, transfer {}, bus bandwidth {}\n",
                    shown(k.name), shown(k.group), k.group_size, k.bytes > 0 ? format_bytes(k.bytes) : "size unknown",
                    format_count(k.count), format_duration(k.wait_ns), format_duration(k.transfer_ns),
                    k.bus_bandwidth > 0 ? format_byte_rate(k.bus_bandwidth) : "cannot tell");
  }
  return out;
}

std::string figures_text(const JobReport& r) {
  if (r.figures.empty() || r.figures.size() > kRanksListed) return "";
  std::string out = fmt::format("\n  {:<6} {:>12} {:>14} {:>17} {:>14} {:>10}\n", "rank", "step", "compute/step",
                                "exposed comm/step", "waited", "last at");
  for (const RankFigures& f : r.figures) {
    // Without its collectives matched, what a rank waited is not known.
    out += fmt::format("  {:<6} {:>12} {:>14} {:>17} {:>14} {:>10}\n", f.rank, format_duration(f.step_ns),
                       format_duration(f.compute_ns), format_duration(f.communication_ns),
                       f.matched ? format_duration(f.wait_ns) : "-", f.matched ? format_count(f.last_arrivals) : "-");
  }
  return out;
}

std::string share(int64_t part, int64_t whole) {
  return fmt::format("{:.1f}%", whole > 0 ? 100.0 * double(part) / double(whole) : 0.0);
}

// Where the job's time went across ranks: the ranks on the path and what
// bound it.
std::string critical_path_text(const JobReport& r) {
  const JobCriticalPath& p = r.critical_path;
  if (p.collectives == 0) {
    return p.cannot_tell.empty()
               ? ""
               : fmt::format("\ncritical path across ranks: cannot tell from these traces: {}\n", p.cannot_tell);
  }
  int64_t total = 0;
  for (int64_t ns : p.whole.ns) total = ns > INT64_MAX - total ? INT64_MAX : total + ns;
  std::string out = fmt::format("\ncritical path across ranks, through {} collectives' last ranks: {} ({} to {})\n",
                                format_count(p.collectives), format_duration(total), format_duration(p.whole.start),
                                format_duration(p.whole.end));
  out += "  by rank:";
  for (size_t i = 0; i < p.ranks.size() && i < 5; ++i) {
    out += fmt::format("{} rank {} {}", i == 0 ? "" : ",", p.ranks[i].first, share(p.ranks[i].second, total));
  }
  out += p.ranks.size() > 5 ? fmt::format(", {} more ranks\n", p.ranks.size() - 5) : "\n";
  out += "  by what bound it:";
  bool first = true;
  for (size_t c = 0; c < kPathCategories; ++c) {
    if (p.whole.ns[c] == 0) continue;
    out += fmt::format("{} {} {}", first ? "" : ",", name_of(PathCategory(c)), share(p.whole.ns[c], total));
    first = false;
  }
  out += "\n";
  if (!p.cannot_tell.empty()) out += fmt::format("  cannot tell from these traces: {}\n", p.cannot_tell);
  return out;
}

nlohmann::json critical_path_json(const JobCriticalPath& p) {
  auto breakdown = [](const PathBreakdown& b) {
    nlohmann::json ns = nlohmann::json::object();
    for (size_t c = 0; c < kPathCategories; ++c) ns[std::string(name_of(PathCategory(c)))] = b.ns[c];
    return nlohmann::json{{"start_ns", b.start}, {"end_ns", b.end}, {"ns_by_category", ns}};
  };
  nlohmann::json out = breakdown(p.whole), ranks = nlohmann::json::array(), steps = nlohmann::json::array();
  for (const auto& [rank, ns] : p.ranks) ranks.push_back({{"rank", rank}, {"ns", ns}});
  for (const JobCriticalPath::Step& s : p.steps) {
    nlohmann::json step = breakdown(s.time);
    step["number"] = s.number == kNoStep ? nlohmann::json(nullptr) : nlohmann::json(s.number);
    step["rank"] = s.rank;
    steps.push_back(step);
  }
  out["ranks"] = ranks;
  out["steps"] = steps;
  out["collectives"] = p.collectives;
  out["cannot_tell"] = p.cannot_tell.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.cannot_tell);
  return out;
}

// The report's first line: how many ranks were compared, and how.
std::string header_text(const JobReport& r) {
  if (!r.own_traces.empty()) {
    return fmt::format(
        "{}: {} of {} ranks compared on their own traces (no collectives matched across ranks), {} steps, window {} "
        "(the longest rank's; clocks not aligned)\n",
        shown(r.dir), r.own_traces.size(), r.world_size, r.metrics.steps, format_duration(r.window_ns));
  }
  return fmt::format("{}: {} of {} ranks analysed, {} steps, {} collectives matched across ranks, window {}\n",
                     shown(r.dir), r.ranks.size(), r.world_size, r.metrics.steps, format_count(r.metrics.collectives),
                     format_duration(r.window_ns));
}

}  // namespace

std::string format_job_text(const JobReport& r) {
  std::string out = header_text(r);
  for (const std::string& p : r.problems) out += fmt::format("  ! {}\n", shown(p));
  if (r.own_traces.empty()) out += clocks_text(r);
  out += kinds_text(r);
  out += figures_text(r);
  out += critical_path_text(r);
  out += fmt::format("\n{} finding{}\n", r.findings.size(), r.findings.size() == 1 ? "" : "s");
  out += findings_text(r.findings, TextStyle{.all = true});
  return out;
}

std::string format_job_json(const JobReport& r) {
  using nlohmann::json;
  uint64_t replaced = 0;
  auto utf8 = [&](const std::string& s) { return valid_utf8(s, &replaced); };
  json doc = {
      {"schema", kReportSchemaVersion}, {"job", utf8(r.dir)},       {"world_size", r.world_size}, {"ranks", r.ranks},
      {"own_traces", r.own_traces},     {"window_ns", r.window_ns}, {"problems", json::array()}};
  for (const std::string& p : r.problems) doc["problems"].push_back(utf8(p));
  doc["metrics"] = json::object();
  for_each_metric(r.metrics, [&](const char* name, const auto& v) { doc["metrics"][name] = v; });
  json clocks = json::array(), kinds = json::array(), figures = json::array();
  for (const RankClock& c : r.clocks) {
    clocks.push_back({{"rank", c.rank},
                      {"aligned", c.aligned},
                      {"via", c.via},
                      {"matched", c.matched},
                      {"offset_ns", c.offset_ns},
                      {"residual_ns", c.residual_ns}});
  }
  for (const CollectiveStats& k : r.kinds) {
    kinds.push_back({{"group", utf8(k.group)},
                     {"name", utf8(k.name)},
                     {"bytes", k.bytes},
                     {"group_size", k.group_size},
                     {"count", k.count},
                     {"wait_ns", k.wait_ns},
                     {"transfer_ns", k.transfer_ns},
                     {"bus_bandwidth", k.bus_bandwidth}});
  }
  for (const RankFigures& f : r.figures) {
    json row = {{"rank", f.rank},
                {"step_ns", f.step_ns},
                {"compute_ns", f.compute_ns},
                {"communication_ns", f.communication_ns},
                {"matched", f.matched}};
    if (f.matched) {  // else not known
      row["wait_ns"] = f.wait_ns;
      row["last_arrivals"] = f.last_arrivals;
    }
    figures.push_back(row);
  }
  doc["clocks"] = clocks;
  doc["collective_kinds"] = kinds;
  doc["rank_figures"] = figures;
  doc["critical_path"] = critical_path_json(r.critical_path);
  doc["findings"] = json::parse(findings_json(r.findings, &replaced));
  if (replaced > 0) doc["invalid_utf8_replaced"] = replaced;
  return doc.dump(2) + "\n";
}

std::string format_job_markdown(const JobReport& r) {
  const std::string ranks =
      r.own_traces.empty() ? fmt::format("{} of {} ranks", r.ranks.size(), r.world_size)
                           : fmt::format("{} of {} ranks, each on its own trace", r.own_traces.size(), r.world_size);
  std::string out = fmt::format("### loupe: {} finding{} in job `{}` ({})\n\n", r.findings.size(),
                                r.findings.size() == 1 ? "" : "s", shown(r.dir), ranks);
  for (const std::string& p : r.problems) out += fmt::format("- {}\n", shown(p));
  if (!r.problems.empty()) out += "\n";
  if (r.findings.empty()) return out + "No findings.\n";
  return out + findings_markdown(r.findings);
}

}  // namespace loupe::prof
