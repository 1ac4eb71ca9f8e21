// collectives: what communication costs the job. Each matched collective's
// time on a rank is the wait for the last rank (skew) and then the
// transfer, which is all the last rank spends in it; per kind and size,
// the medians over collectives of the ranks' mean wait and of the
// transfer, and the bus bandwidth the transfer achieved (nccl-tests'
// definition, comparable with the link's speed). Exposed communication, what no compute hides, comes from
// each rank's steps.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <tuple>

#include "job_analysis/job_context.h"
#include "loupe/prof/units.h"

namespace loupe::prof::job {

namespace {

// nccl-tests' bus bandwidth: the message size each kind moves, and the
// factor that makes its algorithm bandwidth comparable with the link's.
struct BusModel {
  bool known = false;
  bool uses_output = false;  // the size is the output message (all-gather)
  double factor = 1;
};

BusModel bus_model(const std::string& name, int64_t n) {
  std::string k;
  for (char c : name) {
    if (c != '_') k += char(std::tolower(static_cast<unsigned char>(c)));
  }
  double ring = n > 0 ? double(n - 1) / double(n) : 1;
  if (k.find("allreduce") != std::string::npos) return {true, false, 2 * ring};
  if (k.find("allgather") != std::string::npos) return {true, true, ring};
  if (k.find("reducescatter") != std::string::npos) return {true, false, ring};
  if (k.find("alltoall") != std::string::npos) return {true, false, ring};
  if (k.find("broadcast") != std::string::npos || k == "reduce") return {true, false, 1};
  return {};
}

struct KindSamples {
  CollectiveStats stats;
  std::vector<int64_t> waits, transfers;
};

}  // namespace

std::vector<CollectiveStats> collective_stats(const JobContext& ctx) {
  std::map<std::tuple<std::string, std::string, int64_t, int64_t>, KindSamples> by_kind;
  for (const Record& m : ctx.matched) {
    const RankSummary::Kind& c = ctx.kinds[m.kind];
    int64_t n = c.group_size > 0 ? c.group_size : int64_t(m.ranks);
    BusModel bus = bus_model(c.name, n);
    int64_t bytes = bus.uses_output ? c.out_bytes : c.in_bytes;
    KindSamples& k = by_kind[{c.group, c.name, bytes, n}];
    k.stats = {.group = c.group, .name = c.name, .bytes = bytes, .group_size = n, .count = k.stats.count + 1};
    k.waits.push_back(m.total_wait() / int64_t(m.ranks));
    k.transfers.push_back(m.transfer());
  }
  std::vector<CollectiveStats> out;
  std::vector<int64_t> totals;
  for (auto& [key, k] : by_kind) {
    k.stats.wait_ns = quantile(k.waits, 0.5);
    k.stats.transfer_ns = quantile(k.transfers, 0.5);
    BusModel bus = bus_model(k.stats.name, k.stats.group_size);
    if (bus.known && k.stats.bytes > 0 && k.stats.transfer_ns > 0) {
      k.stats.bus_bandwidth = double(k.stats.bytes) / (double(k.stats.transfer_ns) * 1e-9) * bus.factor;
    }
    out.push_back(k.stats);
  }
  std::stable_sort(out.begin(), out.end(), [](const CollectiveStats& a, const CollectiveStats& b) {
    return int64_t(a.count) * a.transfer_ns > int64_t(b.count) * b.transfer_ns;
  });
  return out;
}

namespace {

std::string kind_label(const CollectiveStats& k) {
  return fmt::format("{} of {} in group `{}` ({} ranks)", k.name, k.bytes > 0 ? format_bytes(k.bytes) : "unknown size",
                     k.group, k.group_size);
}

// Exposed communication: per step, the median rank's; the figure is the
// median over steps, and the impact their sum.
Finding exposed_finding(const JobContext& ctx, const JobReport& report) {
  std::map<int64_t, std::vector<int64_t>> by_step;
  for (const RankSummary& s : ctx.ranks) {
    for (const RankSummary::Step& st : s.steps) by_step[st.number].push_back(st.communication_ns);
  }
  std::vector<int64_t> per_step;
  int64_t total = 0;
  for (auto& [number, values] : by_step) {
    per_step.push_back(quantile(std::move(values), 0.5));
    total += per_step.back();
  }
  Finding f;
  f.rule = "collectives";
  f.impact_ns = std::min(total, ctx.window());
  f.severity = double(f.impact_ns) >= ctx.options.rank.communication_warning_fraction * double(ctx.window())
                   ? Severity::warning
                   : Severity::info;
  f.title = fmt::format(
      "{} of communication per step is not hidden by compute (median rank, median step); {} "
      "over {} steps",
      format_duration(quantile(per_step, 0.5)), format_duration(total), per_step.size());
  for (const RankFigures& r : report.figures) f.ranks.push_back(r.rank);
  auto most = std::max_element(report.figures.begin(), report.figures.end(),
                               [](const auto& a, const auto& b) { return a.communication_ns < b.communication_ns; });
  auto least = std::min_element(report.figures.begin(), report.figures.end(),
                                [](const auto& a, const auto& b) { return a.communication_ns < b.communication_ns; });
  f.evidence.push_back({"exposed per step, by rank",
                        fmt::format("from {} (rank {}) to {} (rank {})", format_duration(least->communication_ns),
                                    least->rank, format_duration(most->communication_ns), most->rank)});
  if (report.kinds.empty()) {
    f.evidence.push_back(
        {"collectives", fmt::format("{} NCCL kernels without collective arguments: which collective each ran, and its "
                                    "size and bandwidth, cannot be told from these traces",
                                    format_count(ctx.unmatched_collective_kernels))});
  }
  for (size_t i = 0; i < report.kinds.size() && i < 5; ++i) {
    const CollectiveStats& k = report.kinds[i];
    f.evidence.push_back(
        {kind_label(k),
         fmt::format("{} collectives; median wait for the last rank {}, transfer {}, bus bandwidth {}",
                     format_count(k.count), format_duration(k.wait_ns), format_duration(k.transfer_ns),
                     k.bus_bandwidth > 0 ? format_byte_rate(k.bus_bandwidth) : "cannot tell (kind or size unknown)")});
  }
  f.suggestion =
      report.kinds.empty()
          ? "each rank's trace cannot split its exposed time into the wait for the last rank and the transfer: record "
            "the collectives' arguments (PyTorch's profiler writes them from 2.1 on) so that they can be matched "
            "across ranks; meanwhile the imbalance finding shows which rank computes longest"
          : "where the wait dominates, the ranks arrive at different times: see the straggler and imbalance findings; "
            "where the transfer dominates, overlap it with compute (smaller DDP buckets, FSDP prefetching) or compare "
            "its bus bandwidth with the link's";
  return f;
}

}  // namespace

void rule_collectives(const JobContext& ctx, const JobReport& report, std::vector<Finding>& findings) {
  bool any_steps =
      std::any_of(ctx.ranks.begin(), ctx.ranks.end(), [](const RankSummary& s) { return !s.steps.empty(); });
  const bool any_collectives = !report.kinds.empty() || ctx.unmatched_collective_kernels > 0;
  if (any_collectives && any_steps) findings.push_back(exposed_finding(ctx, report));
}

}  // namespace loupe::prof::job
