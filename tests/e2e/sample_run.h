// Running a sample program end to end and reading what loupe makes of it:
// the program runs at CI size with --out, its trace is loaded with
// load_trace and analysed with analyze(), exactly as `loupe analyze` does.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "loupe/prof/analysis.h"
#include "loupe/prof/trace_reader.h"
#include "profiler/test_files.h"
#include "run_command.h"

namespace loupe::test {

struct SampleRun {
  CommandResult command;
  prof::TraceModel model;
  prof::AnalysisReport report;

  std::vector<const prof::Finding*> findings(const std::string& rule) const {
    std::vector<const prof::Finding*> out;
    for (const prof::Finding& f : report.findings)
      if (f.rule == rule) out.push_back(&f);
    return out;
  }
  // Wall time of the loop per step after the first (the warm-up, which
  // compiles): from the second step's start until the device finished its
  // last operation (or the last step ended), so that work still queued when
  // the host moves on is counted.
  double loop_ns_per_step() const {
    std::vector<std::pair<int64_t, int64_t>> steps;  // (start, end)
    for (const prof::Steps& s : model.steps)
      for (size_t i = 0; i < s.size(); ++i) steps.push_back({s.start[i], s.end(i)});
    if (steps.size() < 2) return 0;
    std::sort(steps.begin(), steps.end());
    int64_t last = report.window_end;
    for (const auto& [start, end] : steps) last = std::max(last, end);
    return double(last - steps[1].first) / double(steps.size() - 1);
  }
};

// Every value of the evidence named `key`, in order.
inline std::vector<std::string> evidence(const prof::Finding& f, const std::string& key) {
  std::vector<std::string> out;
  for (const auto& [k, v] : f.evidence)
    if (k == key) out.push_back(v);
  return out;
}

inline std::string sample_source(const std::string& sample) {
  return std::string(LOUPE_SAMPLES_SRC) + "/" + sample + ".cpp";
}

// The lines (1-based) of the sample's source that contain `text`.
inline std::vector<int> lines_with(const std::string& sample, const std::string& text) {
  std::ifstream in(sample_source(sample));
  std::vector<int> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (line.find(text) != std::string::npos) out.push_back(n);
  return out;
}

// The one line marked with `text` (a marker comment such as "MISTAKE: ..."):
// the tests compute where loupe must point instead of hard-coding numbers.
inline int marked_line(const std::string& sample, const std::string& text) {
  std::vector<int> lines = lines_with(sample, text);
  EXPECT_EQ(lines.size(), 1u) << "marker `" << text << "` in " << sample_source(sample);
  return lines.empty() ? -1 : lines[0];
}

// Does an evidence value ("samples/x.cpp:42" or "samples/x.cpp:42 (x7)")
// name line `line` of the sample?
inline bool names_line(const std::string& value, const std::string& sample, int line) {
  std::string site = value.substr(0, value.find(' '));
  std::string want = "samples/" + sample + ".cpp:" + std::to_string(line);
  return site.size() >= want.size() && site.compare(site.size() - want.size(), want.size(), want) == 0;
}

// Whether the evidence `key` of `f` names one call site, the line of the
// sample marked with `marker`; what it names instead when not.
inline ::testing::AssertionResult names_marked_line(const prof::Finding& f, const std::string& key,
                                                    const std::string& sample, const std::string& marker) {
  std::vector<std::string> sites = evidence(f, key);
  if (sites.size() != 1) return ::testing::AssertionFailure() << key << ": " << sites.size() << " values, not one";
  int line = marked_line(sample, marker);
  if (!names_line(sites[0], sample, line)) {
    return ::testing::AssertionFailure() << key << ": " << sites[0] << ", not line " << line << " of " << sample;
  }
  return ::testing::AssertionSuccess();
}

// Runs build/bin/<sample> --variant <variant> --size ci --out <trace> [extra].
//
// The samples' matrix products run on one BLAS thread (unless
// LOUPE_CPU_BLAS_THREADS is set already): the tests reason about a device
// whose work does not compete with the host's, as a GPU's does not. With
// products on every core, a busy machine slows the CPU device's kernels
// many times over (a BLAS thread waits for a sibling that lost its core),
// until they hide the host work a sample is about.
inline SampleRun run_sample(const TempDir& dir, const std::string& sample, const std::string& variant,
                            std::vector<std::string> extra = {}) {
  ::setenv("LOUPE_CPU_BLAS_THREADS", "1", /*overwrite=*/0);
  static int runs = 0;
  std::string trace = dir.file(sample + "_" + variant + "_" + std::to_string(++runs) + ".db");
  std::vector<std::string> args{
      std::string(LOUPE_SAMPLES_BIN) + "/" + sample, "--variant", variant, "--size", "ci", "--out", trace};
  args.insert(args.end(), extra.begin(), extra.end());
  SampleRun r;
  r.command = run_command(args, dir.path().string());
  r.model = prof::load_trace(trace);
  r.report = prof::analyze(r.model);
  return r;
}

// Both variants of a sample, run `rounds` times in turn (mistake, fixed,
// mistake, ...). Of each variant, the run with the median loop time per
// step is the one whose findings the tests read, and that median is the
// variant's time: one run disturbed by a busy machine (which slows the CPU
// device's kernels until they no longer look tiny, or hide host work)
// decides neither a finding nor a comparison.
struct VariantPair {
  SampleRun mistake, fixed;
  double mistake_ns = 0, fixed_ns = 0;  // median loop time per step
};

inline double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// The run whose loop time per step is the median of `runs`.
inline SampleRun median_run(std::vector<SampleRun>& runs) {
  std::vector<size_t> order(runs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t x, size_t y) { return runs[x].loop_ns_per_step() < runs[y].loop_ns_per_step(); });
  return std::move(runs[order[order.size() / 2]]);
}

inline VariantPair run_both(const TempDir& dir, const std::string& sample, int rounds = 1) {
  VariantPair p;
  std::vector<SampleRun> mistakes, fixes;
  std::vector<double> m, f;
  for (int i = 0; i < rounds; ++i) {
    mistakes.push_back(run_sample(dir, sample, "mistake"));
    fixes.push_back(run_sample(dir, sample, "fixed"));
    m.push_back(mistakes.back().loop_ns_per_step());
    f.push_back(fixes.back().loop_ns_per_step());
  }
  p.mistake_ns = median_of(m);
  p.fixed_ns = median_of(f);
  p.mistake = median_run(mistakes);
  p.fixed = median_run(fixes);
  if (rounds > 1) {
    std::printf("%s: loop %.3f ms per step with the mistake, %.3f ms fixed (medians of %d runs)\n", sample.c_str(),
                p.mistake_ns / 1e6, p.fixed_ns / 1e6, rounds);
  }
  return p;
}

}  // namespace loupe::test
