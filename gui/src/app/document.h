// One open trace: the model, its tracks, and what the analyses made of it
// (computed off the UI thread; null until then).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "loupe/prof/analysis.h"
#include "loupe/prof/job_analysis.h"
#include "loupe/prof/open_input.h"
#include "loupe/prof/statistics.h"
#include "loupe/prof/trace_model.h"
#include "loupe/view/highlight.h"
#include "loupe/view/hit_test.h"
#include "loupe/view/overlays.h"
#include "loupe/view/track_list.h"

namespace loupe::app {

// A jitted function's compiles, for the compile panel.
struct CompileHistory {
  std::string function;
  struct Entry {
    uint32_t table = 0, index = 0;  // model.compiles[table], event index
  };
  std::vector<Entry> compiles;  // misses and ahead-of-time compiles, in time order
  uint64_t hits = 0;
  int64_t compile_ns = 0;  // time in those compiles
};

struct Analysis {
  prof::AnalysisReport report;
  std::vector<prof::StatTable> statistics;
  std::vector<view::DeviceGaps> gaps;  // per device of the report
  std::vector<view::PathBar> path;     // the critical path on the tracks
  std::vector<CompileHistory> compiles;
  const view::DeviceGaps* gaps_of(uint32_t device) const;
};

struct Document {
  std::string path;         // as the user gave it
  std::string job_dir;      // a job's folder: the path, or the cache's job of a profile's hosts
  prof::OpenedInput input;  // what the path was opened as (keeps a temporary job's folder)
  // A trace's events; for a job, its ranks' collectives on the aligned
  // timeline (job_timeline.h), one track per rank.
  prof::TraceModel model;
  std::shared_ptr<const prof::JobReport> job;  // a job's analysis; null for a trace
  // A job's expanded ranks: their own traces, shown under their rows.
  std::map<int64_t, std::shared_ptr<const prof::TraceModel>> expanded;
  view::TrackList tracks;
  int64_t origin = 0;  // trace time shown at view time 0 (the first step when comparing)
  std::shared_ptr<const Analysis> analysis;
  std::string analysis_error;
  view::NameHighlight highlight;
  view::FrameItems frame;  // what the timeline drew this frame
  float scroll_y = 0;
  double read_seconds = 0, tracks_seconds = 0;  // what opening it took
  // The time span the view can show: every event, in view time.
  double view_start() const { return double(model.start_ns - origin); }
  double view_end() const { return double(model.end_ns - origin); }
};

// Reads the trace (any input `loupe analyze` takes: open_input.h) and
// builds its tracks; throws the reader's one-line error (prof::InputError,
// TraceError, ImportError). A job's folder is analysed as `loupe analyze
// job/` does (throws prof::JobError) and shown as its timeline.
std::unique_ptr<Document> load_document(const std::string& path);
// In a job, expands a rank (its own trace, read the first time, shown
// under its row) or collapses it, and rebuilds the model and tracks; the
// model's events move, so selections into it must be dropped. Throws
// prof::JobError or prof::TraceError when the rank's trace cannot be read.
void toggle_rank(Document& doc, int64_t rank);
// Runs the analyses (the same code and thresholds as `loupe analyze` and
// `loupe summary`); throws what they throw.
std::shared_ptr<Analysis> analyse_document(const Document& doc);

}  // namespace loupe::app
