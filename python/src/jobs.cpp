#include "jobs.h"

#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "loupe/prof/job.h"
#include "loupe/prof/job_analysis.h"

namespace nb = nanobind;
using namespace nb::literals;
using namespace loupe::prof;

namespace loupe::python {

namespace {

using Thresholds = std::map<std::string, std::string>;

JobAnalysisOptions job_options(const Thresholds& thresholds) {
  JobAnalysisOptions options;
  for (const auto& [name, value] : thresholds) set_analysis_parameter(options.rank, name, value);
  return options;
}

using RankTask = std::tuple<int64_t, std::string, int64_t, std::string>;  // rank, trace, world size, host

// The map: one rank's summary as JSON text.
std::string summarize(const std::string& trace, int64_t rank, int64_t world_size, const std::string& host,
                      const Thresholds& thresholds) {
  JobAnalysisOptions options = job_options(thresholds);
  nb::gil_scoped_release unlocked;
  RankSummary s = summarize_rank(trace, rank, world_size, options.rank);
  if (!host.empty()) s.host = host;  // the index's host, as analyze_job keeps it
  return rank_summary_to_json(s);
}

std::pair<std::string, std::string> formatted(const JobReport& report) {
  return {format_job_json(report), format_job_text(report)};
}

// The reduce, streaming: the client adds each rank's result in rank order
// as it gathers them, so it holds one summary at a time. It reads the
// job's index once: the map's tasks come from the same reading.
class Reducer {
 public:
  Reducer(const std::string& dir, const Thresholds& thresholds)
      : job_(read_job(dir)), reducer_(job_, job_options(thresholds)) {}
  // (rank, trace path, world size, host) of each rank the index lists.
  std::vector<RankTask> ranks() const {
    std::vector<RankTask> out;
    for (const JobRank& r : job_.ranks) out.emplace_back(r.rank, job_.trace_path(r), job_.world_size, r.host);
    return out;
  }
  // Whether a new job was written over this one since it was read.
  bool replaced() const { return job_replaced(job_); }
  void add(const std::string& summary) {
    nb::gil_scoped_release unlocked;
    reducer_.add(rank_summary_from_json(summary));
  }
  void add_problem(const std::string& problem) { reducer_.add_problem(problem); }
  std::pair<std::string, std::string> finish() {
    nb::gil_scoped_release unlocked;
    return formatted(reducer_.finish());
  }

 private:
  Job job_;
  JobReducer reducer_;
};

std::pair<std::string, std::string> analyze(const std::string& dir, const Thresholds& thresholds, unsigned workers) {
  JobAnalysisOptions options = job_options(thresholds);
  options.workers = workers;
  nb::gil_scoped_release unlocked;
  return formatted(analyze_job(dir, options));
}

}  // namespace

void add_jobs(nb::module_& m) {
  m.def("summarize_rank", &summarize, "trace"_a, "rank"_a, "world_size"_a, "host"_a, "thresholds"_a,
        "The map of a job's analysis: one rank's summary, as JSON text.");
  nb::class_<Reducer>(m, "JobReducer", "The reduce of a job's analysis, fed the ranks' results in rank order.")
      .def(nb::init<const std::string&, const Thresholds&>(), "dir"_a, "thresholds"_a)
      .def("ranks", &Reducer::ranks, "(rank, trace path, world size, host) of each rank the job's index lists.")
      .def("replaced", &Reducer::replaced, "Whether a new job was written over this one since it was read.")
      .def("add", &Reducer::add, "summary"_a, "The next rank's summary (JSON text from summarize_rank).")
      .def("add_problem", &Reducer::add_problem, "problem"_a, "A rank the map could not read, and why.")
      .def("finish", &Reducer::finish, "(JSON, text) of the report, once every rank was added.");
  m.def("analyze_job", &analyze, "dir"_a, "thresholds"_a, "workers"_a,
        "`loupe analyze job/`: (JSON, text), the map run here on `workers` threads (0: one per core).");
}

}  // namespace loupe::python
