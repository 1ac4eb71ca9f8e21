// imbalance: how evenly the ranks compute. Per step, the spread of the
// ranks' compute (kernel time other than collectives) from the least to
// the most; a rank that computes longest in most steps sets the pace the
// others wait for at the next collective.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "job_analysis/job_context.h"
#include "loupe/prof/units.h"

namespace loupe::prof::job {

namespace {

// The rank that computed longest in each step, when one did by more than
// the tolerance (a tie names no one).
std::map<size_t, uint64_t> slowest_counts(const JobContext& ctx, const std::map<int64_t, Imbalance::Step>& steps) {
  std::map<size_t, uint64_t> counts;
  for (const auto& [number, s] : steps) {
    std::vector<std::pair<int64_t, size_t>> v = s.by_rank;
    std::partial_sort(v.begin(), v.begin() + 2, v.end(), std::greater<>());
    if (v[0].first - v[1].first >= ctx.options.min_lateness_ns) ++counts[v[0].second];
  }
  return counts;
}

}  // namespace

Imbalance imbalance_of(const JobContext& ctx) {
  Imbalance im;
  for (size_t r = 0; r < ctx.ranks.size(); ++r) {
    for (const RankSummary::Step& s : ctx.ranks[r].steps) im.steps[s.number].by_rank.push_back({s.compute_ns, r});
  }
  std::erase_if(im.steps, [](const auto& s) { return s.second.by_rank.size() < 2; });
  if (im.steps.empty()) return im;
  std::vector<int64_t> medians;
  for (const auto& [number, s] : im.steps) {
    auto [lo, hi] = std::minmax_element(s.by_rank.begin(), s.by_rank.end());
    im.spreads.push_back(hi->first - lo->first);
    std::vector<int64_t> values;
    values.reserve(s.by_rank.size());
    for (const auto& [c, r] : s.by_rank) values.push_back(c);
    medians.push_back(quantile(std::move(values), 0.5));
  }
  im.spread = quantile(im.spreads, 0.5);
  im.median = quantile(medians, 0.5);
  im.share = double(im.spread) / double(std::max<int64_t>(im.median, 1));
  return im;
}

void rule_imbalance(const JobContext& ctx, const JobReport& report, std::vector<Finding>& findings) {
  Imbalance im = imbalance_of(ctx);
  if (im.steps.empty()) return;
  const auto& steps = im.steps;
  const auto& spreads = im.spreads;
  int64_t spread = im.spread, median = im.median;
  double share = im.share;
  Finding f;
  f.rule = "imbalance";
  f.severity = share >= ctx.options.imbalance_warning ? Severity::warning : Severity::info;
  int64_t total = 0;
  for (int64_t s : spreads) total += s;
  f.impact_ns = std::min(total, ctx.window());
  f.title = fmt::format("compute per step differs by a median {} between the ranks ({} of the median rank's {})",
                        format_duration(spread), format_percent(share), format_duration(median));
  f.evidence.push_back({"steps compared", fmt::format("{}", steps.size())});
  std::map<size_t, uint64_t> slowest = slowest_counts(ctx, steps);
  std::vector<std::pair<uint64_t, size_t>> ranked;
  ranked.reserve(slowest.size());
  for (const auto& [rank, n] : slowest) ranked.emplace_back(n, rank);
  std::sort(ranked.rbegin(), ranked.rend());
  for (size_t i = 0; i < ranked.size() && i < 3; ++i) {
    int64_t rank = ctx.ranks[ranked[i].second].rank;
    f.ranks.push_back(rank);
    f.evidence.push_back({fmt::format("slowest: rank {}", rank),
                          fmt::format("in {} of {} steps, median compute {} per step", ranked[i].first, steps.size(),
                                      format_duration(report.figures[ranked[i].second].compute_ns))});
  }
  auto fastest = std::min_element(report.figures.begin(), report.figures.end(),
                                  [](const auto& a, const auto& b) { return a.compute_ns < b.compute_ns; });
  f.evidence.push_back({fmt::format("fastest: rank {}", fastest->rank),
                        fmt::format("median compute {} per step", format_duration(fastest->compute_ns))});
  auto [quickest, slowest_step] = std::minmax_element(
      report.figures.begin(), report.figures.end(), [](const auto& a, const auto& b) { return a.step_ns < b.step_ns; });
  f.evidence.push_back(
      {"step time, by rank", fmt::format("median from {} (rank {}) to {} (rank {})", format_duration(quickest->step_ns),
                                         quickest->rank, format_duration(slowest_step->step_ns), slowest_step->rank)});
  f.suggestion =
      "even out the work per rank (the same batch size and sequence lengths on every rank, a balanced pipeline "
      "split); what the slowest rank computes longer shows in its own trace";
  findings.push_back(std::move(f));
}

}  // namespace loupe::prof::job
