// A rank's summary as JSON: the map's output crossing from a Dask worker to
// the client. Every field is written, and read back with its type checked,
// so a summary that comes back is the one that left.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "loupe/prof/job_analysis.h"

namespace loupe::prof {

namespace {

using nlohmann::json;

using NamedTimes = std::vector<std::pair<std::string, int64_t>>;

json named_times(const NamedTimes& v) {
  json out = json::array();
  for (const auto& [name, ns] : v) out.push_back({name, ns});
  return out;
}

NamedTimes named_times_of(const json& v) {
  NamedTimes out;
  for (const json& e : v) out.emplace_back(e.at(0).get<std::string>(), e.at(1).get<int64_t>());
  return out;
}

}  // namespace

std::string rank_summary_to_json(const RankSummary& s) {
  json kinds = json::array(), collectives = json::array(), steps = json::array();
  for (const RankSummary::Kind& k : s.kinds) kinds.push_back({k.group, k.name, k.in_bytes, k.out_bytes, k.group_size});
  for (const RankSummary::Collective& c : s.collectives)
    collectives.push_back({c.kind, c.step, c.index, c.start, c.end});
  for (const RankSummary::Step& st : s.steps) {
    steps.push_back({st.number, st.compute_ns, st.communication_ns, st.idle_ns, st.time_ns});
  }
  json doc = {{"rank", s.rank},
              {"host", s.host},
              {"origin_wall_ns", s.origin_wall_ns},
              {"window", {s.window_start, s.window_end}},
              {"events", s.events},
              {"collective_kernels", s.collective_kernels},
              {"kinds", kinds},
              {"collectives", collectives},
              {"steps", steps},
              {"kernels", named_times(s.kernels)},
              {"idle", named_times(s.idle)},
              {"findings", named_times(s.findings)},
              {"incomplete", s.incomplete}};
  for_each_metric(s.metrics, [&](const char* name, const auto& v) { doc["metrics"][name] = v; });
  // A trace's names need not be UTF-8: replaced rather than refused, as
  // the reports do.
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

RankSummary rank_summary_from_json(const std::string& text) {
  try {
    json doc = json::parse(text);
    RankSummary s;
    s.rank = doc.at("rank").get<int64_t>();
    s.host = doc.at("host").get<std::string>();
    s.origin_wall_ns = doc.at("origin_wall_ns").get<int64_t>();
    s.window_start = doc.at("window").at(0).get<int64_t>();
    s.window_end = doc.at("window").at(1).get<int64_t>();
    s.events = doc.at("events").get<uint64_t>();
    s.collective_kernels = doc.at("collective_kernels").get<uint64_t>();
    for (const json& k : doc.at("kinds")) {
      s.kinds.push_back({k.at(0).get<std::string>(), k.at(1).get<std::string>(), k.at(2).get<int64_t>(),
                         k.at(3).get<int64_t>(), k.at(4).get<int64_t>()});
    }
    for (const json& c : doc.at("collectives")) {
      uint32_t kind = c.at(0).get<uint32_t>();
      if (kind >= s.kinds.size()) throw JobError(fmt::format("not a rank's summary: collective of kind {}", kind));
      s.collectives.push_back(
          {kind, c.at(1).get<int64_t>(), c.at(2).get<int64_t>(), c.at(3).get<int64_t>(), c.at(4).get<int64_t>()});
    }
    for (const json& st : doc.at("steps")) {
      s.steps.push_back({st.at(0).get<int64_t>(), st.at(1).get<int64_t>(), st.at(2).get<int64_t>(),
                         st.at(3).get<int64_t>(), st.at(4).get<int64_t>()});
    }
    s.kernels = named_times_of(doc.at("kernels"));
    s.idle = named_times_of(doc.at("idle"));
    s.findings = named_times_of(doc.at("findings"));
    for (const json& i : doc.at("incomplete")) s.incomplete.push_back(i.get<std::string>());
    const json& metrics = doc.at("metrics");
    for_each_metric(s.metrics,
                    [&](const char* name, auto& v) { v = metrics.at(name).get<std::decay_t<decltype(v)>>(); });
    return s;
  } catch (const json::exception& e) {
    throw JobError(fmt::format("not a rank's summary: {}", e.what()));
  }
}

}  // namespace loupe::prof
