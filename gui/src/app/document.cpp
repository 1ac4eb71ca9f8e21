#include "document.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "loupe/prof/trace_reader.h"

namespace loupe::app {

const view::DeviceGaps* Analysis::gaps_of(uint32_t device) const {
  for (const view::DeviceGaps& g : gaps) {
    if (g.device == device) return &g;
  }
  return nullptr;
}

std::unique_ptr<Document> load_document(const std::string& path) {
  auto doc = std::make_unique<Document>();
  doc->path = path;
  auto t0 = std::chrono::steady_clock::now();
  doc->model = prof::load_trace(path);
  auto t1 = std::chrono::steady_clock::now();
  doc->tracks = view::build_track_list(doc->model);
  view::layout_tracks(doc->tracks, view::TrackMetrics{});
  auto t2 = std::chrono::steady_clock::now();
  doc->read_seconds = std::chrono::duration<double>(t1 - t0).count();
  doc->tracks_seconds = std::chrono::duration<double>(t2 - t1).count();
  return doc;
}

namespace {

std::vector<CompileHistory> compile_histories(const prof::TraceModel& m) {
  std::map<prof::StringId, CompileHistory> by_function;
  for (uint32_t t = 0; t < m.compiles.size(); ++t) {
    const prof::Compiles& c = m.compiles[t];
    for (size_t i = 0; i < c.size(); ++i) {
      CompileHistory& h = by_function[c.function[i]];
      if (c.kind[i] == prof::CompileKind::hit) {
        ++h.hits;
        continue;
      }
      h.compiles.push_back({t, uint32_t(i)});
      h.compile_ns += c.dur[i];
    }
  }
  std::vector<CompileHistory> out;
  for (auto& [name, h] : by_function) {
    h.function = m.str(name);
    std::sort(h.compiles.begin(), h.compiles.end(), [&](const auto& a, const auto& b) {
      return m.compiles[a.table].start[a.index] < m.compiles[b.table].start[b.index];
    });
    out.push_back(std::move(h));
  }
  std::sort(out.begin(), out.end(),
            [](const CompileHistory& a, const CompileHistory& b) { return a.compile_ns > b.compile_ns; });
  return out;
}

}  // namespace

std::shared_ptr<Analysis> analyse_document(const Document& doc) {
  auto a = std::make_shared<Analysis>();
  a->report = prof::analyze(doc.model);
  a->statistics = prof::trace_statistics(doc.model);
  a->gaps = view::device_gaps(a->report);
  a->compiles = compile_histories(doc.model);
  return a;
}

}  // namespace loupe::app
