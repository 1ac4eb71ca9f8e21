// summarize_rank: the map of a job's analysis. One rank's trace is read
// and analysed on its own; what the reduce needs is kept, and the model is
// dropped before the next rank is read, so memory holds one rank at a time.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <map>
#include <optional>
#include <tuple>

#include "job_analysis/job_context.h"
#include "loupe/prof/job_analysis.h"
#include "loupe/prof/safe_text.h"
#include "loupe/prof/trace_reader.h"

namespace loupe::prof {

namespace {

constexpr size_t kKernelsKept = 64;
constexpr size_t kFindingsKept = 3;

// The host ranges of the steps, sorted, to find the step a time falls in.
struct StepRanges {
  std::vector<std::tuple<int64_t, int64_t, int64_t>> ranges;  // (start, end, number)

  explicit StepRanges(const StepStats& stats) {
    for (const StepStats::Step& s : stats.steps) ranges.emplace_back(s.start, s.start + s.dur, s.number);
    std::sort(ranges.begin(), ranges.end());
  }

  // The step whose range holds `t`: the latest to start before it, or one
  // of the few before that (steps marked on several threads overlap).
  int64_t at(int64_t t) const {
    auto it = std::upper_bound(ranges.begin(), ranges.end(), std::make_tuple(t, INT64_MAX, INT64_MAX));
    for (int looked = 0; it != ranges.begin() && looked < 8; ++looked) {
      --it;
      if (std::get<1>(*it) > t) return std::get<2>(*it);
    }
    return kNoStep;
  }
};

// The collectives in each group's order, each with its step, its
// position among its group's collectives of that step, and the rank's
// path into it.
void collectives_of(const TraceModel& m, const StepRanges& steps, const ArrivalPaths& paths, RankSummary& s) {
  std::map<std::tuple<StringId, StringId, int64_t, int64_t, uint32_t>, uint32_t> kinds;
  std::vector<int64_t> kept;  // per collective row: its index in s.collectives, -1 left out
  for (const Collectives& track : m.collectives) {
    std::map<int64_t, int64_t> next_index;  // per step
    for (size_t i = 0; i < track.size(); ++i) {
      kept.push_back(-1);
      if (std::abs(track.start[i]) >= job::kMaxJobTimeNs || std::abs(track.end(i)) >= job::kMaxJobTimeNs) continue;
      auto key = std::make_tuple(track.process_group, track.name[i], track.in_bytes[i], track.out_bytes[i],
                                 track.group_size[i]);
      auto [it, inserted] = kinds.try_emplace(key, uint32_t(s.kinds.size()));
      if (inserted) {
        s.kinds.push_back({m.str(track.process_group), m.str(track.name[i]), track.in_bytes[i], track.out_bytes[i],
                           track.group_size[i]});
      }
      RankSummary::Collective c;
      c.kind = it->second;
      c.step = steps.at(track.issued[i]);
      c.index = next_index[c.step]++;
      c.start = track.start[i];
      c.end = track.end(i);
      kept.back() = int64_t(s.collectives.size());
      s.collectives.push_back(c);
    }
  }
  auto usable = [](const ArrivalPath& p) {
    return p.known && std::abs(p.from) < job::kMaxJobTimeNs && std::abs(p.to) < job::kMaxJobTimeNs;
  };
  for (size_t row = 0; row < kept.size() && row < paths.collectives.size(); ++row) {
    const ArrivalPath& p = paths.collectives[row];
    if (kept[row] < 0 || !usable(p)) continue;
    RankSummary::Collective& c = s.collectives[size_t(kept[row])];
    c.path_known = true;
    c.path_from = p.from;
    c.after = p.after < 0 ? -1 : kept[size_t(p.after)];
    std::copy(std::begin(p.ns), std::end(p.ns), c.path_ns.begin());
  }
  s.tail_to = std::clamp(paths.end.to, -job::kMaxJobTimeNs + 1, job::kMaxJobTimeNs - 1);
  // A walk does not stop at a collective run on the host: its path to
  // the end would pass through it as if no other rank mattered.
  bool on_host = std::any_of(m.collectives.begin(), m.collectives.end(), [](const Collectives& t) {
    return std::find(t.on_device.begin(), t.on_device.end(), false) != t.on_device.end();
  });
  if (on_host || !usable(paths.end)) return;
  s.tail_known = true;
  s.tail_from = paths.end.from;
  s.tail_after = paths.end.after < 0 ? -1 : kept[size_t(paths.end.after)];
  std::copy(std::begin(paths.end.ns), std::end(paths.end.ns), s.tail_ns.begin());
}

// Steps by number; a step marked on several threads counts once, with the
// largest of each figure.
std::vector<RankSummary::Step> steps_of(const StepStats& stats) {
  std::map<int64_t, RankSummary::Step> by_number;
  for (const StepStats::Step& s : stats.steps) {
    RankSummary::Step& out = by_number[s.number];
    out.number = s.number;
    out.compute_ns = std::max(out.compute_ns, s.compute_ns);
    out.communication_ns = std::max(out.communication_ns, s.communication_ns);
    out.idle_ns = std::max(out.idle_ns, s.idle_ns);
    out.time_ns = std::max(out.time_ns, stats.judged_ns(s));
  }
  std::vector<RankSummary::Step> out;
  out.reserve(by_number.size());
  for (auto& [number, s] : by_number) out.push_back(s);
  return out;
}

std::vector<std::pair<std::string, int64_t>> largest(std::map<std::string, int64_t> by_name, size_t keep) {
  std::vector<std::pair<std::string, int64_t>> out(by_name.begin(), by_name.end());
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  if (out.size() > keep) out.resize(keep);
  return out;
}

// Kernel time by name, collectives left out: what the rank computed; and
// the collective kernels counted.
std::vector<std::pair<std::string, int64_t>> kernels_of(const TraceModel& m, uint64_t& collective_kernels) {
  std::vector<int64_t> by_id(m.strings.size(), 0);
  std::vector<uint64_t> count(m.strings.size(), 0);
  for (const DeviceOps& s : m.device_ops) {
    for (size_t i = 0; i < s.size(); ++i) {
      if (s.kind[i] != DeviceOpKind::kernel) continue;
      by_id[s.name[i]] += s.dur[i];
      ++count[s.name[i]];
    }
  }
  std::map<std::string, int64_t> by_name;
  for (size_t id = 0; id < by_id.size(); ++id) {
    if (count[id] == 0) continue;
    if (is_collective_kernel(m.strings[id])) collective_kernels += count[id];
    else if (by_id[id] > 0) by_name[m.strings[id]] += by_id[id];
  }
  return largest(std::move(by_name), kKernelsKept);
}

std::vector<std::pair<std::string, int64_t>> idle_of(const AnalysisReport& report) {
  std::map<std::string, int64_t> by_cause;
  for (const DeviceIdle& d : report.devices) {
    for (size_t c = 0; c < kGapCauses; ++c) {
      if (d.cause_ns[c] > 0) by_cause[std::string(name_of(GapCause(c)))] += d.cause_ns[c];
    }
  }
  return largest(std::move(by_cause), kGapCauses);
}

// The trace's own word on its rank and job size, where it has one, agrees
// with the index's.
void check_rank_meta(const TraceModel& m, const std::string& trace, int64_t rank, int64_t world_size) {
  auto said = [&](const char* key) -> std::optional<int64_t> {
    auto it = m.info.meta.find(key);
    int64_t v = 0;
    if (it == m.info.meta.end()) return std::nullopt;
    const std::string& text = it->second;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return v;
  };
  if (std::optional<int64_t> r = said("rank"); r && *r != rank) {
    throw JobError(fmt::format("{} says it is rank {} (meta.rank), but the job's index lists it as rank {}",
                               printable(trace), *r, rank));
  }
  if (std::optional<int64_t> n = said("world_size"); n && *n != world_size) {
    throw JobError(fmt::format("{} says it is a rank of a job of {} ranks (meta.world_size), but the job has {}",
                               printable(trace), *n, world_size));
  }
}

}  // namespace

RankSummary summarize_rank(const std::string& trace, int64_t rank, int64_t world_size, const AnalysisOptions& options) {
  TraceModel m = load_trace(trace, {.threads = 1});  // the map runs a rank per core
  check_rank_meta(m, trace, rank, world_size);
  AnalysisReport report = analyze(m, options);
  RankSummary s;
  s.rank = rank;
  if (auto it = m.info.meta.find("hostname"); it != m.info.meta.end()) s.host = it->second;
  s.origin_wall_ns = m.info.origin_wall_ns;
  s.metrics = report.metrics;
  s.window_start = report.window_start;
  s.window_end = report.window_end;
  s.events = m.total_events();
  collectives_of(m, StepRanges(report.steps), arrival_paths(m, options), s);
  s.steps = steps_of(report.steps);
  s.kernels = kernels_of(m, s.collective_kernels);
  s.idle = idle_of(report);
  for (const Incompleteness& i : report.incomplete) s.incomplete.push_back(i.missing);
  for (size_t i = 0; i < report.findings.size() && i < kFindingsKept; ++i) {
    s.findings.emplace_back(report.findings[i].title, report.findings[i].impact_ns);
  }
  return s;
}

}  // namespace loupe::prof
