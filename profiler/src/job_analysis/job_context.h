// What the parts of a job's reduce share: the collectives matched across
// ranks, each folded into one fixed-size record, the ranks' clocks, and
// the job's aligned timeline.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "loupe/prof/job_analysis.h"

namespace loupe::prof::job {

// The most a rank's origin may differ from the reference rank's, and the
// largest time of a collective kept: with them every sum and difference
// the reduce takes fits in an int64 (sums over ranks in an __int128).
inline constexpr int64_t kMaxJobTimeNs = int64_t(1) << 60;

// A sum over ranks of such times: too wide for an int64.
__extension__ using TimeSum = __int128;

// A rank's own path into a collective or into its end (RankSummary's), on
// the aligned timeline.
struct RankPath {
  bool known = false;
  uint32_t after = UINT32_MAX;  // the record of the collective it starts at; UINT32_MAX none
  int64_t from = 0;             // where it starts
  std::array<int64_t, kPathCategories> ns{};
};

// The path into the job's end: the rank whose last event came last.
struct JobTail {
  RankPath path;
  uint32_t rank = 0;  // index into JobContext::ranks
  int64_t to = INT64_MIN;
};

// One collective of the job, matched across ranks by (group, step,
// position in the step), with every rank's part folded in as the rank is
// added: what the rules need of it, in a size that does not grow with the
// ranks. Times are ns on the aligned timeline (after the reference rank's
// origin).
struct Record {
  uint32_t kind = 0;                         // index into JobContext::kinds: the first rank's
  int64_t step_number = kNoStep, index = 0;  // its step, and its position among its group's in the step
  uint32_t ranks = 0;                        // ranks that took part
  // The last rank to arrive and the one before it (indices into
  // JobContext::ranks), and their arrivals.
  uint32_t last = 0, second = 0;
  int64_t last_arrival = 0, second_arrival = 0;
  int64_t last_duration = 0;  // the last rank's time in it: the transfer, every other rank having arrived
  TimeSum arrival_sum = 0;    // of every rank's arrival: with `ranks` and the last arrival, the ranks' total wait
  // The first aligned rank's end: what a later rank's clock is aligned
  // against.
  bool anchored = false;
  uint32_t anchor = 0;
  int64_t anchor_end = 0;
  std::vector<JobCollective::Part> parts;  // with keep_timeline only
  RankPath path;                           // the last rank's own path into it

  int64_t step() const { return step_number; }
  int64_t lateness() const { return last_arrival - second_arrival; }
  int64_t transfer() const { return std::max<int64_t>(last_duration, 0); }
  // What the ranks waited for the last one, in all.
  int64_t total_wait() const { return int64_t(TimeSum(ranks) * last_arrival - arrival_sum); }
  // Folds in one rank's part.
  void add(uint32_t rank, int64_t arrival, int64_t end) {
    arrival_sum += arrival;
    if (ranks++ == 0 || arrival > last_arrival) {
      second = last;
      second_arrival = last_arrival;
      last = rank;
      last_arrival = arrival;
      last_duration = end - arrival;
    } else if (ranks == 2 || arrival > second_arrival) {
      second = rank;
      second_arrival = arrival;
    }
  }
};

struct JobContext {
  const JobAnalysisOptions& options;
  std::vector<RankSummary> ranks;        // analysed, by rank; their collectives freed once folded
  std::vector<RankSummary::Kind> kinds;  // the job's kinds of collective
  std::vector<Record> matched;           // the records of two ranks or more, in the order first seen
  std::vector<RankClock> clocks;         // per rank
  std::vector<int64_t> waits;            // per rank: what it waited in collectives for a later rank
  int64_t origin_wall_ns = 0;            // time 0 of the aligned timeline: the reference rank's origin
  int64_t window_start = 0, window_end = 0;
  // Whether findings count steps (the collectives were issued in marked
  // steps) or, without steps, single collectives.
  bool by_step = false;
  // NCCL kernels of ranks whose collectives could not be matched (no
  // collective arguments): communication the kinds cannot describe.
  uint64_t unmatched_collective_kernels = 0;

  int64_t window() const { return std::max<int64_t>(window_end - window_start, 1); }
  // A rank's trace time on the aligned timeline.
  int64_t aligned(size_t rank, int64_t t) const {
    return ranks[rank].origin_wall_ns - origin_wall_ns + t - clocks[rank].offset_ns;
  }
  // The unit a matched collective counts toward: its step, or itself.
  int64_t unit_of(size_t matched_index) const {
    return by_step ? matched[matched_index].step() : int64_t(matched_index);
  }
  // The least lateness that says a rank was last: the option's floor, or
  // what the two ranks' clocks leave uncertain, whichever is larger.
  int64_t tolerance(const Record& m) const {
    return std::max(options.min_lateness_ns, clocks[m.last].residual_ns + clocks[m.second].residual_ns);
  }
};

// What the report measures before its rules judge: each rank's figures
// (median compute, step time and exposed communication per step, waits,
// collectives it reached last) and the kinds of collective (job_figures.cpp).
void measure_figures(const JobContext& ctx, JobReport& report);

// The job's critical path, from its end through the collectives' last
// ranks, from the records before they are left to those matched
// (job_critical_path.cpp).
JobCriticalPath critical_path_of(const JobContext& ctx, const std::vector<Record>& records, const JobTail& tail);

// Per kind and size of collective: counts, median wait and transfer, bus
// bandwidth, by total transfer time (collectives.cpp).
std::vector<CollectiveStats> collective_stats(const JobContext& ctx);

// A rank that arrived last at collectives, beyond the clocks' tolerance
// (straggler.cpp). `units` gets every step (or collective) compared.
struct Lateness {
  std::set<int64_t> units;                   // steps (or collectives) it was last in
  std::map<int64_t, int64_t> worst_in_unit;  // the most it was late in each
  uint64_t collectives = 0;                  // collectives it was last at
  int64_t others_waited_ns = 0;              // what the other ranks waited for it
  std::vector<TimeRange> ranges;
};
std::map<size_t, Lateness> lateness_by_rank(const JobContext& ctx, std::set<int64_t>& units);

// How evenly the ranks compute: per step with two ranks or more, the spread
// of their compute; the medians over steps (imbalance.cpp).
struct Imbalance {
  struct Step {
    std::vector<std::pair<int64_t, size_t>> by_rank;  // (compute, rank index)
  };
  std::map<int64_t, Step> steps;  // by step number
  std::vector<int64_t> spreads;   // per step, in step order
  int64_t spread = 0, median = 0;
  double share = 0;  // spread over median: the imbalance_fraction metric
};
Imbalance imbalance_of(const JobContext& ctx);

// The rules of a job, as a trace's: findings from what the context holds
// and the report measured (kJobRules in job_reducer.cpp runs them).
void rule_stragglers(const JobContext& ctx, const JobReport& report, std::vector<Finding>& findings);
void rule_collectives(const JobContext& ctx, const JobReport& report, std::vector<Finding>& findings);
void rule_imbalance(const JobContext& ctx, const JobReport& report, std::vector<Finding>& findings);
void rule_critical_path(const JobContext& ctx, const JobReport& report, std::vector<Finding>& findings);

}  // namespace loupe::prof::job
