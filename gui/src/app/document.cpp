#include "document.h"

#include <fmt/format.h>

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

// A job's model and tracks: each rank's row of collectives, and under it
// the tracks of its own trace when it is expanded. A row's title is its
// rank; hovering its title says what a click does.
void build_job_view(Document& doc) {
  std::vector<view::RankTrace> expanded;
  for (size_t i = 0; i < doc.job->ranks.size(); ++i) {
    auto it = doc.expanded.find(doc.job->ranks[i]);
    if (it != doc.expanded.end()) expanded.push_back({i, it->second.get()});
  }
  view::JobTimeline timeline = view::job_timeline(*doc.job, expanded);
  doc.model = std::move(timeline.model);
  doc.tracks = view::build_track_list(doc.model);
  view::group_tracks_by_rank(timeline, doc.tracks);
  for (view::Track& t : doc.tracks.tracks) {
    bool of_a_device = t.kind == view::TrackKind::stream || t.kind == view::TrackKind::memory;
    if (!of_a_device) continue;
    if (t.device >= doc.job->ranks.size()) {
      // A rank's own device: "rank 3 / cuda:0 / stream 7", not "device 9 / stream 7".
      if (size_t at = t.title.find(" / "); at != std::string::npos) t.title = t.subtitle + t.title.substr(at);
      continue;
    }
    bool open = doc.expanded.count(doc.job->ranks[t.device]) > 0;
    t.title = std::move(t.subtitle);  // "rank 3", not "device 3 / ..."
    t.subtitle = open ? "click to collapse: hide this rank's own tracks" : "click to expand: this rank's own tracks";
  }
  view::layout_tracks(doc.tracks, view::TrackMetrics{});
}

// A job: its analysis, with the collectives of every rank on the aligned
// timeline, kept to rebuild the model when a rank is expanded.
void load_job(Document& doc) {
  prof::JobAnalysisOptions options;
  options.keep_timeline = true;
  doc.job = std::make_shared<prof::JobReport>(prof::analyze_job(doc.job_dir, options));
}

}  // namespace

std::unique_ptr<Document> load_document(const std::string& path) {
  auto doc = std::make_unique<Document>();
  doc->path = path;
  auto t0 = std::chrono::steady_clock::now();
  doc->input = prof::open_input(path);
  if (doc->input.is_job()) {
    doc->job_dir = doc->input.job_dir;
    load_job(*doc);
  } else {
    doc->model = doc->input.take_model();
  }
  auto t1 = std::chrono::steady_clock::now();
  if (doc->job) {
    build_job_view(*doc);
  } else {
    doc->tracks = view::build_track_list(doc->model);
    view::layout_tracks(doc->tracks, view::TrackMetrics{});
  }
  auto t2 = std::chrono::steady_clock::now();
  doc->read_seconds = std::chrono::duration<double>(t1 - t0).count();
  doc->tracks_seconds = std::chrono::duration<double>(t2 - t1).count();
  return doc;
}

void toggle_rank(Document& doc, int64_t rank) {
  if (!doc.job) return;
  if (doc.expanded.erase(rank) == 0) {
    prof::Job job = prof::read_job(doc.job_dir);
    auto it = std::find_if(job.ranks.begin(), job.ranks.end(), [&](const prof::JobRank& r) { return r.rank == rank; });
    if (it == job.ranks.end()) throw prof::JobError(fmt::format("the job {} has no rank {}", doc.job_dir, rank));
    doc.expanded[rank] = std::make_shared<const prof::TraceModel>(prof::load_trace(job.trace_path(*it)));
  }
  build_job_view(doc);
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
    // The job's critical path on the ranks' rows (device i is rank i's row).
    prof::CriticalPath path;
    path.segments = doc.job->critical_path.segments;
    a->path = view::critical_path_bars(path, doc.tracks);
    return a;
  }
  a->report = prof::analyze(doc.model);
  a->statistics = prof::trace_statistics(doc.model);
  a->gaps = view::device_gaps(a->report);
  a->path = view::critical_path_bars(a->report.critical_path, doc.tracks);
  a->compiles = compile_histories(doc.model);
  return a;
}

}  // namespace loupe::app
