#include "loupe/prof/budget.h"

#include <fmt/format.h>

#include <toml++/toml.h>
#include <algorithm>

#include "loupe/prof/input_file.h"
#include "loupe/prof/units.h"

namespace loupe::prof {

namespace {

// A budget key: a trace's has `actual`, a job's has none (job_analysis
// computes it).
struct KeyDef {
  const char* key;
  const char* description;
  double (*actual)(const AnalysisReport&);
  std::string (*format)(double);
};

std::string fmt_count(double v) { return fmt::format("{:g}", v); }
std::string fmt_fraction(double v) { return format_percent(v); }
std::string fmt_ms(double v) { return fmt::format("{:.3f} ms", v); }

const std::vector<KeyDef>& key_defs() {
  static const std::vector<KeyDef> defs = {
      {"recompiles_after_warmup", "compiles of jitted functions after the warm-up steps",
       [](const AnalysisReport& r) { return double(r.metrics.recompiles_after_warmup); }, fmt_count},
      {"idle_fraction_max", "device idle time over the active window (all devices)",
       [](const AnalysisReport& r) { return r.metrics.idle_fraction; }, fmt_fraction},
      {"sync_transfers_per_step_max", "synchronous transfers per step",
       [](const AnalysisReport& r) { return r.metrics.sync_transfers_per_step; }, fmt_count},
      {"peak_memory_fraction_max", "peak allocated memory over device capacity",
       [](const AnalysisReport& r) { return r.metrics.peak_memory_fraction; }, fmt_fraction},
      {"tiny_kernel_fraction_max", "kernels shorter than their launch, over all kernels",
       [](const AnalysisReport& r) { return r.metrics.tiny_kernel_fraction; }, fmt_fraction},
      {"step_time_ms_max", "median step time in milliseconds",
       [](const AnalysisReport& r) { return r.metrics.step_time_median_ns / 1e6; }, fmt_ms},
      {"transfer_bytes_per_step_max", "bytes copied between host and device per step",
       [](const AnalysisReport& r) { return r.metrics.transfer_bytes_per_step; }, fmt_count},
      {"straggler_fraction_max", "a job's: the time the job lost waiting for its straggler, over its window", nullptr,
       fmt_fraction},
      {"collective_wait_fraction_max",
       "a job's: the time ranks waited in collectives for later ranks, over all ranks' time", nullptr, fmt_fraction},
      {"exposed_communication_fraction_max",
       "a job's: communication no compute hides (median rank, per step) summed, over the window", nullptr,
       fmt_fraction},
      {"imbalance_fraction_max", "a job's: the median spread of the ranks' compute per step, over the median compute",
       nullptr, fmt_fraction},
      {"ranks_left_out_max", "a job's: ranks missing, unreadable or left out of the comparison", nullptr, fmt_count},
  };
  return defs;
}

const KeyDef* find_key(const std::string& key) {
  for (const KeyDef& d : key_defs()) {
    if (key == d.key) return &d;
  }
  return nullptr;
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

std::vector<BudgetKey> budget_keys() {
  std::vector<BudgetKey> out;
  for (const KeyDef& d : key_defs()) out.push_back({d.key, d.description, d.actual == nullptr});
  return out;
}

Budget parse_budget(const std::string& text, const std::string& source) {
  toml::table doc;
  try {
    doc = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    throw BudgetError(fmt::format("{}:{}:{}: {}", source, e.source().begin.line, e.source().begin.column,
                                  std::string(e.description())));
  }
  Budget b;
  std::vector<int> lines;
  for (auto&& [k, node] : doc) {
    std::string key(k.str());
    int line = int(node.source().begin.line);
    if (key == "thresholds") {
      const toml::table* t = node.as_table();
      if (t == nullptr) throw BudgetError(fmt::format("{}:{}: 'thresholds' must be a table", source, line));
      for (auto&& [pk, pv] : *t) {
        std::string value;
        if (auto s = pv.value<std::string>()) value = *s;
        else if (auto d = pv.value<double>()) value = fmt::format("{}", *d);
        else
          throw BudgetError(fmt::format("{}:{}: threshold '{}' must be a number or a string", source,
                                        pv.source().begin.line, pk.str()));
        AnalysisOptions probe;
        try {
          set_analysis_parameter(probe, std::string(pk.str()), value);
        } catch (const std::invalid_argument& e) {
          throw BudgetError(fmt::format("{}:{}: {}", source, pv.source().begin.line, e.what()));
        }
        b.thresholds.push_back({std::string(pk.str()), value});
      }
      continue;
    }
    if (find_key(key) == nullptr) {
      std::string known;
      for (const KeyDef& d : key_defs()) known += (known.empty() ? "" : ", ") + std::string(d.key);
      throw BudgetError(fmt::format("{}:{}: unknown budget '{}' (known: {})", source, line, key, known));
    }
    std::optional<double> v = node.value<double>();
    if (!v || !(*v >= 0)) {
      throw BudgetError(fmt::format("{}:{}: budget '{}' must be a non-negative number", source, line, key));
    }
    b.limits.push_back({key, *v});
    lines.push_back(line);
  }
  // toml++ iterates keys sorted by name; report them in the file's order.
  std::vector<size_t> order(b.limits.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return lines[x] < lines[y]; });
  std::vector<Budget::Limit> in_order;
  in_order.reserve(order.size());
  for (size_t i : order) in_order.push_back(b.limits[i]);
  b.limits = std::move(in_order);
  if (b.limits.empty()) throw BudgetError(fmt::format("{}: no budgets in the file", source));
  return b;
}

// A budget file is a few lines of TOML; anything much larger is a mistake
// (the wrong file), not worth reading into memory.
constexpr size_t kMaxBudgetBytes = size_t(1) << 20;

Budget read_budget_file(const std::string& path) {
  return parse_budget(read_small_input_file_or_throw<BudgetError>(path, kMaxBudgetBytes, "a budget file"), path);
}

AnalysisOptions analysis_options(const Budget& budget) {
  AnalysisOptions options;
  for (const auto& [name, value] : budget.thresholds) set_analysis_parameter(options, name, value);
  return options;
}

std::vector<BudgetResult> check_budget(const Budget& budget, const TraceModel& model) {
  return check_budget(budget, analyze(model, analysis_options(budget)));
}

std::vector<BudgetResult> check_budget(const Budget& budget, const AnalysisReport& report) {
  std::vector<BudgetResult> out;
  for (const Budget::Limit& l : budget.limits) {
    const KeyDef* d = find_key(l.key);
    if (d->actual == nullptr) {
      throw BudgetError(fmt::format("'{}' is a job's budget: give `loupe check` a job's folder", l.key));
    }
    double actual = d->actual(report);
    out.push_back({l.key, l.max, actual, actual <= l.max, d->format(actual), d->format(l.max)});
  }
  return out;
}

std::string format_budget_value(const std::string& key, double value) {
  const KeyDef* d = find_key(key);
  return d ? d->format(value) : fmt_count(value);
}

std::string budget_junit(const std::vector<BudgetResult>& results, const std::string& trace) {
  size_t failures = 0;
  for (const BudgetResult& r : results) failures += !r.passed;
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format("<testsuites name=\"loupe check\" tests=\"{}\" failures=\"{}\">\n", results.size(), failures);
  out += fmt::format("  <testsuite name=\"loupe budgets: {}\" tests=\"{}\" failures=\"{}\">\n", xml_escape(trace),
                     results.size(), failures);
  for (const BudgetResult& r : results) {
    out += fmt::format("    <testcase classname=\"loupe.budget\" name=\"{}\">\n", xml_escape(r.key));
    if (!r.passed) {
      std::string message = fmt::format("{} is {}, over the budget of {}", r.key, r.actual_text, r.limit_text);
      out += fmt::format("      <failure message=\"{}\">{}</failure>\n", xml_escape(message), xml_escape(message));
    }
    out += "    </testcase>\n";
  }
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

}  // namespace loupe::prof
