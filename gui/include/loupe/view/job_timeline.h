// A job on one timeline: each rank a track of one row, its collectives
// drawn where it took part in them on the job's aligned clock. A
// collective's time on a rank is two pieces: the wait for the last rank
// (an op of kind `sync`, named after the rank it waited for) and the
// transfer once every rank had arrived (a `kernel`, named after the
// collective). Both pieces of one collective carry the same correlation
// id on every rank, which links them across the ranks. The model is a
// plain TraceModel, so the timeline, hovering, statistics and findings
// work on it as on any trace.
#pragma once

#include "loupe/prof/job_analysis.h"
#include "loupe/prof/trace_model.h"

namespace loupe::view {

// The model of `report.timeline` (analyze_job with keep_timeline): device
// i is report.ranks[i], named "rank R"; its one stream holds the pieces.
prof::TraceModel job_timeline_model(const prof::JobReport& report);

}  // namespace loupe::view
