// What the parts of a job's reduce share: the collectives matched across
// ranks, the ranks' clocks, and the job's aligned timeline.
#pragma once

#include <cstdint>
#include <vector>

#include "loupe/prof/job_analysis.h"

namespace loupe::prof::job {

// The most a rank's origin may differ from the reference rank's, and the
// largest time of a collective kept: with them every sum and difference
// the reduce takes fits in an int64.
inline constexpr int64_t kMaxJobTimeNs = int64_t(1) << 60;

// One rank's part in a matched collective. Times are ns after the
// reference rank's origin, on the rank's own clock until align_clocks()
// moves them onto the job's timeline.
struct Arrival {
  size_t rank = 0;  // index into the summaries
  int64_t arrival = 0, end = 0;
};

// One collective, matched on two ranks or more by (group, step, position
// in the step).
struct Matched {
  const RankSummary::Kind* kind = nullptr;   // the lowest rank's: group, name, sizes
  int64_t step_number = kNoStep, index = 0;  // its step, and its position among its group's in the step
  std::vector<Arrival> ranks;                // by rank
  // On the aligned timeline: the last rank to arrive, its arrival and the
  // one before it (how much later it came than everyone else), and the
  // collective's end (the median of the ranks' ends).
  size_t last = 0;
  int64_t last_arrival = 0, second_arrival = 0, end = 0;
  int64_t step() const { return step_number; }
  int64_t lateness() const { return last_arrival - second_arrival; }
  int64_t transfer() const { return std::max<int64_t>(end - last_arrival, 0); }
};

struct JobContext {
  const JobAnalysisOptions& options;
  std::vector<RankSummary>& ranks;
  std::vector<Matched> matched;
  std::vector<RankClock> clocks;  // per summary
  int64_t origin_wall_ns = 0;     // time 0 of the aligned timeline: the reference rank's origin
  int64_t window_start = 0, window_end = 0;
  // Whether findings count steps (the collectives were issued in marked
  // steps) or, without steps, single collectives.
  bool by_step = false;
  double imbalance_fraction = 0;  // set by rule_imbalance: median compute spread over median compute

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
  int64_t tolerance(const Matched& m) const;
};

// Matches the ranks' collectives; times are on each rank's own clock. The
// ranks' collectives are freed as they are matched (the matches hold
// what the rules need of them).
std::vector<Matched> match_collectives(std::vector<RankSummary>& ranks);

// Aligns every rank it can with the reference (the first summary) from
// the matched collectives' ends, then moves the matched collectives onto
// the aligned timeline and finds each one's last arrival.
void align_clocks(JobContext& ctx);

void rule_stragglers(const JobContext& ctx, JobReport& report);
void rule_collectives(const JobContext& ctx, JobReport& report);
void rule_imbalance(JobContext& ctx, JobReport& report);

// "rank 3", "ranks 3, 5 and 9", "ranks 2-127" (runs of three or more
// consecutive ranks as a range).
std::string ranks_label(const std::vector<int64_t>& ranks);

}  // namespace loupe::prof::job
