// loupe._core: the profiler library for Python. Each function calls the
// library function that the CLI command of the same name calls, so Python
// and the CLI always agree; loupe/__init__.py turns the results into
// DataFrames and Python objects. Long work (reading, analysing, importing)
// runs without the GIL.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "columns.h"
#include "jobs.h"
#include "loupe/prof/analysis.h"
#include "loupe/prof/budget.h"
#include "loupe/prof/import.h"
#include "loupe/prof/input_file.h"
#include "loupe/prof/job.h"
#include "loupe/prof/open_input.h"
#include "loupe/prof/report_format.h"
#include "loupe/prof/safe_text.h"
#include "loupe/prof/trace_diff.h"
#include "loupe/prof/trace_reader.h"
#include "loupe/prof/trace_writer.h"
#include "recording.h"

namespace nb = nanobind;
using namespace nb::literals;
using namespace loupe::prof;

namespace loupe::python {
namespace {

// A loaded trace, shared by the Python objects that read it.
struct Trace {
  std::shared_ptr<const TraceModel> model;
  bool complete = true;  // every event table was read
};

// Reads a loupe trace with only the event tables `tables` when given; any
// other input `loupe analyze` takes (open_input.h) whole. What cannot be
// read as one trace raises TraceError with the CLI's message.
Trace open_trace(const std::string& path, const std::optional<std::vector<std::string>>& tables) {
  nb::gil_scoped_release unlocked;
  try {
    InputPlan plan = plan_input(path);
    if (plan.kind == InputKind::loupe_trace) {
      return {std::make_shared<const TraceModel>(load_trace(path, {.tables = tables})), !tables.has_value()};
    }
    if (plan.is_job()) throw InputError(fmt::format("{}: a job's folder; read it with loupe.jobs", path));
    OpenedInput in = open_input(path);
    return {in.model, true};
  } catch (const InputError& e) {
    throw TraceError(e.what());
  } catch (const prof::ImportError& e) {
    throw TraceError(e.what());
  }
}

// The rules to run (analyze() refuses an unknown one) and the thresholds,
// as `--set NAME=VALUE` takes them.
AnalysisOptions analysis_options(const std::vector<std::string>& rules,
                                 const std::map<std::string, std::string>& thresholds) {
  AnalysisOptions options;
  options.rules = rules;
  for (const auto& [name, value] : thresholds) set_analysis_parameter(options, name, value);
  return options;
}

std::string analyze_json(const Trace& trace, const std::vector<std::string>& rules,
                         const std::map<std::string, std::string>& thresholds) {
  AnalysisOptions options = analysis_options(rules, thresholds);
  nb::gil_scoped_release unlocked;
  return report_json(analyze(*trace.model, options));
}

// `loupe check`: the budget's limits against the analysis its thresholds
// configure.
std::vector<BudgetResult> check_budget_of(const Trace& trace, const Budget& budget) {
  nb::gil_scoped_release unlocked;
  return check_budget(budget, *trace.model);
}

std::vector<BudgetResult> check(const Trace& trace, const std::string& toml, const std::string& source) {
  return check_budget_of(trace, parse_budget(toml, source));
}

std::vector<BudgetResult> check_file(const Trace& trace, const std::string& path) {
  return check_budget_of(trace, read_budget_file(path));
}

// `loupe diff` of one or several runs a side (each side's traces in order).
std::string diff_report_json(const std::vector<const Trace*>& base, const std::vector<const Trace*>& head,
                             const std::string& base_name, const std::string& head_name,
                             const std::vector<std::string>& rules,
                             const std::map<std::string, std::string>& thresholds, int64_t step, double significance) {
  AnalysisOptions options = analysis_options(rules, thresholds);
  nb::gil_scoped_release unlocked;
  std::vector<AnalysisReport> reports;
  reports.reserve(base.size() + head.size());
  std::vector<prof::DiffRun> runs;
  for (const auto* side : {&base, &head}) {
    for (const Trace* t : *side) {
      reports.push_back(analyze(*t->model, options));
      runs.push_back({*t->model, reports.back(), t->model->path});
    }
  }
  std::span<const prof::DiffRun> all(runs);
  prof::TraceDiff d =
      prof::diff_runs(all.first(base.size()), all.subspan(base.size()), {.step = step, .significance = significance});
  return prof::diff_json(d, base_name, head_name);
}

ImportResult import_file(const std::string& in, const std::string& out, const std::string& format, unsigned threads) {
  ImportOptions options{.format = parse_import_format(format), .threads = threads};
  nb::gil_scoped_release unlocked;
  return prof::import_trace(in, out, options);
}

nb::dict info_of(const Trace& trace) {
  const TraceInfo& i = trace.model->info;
  nb::dict d;
  d["format"] = nb::make_tuple(i.format_major, i.format_minor);
  d["producer"] = i.producer;
  d["status"] = i.status;
  d["origin_wall_ns"] = i.origin_wall_ns;
  d["capture_end_ns"] = i.capture_end_ns;
  d["dropped_events"] = i.dropped_events;
  d["lost_events"] = i.lost_events;
  d["meta"] = i.meta;
  return d;
}

// The small tables small_table() returns, in the schema's order.
constexpr std::array<std::string_view, 4> kSmallTables = {"devices", "streams", "threads", "callsites"};

// The small tables as {column: list}: a few rows each.
nb::dict small_table(const Trace& trace, const std::string& name) {
  const TraceModel& m = *trace.model;
  nb::dict d;
  auto column = [&](const char* key, auto&& rows, auto&& get) {
    nb::list values;
    for (const auto& row : rows) values.append(get(row));
    d[key] = values;
  };
  if (name == "devices") {
    column("id", m.devices, [](const Device& r) { return r.id; });
    column("name", m.devices, [](const Device& r) { return r.name; });
    column("kind", m.devices, [](const Device& r) { return std::string(name_of(r.kind)); });
    column("memory_capacity", m.devices, [](const Device& r) { return r.memory_capacity; });
    column("copy_bandwidth", m.devices, [](const Device& r) { return r.copy_bandwidth; });
    column("detail", m.devices, [](const Device& r) { return r.detail; });
  } else if (name == "streams") {
    column("device", m.streams, [](const Stream& r) { return r.device; });
    column("stream", m.streams, [](const Stream& r) { return r.stream; });
    column("name", m.streams, [](const Stream& r) { return r.name; });
  } else if (name == "threads") {
    column("id", m.threads, [](const Thread& r) { return r.id; });
    column("process", m.threads, [](const Thread& r) { return r.process; });
    column("os_tid", m.threads, [](const Thread& r) { return r.os_tid; });
    column("name", m.threads, [](const Thread& r) { return r.name; });
    column("dropped_events", m.threads, [](const Thread& r) { return r.dropped_events; });
  } else if (name == "callsites") {
    column("id", m.callsites, [](const CallSite& r) { return r.id; });
    column("file", m.callsites, [&](const CallSite& r) { return m.str(r.file); });
    column("line", m.callsites, [](const CallSite& r) { return r.line; });
    column("function", m.callsites, [&](const CallSite& r) { return m.str(r.function); });
    column("parent", m.callsites, [](const CallSite& r) { return r.parent; });
  } else {
    throw std::invalid_argument(fmt::format("no table '{}' (small tables: {})", name, fmt::join(kSmallTables, ", ")));
  }
  return d;
}

// What was live on a device's memory just after time t (ns, the trace's
// clock), as the viewer lists it for a point of the memory lane.
nb::dict live_memory(const Trace& trace, uint32_t device, int64_t t) {
  const TraceModel& m = *trace.model;
  auto track = std::find_if(m.memory.begin(), m.memory.end(), [&](const auto& me) { return me.device == device; });
  if (track == m.memory.end()) throw std::invalid_argument(fmt::format("no memory events on device {}", device));
  LiveMemory live = live_memory_at(m, uint32_t(track - m.memory.begin()), t);
  nb::dict d, categories;
  d["allocated"] = live.allocated;
  d["held_before"] = live.held_before;
  for (const auto& [category, bytes] : live.by_category) categories[category.c_str()] = bytes;
  d["by_category"] = categories;
  nb::list sites;
  for (const LiveSite& s : live.sites) sites.append(nb::make_tuple(s.site, s.bytes, s.blocks));
  d["sites"] = sites;
  return d;
}

// The base class of loupe's Python exceptions; the library throws its own
// classes below, never this one.
struct LoupeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Makes `name` in `m` the Python class of the C++ exception CppError: what
// the library throws as CppError reaches Python as it, with its message
// made printable() as the CLI prints it: a message quotes file names and a
// trace's strings, which may hold terminal escapes or bytes that are not
// UTF-8 (a str could not even be made of those).
template <typename CppError>
nb::object register_error(nb::module_& m, const char* name, nb::handle base) {
  nb::object python_class = nb::steal(PyErr_NewException(
      (std::string(nb::cast<std::string>(m.attr("__name__"))) + "." + name).c_str(), base.ptr(), nullptr));
  m.attr(name) = python_class;
  nb::register_exception_translator(
      [](const std::exception_ptr& p, void* payload) {
        try {
          std::rethrow_exception(p);
        } catch (const CppError& e) {
          PyErr_SetString(static_cast<PyObject*>(payload), printable(e.what()).c_str());
        }
      },
      python_class.ptr());
  return python_class;
}

// Each library error becomes a Python exception of its own class, all
// derived from loupe.Error, with the message the CLI prints.
void register_errors(nb::module_& m) {
  nb::object base = register_error<LoupeError>(m, "Error", PyExc_Exception);
  register_error<TraceError>(m, "TraceError", base);
  register_error<prof::ImportError>(m, "TraceImportError", base);
  register_error<BudgetError>(m, "BudgetError", base);
  register_error<StoreError>(m, "StoreError", base);
  register_error<FileError>(m, "FileError", base);
  register_error<JobError>(m, "JobError", base);
}

}  // namespace
}  // namespace loupe::python

NB_MODULE(_core, m) {
  using namespace loupe::python;
  m.doc() =
      "loupe's profiler library: trace files, analyses, budgets, diffs and imports, and the recording of this process.";
  register_errors(m);
  add_recording(m);
  add_jobs(m);

  nb::class_<Column>(m, "Column")
      .def_ro("name", &Column::name)
      .def_ro("check", &Column::check)
      .def_ro("values", &Column::values)
      .def_ro("categories", &Column::categories);

  nb::class_<BudgetResult>(m, "BudgetResult")
      .def_ro("key", &BudgetResult::key)
      .def_ro("limit", &BudgetResult::limit)
      .def_ro("actual", &BudgetResult::actual)
      .def_ro("passed", &BudgetResult::passed)
      .def_ro("actual_text", &BudgetResult::actual_text)
      .def_ro("limit_text", &BudgetResult::limit_text)
      .def("__repr__", [](const BudgetResult& r) {
        return (r.passed ? "pass  " : "FAIL  ") + r.key + " " + r.actual_text + (r.passed ? " <= " : " > ") +
               r.limit_text;
      });

  nb::class_<Trace>(m, "Trace")
      .def_prop_ro("path", [](const Trace& t) { return t.model->path; })
      .def_prop_ro(
          "complete", [](const Trace& t) { return t.complete; }, "Whether every event table was read.")
      .def_prop_ro("info", &info_of, "Format, producer, status, clock origin, losses and meta rows.")
      .def_prop_ro(
          "strings", [](const Trace& t) { return t.model->strings; }, "The strings table, by id.")
      .def(
          "columns", [](const Trace& t, const std::string& table) { return table_columns(*t.model, table); }, "table"_a,
          "Every column of an event table, over all its tracks.")
      .def("small_table", &small_table, "table"_a, "devices, streams, threads or callsites as {column: list}.")
      .def("live_memory", &live_memory, "device"_a, "time_ns"_a,
           "What was live on the device just after time_ns: {allocated, held_before, by_category: {category: "
           "bytes}, sites: [(site, bytes, blocks)]}, as the viewer lists it (docs/analyses.md, categories).")
      .def("analyze_json", &analyze_json, "rules"_a, "thresholds"_a, "`loupe analyze --format json`.")
      .def("check", &check, "toml"_a, "source"_a, "`loupe check` of a budget's TOML text; `source` names it.")
      .def("check_file", &check_file, "path"_a, "`loupe check --budget PATH`.");

  m.def("open", &open_trace, "path"_a, "tables"_a = nb::none(),
        "Reads a trace as `loupe analyze` does (a loupe trace with only the event tables `tables` if given; "
        "another profiler's trace whole); raises TraceError.");
  m.def(
      "event_tables",
      [] {
        std::vector<std::string> names;
        for (std::string_view t : event_table_names()) names.emplace_back(t);
        return names;
      },
      "The event tables' names, in the schema's order.");
  m.def(
      "small_tables", [] { return std::vector<std::string>(kSmallTables.begin(), kSmallTables.end()); },
      "The small tables' names, in the schema's order.");
  m.def("diff_json", &diff_report_json, "base"_a, "head"_a, "base_name"_a, "head_name"_a, "rules"_a, "thresholds"_a,
        "step"_a, "significance"_a, "`loupe diff --format json`, of one or several runs a side.");
  m.def("import_trace", &import_file, "source"_a, "out"_a, "format"_a, "threads"_a,
        "`loupe import`: returns the ImportResult's fields.");

  nb::class_<ImportResult>(m, "ImportResult")
      .def_prop_ro("format", [](const ImportResult& r) { return std::string(import_format_name(r.format)); })
      .def_ro("input_bytes", &ImportResult::input_bytes)
      .def_ro("source_events", &ImportResult::source_events)
      .def_ro("rows_written", &ImportResult::rows_written)
      .def_ro("skipped", &ImportResult::skipped)
      .def_ro("skipped_by_kind", &ImportResult::skipped_by_kind)
      .def_ro("rows_by_table", &ImportResult::rows_by_table);
}
