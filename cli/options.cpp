#include "options.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <stdexcept>

namespace loupe::cli {

void add_analysis_options(CLI::App& cmd, AnalysisArgs& args) {
  std::string params;
  for (const auto& p : prof::analysis_parameters()) params += fmt::format("\n  {}: {}", p.name, p.description);
  cmd.add_option("--rules", args.rules,
                 fmt::format("rules to run (default: all): {}; a job's: {}", fmt::join(prof::analysis_rules(), ", "),
                             fmt::join(prof::job_rules(), ", ")))
      ->delimiter(',');
  cmd.add_option("--min-gap", args.min_gap, "shortest device idle gap reported, e.g. 20us (default 20us)");
  cmd.add_option("--set", args.settings, "set a threshold, NAME=VALUE (repeatable):" + params);
}

namespace {

bool is_one_of(const std::string& name, const std::vector<std::string>& names) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

[[noreturn]] void unknown_rule(const std::string& name, bool job) {
  throw std::invalid_argument(
      fmt::format("unknown rule '{}' (rules: {}; {}: {})", name, fmt::join(prof::analysis_rules(), ", "),
                  job ? "a job's" : "a job's, for a job's folder", fmt::join(prof::job_rules(), ", ")));
}

// The thresholds, for any analysis; the rules are the caller's.
prof::AnalysisOptions with_thresholds(const AnalysisArgs& args) {
  prof::AnalysisOptions o;
  if (!args.min_gap.empty()) prof::set_analysis_parameter(o, "min_gap", args.min_gap);
  for (const std::string& s : args.settings) {
    size_t eq = s.find('=');
    if (eq == std::string::npos) throw std::invalid_argument(fmt::format("--set expects NAME=VALUE, got '{}'", s));
    prof::set_analysis_parameter(o, s.substr(0, eq), s.substr(eq + 1));
  }
  return o;
}

}  // namespace

prof::AnalysisOptions make_analysis_options(const AnalysisArgs& args) {
  prof::AnalysisOptions o = with_thresholds(args);
  for (const std::string& r : args.rules) {
    if (!is_one_of(r, prof::analysis_rules())) unknown_rule(r, false);
  }
  o.rules = args.rules;
  return o;
}

prof::JobAnalysisOptions make_job_options(const AnalysisArgs& args) {
  prof::JobAnalysisOptions o;
  o.rank = with_thresholds(args);
  for (const std::string& r : args.rules) {
    if (is_one_of(r, prof::job_rules())) o.rules.push_back(r);
    else if (is_one_of(r, prof::analysis_rules())) o.rank.rules.push_back(r);
    else unknown_rule(r, true);
  }
  return o;
}

}  // namespace loupe::cli
