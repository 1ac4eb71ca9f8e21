// loupe whatif FILE --async-copies-at train.py:42 ...: the run replayed
// with the changes asked for, and the step time it predicts
// (docs/analyses.md, "What-if").
#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "commands.h"
#include "loupe/prof/units.h"
#include "loupe/prof/whatif.h"
#include "options.h"
#include "trace_input.h"

namespace loupe::cli {

namespace {

struct WhatIfArgs {
  std::string path;
  std::string format = "text";
  prof::WhatIf change;
  std::vector<std::string> scale_kernels, scale_streams;  // REGEX=F, [DEVICE:]STREAM=F
  AnalysisArgs analysis;
  InputArgs input;
};

void add_options(CLI::App& cmd, WhatIfArgs& args) {
  cmd.description(
      "Predict the step time after a change: the run's dependency graph replayed with syncs or transfers removed, "
      "copies made asynchronous, recompiles dropped, kernels scaled (docs/analyses.md, \"What-if\")");
  cmd.add_option("FILE", args.path, kTraceInputHelp)->required();
  const char* site = "FILE:LINE or FILE, matched against call sites, their callers and Python frames";
  cmd.add_option("--remove-syncs-at", args.change.remove_syncs_at, fmt::format("host waits there are gone ({})", site));
  cmd.add_option("--remove-transfers-at", args.change.remove_transfers_at,
                 fmt::format("transfers there are gone, call and copy ({})", site));
  cmd.add_option("--async-copies-at", args.change.async_copies_at,
                 fmt::format("synchronous copies there no longer block the host ({})", site));
  cmd.add_flag("--drop-recompiles", args.change.drop_recompiles, "compiles after warm-up take no time");
  cmd.add_flag("--remove-host-gaps", args.change.remove_host_gaps,
               "the host's time outside its launches, waits, copies and compiles takes none");
  cmd.add_option("--scale-kernels", args.scale_kernels,
                 "REGEX=FACTOR: device ops whose name matches take FACTOR times as long");
  cmd.add_option("--scale-stream", args.scale_streams, "[DEVICE:]STREAM=FACTOR: a stream's ops the same");
  cmd.add_option("--format", args.format, "text or json")->check(CLI::IsMember({"text", "json"}));
  add_analysis_options(cmd, args.analysis);
  add_input_options(cmd, args.input);
}

// "NAME=FACTOR", split at the last '='; the factor a finite number >= 0.
std::pair<std::string, double> name_and_factor(const std::string& text, const char* option) {
  size_t eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0) {
    throw std::invalid_argument(fmt::format("{} '{}': expected NAME=FACTOR", option, text));
  }
  std::string number = text.substr(eq + 1);
  char* end = nullptr;
  double factor = std::strtod(number.c_str(), &end);
  if (number.empty() || *end != 0 || !std::isfinite(factor) || factor < 0) {
    throw std::invalid_argument(fmt::format("{} '{}': the factor must be a number >= 0", option, text));
  }
  return {text.substr(0, eq), factor};
}

uint32_t parse_id(const std::string& text, const std::string& whole) {
  char* end = nullptr;
  unsigned long v = std::strtoul(text.c_str(), &end, 10);
  if (text.empty() || *end != 0 || v > UINT32_MAX) {
    throw std::invalid_argument(fmt::format("--scale-stream '{}': expected [DEVICE:]STREAM=FACTOR", whole));
  }
  return uint32_t(v);
}

prof::WhatIf change_of(const WhatIfArgs& args) {
  prof::WhatIf change = args.change;
  for (const std::string& s : args.scale_kernels) {
    auto [regex, factor] = name_and_factor(s, "--scale-kernels");
    change.scale_kernels.push_back({regex, factor});
  }
  for (const std::string& s : args.scale_streams) {
    auto [where, factor] = name_and_factor(s, "--scale-stream");
    size_t colon = where.find(':');
    uint32_t device = colon == std::string::npos ? 0 : parse_id(where.substr(0, colon), s);
    uint32_t stream = parse_id(colon == std::string::npos ? where : where.substr(colon + 1), s);
    change.scale_streams.push_back({device, stream, factor});
  }
  return change;
}

std::string percent_of(int64_t part, int64_t whole) {
  return whole == 0 ? "-" : fmt::format("{:.1f}%", 100.0 * double(part) / double(whole));
}

std::string text_of(const prof::Prediction& p, bool changed) {
  std::string out;
  if (!changed) out += "no change asked for: the replay of the run as recorded\n";
  out += fmt::format(
      "changed: {} waits, {} transfers removed, {} compiles dropped, {} ops scaled, {} stretches of host time "
      "removed\n",
      p.waits_changed, p.transfers_removed, p.compiles_dropped, p.ops_scaled, p.host_stretches_removed);
  if (!p.steps.empty()) {
    out += fmt::format("step (mean of {} after {} warm-up): {} -> {}, {} {} a step ({})\n",
                       p.steps.size() - p.warmup_steps, p.warmup_steps, prof::format_duration(p.mean_measured_ns),
                       prof::format_duration(p.mean_predicted_ns), p.saved_per_step_ns() >= 0 ? "saves" : "costs",
                       prof::format_duration(std::llabs(p.saved_per_step_ns())),
                       percent_of(std::llabs(p.saved_per_step_ns()), p.mean_measured_ns));
  }
  out += fmt::format("run: {} -> {}\n", prof::format_duration(p.measured_ns), prof::format_duration(p.predicted_ns));
  if (!p.steps.empty()) {
    out += fmt::format("\n{:>8}  {:>12}  {:>12}\n", "step", "measured", "predicted");
    for (const prof::StepPrediction& s : p.steps) {
      out += fmt::format("{:>8}  {:>12}  {:>12}\n", s.number, prof::format_duration(s.measured_ns),
                         prof::format_duration(s.predicted_ns));
    }
  }
  for (const std::string& m : p.missing) out += fmt::format("\nthe trace lacks: {}\n", m);
  return out;
}

std::string json_of(const prof::Prediction& p) {
  nlohmann::ordered_json j;
  j["measured_ns"] = p.measured_ns;
  j["predicted_ns"] = p.predicted_ns;
  j["mean_step_measured_ns"] = p.mean_measured_ns;
  j["mean_step_predicted_ns"] = p.mean_predicted_ns;
  j["saved_per_step_ns"] = p.saved_per_step_ns();
  j["changed"] = {{"waits", p.waits_changed},
                  {"transfers_removed", p.transfers_removed},
                  {"compiles_dropped", p.compiles_dropped},
                  {"ops_scaled", p.ops_scaled},
                  {"host_stretches_removed", p.host_stretches_removed}};
  j["steps"] = nlohmann::ordered_json::array();
  for (const prof::StepPrediction& s : p.steps) {
    j["steps"].push_back({{"number", s.number}, {"measured_ns", s.measured_ns}, {"predicted_ns", s.predicted_ns}});
  }
  j["missing"] = p.missing;
  return j.dump(2) + "\n";
}

int run_whatif(const WhatIfArgs& args) {
  prof::WhatIf change = change_of(args);                                 // throws on bad values
  prof::AnalysisOptions options = make_analysis_options(args.analysis);  // throws on bad values
  if (prof::plan_input(args.path).is_job()) {
    throw std::invalid_argument(args.path + " is a job's folder: ask about one rank's trace");
  }
  ReadInput in(args.path, args.input);
  prof::Prediction p = prof::what_if(in.model(), change, options);
  if (!p.unmatched.empty()) {
    // A question about a line the trace never ran would get a confident
    // "saves nothing": refuse it instead.
    std::string sites;
    for (const std::string& s : p.unmatched) sites += (sites.empty() ? "" : ", ") + s;
    throw std::invalid_argument(fmt::format("nothing in {} ran at {} (sites are FILE:LINE or FILE)", args.path, sites));
  }
  std::string out = args.format == "json" ? json_of(p) : text_of(p, !change.empty());
  std::fputs(out.c_str(), stdout);
  return kExitOk;
}

}  // namespace

Command add_whatif_command(CLI::App& app) { return make_command(app, "whatif", add_options, run_whatif); }

}  // namespace loupe::cli
