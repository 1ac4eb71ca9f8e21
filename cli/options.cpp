#include "options.h"

#include <fmt/format.h>

#include <stdexcept>

namespace loupe::cli {

void add_analysis_options(CLI::App& cmd, AnalysisArgs& args) {
  std::string params;
  for (const auto& p : prof::analysis_parameters()) params += fmt::format("\n  {}: {}", p.name, p.description);
  std::string rules;
  for (const std::string& r : prof::analysis_rules()) rules += (rules.empty() ? "" : ", ") + r;
  cmd.add_option("--rules", args.rules, "rules to run (default: all): " + rules)->delimiter(',');
  cmd.add_option("--min-gap", args.min_gap, "shortest device idle gap reported, e.g. 20us (default 20us)");
  cmd.add_option("--set", args.settings, "set a threshold, NAME=VALUE (repeatable):" + params);
}

prof::AnalysisOptions make_analysis_options(const AnalysisArgs& args) {
  prof::AnalysisOptions o;
  const std::vector<std::string> known = prof::analysis_rules();
  for (const std::string& r : args.rules) {
    if (std::find(known.begin(), known.end(), r) == known.end()) {
      std::string all;
      for (const std::string& k : known) all += (all.empty() ? "" : ", ") + k;
      throw std::invalid_argument(fmt::format("unknown rule '{}' (rules: {})", r, all));
    }
  }
  o.rules = args.rules;
  if (!args.min_gap.empty()) prof::set_analysis_parameter(o, "min_gap", args.min_gap);
  for (const std::string& s : args.settings) {
    size_t eq = s.find('=');
    if (eq == std::string::npos) throw std::invalid_argument(fmt::format("--set expects NAME=VALUE, got '{}'", s));
    prof::set_analysis_parameter(o, s.substr(0, eq), s.substr(eq + 1));
  }
  return o;
}

}  // namespace loupe::cli
