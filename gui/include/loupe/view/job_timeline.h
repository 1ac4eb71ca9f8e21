// A job on one timeline: each rank a track of one row, its collectives
// drawn where it took part in them on the job's aligned clock. A
// collective's time on a rank is two pieces: the wait for the last rank
// (an op of kind `sync`, named after the rank it waited for) and the
// transfer once every rank had arrived (a `kernel`, named after the
// collective). Both pieces of one collective carry the same correlation
// id on every rank, which links them across the ranks. The model is a
// plain TraceModel, so the timeline, hovering, statistics and findings
// work on it as on any trace.
//
// A rank can be expanded: its own trace's threads and devices join the
// model, their events moved onto the job's aligned clock, and its tracks
// sit under its row.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "loupe/prof/job_analysis.h"
#include "loupe/prof/trace_model.h"
#include "loupe/view/track_list.h"

namespace loupe::view {

// The model of `report.timeline` (analyze_job with keep_timeline): device
// i is report.ranks[i], named "rank R"; its one stream holds the pieces.
prof::TraceModel job_timeline_model(const prof::JobReport& report);

// A rank's own trace, to show under its row.
struct RankTrace {
  size_t index = 0;  // the rank's position in report.ranks
  const prof::TraceModel* model = nullptr;
};

// The job's model with the expanded ranks' own tracks, and which rank
// each device and thread belongs to.
struct JobTimeline {
  prof::TraceModel model;
  std::vector<size_t> device_rank;                       // by device id: the position in report.ranks
  std::vector<std::pair<uint32_t, size_t>> thread_rank;  // (thread id, position), by thread id
};

// Every expanded rank's threads and devices get ids of their own, named
// "rank R / <name>"; their host spans, instants, launches, transfers,
// compiles, device operations and memory are moved onto the aligned clock
// (the rank's clock offset and origin, report.clocks), their correlation
// ids kept apart from the other ranks'. Their counters, steps and
// collectives are left out: the rank's row shows its collectives.
JobTimeline job_timeline(const prof::JobReport& report, const std::vector<RankTrace>& expanded);

// Orders a job's tracks by rank: each rank's row, then its own threads,
// then its own devices.
void group_tracks_by_rank(const JobTimeline& timeline, TrackList& list);

}  // namespace loupe::view
