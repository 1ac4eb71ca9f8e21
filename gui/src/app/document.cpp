#include "document.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "loupe/prof/job.h"
#include "loupe/prof/trace_reader.h"
#include "loupe/view/job_timeline.h"

namespace loupe::app {

const view::DeviceGaps* Analysis::gaps_of(uint32_t device) const {
  for (const view::DeviceGaps& g : gaps) {
    if (g.device == device) return &g;
  }
  return nullptr;
}

namespace {

// A job: its analysis, and its collectives as a model of one track per
// rank, titled by rank.
void load_job(Document& doc) {
  prof::JobAnalysisOptions options;
  options.keep_timeline = true;
  auto report = std::make_shared<prof::JobReport>(prof::analyze_job(doc.path, options));
  doc.model = view::job_timeline_model(*report);
  report->timeline.clear();  // in the model now
  report->timeline.shrink_to_fit();
  doc.job = std::move(report);
}

}  // namespace

std::unique_ptr<Document> load_document(const std::string& path) {
  auto doc = std::make_unique<Document>();
  doc->path = path;
  auto t0 = std::chrono::steady_clock::now();
  if (prof::is_job(path)) load_job(*doc);
  else doc->model = prof::load_trace(path);
  auto t1 = std::chrono::steady_clock::now();
  doc->tracks = view::build_track_list(doc->model);
  if (doc->job) {
    for (view::Track& t : doc->tracks.tracks) t.title = std::move(t.subtitle);  // "rank 3", not "device 3 / ..."
  }
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
  if (doc.job) {
    // The job's own findings; the single-trace rules say nothing of a
    // timeline of collectives. Its statistics: time by collective, and
    // waits by the rank waited for.
    a->report.path = doc.path;
    a->report.window_start = doc.model.start_ns;
    a->report.window_end = doc.model.end_ns;
    a->report.findings = doc.job->findings;
    a->statistics = prof::trace_statistics(doc.model);
    return a;
  }
  a->report = prof::analyze(doc.model);
  a->statistics = prof::trace_statistics(doc.model);
  a->gaps = view::device_gaps(a->report);
  a->compiles = compile_histories(doc.model);
  return a;
}

}  // namespace loupe::app
