// analyze_job: the map (summarize_rank on every core, a rank at a time per
// core) feeding the reduce (a JobReducer) in rank order as the summaries
// are made. A rank that cannot be read is named in the report's problems
// and the rest are analysed.
#include <fmt/format.h>

#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "job_analysis/job_context.h"
#include "loupe/prof/safe_text.h"

namespace loupe::prof {

namespace {

// The map's results, handed to the reduce in rank order. Workers take the
// next rank only while fewer than `ahead` summaries wait to be reduced, so
// memory holds a bounded number of summaries whatever the job's size.
struct MapQueue {
  std::mutex mu;
  std::condition_variable changed;
  std::vector<std::optional<RankSummary>> summaries;
  std::vector<std::string> errors;
  std::vector<bool> done;
  size_t next = 0, reduced = 0, ahead = 0;

  MapQueue(size_t n, size_t ahead_) : summaries(n), errors(n), done(n, false), ahead(ahead_) {}

  // The next rank to summarise, or nothing when all are taken.
  std::optional<size_t> take() {
    std::unique_lock lock(mu);
    changed.wait(lock, [&] { return next >= done.size() || next < reduced + ahead; });
    if (next >= done.size()) return std::nullopt;
    return next++;
  }
  void put(size_t i, std::optional<RankSummary> s, std::string error) {
    std::lock_guard lock(mu);
    summaries[i] = std::move(s);
    errors[i] = std::move(error);
    done[i] = true;
    changed.notify_all();
  }
  // Ends the map early: no rank is taken after this.
  void cancel() {
    std::lock_guard lock(mu);
    next = done.size();
    changed.notify_all();
  }
  // Rank i's result, once it is made.
  std::pair<std::optional<RankSummary>, std::string> wait_for(size_t i) {
    std::unique_lock lock(mu);
    changed.wait(lock, [&] { return bool(done[i]); });
    reduced = i + 1;
    changed.notify_all();
    return {std::move(summaries[i]), std::move(errors[i])};
  }
};

// One pass of the map and the reduce over the job as `job` lists it;
// `unread` counts the ranks that could not be read.
JobReport analyze_once(const Job& job, const JobAnalysisOptions& options, size_t& unread) {
  size_t n = job.ranks.size();
  unsigned cores = options.workers ? options.workers : std::max(1u, std::thread::hardware_concurrency());
  MapQueue queue(n, 2 * size_t(cores));
  auto worker = [&] {
    while (std::optional<size_t> i = queue.take()) {
      const JobRank& r = job.ranks[*i];
      try {
        RankSummary s = summarize_rank(job.trace_path(r), r.rank, job.world_size, options.rank);
        if (!r.host.empty()) s.host = r.host;
        queue.put(*i, std::move(s), "");
      } catch (const std::exception& e) {
        queue.put(*i, std::nullopt, fmt::format("rank {}: cannot be read, left out: {}", r.rank, e.what()));
      }
    }
  };
  JobReducer reducer(job, options);  // first: it refuses bad options before any thread starts
  std::vector<std::thread> pool;
  for (unsigned i = 0; i < std::min<size_t>(cores, n); ++i) pool.emplace_back(worker);
  unread = 0;
  try {
    for (size_t i = 0; i < n; ++i) {
      auto [summary, error] = queue.wait_for(i);
      if (summary) {
        reducer.add(std::move(*summary));
      } else {
        ++unread;
        reducer.add_problem(std::move(error));
      }
    }
  } catch (...) {
    queue.cancel();
    for (auto& t : pool) t.join();
    throw;
  }
  for (auto& t : pool) t.join();
  return reducer.finish();
}

}  // namespace

JobReport analyze_job(const std::string& dir, const JobAnalysisOptions& options) {
  // A job written over while it is read loses its old traces once the new
  // index is in place: a rank that could not be read because of that
  // makes the whole new job read again.
  constexpr int kAttempts = 3;
  for (int attempt = 1;; ++attempt) {
    Job job = read_job(dir);
    size_t unread = 0;
    try {
      JobReport report = analyze_once(job, options, unread);
      if (unread == 0 || !job_replaced(job)) return report;
    } catch (const JobError&) {
      if (!job_replaced(job)) throw;
    }
    if (attempt == kAttempts) {
      throw JobError(
          fmt::format("{}: the job was written over {} times while it was read; read it again once it is "
                      "written",
                      printable(dir), kAttempts));
    }
  }
}

}  // namespace loupe::prof
