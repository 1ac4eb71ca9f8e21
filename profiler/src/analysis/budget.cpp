#include "loupe/prof/budget.h"

#include <fmt/format.h>

#include <toml++/toml.h>
#include <algorithm>
#include <cmath>
#include <optional>

#include "loupe/prof/input_file.h"
#include "loupe/prof/units.h"

namespace loupe::prof {

namespace {

// `<metric>_max` for each budgeted metric of a trace's or a job's list.
template <typename Metrics>
void add_keys(std::span<const MetricDef<Metrics>> metrics, bool job, std::vector<BudgetKey>& out) {
  for (const MetricDef<Metrics>& m : metrics) {
    if (m.budgeted) out.push_back({std::string(m.name) + "_max", m.name, m.description, m.unit, job});
  }
}

const std::vector<BudgetKey>& key_defs() {
  static const std::vector<BudgetKey> defs = [] {
    std::vector<BudgetKey> out;
    add_keys(trace_metrics(), false, out);
    add_keys(job_metrics(), true, out);
    return out;
  }();
  return defs;
}

// The key's definition, by its name or an earlier one (and the factor
// from the earlier one's unit); nullptr when unknown.
const BudgetKey* find_key(const std::string& key, double* scale = nullptr) {
  std::string name = key;
  if (scale) *scale = 1;
  for (const MetricAlias& a : metric_aliases()) {
    if (key != a.old_name) continue;
    name = a.name;
    if (scale) *scale = a.scale;
  }
  for (const BudgetKey& d : key_defs()) {
    if (name == d.key) return &d;
  }
  return nullptr;
}

std::string format_value(MetricUnit unit, double v) {
  switch (unit) {
    case MetricUnit::count: return fmt::format("{:g}", v);
    case MetricUnit::ns: return fmt::format("{:.3f} ms", v / 1e6);
    case MetricUnit::bytes: return format_bytes(int64_t(std::llround(v)));
    case MetricUnit::fraction: return format_percent(v);
  }
  return fmt::format("{:g}", v);
}

// A limit as the file writes it: a number in the metric's unit (or the
// earlier key's), or for a duration a string with a unit ("120ms").
std::optional<double> limit_value(const toml::node& node, const BudgetKey& d, double scale) {
  if (std::optional<double> v = node.value<double>()) return *v * scale;
  std::optional<std::string> text = node.value<std::string>();
  if (!text || d.unit != MetricUnit::ns) return std::nullopt;
  try {
    return parse_number(*text, true);
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;  // a char: the rest need no escape
    }
  }
  return out;
}

}  // namespace

std::vector<BudgetKey> budget_keys() { return key_defs(); }

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
    double scale = 1;
    const BudgetKey* d = find_key(key, &scale);
    if (d == nullptr) {
      std::string known;
      for (const BudgetKey& known_key : key_defs()) known += (known.empty() ? "" : ", ") + known_key.key;
      throw BudgetError(fmt::format("{}:{}: unknown budget '{}' (known: {})", source, line, key, known));
    }
    std::optional<double> v = limit_value(node, *d, scale);
    if (!v || !(*v >= 0) || !std::isfinite(*v)) {
      throw BudgetError(fmt::format("{}:{}: budget '{}' must be a non-negative number{}", source, line, key,
                                    d->unit == MetricUnit::ns ? " (of ns, or a string with a unit: \"120ms\")" : ""));
    }
    b.limits.push_back({key, d->metric, *v, d->job});
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
    if (l.job) throw BudgetError(fmt::format("'{}' is a job's budget: give `loupe check` a job's folder", l.key));
    out.push_back(budget_result(l, metric_value(report.metrics, l.metric)));
  }
  return out;
}

BudgetResult budget_result(const Budget::Limit& limit, double actual, const std::string& where) {
  const BudgetKey* d = find_key(limit.key);
  MetricUnit unit = d ? d->unit : MetricUnit::count;
  return {limit.key,
          limit.max,
          actual,
          actual <= limit.max,
          format_value(unit, actual) + where,
          format_value(unit, limit.max)};
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
