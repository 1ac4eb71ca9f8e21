// Options shared by the commands that analyse a trace (analyze, check,
// diff): which rules, and thresholds by name.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "loupe/prof/analysis.h"
#include "loupe/prof/job_analysis.h"

namespace loupe::cli {

struct AnalysisArgs {
  std::vector<std::string> rules;
  std::string min_gap;
  std::vector<std::string> settings;  // name=value
};

void add_analysis_options(CLI::App& cmd, AnalysisArgs& args);
// Throws std::invalid_argument naming the bad rule, parameter or value.
prof::AnalysisOptions make_analysis_options(const AnalysisArgs& args);
// For a job: --rules may name the job's rules and a trace's; each selects
// among its own kind (all of a kind when it names none of them).
prof::JobAnalysisOptions make_job_options(const AnalysisArgs& args);

}  // namespace loupe::cli
