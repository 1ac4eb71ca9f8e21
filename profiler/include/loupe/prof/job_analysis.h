// A job's analysis: the ranks of a distributed run on one timeline, the
// rank that makes the others wait, communication and its cost, and how
// evenly the work is spread (docs/analyses.md, "Jobs").
//
// It is a map and a reduce. The map, summarize_rank(), reads one rank's
// trace and keeps a small summary: its collectives, its steps' compute and
// exposed communication, its own analysis in brief. The reduce, a
// JobReducer, takes the summaries one at a time in rank order: it aligns
// each rank's clock on the collectives it shares with the ranks before
// it, folds its collectives into one fixed-size record per collective of
// the job, and at the end writes the findings. analyze_job() runs the map
// on every core; the Python package runs the same map as Dask tasks
// (docs/scale.md) and the same reduce.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loupe/prof/analysis.h"
#include "loupe/prof/budget.h"
#include "loupe/prof/job.h"
#include "loupe/prof/trace_diff.h"

namespace loupe::prof {

// The step number of a collective issued outside every step.
inline constexpr int64_t kNoStep = INT64_MIN;

// One rank, as the reduce needs it. Times are the rank's trace times (ns
// after its origin, on its own clock).
struct RankSummary {
  int64_t rank = 0;
  std::string host;
  int64_t origin_wall_ns = 0;                // the wall-clock time (on the rank's clock) of time 0
  int64_t window_start = 0, window_end = 0;  // its active window (AnalysisReport's)
  uint64_t events = 0;
  // NCCL or RCCL kernels in its trace: with no collectives, they are
  // collectives whose arguments the trace lacks.
  uint64_t collective_kernels = 0;
  // The kinds of collective the rank took part in: a group, a name and
  // message sizes. A rank has a few; its collectives number a few per step.
  struct Kind {
    std::string group, name;
    int64_t in_bytes = 0, out_bytes = 0, group_size = 0;
    bool operator==(const Kind&) const = default;
  };
  std::vector<Kind> kinds;
  struct Collective {
    uint32_t kind = 0;       // index into kinds
    int64_t step = kNoStep;  // the step it was issued in
    int64_t index = 0;       // its position among its group's collectives of that step
    int64_t start = 0, end = 0;
    // The rank's own critical path into it (ArrivalPath): from the end of
    // its collective `after` (an index into `collectives`; -1 none), or
    // from its first event, to `start`.
    bool path_known = false;
    int64_t path_from = 0, after = -1;
    std::array<int64_t, kPathCategories> path_ns{};
  };
  std::vector<Collective> collectives;  // in each group's order
  // The rank's own path into its last event, as into a collective.
  bool tail_known = false;
  int64_t tail_from = 0, tail_to = 0, tail_after = -1;
  std::array<int64_t, kPathCategories> tail_ns{};
  struct Step {
    int64_t number = 0;
    int64_t compute_ns = 0, communication_ns = 0, idle_ns = 0;  // as StepStats splits the device window
    int64_t time_ns = 0;  // the step's time as its own analysis judges it (StepStats::judged_ns)
  };
  std::vector<Step> steps;                                // by number
  std::vector<std::pair<std::string, int64_t>> kernels;   // compute kernel time by name, largest first (at most 64)
  std::vector<std::pair<std::string, int64_t>> idle;      // device idle by cause (GapCause names)
  std::vector<std::pair<std::string, int64_t>> findings;  // its own findings' titles and impacts, largest first (3)
  std::vector<std::string> incomplete;                    // what its trace lacks (Incompleteness::missing)
  TraceMetrics metrics;                                   // its own analysis's, for a trace's budgets on every rank
};

// Reads one rank's trace (throws TraceError) and summarises it. The trace
// must not say it is another rank, or a rank of a job of another size,
// than the job's index says (meta.rank, meta.world_size): a swapped or
// copied file would blame the wrong rank (throws JobError).
RankSummary summarize_rank(const std::string& trace, int64_t rank, int64_t world_size,
                           const AnalysisOptions& options = {});

// A summary as JSON text and back, exactly: what a map task on another
// machine returns (python/loupe/jobs.py). Reading throws JobError naming
// what is wrong with the text.
std::string rank_summary_to_json(const RankSummary& summary);
RankSummary rank_summary_from_json(const std::string& text);

// How one rank's clock was aligned with the reference rank's (the lowest
// rank analysed): `offset_ns` is subtracted from its wall-clock times.
struct RankClock {
  int64_t rank = 0;
  bool aligned = false;     // false: no collective in common with an aligned rank; its wall clock is used as is
  int64_t via = 0;          // the aligned rank whose ends most of its matched collectives were compared with
  uint64_t matched = 0;     // collectives matched with that rank
  int64_t offset_ns = 0;    // its clock minus the reference's
  int64_t residual_ns = 0;  // the largest difference of a matched collective's end after alignment
};

// One kind of collective (group, name and message size) over the job.
struct CollectiveStats {
  std::string group, name;
  int64_t bytes = 0;  // the message size bus bandwidth is computed from (0 unknown)
  int64_t group_size = 0;
  uint64_t count = 0;        // collectives matched on two ranks or more
  int64_t wait_ns = 0;       // median over collectives of the ranks' mean wait from their arrival to the last one's
  int64_t transfer_ns = 0;   // median over collectives of the last rank's time in it (it waited for no one)
  double bus_bandwidth = 0;  // bytes/s, nccl-tests' bus bandwidth at the median transfer; 0 cannot tell
};

// One rank's figures over the steps.
struct RankFigures {
  int64_t rank = 0;
  int64_t step_ns = 0;           // median step time
  int64_t compute_ns = 0;        // median per step
  int64_t communication_ns = 0;  // median exposed communication per step
  // Whether its collectives were matched with other ranks': only then are
  // the two below known.
  bool matched = true;
  int64_t wait_ns = 0;         // total time it waited in collectives for a later rank
  uint64_t last_arrivals = 0;  // collectives it reached last
};

// A matched collective on the job's aligned timeline (ns after the
// reference rank's origin): what the viewer draws.
struct JobCollective {
  std::string group, name;
  int64_t bytes = 0;
  int64_t step = kNoStep, index = 0;
  int64_t last_rank = 0;  // the rank that arrived last
  int64_t last_arrival = 0;
  struct Part {
    int64_t rank = 0, arrival = 0, end = 0;
  };
  std::vector<Part> parts;  // one per rank that took part, by rank
};

// The job's critical path (docs/analyses.md, "Jobs"), walked back from
// the collective that ended last. A collective ends once its last rank has
// arrived and the transfer is done, so the path runs through that rank:
// the transfer, then the rank's own path into the collective (its
// ArrivalPath), back to the collective that path started at, and so on.
// Every other rank's wait in a collective is off the path.
struct JobCriticalPath {
  // On the aligned timeline; `ns` adds up to end - start within the
  // clocks' residuals. Communication is the transfers once the last rank
  // arrived; the rest is what the ranks on the path did.
  PathBreakdown whole;
  std::vector<std::pair<int64_t, int64_t>> ranks;  // (rank, its time on the path), largest first
  // By the step of each collective the path goes through: the transfer
  // and the path into it.
  struct Step {
    int64_t number = kNoStep;
    PathBreakdown time;
    int64_t rank = 0;  // the rank on most of it
  };
  std::vector<Step> steps;
  uint64_t collectives = 0;  // on the path
  std::string cannot_tell;   // why the path stops short of the job's start, or ""
  // Its stretches in time order, each on one rank (`device`: the rank's
  // position in JobReport::ranks, `on_device` set, `stream` 0): a
  // transfer, or a rank's path into a collective, whose category is the
  // one that bounds most of it (the viewer draws them on the ranks' rows).
  std::vector<PathSegment> segments;
};

struct JobAnalysisOptions {
  std::vector<std::string> rules;   // the job's rules to run (job_rules()); empty: all
  AnalysisOptions rank;             // each rank's own analysis
  unsigned workers = 0;             // ranks summarised at once: 0 = one per core
  int64_t min_lateness_ns = 5'000;  // a rank is last at a collective when the others waited at least this
  double straggler_fraction = 0.5;  // a straggler is last in more than this share of the steps
  double imbalance_warning = 0.05;  // median compute spread over the median rank's compute
  bool keep_timeline = false;       // fill JobReport::timeline (24 bytes per rank and collective)
};

// The job's rules, in the order docs/analyses.md ("Jobs") describes them:
// straggler, collectives, imbalance, critical-path.
std::vector<std::string> job_rules();

struct JobReport {
  std::string dir;
  int64_t world_size = 0;
  std::vector<int64_t> ranks;  // analysed across ranks (their collectives matched), in order
  // When fewer than two ranks' collectives could be matched: the ranks
  // compared on what each one's own trace shows (steps, compute, exposed
  // communication), on their own clocks. Empty otherwise.
  std::vector<int64_t> own_traces;
  std::vector<std::string> problems;   // ranks missing, unreadable or without collectives, and what that means
  std::vector<RankClock> clocks;       // per analysed rank
  int64_t window_ns = 0;               // the job's extent on the aligned timeline (own_traces: the longest rank's)
  int64_t origin_wall_ns = 0;          // the aligned timeline's time 0: the reference rank's origin
  std::vector<CollectiveStats> kinds;  // by total transfer time, largest first
  JobCriticalPath critical_path;       // through the collectives matched (empty without)
  std::vector<RankFigures> figures;    // per analysed rank
  std::vector<Finding> findings;       // by impact; `ranks` names the ranks each concerns
  JobMetrics metrics;
  // Every rank summarised (those left out of the comparison too): its own
  // analysis's metrics, which a trace's budgets limit.
  std::vector<std::pair<int64_t, TraceMetrics>> rank_metrics;
  std::vector<JobCollective> timeline;  // with keep_timeline: every matched collective
};

// The reduce, streaming. Summaries are added in increasing rank order, one
// at a time; each is folded in as it comes (its collectives freed), so the
// reduce holds one record (under 300 bytes with its index) per distinct
// collective of the job and each rank's steps and figures, not every
// rank's collectives. A rank that shares no collective with the ranks
// before it waits, whole, until one that links it arrives. The same
// summaries in the same order give the same report, wherever the map ran.
class JobReducer {
 public:
  explicit JobReducer(const Job& job, const JobAnalysisOptions& options = {});
  ~JobReducer();
  JobReducer(const JobReducer&) = delete;
  JobReducer& operator=(const JobReducer&) = delete;

  // The next rank's summary (throws JobError when its rank is not above
  // the previous one's).
  void add(RankSummary summary);
  // A rank the map could not read, and why (kept in the report's problems).
  void add_problem(std::string problem);
  // Every figure of the report. Call once, after the last add().
  JobReport finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The reduce of summaries in hand, in rank order: a JobReducer fed each.
JobReport reduce_job(const Job& job, std::vector<RankSummary> ranks, std::vector<std::string> problems,
                     const JobAnalysisOptions& options = {});

// Reads the job (throws JobError), summarises every rank it can read, one
// per core, and reduces them in rank order as they are summarised.
JobReport analyze_job(const std::string& dir, const JobAnalysisOptions& options = {});

// `loupe check job/`: a job's keys against the job, a trace's keys against
// every rank (the worst rank's value, and which rank, in actual_text).
std::vector<BudgetResult> check_job_budget(const Budget& budget, const JobReport& report);

// `loupe diff jobA/ jobB/`: the job's metrics (job_diff_metrics() names
// them, for --fail-on), each kind of collective's median transfer and
// wait, and each rank's compute per step; noise from the ranks' step
// spread (the largest of any rank in both jobs).
struct JobDiff {
  double noise_fraction = 0;
  std::vector<DiffRow> metrics, collectives, ranks;
};
JobDiff diff_jobs(const JobReport& base, const JobReport& head);
std::string job_diff_text(const JobDiff& d, const std::string& base, const std::string& head, size_t limit);
std::string job_diff_markdown(const JobDiff& d, const std::string& base, const std::string& head, size_t limit);
std::string job_diff_json(const JobDiff& d, const std::string& base, const std::string& head);

// The report as text (what `loupe analyze job/` prints), JSON or Markdown.
std::string format_job_text(const JobReport& report);
std::string format_job_json(const JobReport& report);
std::string format_job_markdown(const JobReport& report);

}  // namespace loupe::prof
