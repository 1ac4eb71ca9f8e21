// Properties every analysis keeps on every trace, whatever its source: each
// impact lies within the active window, busy and idle add up to the window,
// no share exceeds the whole, and a verdict never contradicts the figures
// printed beside it. Checked over synthetic traces of many seeds and over
// every real fixture; no rule may throw on any of them.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <regex>

#include "loupe/prof/analysis.h"
#include "loupe/prof/import.h"
#include "loupe/prof/synth.h"
#include "loupe/prof/trace_reader.h"
#include "profiler/test_files.h"

using namespace loupe::prof;

namespace {

// Every "12.3%" in a text.
std::vector<double> percentages(const std::string& text) {
  static const std::regex kPercent(R"((-?[0-9][0-9,]*(?:\.[0-9]+)?)%)");
  std::vector<double> out;
  for (std::sregex_iterator it(text.begin(), text.end(), kPercent), end; it != end; ++it) {
    std::string number = (*it)[1];
    std::erase(number, ',');
    out.push_back(std::stod(number));
  }
  return out;
}

void check_finding(const Finding& f, const AnalysisReport& r, const AnalysisOptions& o, const std::string& where) {
  const int64_t window = r.window_end - r.window_start;
  SCOPED_TRACE(where + ": [" + f.rule + "] " + f.title);
  EXPECT_GE(f.impact_ns, 0);
  EXPECT_LE(f.impact_ns, window);
  EXPECT_GE(f.impact_fraction, 0.0);
  EXPECT_LE(f.impact_fraction, 1.0);
  if (window > 0) {
    EXPECT_NEAR(f.impact_fraction, double(f.impact_ns) / double(window), 1e-9);
  }
  std::string text = f.title;
  for (const auto& [k, v] : f.evidence) text += "\n" + k + ": " + v;
  for (double p : percentages(text)) {
    EXPECT_GE(p, 0.0) << text;
    EXPECT_LE(p, 100.0) << text;
  }
  // The verdicts agree with the figures.
  if (f.rule == "steps" && f.suggestion.find("steady") != std::string::npos &&
      f.suggestion.find("not steady") == std::string::npos && r.steps.median_ns > 0) {
    double width = double(r.steps.p90_ns - r.steps.p10_ns) / double(r.steps.median_ns);
    EXPECT_LE(width, o.steady_width) << f.suggestion;
  }
  // Severity follows cost: a rule graded by its share of the window warns
  // only at that share.
  if (f.severity != Severity::info && f.rule == "transfer") {
    EXPECT_GE(f.impact_fraction, o.transfer_warning_fraction) << "a warning worth less than its share";
  }
  if (f.severity != Severity::info && f.rule == "communication") {
    EXPECT_GE(f.impact_fraction, o.communication_warning_fraction) << "a warning worth less than its share";
  }
  if (f.severity != Severity::info && f.rule == "copies") {
    EXPECT_GE(f.impact_fraction, o.copy_warning_fraction) << "a warning worth less than its share";
  }
  if (f.rule == "copies") {
    EXPECT_GE(f.impact_fraction, o.copy_shown_fraction) << "a copies finding under the share worth showing";
  }
  if (f.title.find("launch-bound") != std::string::npos) {
    EXPECT_GE(f.impact_fraction, o.launch_bound_fraction) << "launch-bound while the device seldom waited";
  }
}

void check_devices(const AnalysisReport& r, const std::string& where) {
  SCOPED_TRACE(where);
  for (const DeviceIdle& d : r.devices) {
    const int64_t window = d.window_end - d.window_start;
    EXPECT_GE(d.busy_ns, 0);
    EXPECT_GE(d.idle_ns, 0);
    EXPECT_EQ(d.busy_ns + d.idle_ns, window);
    EXPECT_GE(d.window_start, r.window_start);
    EXPECT_LE(d.window_end, r.window_end);
    EXPECT_LE(d.compute_ns, d.busy_ns);
    EXPECT_LE(d.compute_collective_overlap_ns, d.collective_ns);
    int64_t in_gaps = 0, by_cause = 0, last_end = d.window_start;
    for (const IdleGap& g : d.gaps) {
      EXPECT_GE(g.start, last_end) << "gaps in time order, disjoint, inside the window";
      EXPECT_LT(g.start, g.end);
      last_end = g.end;
      in_gaps += g.end - g.start;
    }
    EXPECT_LE(last_end, d.window_end);
    for (int64_t ns : d.cause_ns) by_cause += ns;
    EXPECT_EQ(by_cause, in_gaps);
    EXPECT_LE(in_gaps, d.idle_ns);
  }
  // A step's device shares add up to its device window (a trace without
  // devices has none), which lasts at least until the step's host end.
  for (const StepStats::Step& s : r.devices.empty() ? std::vector<StepStats::Step>{} : r.steps.steps) {
    EXPECT_EQ(s.compute_ns + s.communication_ns + s.transfer_ns + s.idle_ns, s.device_end - s.device_start)
        << "step " << s.number;
    EXPECT_LE(s.device_start, s.device_end) << "step " << s.number;
    EXPECT_GE(s.device_end, s.start + s.dur) << "step " << s.number;
  }
}

void check_trace(const std::string& db, const std::string& where) {
  TraceModel m = load_trace(db);
  AnalysisOptions o;
  AnalysisReport r;
  ASSERT_NO_THROW(r = analyze(m, o)) << where;
  EXPECT_LE(r.window_start, r.window_end);
  check_devices(r, where);
  for (const Finding& f : r.findings) check_finding(f, r, o, where);
}

TEST(Invariants, HoldOnSyntheticTracesOfManySeeds) {
  loupe::test::TempDir dir;
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    std::string db = dir.file("s" + std::to_string(seed) + ".db");
    // Sizes vary with the seed, from a few hundred events (a run cut short)
    // to enough for many steps.
    write_synthetic_trace(db, {.events = 300 + seed * seed * 120, .seed = seed});
    check_trace(db, "synth seed " + std::to_string(seed));
  }
}

class InvariantsOnFixtures : public ::testing::TestWithParam<std::string> {};

TEST_P(InvariantsOnFixtures, Hold) {
  loupe::test::TempDir dir;
  std::string db = dir.file("t.db");
  import_trace(GetParam(), db, {});
  check_trace(db, std::filesystem::path(GetParam()).filename().string());
}

// A report an expert signs, on every real trace: a warning or an error of
// a rule whose cost is time is worth at least 1% of the window (the rules
// graded by counts, recompile, memory, tiny-kernels, have their own
// logic), and a trace that lacks device work gets no error from the rules
// that read it.
TEST_P(InvariantsOnFixtures, WarningsAreWorthAShareAndIncompleteTracesGetNoError) {
  loupe::test::TempDir dir;
  std::string db = dir.file("t.db");
  import_trace(GetParam(), db, {});
  AnalysisReport r = analyze(load_trace(db));
  for (const Finding& f : r.findings) {
    SCOPED_TRACE("[" + f.rule + "] " + f.title);
    const bool by_time = f.rule == "transfer" || f.rule == "idle-gap" || f.rule == "communication" ||
                         f.rule == "steps" || f.rule == "async-timing";
    if (by_time && f.severity != Severity::info) {
      EXPECT_GE(f.impact_fraction, 0.01);
    }
    if (!r.incomplete.empty() && by_time) {
      EXPECT_NE(f.severity, Severity::error);
    }
  }
}

std::vector<std::string> all_fixtures() {
  std::vector<std::string> out;
  for (const char* folder : {LOUPE_FIXTURES_DIR, LOUPE_REPO_FIXTURES_DIR}) {
    if (!std::filesystem::is_directory(folder)) continue;
    for (const auto& e : std::filesystem::directory_iterator(folder)) {
      if (e.path().string().ends_with(".json.gz")) out.push_back(e.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, InvariantsOnFixtures, ::testing::ValuesIn(all_fixtures()),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string name = std::filesystem::path(p.param).filename().string();
                           return name.substr(0, name.size() - 8);
                         });

}  // namespace
