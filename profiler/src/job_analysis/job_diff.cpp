// `loupe diff` of two jobs: the same tables as a trace's diff (trace_diff.h),
// over what a job's report measures.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "loupe/prof/job_analysis.h"
#include "loupe/prof/safe_text.h"
#include "loupe/prof/units.h"

namespace loupe::prof {

namespace {

// The largest noise any rank in both jobs gives.
double noise_of(const JobReport& b, const JobReport& h) {
  std::map<int64_t, const TraceMetrics*> base;
  for (const auto& [rank, m] : b.rank_metrics) base[rank] = &m;
  double noise = 0;
  for (const auto& [rank, m] : h.rank_metrics) {
    if (auto it = base.find(rank); it != base.end()) noise = std::max(noise, diff_noise_fraction(*it->second, m));
  }
  return noise > 0 ? noise : 0.01;
}

std::string kind_label(const CollectiveStats& k) {
  return fmt::format("{} {} (group {})", k.name, k.bytes > 0 ? format_bytes(k.bytes) : "size unknown",
                     k.group.empty() ? "?" : k.group);
}

std::vector<DiffRow> collective_rows(const JobReport& b, const JobReport& h, double noise) {
  std::map<std::string, std::pair<const CollectiveStats*, const CollectiveStats*>> both;
  for (const CollectiveStats& k : b.kinds) both[kind_label(k)].first = &k;
  for (const CollectiveStats& k : h.kinds) both[kind_label(k)].second = &k;
  std::vector<DiffRow> rows;
  for (const auto& [label, pair] : both) {
    auto [kb, kh] = pair;
    auto value = [](const CollectiveStats* k, int64_t CollectiveStats::*f) { return k ? double(k->*f) : 0.0; };
    rows.push_back(diff_row(label + ": transfer", "ns", value(kb, &CollectiveStats::transfer_ns),
                            value(kh, &CollectiveStats::transfer_ns), true, noise));
    rows.push_back(diff_row(label + ": wait", "ns", value(kb, &CollectiveStats::wait_ns),
                            value(kh, &CollectiveStats::wait_ns), true, noise));
  }
  return rows;
}

std::vector<DiffRow> rank_rows(const JobReport& b, const JobReport& h, double noise) {
  std::map<int64_t, std::pair<double, double>> both;
  for (const RankFigures& f : b.figures) both[f.rank].first = double(f.compute_ns);
  for (const RankFigures& f : h.figures) both[f.rank].second = double(f.compute_ns);
  std::vector<DiffRow> rows;
  rows.reserve(both.size());
  for (const auto& [rank, v] : both) {
    rows.push_back(diff_row(fmt::format("rank {}: compute per step", rank), "ns", v.first, v.second, true, noise));
  }
  return rows;
}

void by_change(std::vector<DiffRow>& rows) {
  std::stable_sort(rows.begin(), rows.end(),
                   [](const DiffRow& a, const DiffRow& b) { return std::fabs(a.delta) > std::fabs(b.delta); });
}

// The tables of a job's diff after its metrics.
std::vector<DiffTable> tables_of(const JobDiff& d) {
  return {{.key = "collectives",
           .title = "collectives: median per rank and collective, largest changes first",
           .markdown_title = "Collectives (median per rank and collective)",
           .rows = d.collectives},
          {.key = "ranks",
           .title = "ranks: median compute per step, largest changes first",
           .markdown_title = "Ranks (median compute per step)",
           .rows = d.ranks}};
}

}  // namespace

JobDiff diff_jobs(const JobReport& b, const JobReport& h) {
  JobDiff d;
  d.noise_fraction = noise_of(b, h);
  const double n = d.noise_fraction;
  d.metrics = metric_rows(b.metrics, h.metrics, n);
  d.collectives = collective_rows(b, h, n);
  d.ranks = rank_rows(b, h, n);
  by_change(d.collectives);
  by_change(d.ranks);
  return d;
}

std::string job_diff_text(const JobDiff& d, const std::string& base, const std::string& head, size_t limit) {
  std::string heading = fmt::format(
      "loupe diff {} -> {} (jobs)\nnoise: changes within {:.1f}% are what the ranks' step-to-step spread explains; "
      "'*' marks changes beyond it\n",
      printable(base), printable(head), d.noise_fraction * 100);
  return diff_tables_text(heading, d.metrics, tables_of(d), limit);
}

std::string job_diff_markdown(const JobDiff& d, const std::string& base, const std::string& head, size_t limit) {
  std::string heading = fmt::format(
      "### loupe diff: jobs `{}` → `{}`\n\nChanges within {:.1f}% are within the ranks' step-to-step noise.\n",
      printable(base), printable(head), d.noise_fraction * 100);
  return diff_tables_markdown(heading, d.metrics, tables_of(d), limit);
}

std::string job_diff_json(const JobDiff& d, const std::string& base, const std::string& head) {
  return diff_tables_json(base, head, {.noise_fraction = d.noise_fraction}, d.metrics, tables_of(d));
}

}  // namespace loupe::prof
