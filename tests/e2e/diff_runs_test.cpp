// `loupe diff --base ... --head ...` on real runs of a sample: four runs of
// host_sync's fixed variant against four more of the same program pass a
// --fail-on that a slowdown (twice the rows a step, about twice the step
// time) in every run fails. The runs alternate (A, A', S, A, A', S, ...)
// so that a slow spell of a busy machine falls on every side; the 5%
// slowdown that tells the test's power is bench/run_diff_noise.py's, over
// 20 repetitions.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sample_run.h"

namespace loupe::test {
namespace {

std::string record(const TempDir& dir, const std::string& name, int batch) {
  std::string trace = dir.file(name + ".db");
  CommandResult r = run_command({std::string(LOUPE_SAMPLES_BIN) + "/host_sync", "--variant", "fixed", "--size", "ci",
                                 "--hidden", "256", "--batch", std::to_string(batch), "--out", trace},
                                dir.path().string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return trace;
}

CommandResult diff(const TempDir& dir, const std::vector<std::string>& base, const std::vector<std::string>& head) {
  std::vector<std::string> args{std::string(LOUPE_SAMPLES_BIN) + "/loupe",
                                "diff",
                                "--no-cache",
                                "--format",
                                "json",
                                "--fail-on",
                                "step_time:+10%",
                                "--base"};
  args.insert(args.end(), base.begin(), base.end());
  args.push_back("--head");
  args.insert(args.end(), head.begin(), head.end());
  return run_command(args, dir.path().string());
}

nlohmann::json step_row(const CommandResult& r) {
  nlohmann::json doc = nlohmann::json::parse(r.out);
  for (const nlohmann::json& row : doc["metrics"]) {
    if (row["name"] == "step_time") return row;
  }
  return {};
}

TEST(DiffRuns, AnAAComparisonPassesAndASlowdownFails) {
  ::setenv("LOUPE_CPU_BLAS_THREADS", "1", /*overwrite=*/0);  // as run_sample does: sample_run.h
  TempDir dir;
  std::vector<std::string> a, again, slow;
  for (int i = 0; i < 4; ++i) {
    a.push_back(record(dir, "a" + std::to_string(i), 256));
    again.push_back(record(dir, "again" + std::to_string(i), 256));
    slow.push_back(record(dir, "slow" + std::to_string(i), 512));
  }
  CommandResult same = diff(dir, a, again);
  EXPECT_EQ(same.exit_code, 0) << same.err;
  ASSERT_FALSE(same.out.empty()) << same.err;
  nlohmann::json row = step_row(same);
  ASSERT_FALSE(row.is_null()) << same.out;
  std::printf("A/A: step_time %+.1f%%, p %.3f\n", row["delta_fraction"].get<double>() * 100,
              row["p_value"].get<double>());
  CommandResult slower = diff(dir, a, slow);
  EXPECT_EQ(slower.exit_code, 1) << slower.err;
  EXPECT_NE(slower.err.find("FAIL --fail-on step_time:+10%"), std::string::npos) << slower.err;
  row = step_row(slower);
  std::printf("slowdown: step_time %+.1f%%, p %.4f\n", row["delta_fraction"].get<double>() * 100,
              row["p_value"].get<double>());
  EXPECT_EQ(row["change"], "increased");
  EXPECT_LT(row["p_value"].get<double>(), 0.05);
  nlohmann::json doc = nlohmann::json::parse(slower.out);
  EXPECT_EQ(doc["runs"]["base"], 4);
  EXPECT_EQ(doc["runs"]["head"], 4);
}

}  // namespace
}  // namespace loupe::test
