// A job's analysis. On synthetic jobs (job_synth.h) every figure is known
// from what the generator planted: the clock offsets, the straggler, its
// delay and the steps it is late in, the transfer time, the compute. On
// the real gloo job (tests/fixtures/jobs/gloo-2ranks) the expected figures
// are computed here from the raw JSON: the gloo:all_reduce spans' starts
// and ends on each rank.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>

#include "loupe/prof/budget.h"
#include "loupe/prof/job.h"
#include "loupe/prof/job_analysis.h"
#include "loupe/prof/job_synth.h"
#include "loupe/prof/synth.h"
#include "loupe/prof/trace_diff.h"
#include "loupe/prof/trace_reader.h"
#include "loupe/prof/units.h"
#include "profiler/test_files.h"
#include "run_command.h"

namespace {

namespace fs = std::filesystem;
using namespace loupe::prof;

const Finding* finding(const JobReport& r, const std::string& rule) {
  for (const Finding& f : r.findings) {
    if (f.rule == rule) return &f;
  }
  return nullptr;
}

std::string evidence(const Finding& f, const std::string& what) {
  for (const auto& [k, v] : f.evidence) {
    if (k == what) return v;
  }
  return "";
}

void sql(const std::string& path, const std::string& statement) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(db, statement.c_str(), nullptr, nullptr, &error), SQLITE_OK) << (error ? error : "");
  sqlite3_free(error);
  sqlite3_close(db);
}

class JobAnalysis : public ::testing::Test {
 protected:
  loupe::test::TempDir dir;

  std::string write_budget(const std::string& text) {
    std::string path = dir.file("budget.toml");
    std::ofstream(path) << text;
    return path;
  }
};

// Everything the generator planted, found exactly.
TEST_F(JobAnalysis, SyntheticJobFindingsMatchThePlantedAnswers) {
  std::string job_dir = dir.file("job");
  PlantedJob p = write_synthetic_job(job_dir, {.ranks = 8, .events = 20'000, .seed = 3});
  const int64_t late = int64_t(p.late_steps.size()), ranks = 8, per_step = p.collectives_per_step;
  ASSERT_GT(late, 0);
  ASSERT_LT(late, p.steps);
  JobReport r = analyze_job(job_dir);

  EXPECT_TRUE(r.problems.empty()) << r.problems.front();
  EXPECT_EQ(r.ranks.size(), 8u);
  EXPECT_EQ(r.metrics.steps, uint64_t(p.steps));
  EXPECT_EQ(r.metrics.collectives, uint64_t(p.steps * per_step));
  ASSERT_EQ(r.clocks.size(), 8u);
  for (int64_t k = 0; k < ranks; ++k) {
    EXPECT_TRUE(r.clocks[k].aligned);
    EXPECT_EQ(r.clocks[k].offset_ns, p.clock_offset_ns[k]) << "rank " << k;
    EXPECT_EQ(r.clocks[k].residual_ns, 0) << "rank " << k;
  }

  const Finding* s = finding(r, "straggler");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->ranks, std::vector<int64_t>{p.straggler});
  EXPECT_EQ(s->impact_ns, late * p.delay_ns);  // a step ends one delay later each time it is late
  EXPECT_NE(s->title.find(fmt::format("in {} of {} steps", late, p.steps)), std::string::npos) << s->title;
  EXPECT_EQ(evidence(*s, "last at"), fmt::format("{} collectives", format_count(uint64_t(late * per_step))));
  EXPECT_EQ(evidence(*s, "the other ranks waited"), format_duration(late * per_step * (ranks - 1) * p.delay_ns));
  EXPECT_NE(evidence(*s, "slower kernel").find("`fused_attention_fwd`"), std::string::npos);
  EXPECT_NE(evidence(*s, "slower kernel").find(format_duration(p.delay_ns) + " per step"), std::string::npos);
  EXPECT_EQ(std::count_if(r.findings.begin(), r.findings.end(), [](const Finding& f) { return f.rule == "straggler"; }),
            1);

  for (const RankFigures& f : r.figures) {
    bool straggler = f.rank == p.straggler;
    EXPECT_EQ(f.last_arrivals, straggler ? uint64_t(late * per_step) : 0u) << "rank " << f.rank;
    EXPECT_EQ(f.wait_ns, straggler ? 0 : late * per_step * p.delay_ns) << "rank " << f.rank;
    // Late in most steps: the medians are those of a late step.
    EXPECT_EQ(f.compute_ns, p.compute_ns + (straggler ? p.delay_ns : 0)) << "rank " << f.rank;
    EXPECT_EQ(f.communication_ns, p.transfer_ns + (straggler ? 0 : p.delay_ns)) << "rank " << f.rank;
  }

  ASSERT_EQ(r.kinds.size(), 1u);
  const CollectiveStats& k = r.kinds[0];
  EXPECT_EQ(k.name, "allreduce");
  EXPECT_EQ(k.bytes, p.bucket_bytes);
  EXPECT_EQ(k.count, uint64_t(p.steps * per_step));
  EXPECT_EQ(k.transfer_ns, p.transfer_ns);
  // Seven of eight ranks wait a delay in four steps of five: a mean wait of
  // 7/8 of a delay at most collectives.
  EXPECT_EQ(k.wait_ns, p.delay_ns * (ranks - 1) / ranks);
  double bus = double(p.bucket_bytes) / (double(p.transfer_ns) * 1e-9) * 2.0 * 7.0 / 8.0;
  EXPECT_NEAR(k.bus_bandwidth, bus, bus * 1e-12);

  const Finding* imbalance = finding(r, "imbalance");
  ASSERT_NE(imbalance, nullptr);
  EXPECT_EQ(imbalance->ranks.front(), p.straggler);
  EXPECT_EQ(imbalance->impact_ns, late * p.delay_ns);
  EXPECT_NE(imbalance->title.find("median " + format_duration(p.delay_ns)), std::string::npos) << imbalance->title;

  const Finding* exposed = finding(r, "collectives");
  ASSERT_NE(exposed, nullptr);
  EXPECT_NE(exposed->title.find(format_duration(p.transfer_ns + p.delay_ns) + " of communication per step"),
            std::string::npos)
      << exposed->title;
}

// The job's critical path on the synthetic job, worked out by hand from
// the generator's schedule (job_synth.cpp). A step: the host starts, 10 us
// later the first launch (4 us) starts 24 forward kernels of 40 us, then 8
// buckets of six 50 us kernels each followed by its all-reduce, then 4
// optimizer kernels of 25 us after the last all-reduce, a 5 us wait, a
// 50 us data loader. The walk from the job's end goes back through each
// step's last all-reduce (the others are hidden behind the next bucket)
// and its last rank: the straggler in late steps, its attention kernel
// 150 us longer. Nothing else is on the path: the other ranks' waits are
// not.
TEST_F(JobAnalysis, TheJobsCriticalPathRunsThroughTheLastRankOfEachStep) {
  std::string job_dir = dir.file("job");
  PlantedJob p = write_synthetic_job(job_dir, {.ranks = 4, .events = 6'000, .seed = 7});
  const int64_t us = 1000, steps = p.steps, late = int64_t(p.late_steps.size()), d = p.delay_ns;
  ASSERT_GE(steps, 3);
  ASSERT_EQ(p.late_steps.front(), 0);
  ASSERT_EQ(p.late_steps[1], 1);
  JobReport r = analyze_job(job_dir);
  const JobCriticalPath& path = r.critical_path;
  EXPECT_EQ(path.cannot_tell, "");
  EXPECT_EQ(path.collectives, uint64_t(steps));  // one all-reduce a step: the last
  auto ns = [&](PathCategory c) { return path.whole.ns[size_t(c)]; };
  EXPECT_EQ(ns(PathCategory::kernel), steps * (24 * 40 + 48 * 50 + 4 * 25) * us + late * d);
  EXPECT_EQ(ns(PathCategory::communication), steps * p.transfer_ns);
  EXPECT_EQ(ns(PathCategory::synchronisation), steps * 5 * us);  // each step's wait for the optimizer
  EXPECT_EQ(ns(PathCategory::launch_overhead), steps * 4 * us);  // the first launch, before the device starts
  EXPECT_EQ(ns(PathCategory::host_compute), (10 + (steps - 1) * 60) * us);  // loader and the step's first 10 us
  EXPECT_EQ(ns(PathCategory::data_loading), 0);  // `dataloader.next` is not PyTorch's DataLoader
  EXPECT_EQ(ns(PathCategory::copy), 0);
  // From rank 0's first event to the last step's end: every ns once.
  int64_t total = 0;
  for (int64_t v : path.whole.ns) total += v;
  EXPECT_EQ(path.whole.end - path.whole.start, total);
  EXPECT_EQ(total, steps * 3649 * us + late * d - 50 * us);

  ASSERT_FALSE(path.ranks.empty());
  EXPECT_EQ(path.ranks.front().first, p.straggler);
  ASSERT_EQ(path.steps.size(), size_t(steps));
  const JobCriticalPath::Step& one = path.steps[1];  // late, neither the first nor the last
  EXPECT_EQ(one.number, 1);
  EXPECT_EQ(one.rank, p.straggler);
  EXPECT_EQ(one.time.ns[size_t(PathCategory::kernel)], 3460 * us + d);
  EXPECT_EQ(one.time.ns[size_t(PathCategory::communication)], p.transfer_ns);
  EXPECT_EQ(one.time.ns[size_t(PathCategory::host_compute)], 60 * us);
  EXPECT_EQ(one.time.end - one.time.start, 3649 * us + d);

  std::string text = format_job_text(r);
  EXPECT_NE(text.find(fmt::format("critical path across ranks, through {} collectives' last ranks: {}", steps,
                                  format_duration(total))),
            std::string::npos)
      << text;
  nlohmann::json doc = nlohmann::json::parse(format_job_json(r));
  EXPECT_EQ(doc["critical_path"]["ns_by_category"]["kernels"], ns(PathCategory::kernel));
  EXPECT_EQ(doc["critical_path"]["ranks"][0]["rank"], p.straggler);

  // Its stretches lie end to end on the ranks' rows, in time order.
  ASSERT_FALSE(path.segments.empty());
  EXPECT_EQ(path.segments.front().start, path.whole.start);
  EXPECT_EQ(path.segments.back().end, path.whole.end);
  for (size_t i = 1; i < path.segments.size(); ++i) EXPECT_EQ(path.segments[i].start, path.segments[i - 1].end) << i;
  // One finding, information: which rank set the job's time.
  const Finding* f = finding(r, "critical-path");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::info);
  EXPECT_EQ(f->impact_ns, 0);
  EXPECT_EQ(f->ranks, std::vector<int64_t>{p.straggler});
  EXPECT_NE(f->title.find(fmt::format("runs through rank {} for", p.straggler)), std::string::npos) << f->title;
  EXPECT_NE(f->title.find("bound by kernels"), std::string::npos) << f->title;
}

// --rules selects among a job's rules as among a trace's: the figures and
// metrics are measured whichever rules run, and the selected rules' findings
// are the ones of the full run.
TEST_F(JobAnalysis, RulesSelectTheJobsFindingsAndLeaveTheFiguresAlone) {
  std::string job_dir = dir.file("job");
  PlantedJob p = write_synthetic_job(job_dir, {.ranks = 4, .events = 8'000, .seed = 5});
  EXPECT_EQ(job_rules(), (std::vector<std::string>{"straggler", "collectives", "imbalance", "critical-path"}));
  JobReport all = analyze_job(job_dir);
  JobAnalysisOptions only;
  only.rules = {"imbalance"};
  JobReport some = analyze_job(job_dir, only);
  ASSERT_EQ(some.findings.size(), 1u);
  EXPECT_EQ(some.findings[0].rule, "imbalance");
  EXPECT_EQ(some.findings[0].title, finding(all, "imbalance")->title);
  EXPECT_NE(finding(all, "straggler"), nullptr);
  for (size_t i = 0; i < all.figures.size(); ++i) {
    EXPECT_EQ(some.figures[i].last_arrivals, all.figures[i].last_arrivals);
    EXPECT_EQ(some.figures[i].communication_ns, all.figures[i].communication_ns);
  }
  EXPECT_EQ(some.kinds.size(), all.kinds.size());
  EXPECT_EQ(some.metrics.imbalance_fraction, all.metrics.imbalance_fraction);
  EXPECT_GT(all.metrics.imbalance_fraction, 0);
  EXPECT_EQ(some.metrics.straggler_fraction, 0);  // a metric of a finding not asked for
  only.rules = {"stragglers"};
  EXPECT_THROW(analyze_job(job_dir, only), std::invalid_argument);
  (void)p;
}

// A rank's summary crosses from a Dask worker as JSON, by field name: it
// comes back as it left, and a damaged one is refused, never misread.
TEST_F(JobAnalysis, ARanksSummaryComesBackAsItLeftAndADamagedOneIsRefused) {
  PlantedJob p = write_synthetic_job(dir.file("job"), {.ranks = 2, .events = 4'000, .seed = 2});
  RankSummary s = summarize_rank(p.job.trace_path(p.job.ranks[1]), 1, 2);
  ASSERT_FALSE(s.collectives.empty());
  ASSERT_FALSE(s.steps.empty());
  std::string text = rank_summary_to_json(s);
  RankSummary back = rank_summary_from_json(text);
  EXPECT_EQ(rank_summary_to_json(back), text);
  EXPECT_EQ(back.kinds, s.kinds);
  EXPECT_EQ(back.collectives.size(), s.collectives.size());
  EXPECT_EQ(back.collectives.back().end, s.collectives.back().end);
  EXPECT_TRUE(back.collectives.back().path_known);
  EXPECT_EQ(back.collectives.back().after, s.collectives.back().after);
  EXPECT_EQ(back.collectives.back().path_ns, s.collectives.back().path_ns);
  EXPECT_TRUE(back.tail_known);
  EXPECT_EQ(back.tail_ns, s.tail_ns);
  EXPECT_EQ(back.steps.back().time_ns, s.steps.back().time_ns);
  EXPECT_EQ(back.metrics.step_time, s.metrics.step_time);
  EXPECT_EQ(back.host, s.host);

  nlohmann::json doc = nlohmann::json::parse(text);
  EXPECT_EQ(doc["steps"]["number"].size(), s.steps.size());  // columns, named
  auto damaged = [&](auto&& damage) {
    nlohmann::json d = doc;
    damage(d);
    EXPECT_THROW(rank_summary_from_json(d.dump()), JobError) << d.dump().substr(0, 200);
  };
  damaged([](nlohmann::json& d) { d["collectives"]["kind"][0] = 99; });
  damaged([](nlohmann::json& d) { d["steps"]["time_ns"].erase(0); });
  damaged([](nlohmann::json& d) { d.erase("origin_wall_ns"); });
  damaged([](nlohmann::json& d) { d["metrics"]["step_time"] = "slow"; });
  damaged([](nlohmann::json& d) { d["kinds"]["name"][0] = 7; });
  damaged([](nlohmann::json& d) { d["collectives"]["after"][0] = 1 << 20; });
  damaged([](nlohmann::json& d) { d["tail_after"] = -5; });
  damaged([](nlohmann::json& d) { d["collectives"]["path_from"][0] = int64_t(1) << 62; });
  EXPECT_THROW(rank_summary_from_json("[1, 2"), JobError);
}

// The offsets come back for other seeds and job sizes, including two ranks.
TEST_F(JobAnalysis, ClockAlignmentRecoversThePlantedOffsets) {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    int64_t ranks = int64_t(seed) + 1;
    std::string job_dir = dir.file(fmt::format("job{}", seed));
    PlantedJob p = write_synthetic_job(job_dir, {.ranks = ranks, .events = 3'000, .seed = seed});
    JobReport r = analyze_job(job_dir);
    ASSERT_EQ(r.clocks.size(), size_t(ranks));
    for (int64_t k = 0; k < ranks; ++k) EXPECT_EQ(r.clocks[k].offset_ns, p.clock_offset_ns[k]) << seed << " " << k;
  }
}

// A rank that cannot be read, one without collectives and one missing
// from the index are each named; the straggler is still found among the
// rest.
TEST_F(JobAnalysis, BadRanksAreNamedAndTheRestAnalysed) {
  std::string job_dir = dir.file("job");
  PlantedJob p = write_synthetic_job(job_dir, {.ranks = 6, .events = 5'000, .seed = 5});
  std::vector<int64_t> others;
  for (int64_t k = 0; k < 6; ++k) {
    if (k != p.straggler) others.push_back(k);
  }
  int64_t corrupt = others[1], silent = others[2], missing = others[3];
  std::ofstream(p.job.trace_path(p.job.ranks[size_t(corrupt)]), std::ios::trunc) << "not a trace";
  write_synthetic_trace(p.job.trace_path(p.job.ranks[size_t(silent)]), {.events = 2'000, .seed = 1});
  std::string index_path = job_dir + "/job.json";
  nlohmann::json index = nlohmann::json::parse(std::ifstream(index_path));
  auto& listed = index["ranks"];
  listed.erase(std::remove_if(listed.begin(), listed.end(), [&](const auto& e) { return e["rank"] == missing; }),
               listed.end());
  index["missing"] = {missing};
  std::ofstream(index_path, std::ios::trunc) << index.dump();

  JobReport r = analyze_job(job_dir);
  auto said = [&](const std::string& text) {
    return std::any_of(r.problems.begin(), r.problems.end(),
                       [&](const std::string& problem) { return problem.find(text) != std::string::npos; });
  };
  EXPECT_TRUE(said(fmt::format("rank {}: no trace in the job", missing)));
  EXPECT_TRUE(said(fmt::format("rank {}: cannot be read, left out", corrupt)));
  EXPECT_TRUE(said(fmt::format("rank {}: no collectives in the trace", silent)));
  EXPECT_EQ(r.ranks.size(), 3u);
  const Finding* s = finding(r, "straggler");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->ranks, std::vector<int64_t>{p.straggler});
  EXPECT_EQ(s->impact_ns, int64_t(p.late_steps.size()) * p.delay_ns);
}

// A rank of another run: its wall clock is hours from the others', which
// no clock error explains.
TEST_F(JobAnalysis, ARankFromAnotherRunIsNamed) {
  std::string job_dir = dir.file("job");
  PlantedJob p = write_synthetic_job(job_dir, {.ranks = 3, .events = 3'000, .seed = 2});
  std::string rank2 = p.job.trace_path(p.job.ranks[2]);
  sql(rank2, "UPDATE meta SET value = CAST(value AS INTEGER) + 7200000000000 WHERE key = 'origin_wall_ns'");
  JobReport r = analyze_job(job_dir);
  ASSERT_FALSE(r.problems.empty());
  EXPECT_NE(r.problems.front().find("rank 2"), std::string::npos) << r.problems.front();
  EXPECT_NE(r.problems.front().find("another run"), std::string::npos) << r.problems.front();
}

// The real gloo job: rank 1 reached each all_reduce long before rank 0
// (rank 0's all_reduce calls came 170, 28 and 38 ms later), so rank 0 is
// the straggler. The clocks are aligned on the spans' ends.
TEST_F(JobAnalysis, RealGlooJobAlignsOnTheAllReducesAndNamesTheLateRank) {
  // Each rank's gloo:all_reduce spans, in order, from the raw JSON (ns).
  std::map<int64_t, std::vector<std::pair<int64_t, int64_t>>> spans;
  std::vector<std::string> sources;
  for (const auto& e : fs::directory_iterator(LOUPE_JOB_FIXTURES "/gloo-2ranks")) {
    sources.push_back(e.path().string());
    gzFile f = gzopen(e.path().c_str(), "rb");
    std::string text;
    char buf[65536];
    for (int n; (n = gzread(f, buf, sizeof buf)) > 0;) text.append(buf, size_t(n));
    gzclose(f);
    auto doc = nlohmann::json::parse(text);
    int64_t rank = doc["distributedInfo"]["rank"];
    for (const auto& ev : doc["traceEvents"]) {
      if (ev.value("name", "") != "gloo:all_reduce") continue;
      auto ns = [](double us) { return int64_t(std::llround(us * 1000)); };
      int64_t start = ns(ev["ts"].get<double>());
      spans[rank].push_back({start, start + ns(ev["dur"].get<double>())});
    }
  }
  for (auto& [rank, v] : spans) std::sort(v.begin(), v.end());
  ASSERT_EQ(spans[0].size(), 3u);
  ASSERT_EQ(spans[1].size(), 3u);
  std::vector<int64_t> differences;
  for (size_t i = 0; i < 3; ++i) differences.push_back(spans[1][i].second - spans[0][i].second);
  std::sort(differences.begin(), differences.end());
  int64_t offset = differences[1];
  int64_t lost = 0;
  for (size_t i = 0; i < 3; ++i) {
    int64_t arrival1 = spans[1][i].first - offset;
    ASSERT_GT(spans[0][i].first, arrival1);  // rank 0 is last at each
    lost += spans[0][i].first - arrival1;
  }

  std::string job_dir = dir.file("gloo");
  import_job(sources, job_dir);
  JobReport r = analyze_job(job_dir);
  EXPECT_EQ(r.metrics.collectives, 3u);
  ASSERT_EQ(r.clocks.size(), 2u);
  EXPECT_EQ(r.clocks[1].offset_ns, offset);
  EXPECT_EQ(r.clocks[1].residual_ns, std::max(offset - differences[0], differences[2] - offset));
  const Finding* s = finding(r, "straggler");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->ranks, std::vector<int64_t>{0});
  EXPECT_EQ(s->impact_ns, lost);
  EXPECT_NE(s->title.find("in 3 of 3 collectives"), std::string::npos) << s->title;
  EXPECT_EQ(evidence(*s, "doing instead"), "cannot tell from this trace: it has no steps to compare");
  // Rank 1 waited for rank 0 at each all_reduce; rank 0, last, waited for
  // no one, so its time in each is the transfer.
  ASSERT_EQ(r.figures.size(), 2u);
  EXPECT_EQ(r.figures[0].wait_ns, 0);
  EXPECT_EQ(r.figures[1].wait_ns, lost);
  std::vector<int64_t> durations;
  for (const auto& [start, end] : spans[0]) durations.push_back(end - start);
  std::sort(durations.begin(), durations.end());
  ASSERT_EQ(r.kinds.size(), 1u);
  EXPECT_EQ(r.kinds[0].transfer_ns, durations[1]);
  // gloo runs each collective on a thread of its own, linked to nothing
  // that issued it: the job's critical path cannot be told, and says so
  // rather than follow rank 0's own path as if rank 1 did not matter.
  EXPECT_EQ(r.critical_path.collectives, 0u);
  EXPECT_NE(r.critical_path.cannot_tell.find("run on the host (gloo"), std::string::npos)
      << r.critical_path.cannot_tell;
}

// Hand-made summaries for the reduce. Each rank's clock is off by its own
// error; `times` are (arrival, end) on the true timeline per collective,
// by index, of one group.
RankSummary hand_made_rank(int64_t rank, int64_t clock_error,
                           const std::vector<std::pair<std::string, std::vector<std::pair<int64_t, int64_t>>>>& groups,
                           const std::vector<std::pair<std::string, size_t>>& skipped = {}) {
  RankSummary s{.rank = rank, .origin_wall_ns = 1'000'000'000, .window_start = 0, .window_end = 1'000'000};
  for (const auto& [group, times] : groups) {
    auto kind = uint32_t(s.kinds.size());
    s.kinds.push_back({.group = group, .name = "allreduce", .in_bytes = 1024, .out_bytes = 1024, .group_size = 2});
    for (size_t i = 0; i < times.size(); ++i) {
      if (std::find(skipped.begin(), skipped.end(), std::make_pair(group, i)) != skipped.end()) continue;
      s.collectives.push_back({.kind = kind,
                               .index = int64_t(i),
                               .start = times[i].first + clock_error,
                               .end = times[i].second + clock_error});
    }
  }
  return s;
}

// The reduce folds ranks as they come. Rank 1 shares a group only with
// rank 2, so it waits until rank 2 is aligned (through rank 0) and is then
// aligned through it; rank 2 missed one collective of that group, so the
// records rank 1 folds into are not in one run, and its wait counts only
// the collectives both took part in. Every figure below is computed by
// hand from the times written here.
TEST_F(JobAnalysis, TheStreamingReduceAlignsThroughALaterRankAndCountsOnlySharedCollectives) {
  std::vector<std::pair<int64_t, int64_t>> a0, a2, b1, b2;  // group a: ranks 0 and 2; b: ranks 1 and 2
  for (int64_t i = 0; i < 4; ++i) {
    int64_t t = 100'000 * i;
    a0.push_back({t + 10'000, t + 50'000});
    a2.push_back({t + 30'000, t + 50'000});  // 20 us after rank 0: last
    b1.push_back({t + 60'000, t + 80'000});
    b2.push_back({t + 62'000, t + 80'000});  // 2 us after rank 1: within the 5 us that names no one
  }
  Job job;
  job.world_size = 3;
  std::vector<RankSummary> ranks = {hand_made_rank(0, 0, {{"a", a0}}), hand_made_rank(1, 7'000, {{"b", b1}}),
                                    hand_made_rank(2, -3'000, {{"a", a2}, {"b", b2}}, {{"b", 2}})};
  JobReport r = reduce_job(job, ranks, {});

  EXPECT_TRUE(r.problems.empty()) << r.problems.front();
  ASSERT_EQ(r.clocks.size(), 3u);
  EXPECT_TRUE(r.clocks[1].aligned);
  EXPECT_EQ(r.clocks[1].via, 2);
  EXPECT_EQ(r.clocks[1].offset_ns, 7'000);
  EXPECT_EQ(r.clocks[1].matched, 3u);
  EXPECT_EQ(r.clocks[2].via, 0);
  EXPECT_EQ(r.clocks[2].offset_ns, -3'000);
  EXPECT_EQ(r.metrics.collectives, 7u);  // b's third has one rank
  ASSERT_EQ(r.figures.size(), 3u);
  EXPECT_EQ(r.figures[0].wait_ns, 4 * 20'000);
  EXPECT_EQ(r.figures[1].wait_ns, 3 * 2'000);
  EXPECT_EQ(r.figures[2].wait_ns, 0);
  EXPECT_EQ(r.figures[2].last_arrivals, 4u);

  ASSERT_EQ(r.kinds.size(), 2u);
  EXPECT_EQ(r.kinds[0].group, "a");  // by total transfer: 4 x 20 us against 3 x 18 us
  EXPECT_EQ(r.kinds[0].transfer_ns, 20'000);
  EXPECT_EQ(r.kinds[0].wait_ns, 10'000);
  EXPECT_EQ(r.kinds[1].count, 3u);
  EXPECT_EQ(r.kinds[1].transfer_ns, 18'000);
  EXPECT_EQ(r.kinds[1].wait_ns, 1'000);

  const Finding* s = finding(r, "straggler");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->ranks, std::vector<int64_t>{2});
  EXPECT_EQ(s->impact_ns, 4 * 20'000);
  EXPECT_NE(s->title.find("in 4 of 7 collectives"), std::string::npos) << s->title;

  // Ranks come in increasing order.
  JobReducer reducer(job);
  reducer.add(ranks[2]);
  EXPECT_THROW(reducer.add(ranks[1]), JobError);
}

// A job's budgets: its metrics from the planted answers, a trace's budget
// as the worst rank's own analysis gives it, and a job's key on a single
// trace refused.
TEST_F(JobAnalysis, BudgetsLimitTheJobAndEveryRank) {
  std::string job_dir = dir.file("job");
  PlantedJob p = write_synthetic_job(job_dir, {.ranks = 4, .events = 8'000, .seed = 4});
  JobReport r = analyze_job(job_dir);
  const double window = double(r.window_ns), late = double(p.late_steps.size()), n = 4;
  Budget budget = parse_budget(
      "straggler_fraction_max = 0.01\ncollective_wait_fraction_max = 0.5\nimbalance_fraction_max = 0.1\n"
      "ranks_left_out_max = 0\nidle_fraction_max = 0.9\n",
      "budget.toml");
  std::vector<BudgetResult> results = check_job_budget(budget, r);
  ASSERT_EQ(results.size(), 5u);
  EXPECT_DOUBLE_EQ(results[0].actual, late * double(p.delay_ns) / window);
  EXPECT_FALSE(results[0].passed);
  EXPECT_DOUBLE_EQ(results[1].actual,
                   late * double(p.collectives_per_step) * (n - 1) * double(p.delay_ns) / (n * window));
  EXPECT_DOUBLE_EQ(results[2].actual, double(p.delay_ns) / double(p.compute_ns));
  EXPECT_EQ(results[3].actual, 0);
  double worst = 0;
  int64_t worst_rank = 0;
  for (int64_t k = 0; k < 4; ++k) {
    double idle = analyze(load_trace(p.job.trace_path(p.job.ranks[size_t(k)]))).metrics.idle_fraction;
    if (idle > worst) worst = idle, worst_rank = k;
  }
  EXPECT_DOUBLE_EQ(results[4].actual, worst);
  EXPECT_NE(results[4].actual_text.find(fmt::format("(rank {}, the worst of 4)", worst_rank)), std::string::npos)
      << results[4].actual_text;

  auto c = loupe::test::run_command({LOUPE_BIN, "check", p.job.trace_path(p.job.ranks[0]), "--budget",
                                     write_budget("straggler_fraction_max = 0.1\n")},
                                    dir.file(""));
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_NE(c.err.find("'straggler_fraction_max' is a job's budget"), std::string::npos) << c.err;
  auto j = loupe::test::run_command(
      {LOUPE_BIN, "check", job_dir, "--budget", write_budget("straggler_fraction_max = 0.01\n")}, dir.file(""));
  EXPECT_EQ(j.exit_code, 1) << j.err;
  EXPECT_NE(j.out.find("FAIL  straggler_fraction_max"), std::string::npos) << j.out;
}

// Two jobs whose stragglers differ: the job's figures are the same, and
// the two ranks' compute per step moves by the planted delay, each way.
TEST_F(JobAnalysis, DiffOfTwoJobsShowsTheStragglerMove) {
  PlantedJob a = write_synthetic_job(dir.file("a"), {.ranks = 4, .events = 6'000, .seed = 1});
  PlantedJob b;
  for (uint64_t seed = 2; seed < 20; ++seed) {
    b = write_synthetic_job(dir.file("b"), {.ranks = 4, .events = 6'000, .seed = seed});
    if (b.straggler != a.straggler) break;
  }
  ASSERT_NE(a.straggler, b.straggler);
  JobDiff d = diff_jobs(analyze_job(dir.file("a")), analyze_job(dir.file("b")));
  for (const DiffRow& r : d.metrics) EXPECT_EQ(r.delta, 0) << r.name;
  ASSERT_EQ(d.ranks.size(), 4u);
  // Largest changes first: the two stragglers, by the delay each way.
  std::map<std::string, double> moved;
  for (const DiffRow& r : d.ranks) moved[r.name] = r.delta;
  EXPECT_EQ(moved[fmt::format("rank {}: compute per step", a.straggler)], -double(a.delay_ns));
  EXPECT_EQ(moved[fmt::format("rank {}: compute per step", b.straggler)], double(a.delay_ns));
  EXPECT_TRUE(d.ranks[0].beyond_noise);
  EXPECT_TRUE(d.ranks[1].beyond_noise);
  EXPECT_FALSE(d.ranks[2].beyond_noise);

  auto crossed = [&](const std::string& rule) {
    return fail_on_crossed(parse_fail_on(rule, job_diff_metrics()), d.metrics, nullptr);
  };
  EXPECT_FALSE(crossed("straggler_fraction:+0%"));
  EXPECT_THROW(parse_fail_on("recompiles:+0", job_diff_metrics()), std::invalid_argument);
  auto c =
      loupe::test::run_command({LOUPE_BIN, "diff", dir.file("a"), dir.file("b"), "--format", "json"}, dir.file(""));
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(nlohmann::json::parse(c.out)["ranks"].size(), 4u);
}

// Two real ranks of a 128-rank NCCL job (HTA's sampled traces): 126 ranks
// are missing, and neither trace says which collective its NCCL kernels
// ran (no "Collective name" on any event), so no collective can be matched
// across ranks: the report says why rather than guessing, and compares the
// two ranks on what each one's own trace shows. The figures, computed from
// the raw JSON (the ops each ProfilerStep's launches queued; each step's
// device window runs from the previous one's end, the first from the
// step's start, to the later of its ops' end and its own), per step 551
// and 552: rank 0 windows 607.312 and 622.977 ms, compute 106.252 and
// 104.068 ms, exposed NCCL time 172.259 and 164.724 ms; rank 1 607.904 and
// 630.689 ms, 135.548 and 136.425 ms, 134.336 and 169.187 ms. Both traces
// are sampled (2,402 of 170,156 host ops kept on rank 0): incomplete.
TEST_F(JobAnalysis, RealRanksWhoseKernelsCarryNoCollectiveArgumentsAreNamed) {
  const std::string dir_in = LOUPE_JOB_FIXTURES "/hta-sampled";
  uint64_t kernels = 0;  // NCCL kernels in the raw JSON of both ranks
  for (int r = 0; r < 2; ++r) {
    gzFile f = gzopen(fmt::format("{}/sampled_rank-{}.json.gz", dir_in, r).c_str(), "rb");
    std::string text;
    char buf[65536];
    for (int n; (n = gzread(f, buf, sizeof buf)) > 0;) text.append(buf, size_t(n));
    gzclose(f);
    const nlohmann::json doc = nlohmann::json::parse(text);
    for (const auto& e : doc["traceEvents"]) {
      ASSERT_FALSE(e.contains("args") && e["args"].contains("Collective name"));
      if (e.value("cat", "") == "kernel" && e.value("name", "").rfind("ncclKernel", 0) == 0) ++kernels;
    }
  }
  ASSERT_EQ(kernels, 20u);
  std::string job_dir = dir.file("job");
  Job job = import_job({dir_in + "/sampled_rank-0.json.gz", dir_in + "/sampled_rank-1.json.gz"}, job_dir);
  EXPECT_EQ(job.world_size, 128);
  JobReport r = analyze_job(job_dir);
  EXPECT_TRUE(r.ranks.empty());
  EXPECT_EQ(r.own_traces, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(r.metrics.steps, 2u);
  ASSERT_EQ(r.problems.size(), 3u);
  EXPECT_EQ(r.problems[0], "ranks 2-127: no trace in the job (126 of 128)");
  EXPECT_NE(r.problems[1].find("ranks 0 and 1: no collectives in the trace: its 20 NCCL kernels carry no "
                               "collective arguments"),
            std::string::npos)
      << r.problems[1];
  EXPECT_NE(r.problems[1].find("compared on their own traces only"), std::string::npos) << r.problems[1];
  EXPECT_NE(r.problems[2].find("ranks 0 and 1: incomplete traces (rank 0: host ops: the trace holds 2,402 of the "
                               "170,156"),
            std::string::npos)
      << r.problems[2];
  ASSERT_EQ(r.figures.size(), 2u);
  auto near = [](int64_t ns, double us) { return std::abs(double(ns) / 1e3 - us) <= 1.0; };
  const double kStep[2] = {(607.312 + 622.977) / 2 * 1e3, (607.904 + 630.689) / 2 * 1e3};
  const double kCompute[2] = {(106.252 + 104.068) / 2 * 1e3, (135.548 + 136.425) / 2 * 1e3};
  const double kExposed[2] = {(172.259 + 164.724) / 2 * 1e3, (134.336 + 169.187) / 2 * 1e3};
  for (size_t i = 0; i < 2; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(r.figures[i].rank, int64_t(i));
    EXPECT_FALSE(r.figures[i].matched);
    EXPECT_TRUE(near(r.figures[i].step_ns, kStep[i])) << r.figures[i].step_ns;
    EXPECT_TRUE(near(r.figures[i].compute_ns, kCompute[i])) << r.figures[i].compute_ns;
    EXPECT_TRUE(near(r.figures[i].communication_ns, kExposed[i])) << r.figures[i].communication_ns;
  }
  // Rank 1 computes longest in both steps; the exposed time is the median
  // rank's per step, summed: (172.259 + 134.336) / 2 + (164.724 + 169.187) / 2.
  std::map<std::string, const Finding*> by_rule;
  for (const Finding& f : r.findings) by_rule[f.rule] = &f;
  ASSERT_EQ(by_rule.size(), 2u);
  ASSERT_TRUE(by_rule.count("imbalance"));
  EXPECT_EQ(by_rule["imbalance"]->ranks, (std::vector<int64_t>{1}));
  ASSERT_TRUE(by_rule.count("collectives"));
  EXPECT_TRUE(near(by_rule["collectives"]->impact_ns, (172.259 + 134.336) / 2 * 1e3 + (164.724 + 169.187) / 2 * 1e3));
  for (const Finding& f : r.findings) EXPECT_NE(f.severity, Severity::error) << f.title;
  const nlohmann::json doc = nlohmann::json::parse(format_job_json(r));
  EXPECT_EQ(doc["own_traces"], nlohmann::json::array({0, 1}));
  EXPECT_EQ(doc["rank_figures"][0]["matched"], false);
  EXPECT_FALSE(doc["rank_figures"][0].contains("wait_ns"));  // not known without matched collectives
}

// `loupe synth --ranks` and `loupe analyze job/ --format json` agree on
// the straggler.
TEST_F(JobAnalysis, CliWritesAndAnalysesAJob) {
  std::string job_dir = dir.file("job");
  auto w =
      loupe::test::run_command({LOUPE_BIN, "synth", "--ranks", "4", "--events", "4000", "-o", job_dir}, dir.file(""));
  ASSERT_EQ(w.exit_code, 0) << w.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(w.out, m, std::regex("planted: rank (\\d+) late by"))) << w.out;
  auto a = loupe::test::run_command({LOUPE_BIN, "analyze", job_dir, "--format", "json"}, dir.file(""));
  ASSERT_EQ(a.exit_code, 0) << a.err;
  auto doc = nlohmann::json::parse(a.out);
  bool found = false;
  for (const auto& f : doc["findings"]) {
    if (f["rule"] == "straggler") found = f["ranks"] == nlohmann::json::array({std::stoi(m[1].str())});
  }
  EXPECT_TRUE(found) << a.out;
  EXPECT_EQ(doc["ranks"].size(), 4u);
  // --rules names a job's rules and a trace's alike; a job's rule on a
  // trace, or a rule of neither, is a usage error naming both lists.
  auto some = loupe::test::run_command(
      {LOUPE_BIN, "analyze", job_dir, "--format", "json", "--rules", "straggler,idle-gap"}, dir.file(""));
  ASSERT_EQ(some.exit_code, 0) << some.err;
  nlohmann::json some_doc = nlohmann::json::parse(some.out);  // kept: the loop reads into it
  for (const auto& f : some_doc["findings"]) EXPECT_EQ(f["rule"], "straggler");
  auto bad = loupe::test::run_command({LOUPE_BIN, "analyze", job_dir, "--rules", "speed"}, dir.file(""));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("unknown rule 'speed'"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("a job's: straggler, collectives, imbalance, critical-path"), std::string::npos) << bad.err;
}

}  // namespace
