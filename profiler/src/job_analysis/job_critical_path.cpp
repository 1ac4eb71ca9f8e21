// The job's critical path (JobCriticalPath): the edges across ranks are
// the collectives. A collective ends when its last rank has arrived and
// the transfer is done, so what bound its end is that rank: the walk
// takes the transfer, then the last rank's own path into the collective
// (found on that rank alone, in the map), which starts at the end of an
// earlier collective of the rank, whose last rank the walk goes to next.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "job_analysis/job_context.h"
#include "loupe/prof/units.h"

namespace loupe::prof::job {

namespace {

// Sums of at most kMaxJobTimeNs each stop at INT64_MAX rather than wrap.
void add_to(int64_t& sum, int64_t v) {
  if (__builtin_add_overflow(sum, v, &sum)) sum = INT64_MAX;
}

// The path's time by rank and by step, as the walk adds it.
struct Tally {
  std::map<int64_t, int64_t> by_rank;
  std::map<int64_t, JobCriticalPath::Step> steps;
  std::map<int64_t, std::map<int64_t, int64_t>> step_ranks;  // step -> rank -> ns

  void add(JobCriticalPath& path, int64_t step, uint32_t position, int64_t rank, int64_t from, int64_t to,
           const std::array<int64_t, kPathCategories>& ns) {
    if (to > from) {
      size_t top = size_t(std::max_element(ns.begin(), ns.end()) - ns.begin());
      path.segments.push_back(
          {.start = from, .end = to, .category = PathCategory(top), .on_device = true, .device = position});
    }
    auto [it, fresh] = steps.try_emplace(step);
    JobCriticalPath::Step& s = it->second;
    s.number = step;
    s.time.start = fresh ? from : std::min(s.time.start, from);
    s.time.end = fresh ? to : std::max(s.time.end, to);
    for (size_t c = 0; c < kPathCategories; ++c) {
      int64_t v = std::clamp<int64_t>(ns[c], 0, kMaxJobTimeNs);  // a damaged summary's cannot overflow the sums
      add_to(path.whole.ns[c], v);
      add_to(s.time.ns[c], v);
      add_to(by_rank[rank], v);
      add_to(step_ranks[step][rank], v);
    }
  }

  void finish(JobCriticalPath& path) {
    path.ranks.assign(by_rank.begin(), by_rank.end());
    std::stable_sort(path.ranks.begin(), path.ranks.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    for (auto& [number, s] : steps) {
      const std::map<int64_t, int64_t>& ranks = step_ranks[number];
      s.rank = std::max_element(ranks.begin(), ranks.end(), [](const auto& a, const auto& b) {
                 return a.second < b.second;
               })->first;
      path.steps.push_back(s);
    }
  }
};

// The record that ended last: where the job's path ends.
const Record* last_ending(const std::vector<Record>& records) {
  const Record* last = nullptr;
  for (const Record& r : records) {
    if (last == nullptr || r.last_arrival + r.transfer() > last->last_arrival + last->transfer()) last = &r;
  }
  return last;
}

// The walk back from the job's end: the tail, then each collective's
// transfer and its last rank's path into it. Each path starts before its
// arrival, at an earlier record's end; damaged summaries whose records
// form a cycle stop at the bound.
class JobPathWalk {
 public:
  JobPathWalk(const JobContext& ctx, const std::vector<Record>& records) : ctx_(ctx), records_(records) {}

  JobCriticalPath run(const JobTail& tail) {
    const Record* last = last_ending(records_);
    if (last == nullptr) return {};  // no collective joins the ranks
    int64_t last_end = last->last_arrival + last->transfer();
    const Record* at = last;
    if (tail.to >= last_end && !tail.path.known) {
      path_.cannot_tell = fmt::format(
          "rank {}'s path into its last event is not in its trace: its collectives run on the host (gloo's "
          "thread, which no record links to the call that issued each), or its walk reached its bound",
          ctx_.ranks[tail.rank].rank);
      return std::move(path_);
    }
    if (tail.to >= last_end) {
      path_.whole.end = tail.to;
      int64_t step = tail.path.after == UINT32_MAX ? kNoStep : records_[tail.path.after].step();
      tally_.add(path_, step, tail.rank, ctx_.ranks[tail.rank].rank, tail.path.from, tail.to, tail.path.ns);
      path_.whole.start = tail.path.from;
      at = after(tail.path);
    } else {
      path_.whole.end = last_end;
    }
    for (size_t n = 0; at != nullptr; ++n) {
      if (n == records_.size()) {
        path_.cannot_tell = "the collectives' paths form a cycle (damaged summaries): the path stops there";
        break;
      }
      at = through(*at);
    }
    tally_.finish(path_);
    std::reverse(path_.segments.begin(), path_.segments.end());
    return std::move(path_);
  }

 private:
  const Record* after(const RankPath& p) const { return p.after == UINT32_MAX ? nullptr : &records_[p.after]; }

  // The collective's transfer on its last rank, then that rank's path into
  // it; the record that path starts at, or null.
  const Record* through(const Record& r) {
    int64_t rank = ctx_.ranks[r.last].rank;
    std::array<int64_t, kPathCategories> transfer{};
    transfer[size_t(PathCategory::communication)] = r.transfer();
    tally_.add(path_, r.step(), r.last, rank, r.last_arrival, r.last_arrival + r.transfer(), transfer);
    ++path_.collectives;
    path_.whole.start = r.last_arrival;
    if (!r.path.known) {
      path_.cannot_tell = fmt::format(
          "rank {}'s path into the collective it reached last at {} is not in its trace: it ran on the host "
          "(gloo's thread, which no record links to the call that issued it), or the walk reached its bound; the "
          "path stops there",
          rank, format_duration(r.last_arrival));
      return nullptr;
    }
    tally_.add(path_, r.step(), r.last, rank, r.path.from, r.last_arrival, r.path.ns);
    path_.whole.start = r.path.from;
    return after(r.path);
  }

  const JobContext& ctx_;
  const std::vector<Record>& records_;
  JobCriticalPath path_;
  Tally tally_;
};

}  // namespace

JobCriticalPath critical_path_of(const JobContext& ctx, const std::vector<Record>& records, const JobTail& tail) {
  return JobPathWalk(ctx, records).run(tail);
}

namespace {

std::string shares(const JobCriticalPath& p, int64_t total) {
  std::string out;
  for (size_t c = 0; c < kPathCategories; ++c) {
    if (p.whole.ns[c] == 0) continue;
    out += fmt::format("{}{} {:.1f}%", out.empty() ? "" : ", ", name_of(PathCategory(c)),
                       100.0 * double(p.whole.ns[c]) / double(total));
  }
  return out;
}

std::string ranks_on(const JobCriticalPath& p, int64_t total) {
  std::string out;
  for (size_t i = 0; i < p.ranks.size() && i < 8; ++i) {
    out += fmt::format("{}rank {} {} ({:.1f}%)", i == 0 ? "" : ", ", p.ranks[i].first,
                       format_duration(p.ranks[i].second), 100.0 * double(p.ranks[i].second) / double(total));
  }
  if (p.ranks.size() > 8) out += fmt::format(", {} more ranks", p.ranks.size() - 8);
  return out;
}

}  // namespace

// One info finding, as a trace's critical-path finding: the path costs
// nothing by itself; it says which rank, and what on it, set the job's time.
void rule_critical_path(const JobContext& /*ctx*/, const JobReport& report, std::vector<Finding>& findings) {
  const JobCriticalPath& p = report.critical_path;
  if (p.collectives == 0 && p.cannot_tell.empty()) return;
  Finding f;
  f.rule = "critical-path";
  f.severity = Severity::info;
  if (p.collectives == 0) {
    f.title = "the job's critical path cannot be told from these traces";
    f.evidence.push_back({"cannot tell", p.cannot_tell});
    findings.push_back(std::move(f));
    return;
  }
  int64_t total = 0;
  for (int64_t ns : p.whole.ns) add_to(total, ns);
  if (total <= 0) return;  // a path of no time tells nothing
  size_t top = size_t(std::max_element(std::begin(p.whole.ns), std::end(p.whole.ns)) - std::begin(p.whole.ns));
  f.title = fmt::format("the job's critical path runs through rank {} for {:.1f}% of its {}, bound by {}",
                        p.ranks.front().first, 100.0 * double(p.ranks.front().second) / double(total),
                        format_duration(total), name_of(PathCategory(top)));
  f.ranks.push_back(p.ranks.front().first);
  f.ranges.push_back({p.whole.start, p.whole.end});
  f.evidence.push_back({"by rank", ranks_on(p, total)});
  f.evidence.push_back({"by what bound it", shares(p, total)});
  f.evidence.push_back(
      {"through", fmt::format("{} collectives, each on the rank that reached it last", format_count(p.collectives))});
  if (!p.cannot_tell.empty()) f.evidence.push_back({"cannot tell", p.cannot_tell});
  f.suggestion =
      "time saved off the path's rank saves job time; the other ranks' time up to the collectives they wait in "
      "saves none until the path moves to them";
  findings.push_back(std::move(f));
}

}  // namespace loupe::prof::job
