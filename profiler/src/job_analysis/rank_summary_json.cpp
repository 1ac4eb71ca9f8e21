// A rank's summary as JSON: the map's output crossing from a Dask worker to
// the client. Every field is written by name, and read back by name with its
// type checked, so a summary that comes back is the one that left. Each
// struct's fields are listed once below, for both directions; a list of
// structs travels as columns (a name, then every row's value), which keeps
// a rank's thousands of collectives small.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "job_analysis/job_context.h"
#include "loupe/prof/job_analysis.h"

namespace loupe::prof {

namespace {

using nlohmann::json;

// The fields of each struct, for f(name, member): written once, read with
// the same list (Self is the struct, const or not).
template <typename Self, typename F>
void summary_fields(Self& s, F&& f) {
  f("rank", s.rank);
  f("host", s.host);
  f("origin_wall_ns", s.origin_wall_ns);
  f("window_start", s.window_start);
  f("window_end", s.window_end);
  f("events", s.events);
  f("collective_kernels", s.collective_kernels);
  f("kernels", s.kernels);
  f("idle", s.idle);
  f("findings", s.findings);
  f("incomplete", s.incomplete);
  f("tail_known", s.tail_known);
  f("tail_from", s.tail_from);
  f("tail_to", s.tail_to);
  f("tail_after", s.tail_after);
  f("tail_ns", s.tail_ns);
}
template <typename Kind, typename F>
void kind_fields(Kind& k, F&& f) {
  f("group", k.group);
  f("name", k.name);
  f("in_bytes", k.in_bytes);
  f("out_bytes", k.out_bytes);
  f("group_size", k.group_size);
}
template <typename Collective, typename F>
void collective_fields(Collective& c, F&& f) {
  f("kind", c.kind);
  f("step", c.step);
  f("index", c.index);
  f("start", c.start);
  f("end", c.end);
  f("path_known", c.path_known);
  f("path_from", c.path_from);
  f("after", c.after);
  f("path_ns", c.path_ns);
}
template <typename Step, typename F>
void step_fields(Step& s, F&& f) {
  f("number", s.number);
  f("compute_ns", s.compute_ns);
  f("communication_ns", s.communication_ns);
  f("idle_ns", s.idle_ns);
  f("time_ns", s.time_ns);
}

// Rows as columns: {"name": [every row's value], ...}.
template <typename T, typename Fields>
json columns(const std::vector<T>& rows, Fields fields) {
  json out = json::object();
  T blank{};
  fields(blank, [&](const char* name, const auto&) { out[name] = json::array(); });
  for (const T& row : rows) fields(row, [&](const char* name, const auto& v) { out[name].push_back(v); });
  return out;
}

template <typename T, typename Fields>
std::vector<T> rows_of(const json& cols, Fields fields) {
  size_t n = 0;
  T blank{};
  fields(blank, [&](const char* name, const auto&) { n = std::max(n, cols.at(name).size()); });
  std::vector<T> rows(n);
  for (size_t i = 0; i < n; ++i) {
    fields(rows[i],
           [&](const char* name, auto& v) { v = cols.at(name).at(i).template get<std::decay_t<decltype(v)>>(); });
  }
  return rows;
}

}  // namespace

std::string rank_summary_to_json(const RankSummary& s) {
  json doc = json::object();
  summary_fields(s, [&](const char* name, const auto& v) { doc[name] = v; });
  doc["kinds"] = columns(s.kinds, [](auto& k, auto&& f) { kind_fields(k, f); });
  doc["collectives"] = columns(s.collectives, [](auto& c, auto&& f) { collective_fields(c, f); });
  doc["steps"] = columns(s.steps, [](auto& st, auto&& f) { step_fields(st, f); });
  for_each_metric(s.metrics, [&](const char* name, const auto& v) { doc["metrics"][name] = v; });
  // A trace's names need not be UTF-8: replaced rather than refused, as
  // the reports do.
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

RankSummary rank_summary_from_json(const std::string& text) {
  try {
    json doc = json::parse(text);
    RankSummary s;
    summary_fields(s, [&](const char* name, auto& v) { v = doc.at(name).get<std::decay_t<decltype(v)>>(); });
    s.kinds = rows_of<RankSummary::Kind>(doc.at("kinds"), [](auto& k, auto&& f) { kind_fields(k, f); });
    s.collectives =
        rows_of<RankSummary::Collective>(doc.at("collectives"), [](auto& c, auto&& f) { collective_fields(c, f); });
    s.steps = rows_of<RankSummary::Step>(doc.at("steps"), [](auto& st, auto&& f) { step_fields(st, f); });
    if (s.tail_after < -1 || s.tail_after >= int64_t(s.collectives.size())) {
      throw JobError(fmt::format("not a rank's summary: a path after collective {}", s.tail_after));
    }
    auto time = [](int64_t t) { return t > -job::kMaxJobTimeNs && t < job::kMaxJobTimeNs; };
    if (!time(s.tail_from) || !time(s.tail_to)) throw JobError("not a rank's summary: a path's time out of range");
    for (const RankSummary::Collective& c : s.collectives) {
      if (c.kind >= s.kinds.size()) throw JobError(fmt::format("not a rank's summary: collective of kind {}", c.kind));
      if (c.after < -1 || c.after >= int64_t(s.collectives.size())) {
        throw JobError(fmt::format("not a rank's summary: a path after collective {}", c.after));
      }
      if (!time(c.path_from)) throw JobError("not a rank's summary: a path's time out of range");
    }
    const json& metrics = doc.at("metrics");
    for_each_metric(s.metrics,
                    [&](const char* name, auto& v) { v = metrics.at(name).get<std::decay_t<decltype(v)>>(); });
    return s;
  } catch (const json::exception& e) {
    throw JobError(fmt::format("not a rank's summary: {}", e.what()));
  }
}

}  // namespace loupe::prof
