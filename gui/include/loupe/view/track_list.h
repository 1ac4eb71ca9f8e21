// The timeline's rows, built once per trace: a track per host thread
// (markers, nested spans by depth, launches, transfers), per device stream
// (its operations, then its launch queue as a counter), per device's
// memory and per counter, each split into lanes the level-of-detail pass
// can draw. Layout assigns them heights.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loupe/prof/trace_model.h"
#include "loupe/view/lane.h"
#include "loupe/view/min_max.h"

namespace loupe::view {

enum class TrackKind : uint8_t { thread, stream, memory, counter, collectives };

enum class LaneKind : uint8_t {
  spans,        // model.host_spans[table]
  launches,     // model.launches[table]
  transfers,    // model.transfers[table]
  device_ops,   // model.device_ops[table]
  instants,     // model.instants[table], in the marker row
  recompiles,   // model.compiles[table]: misses of a function compiled before, in the marker row
                // (describe_event and selections use this kind for any compile)
  collectives,  // model.collectives[table]: one process group's collectives
};

struct TrackLane {
  LaneKind kind = LaneKind::spans;
  uint32_t table = 0;        // index into the model's vector for the kind
  uint32_t depth = 0;        // spans: nesting depth
  bool synchronous = false;  // transfers: this lane holds the synchronous ones
  bool marker_row = false;   // drawn in the thread's thin marker row
  Lane lane;
  float y0 = 0, y1 = 0;  // layout, relative to the timeline's top
};

// A step function over time: memory in use, or a counter's value.
struct Series {
  const int64_t* time = nullptr;
  size_t count = 0;
  RangeMinMax values;
  double max_value = 0;
  size_t max_index = 0;  // the first sample at the maximum
};

struct Track {
  TrackKind kind = TrackKind::thread;
  std::string title;
  std::string subtitle;  // the device's name, for device tracks
  uint32_t thread = 0, device = 0, stream = 0;
  uint32_t table = 0;  // memory: model.memory index; counter: model.counters index; collectives: model.collectives
  std::vector<TrackLane> lanes;
  Series allocated, reserved;  // memory tracks
  // Memory tracks: the categories of the trace's blocks (docs/analyses.md),
  // bottom first, and the bytes of each stacked on those below it at each
  // event; empty when no block has one. The series point into `stacked`,
  // which copies of the track share. A stream's launch-queue counter track
  // keeps its times and lengths there too.
  std::vector<std::string> category_names;
  std::shared_ptr<const std::vector<std::vector<int64_t>>> stacked;
  std::vector<Series> categories;
  Series value;                       // counter tracks
  int64_t capacity = 0;               // memory tracks: the device's, 0 if unknown
  std::vector<size_t> out_of_memory;  // memory tracks: the indices of its out-of-memory events
  float y0 = 0, y1 = 0;               // layout
};

struct TrackList {
  std::vector<Track> tracks;
  float height = 0;  // of all tracks, after layout
};

// Builds the tracks of a model. The lanes point into the model's columns:
// the model must stay where it is (moving its vectors is fine, changing
// them is not) while the list is used.
TrackList build_track_list(const prof::TraceModel& model);

struct TrackMetrics {
  float lane = 18;   // one row of spans or operations
  float marker = 9;  // a thread's marker row (instants, recompiles)
  float memory = 64;
  float legend = 14;  // a memory track's key of categories, above its plot
  float counter = 40;
  float spacing = 6;  // between tracks
};
// Assigns y ranges from `top` down; returns the bottom.
float layout_tracks(TrackList& list, const TrackMetrics& m, float top = 0);

// Where an event is drawn: the track and lane of `list` holding event
// `index` of the model table `table` that lanes of `kind` draw from, and its
// lane-position. False when no lane holds it (recompile lanes hold only
// some compiles).
struct EventLocation {
  size_t track = 0, lane = 0, position = 0;
};
bool locate_event(const TrackList& list, LaneKind kind, uint32_t table, size_t index, EventLocation* where);

// Misses of a function that was compiled before (by function name, over
// all threads): the recompiles. Indices into model.compiles[table].
std::vector<uint32_t> recompile_indices(const prof::TraceModel& model, uint32_t table);

}  // namespace loupe::view
